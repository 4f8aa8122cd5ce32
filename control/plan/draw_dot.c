/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-plan draw: a plan's picture as Graphviz DOT text (draw_dot.h), which draw.c
 * renders with Graphviz's `dot` or writes as it is. Tree plans (mtree, single-tree,
 * packing-bound, blueconnect): every tree edge in the tree's colour, its width growing with
 * the tree's rate, pointing towards the root; roots filled with the colours of the trees
 * they root; every topology link labelled with its load (the rates of the trees on it)
 * against its capacity, orange from 90% of it, red above it. CREW plans: the scatter of
 * every member to every aggregator in the aggregator's colour, width by its share, relays
 * and backups. SELMCAST plans: one round's multicast, one colour per sender, width by its
 * update size. docs/PLANNER.md, "Pictures of plans", has the details.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "draw_dot.h"
#include "report.h"

/* A link is drawn "near capacity" from this utilisation on. */
#define DRAW_NEAR 0.9
/* Pen widths: from the thinnest to the heaviest tree's, in proportion to rate. */
#define DRAW_PEN_MIN 1.5
#define DRAW_PEN_MAX 8.0
/* Pen width of topology links. */
#define DRAW_PEN_LINK 1.0

/*
 * Colours: the ten of Tableau's "Tableau 10" palette (also matplotlib's "tab10"), chosen
 * to be told apart from each other, then hues stepped by the golden ratio at two
 * saturations, so that any number of trees gets distinct colours.
 */
static const char *const palette[] = {
	"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
	"#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
};
#define PALETTE_N (int)(sizeof(palette) / sizeof(palette[0]))

static void
colour(int k, char buf[8])
{
	double h, s, v = 0.80, r, g, b, f, p, q, u;
	int i;

	if (k < PALETTE_N) {
		memcpy(buf, palette[k], 8);
		return;
	}
	h = fmod((double)(k - PALETTE_N) * 0.6180339887498949 + 0.05, 1.0) * 6;
	s = (k - PALETTE_N) % 2 == 0 ? 0.75 : 0.45;
	i = (int)h;
	f = h - i;
	p = v * (1 - s);
	q = v * (1 - s * f);
	u = v * (1 - s * (1 - f));
	switch (i % 6) {
	case 0:
		r = v;
		g = u;
		b = p;
		break;
	case 1:
		r = q;
		g = v;
		b = p;
		break;
	case 2:
		r = p;
		g = v;
		b = u;
		break;
	case 3:
		r = p;
		g = q;
		b = v;
		break;
	case 4:
		r = u;
		g = p;
		b = v;
		break;
	default:
		r = v;
		g = p;
		b = q;
		break;
	}
	snprintf(buf, 8, "#%02x%02x%02x", (unsigned)(r * 255 + 0.5) & 0xff,
		 (unsigned)(g * 255 + 0.5) & 0xff, (unsigned)(b * 255 + 0.5) & 0xff);
}

/* A DOT double-quoted string: quotes and backslashes escaped, newlines as DOT's line
 * breaks, other control bytes as '?'. */
static void
qstr(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '\n') {
			fputs("\\n", f);
			continue;
		}
		if (c == '"' || c == '\\')
			fputc('\\', f);
		fputc(c < 0x20 || c == 0x7f ? '?' : c, f);
	}
	fputc('"', f);
}

/* Text for an HTML-like label: markup characters as entities, control bytes as '?'. */
static void
hstr(FILE *f, const char *s)
{
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		switch (c) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			fputc(c < 0x20 || c == 0x7f ? '?' : c, f);
			break;
		}
	}
}

/* Gbit/s with 3 significant digits. */
static const char *
gb(double v, char *buf, size_t len)
{
	if (v != 0 && fabs(v) < 0.01)
		snprintf(buf, len, "%.2g", v);
	else if (fabs(v) < 100)
		snprintf(buf, len, "%.3g", v);
	else
		snprintf(buf, len, "%.0f", v);
	return buf;
}

/* The pen width of v against the largest, vmax: in proportion, at least DRAW_PEN_MIN. */
static double
pen(double v, double vmax)
{
	return vmax > 0 ? fmax(DRAW_PEN_MIN, DRAW_PEN_MAX * v / vmax) : DRAW_PEN_MIN;
}

