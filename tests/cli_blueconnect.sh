#!/usr/bin/env bash
# georeduce-plan blueconnect end to end: good runs write valid plans whose hierarchy
# section matches the summary, and every class of bad input exits 2 with one line.
# Usage: tests/cli_blueconnect.sh PATH/TO/georeduce-plan
set -u
plan=${1:?usage: cli_blueconnect.sh PATH/TO/georeduce-plan}
cd "$(dirname "$0")/.."
ex=examples/topologies
. tests/clilib.sh

# has PATTERN FILE DESCRIPTION
has() { grep -q -- "$1" "$2" && ok "$3" || not_ok "$3: no '$1' in $(head -c 300 "$2")"; }

bc() { "$plan" blueconnect "$@"; }
aws4=$ex/aws-4region.json

expect 0 "blueconnect --help" bc --help
has "--workers-per-gateway" "$tmp/out" "help names the options"
expect 0 "main help lists blueconnect" "$plan" --help
has "blueconnect" "$tmp/out" "main help lists blueconnect"

# Bad input: exit 2, one line naming the option or the field.
expect 2 "missing --topology" bc -g 2
expect 2 "missing file" bc -t "$tmp/nope.json"
expect 2 "zero --gateways" bc -t $aws4 -g 0
has "gateways" "$tmp/err" "error names --gateways"
expect 2 "zero --workers-per-gateway" bc -t $aws4 -W 0
has "workers-per-gateway" "$tmp/err" "error names --workers-per-gateway"
expect 2 "bad --gateways text" bc -t $aws4 -g two
expect 2 "negative --workers-per-gateway" bc -t $aws4 -W -3
expect 2 "zero --bytes" bc -t $aws4 -b 0
expect 2 "bad --bytes" bc -t $aws4 -b 1XB
expect 2 "bad --max-trees" bc -t $aws4 -k -1
expect 2 "unknown option" bc -t $aws4 --frob
expect 2 "stray argument" bc -t $aws4 extra
expect 2 "hierarchy too large" bc -t $aws4 -g 100000 -W 100000
has "more than" "$tmp/err" "error says the limit"
cat >"$tmp/noworkers.json" <<'J'
{"format": "georeduce-topology/1", "nodes": [{"id": "a", "workers": 0}, {"id": "b", "workers": 0}],
 "links": [{"a": "a", "b": "b", "gbps": 1}]}
J
expect 2 "no worker sites" bc -t "$tmp/noworkers.json"
cat >"$tmp/badlan.json" <<'J'
{"format": "georeduce-topology/1", "nodes": [{"id": "a", "lan_gbps": 0}, {"id": "b"}],
 "links": [{"a": "a", "b": "b", "gbps": 1}]}
J
expect 2 "zero lan_gbps" bc -t "$tmp/badlan.json"
has "lan_gbps" "$tmp/err" "error names lan_gbps"

# Good runs: the plan is valid by the spec's rules and carries the hierarchy section.
expect 0 "4 sites x 2 gateways x 8 workers" bc -t $aws4 -g 2 -W 8 -o "$tmp/p.json"
cp "$tmp/out" "$tmp/summary"
has "chosen" "$tmp/out" "summary names the chosen decomposition"
has "flat ring" "$tmp/out" "summary has the flat ring"
has "site mTree" "$tmp/out" "summary has site-level mTree"
has "\[W\]\[G\]\[S\]" "$tmp/out" "summary lists the five-stage candidate"
expect 0 "plan valid" "$plan" validate -t $aws4 -p "$tmp/p.json"
has '"hierarchy"' "$tmp/p.json" "plan has the hierarchy section"
has '"algorithm": "blueconnect"' "$tmp/p.json" "plan names the algorithm"
chosen=$(sed -n 's/^chosen \([^:]*\):.*/\1/p' "$tmp/summary")
grep -qF "\"factorisation\": \"$chosen\"" "$tmp/p.json" && [ -n "$chosen" ] &&
	ok "section names the chosen factorisation" ||
	not_ok "section names the chosen factorisation ('$chosen')"
expect 0 "plan to stdout, summary to stderr" bc -t $aws4 -g 2 -W 8 -b 64MiB
has '"hierarchy"' "$tmp/out" "stdout has the plan"
has "chosen" "$tmp/err" "stderr has the summary"
expect 0 "quiet" bc -t $aws4 -q -o "$tmp/q.json"
[ ! -s "$tmp/out" ] && [ ! -s "$tmp/err" ] && ok "quiet prints nothing" ||
	not_ok "quiet prints nothing"
# Uneven sites and a slow LAN: the ring stages pay, and the choice beats site-level mTree.
python3 - "$aws4" "$tmp/uneven.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
for n, (w, g) in zip(t["nodes"], [(64, 4), (48, 4), (30, 2), (7, 3)]):
    n.update(workers=w, gateways=g, lan_gbps=10)
json.dump(t, open(sys.argv[2], "w"))
PY
expect 0 "uneven sites, 10 Gbit/s LAN" bc -t "$tmp/uneven.json" -o "$tmp/u.json"
expect 0 "uneven plan valid" "$plan" validate -t "$tmp/uneven.json" -p "$tmp/u.json"
has '"workers_per_gateway": 16' "$tmp/u.json" "64 workers over 4 gateways"
has '"workers_per_gateway": 3' "$tmp/u.json" "7 workers over 3 gateways padded to 3"
sed -n 's/^chosen \(.*\)$/\1/p' "$tmp/out" >"$tmp/chosen"
grep -q "^\[WGS\]" "$tmp/chosen" && not_ok "slow LAN: ring stages chosen ($(cat "$tmp/chosen"))" ||
	ok "slow LAN: ring stages chosen"
# Relay sites carry trees but are not ranks.
expect 0 "topology with relays" bc -t $ex/abilene-sndlib.json -g 2 -W 4 -q -o "$tmp/r.json"
expect 0 "relay plan valid" "$plan" validate -t $ex/abilene-sndlib.json -p "$tmp/r.json"
expect 2 "unwritable --output" bc -t $aws4 -q -o /nonexistent/dir/p.json

echo "$n tests, $fails failed"
[ "$fails" -eq 0 ]
