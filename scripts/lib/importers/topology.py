# SPDX-License-Identifier: BSD-3-Clause
"""The output model of the importers: a topology of nodes and links, checked against the
topology format's rules and the planner's limits, and written as a `georeduce-topology/1`
document with one node and one link per line."""

import json
import math
import re

FORMAT = "georeduce-topology/1"
ID_MAX = 63             # bytes of a node id (spec)
NAME_MAX = 127          # bytes of a topology name (lib/topo.h TOPO_NAME_MAX)
NODES_MAX = 4096        # lib/topo.h TOPO_NODES_MAX: larger documents are rejected there
LINKS_MAX = 65536       # lib/topo.h TOPO_LINKS_MAX
GBPS_DIGITS = 9         # round capacities to 1 bit/s
MS_DIGITS = 3           # round latencies to 1 us


class InputError(Exception):
    """Bad input: reported as one line on stderr, exit status 2."""


_warnings = []


def warn(msg):
    """Queue a warning; printed only if the document is produced."""
    _warnings.append(msg)


def utf8_truncate(s, limit):
    b = s.encode("utf-8")
    if len(b) <= limit:
        return s
    return b[:limit].decode("utf-8", "ignore")


class IdMaker:
    """Turns labels into unique, non-empty ids of at most ID_MAX bytes."""

    def __init__(self):
        self.used = set()

    def make(self, label, fallback):
        base = re.sub(r"\s+", " ", (label or "").replace("\0", "")).strip()
        if not base:
            base = fallback
        base = utf8_truncate(base, ID_MAX)
        cand, k = base, 2
        while cand in self.used:
            suffix = "-%d" % k
            cand = utf8_truncate(base, ID_MAX - len(suffix)) + suffix
            k += 1
        self.used.add(cand)
        return cand


class Topology:
    def __init__(self, name):
        self.name = name
        self.nodes = []         # dicts, "id" first
        self.index = {}         # id -> position
        self.links = {}         # (i, j) as inserted -> [cap i->j, cap j->i, latency, extra]
        self.merged = 0

    def add_node(self, nid, **extra):
        if nid in self.index:
            raise InputError("duplicate node id '%s'" % nid)
        node = {"id": nid}
        node.update({k: v for k, v in extra.items() if v is not None})
        self.index[nid] = len(self.nodes)
        self.nodes.append(node)
        return self.index[nid]

    def add_link(self, i, j, gbps_ab, gbps_ba=None, latency_ms=None, merge=False, **extra):
        """Add a link i -> j; with merge=True a second link between the same pair adds its
        capacities to the first (parallel edges), otherwise it is an input error."""
        if i == j:
            raise InputError("self-loop on node '%s'" % self.nodes[i]["id"])
        if gbps_ba is None:
            gbps_ba = gbps_ab
        for v in (gbps_ab, gbps_ba):
            if not (math.isfinite(v) and v > 0):
                raise InputError("link '%s' - '%s': capacity %r is not a positive number"
                                 % (self.nodes[i]["id"], self.nodes[j]["id"], v))
        if (i, j) in self.links or (j, i) in self.links:
            if not merge:
                raise InputError("more than one link between '%s' and '%s'"
                                 % (self.nodes[i]["id"], self.nodes[j]["id"]))
            if (i, j) in self.links:
                rec = self.links[(i, j)]
                rec[0] += gbps_ab
                rec[1] += gbps_ba
            else:
                rec = self.links[(j, i)]
                rec[0] += gbps_ba
                rec[1] += gbps_ab
            if rec[2] is None:
                rec[2] = latency_ms
            self.merged += 1
            return
        self.links[(i, j)] = [gbps_ab, gbps_ba, latency_ms,
                              {k: v for k, v in extra.items() if v is not None}]

    def neighbours(self):
        adj = [[] for _ in self.nodes]
        for (i, j) in self.links:
            adj[i].append(j)
            adj[j].append(i)
        return adj

    def components(self):
        """Connected components as lists of node positions, in order of their first node."""
        adj = self.neighbours()
        seen = [False] * len(self.nodes)
        comps = []
        for s in range(len(self.nodes)):
            if seen[s]:
                continue
            seen[s] = True
            stack, comp = [s], []
            while stack:
                u = stack.pop()
                comp.append(u)
                for w in adj[u]:
                    if not seen[w]:
                        seen[w] = True
                        stack.append(w)
            comps.append(sorted(comp))
        return comps

    def keep_nodes(self, keep):
        """Restrict to the node positions in keep (links between kept nodes survive)."""
        keep = sorted(keep)
        remap = {old: new for new, old in enumerate(keep)}
        self.nodes = [self.nodes[o] for o in keep]
        self.index = {n["id"]: k for k, n in enumerate(self.nodes)}
        self.links = {(remap[i], remap[j]): rec for (i, j), rec in self.links.items()
                      if i in remap and j in remap}

    def keep_largest_component(self, what):
        comps = self.components()
        if len(comps) <= 1:
            return
        best = max(comps, key=len)     # ties: the component of the earliest node
        dropped = len(self.nodes) - len(best)
        warn("%s: graph has %d connected components; kept the largest (%d nodes), dropped "
             "%d node(s)" % (what, len(comps), len(best), dropped))
        self.keep_nodes(best)

    def check(self):
        if not self.nodes:
            raise InputError("the topology has no nodes")
        if len(self.nodes) > NODES_MAX or len(self.links) > LINKS_MAX:
            raise InputError("%d nodes and %d links exceed the planner's limits (%d, %d)"
                             % (len(self.nodes), len(self.links), NODES_MAX, LINKS_MAX))
        if len(self.components()) > 1:
            raise InputError("the topology is not connected")

    def document(self, source, generated_by, notes, workers):
        self.check()
        doc = {"format": FORMAT, "name": self.name, "source": source,
               "generated_by": generated_by, "notes": notes}
        nodes = []
        for n in self.nodes:
            out = {"id": n["id"], "workers": workers}
            out.update({k: v for k, v in n.items() if k != "id"})
            nodes.append(out)
        links = []
        for (i, j), (ab, ba, lat, extra) in self.links.items():
            ab, ba = round(ab, GBPS_DIGITS), round(ba, GBPS_DIGITS)
            if not (ab > 0 and ba > 0):
                raise InputError("link '%s' - '%s': capacity rounds to 0"
                                 % (self.nodes[i]["id"], self.nodes[j]["id"]))
            out = {"a": self.nodes[i]["id"], "b": self.nodes[j]["id"], "gbps": ab}
            if ba != ab:
                out["gbps_ba"] = ba
            if lat is not None:
                out["latency_ms"] = round(lat, MS_DIGITS)
            out.update(extra)
            links.append(out)
        doc["nodes"] = nodes
        doc["links"] = links
        return doc


def render(doc):
    """JSON with one node and one link per line: readable and diff-friendly."""
    def dump(v):
        return json.dumps(v, ensure_ascii=False, allow_nan=False)

    out = ["{"]
    for k, v in doc.items():
        if k in ("nodes", "links"):
            continue
        out.append("  %s: %s," % (dump(k), dump(v)))
    for k in ("nodes", "links"):
        items = doc[k]
        tail = "," if k == "nodes" else ""
        if not items:
            out.append("  %s: []%s" % (dump(k), tail))
            continue
        out.append("  %s: [" % dump(k))
        out.append(",\n".join("    " + dump(it) for it in items))
        out.append("  ]" + tail)
    out.append("}")
    return "\n".join(out) + "\n"
