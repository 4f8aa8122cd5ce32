#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# A partial reduce's grace window on the emulated WAN (scripts/lib/testbed.py): three sites
# a, b and c with one worker each and a CREW job that completes a chunk at 1 worker
# contribution (min_workers) plus a grace window of 300 ms. Worker a (1000) is on time;
# worker b (1100) is 5 ms late: its gateway delays its results by 5 ms (a delay line on
# the LAN port), so it starts every round 5 ms after a; worker c (1200) is 2 s late: it
# starts 2 s after the others and its results come 2 s late. Without the window every
# chunk would complete with whichever contribution came first, mostly a's alone. Checked:
# a's and b's rounds complete, every result exact; in all or nearly all of them every
# chunk holds a and b (the worker prints the fewest contributors of a chunk of the round),
# in none of them c; c's contributions are late at the roots and no chunk anywhere was made
# by all three (the gateways' quorum counts, docs/METRICS.md). Timings are not asserted:
# the window is 60 times the 5 ms, and c is 7 windows late. Then the adaptive window
# ("grace_ms": "auto", at most 300 ms): a new epoch, c never in, b in most rounds, and the
# window in force below its bound.
#
#   quorum_e2e.sh BUILD_DIR
set -u
BUILD=$(cd "$1" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
fails=0

if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
	echo "quorum_e2e: needs root and network namespaces; skipped"
	exit 77
fi
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; fails=$((fails + 1)); }

