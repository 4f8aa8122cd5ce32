# SPDX-License-Identifier: BSD-3-Clause
"""b4: a networkx node-link JSON document (the Teal and NCFlow topologies: B4, UsCarrier,
Kdl)."""

import json
import math
import os

from .helpers import basename, read_text
from .topology import IdMaker, InputError, Topology, warn


def cmd_b4(args):
    text = read_text(args.file)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError("%s:%d:%d: invalid JSON: %s" % (args.file, e.lineno, e.colno, e.msg))
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), list) or \
            not isinstance(doc.get("links", doc.get("edges")), list):
        raise InputError("%s: not a networkx node-link document (need 'nodes' and 'links')"
                         % args.file)
    if not (math.isfinite(args.scale) and args.scale > 0):
        raise InputError("--scale must be a positive number")
    directed = bool(doc.get("directed", False))
    net = os.path.splitext(basename(args.file))[0]
    topo = Topology(args.name or net.lower())
    ids = IdMaker()
    pos = {}
    for k, nd in enumerate(doc["nodes"]):
        if not isinstance(nd, dict) or "id" not in nd:
            raise InputError("%s: nodes[%d] has no id" % (args.file, k))
        key = json.dumps(nd["id"])
        if key in pos:
            raise InputError("%s: nodes[%d]: repeated id %s" % (args.file, k, key))
        label = str(nd["id"])
        pos[key] = topo.add_node(ids.make(label, "n%d" % k))
    cap = {}
    loops = 0
    for k, lk in enumerate(doc.get("links", doc.get("edges"))):
        if not isinstance(lk, dict):
            raise InputError("%s: links[%d] is not an object" % (args.file, k))
        try:
            u, v = pos[json.dumps(lk.get("source"))], pos[json.dumps(lk.get("target"))]
        except KeyError:
            raise InputError("%s: links[%d] names an unknown node" % (args.file, k))
        c = lk.get("capacity")
        if isinstance(c, bool) or not isinstance(c, (int, float)) or \
                not math.isfinite(c) or c <= 0:
            raise InputError("%s: links[%d]: capacity must be a positive number, got %r"
                             % (args.file, k, c))
        if u == v:
            loops += 1
            continue
        if directed:
            cap[(u, v)] = cap.get((u, v), 0.0) + c
        else:
            cap[(u, v)] = cap.get((u, v), 0.0) + c
            cap[(v, u)] = cap.get((v, u), 0.0) + c
    if not cap:
        raise InputError("%s: no links" % args.file)
    one_way = 0
    for (u, v) in sorted(cap, key=lambda e: (min(e), max(e), e)):
        if (u, v) in topo.links or (v, u) in topo.links:
            continue
        ab = cap[(u, v)]
        ba = cap.get((v, u))
        if ba is None:
            ba = ab
            one_way += 1
        a, b = (u, v) if u < v else (v, u)
        if a != u:
            ab, ba = ba, ab
        topo.add_link(a, b, ab * args.scale, ba * args.scale, latency_ms=args.latency_ms)
    if loops:
        warn("%s: dropped %d self-loop(s)" % (args.file, loops))
    if one_way:
        warn("%s: %d link(s) exist in one direction only; used the same capacity both ways"
             % (args.file, one_way))
    src = ("%s from the Teal repository github.com/harvard-cns/teal topologies/ (commit "
           "8076c99), MIT licence; Google B4 site graph as used by NCFlow and Teal "
           "(Z. Xu et al., 'Teal: Learning-Accelerated Optimization of WAN Traffic "
           "Engineering', SIGCOMM 2023); capacities are unit-less TE values assigned by the "
           "TE papers, not measurements" % basename(args.file))
    notes = ("gbps = capacity x %g (the file's capacity units are unspecified; the default "
             "reads them as Mbit/s, so 5000 -> 5 Gbit/s); directed links paired into one "
             "link per unordered pair (gbps_ba when the directions differ); %s"
             % (args.scale, "latency_ms = %g on every link" % args.latency_ms
                if args.latency_ms is not None else "no coordinates, so no latency"))
    return topo, src, notes
