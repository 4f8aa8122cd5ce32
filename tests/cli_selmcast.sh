#!/usr/bin/env bash
# georeduce-plan selmcast end to end: plans on generated and real instances checked by the
# strict section parser (--check), the random baseline and the MILP, and every class of
# bad input exiting with status 2 and exactly one line on stderr.
# Usage: tests/cli_selmcast.sh PATH/TO/georeduce-plan
set -u
plan=${1:?usage: cli_selmcast.sh PATH/TO/georeduce-plan}
cd "$(dirname "$0")/.."
ex=examples/topologies
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
count=0
bad=0

# report OK|FAIL TEXT
report() {
	count=$((count + 1))
	[ "$1" = OK ] && echo "ok $count - $2" || { bad=$((bad + 1)); echo "not ok $count - $2"; }
}

# st WANT TEXT ARGS...: run selmcast; the status must be WANT, and a status-2 run must
# say exactly one line on stderr.
st() {
	local want=$1 text=$2 got lines
	shift 2
	"$plan" selmcast "$@" >"$tmp/o" 2>"$tmp/e"
	got=$?
	lines=$(wc -l <"$tmp/e")
	if [ "$got" != "$want" ]; then
		report FAIL "$text: exit $got, want $want: $(head -c 300 "$tmp/e")"
	elif [ "$want" = 2 ] && [ "$lines" != 1 ]; then
		report FAIL "$text: $lines lines on stderr, want 1"
	else
		report OK "$text"
	fi
}

# has PATTERN FILE TEXT
has() { grep -q -- "$1" "$2" && report OK "$3" || report FAIL "$3 ('$1' not in $2)"; }

st 0 "--help" --help
has "stale-rounds" "$tmp/o" "help names --stale-rounds"
"$plan" --help | grep -q "selmcast" && report OK "listed in the main help" ||
	report FAIL "listed in the main help"

# Bad input: one line, status 2.
st 2 "no instance"
st 2 "both instances" -t $ex/b4.json --random 5
st 2 "missing topology file" -t "$tmp/none.json"
st 2 "p > n - 1" --random 5 -p 5
has "^georeduce-plan: --p: 5 is more than n - 1 = 4" "$tmp/e" "error names --p"
st 2 "p < 1" --random 5 -p 0
st 2 "p not a number" --random 5 -p two
st 2 "p > n - 1 on a topology" -t $ex/b4.json -p 12
st 2 "one site" --random 1
st 2 "zero mean bandwidth" --random 5 --mean-gbps 0
st 2 "negative mean bandwidth" --random 5 --mean-gbps -3
st 2 "lambda 1" --random 5 --lambda 1
st 2 "zero mu" --random 5 --mu 0
st 2 "bad model" --random 5 -m ip
st 2 "zero bytes" --random 5 -b 0
st 2 "zero rounds" --random 5 -R 0
st 2 "too many rounds" --random 5 -R 1001
st 2 "negative stale rounds" --random 5 -k -1
st 2 "exact for n > 40" --random 41 --exact
st 2 "unknown option" --random 5 --frob
st 2 "stray argument" --random 5 extra
st 2 "write-topology without --random" -t $ex/b4.json --write-topology "$tmp/t.json"

# Node bandwidth fields: zero, negative, missing value, wrong type.
for v in 0 -1 null '"fast"' '[]'; do
	cat >"$tmp/bw.json" <<J
{"format": "georeduce-topology/1", "nodes": [{"id": "a", "ingress_gbps": $v}, {"id": "b"},
 {"id": "c"}], "links": [{"a": "a", "b": "b", "gbps": 1}, {"a": "b", "b": "c", "gbps": 1}]}
J
	st 2 "ingress_gbps $v" -t "$tmp/bw.json" -p 1
	has "nodes\[0\].ingress_gbps" "$tmp/e" "error names nodes[0].ingress_gbps ($v)"
done
sed 's/"ingress_gbps": \[\]/"egress_gbps": 0/' "$tmp/bw.json" >"$tmp/bw2.json"
st 2 "egress_gbps 0" -t "$tmp/bw2.json" -p 1
has "nodes\[0\].egress_gbps" "$tmp/e" "error names nodes[0].egress_gbps"
sed 's/"ingress_gbps": \[\]/"update_bytes": 0/' "$tmp/bw.json" >"$tmp/bw3.json"
st 2 "update_bytes 0" -t "$tmp/bw3.json" -p 1
sed 's/"ingress_gbps": \[\]/"ingress_gbps": 1e999/' "$tmp/bw.json" >"$tmp/bw4.json"
st 2 "overflowing ingress_gbps" -t "$tmp/bw4.json" -p 1

# Good runs: a plan to a file, checked by the section parser.
st 0 "random instance" --random 12 --seed 4 -p 3 -R 6 -k 2 -o "$tmp/r.json" \
	--write-topology "$tmp/r.topo.json"
