#!/usr/bin/env bash
# scripts/allreduce-sweep (docs/BENCH.md, "AllReduce size sweep"): bad options exit 2
# naming the option; a sweep from 1 KiB to 64 KiB through a two-site emulated WAN prints
# the nccl-tests columns, one row per power of two, every result verified (#wrong 0), and
# its JSON has the same sizes with busbw = algbw x 2(n-1)/n. Root and network namespaces
# (skipped otherwise).
# Usage: tests/allreduce_sweep.sh BUILD
set -u
build=${1:?usage: allreduce_sweep.sh BUILD}
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=tests/clilib.sh
. tests/clilib.sh
sweep=scripts/allreduce-sweep

expect 0 "--help" "$sweep" --help
grep -q -- "--factor" "$tmp/out" && ok "--help lists --factor" || not_ok "--help"
for a in "--min 3" "--max 512" "--factor 1" "--rounds 0" "--algorithm gloo" \
	"--dtype fp64" "--topology $tmp/none.json" "--bogus" "--json="; do
	# shellcheck disable=SC2086
	expect 2 "refused: $a" "$sweep" $a
	o=${a%% *}
	grep -q -- "${o%%=*}" "$tmp/err" && ok "names ${o%%=*}" || not_ok "$a: $(cat "$tmp/err")"
done

if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
	echo "# allreduce_sweep: needs root and network namespaces; the sweep skipped"
	echo "# $((n - fails)) passed, $fails failed"
	[ "$fails" -eq 0 ] || exit 1
	exit 77
fi
cat >"$tmp/topo.json" <<'JSON'
{"format": "georeduce-topology/1", "name": "sweep-2",
 "nodes": [{"id": "a", "workers": 1}, {"id": "b", "workers": 1}],
 "links": [{"a": "a", "b": "b", "gbps": 1, "latency_ms": 2}]}
JSON
"$sweep" --min 1KiB --max 64KiB --rounds 2 --warmup 1 --topology "$tmp/topo.json" \
	--scale 1 --workers 2 --build "$build" --json="$tmp/s.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] && ok "the sweep exits 0" || not_ok "the sweep exits $rc: $(tail -c 600 "$tmp/err")"
python3 - "$tmp/out" "$tmp/s.json" <<'PY' && ok "nccl-tests columns, every size verified" || not_ok "the sweep's table: $(cat "$tmp/out")"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
head = [l.split() for l in lines if l.startswith("#")]
assert ["#", "size", "count", "type", "redop", "time", "algbw", "busbw", "#wrong"] in head, head
rows = [l.split() for l in lines if not l.startswith("#")]
sizes = [1024 << k for k in range(7)]
assert [int(r[0]) for r in rows] == sizes, rows
for r in rows:
    assert len(r) == 8, r
    assert int(r[1]) == int(r[0]) // 4 and r[2] == "fp32" and r[3] == "sum", r
    t, alg, bus = float(r[4]), float(r[5]), float(r[6])
    assert t > 0 and abs(alg - int(r[0]) / t / 1e3) <= 1e-4 + 1e-3 * alg, r
    assert int(r[7]) == 0, r
assert lines[-1] == "# every result verified", lines[-1]
d = json.load(open(sys.argv[2]))
assert d["workers"] == 4 and d["verified"] and d["busbw_factor"] == 1.5, d
assert [s["size"] for s in d["sizes"]] == sizes, d["sizes"]
for s in d["sizes"]:
    assert s["verified"] and s["wrong"] == 0 and s["rounds"] == 2, s
    assert abs(s["busbw_gbps"] - s["algbw_gbps"] * 1.5) <= 1e-9 * s["busbw_gbps"], s
PY
echo "# $((n - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