/* The graph's header and the topology's nodes; label[v] is appended to node v's label.
 * Edges are curved, not routed around the nodes (splines=true): Graphviz 2.42's neato
 * crashed now and then routing a 10-tree plan of 10 sites that way. */
static void
dot_begin(FILE *f, const struct topo *t, const struct draw_opts *o)
{
	fputs("graph georeduce {\n", f);
	fprintf(f,
		"\tlayout=%s; overlap=false; overlap_shrink=false; splines=curved; sep=\"+12\"; "
		"outputorder=edgesfirst;\n",
		o->layout);
	fputs("\tnode [shape=ellipse, fontname=\"Helvetica\", fontsize=11, style=filled, "
	      "fillcolor=\"#ffffff\"];\n",
	      f);
	fputs("\tedge [fontname=\"Helvetica\", fontsize=9];\n", f);
	(void)t;
}

/* Node v with a label of its id, its workers (or "relay") and an extra line. */
static void
dot_node(FILE *f, const struct topo *t, int v, const char *extra, const char *attrs)
{
	char lbl[256];
	const struct topo_node *n = &t->nodes[v];
	int k;

	if (n->workers > 0)
		k = snprintf(lbl, sizeof(lbl), "%s\n%d worker%s%s%s", n->id, n->workers,
			     n->workers == 1 ? "" : "s", extra[0] != '\0' ? "\n" : "", extra);
	else
		k = snprintf(lbl, sizeof(lbl), "%s\nrelay%s%s", n->id, extra[0] != '\0' ? "\n" : "",
			     extra);
	if (k < 0 || (size_t)k >= sizeof(lbl))
		lbl[sizeof(lbl) - 1] = '\0';
	fprintf(f, "\tn%d [label=", v);
	qstr(f, lbl);
	fprintf(f, ", tooltip=");
	qstr(f, n->id);
	fprintf(f, "%s%s];\n", attrs[0] != '\0' ? ", " : "", attrs);
}

/* The length neato aims at for the edges between u and v (inches): longer with latency.
 * Every edge between the pair gets it, or the shorter default would pull them together. */
static double
pair_len(const struct topo *t, int u, int v)
{
	int l = topo_link_between(t, u, v);

	return 2.0 + (l >= 0 ? fmin(t->links[l].latency_ms, 200) / 100 : 1);
}

/*
 * Topology link l: grey, labelled "load/capacity" (Gbit/s) where load >= 0, orange from
 * DRAW_NEAR of the capacity, red and marked "over" above it; dashed where nothing uses it.
 */
static void
dot_link(FILE *f, const struct topo *t, int l, double load, double cap)
{
	const struct topo_link *k = &t->links[l];
	char a[32], b[32], lbl[96];
	const char *col = "#b0b0b0", *state = "";
	double u = cap > 0 && load >= 0 ? load / cap : 0;

	if (load < 0) {
		snprintf(lbl, sizeof(lbl), "%s", gb(cap, b, sizeof(b)));
	} else {
		if (u > 1 + PLAN_EPS) {
			col = "#d00000";
			state = " OVER";
		} else if (u >= 1 - PLAN_EPS) {
			col = "#303030";
			state = " full";
		} else if (u >= DRAW_NEAR) {
			col = "#303030";
			state = " near";
		}
		if (snprintf(lbl, sizeof(lbl), "%s/%s%s", gb(load, a, sizeof(a)),
			     gb(cap, b, sizeof(b)), state) >= (int)sizeof(lbl))
			lbl[sizeof(lbl) - 1] = '\0';
	}
	fprintf(f,
		"\tn%d -- n%d [class=\"link\", color=\"%s\", penwidth=%.1f, fontcolor=\"%s\", "
		"label=\"%s\", tooltip=\"%s\", len=%.2f%s];\n",
		k->a, k->b, col, u > 1 + PLAN_EPS ? 3.0 : DRAW_PEN_LINK,
		load >= 0 && u >= DRAW_NEAR ? col : "#606060", lbl, lbl, pair_len(t, k->a, k->b),
		load == 0 ? ", style=dashed" : "");
}

/* The legend: one row per item, its colour and its text (HTML-like label). */
struct legend_row {
	char colour[8];
	char text[160];
};

