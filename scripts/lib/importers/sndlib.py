# SPDX-License-Identifier: BSD-3-Clause
"""sndlib: a network of SNDlib in its native format."""

import os
import re

from .helpers import basename, latency_from, parse_coord, parse_float, read_text
from .topology import IdMaker, InputError, Topology, warn


SND_UNITS = {"BITSPERSEC": 1e-9, "KBITPERSEC": 1e-6, "MBITPERSEC": 1e-3, "GBITPERSEC": 1.0}
SND_NODE = re.compile(r"^(\S+)\s*\(\s*(\S+)\s+(\S+)\s*\)\s*$")
SND_LINK = re.compile(r"^(\S+)\s*\(\s*(\S+)\s+(\S+)\s*\)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)"
                      r"\s*\(([^)]*)\)\s*$")


def parse_sndlib(path):
    text = read_text(path)
    section, meta, nodes, links = None, {}, [], []
    seen_sections = set()
    depth = 0       # parenthesis depth inside the sections that are skipped
    for ln, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("?"):
            continue
        where = "%s:%d" % (path, ln)
        if section is None:
            m = re.match(r"^([A-Z_]+)\s*\($", line)
            if not m:
                raise InputError("%s: expected a section header like 'NODES (', got %r"
                                 % (where, line[:40]))
            section = m.group(1)
            seen_sections.add(section)
            depth = 1
            continue
        if section not in ("META", "NODES", "LINKS"):
            # DEMANDS, ADMISSIBLE_PATHS, ...: skipped, their blocks nest.
            depth += line.count("(") - line.count(")")
            if depth < 0:
                raise InputError("%s: unbalanced ')'" % where)
            if depth == 0:
                section = None
            continue
        if line == ")":
            section = None
            continue
        if section == "META":
            if "=" in line:
                k, v = line.split("=", 1)
                meta[k.strip().lower()] = v.strip()
        elif section == "NODES":
            m = SND_NODE.match(line)
            if not m:
                raise InputError("%s: expected '<id> ( <lon> <lat> )', got %r"
                                 % (where, line[:60]))
            nodes.append((m.group(1), parse_float(m.group(2), where, "longitude"),
                          parse_float(m.group(3), where, "latitude"), ln))
        elif section == "LINKS":
            m = SND_LINK.match(line)
            if not m:
                raise InputError("%s: expected '<id> ( <src> <dst> ) <capacity> <cost> "
                                 "<routing_cost> <setup_cost> ( <modules> )', got %r"
                                 % (where, line[:60]))
            pre = parse_float(m.group(4), where, "pre-installed capacity")
            mods = m.group(8).split()
            if len(mods) % 2:
                raise InputError("%s: module list must be capacity/cost pairs" % where)
            caps = [parse_float(mods[k], where, "module capacity")
                    for k in range(0, len(mods), 2)]
            links.append((m.group(1), m.group(2), m.group(3), pre,
                          [c for c in caps if c > 0], ln))
    if section is not None:
        raise InputError("%s: section %s is not closed" % (path, section))
    if "NODES" not in seen_sections or "LINKS" not in seen_sections:
        raise InputError("%s: not an SNDlib native network file (no NODES or LINKS section)"
                         % path)
    return meta, nodes, links


