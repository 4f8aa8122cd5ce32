#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Tests of scripts/import-topology and the example topologies it makes.
#
#   tests/importers.sh [GEOREDUCE_PLAN]
#
# Prints one line per case ("ok - ..." / "not ok - ..."), exits non-zero if any case
# failed. With a built georeduce-plan binary as $1 it also runs
# `georeduce-plan validate --topology F` on every example. The datasets come from
# $GEOREDUCE_DATA (default: ../shared/data relative to the repository root); the cases
# that need them are skipped when the folder is missing.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 1
py=${PYTHON:-python3}
imp=("$py" scripts/import-topology)
data=${GEOREDUCE_DATA:-../shared/data}
ex=examples/topologies
plan=${1:-}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/importers.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

failed=0
n=0
ok() { n=$((n + 1)); echo "ok - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok - $*"; }
skip() { n=$((n + 1)); echo "ok - $* # SKIP"; }
check() { # check DESCRIPTION COMMAND...: ok when the command succeeds
	local what=$1
	shift
	if "$@" >"$tmp/out" 2>&1; then ok "$what"; else not_ok "$what"; sed 's/^/#   /' "$tmp/out"; fi
}

# expect_bad DESCRIPTION ARGS...: the importer must exit 2 with exactly one stderr line.
expect_bad() {
	local what=$1 rc lines
	shift
	"${imp[@]}" "$@" >"$tmp/bad.out" 2>"$tmp/bad.err"
	rc=$?
	lines=$(wc -l <"$tmp/bad.err")
	if [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ] && [ ! -s "$tmp/bad.out" ]; then
		ok "bad input exits 2 with one line: $what"
	else
		not_ok "bad input exits 2 with one line: $what (status $rc, $lines stderr lines)"
		sed 's/^/#   /' "$tmp/bad.err"
	fi
}

# Structural rules of spec/formats.md (georeduce-topology/1) and the planner's limits.
spec_check() {
	"$py" - "$@" <<'EOF'
import json, math, sys
bad = 0
for path in sys.argv[1:]:
    try:
        d = json.load(open(path, encoding="utf-8"))
        assert d.get("format") == "georeduce-topology/1", "format"
        assert isinstance(d.get("name"), str) and d["name"], "name"
        assert isinstance(d.get("source"), str) and d["source"], "source"
        ids = [n["id"] for n in d["nodes"]]
        assert ids, "no nodes"
        assert all(isinstance(i, str) and 0 < len(i.encode()) <= 63 for i in ids), "id length"
        assert len(set(ids)) == len(ids), "duplicate ids"
        assert all(n.get("workers", 1) >= 1 for n in d["nodes"]), "workers"
        pairs, adj = set(), {i: [] for i in ids}
        for l in d["links"]:
            a, b = l["a"], l["b"]
            assert a in adj and b in adj, "unknown node %s/%s" % (a, b)
            assert a != b, "self-loop %s" % a
            p = frozenset((a, b))
            assert p not in pairs, "duplicate link %s-%s" % (a, b)
            pairs.add(p)
            for k in ("gbps", "gbps_ba"):
                v = l.get(k, l["gbps"])
                assert isinstance(v, (int, float)) and math.isfinite(v) and v > 0, k
            lat = l.get("latency_ms", 0)
            assert math.isfinite(lat) and lat >= 0, "latency_ms"
            adj[a].append(b)
            adj[b].append(a)
        seen, stack = {ids[0]}, [ids[0]]
        while stack:
            for w in adj[stack.pop()]:
                if w not in seen:
                    seen.add(w)
                    stack.append(w)
        assert len(seen) == len(ids), "not connected"
    except Exception as e:  # noqa: BLE001 - report and go on
        print("%s: %s" % (path, e))
        bad += 1
sys.exit(1 if bad else 0)
EOF
}

counts() { # counts FILE: "nodes links"
	"$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(len(d["nodes"]), len(d["links"]))' "$1"
}

examples=(aws-10region aws-4region crew-11 b4 abilene-sndlib geant-sndlib zoo-geant2009
	zoo-niif mesh-20 sparse-100)
