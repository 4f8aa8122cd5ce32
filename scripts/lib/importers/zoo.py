# SPDX-License-Identifier: BSD-3-Clause
"""zoo / zoo-csv: a network of the Internet Topology Zoo, from GraphML or its edges CSV."""

import os
import re
import xml.etree.ElementTree as ET

from .helpers import basename, latency_from, parse_coord, parse_float, read_csv, read_text
from .topology import IdMaker, InputError, Topology, warn


OC_RE = re.compile(r"\bOC-?(\d+)", re.IGNORECASE)
ZOO_SOURCE = ("Internet Topology Zoo, network '%s' (github.com/mroughan/InternetTopologyZoo "
              "commit a725bbc, the long-term store of topology-zoo.org), CC BY 4.0; cite S. "
              "Knight, H. X. Nguyen, N. Falkner, R. Bowden, M. Roughan, 'The Internet "
              "Topology Zoo', IEEE JSAC 29(9), 2011")


def oc_bps(*labels):
    """OC-n in a link type/label -> n x 51.84 Mbit/s, else None."""
    for lab in labels:
        m = OC_RE.search(lab or "")
        if m and int(m.group(1)) > 0:
            return int(m.group(1)) * 51.84e6
    return None


def build_zoo(args, what, net, nodes, edges):
    """nodes: [(key, label, coord or None)]; edges: [(key_u, key_v, bps or None)]."""
    topo = Topology(args.name or ("zoo-" + re.sub(r"[^a-z0-9]+", "-", net.lower()).strip("-")))
    ids = IdMaker()
    pos, crd = {}, {}
    for key, label, c in nodes:
        nid = ids.make(label, "node%s" % key)
        pos[key] = topo.add_node(nid, label=label if label and label != nid else None,
                                 lat=c[0] if c else None, lon=c[1] if c else None)
        crd[key] = c
    loops, nocap, defaulted, nolat = 0, [], 0, 0
    for u, v, bps in edges:
        if u == v:
            loops += 1
            continue
        if bps is None:
            if args.default_gbps is None:
                nocap.append("%s - %s" % (topo.nodes[pos[u]]["id"], topo.nodes[pos[v]]["id"]))
                continue
            gbps = args.default_gbps
            defaulted += 1
        else:
            gbps = bps / 1e9
        lat, km = latency_from(crd[u], crd[v], args.km_per_ms)
        if lat is None:
            nolat += 1
        topo.add_link(pos[u], pos[v], gbps, latency_ms=lat, merge=True, km=km)
    if not topo.links:
        raise InputError("%s: no edge with a capacity (LinkSpeedRaw/capacity_bps); "
                         "use --default-gbps" % what)
    if loops:
        warn("%s: dropped %d self-loop(s)" % (what, loops))
    if nocap:
        more = "; ..." if len(nocap) > 10 else ""
        warn("%s: skipped %d edge(s) without capacity: %s%s"
             % (what, len(nocap), "; ".join(nocap[:10]), more))
    if defaulted:
        warn("%s: %d edge(s) without capacity set to --default-gbps %g"
             % (what, defaulted, args.default_gbps))
    if topo.merged:
        warn("%s: merged %d parallel edge(s) (capacities added)" % (what, topo.merged))
    if nolat:
        warn("%s: %d link(s) touch a node without coordinates; they get no latency_ms"
             % (what, nolat))
    topo.keep_largest_component(what)
    notes = ("capacity = LinkSpeedRaw (bit/s) / 1e9, or OC-n x 51.84 Mbit/s from "
             "LinkType/LinkLabel; parallel edges merged (capacities added); self-loops "
             "dropped; largest connected component; latency_ms = great-circle km / %g km/ms "
             "(lower bound; absent when a node has no coordinates)" % args.km_per_ms)
    if args.default_gbps is not None:
        notes += "; edges without capacity: %g Gbit/s" % args.default_gbps
    else:
        notes += "; edges without capacity skipped"
    return topo, ZOO_SOURCE % net, notes


