#!/usr/bin/env bash
# georeduce-plan crew end to end: plans from a topology, a CSV matrix and drawn
# inter-cloud meshes, the plan's partial_reduce section checked back, the training-progress
# simulation, and the exit status and one-line error of every class of bad input.
# Usage: tests/cli_crew.sh PATH/TO/georeduce-plan
set -u
plan=${1:?usage: cli_crew.sh PATH/TO/georeduce-plan}
cd "$(dirname "$0")/.."
ex=examples/topologies
. tests/clilib.sh

# error_has TEXT: the last command's stderr contains TEXT.
error_has() {
	grep -qF -- "$1" "$tmp/err" && ok "error names: $1" || not_ok "error names: $1 (got: $(cat "$tmp/err"))"
}

# Inputs: a 4-site CSV matrix and a small list of inter-cloud values.
cat >"$tmp/m.csv" <<'C'
region,a,b,c,d
a,,0.5,0.2,0.3
b,0.4,,0.25,0.35
c,0.1,0.2,,0.3
d,0.3,0.3,0.3,
C
printf 'index,mbps\n0,20\n1,55\n2,80\n3,134\n4,398\n' >"$tmp/values.csv"
ic=(--intercloud-data "$tmp/values.csv")

expect 0 "crew --help" "$plan" crew --help
grep -q -- "--progress-seconds" "$tmp/out" && ok "help lists the simulation" ||
	not_ok "help lists the simulation"
"$plan" --help | grep -q "^  crew " && ok "main help lists crew" || not_ok "main help lists crew"

# Bad input: exit 2, one line.
expect 2 "no input" "$plan" crew --p 2
expect 2 "two inputs" "$plan" crew -t $ex/aws-4region.json -m "$tmp/m.csv" --p 2
expect 2 "no group" "$plan" crew -m "$tmp/m.csv"
expect 2 "p > n" "$plan" crew -m "$tmp/m.csv" --p 5
error_has "--p: 5 is out of range [1, 4]"
expect 2 "p < 1" "$plan" crew -m "$tmp/m.csv" --p 0
expect 2 "p not a number" "$plan" crew -m "$tmp/m.csv" --p two
expect 2 "empty group" "$plan" crew -m "$tmp/m.csv" --group ''
error_has "--group: empty member"
expect 2 "empty member" "$plan" crew -m "$tmp/m.csv" --group a,,b
expect 2 "trailing comma" "$plan" crew -m "$tmp/m.csv" --group a,b,
expect 2 "unknown member" "$plan" crew -m "$tmp/m.csv" --group a,zz
error_has "--group: unknown site id 'zz'"
expect 2 "duplicate member" "$plan" crew -m "$tmp/m.csv" --group a,b,a
error_has "--group: duplicate member 'a'"
expect 2 "group and p" "$plan" crew -m "$tmp/m.csv" --group a,b --p 2
expect 2 "group in the simulation" "$plan" crew -m "$tmp/m.csv" --group a,b \
	--progress-seconds 5
expect 2 "bad scheme" "$plan" crew -m "$tmp/m.csv" --p 2 --scheme ring
expect 2 "bad bytes" "$plan" crew -m "$tmp/m.csv" --p 2 --bytes 0
expect 2 "bad seed" "$plan" crew -m "$tmp/m.csv" --p 2 --seed -1
expect 2 "bad failed links" "$plan" crew -m "$tmp/m.csv" --p 2 --progress-seconds 5 \
	--failed-links -1
expect 2 "bad progress seconds" "$plan" crew -m "$tmp/m.csv" --p 2 --progress-seconds 0
expect 2 "bad straggler probability" "$plan" crew -m "$tmp/m.csv" --p 2 \
	--progress-seconds 5 --straggler-prob 2
expect 2 "unknown option" "$plan" crew -m "$tmp/m.csv" --p 2 --frob
expect 2 "stray argument" "$plan" crew -m "$tmp/m.csv" --p 2 extra
expect 2 "missing matrix file" "$plan" crew -m "$tmp/nope.csv" --p 2
expect 2 "missing topology file" "$plan" crew -t "$tmp/nope.json" --p 2
expect 2 "intercloud 0 sites" "$plan" crew --intercloud 0 --p 1 "${ic[@]}"
expect 2 "missing intercloud data" "$plan" crew --intercloud 5 --p 2 \
	--intercloud-data "$tmp/nope.csv"
printf '10\nabc\n' >"$tmp/badvalues.csv"
expect 2 "non-numeric intercloud value" "$plan" crew --intercloud 5 --p 2 \
	--intercloud-data "$tmp/badvalues.csv"
