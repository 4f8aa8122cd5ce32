#!/usr/bin/env bash
# georeduce-bench in port mode against a dataplane in another process over net_memif
# (docs/BENCH.md, "Between two processes over net_memif"), on the table
# georeduce-bench-table writes: every payload verified, nothing lost, and with
# --gw-socket the gateway's drops read over its control socket before and after the run;
# against a dataplane that corrupts RESULTs (--fault corrupt), the run fails with exit 3.
# Exit 77 (skip) if EAL or net_memif cannot start here.
# Usage: tests/bench_port.sh BENCH DATAPLANE DPCTL
set -u
bench=${1:?usage: bench_port.sh BENCH DATAPLANE DPCTL}
dp=${2:?}
dpctl=${3:?}
cd "$(dirname "$0")/.."
# shellcheck source=tests/clilib.sh
. tests/clilib.sh
prefix=gbp$$
# shellcheck source=tests/benchlib.sh
. tests/benchlib.sh

expect 2 "--gw-socket in ring mode" "$bench" -- --gw-socket /tmp/x.sock
grep -q -- "--gw-socket" "$tmp/err" && ok "names --gw-socket" || not_ok "names --gw-socket"
python3 bench/georeduce-bench-table --payload 512 --fanin 3 --window 64 -o "$tmp/gw.json" || exit 1
# dp_start [DATAPLANE OPTIONS...]: the dataplane on the memif server side, with the job
# installed; 1 if it did not come up.
dp_start() {
	memif_dp "$@" && "$dpctl" -s "$tmp/ctl.sock" install "$tmp/gw.json" >/dev/null 2>&1
}
if ! dp_start; then
	echo "# skip: the dataplane did not start on net_memif: $(tail -c 300 "$tmp/dp.log")"
	exit 77
fi
memif_run "$tmp/gw.json" --verify-every 1
rc=$?
[ "$rc" -eq 0 ] && ok "port run exits 0" || not_ok "port run exits $rc: $(tail -c 300 "$tmp/err")"
python3 - "$tmp/out" <<'PY' && ok "port run verified, the gateway's drops read" || not_ok "port report"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["mode"] == "port" and d["payload"] == 512 and d["workers"] == 3, d
p = d["phases"][0]
assert p["verify"]["failures"] == 0 and p["verify"]["payloads_checked"] > 0, p
assert p["losses"]["lost_chunks"] == 0 and p["received"]["mpps"] > 0, p
assert p["gateway_drops_from"] == "gw-socket" and isinstance(p["gateway_drops"], dict), p
assert p["port_stats"]["after"]["ipackets"] > p["port_stats"]["before"]["ipackets"], p
PY

# The same against a dataplane that corrupts one RESULT frame in 100 (--fault 0,tx,corrupt):
# 100 rounds of 64 chunks x 3 workers, 192 corrupted RESULTs expected; every one is caught,
# and the run exits 3 naming the wrong sums.
kill -INT "$dp_pid" 2>/dev/null
wait "$dp_pid"
dp_start --fault 0,tx,corrupt=0.01 --fault-seed 7 ||
	not_ok "the corrupting dataplane: $(tail -c 300 "$tmp/dp.log")"
"$bench" "${eal[@]}" --file-prefix="$prefix" -l 0 \
	--vdev="net_memif0,role=client,socket=$tmp/m.sock" -- --mode port --table "$tmp/gw.json" \
	--gw-socket "$tmp/ctl.sock" --rounds 100 --rto-ms 1000 --quiet --json >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 3 ] && ok "corrupting gateway: exit 3" || not_ok "corrupting gateway: exit $rc: $(tail -c 300 "$tmp/err")"
grep -q "wrong sum: chunk .* expected .* received" "$tmp/err" && ok "the wrong sums named" ||
	not_ok "stderr: $(head -c 400 "$tmp/err")"
python3 - "$tmp/out" <<'PY' && ok "corrupting gateway: wrong_results counted" || not_ok "corrupting gateway's report"
import json, sys
p = json.load(open(sys.argv[1]))["phases"][0]
assert p["verify"]["payloads_checked"] >= 100 * 64 * 3 and p["wrong_results"] > 0, p["verify"]
assert len(p["verify"]["wrong"]) == min(4, p["wrong_results"]), p["verify"]
assert p["losses"]["lost_chunks"] == 0, p["losses"]
PY

echo "# $((n - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