def cmd_zoo(args):
    text = read_text(args.file)
    try:
        root = ET.fromstring(text.encode("utf-8"))
    except ET.ParseError as e:
        line, col = e.position
        raise InputError("%s:%d:%d: invalid XML: %s" % (args.file, line, col + 1,
                                                         str(e).split(":")[0]))

    def local(tag):
        return tag.rsplit("}", 1)[-1]

    if local(root.tag) != "graphml":
        raise InputError("%s: not a GraphML document (root element <%s>)"
                         % (args.file, local(root.tag)))
    keys = {}
    for el in root:
        if local(el.tag) == "key":
            keys[el.get("id")] = el.get("attr.name") or el.get("id")
    graph = next((el for el in root if local(el.tag) == "graph"), None)
    if graph is None:
        raise InputError("%s: no <graph> element" % args.file)

    def data(el):
        return {keys.get(d.get("key"), d.get("key")): (d.text or "").strip()
                for d in el if local(d.tag) == "data"}

    gdata = data(graph)
    net = gdata.get("label") or gdata.get("Network") or \
        os.path.splitext(basename(args.file))[0]
    nodes, edges, known = [], [], set()
    for el in graph:
        t = local(el.tag)
        if t == "node":
            key = el.get("id")
            if key is None or key in known:
                raise InputError("%s: node without id or with a repeated id %r"
                                 % (args.file, key))
            known.add(key)
            d = data(el)
            nodes.append((key, d.get("label"), parse_coord(d.get("Latitude"),
                                                           d.get("Longitude"))))
        elif t == "edge":
            u, v = el.get("source"), el.get("target")
            d = data(el)
            bps = None
            if d.get("LinkSpeedRaw"):
                bps = parse_float(d["LinkSpeedRaw"], "%s: edge %s-%s LinkSpeedRaw"
                                  % (args.file, u, v))
                if bps <= 0:
                    bps = None
            if bps is None:
                bps = oc_bps(d.get("LinkType"), d.get("LinkLabel"))
            edges.append((u, v, bps))
    for u, v, _ in edges:
        for end in (u, v):
            if end not in known:
                raise InputError("%s: edge names unknown node %r" % (args.file, end))
    if not nodes:
        raise InputError("%s: the graph has no nodes" % args.file)
    return build_zoo(args, args.file, net, nodes, edges)


def cmd_zoo_csv(args):
    rows = read_csv(args.file)
    if not rows:
        raise InputError("%s: empty file" % args.file)
    head = [h.strip() for h in rows[0]]
    need = ("src_label", "dst_label", "capacity_bps")
    missing = [h for h in need if h not in head]
    if missing:
        raise InputError("%s:1: missing column(s) %s (expected the Topology Zoo edges CSV)"
                         % (args.file, ", ".join(missing)))
    col = {h: k for k, h in enumerate(head)}
    by_id = "src_id" in col and "dst_id" in col
    nodes, seen, edges = {}, {}, []
    for ln, row in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        if len(row) != len(head):
            raise InputError("%s:%d: expected %d cells, got %d"
                             % (args.file, ln, len(head), len(row)))

        def get(name):
            return row[col[name]].strip() if name in col else ""

        ends = []
        for side in ("src", "dst"):
            label = get(side + "_label")
            key = get(side + "_id") if by_id else label
            if not key:
                raise InputError("%s:%d: empty %s node" % (args.file, ln, side))
            c = parse_coord(get(side + "_lat"), get(side + "_lon"))
            if key not in nodes:
                nodes[key] = (label, c)
                seen[key] = len(seen)
            ends.append(key)
        cap = get("capacity_bps")
        bps = None
        if cap:
            bps = parse_float(cap, "%s:%d: capacity_bps" % (args.file, ln), "bit/s value")
            if bps <= 0:
                bps = None
        edges.append((ends[0], ends[1], bps))
    if not nodes:
        raise InputError("%s: no edges" % args.file)
    # GraphML order (numeric node ids) when ids are numbers, so that zoo and zoo-csv give
    # the same document for the same network; first appearance otherwise.
    keys = list(nodes)
    if by_id and all(re.fullmatch(r"-?\d+", k) for k in keys):
        keys.sort(key=int)
    net = os.path.splitext(basename(args.file))[0]
    return build_zoo(args, args.file, net, [(k, nodes[k][0], nodes[k][1]) for k in keys],
                     edges)
