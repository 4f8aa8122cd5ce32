# SPDX-License-Identifier: BSD-3-Clause
"""The command line of scripts/import-topology: its subcommands and options, the
generated_by field, the output file and the exit status."""

import argparse
import math
import os
import sys

from . import __doc__ as PACKAGE_DOC
from .aws import cmd_aws
from .b4 import cmd_b4
from .crew import cmd_crew
from .helpers import KM_PER_MS, basename
from .sndlib import SND_UNITS, cmd_sndlib
from .synthetic import cmd_synthetic
from .topology import NAME_MAX, InputError, _warnings, render, utf8_truncate
from .zoo import cmd_zoo, cmd_zoo_csv

PROG = "import-topology"


class Parser(argparse.ArgumentParser):
    def __init__(self, *a, **kw):
        kw.setdefault("allow_abbrev", False)
        super().__init__(*a, **kw)

    def error(self, message):
        sys.stderr.write("%s: error: %s (see --help)\n" % (self.prog, message))
        sys.exit(2)


def common(p, workers=True):
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write the document to FILE (default: stdout)")
    p.add_argument("--name", help="topology name (default: derived from the input)")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="workers per site (default 1)")
    p.add_argument("--source", metavar="TEXT",
                   help="replace the 'source' field (origin, licence, citation)")


def geo(p):
    p.add_argument("--km-per-ms", type=float, default=KM_PER_MS, metavar="V",
                   help="propagation speed for latency from coordinates "
                        "(default %g km/ms, fibre ~2/3 c)" % KM_PER_MS)


def build_parser():
    top = Parser(prog=PROG, description=PACKAGE_DOC.split("\n\n")[0],
                 epilog="Run '%s COMMAND --help' for each command. Exit status 2 on bad "
                        "input. Details: docs/TOPOLOGIES.md." % PROG)
    sub = top.add_subparsers(dest="cmd", metavar="COMMAND", parser_class=Parser)
    sub.required = True

    p = sub.add_parser("aws", help="AWS 10-region measured matrix (full mesh)",
                       description="Full mesh from bandwidth_gbps_matrix.csv and "
                                   "delay_ms_matrix.csv (ping RTT; latency_ms = RTT/2).")
    p.add_argument("dir", metavar="DIR", help="the aws-10region data folder")
    p.add_argument("--regions", metavar="R1,R2,...",
                   help="subset, by name (Oregon) or AWS code (us-west-2), in output order")
    common(p)
    p.set_defaults(func=cmd_aws, input="dir")

    p = sub.add_parser("crew", help="full mesh with bandwidths drawn from CREW's 110 values",
                       description="Full mesh of N sites; gbps and gbps_ba drawn i.i.d. "
                                   "(random.Random(seed)) from the inter-cloud values in "
                                   "Mbit/s. No latency unless --latency-range.")
    p.add_argument("file", metavar="FILE", help="bandwidth_mbps.csv (one value per line)")
    p.add_argument("--sites", type=int, required=True, metavar="N")
    p.add_argument("--seed", type=int, default=1, metavar="S", help="default 1")
    p.add_argument("--latency-range", type=float, nargs=2, metavar=("LO", "HI"),
                   help="draw latency_ms uniformly in [LO, HI] per pair (default: none)")
    common(p)
    p.set_defaults(func=cmd_crew, input="file")

    p = sub.add_parser("sndlib", help="SNDlib native network file",
                       description="Capacity: pre-installed capacity, else the smallest "
                                   "installable module; unit from META (Mbit/s if absent); "
                                   "latency from lon/lat great-circle distance.")
    p.add_argument("file", metavar="FILE", help="native/<net>.txt")
    p.add_argument("--unit", choices=sorted(SND_UNITS),
                   help="capacity unit when META has none (default MBITPERSEC)")
    p.add_argument("--coords", choices=("auto", "geo", "none"), default="auto",
                   help="node coordinates are lon/lat (geo), planar (none) or decide by "
                        "range (auto, default)")
    geo(p)
    common(p)
    p.set_defaults(func=cmd_sndlib, input="file")

    for cmd, func, what in (("zoo", cmd_zoo, "Topology Zoo GraphML file"),
                            ("zoo-csv", cmd_zoo_csv, "Topology Zoo edges CSV file")):
        p = sub.add_parser(cmd, help=what,
                           description="Capacity from LinkSpeedRaw / capacity_bps (bit/s) or "
                                       "OC-n labels; parallel edges merged, self-loops "
                                       "dropped, largest component kept; latency from "
                                       "great-circle distance.")
        p.add_argument("file", metavar="FILE", help=what)
        p.add_argument("--default-gbps", type=float, metavar="X",
                       help="capacity for edges without one (default: skip them)")
        geo(p)
        common(p)
        p.set_defaults(func=func, input="file")

    p = sub.add_parser("b4", help="networkx node-link JSON (Teal's B4, UsCarrier, Kdl)",
                       description="Directed links paired into one link per unordered pair.")
    p.add_argument("file", metavar="FILE", help="B4.json")
    p.add_argument("--scale", type=float, default=0.001, metavar="G",
                   help="Gbit/s per capacity unit (default 0.001: units read as Mbit/s, "
                        "5000 -> 5 Gbit/s)")
    p.add_argument("--latency-ms", type=float, metavar="MS",
                   help="latency_ms for every link (default: none, the file has no "
                        "coordinates)")
    common(p)
    p.set_defaults(func=cmd_b4, input="file")

    p = sub.add_parser("synthetic", help="mTree evaluation model: random mesh or sparse graph",
                       description="Bandwidth uniform in [200-100sk, 200+100sk] Mbit/s, "
                                   "latency 50-400 ms falling linearly with bandwidth.")
    p.add_argument("--kind", choices=("mesh", "sparse"), required=True)
    p.add_argument("--sites", type=int, required=True, metavar="N")
    p.add_argument("--degree", type=float, metavar="D",
                   help="average degree (sparse only)")
    p.add_argument("--skew", type=float, default=0.7, metavar="SK",
                   help="bandwidth skew in [0, 1] (default 0.7, the paper's default)")
    p.add_argument("--seed", type=int, default=1, metavar="S", help="default 1")
    common(p)
    p.set_defaults(func=cmd_synthetic, input=None)
    return top