# Expected "nodes links" of each example, from the datasets.
declare -A expect=(
	[aws-10region]="10 45" [aws-4region]="4 6" [crew-11]="11 55" [b4]="12 19"
	[abilene-sndlib]="12 15" [geant-sndlib]="22 36" [zoo-geant2009]="34 52"
	[zoo-niif]="36 41" [mesh-20]="20 190" [sparse-100]="100 200"
)

# --- committed examples: valid JSON, spec rules, expected sizes ------------------------
# One python3 run for all of them (json.tool semantics: json.load of the whole file).
for e in "${examples[@]}"; do
	echo "$ex/$e.json ${expect[$e]}"
done >"$tmp/expect"
"$py" - "$tmp/expect" <<'EOF' >"$tmp/examples.out"
import json, sys
for line in open(sys.argv[1]):
    path, nn, nl = line.split()
    try:
        d = json.load(open(path, encoding="utf-8"))
        print("ok - %s is valid JSON" % path)
    except (OSError, ValueError) as e:
        print("not ok - %s is valid JSON (%s)" % (path, e))
        continue
    got = "%d %d" % (len(d.get("nodes", [])), len(d.get("links", [])))
    want = "%s %s" % (nn, nl)
    print("%s - %s has %s nodes, %s links%s" % ("ok" if got == want else "not ok", path,
          nn, nl, "" if got == want else " (got %s)" % got))
EOF
while IFS= read -r line; do
	case $line in
	"ok - "*) ok "${line#ok - }" ;;
	*) not_ok "${line#not ok - }" ;;
	esac
done <"$tmp/examples.out"
files=()
for e in "${examples[@]}"; do files+=("$ex/$e.json"); done
check "the examples obey the topology format (ids, pairs, capacities, connected)" spec_check "${files[@]}"

# --- (a) regenerate.sh reproduces the committed examples --------------------------------
if [ -d "$data" ]; then
	if GEOREDUCE_DATA=$data bash $ex/regenerate.sh "$tmp/regen" >"$tmp/regen.log" 2>&1; then
		ok "regenerate.sh runs"
		for e in "${examples[@]}"; do
			if cmp -s "$tmp/regen/$e.json" "$ex/$e.json"; then
				ok "regenerated $e.json is identical to the committed file"
			else
				not_ok "regenerated $e.json is identical to the committed file"
				diff "$ex/$e.json" "$tmp/regen/$e.json" 2>&1 | head -5 | sed 's/^/#   /'
			fi
		done
		made=$(cd "$tmp/regen" && printf '%s\n' *.json | sort | tr '\n' ' ')
		want=$(printf '%s.json\n' "${examples[@]}" | sort | tr '\n' ' ')
		if [ "$made" = "$want" ]; then
			ok "regenerate.sh makes exactly the listed examples"
		else
			not_ok "regenerate.sh makes exactly the listed examples (made: $made)"
		fi
	else
		not_ok "regenerate.sh runs"
		sed 's/^/#   /' "$tmp/regen.log"
	fi
else
	skip "regenerate.sh reproduces the examples (no data folder $data)"
fi

# --- conversions that agree with each other ---------------------------------------------
if [ -d "$data" ]; then
	zoo=$data/topology-zoo
	for net in Geant2009 Karen; do
		"${imp[@]}" zoo "$zoo/graphml/$net.graphml" 2>/dev/null | grep -v generated_by >"$tmp/g.json"
		"${imp[@]}" zoo-csv "$zoo/edges_csv/$net.csv" 2>/dev/null | grep -v generated_by >"$tmp/c.json"
		if [ -s "$tmp/g.json" ] && cmp -s "$tmp/g.json" "$tmp/c.json"; then
			ok "zoo and zoo-csv give the same $net topology"
		else
			not_ok "zoo and zoo-csv give the same $net topology"
		fi
	done
	"${imp[@]}" zoo-csv "$zoo/edges_csv/Karen.csv" >"$tmp/karen.json" 2>"$tmp/karen.err"
	if [ "$(counts "$tmp/karen.json")" = "25 28" ] && grep -q "merged 2 parallel" "$tmp/karen.err"; then
		ok "Karen: 2 parallel edges merged (25 nodes, 28 links)"
	else
		not_ok "Karen: 2 parallel edges merged (25 nodes, 28 links)"
	fi
	"${imp[@]}" sndlib "$data/sndlib/native/brain.txt" >"$tmp/brain.json" 2>/dev/null
	if [ "$(counts "$tmp/brain.json")" = "161 166" ]; then
		ok "SNDlib brain: 332 directed links paired into 166"
	else
		not_ok "SNDlib brain: 332 directed links paired into 166"
	fi
	"${imp[@]}" aws "$data/aws-10region" --regions us-west-2,TOKYO -o "$tmp/aws2.json"
	if grep -q '"a": "oregon", "b": "tokyo", "gbps": 0.523, "latency_ms": 48.0' "$tmp/aws2.json"; then
		ok "aws: regions by AWS code or any case; latency = RTT/2"
	else
		not_ok "aws: regions by AWS code or any case; latency = RTT/2"
	fi
