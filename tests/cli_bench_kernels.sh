#!/usr/bin/env bash
# georeduce-bench-kernels: out-of-range values exit 2 with one line naming the option, and
# a short run (no DRAM level, misaligned buffers) prints one JSON document with a row for
# every kernel variant the CPU supports, the scalar ones always among them.
# Usage: tests/cli_bench_kernels.sh PATH/TO/georeduce-bench-kernels
set -u
bench=${1:?usage: cli_bench_kernels.sh PATH/TO/georeduce-bench-kernels}
cd "$(dirname "$0")/.."
# shellcheck source=tests/clilib.sh
. tests/clilib.sh

expect 0 "--help" "$bench" --help
expect 2 "samples below 3" "$bench" --samples 2
grep -q -- "--samples" "$tmp/err" && ok "names --samples" || not_ok "names --samples"
expect 2 "offset above 63" "$bench" --offset 64
expect 2 "offset not a number" "$bench" --offset x
grep -q -- "--offset" "$tmp/err" && ok "names --offset" || not_ok "names --offset"
expect 0 "short run" "$bench" --json --samples 3 --no-dram --offset 5
if python3 - "$tmp/out" 2>"$tmp/err" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["offset"] == 5 and d["samples"] == 3, d
rows = d["results"]
assert {r["level"] for r in rows} == {"L1", "L2"}, "levels"
assert any(r["variant"] == "scalar" and r["kernel"] == "sum_f32" for r in rows), "no scalar"
assert all(r["gbps_best"] >= r["gbps_median"] > 0 for r in rows), "best below median"
PY
then
	ok "JSON with the scalar kernels at L1 and L2, offset 5"
else
	not_ok "JSON output: $(tail -c 300 "$tmp/err")"
fi

echo "1..$n"
[ "$fails" -eq 0 ]