has '"multicast"' "$tmp/r.json" "plan has the multicast section"
has "mean over 6 rounds" "$tmp/o" "summary on stdout with --output"
st 0 "check the plan" --random 12 --seed 4 --check "$tmp/r.json"
st 0 "check against the written topology" -t "$tmp/r.topo.json" --check "$tmp/r.json"
st 0 "same instance from the topology file" -t "$tmp/r.topo.json" -p 3 -R 6 -k 2 -o "$tmp/r2.json"
python3 - "$tmp/r.json" "$tmp/r2.json" <<'PY' && report OK "same plan both ways" || report FAIL "same plan both ways"
import json, sys
a, b = (json.load(open(f))["multicast"] for f in sys.argv[1:])
assert a == b
PY
python3 - "$tmp/r.json" <<'PY' && report OK "plan obeys p and staleness" || report FAIL "plan obeys p and staleness"
import json, sys
m = json.load(open(sys.argv[1]))["multicast"]
k, p = m["stale_rounds"], m["p"]
last = {}
sites = [s["site"] for s in m["rounds"][0]["senders"]]
for r, rd in enumerate(m["rounds"]):
    for s in rd["senders"]:
        assert len(s["receivers"]) >= p and s["site"] not in s["receivers"]
        for x in s["receivers"]:
            last[(s["site"], x)] = r
    for a in sites:
        for b in sites:
            if a != b:
                assert r - last.get((a, b), -1) <= k, (r, a, b)
PY

# Damaged plans are rejected by --check with one line naming the field.
python3 - "$tmp/r.json" "$tmp" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
out = sys.argv[2]
def write(name, f):
    e = json.loads(json.dumps(d))
    f(e["multicast"]["rounds"][0]["senders"])
    json.dump(e, open(f"{out}/{name}.json", "w"))
write("unknown", lambda s: s[0]["receivers"].__setitem__(0, "nowhere"))
write("self", lambda s: s[0]["receivers"].__setitem__(0, s[0]["site"]))
write("dup", lambda s: s[0]["receivers"].append(s[0]["receivers"][0]))
write("few", lambda s: s[0].__setitem__("receivers", s[0]["receivers"][:1]))
write("relay", lambda s: s[0]["receivers"].__setitem__(0, "switch"))
PY
for c in unknown:"unknown site id" self:"from itself" dup:"duplicate receiver" \
	few:"fewer than p" relay:"relay site"; do
	st 2 "check rejects ${c%%:*}" --random 12 --seed 4 --check "$tmp/${c%%:*}.json"
	has "${c#*:}" "$tmp/e" "message for ${c%%:*}"
done
printf '{"format": "georeduce-plan/1", "trees": []}' >"$tmp/nosec.json"
st 2 "check a plan without the section" -t $ex/b4.json --check "$tmp/nosec.json"
has "'multicast': missing" "$tmp/e" "message for a missing section"

st 0 "plan to stdout" --random 6 -p 2
has '"format": "georeduce-plan/1"' "$tmp/o" "stdout holds the plan"
has "selmcast plan for" "$tmp/e" "summary on stderr"
st 0 "application layer" --random 20 -m application -R 3 -o "$tmp/a.json" -q
has '"model": "application"' "$tmp/a.json" "model recorded"
st 0 "random baseline" --random 20 --random-select -o "$tmp/b.json" -q
has '"algorithm": "selmcast-random"' "$tmp/b.json" "baseline named"
st 0 "exact MILP" --random 8 --exact -R 2 -o "$tmp/e.json" -q
st 0 "exact plan checks" --random 8 --check "$tmp/e.json"
st 0 "topology with derived bandwidths" -t $ex/aws-10region.json -p 3 -o "$tmp/aws.json" -q
st 0 "its plan checks" -t $ex/aws-10region.json --check "$tmp/aws.json"
st 0 "compare" --random 15 -R 3 --compare
for a in selmcast random exact; do has "^$a " "$tmp/o" "compare row $a"; done
st 0 "compare --json" --random 15 -m application --compare --json
python3 - "$tmp/o" <<'PY' && report OK "compare --json: SELMCAST no slower, at least as many receivers" ||
import json, sys
d = {r["algorithm"]: r for r in json.load(open(sys.argv[1]))["rows"]}
assert d["selmcast"]["mean_seconds"] <= d["random"]["mean_seconds"] * (1 + 1e-9)
assert d["selmcast"]["receivers_per_sender"] >= d["random"]["receivers_per_sender"]
assert d["exact"]["mean_seconds"] <= d["selmcast"]["mean_seconds"] * (1 + 1e-6)
PY
	report FAIL "compare --json: SELMCAST no slower, at least as many receivers"

echo "# $((count - bad)) passed, $bad failed"
[ "$bad" -eq 0 ]
