#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The metrics endpoints (--metrics, docs/METRICS.md) of real processes: three
# georeduce-dataplane on net_null ports and georeduce-control running the 3-site example
# deployment. `promtool check metrics` (Debian package prometheus) accepts both outputs;
# a gateway's exported values are its dpctl stats'; another path gets 404, another method
# 405, an oversized request no 200; bad --metrics values and an address in use are refused
# with a clear error; every metric the Grafana dashboard in examples/ queries is one the
# programs export.
#
#   metrics_e2e.sh CONTROL DATAPLANE DPCTL
set -u
CONTROL=$1
DP=$2
DPCTL=$3
source "$(dirname "$0")/clilib.sh"
P=grmx$$
EXAMPLE=examples/deployments/3site.json
DASH=examples/grafana/georeduce-dashboard.json
pids=()
daemon=

cleanup() {
	for p in "${pids[@]}" $daemon; do kill -TERM "$p" 2>/dev/null; done
	sleep 0.3
	for p in "${pids[@]}" $daemon; do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if ! command -v promtool >/dev/null; then
	echo "metrics_e2e: no promtool (Debian package prometheus); skipped"
	exit 77
fi
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
PD=$(free_port)
PC=$(free_port)
while [ "$PC" = "$PD" ]; do PC=$(free_port); done
EAL=(--no-huge -m 256 --no-pci --no-shconf -l 0-1 --vdev=net_null0 --log-level=lib.eal:error)

# ---- bad --metrics values: refused before anything starts -------------------------------
jq --arg d "$tmp" '.gateways[].socket |= ($d + "/" + (split("/") | last))' "$EXAMPLE" \
	>"$tmp/deploy.json"
for bad in nonsense 127.0.0.1 127.0.0.1:0 127.0.0.1:65536 localhost:9464 300.0.0.1:80 \
	'[::1:80' ''; do
	expect 2 "control: --metrics '$bad' refused" "$CONTROL" run "$tmp/deploy.json" \
		--socket "$tmp/bad.sock" --metrics "$bad"
	grep -q -- "--metrics: expected ADDR:PORT" "$tmp/err" ||
		not_ok "control --metrics '$bad': message: $(cat "$tmp/err")"
	"$DP" "${EAL[@]}" --file-prefix="${P}bad" -- --addr 0:10.99.0.9/24 -s "$tmp/bad.sock" \
		--metrics "$bad" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ $rc -eq 2 ] && grep -q -- "--metrics: expected ADDR:PORT" "$tmp/err" &&
		ok "dataplane: --metrics '$bad' refused" ||
		not_ok "dataplane --metrics '$bad': exit $rc: $(tail -2 "$tmp/err")"
done
"$CONTROL" run --help | grep -q -- "--metrics ADDR:PORT" && ok "control --help shows --metrics" ||
	not_ok "control --help lacks --metrics"
"$DP" -- --help | grep -q -- "--metrics ADDR:PORT" && ok "dataplane --help shows --metrics" ||
	not_ok "dataplane --help lacks --metrics"

# ---- three dataplanes, a's with metrics --------------------------------------------------
start_dp() { # name n [options]
	local name=$1 i=$2
	shift 2
	"$DP" "${EAL[@]}" --file-prefix="$P$name" \
		-- --addr "0:10.99.0.$i/24" -s "$tmp/$name.sock" --idle-spin 100 "$@" \
		>"$tmp/dp-$name.log" 2>&1 &
	pids+=($!)
}
# get PATH PORT [curl options]: the HTTP status in $tmp/code, the body in $tmp/body.
get() {
	local path=$1 port=$2
	shift 2
	curl -s --max-time 10 -o "$tmp/body" -w '%{http_code}' "$@" \
		"http://127.0.0.1:$port$path" >"$tmp/code" 2>/dev/null
}
wait_http() { # port pid: /metrics answers 200 within 60 s, however busy the machine
	for _ in $(seq 300); do
		get /metrics "$1" && [ "$(cat "$tmp/code")" = 200 ] && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.2
	done
	return 1
}
start_dp a 1 --metrics "127.0.0.1:$PD"
dpa=${pids[-1]}
start_dp b 2
start_dp c 3
if wait_http "$PD" "$dpa"; then
	ok "dataplane serves /metrics"