printf '10\n0\n' >"$tmp/zerovalues.csv"
expect 2 "zero intercloud value" "$plan" crew --intercloud 5 --p 2 \
	--intercloud-data "$tmp/zerovalues.csv"

# Bad matrices: each names the file, line and column.
bad_matrix() {
	local desc=$1 want=$2
	cat >"$tmp/bad.csv"
	expect 2 "matrix: $desc" "$plan" crew -m "$tmp/bad.csv" --p 1
	error_has "$want"
}
printf 'r,a,b,c\na,,1,1\nb,1,,1\n' | bad_matrix "fewer rows" "not square"
printf 'r,a,b\na,,1\nb,1,\nc,1,1\n' | bad_matrix "more rows" "not square"
printf 'r,a,b\na,,1,1\nb,1,\n' | bad_matrix "long row" "not square"
printf 'r,a,b\na,,1\nb,1\n' | bad_matrix "short row" "not square"
printf 'r,a,b\na,,fast\nb,1,\n' | bad_matrix "non-numeric cell" "bad.csv:2:3: bandwidth 'a' -> 'b' must be a number > 0"
printf 'r,a,b\na,,1\nb,0,\n' | bad_matrix "zero bandwidth" "bad.csv:3:2"
printf 'r,a,b\na,,-2\nb,1,\n' | bad_matrix "negative bandwidth" "must be a number > 0"
printf 'r,a,b\na,,\nb,1,\n' | bad_matrix "missing bandwidth" "missing bandwidth 'a' -> 'b'"
printf 'r,a,b\nb,,1\na,1,\n' | bad_matrix "rows out of order" "expected the row of 'a'"
printf 'r,a,b\na,3,1\nb,1,\n' | bad_matrix "diagonal" "the diagonal must be empty or 0"
printf 'r,a,a\na,,1\na,1,\n' | bad_matrix "duplicate id" "duplicate site id"
: | bad_matrix "empty file" "not square"

# Good runs.
expect 0 "plan from a topology" "$plan" crew -t $ex/aws-10region.json \
	--group oregon,tokyo,london -o "$tmp/aws.plan.json"
grep -q "^  crew  *10 " "$tmp/out" && ok "summary on stdout with --output" ||
	not_ok "summary on stdout with --output"
expect 0 "check the plan" "$plan" crew -t $ex/aws-10region.json --check "$tmp/aws.plan.json"
grep -q "valid partial_reduce section: scheme crew, 3 members, 10 aggregators" "$tmp/out" &&
	ok "check reports the section" || not_ok "check reports the section"
python3 - "$tmp/aws.plan.json" <<'PY' && ok "plan fields" || not_ok "plan fields"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "georeduce-plan/1" and d["algorithm"] == "crew" and d["trees"] == []
s = d["partial_reduce"]
assert s["scheme"] == "crew" and s["model_bytes"] == 180000000
assert s["group"] == ["oregon", "tokyo", "london"]
assert sum(a["bytes"] for a in s["aggregators"]) == s["model_bytes"]
off = 0
for a in s["aggregators"]:
    assert a["offset"] == off and a["backup"] != a["site"]
    off += a["bytes"]
assert len(s["relays"]) == 10 * 3 - 3
p = s["predicted"]
assert abs(p["operation_seconds"] - p["scatter_seconds"] - p["aggregate_seconds"] - p["broadcast_seconds"]) < 1e-9
assert abs(d["predicted"]["allreduce_seconds"] - p["operation_seconds"]) < 1e-9
PY
expect 0 "plan to stdout" "$plan" crew -t $ex/aws-10region.json --p 4 --seed 3
grep -q '"partial_reduce"' "$tmp/out" && ok "stdout holds the plan" || not_ok "stdout holds the plan"
grep -q "partial-reduce" "$tmp/err" && ok "summary on stderr" || not_ok "summary on stderr"

# Damaged plans are rejected by --check with the field named.
sed 's/"site": "tokyo"/"site": "atlantis"/' "$tmp/aws.plan.json" >"$tmp/bad1.json"
expect 2 "check: unknown site" "$plan" crew -t $ex/aws-10region.json --check "$tmp/bad1.json"
error_has "unknown site id 'atlantis'"
sed 's/"model_bytes": 180000000/"model_bytes": 180000001/' "$tmp/aws.plan.json" >"$tmp/bad2.json"
expect 2 "check: shares do not sum" "$plan" crew -t $ex/aws-10region.json --check "$tmp/bad2.json"
error_has "shares sum to 180000000 bytes, model_bytes is 180000001"
expect 2 "check: a tree plan" "$plan" crew -t $ex/aws-10region.json --check /dev/null
expect 2 "check: plan for another network" "$plan" crew -t $ex/b4.json --check "$tmp/aws.plan.json"

