# SPDX-License-Identifier: BSD-3-Clause
"""synthetic: the mTree paper's evaluation model, a random full mesh or sparse graph."""

import heapq
import math
import random

from .helpers import check_mesh_size, check_sites, site_ids
from .topology import LINKS_MAX, InputError, Topology, warn


def random_tree(n, rng):
    """A uniformly random labelled tree on n nodes (decoded random Pruefer sequence)."""
    if n < 2:
        return []
    if n == 2:
        return [(0, 1)]
    seq = [rng.randrange(n) for _ in range(n - 2)]
    degree = [1] * n
    for x in seq:
        degree[x] += 1
    leaves = [v for v in range(n) if degree[v] == 1]
    heapq.heapify(leaves)
    edges = []
    for x in seq:
        leaf = heapq.heappop(leaves)
        edges.append((min(leaf, x), max(leaf, x)))
        degree[x] -= 1
        if degree[x] == 1:
            heapq.heappush(leaves, x)
    u, v = heapq.heappop(leaves), heapq.heappop(leaves)
    edges.append((min(u, v), max(u, v)))
    return edges


def cmd_synthetic(args):
    n = args.sites
    check_sites(n)
    if not (math.isfinite(args.skew) and 0 <= args.skew <= 1):
        raise InputError("--skew must be in [0, 1] (the mTree paper's range), got %g"
                         % args.skew)
    rng = random.Random(args.seed)
    max_edges = n * (n - 1) // 2
    if args.kind == "mesh":
        check_mesh_size(n)
        edges = [(i, j) for i in range(n) for j in range(i + 1, n)]
        shape = "complete graph"
    else:
        if args.degree is None:
            raise InputError("--kind sparse needs --degree D")
        if not (math.isfinite(args.degree) and args.degree > 0):
            raise InputError("--degree must be positive, got %g" % args.degree)
        m = int(math.floor(n * args.degree / 2.0 + 0.5))
        if m > max_edges:
            raise InputError("--degree %g needs %d links, more than the %d pairs of %d sites"
                             % (args.degree, m, max_edges, n))
        if m > LINKS_MAX:
            raise InputError("--degree %g on %d sites gives %d links, more than the "
                             "planner's limit of %d" % (args.degree, n, m, LINKS_MAX))
        # Backbones are built 2-connected: a random ring through every site, so that no
        # site hangs off a single link (which alone would bound every tree's rate).
        if n >= 3:
            perm = list(range(n))
            rng.shuffle(perm)
            tree = sorted({(min(perm[i], perm[(i + 1) % n]), max(perm[i], perm[(i + 1) % n]))
                           for i in range(n)})
        else:
            tree = random_tree(n, rng)
        if m < len(tree):
            warn("--degree %g is below a ring's %g; generated a ring"
                 % (args.degree, 2.0 * len(tree) / n))
            m = len(tree)
        have = set(tree)
        extra = m - len(tree)
        if extra > (max_edges - len(tree)) // 2:
            # Dense: sample from the explicit complement.
            rest = [(i, j) for i in range(n) for j in range(i + 1, n) if (i, j) not in have]
            added = rng.sample(rest, extra)
        else:
            added = []
            while len(added) < extra:
                i, j = rng.randrange(n), rng.randrange(n)
                if i == j:
                    continue
                e = (min(i, j), max(i, j))
                if e not in have:
                    have.add(e)
                    added.append(e)
        edges = sorted(tree + added)
        shape = ("2-connected random graph, average degree %g: a ring through the sites "
                 "in random order plus uniformly random extra pairs"
                 % (2.0 * m / n))
    lo, hi = 200.0 - 100.0 * args.skew, 200.0 + 100.0 * args.skew
    topo = Topology(args.name or ("%s-%d" % (args.kind, n)))
    for nid in site_ids("s", n):
        topo.add_node(nid)
    for (i, j) in edges:
        mbps = round(rng.uniform(lo, hi), 3)
        # Linear map of the bandwidth range onto [400, 50] ms: hi -> 50, lo -> 400.
        lat = 225.0 if hi == lo else 400.0 - 350.0 * (mbps - lo) / (hi - lo)
        topo.add_link(i, j, mbps / 1000.0, latency_ms=lat)
    src = ("synthetic, the evaluation model of mTree (TNSE 2024): bandwidth uniform in "
           "[200 - 100 sk, 200 + 100 sk] Mbit/s, latency 50-400 ms inversely related to "
           "bandwidth; no external data")
    notes = ("%s; %d sites; sk = %g: bandwidth uniform in [%g, %g] Mbit/s, same both ways; "
             "latency_ms = 400 - 350 (bw - %g) / %g (the range's top -> 50 ms, bottom -> "
             "400 ms); Python random.Random(%d)"
             % (shape, n, args.skew, lo, hi, lo, hi - lo, args.seed))
    return topo, src, notes
