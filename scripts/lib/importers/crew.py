# SPDX-License-Identifier: BSD-3-Clause
"""crew: a full mesh of sites with bandwidths drawn from the CREW inter-cloud
measurements."""

import math
import random

from .helpers import check_mesh_size, check_sites, parse_float, read_csv, site_ids
from .topology import InputError, Topology


def read_value_list(path):
    """One number per line, or a CSV whose last column is the number (header allowed)."""
    vals = []
    for ln, row in enumerate(read_csv(path), start=1):
        if not row or not any(c.strip() for c in row):
            continue
        cell = row[-1].strip()
        if ln == 1:
            try:
                float(cell)
            except ValueError:
                continue    # header line
        v = parse_float(cell, "%s:%d" % (path, ln), "bandwidth in Mbit/s")
        if v <= 0:
            raise InputError("%s:%d: bandwidth must be positive, got %s" % (path, ln, cell))
        vals.append(v)
    if not vals:
        raise InputError("%s: no bandwidth values" % path)
    return vals


def cmd_crew(args):
    check_sites(args.sites)
    check_mesh_size(args.sites)
    mbps = read_value_list(args.file)
    lat_range = None
    if args.latency_range is not None:
        lo, hi = args.latency_range
        if not (math.isfinite(lo) and math.isfinite(hi) and 0 <= lo <= hi):
            raise InputError("--latency-range: need 0 <= LO <= HI, got %g %g" % (lo, hi))
        lat_range = (lo, hi)
    rng = random.Random(args.seed)
    n = args.sites
    topo = Topology(args.name or ("crew-%d" % n))
    for nid in site_ids("c", n):
        topo.add_node(nid)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    # Bandwidths first (both directions of every pair, pairs in order), latencies in a
    # second pass: the bandwidths of a seed do not depend on --latency-range.
    draws = [(rng.choice(mbps) / 1000.0, rng.choice(mbps) / 1000.0) for _ in pairs]
    lats = [rng.uniform(*lat_range) for _ in pairs] if lat_range else [None] * len(pairs)
    for (i, j), (ab, ba), lat in zip(pairs, draws, lats):
        topo.add_link(i, j, ab, ba, latency_ms=lat)
    src = ("bandwidths drawn i.i.d. from the %d inter-cloud bandwidth measurements (Mbit/s) "
           "of the CREW example simulator (S. Luo, R. Wang, K. Li, H. Xing, 'Efficient "
           "Cross-Cloud Partial Reduce With CREW', IEEE TPDS 35(11), 2024), measured by "
           "Lai et al., 'To relay or not to relay for inter-cloud transfers', HotCloud 2018; "
           "no licence stated by the source" % len(mbps))
    if lat_range:
        lnote = "latency_ms uniform in [%g, %g] per pair" % lat_range
    else:
        lnote = "no latency (0 ms): CREW's model has bandwidth only"
    notes = ("full mesh of %d sites; gbps and gbps_ba drawn independently with "
             "Python random.Random(%d).choice, Mbit/s / 1000; %s" % (n, args.seed, lnote))
    return topo, src, notes