GEOREDUCE_ROOT=$ROOT
# shellcheck source=../scripts/lib/wan.sh
. "$ROOT/scripts/lib/wan.sh"
D=$(mktemp -d /tmp/georeduce-quorum-e2e.XXXXXX)
daemon=
cleanup() {
	[ -n "$daemon" ] && kill -INT "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
	wan_down "$D"
	[ -n "${KEEP:-}" ] || rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

CTL=$BUILD/control/daemon/georeduce-control
WK=$BUILD/tools/worker/georeduce-worker
DPCTL=$BUILD/tools/dpctl/georeduce-dpctl
ROUNDS=20

cat >"$D/topo.json" <<'JSON'
{"format": "georeduce-topology/1", "name": "quorum-e2e",
 "nodes": [{"id": "a", "workers": 1}, {"id": "b", "workers": 1}, {"id": "c", "workers": 1}],
 "links": [{"a": "a", "b": "b", "gbps": 0.05, "latency_ms": 2},
           {"a": "a", "b": "c", "gbps": 0.05, "latency_ms": 2},
           {"a": "b", "b": "c", "gbps": 0.05, "latency_ms": 2}]}
JSON
if wan_up "$D" "$D/topo.json" "$BUILD" --scale 1 --workers-from-topology --jobs crew \
	--min-workers 1 --grace-ms 300 --lan-delay b=5,c=2000 --elements 16384 \
	--prefix "grq$$"; then
	ok "3 sites up, b's results 5 ms late and c's 2 s"
else
	not_ok "emulated WAN"
	cat "$D"/gw*.log
	exit 1
fi
grep -q '"grace_ms": 300' "$D/deployment.json" && ok "the crew job has a 300 ms grace window" ||
	not_ok "no grace window in the deployment"

"$CTL" run "$D/deployment.json" --socket "$D/control.sock" --heartbeat-ms 200 \
	--fail-after 3 --out "$D/tables" 2>"$D/control.log" &
daemon=$!
for _ in $(seq 600); do
	[ -e "$D/tables/job-1-a.json" ] && [ -e "$D/tables/job-1-b.json" ] &&
		[ -e "$D/tables/job-1-c.json" ] && break
	sleep 0.1
done
[ -e "$D/tables/job-1-c.json" ] && ok "georeduce-control installed the job" ||
	{ not_ok "no tables from georeduce-control"; cat "$D/control.log"; exit 1; }
python3 - "$D/tables/job-1-a.json" <<'PY' && ok "its roots complete at 1 with 300 ms of grace" ||
import json, sys
roots = [t for t in json.load(open(sys.argv[1]))["trees"] if t["parent"] is None]
sys.exit(not (roots and all(t.get("threshold") == 1 and t.get("grace_ms") == 300
                             for t in roots)))
PY
	not_ok "the table's roots lack the threshold or the window"

# quorum KEY: a quorum count of job 1 summed over the three gateways.
quorum() {
	local s sum=0 v
	for s in 0 1 2; do
		v=$("$DPCTL" -s "$D/gw$s.sock" --json stats | python3 -c '
import json, sys
print(sum(j["quorum"][sys.argv[1]] for j in json.load(sys.stdin)["jobs"] if j["job"] == 1))' "$1") ||
			v=0
		sum=$((sum + v))
	done
	echo "$sum"
}

# The three workers: a now, b 5 ms later, c 2 s later, all from round 0. c's round is
# answered by later rounds' results, 2 s late each, chunk by chunk; it is stopped once a and
# b are done (its contributions are counted late at the roots).
# worker SITE DELAY_S ROUNDS: one worker of three(), starting DELAY_S after $t0.
worker() {
	local name
	name=$(echo abc | cut -c$(($1 + 1)))
	ip netns exec "grq$$-s$1" "$WK" --table "$D/tables/job-1-$name.json" \
		--worker-id $((1000 + 100 * $1)) --all-workers 1000,1100,1200 \
		--first-round "$first" --rounds "$3" --timeout 30 \
		--start-at "$(python3 -c "print($t0 + $2)")" >"$D/$out-$1.out" 2>&1
}
# three FIRST OUT: the three workers from round FIRST, their output in $D/OUT-SITE.out; ra
# and rb: a's and b's exit status (0 or 1).
three() {
	local pa pb pc
	first=$1 out=$2
	t0=$(python3 -c 'import time; print("%.3f" % (time.time() + 1))')
	worker 0 0 "$ROUNDS" &
	pa=$!
	worker 1 0.005 "$ROUNDS" &
	pb=$!
	worker 2 2 1 &
	pc=$!
	wait "$pa" && ra=0 || ra=1
	wait "$pb" && rb=0 || rb=1
	kill "$pc" 2>/dev/null
	wait "$pc" 2>/dev/null
}
three 0 w
if [ $ra = 0 ] && [ $rb = 0 ]; then
	ok "workers a and b: $ROUNDS rounds each, every result exact"
else
	not_ok "the rounds of workers a and b"
	cat "$D"/w-*.out
fi
for s in 0 1; do
	two=$(grep -c ' 2 contributors, verified' "$D/w-$s.out")
	[ "$two" -ge $((ROUNDS - 2)) ] &&
		ok "worker $s: $two of $ROUNDS rounds hold a and b in every chunk" ||
		{ not_ok "worker $s: $two of $ROUNDS rounds hold a and b"; cat "$D/w-$s.out"; }
done
if grep -q ' 3 contributors' "$D"/w-*.out; then
	not_ok "a round holds the worker 2 s late"
	grep ' 3 contributors' "$D"/w-*.out
else
	ok "no round holds worker c"
fi
all=$(quorum chunks_all) expired=$(quorum chunks_expired) late=$(quorum contribs_late)
ingrace=$(quorum contribs_in_grace)
# Late: contributions to chunks complete without them, which only c's can be (a's and b's
# are in every chunk, and theirs after it are duplicates).
[ "$all" = 0 ] && [ "$expired" -gt 0 ] && [ "$late" -gt 0 ] && [ "$ingrace" -gt 0 ] &&
	ok "gateways: $expired chunks at the window's end, $ingrace contributions within it," \
		"$late late (worker c), none with all three" ||
	not_ok "gateways' quorum counts: all $all, expired $expired, in grace $ingrace, late $late"

# The control process's status shows the window, as configured and in force.
"$CTL" status --socket "$D/control.sock" --json >"$D/status.json" 2>&1
if python3 - "$D/status.json" <<'PY'; then
import json, sys
(j,) = json.load(open(sys.argv[1]))["jobs"]
g = j["grace"]
assert g["configured_ms"] == 300 and g["max_ms"] is None, g
assert g["in_force_ms"] == [300, 300], g
PY
	ok "status: the grace window configured and in force (300 ms)"
else
	not_ok "status grace: $(head -c 600 "$D/status.json")"
fi
"$CTL" status --socket "$D/control.sock" >"$D/status.txt" 2>&1
grep -q "complete at 1 workers, grace 300 ms (in force 300.0 ms)" "$D/status.txt" &&
	ok "status text: the grace window" ||
	not_ok "status text: $(grep -m1 'job 1' "$D/status.txt")"

# ---- The adaptive window: "grace_ms": "auto", at most 300 ms --------------------------
# The control process started again with the job's window set from the arrivals: a new
# epoch whose roots have grace_adaptive. The same three workers: the window starts at its
# bound and shrinks to twice the 90th percentile of b's lateness after a (5 ms and the
# host's jitter), so c (2 s late) is still never in, and b in most rounds (a loaded host's
# jitter beyond the window can cut it from a round, which the window is for).
kill -INT "$daemon" 2>/dev/null
wait "$daemon" 2>/dev/null
jq '.jobs[0].options.grace_ms = "auto" | .jobs[0].options.grace_max_ms = 300' \
	"$D/deployment.json" >"$D/d.json" && mv "$D/d.json" "$D/deployment.json"
"$CTL" run "$D/deployment.json" --socket "$D/control.sock" --heartbeat-ms 200 \
	--fail-after 3 --out "$D/tables" 2>>"$D/control.log" &
daemon=$!
adaptive() {
	for n in a b c; do
		python3 - "$D/tables/job-1-$n.json" <<'PY' || return 1
import json, sys
t = json.load(open(sys.argv[1]))
roots = [r for r in t["trees"] if r["parent"] is None]
sys.exit(not all(r.get("grace_adaptive") is True and r.get("grace_ms") == 300 for r in roots))
PY
	done
}
wan_wait_for 60 adaptive && ok "a new epoch with the adaptive window (at most 300 ms) installed" ||
	{ not_ok "no adaptive window in the tables"; tail -5 "$D/control.log"; }
three 100 auto
if [ $ra = 0 ] && [ $rb = 0 ]; then
	ok "adaptive: workers a and b, $ROUNDS rounds each, every result exact"
else
	not_ok "adaptive: the rounds of workers a and b"
	cat "$D"/auto-*.out
fi
two=$(cat "$D/auto-0.out" "$D/auto-1.out" | grep -c ' 2 contributors, verified')
[ "$two" -ge "$ROUNDS" ] && ok "adaptive: $two of $((2 * ROUNDS)) rounds hold a and b in every chunk" ||
	{ not_ok "adaptive: $two of $((2 * ROUNDS)) rounds hold a and b"; cat "$D"/auto-*.out; }
if grep -q ' 3 contributors' "$D"/auto-*.out; then
	not_ok "adaptive: a round holds the worker 2 s late"
else
	ok "adaptive: no round holds worker c"
fi
"$CTL" status --socket "$D/control.sock" --json >"$D/status.json" 2>&1
if python3 - "$D/status.json" <<'PY'; then
import json, sys
(j,) = json.load(open(sys.argv[1]))["jobs"]
g = j["grace"]
assert g["configured_ms"] == "auto" and g["max_ms"] == 300, g
lo, hi = g["in_force_ms"]
assert 1 <= lo < 300 and hi <= 300, g
print("  in force: %.1f to %.1f ms" % (lo, hi), file=sys.stderr)
PY
	ok "adaptive: status gives \"auto\" at most 300 ms, in force below the bound"
else
	not_ok "adaptive status grace: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["jobs"][0]["grace"])' "$D/status.json" 2>&1)"
fi

echo "quorum_e2e: $fails failed"
[ "$fails" = 0 ]