expect 0 "baseline plan" "$plan" crew -m "$tmp/m.csv" --group a,c --scheme partial-reduce \
	-o "$tmp/pr.json" -q
expect 0 "baseline plan checks" "$plan" crew -m "$tmp/m.csv" --check "$tmp/pr.json"
expect 0 "all-to-all plan" "$plan" crew -m "$tmp/m.csv" --p 2 --scheme all-to-all \
	-o "$tmp/a2a.json" -q
expect 0 "all-to-all plan checks" "$plan" crew -m "$tmp/m.csv" --check "$tmp/a2a.json"
expect 0 "one member" "$plan" crew -m "$tmp/m.csv" --group b -o "$tmp/one.json" -q
expect 0 "matrix --json" "$plan" crew -m "$tmp/m.csv" --group a,b,c --json
python3 - "$tmp/out" <<'PY' && ok "json summary" || not_ok "json summary"
import json, sys
d = json.load(open(sys.argv[1]))
r = {s["scheme"]: s for s in d["schemes"]}
assert d["sites"] == 4 and d["members"] == 3
assert r["crew"]["aggregators"] == 4 and r["partial-reduce"]["aggregators"] == 3
assert r["crew"]["operation_seconds"] <= r["partial-reduce"]["operation_seconds"] + 1e-12
PY
expect 0 "write the matrix as a topology" "$plan" crew -m "$tmp/m.csv" --p 2 -q \
	--write-topology "$tmp/m.json" -o "$tmp/x.json"
expect 0 "the written topology is valid" "$plan" validate -t "$tmp/m.json"
expect 0 "the same plan from the topology" "$plan" crew -t "$tmp/m.json" --p 2 -q -o "$tmp/y.json"
cmp -s <(grep -v '"topology"' "$tmp/x.json") <(grep -v '"topology"' "$tmp/y.json") &&
	ok "matrix and topology agree" || not_ok "matrix and topology agree"
# A topology without every pair: sites that miss a member get no share.
expect 1 "sparse topology, no common neighbour" "$plan" crew -t $ex/b4.json --p 3 --seed 2 \
	-o "$tmp/b4.json" -q
expect 0 "sparse topology" "$plan" crew -t $ex/b4.json --group 2,3 -o "$tmp/b4.json" -q
expect 0 "sparse plan checks" "$plan" crew -t $ex/b4.json --check "$tmp/b4.json"

expect 0 "intercloud plan" "$plan" crew --intercloud 60 --p 4 "${ic[@]}" -o "$tmp/ic.json"
grep -qE "^  partial-reduce +4 " "$tmp/out" && ok "baseline uses the members" ||
	not_ok "baseline uses the members"
expect 0 "intercloud deterministic" "$plan" crew --intercloud 60 --p 4 "${ic[@]}" -o "$tmp/ic2.json"
cmp -s "$tmp/ic.json" "$tmp/ic2.json" && ok "same seed, same plan" || not_ok "same seed, same plan"
if [ -f ../shared/data/crew-intercloud/bandwidth_mbps.csv ]; then
	expect 0 "intercloud default data" "$plan" crew --intercloud 20 --p 4 -q -o "$tmp/d.json"
fi

# Training progress.
expect 0 "simulation" "$plan" crew --intercloud 30 --p 4 "${ic[@]}" --progress-seconds 20 \
	--timeline
for s in crew partial-reduce all-to-all; do
	grep -qE "^  $s +[1-9][0-9]* " "$tmp/out" && ok "rounds for $s" || not_ok "rounds for $s"
done
[ "$(grep -cE '^ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+$' "$tmp/out")" -eq 20 ] && ok "timeline rows" ||
	not_ok "timeline rows"
expect 0 "simulation with 20 failed links" "$plan" crew --intercloud 30 --p 4 "${ic[@]}" \
	--progress-seconds 60 --failed-links 20 --json --timeline
python3 - "$tmp/out" <<'PY' && ok "progress with failures" || not_ok "progress with failures"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["failed_links"] == 20
for s in d["schemes"]:
    tl = s["timeline"]
    assert len(tl) == 60 and all(a <= b for a, b in zip(tl, tl[1:])), s
    assert s["rounds"] > 0 and tl[-1] > tl[29], s  # never stalls
PY

echo "# $((n - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