def generated_by(args, argv):
    """The command line, without --output and with the input reduced to its base name."""
    out, skip = [PROG], False
    inp = getattr(args, args.input) if args.input else None
    for a in argv:
        if skip:
            skip = False
            continue
        if a in ("-o", "--output"):
            skip = True
            continue
        if a.startswith("--output=") or (a.startswith("-o") and len(a) > 2):
            continue
        if inp is not None and a == inp:
            a = basename(a)
        out.append(a)
    return " ".join(out)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    try:
        if args.workers < 1:
            raise InputError("--workers must be at least 1, got %d" % args.workers)
        if args.name is not None:
            if not args.name or len(args.name.encode("utf-8")) > NAME_MAX:
                raise InputError("--name must be 1 to %d bytes" % NAME_MAX)
        if hasattr(args, "km_per_ms") and not (math.isfinite(args.km_per_ms)
                                               and args.km_per_ms > 0):
            raise InputError("--km-per-ms must be positive")
        if getattr(args, "default_gbps", None) is not None and \
                not (math.isfinite(args.default_gbps) and args.default_gbps > 0):
            raise InputError("--default-gbps must be positive")
        if getattr(args, "latency_ms", None) is not None and \
                not (math.isfinite(args.latency_ms) and args.latency_ms >= 0):
            raise InputError("--latency-ms must be >= 0")
        topo, src, notes = args.func(args)
        topo.name = utf8_truncate(topo.name, NAME_MAX)
        doc = topo.document(args.source or src, generated_by(args, argv), notes,
                            args.workers)
        data = render(doc).encode("utf-8")
        if args.output:
            tmp = args.output + ".tmp"
            try:
                with open(tmp, "wb") as f:
                    f.write(data)
                os.replace(tmp, args.output)
            except OSError as e:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise InputError("%s: %s" % (args.output, e.strerror or e))
        else:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
    except InputError as e:
        sys.stderr.write("%s: error: %s\n" % (PROG, e))
        return 2
    except OSError as e:
        sys.stderr.write("%s: error: %s: %s\n" % (PROG, e.filename or "output",
                                                  e.strerror or e))
        return 2
    for w in _warnings:
        sys.stderr.write("%s: warning: %s\n" % (PROG, w))
    return 0
