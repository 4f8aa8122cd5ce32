#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Rebuild every example topology in this folder from the shared datasets, with the exact
# commands that made the committed files. Sources and licences: ATTRIBUTION.md.
#
#   examples/topologies/regenerate.sh [OUTDIR]
#
# OUTDIR defaults to this folder. The datasets are read from $GEOREDUCE_DATA, by default
# ../shared/data relative to the repository root. Needs only python3 (standard library).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
data=${GEOREDUCE_DATA:-../shared/data}
out=${1:-examples/topologies}
py=${PYTHON:-python3}

if [ ! -d "$data" ]; then
	echo "regenerate.sh: data folder '$data' not found (set GEOREDUCE_DATA)" >&2
	exit 2
fi
mkdir -p "$out"

imp() {
	"$py" scripts/import-topology "$@"
}

# Measured AWS inter-region matrix (DS3Lab DT-FM, MIT): full mesh; latency = RTT / 2.
imp aws "$data/aws-10region" -o "$out/aws-10region.json"
# 4 sites on 3 continents; bandwidths 0.465-1.05 Gbit/s, one-way latency 33.5-99.5 ms.
imp aws "$data/aws-10region" --regions Oregon,Virginia,Ireland,Tokyo -o "$out/aws-4region.json"

# 11 clouds, directed bandwidths drawn from CREW's 110 inter-cloud values, no latency.
imp crew "$data/crew-intercloud/bandwidth_mbps.csv" --sites 11 --seed 1 -o "$out/crew-11.json"

# Google B4 site graph (Teal, MIT): capacity units unspecified, read as Mbit/s.
imp b4 "$data/wan-te-topologies/B4.json" -o "$out/b4.json"

# SNDlib: Abilene with its pre-installed OC-48/OC-192 capacities; GEANT (22 nodes) with
# the single installable module (40 Gbit/s) on every link.
imp sndlib "$data/sndlib/native/abilene.txt" -o "$out/abilene-sndlib.json"
imp sndlib "$data/sndlib/native/geant.txt" -o "$out/geant-sndlib.json"

# Topology Zoo (CC BY 4.0): GEANT 2009 from GraphML; NIIF (Hungary, 34 Mbit/s to
# 10 Gbit/s links) from the edges CSV. NIIF's uplink to the node "GEANT" has no
# coordinates, so that one link has no latency.
imp zoo "$data/topology-zoo/graphml/Geant2009.graphml" -o "$out/zoo-geant2009.json"
imp zoo-csv "$data/topology-zoo/edges_csv/Niif.csv" -o "$out/zoo-niif.json"

# The mTree paper's evaluation model.
imp synthetic --kind mesh --sites 20 --skew 0.5 --seed 1 -o "$out/mesh-20.json"
imp synthetic --kind sparse --sites 100 --degree 4 --skew 0.5 --seed 1 -o "$out/sparse-100.json"