static void
dot_legend(FILE *f, const char *title, const struct legend_row *rows, int n)
{
	fputs("\tlegend [shape=plaintext, style=\"\", label=<<table border=\"0\" "
	      "cellborder=\"0\" cellspacing=\"2\"><tr><td colspan=\"2\" align=\"left\"><b>",
	      f);
	hstr(f, title);
	fputs("</b></td></tr>", f);
	for (int i = 0; i < n && i < 64; i++) {
		fprintf(f, "<tr><td bgcolor=\"%s\" width=\"18\"> </td><td align=\"left\">",
			rows[i].colour);
		hstr(f, rows[i].text);
		fputs("</td></tr>", f);
	}
	if (n > 64)
		fprintf(f, "<tr><td></td><td align=\"left\">and %d more</td></tr>", n - 64);
	fputs("</table>>];\n", f);
}

static void
dot_title(FILE *f, const char *text)
{
	fputs("\tlabelloc=t; fontname=\"Helvetica\"; fontsize=13; label=", f);
	qstr(f, text);
	fputs(";\n", f);
}

/* ---- tree plans (and blueconnect's WAN stage) ---- */

void
draw_trees(FILE *f, const struct topo *t, const struct plan *p, const struct bc_hierarchy *bh,
	   const struct draw_opts *o)
{
	double *load = calloc((size_t)t->n_links + 1, sizeof(*load));
	char(*roots)[512] = calloc((size_t)t->n_nodes + 1, sizeof(*roots));
	char(*fills)[512] = calloc((size_t)t->n_nodes + 1, sizeof(*fills));
	int *n_roots = calloc((size_t)t->n_nodes + 1, sizeof(*n_roots));
	struct legend_row *rows = calloc((size_t)p->n_trees + 1, sizeof(*rows));
	double rmax = 0;
	char title[512], a[32], b[32];
	int k;

	if (load == NULL || roots == NULL || fills == NULL || n_roots == NULL || rows == NULL)
		goto out;
	for (int i = 0; i < p->n_trees; i++) {
		rmax = fmax(rmax, p->trees[i].rate_gbps);
		for (int v = 0; v < t->n_nodes; v++)
			if (p->trees[i].parent[v] >= 0)
				load[topo_link_between(t, v, p->trees[i].parent[v])] +=
					p->trees[i].rate_gbps;
	}
	/* Roots: "root of T0, T3" and the trees' colours as wedges. */
	for (int i = 0; i < p->n_trees; i++) {
		int r = p->trees[i].root;
		char c[8];
		size_t lr = strlen(roots[r]), lf = strlen(fills[r]);

		colour(i, c);
		if (lr + 16 < sizeof(roots[r]))
			snprintf(roots[r] + lr, sizeof(roots[r]) - lr, "%sT%d",
				 n_roots[r] == 0 ? "root of " :
						   (n_roots[r] % 4 == 0 ? ",\n" : ", "),
				 i);
		if (lf + 10 < sizeof(fills[r]))
			snprintf(fills[r] + lf, sizeof(fills[r]) - lf, "%s%s", lf > 0 ? ":" : "",
				 c);
		n_roots[r]++;
	}
	k = snprintf(title, sizeof(title),
		     "%s plan on %s: %d tree%s, %s Gbit/s; links: "
		     "load/capacity Gbit/s",
		     p->algorithm[0] != '\0' ? p->algorithm : "tree", t->name, p->n_trees,
		     p->n_trees == 1 ? "" : "s", gb(plan_total_rate(p), a, sizeof(a)));
	if (k < 0 || (size_t)k >= sizeof(title))
		title[sizeof(title) - 1] = '\0';
	dot_begin(f, t, o);
	dot_title(f, title);
	for (int v = 0; v < t->n_nodes; v++) {
		char extra[600] = "", attrs[600] = "";
		const struct bc_site *bs = NULL;

		for (int s = 0; bh != NULL && s < bh->n_sites; s++)
			if (bh->sites[s].node == v)
				bs = &bh->sites[s];
		if (bs != NULL)
			snprintf(extra, sizeof(extra), "%d gateway%s, %d worker%s each%s%s",
				 bs->gateways, bs->gateways == 1 ? "" : "s", bs->per_gateway,
				 bs->per_gateway == 1 ? "" : "s", n_roots[v] > 0 ? "\n" : "",
				 roots[v]);
		else
			snprintf(extra, sizeof(extra), "%s", roots[v]);
		if (n_roots[v] > 0)
			snprintf(attrs, sizeof(attrs),
				 "class=\"root\", peripheries=2, penwidth=2, "
				 "style=%s, fillcolor=\"%s\", fontcolor=\"#ffffff\"",
				 n_roots[v] > 1 ? "wedged" : "filled", fills[v]);
		else if (t->nodes[v].workers == 0)
			snprintf(attrs, sizeof(attrs), "shape=box, fillcolor=\"#eeeeee\"");
		dot_node(f, t, v, extra, attrs);
	}
	for (int l = 0; l < t->n_links; l++)
		dot_link(f, t, l, load[l], topo_link_duplex_gbps(t, l));
	for (int i = 0; i < p->n_trees; i++) {
		const struct plan_tree *tr = &p->trees[i];
		double w = pen(tr->rate_gbps, rmax);
		char c[8];

		colour(i, c);
		for (int v = 0; v < t->n_nodes; v++)
			if (tr->parent[v] >= 0)
				fprintf(f,
					"\tn%d -- n%d [class=\"tree-%d\", color=\"%s\", "
					"penwidth=%.3f, dir=forward, arrowsize=0.6, tooltip=\"T%d "
					"%s Gbit/s\", len=%.2f];\n",
					v, tr->parent[v], i, c, w, i,
					gb(tr->rate_gbps, a, sizeof(a)),
					pair_len(t, v, tr->parent[v]));
		snprintf(rows[i].colour, sizeof(rows[i].colour), "%s", c);
		snprintf(rows[i].text, sizeof(rows[i].text),
			 "T%d root %.63s, %s Gbit/s, share %.3f", i, t->nodes[tr->root].id,
			 gb(tr->rate_gbps, b, sizeof(b)), tr->share);
	}
	dot_legend(f, "trees (arrows point to the root)", rows, p->n_trees);
	if (bh != NULL) {
		/* The hierarchy's stages, as a second legend. */
		fputs("\tstages [shape=plaintext, style=\"\", label=<<table border=\"0\" "
		      "cellborder=\"0\" cellspacing=\"2\"><tr><td align=\"left\"><b>",
		      f);
		hstr(f, "BlueConnect ");
		hstr(f, bh->factorisation);
		fprintf(f, ", %.4g s</b></td></tr>", bh->seconds);
		for (int s = 0; s < bh->n_stages; s++) {
			const struct bc_stage *st = &bh->stages[s];
			char lv[4], line[160];

			bc_levels_str(st->levels, lv);
			snprintf(line, sizeof(line), "%d. %s over %s (%s), groups of %d, %.4g s",
				 s + 1, bc_op_name(st->op), bc_fabric_name(st->fabric), lv,
				 st->group_size, st->seconds);
			fputs("<tr><td align=\"left\">", f);
			hstr(f, line);
			fputs("</td></tr>", f);
		}
		fputs("</table>>];\n", f);
	}
	fputs("}\n", f);
out:
	free(load);
	free(roots);
	free(fills);
	free(n_roots);
	free(rows);
}

