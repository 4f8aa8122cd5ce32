#!/usr/bin/env bash
# georeduce-plan end to end: every subcommand on real topologies, plans checked by the
# validator, and the exit status and one-line error of every class of bad input.
# Usage: tests/cli.sh PATH/TO/georeduce-plan
set -u
plan=${1:?usage: cli.sh PATH/TO/georeduce-plan}
cd "$(dirname "$0")/.."
ex=examples/topologies
. tests/clilib.sh

expect 0 "--help" "$plan" --help
for c in mtree compare simulate validate; do
	expect 0 "$c --help" "$plan" "$c" --help
done
expect 2 "no command" "$plan"
expect 2 "unknown command" "$plan" frobnicate
expect 2 "missing --topology" "$plan" mtree
expect 2 "missing file" "$plan" mtree -t "$tmp/nope.json"
expect 2 "unknown option" "$plan" mtree -t $ex/b4.json --frob
expect 2 "bad --max-trees" "$plan" mtree -t $ex/b4.json -k -1
expect 2 "bad --max-trees text" "$plan" mtree -t $ex/b4.json -k ten
expect 2 "bad --max-height-ms" "$plan" mtree -t $ex/b4.json -H nan
expect 2 "bad --bytes" "$plan" mtree -t $ex/b4.json -b 12XB
expect 2 "bad --rho" "$plan" mtree -t $ex/b4.json --rho 1.5
expect 2 "bad --window" "$plan" mtree -t $ex/b4.json -w 2
expect 2 "zero --bytes" "$plan" compare -t $ex/b4.json -b 0
expect 2 "negative --min-rate-gbps" "$plan" mtree -t $ex/b4.json -r -1
expect 2 "simulate without --plan" "$plan" simulate -t $ex/b4.json
expect 2 "stray argument" "$plan" compare -t $ex/b4.json extra
printf '{"format": "georeduce-topology/1", "nodes": [' >"$tmp/trunc.json"
expect 2 "truncated JSON" "$plan" mtree -t "$tmp/trunc.json"
grep -q "trunc.json:1:" "$tmp/err" && ok "error names file:line" || not_ok "error names file:line"
cat >"$tmp/dup.json" <<'J'
{"format": "georeduce-topology/1", "nodes": [{"id": "a"}, {"id": "b"}],
 "links": [{"a": "a", "b": "b", "gbps": 1}, {"a": "b", "b": "a", "gbps": 2}]}
J
expect 2 "duplicate link" "$plan" validate -t "$tmp/dup.json"
grep -q "links\[1\]" "$tmp/err" && ok "error names the field" || not_ok "error names the field"
printf '{"format": "georeduce-topology/1", "name": "one", "nodes": [{"id": "a"}], "links": []}' \
	>"$tmp/one.json"
expect 0 "one site: mtree" "$plan" mtree -t "$tmp/one.json" -o "$tmp/one.plan.json" -q
expect 0 "one site: plan valid" "$plan" validate -t "$tmp/one.json" -p "$tmp/one.plan.json"
expect 0 "one site: compare" "$plan" compare -t "$tmp/one.json"
expect 1 "height limit below any tree" "$plan" mtree -t $ex/aws-10region.json -H 1 -o "$tmp/x.json"

# Plans on every example are valid by the spec's rules, also under a height limit.
for f in $ex/*.json; do
	b=$(basename "$f" .json)
	expect 0 "mtree $b" "$plan" mtree -t "$f" -o "$tmp/$b.plan.json" -q
	expect 0 "validate $b plan" "$plan" validate -t "$f" -p "$tmp/$b.plan.json"
done
expect 0 "mtree with height limit" "$plan" mtree -t $ex/aws-10region.json -H 150 -k 4 \
	-o "$tmp/h.json" -q
expect 0 "height-limited plan within 150 ms" "$plan" validate -t $ex/aws-10region.json \
	-p "$tmp/h.json" -H 150
expect 0 "mtree --paper" "$plan" mtree -t $ex/b4.json --paper -o "$tmp/p.json" -q
expect 0 "mtree with ITH" "$plan" mtree -t $ex/aws-10region.json --rho 0.95 -o "$tmp/i.json" -q
expect 0 "plan to stdout" "$plan" mtree -t $ex/aws-4region.json
grep -q '"georeduce-plan/1"' "$tmp/out" && ok "stdout holds the plan" || not_ok "stdout holds the plan"

# A plan for another topology names a node this one does not have.
expect 2 "plan for another topology" "$plan" simulate -t $ex/b4.json -p "$tmp/aws-4region.plan.json"
grep -q "unknown node id" "$tmp/err" && ok "error names the unknown node" ||
	not_ok "error names the unknown node"

# A plan that breaks a rule is rejected by validate.
sed 's/"share": [0-9.e-]*/"share": 0.5/' "$tmp/aws-4region.plan.json" >"$tmp/bad-share.json"
expect 2 "validate rejects wrong shares" "$plan" validate -t $ex/aws-4region.json \
	-p "$tmp/bad-share.json"

expect 0 "compare" "$plan" compare -t $ex/aws-10region.json -b 256MiB
for a in packing-bound mtree mtree-unlimited mtree-paper single-tree ring ps \
	crew-all-to-all blueconnect; do
	grep -q "^$a " "$tmp/out" && ok "compare row $a" || not_ok "compare row $a"
done
expect 0 "compare --json" "$plan" compare -t $ex/b4.json --json
# B4 is no full mesh: no CREW all-to-all row there, but a BlueConnect one.
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); a=[r["algorithm"] for r in d["rows"]]
assert len(a) >= 6 and "blueconnect" in a and "crew-all-to-all" not in a' \
	"$tmp/out" && ok "compare --json parses, rows where they apply" ||
	not_ok "compare --json parses, rows where they apply"
expect 0 "simulate" "$plan" simulate -t $ex/aws-10region.json -p "$tmp/aws-10region.plan.json"
expect 0 "simulate sweep" "$plan" simulate -t $ex/aws-10region.json \
	-p "$tmp/aws-10region.plan.json" -w 1 --sweep-chunks -b 64MiB
[ "$(grep -cE '^ +[0-9]+ +[0-9]+ +[0-9.]+$' "$tmp/out")" -ge 10 ] && ok "sweep rows" ||
	not_ok "sweep rows"

# validate: plans without trees are checked by their section's parser.
expect 0 "crew plan" "$plan" crew -t $ex/aws-10region.json --p 4 --seed 1 -q -o "$tmp/crew.json"
expect 0 "validate a crew plan" "$plan" validate -t $ex/aws-10region.json -p "$tmp/crew.json"
grep -q "partial_reduce" "$tmp/out" && ok "validate names the section" ||
	not_ok "validate names the section"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
d["partial_reduce"]["nosuchfield"] = 1; json.dump(d, open(sys.argv[2], "w"))' \
	"$tmp/crew.json" "$tmp/crew-bad.json"
expect 2 "validate rejects a bad partial_reduce" "$plan" validate -t $ex/aws-10region.json \
	-p "$tmp/crew-bad.json"
expect 0 "selmcast plan" "$plan" selmcast -t $ex/aws-10region.json -p 3 -q -o "$tmp/sel.json"
expect 0 "validate a selmcast plan" "$plan" validate -t $ex/aws-10region.json -p "$tmp/sel.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d.pop("multicast")
json.dump(d, open(sys.argv[2], "w"))' "$tmp/sel.json" "$tmp/none.json"
expect 2 "validate: no trees, no section" "$plan" validate -t $ex/aws-10region.json \
	-p "$tmp/none.json"

echo "# $((n - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
