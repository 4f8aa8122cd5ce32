# SPDX-License-Identifier: BSD-3-Clause
"""Convert WAN datasets into `georeduce-topology/1` JSON documents.

Standard library only (runs on a bare Debian 12 `python3`). Every subcommand writes one
document to stdout or --output FILE. Bad input (missing file, unparsable rows, unknown
names, empty results, bad options) ends the program with one line on stderr and exit
status 2; warnings (skipped or merged edges, missing coordinates) are printed, one line
each, only when the document was written.

Conventions shared by all subcommands (see docs/TOPOLOGIES.md):
  * capacities are written in Gbit/s (`gbps`, and `gbps_ba` when the two directions
    differ), rounded to 1 bit/s; latencies in ms, one-way, rounded to 1 us;
  * latency from coordinates = great-circle distance (haversine, R = 6371 km) divided by
    200 km/ms, the speed of light in fibre (~2/3 c). This is a lower bound: real fibre
    routes are longer than the great circle;
  * every node gets `workers` (default 1, --workers N);
  * the document carries `source` (data origin, licence, citation), `generated_by` (the
    command, input given by its base name) and `notes` (the conversion assumptions);
  * the output obeys the topology format (shared spec/formats.md): unique non-empty ids
    of at most 63 bytes, one link per unordered pair, no self-loops, finite positive
    capacities, a connected graph.
"""

# The modules: topology (the output model, its checks and its JSON), helpers (reading and
# parsing input, coordinates), one module per dataset family (aws, crew, sndlib, zoo, b4,
# synthetic) and cli (the command line of scripts/import-topology).