else
	not_ok "dataplane metrics: $(tail -3 "$tmp/dp-a.log")"
	exit 1
fi
cp "$tmp/body" "$tmp/dp.prom"
grep -q '^# TYPE georeduce_dataplane_rx_bytes_total counter$' "$tmp/dp.prom" &&
	grep -q '^georeduce_dataplane_drops_total{lcore="1",reason="no_slot"} ' "$tmp/dp.prom" &&
	ok "dataplane: counters with HELP and TYPE, drops by reason and lcore" ||
	not_ok "dataplane exposition lacks its counters: $(head -5 "$tmp/dp.prom")"
if promtool check metrics <"$tmp/dp.prom" >"$tmp/lint" 2>&1; then
	ok "promtool check metrics accepts the dataplane's"
else
	not_ok "promtool on the dataplane's: $(head -5 "$tmp/lint")"
fi
# Values that do not move are the stats reply's exactly.
"$DPCTL" -s "$tmp/a.sock" --json stats >"$tmp/stats.json"
want=$(jq -r '.memory.mbufs_per_pool, .memory.mbufs_slot_budget, (.lcores | length)' \
	"$tmp/stats.json" | tr '\n' ' ')
got=$(awk '$1 == "georeduce_dataplane_mbufs_per_pool" || $1 == "georeduce_dataplane_mbufs_slot_budget" ||
	$1 == "georeduce_dataplane_lcores" { printf "%s ", $2 }' "$tmp/dp.prom")
[ "$got" = "$want" ] && ok "dataplane: pool and lcores as dpctl stats says ($got)" ||
	not_ok "dataplane metrics '$got', dpctl stats '$want'"
get /other "$PD"
[ "$(cat "$tmp/code")" = 404 ] && ok "dataplane: another path gets 404" ||
	not_ok "dataplane /other: $(cat "$tmp/code")"
get /metrics "$PD" -X POST -d x=1
[ "$(cat "$tmp/code")" = 405 ] && ok "dataplane: POST gets 405" ||
	not_ok "dataplane POST: $(cat "$tmp/code")"
get /metrics "$PD" -H "X-Big: $(head -c 40000 /dev/zero | tr '\0' a)"
code=$(cat "$tmp/code")
[ "$code" != 200 ] && ok "dataplane: a 40 kB request header is refused ($code)" ||
	not_ok "dataplane: an oversized request was answered 200"
get /metrics "$PD"
[ "$(cat "$tmp/code")" = 200 ] && ok "dataplane: still serves after the refusals" ||
	not_ok "dataplane after the refusals: $(cat "$tmp/code")"
"$DP" "${EAL[@]}" --file-prefix="${P}dup" -- --addr 0:10.99.0.8/24 -s "$tmp/dup.sock" \
	--metrics "127.0.0.1:$PD" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && grep -q "127.0.0.1:$PD: cannot listen: Address already in use" "$tmp/err" &&
	ok "dataplane: an address in use is refused with the reason" ||
	not_ok "dataplane on a port in use: exit $rc: $(tail -2 "$tmp/err")"

# ---- the control process ------------------------------------------------------------------
for s in a b c; do
	for _ in $(seq 600); do
		"$DPCTL" -s "$tmp/$s.sock" ping >/dev/null 2>&1 && break
		sleep 0.1
	done
done
"$CONTROL" run "$tmp/deploy.json" --socket "$tmp/control.sock" --heartbeat-ms 200 \
	--metrics "127.0.0.1:$PC" 2>"$tmp/control.log" &
daemon=$!
live=0
for _ in $(seq 300); do
	if get /metrics "$PC" && [ "$(cat "$tmp/code")" = 200 ] &&
		[ "$(grep -c '^georeduce_control_job_live{job="[0-9]*"} 1$' "$tmp/body")" = 3 ]; then
		live=1
		break
	fi
	kill -0 "$daemon" 2>/dev/null || break
	sleep 0.2
done
[ $live = 1 ] && ok "control: /metrics shows the three jobs live" ||
	{ not_ok "control metrics: $(tail -3 "$tmp/control.log")"; exit 1; }
cp "$tmp/body" "$tmp/control.prom"
if promtool check metrics <"$tmp/control.prom" >"$tmp/lint" 2>&1; then
	ok "promtool check metrics accepts the control process's"
else
	not_ok "promtool on the control process's: $(head -5 "$tmp/lint")"
fi
grep -q '^georeduce_control_replans_total{job="1",cause="start"} 1$' "$tmp/control.prom" &&
	grep -q '^georeduce_control_gateway_up{gateway="b",site="b"} 1$' "$tmp/control.prom" &&
	grep -q '^georeduce_control_plan_bound_ratio{job="1",epoch="[0-9]*"} ' "$tmp/control.prom" &&
	grep -q '^georeduce_control_link_planned_bytes_per_second{link="a-b",from="a",to="b"} ' \
		"$tmp/control.prom" &&
	ok "control: re-plans by cause, gateways, the bound's fraction, per-link rates" ||
	not_ok "control exposition lacks its metrics: $(grep -v '^#' "$tmp/control.prom" | head -5)"
get /status "$PC"
[ "$(cat "$tmp/code")" = 404 ] && ok "control: another path gets 404" ||
	not_ok "control /status: $(cat "$tmp/code")"
get /metrics "$PC" -X DELETE
[ "$(cat "$tmp/code")" = 405 ] && ok "control: DELETE gets 405" ||
	not_ok "control DELETE: $(cat "$tmp/code")"
# A re-plan asked for shows under its cause.
"$CONTROL" replan --socket "$tmp/control.sock" 1 >/dev/null 2>&1
ok_replan=0
for _ in $(seq 300); do
	get /metrics "$PC" && grep -q '^georeduce_control_replans_total{job="1",cause="requested"} 1$' \
		"$tmp/body" && { ok_replan=1; break; }
	sleep 0.2
done
[ $ok_replan = 1 ] && ok "control: a requested re-plan is counted under its cause" ||
	not_ok "control: no requested re-plan in the metrics"
"$CONTROL" run "$tmp/deploy.json" --socket "$tmp/control2.sock" --metrics "127.0.0.1:$PC" \
	>"$tmp/out" 2>"$tmp/err" &
p2=$!
for _ in $(seq 600); do kill -0 $p2 2>/dev/null || break; sleep 0.1; done
kill -TERM $p2 2>/dev/null
wait $p2
rc=$?
[ $rc -eq 1 ] && grep -q "cannot listen: Address already in use" "$tmp/err" &&
	ok "control: an address in use is refused with the reason" ||
	not_ok "control on a port in use: exit $rc: $(tail -2 "$tmp/err")"

# ---- the dashboard queries only what the programs export ---------------------------------
if python3 - "$DASH" "$tmp/dp.prom" "$tmp/control.prom" >"$tmp/dash" 2>&1 <<'PY'; then
import json, re, sys
dash = json.load(open(sys.argv[1]))
have = set()
for f in sys.argv[2:]:
    for line in open(f):
        if line.startswith("# TYPE "):
            have.add(line.split()[2])
used = set()
for p in dash["panels"]:
    for t in p.get("targets", []):
        used |= set(re.findall(r"\bgeoreduce_[a-z0-9_]+", t["expr"]))
missing = sorted(used - have)
if not used or missing:
    print("queried but not exported:", missing or "nothing queried")
    sys.exit(1)
print(len(used), "metrics queried")
PY
	ok "dashboard: valid JSON, $(cat "$tmp/dash"), every one exported"
else
	not_ok "dashboard: $(cat "$tmp/dash")"
fi

echo "metrics_e2e: $fails of $n failed"
[ "$fails" -eq 0 ]