/* ---- CREW partial reduce ---- */

void
draw_crew(FILE *f, const struct topo *t, const struct plan *p, const struct crew_section *s,
	  const struct draw_opts *o)
{
	int n = t->n_nodes, *agg_idx = calloc((size_t)n + 1, sizeof(int));
	double *load = calloc((size_t)t->n_links * 2 + 1, sizeof(double));
	double *bload = calloc((size_t)t->n_links * 2 + 1, sizeof(double));
	struct legend_row *rows = calloc((size_t)n + 1, sizeof(*rows));
	bool *member = calloc((size_t)n + 1, sizeof(bool));
	uint64_t smax = 0;
	int n_agg = 0;
	char title[512], a[32];
	bool timed = s->scatter_s > 0 && s->broadcast_s > 0;

	if (agg_idx == NULL || load == NULL || bload == NULL || rows == NULL || member == NULL)
		goto out;
	for (int k = 0; k < s->p; k++)
		member[s->group[k]] = true;
	for (int v = 0; v < n; v++) {
		agg_idx[v] = -1;
		if (s->bytes[v] > 0) {
			agg_idx[v] = n_agg++;
			smax = s->bytes[v] > smax ? s->bytes[v] : smax;
		}
	}
	/* Per link direction: the scatter (member to aggregator) at share / scatter time, the
	 * broadcast (aggregator to member) at share / broadcast time; the phases follow each
	 * other, so the busier counts. Relays and backups are failover routes (docs/CREW.md):
	 * unused while every link is up. */
	for (int v = 0; timed && v < n; v++) {
		for (int k = 0; s->bytes[v] > 0 && k < s->p; k++) {
			int m = s->group[k], l = topo_link_between(t, m, v);

			if (m == v || l < 0)
				continue;
			load[2 * l + (t->links[l].a == m ? 0 : 1)] +=
				(double)s->bytes[v] * 8 / s->scatter_s / 1e9;
			bload[2 * l + (t->links[l].a == v ? 0 : 1)] +=
				(double)s->bytes[v] * 8 / s->broadcast_s / 1e9;
		}
	}
	for (int l = 0; l < 2 * t->n_links; l++)
		load[l] = fmax(load[l], bload[l]);
	if (snprintf(title, sizeof(title),
		     "%s partial reduce on %s: %d of %d sites, %d "
		     "aggregators%s%s%s",
		     crew_scheme_name(s->scheme), t->name, s->p, topo_worker_sites(t), n_agg,
		     timed ? ", " : "",
		     timed ? gb(s->scatter_s + s->aggregate_s + s->broadcast_s, a, sizeof(a)) : "",
		     timed ? " s; links: busiest direction load/capacity Gbit/s" : "") >=
	    (int)sizeof(title))
		title[sizeof(title) - 1] = '\0';
	(void)p;
	dot_begin(f, t, o);
	dot_title(f, title);
	for (int v = 0; v < n; v++) {
		char extra[160] = "", attrs[160] = "", c[8];
		size_t e = 0;

		if (member[v])
			e += (size_t)snprintf(extra, sizeof(extra), "member");
		if (agg_idx[v] >= 0) {
			colour(agg_idx[v], c);
			snprintf(extra + e, sizeof(extra) - e, "%saggregates %.1f%%",
				 e > 0 ? ", " : "",
				 100.0 * (double)s->bytes[v] / (double)s->model_bytes);
			snprintf(attrs, sizeof(attrs),
				 "class=\"aggregator\", peripheries=%d, "
				 "fillcolor=\"%s\", fontcolor=\"#ffffff\"",
				 member[v] ? 2 : 1, c);
		} else if (member[v]) {
			snprintf(attrs, sizeof(attrs), "peripheries=2");
		} else {
			snprintf(attrs, sizeof(attrs), "fillcolor=\"#eeeeee\"");
		}
		dot_node(f, t, v, extra, attrs);
	}
	for (int l = 0; l < t->n_links; l++) {
		double ab = topo_link_gbps_from(t, l, t->links[l].a);
		double ba = topo_link_gbps_from(t, l, t->links[l].b);
		double ua = load[2 * l] / ab, ub = load[2 * l + 1] / ba;

		dot_link(f, t, l, timed ? (ua >= ub ? load[2 * l] : load[2 * l + 1]) : -1,
			 ua >= ub ? ab : ba);
	}
	for (int v = 0; v < n; v++) {
		double w;
		char c[8];

		if (agg_idx[v] < 0)
			continue;
		w = pen((double)s->bytes[v], (double)smax);
		colour(agg_idx[v], c);
		for (int k = 0; k < s->p; k++) {
			int m = s->group[k], r = s->relay[(size_t)v * (size_t)s->p + (size_t)k];

			if (m == v)
				continue;
			fprintf(f,
				"\tn%d -- n%d [class=\"aggregator-%d\", color=\"%s\", "
				"penwidth=%.3f, dir=forward, arrowsize=0.6, len=%.2f];\n",
				m, v, agg_idx[v], c, w, pair_len(t, m, v));
			if (r >= 0 && o->failover)
				fprintf(f,
					"\tn%d -- n%d -- n%d [class=\"relay-%d\", color=\"%s\", "
					"style=dashed, penwidth=0.8, dir=forward, arrowsize=0.5, "
					"tooltip=\"relay if the link fails\"];\n",
					v, r, m, agg_idx[v], c);
		}
		if (s->backup[v] >= 0)
			fprintf(f,
				"\tn%d -- n%d [class=\"backup\", color=\"%s\", style=dotted, "
				"dir=forward, arrowsize=0.6, label=\"backup\", "
				"fontcolor=\"%s\"];\n",
				v, s->backup[v], c, c);
		snprintf(rows[agg_idx[v]].colour, sizeof(rows[0].colour), "%s", c);
		snprintf(rows[agg_idx[v]].text, sizeof(rows[0].text),
			 "%.63s: %llu bytes (%.1f%%)%s%.63s", t->nodes[v].id,
			 (unsigned long long)s->bytes[v],
			 100.0 * (double)s->bytes[v] / (double)s->model_bytes,
			 s->backup[v] >= 0 ? ", backup " : "",
			 s->backup[v] >= 0 ? t->nodes[s->backup[v]].id : "");
	}
	dot_legend(f,
		   o->failover ?
			   "aggregators (members scatter to them; dotted: backup, "
			   "dashed: relay of the result, if a link fails)" :
			   "aggregators (members scatter to them; dotted: backup if a link fails)",
		   rows, n_agg);
	fputs("}\n", f);
out:
	free(agg_idx);
	free(load);
	free(bload);
	free(rows);
	free(member);
}

