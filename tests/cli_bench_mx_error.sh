#!/usr/bin/env bash
# georeduce-bench-mx-error: bad options and plans exit 2 with one line naming what is
# wrong; on a plan of the 4-site AWS WAN the gateways' fp32 sums err less than the endpoint
# ring with four workers a site, every error is small and positive, and the run is
# deterministic.
# Usage: tests/cli_bench_mx_error.sh PATH/TO/georeduce-bench-mx-error PATH/TO/georeduce-plan
set -u
bench=${1:?usage: cli_bench_mx_error.sh BENCH PLAN}
plan=${2:?usage: cli_bench_mx_error.sh BENCH PLAN}
cd "$(dirname "$0")/.."
# shellcheck source=tests/clilib.sh
. tests/clilib.sh

expect 0 "--help" "$bench" --help
expect 2 "no --plan" "$bench"
grep -q -- "--plan" "$tmp/err" && ok "names --plan" || not_ok "names --plan"
expect 2 "a missing plan file" "$bench" --plan "$tmp/none.json"
echo '{"trees": [{"root": "a", "parent": {"a": null, "b": "c"}, "share": 1}]}' >"$tmp/bad.json"
expect 2 "a parent that is no site" "$bench" --plan "$tmp/bad.json"
expect 2 "elements not whole blocks" "$bench" --plan "$tmp/bad.json" --elements 100
grep -q -- "--elements" "$tmp/err" && ok "names --elements" || not_ok "names --elements"
expect 2 "workers 0" "$bench" --plan "$tmp/bad.json" --workers 0

"$plan" mtree --topology examples/topologies/aws-4region.json --bytes 64MiB \
	--out "$tmp/plan.json" >/dev/null 2>&1 || not_ok "georeduce-plan mtree"
expect 0 "a run on the 4-site mTree plan" "$bench" --plan "$tmp/plan.json" --workers 4 \
	--elements 65536 --json
cp "$tmp/out" "$tmp/first.json"
if python3 - "$tmp/out" 2>"$tmp/err" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["sites"] == 4 and d["workers"] == 16 and d["trees"] >= 1, d
assert 0 < d["fp32_rel_l2"] < 1e-6, d
f = {x["dtype"]: x for x in d["formats"]}
assert set(f) == {"mxint8", "mxfp8", "mxfp4"}, f
for x in f.values():
    assert 0 < x["georeduce_rel_l2"] < 0.5 and x["ring_over_georeduce"] > 1, x
assert f["mxint8"]["georeduce_rel_l2"] < f["mxfp8"]["georeduce_rel_l2"] < \
    f["mxfp4"]["georeduce_rel_l2"], f
PY
then
	ok "errors small, ordered by the element width, below the endpoint ring's"
else
	not_ok "JSON: $(tail -c 300 "$tmp/err")"
fi
"$bench" --plan "$tmp/plan.json" --workers 4 --elements 65536 --json >"$tmp/second.json"
cmp -s "$tmp/first.json" "$tmp/second.json" && ok "the same figures twice" ||
	not_ok "two runs differ"

echo "1..$n"
[ "$fails" -eq 0 ]
