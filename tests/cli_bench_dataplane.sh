#!/usr/bin/env bash
# georeduce-bench-dataplane: bad values exit 2 with one line naming the option; a short
# run over every dtype, an odd fan-in, worker order and UDP checksums exits 0 with one
# JSON row per point. The program checks every RESULT copy it measures (addresses,
# header fields, exact sums) and the lcore's counters, and exits 1 if any check fails,
# so a broken fast path fails this test.
# Usage: tests/cli_bench_dataplane.sh PATH/TO/georeduce-bench-dataplane
set -u
bench=${1:?usage: cli_bench_dataplane.sh PATH/TO/georeduce-bench-dataplane}
cd "$(dirname "$0")/.."
# shellcheck source=tests/clilib.sh
. tests/clilib.sh

eal=(--no-huge -m 512 --no-pci --no-shconf --file-prefix="bdp$$" -l 0 --log-level=error)
expect 0 "--help" "$bench" "${eal[@]}" -- --help
expect 2 "fan-in 0" "$bench" "${eal[@]}" -- --fanin 0
grep -q -- "--fanin" "$tmp/err" && ok "names --fanin" || not_ok "names --fanin"
expect 2 "payload not a multiple of 64" "$bench" "${eal[@]}" -- --payload 100
grep -q -- "--payload" "$tmp/err" && ok "names --payload" || not_ok "names --payload"
expect 2 "unknown dtype" "$bench" "${eal[@]}" -- --dtype fp64
expect 0 "short run, chunk order" "$bench" "${eal[@]}" -- --payload 256,1024 --fanin 1,3 \
	--dtype fp32,fp16,bf16 --seconds 0.03 --repeat 1 --window 16 --json
cp "$tmp/out" "$tmp/chunk.json"
expect 0 "short run, worker order, UDP checksums" "$bench" "${eal[@]}" -- --payload 4096 \
	--fanin 5 --order worker --udp-csum --seconds 0.03 --repeat 1 --window 24 --json
if python3 - "$tmp/chunk.json" "$tmp/out" 2>"$tmp/err" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
pts = a["points"]
assert len(pts) == 12, len(pts)
assert {(p["payload"], p["fanin"], p["dtype"]) for p in pts} == {
    (p, f, d) for p in (256, 1024) for f in (1, 3) for d in ("fp32", "fp16", "bf16")}
assert b["order"] == "worker" and b["udp_checksum"] is True and len(b["points"]) == 1
for p in pts + b["points"]:
    assert p["mpps_in"] > 0 and abs(p["mpps_out"] - p["mpps_in"]) < 1e-6 * p["mpps_in"] + 1e-3, p
    assert p["ring_io_mpps"] > 0 and p["null_io_mpps"] > 0 and p["io_sum_ns_per_pkt"] > 0, p
PY
then
	ok "JSON: one row per point, packets in equal packets out"
else
	not_ok "JSON output: $(tail -c 300 "$tmp/err")"
fi

echo "1..$n"
[ "$fails" -eq 0 ]