else
	skip "cross-checks of the importers (no data folder $data)"
fi

# --- synthetic: deterministic from the seed --------------------------------------------
"${imp[@]}" synthetic --kind sparse --sites 30 --degree 3 --seed 7 >"$tmp/s1.json"
"${imp[@]}" synthetic --kind sparse --sites 30 --degree 3 --seed 7 >"$tmp/s2.json"
"${imp[@]}" synthetic --kind sparse --sites 30 --degree 3 --seed 8 >"$tmp/s3.json"
if cmp -s "$tmp/s1.json" "$tmp/s2.json" && ! cmp -s "$tmp/s1.json" "$tmp/s3.json"; then
	ok "synthetic: same seed, same document; other seed, other document"
else
	not_ok "synthetic: same seed, same document; other seed, other document"
fi
check "synthetic sparse graphs are connected and obey the format" spec_check "$tmp/s1.json" "$tmp/s3.json"

# --- zoo fixture: parallel edges, self-loop, missing capacity, second component --------
cat >"$tmp/fixture.graphml" <<'EOF'
<?xml version="1.0" encoding="utf-8"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <key attr.name="label" attr.type="string" for="node" id="d0" />
  <key attr.name="Latitude" attr.type="double" for="node" id="d1" />
  <key attr.name="Longitude" attr.type="double" for="node" id="d2" />
  <key attr.name="LinkSpeedRaw" attr.type="double" for="edge" id="d3" />
  <graph edgedefault="undirected">
    <node id="0"><data key="d0">Same</data><data key="d1">0</data><data key="d2">0</data></node>
    <node id="1"><data key="d0">Same</data><data key="d1">0</data><data key="d2">1</data></node>
    <node id="2"><data key="d0">A label that is much longer than sixty-three bytes, it must be cut</data></node>
    <node id="3"><data key="d0">Island</data></node>
    <node id="4"><data key="d0">Island2</data></node>
    <edge source="0" target="1"><data key="d3">1000000000</data></edge>
    <edge source="1" target="0"><data key="d3">2000000000</data></edge>
    <edge source="0" target="0"><data key="d3">1000000000</data></edge>
    <edge source="1" target="2"><data key="d3">1000000000</data></edge>
    <edge source="0" target="2" />
    <edge source="3" target="4"><data key="d3">1000000000</data></edge>
  </graph>
</graphml>
EOF
"${imp[@]}" zoo "$tmp/fixture.graphml" >"$tmp/fix.json" 2>"$tmp/fix.err"
rc=$?
if [ $rc -eq 0 ] && spec_check "$tmp/fix.json" >/dev/null && [ "$(counts "$tmp/fix.json")" = "3 2" ] &&
	grep -q '"a": "Same", "b": "Same-2", "gbps": 3.0, "latency_ms": 0.556' "$tmp/fix.json" &&
	grep -q 'skipped 1 edge' "$tmp/fix.err" && grep -q 'self-loop' "$tmp/fix.err" &&
	grep -q 'kept the largest' "$tmp/fix.err"; then
	ok "zoo: unique ids, merged parallel edges, dropped self-loop, skipped edge, largest component"
else
	not_ok "zoo: unique ids, merged parallel edges, dropped self-loop, skipped edge, largest component"
	sed 's/^/#   /' "$tmp/fix.err" "$tmp/fix.json"
