# SPDX-License-Identifier: BSD-3-Clause
"""aws: the measured AWS inter-region matrix (DS3Lab DT-FM) as a full mesh."""

import os

from .helpers import parse_float, read_csv
from .topology import InputError, Topology, warn


AWS_CODES = {
    "Oregon": "us-west-2", "Virginia": "us-east-1", "Ohio": "us-east-2",
    "Tokyo": "ap-northeast-1", "Seoul": "ap-northeast-2", "Singapore": "ap-southeast-1",
    "Sydney": "ap-southeast-2", "London": "eu-west-2", "Frankfurt": "eu-central-1",
    "Ireland": "eu-west-1", "California": "us-west-1",
}


def read_matrix(path, what):
    """A square CSV matrix: header `label,name1,...`, rows `name,v1,...`, empty diagonal.
    Returns (names, {(row, col): value})."""
    rows = [r for r in read_csv(path) if any(c.strip() for c in r)]
    if len(rows) < 2:
        raise InputError("%s: expected a header and at least one row" % path)
    names = [c.strip() for c in rows[0][1:]]
    if not names or any(not n for n in names) or len(set(names)) != len(names):
        raise InputError("%s:1: header must name every column once" % path)
    values, seen = {}, []
    for ln, row in enumerate(rows[1:], start=2):
        if len(row) != len(names) + 1:
            raise InputError("%s:%d: expected %d cells, got %d"
                             % (path, ln, len(names) + 1, len(row)))
        r = row[0].strip()
        if r not in names or r in seen:
            raise InputError("%s:%d: row '%s' is not a column of the header or is repeated"
                             % (path, ln, r))
        seen.append(r)
        for c, cell in zip(names, row[1:]):
            cell = cell.strip()
            if c == r:
                continue
            values[(r, c)] = parse_float(cell, "%s:%d: column '%s'" % (path, ln, c), what)
    if len(seen) != len(names):
        missing = [n for n in names if n not in seen]
        raise InputError("%s: no row for %s" % (path, ", ".join(missing)))
    return names, values


def cmd_aws(args):
    # Reading of the data (data/aws-10region/SOURCE.txt): bandwidth_gbps_matrix.csv holds
    # the Gbit/s values DS3Lab's DT-FM scheduler simulation uses per region pair, and
    # delay_ms_matrix.csv the measured *ping round-trip time* in ms (it equals the
    # ping_rtt_ms column of the directed tc_cluster_setting measurements). The topology
    # format wants the one-way propagation delay, so latency_ms = RTT / 2. If a matrix is
    # not symmetric, gbps/gbps_ba take the two directions and the RTT is the mean of the
    # two cells (both are round trips).
    bw_path = os.path.join(args.dir, "bandwidth_gbps_matrix.csv")
    rtt_path = os.path.join(args.dir, "delay_ms_matrix.csv")
    if not os.path.isdir(args.dir):
        raise InputError("%s: not a directory (expected the aws-10region data folder)"
                         % args.dir)
    names, bw = read_matrix(bw_path, "bandwidth in Gbit/s")
    rnames, rtt = read_matrix(rtt_path, "RTT in ms")
    if set(rnames) != set(names):
        raise InputError("%s and %s name different regions" % (bw_path, rtt_path))
    for v in bw.values():
        if v <= 0:
            raise InputError("%s: bandwidths must be positive" % bw_path)
    for v in rtt.values():
        if v < 0:
            raise InputError("%s: RTTs must be >= 0" % rtt_path)

    if args.regions:
        lookup = {}
        for n in names:
            lookup[n.lower()] = n
            if n in AWS_CODES:
                lookup[AWS_CODES[n]] = n
        chosen = []
        for tok in args.regions.split(","):
            tok = tok.strip()
            if tok.lower() not in lookup:
                raise InputError("--regions: unknown region '%s' (known: %s)"
                                 % (tok, ", ".join(names)))
            n = lookup[tok.lower()]
            if n in chosen:
                raise InputError("--regions: region '%s' given twice" % n)
            chosen.append(n)
    else:
        chosen = list(names)

    topo = Topology(args.name or ("aws-%dregion" % len(chosen)))
    for n in chosen:
        topo.add_node(n.lower(), label=n, aws_region=AWS_CODES.get(n))
    for x in range(len(chosen)):
        for y in range(x + 1, len(chosen)):
            a, b = chosen[x], chosen[y]
            rtt_ms = (rtt[(a, b)] + rtt[(b, a)]) / 2
            topo.add_link(x, y, bw[(a, b)], bw[(b, a)], latency_ms=rtt_ms / 2)
            if bw[(a, b)] != bw[(b, a)]:
                warn("%s: asymmetric bandwidth %s->%s %g vs %g Gbit/s (kept both directions)"
                     % (bw_path, a, b, bw[(a, b)], bw[(b, a)]))
    src = ("AWS inter-region bandwidth (Gbit/s) and ping RTT (ms) for %d regions, from "
           "github.com/DS3Lab/DT-FM scheduler/generate_sim_com_matrices.py (commit cda948f0), "
           "MIT licence; B. Yuan et al., 'Decentralized Training of Foundation Models in "
           "Heterogeneous Environments', NeurIPS 2022 (arXiv 2206.01288)" % len(names))
    notes = ("full mesh; gbps = the DT-FM matrix value (a per-connection/VPN-limited "
             "collective bandwidth, not raw iperf3 throughput); latency_ms = ping RTT / 2")
    return topo, src, notes