/* ---- SELMCAST multicast ---- */

void
draw_selmcast(FILE *f, const struct topo *t, const struct selmcast_plan *sp,
	      const struct draw_opts *o)
{
	const struct selmcast_round *rd = &sp->rounds[o->round];
	struct legend_row *rows = calloc((size_t)rd->n_senders + 1, sizeof(*rows));
	int *sender_of = calloc((size_t)t->n_nodes + 1, sizeof(int));
	uint64_t bmax = 0;
	char title[512], a[32];

	if (rows == NULL || sender_of == NULL)
		goto out;
	for (int v = 0; v < t->n_nodes; v++)
		sender_of[v] = -1;
	for (int i = 0; i < rd->n_senders; i++) {
		sender_of[rd->senders[i].site] = i;
		bmax = rd->senders[i].bytes > bmax ? rd->senders[i].bytes : bmax;
	}
	if (snprintf(title, sizeof(title),
		     "selmcast plan on %s (%s multicast, p = %d): round "
		     "%d of %d, completes in %s s; links: capacity Gbit/s",
		     t->name, sp->model == SELMCAST_NETWORK ? "network" : "application", sp->p,
		     o->round, sp->n_rounds, gb(rd->seconds, a, sizeof(a))) >= (int)sizeof(title))
		title[sizeof(title) - 1] = '\0';
	dot_begin(f, t, o);
	dot_title(f, title);
	for (int v = 0; v < t->n_nodes; v++) {
		char extra[64] = "", attrs[128] = "", c[8];

		if (sender_of[v] >= 0) {
			char bytes[32];

			colour(sender_of[v], c);
			plan_fmt_bytes(bytes, sizeof(bytes),
				       (double)rd->senders[sender_of[v]].bytes);
			snprintf(extra, sizeof(extra), "sends %s", bytes);
			snprintf(attrs, sizeof(attrs),
				 "class=\"sender\", fillcolor=\"%s\", "
				 "fontcolor=\"#ffffff\"",
				 c);
		} else {
			snprintf(attrs, sizeof(attrs), "shape=box, fillcolor=\"#eeeeee\"");
		}
		dot_node(f, t, v, extra, attrs);
	}
	for (int l = 0; l < t->n_links; l++)
		dot_link(f, t, l, -1, topo_link_duplex_gbps(t, l));
	for (int i = 0; i < rd->n_senders; i++) {
		const struct selmcast_sender *s = &rd->senders[i];
		double w = pen((double)s->bytes, (double)bmax) / 2;
		char c[8];

		colour(i, c);
		/* Receivers need not be neighbours: the update reaches them over the network,
		 * so these edges are drawn without pulling the layout. */
		for (int r = 0; r < s->n_receivers; r++)
			fprintf(f,
				"\tn%d -- n%d [class=\"sender-%d\", color=\"%s\", penwidth=%.3f, "
				"dir=forward, arrowsize=0.6, len=3, weight=0];\n",
				s->site, s->receivers[r], i, c, w);
		snprintf(rows[i].colour, sizeof(rows[0].colour), "%s", c);
		snprintf(rows[i].text, sizeof(rows[0].text), "%.63s to %d receivers",
			 t->nodes[s->site].id, s->n_receivers);
	}
	dot_legend(f, "senders (arrows to their receivers)", rows, rd->n_senders);
	fputs("}\n", f);
out:
	free(rows);
	free(sender_of);
}
