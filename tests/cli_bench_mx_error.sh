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
expect 2 "a LAN dtype that is none" "$bench" --plan "$tmp/bad.json" --lan fp16
grep -q -- "--lan" "$tmp/err" && ok "names --lan" || not_ok "names --lan"

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
# The LAN hop in fp32 or bf16: no worse than encoding at the workers, and better than the
# endpoint ring with one worker a site.
for lan in fp32 bf16; do
	expect 0 "--lan $lan" "$bench" --plan "$tmp/plan.json" --workers 1 --elements 65536 \
		--lan $lan --json
	cp "$tmp/out" "$tmp/$lan.json"
done
"$bench" --plan "$tmp/plan.json" --workers 1 --elements 65536 --json >"$tmp/mx.json"
if python3 - "$tmp/mx.json" "$tmp/fp32.json" "$tmp/bf16.json" 2>"$tmp/err" <<'PY'
import json, sys
mx, *wide = [json.load(open(a)) for a in sys.argv[1:]]
assert mx["lan"] == "mx" and [w["lan"] for w in wide] == ["fp32", "bf16"], (mx, wide)
for w in wide:
    for a, b in zip(mx["formats"], w["formats"]):
        assert a["dtype"] == b["dtype"], (a, b)
        assert b["georeduce_rel_l2"] < a["georeduce_rel_l2"], (a, b)
        assert b["ring_rel_l2"] == a["ring_rel_l2"] and b["ring_over_georeduce"] > 1, (a, b)
PY
then
	ok "a wider LAN hop errs less than encoding at the workers"
else
	not_ok "LAN JSON: $(tail -c 300 "$tmp/err")"
fi

echo "1..$n"
[ "$fails" -eq 0 ]