fi
"${imp[@]}" zoo "$tmp/fixture.graphml" --default-gbps 0.5 >"$tmp/fix2.json" 2>/dev/null
if grep -q '"gbps": 0.5' "$tmp/fix2.json" && [ "$(counts "$tmp/fix2.json")" = "3 3" ]; then
	ok "zoo: --default-gbps fills edges without capacity"
else
	not_ok "zoo: --default-gbps fills edges without capacity"
fi

# --- (b) bad input: exit status 2, one line on stderr -----------------------------------
printf 'region,A,B\nA,,x\nB,1,\n' >"$tmp/garbage.csv"
mkdir -p "$tmp/awsbad"
cp "$tmp/garbage.csv" "$tmp/awsbad/bandwidth_gbps_matrix.csv"
cp "$tmp/garbage.csv" "$tmp/awsbad/delay_ms_matrix.csv"
printf 'index,mbps\n0,12\n1,fast\n' >"$tmp/crew-garbage.csv"
printf 'a;b;c\n\x01\x02,,\n' >"$tmp/zoo-garbage.csv"
printf 'not sndlib\n' >"$tmp/garbage.txt"
printf '{"nodes": [' >"$tmp/garbage.json"
sed -e '/LinkSpeedRaw/d' -e 's|<data key="d3">[0-9]*</data>||' "$tmp/fixture.graphml" >"$tmp/nocap.graphml"
printf '<graphml><graph>\n<node id="0"/><edge source="0"\n' >"$tmp/broken.graphml"

expect_bad "aws: missing folder" aws "$tmp/no-such-dir"
expect_bad "aws: garbage CSV matrix" aws "$tmp/awsbad"
expect_bad "crew: missing file" crew "$tmp/no-such-file.csv" --sites 3
expect_bad "crew: garbage CSV" crew "$tmp/crew-garbage.csv" --sites 3
expect_bad "crew: --sites 0" crew "$tmp/crew-garbage.csv" --sites 0
expect_bad "crew: --sites not a number" crew "$tmp/crew-garbage.csv" --sites many
expect_bad "sndlib: missing file" sndlib "$tmp/no-such-file.txt"
expect_bad "sndlib: not an SNDlib file" sndlib "$tmp/garbage.txt"
expect_bad "zoo: missing file" zoo "$tmp/no-such-file.graphml"
expect_bad "zoo: GraphML with no edge with a capacity" zoo "$tmp/nocap.graphml"
expect_bad "zoo: malformed XML" zoo "$tmp/broken.graphml"
expect_bad "zoo-csv: garbage CSV" zoo-csv "$tmp/zoo-garbage.csv"
expect_bad "b4: truncated JSON" b4 "$tmp/garbage.json"
expect_bad "synthetic: --sites 0" synthetic --kind mesh --sites 0
expect_bad "synthetic: --skew out of range" synthetic --kind mesh --sites 4 --skew 1.5
expect_bad "synthetic: sparse without --degree" synthetic --kind sparse --sites 10
expect_bad "synthetic: --degree larger than a full mesh" synthetic --kind sparse --sites 5 --degree 5
expect_bad "no subcommand"
expect_bad "--workers 0" synthetic --kind mesh --sites 3 --workers 0
if [ -d "$data" ]; then
	expect_bad "aws: unknown region" aws "$data/aws-10region" --regions Oregon,Atlantis
	expect_bad "aws: region given twice" aws "$data/aws-10region" --regions Oregon,oregon
	expect_bad "aws: a file instead of the folder" aws "$data/aws-10region/delay_ms_matrix.csv"
	expect_bad "zoo-csv: GraphML given to the CSV importer" zoo-csv "$data/topology-zoo/graphml/Karen.graphml"
else
	skip "bad input cases that need the datasets (no data folder $data)"
fi

# --- (c) georeduce-plan accepts every example --------------------------------------------
if [ -n "$plan" ]; then
	for e in "${examples[@]}"; do
		if "$plan" validate --topology "$ex/$e.json" >"$tmp/v.out" 2>&1; then
			ok "georeduce-plan validate accepts $e.json"
		else
			not_ok "georeduce-plan validate accepts $e.json"
			sed 's/^/#   /' "$tmp/v.out"
		fi
	done
else
	skip "georeduce-plan validate on the examples (no binary given as \$1)"
fi

echo "# $n cases, $failed failed"
[ "$failed" -eq 0 ]