def cmd_sndlib(args):
    meta, nodes, links = parse_sndlib(args.file)
    net = os.path.splitext(basename(args.file))[0]
    unit = args.unit or meta.get("unit")
    if unit is None:
        unit = "MBITPERSEC"
        warn("%s: no unit in META; capacities taken as Mbit/s (override with --unit)"
             % args.file)
    unit = unit.upper()
    if unit not in SND_UNITS:
        raise InputError("%s: unknown capacity unit '%s' (known: %s)"
                         % (args.file, unit, ", ".join(SND_UNITS)))
    scale = SND_UNITS[unit]

    coords = args.coords
    if coords == "auto":
        geo = all(parse_coord(lat, lon) is not None for _, lon, lat, _ in nodes)
        coords = "geo" if geo else "none"
        if not geo:
            warn("%s: node coordinates are not longitude/latitude (planar layout); "
                 "links get no latency" % args.file)
    topo = Topology(args.name or ("%s-sndlib" % net))
    ids = IdMaker()
    pos, crd = {}, {}
    for nid, lon, lat, ln in nodes:
        if nid in pos:
            raise InputError("%s:%d: node '%s' defined twice" % (args.file, ln, nid))
        c = parse_coord(lat, lon) if coords == "geo" else None
        if coords == "geo" and c is None:
            raise InputError("%s:%d: node '%s': (%g, %g) is not a longitude/latitude "
                             "(use --coords none)" % (args.file, ln, nid, lon, lat))
        new = ids.make(nid, "n%d" % len(pos))
        pos[nid] = topo.add_node(new, label=nid if new != nid else None,
                                 lat=c[0] if c else None, lon=c[1] if c else None)
        crd[nid] = c
    n_module, n_pre, loops, same_dir = 0, 0, 0, 0
    cap = {}        # (s, t) as listed -> capacity sum in the file's unit
    for lid, s, t, pre, mods, ln in links:
        for end in (s, t):
            if end not in pos:
                raise InputError("%s:%d: link '%s' names unknown node '%s'"
                                 % (args.file, ln, lid, end))
        if s == t:
            loops += 1
            continue
        if pre > 0:
            c = pre
            n_pre += 1
        elif mods:
            c = min(mods)
            n_module += 1
        else:
            raise InputError("%s:%d: link '%s' has neither a pre-installed capacity nor a "
                             "capacity module" % (args.file, ln, lid))
        if (s, t) in cap:
            same_dir += 1
        cap[(s, t)] = cap.get((s, t), 0.0) + c
    # A pair listed in both directions (brain, giul39, janos-us, janos-us-ca and sun list
    # every link once per direction) is one link with gbps / gbps_ba; a pair listed once
    # is undirected (the same capacity both ways); repeats in the same direction are
    # parallel links whose capacities add.
    both = 0
    for (s, t), c in cap.items():
        i, j = pos[s], pos[t]
        if (i, j) in topo.links or (j, i) in topo.links:
            continue
        back = cap.get((t, s))
        if back is not None:
            both += 1
        lat, km = latency_from(crd[s], crd[t], args.km_per_ms)
        topo.add_link(i, j, c * scale, (back if back is not None else c) * scale,
                      latency_ms=lat, km=km)
    if loops:
        warn("%s: dropped %d self-loop link(s)" % (args.file, loops))
    if same_dir:
        warn("%s: merged %d parallel link(s) (capacities added)" % (args.file, same_dir))
    if both:
        warn("%s: %d node pair(s) listed in both directions; each direction's capacity "
             "kept as gbps / gbps_ba" % (args.file, both))
    if n_module:
        warn("%s: %d of %d links have no pre-installed capacity; used the smallest "
             "installable module" % (args.file, n_module, n_module + n_pre))
    src = ("SNDlib 1.0 network '%s' (native format; mirror github.com/sikorski-as/sndlib "
           "commit c06f3ef of sndlib.zib.de), published by ZIB for research use; cite S. "
           "Orlowski, R. Wessaely, M. Pioro, A. Tomaszewski, 'SNDlib 1.0 - Survivable "
           "Network Design Library', Networks 55(3), 2010" % net)
    notes = ("capacity = pre-installed capacity if > 0, else the smallest installable "
             "module (%d pre-installed, %d module); unit %s; a pair listed once is "
             "undirected, a pair listed in both directions keeps each direction (gbps, "
             "gbps_ba), repeats in one direction add up; " % (n_pre, n_module, unit))
    if coords == "geo":
        notes += ("latency_ms = great-circle km / %g km/ms between node lon/lat (lower "
                  "bound, fibre routes are longer)" % args.km_per_ms)
    else:
        notes += "no latency: node coordinates are not geographic"
    return topo, src, notes
