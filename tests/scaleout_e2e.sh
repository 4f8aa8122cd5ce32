#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Several gateways per site on the emulated WAN (scripts/lib/testbed.py
# --gateways-per-site): site a with two gateways (a-1, a-2), site b with one, two workers
# each, every gateway's LAN port shaped. Checked: mTree and BlueConnect jobs through the
# three dataplanes, bit-exact, both of a's gateways summing their shards; a worker whose
# table names the wrong gateway for each shard refused by both gateways (wrong_shard) and
# getting no result; georeduce-control running the deployment with a-2 cut off and killed
# in the middle of a run of rounds (after a's workers had a round that b's had not), a's
# workers joined through it and b's following their table: the next epoch moves its shard
# to a-1, the workers run the cut round again, a's give back the results b's lack, and
# every round completes exactly.
#
#   scaleout_e2e.sh BUILD_DIR      (KEEP=1: its directory stays in /tmp)
set -u
BUILD=$(cd "$1" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
fails=0

if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
	echo "scaleout_e2e: needs root and network namespaces; skipped"
	exit 77
fi
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; fails=$((fails + 1)); }

GEOREDUCE_ROOT=$ROOT
# shellcheck source=../scripts/lib/wan.sh
. "$ROOT/scripts/lib/wan.sh"
D=$(mktemp -d /tmp/georeduce-scaleout-e2e.XXXXXX)
P=grso$$
daemon=
cleanup() {
	[ -n "$daemon" ] && kill -INT "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
	wan_down "$D/wan"
	[ "${KEEP:-}" ] || rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

CTL=$BUILD/control/daemon/georeduce-control
DPCTL=$BUILD/tools/dpctl/georeduce-dpctl
WK=$BUILD/tools/worker/georeduce-worker
quick=${GEOREDUCE_TEST_QUICK:-0}
ROUNDS=$([ "$quick" != 0 ] && echo 12 || echo 24)

cat >"$D/topo.json" <<'JSON'
{"format": "georeduce-topology/1", "name": "scaleout-e2e",
 "nodes": [{"id": "a", "workers": 2}, {"id": "b", "workers": 2}],
 "links": [{"a": "a", "b": "b", "gbps": 0.03, "latency_ms": 4}]}
JSON
if wan_up "$D/wan" "$D/topo.json" "$BUILD" --scale 1 --workers 2 --jobs mtree,blueconnect \
	--elements 131072 --prefix "$P" --gateways-per-site 2,1 --gateway-mbit 200; then
	ok "2 sites up: a with 2 gateways, b with 1"
else
	not_ok "emulated WAN"
	cat "$D"/wan/gw*.log
	exit 1
fi
W=$D/wan

# stat NAME FIELD: a counter of gateway NAME summed over its lcores (a drop reason too).
stat() {
	local sock
	sock=$(wan_gateways "$W" | awk -v n="$1" '$2 == n { print $3 }')
	"$DPCTL" -s "$sock" --json stats | python3 -c '
import json, sys
s, f = json.load(sys.stdin), sys.argv[1]
print(sum(l.get(f, 0) + l.get("drops", {}).get(f, 0) for l in s["lcores"]))' "$2"
}

# 1. Both jobs through the three gateways, exact; each of a's gateways sums its shard.
if wan_install "$W" 1 && wan_install "$W" 2; then
	ok "tables of both jobs installed on the 3 gateways"
else
	not_ok "install"
	cat "$W/plan.log"
fi
python3 - "$W/tables" <<'PY' && ok "a's tables: each half of the chunks, the other in shards" ||
import json, sys
d = sys.argv[1]
t1, t2 = (json.load(open("%s/job-1-a-%d.json" % (d, k))) for k in (1, 2))
n = -(-t1["elements"] // t1["chunk_elements"])
own = lambda t: sorted((e["chunk_first"], e["chunk_first"] + e["chunk_count"]) for e in t["trees"])
ok = (own(t1)[0][0] == 0 and own(t1)[-1][1] == n // 2 and own(t2)[0][0] == n // 2 and
      own(t2)[-1][1] == n and t1["shards"][0]["gateway"]["id"] == t2["gateway"]["id"] and
      t2["shards"][0]["gateway"]["id"] == t1["gateway"]["id"] and
      "shards" not in json.load(open("%s/job-1-b.json" % d)))
sys.exit(not ok)
PY
	not_ok "a's tables do not split the chunks"
c0=$(stat a-2 chunks_completed)
r1=0
wan_run "$W" 1 2 10 >/dev/null || r1=1
if [ $r1 = 0 ] && wan_run "$W" 2 2 10 >/dev/null; then
	ok "mTree and BlueConnect: 2 rounds each through 3 gateways, every result exact"
else
	not_ok "rounds through the gateways"
	cat "$W"/run-*.err
fi
c1=$(stat a-1 chunks_completed)
c2=$(stat a-2 chunks_completed)
[ "$c1" -gt 0 ] && [ "$c2" -gt "$c0" ] && ok "both of a's gateways summed chunks ($c1, $c2)" ||
	not_ok "a's gateways completed $c1 and $c2 chunks"
[ "$(stat a-1 wrong_shard)" = 0 ] && [ "$(stat a-2 wrong_shard)" = 0 ] &&
	ok "no chunk at the wrong gateway" || not_ok "chunks at the wrong gateway"

# 2. A worker whose table names the wrong gateway for each shard: a-2's table with its own
# gateway and its shard's swapped sends a-1's chunks to a-2 and a-2's to a-1. Both refuse
# them as another gateway's shard, and the worker gets no result.
python3 - "$W/tables/job-1-a-2.json" "$D/wrong.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
t["gateway"], t["shards"][0]["gateway"] = t["shards"][0]["gateway"], t["gateway"]
json.dump(t, open(sys.argv[2], "w"))
PY
w1=$(stat a-1 wrong_shard)
w2=$(stat a-2 wrong_shard)
if ip netns exec "$P-s0" "$WK" --table "$D/wrong.json" --worker-id 1000 --first-round 40 \
	--rounds 1 --timeout 3 >"$D/wrong.out" 2>&1; then
	not_ok "a worker with a wrong table got its results"
else
	grep -q "without a result" "$D/wrong.out" &&
		ok "the worker with the wrong table gets no result" ||
		{ not_ok "the worker with the wrong table"; cat "$D/wrong.out"; }
fi
x1=$(stat a-1 wrong_shard)
x2=$(stat a-2 wrong_shard)
[ "$x1" -gt "$w1" ] && [ "$x2" -gt "$w2" ] &&
	ok "both gateways refused the other's shard: wrong_shard $x1 at a-1, $x2 at a-2" ||
	not_ok "wrong_shard at a-1 $w1 -> $x1, at a-2 $w2 -> $x2"

# 3. georeduce-control runs the deployment; a-2 is killed while the workers run rounds,
# following their sites' tables. The WAN link is the bottleneck (the gateways' ports are
# faster): the link carries what its trees are planned at, and no measured rate re-plans
# the job under the rounds. A dataplane that is gone refuses its socket, which fails it at
# once; --fail-after only keeps a loaded machine's late answers from looking like failures:
# 25 heartbeats (5 s) of silence before a link counts as down, since the dataplanes, which
# poll, get little CPU on a loaded 2-core host, and a link taken for down while the cut
# round stands leaves the job without a plan (its two sites unconnected) and the round
# ends other than by a-2's failure. No check here is about a link.
"$CTL" run "$W/deployment.json" --socket "$D/control.sock" --heartbeat-ms 200 \
	--fail-after 25 --out "$D/tables" 2>"$D/control.log" &
daemon=$!
epoch_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["epoch"])' "$1"; }
for _ in $(seq 600); do
	[ -e "$D/tables/job-1-a.json" ] && [ -e "$D/tables/job-1-b.json" ] && break
	sleep 0.1
done
[ -e "$D/tables/job-1-a.json" ] && grep -q '"shards"' "$D/tables/job-1-a.json" &&
	ok "georeduce-control installed job 1 with a's two shards" ||
	{ not_ok "no tables from georeduce-control"; cat "$D/control.log"; exit 1; }
e0=$(epoch_of "$D/tables/job-1-a.json")
all=1000,1001,1100,1101
# Cut a-2 off in round CUT of the run, then kill it: the filter below holds back one
# RESULT that a-2 sends towards b, job 1's of the last chunk of a tree a-2 is the root of
# (site a's WAN veth, u32 at the georeduce header: "GR", version 1, type 2, the job at 8,
# the round at 24, the chunk at 28), in rounds CUT - 1 and CUT. These kernels have no tc
# actions and no netem: the veth (30 Mbit/s, the topology's link) gets an htb instead of
# its tbf, a class at that rate for everything and one at 8 bit/s for that RESULT. Its
# first packet, round CUT - 1's, passes; round CUT's waits for good. So round CUT is
# complete at a's workers, which go on to the next one, and lacks that chunk at b's; what
# b's workers send stays within their window, so a's next round stops too. b's workers
# run their round again under the next epoch, a's the next round: the first completes
# only through the results a's workers keep (docs/PROTOCOL.md section 10.1, rule 6), which
# they give back to a-1 when it asks. Round CUT is the sixth of the run, whatever the
# machine's speed: a cut in the run's last round would leave nobody to give back (a's
# workers are done and gone) and b's workers without their result.
CUT=105
per=$(python3 -c '
import json, sys
print(sum(e["chunk_count"] for e in json.load(open(sys.argv[1]))["trees"]))' \
	"$D/tables/job-1-a-2.json")
held=$(python3 -c '
import json, sys
r = [e for e in json.load(open(sys.argv[1]))["trees"] if e.get("role") == "root"]
print(r[0]["chunk_first"] + r[0]["chunk_count"] - 1 if r else "")' \
	"$D/tables/job-1-a-2.json")
if [ -n "$held" ]; then
	tc -n "$P-s0" qdisc del dev wan0 root &&
		tc -n "$P-s0" qdisc add dev wan0 root handle 1: htb default 10 r2q 100 &&
		tc -n "$P-s0" class add dev wan0 parent 1: classid 1:10 htb rate 30mbit \
			ceil 30mbit burst 16k &&
		tc -n "$P-s0" class add dev wan0 parent 1: classid 1:30 htb rate 8bit ceil 8bit \
			burst 1 cburst 1 quantum 1500 &&
		tc -n "$P-s0" filter add dev wan0 parent 1: protocol ip prio 1 u32 \
			match ip src 10.99.0.2/32 match u32 0x47520102 0xffffffff at 28 \
			match u32 1 0xffffffff at 36 match u32 $((CUT - 1)) 0xfffffffe at 52 \
			match u32 "$held" 0xffffffff at 56 flowid 1:30 ||
		not_ok "no filter on site a's WAN veth"
fi
pids=()
# Site a's workers join through the control process (its socket: the worker op hands them
# their site's table, shards and all, and its long poll the next epoch); b's follow their
# table file.
for s in 0 1; do
	src=(--table "$D/tables/job-1-b.json" --follow)
	[ $s = 0 ] && src=(--control "$D/control.sock" --job 1)
	ip netns exec "$P-s$s" "$WK" "${src[@]}" \
		--worker-id $((1000 + 100 * s)) --worker-id $((1001 + 100 * s)) --all-workers "$all" \
		--first-round 100 --rounds "$ROUNDS" --timeout 30 >"$D/w-$s.out" 2>&1 &
	pids+=($!)
done
base=$(stat a-2 chunks_completed)
if [ -n "$held" ]; then
	# The cut is in place once both of a's workers have round CUT (their output is line
	# buffered) and b's do not; a-2 is killed then.
	cut=0
	for _ in $(seq 1200); do
		[ "$(grep -c "round $CUT: .*verified" "$D/w-0.out")" = 2 ] && { cut=1; break; }
		kill -0 "${pids[0]}" 2>/dev/null || break
		sleep 0.1
	done
	[ $cut = 1 ] && ! grep -q "round $CUT: .*verified" "$D/w-1.out" &&
		ok "round $CUT cut: complete at a's workers, not at b's" ||
		{ not_ok "round $CUT not cut as planned"; cat "$D"/w-*.out; }
else
	# a-2 is the root of no tree: killed once it summed three rounds of its shard.
	for _ in $(seq 1200); do
		[ "$(stat a-2 chunks_completed)" -ge $((base + 3 * per)) ] && break
		sleep 0.05
	done
fi
a2=$(pgrep -f -- "--file-prefix=$P-gw0-2 " | head -1)
[ -n "$a2" ] && kill -KILL "$a2"
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
back=$(grep -c 'given back' "$D/w-0.out")
if [ $rc = 0 ] && [ "$(cat "$D"/w-*.out | grep -c verified)" = $((4 * ROUNDS)) ]; then
	ok "a-2 cut off and killed mid-job: $ROUNDS rounds completed by every worker, every" \
		"result exact ($(cat "$D"/w-*.out | grep -c 'run again') rounds run again)"
else
	not_ok "rounds across the loss of a-2"
	cat "$D"/w-*.out
	tail -20 "$D/control.log"
	for g in a-1 b; do
		sock=$(wan_gateways "$W" | awk -v n="$g" '$2 == n { print $3 }')
		"$DPCTL" -s "$sock" --json stats >"$D/stats-$g.json"
		python3 -c '
import json, sys
s, g = json.load(sys.stdin), sys.argv[1]
t = {}
for l in s["lcores"]:
	for k, v in list(l.items()) + list(l.get("drops", {}).items()):
		if isinstance(v, int) and v and ("recover" in k or k in l.get("drops", {})):
			t[k] = t.get(k, 0) + v
print(g + ":", " ".join("%s %d" % kv for kv in sorted(t.items())))' "$g" <"$D/stats-$g.json"
	done
fi
# b's workers lacked a result of the cut round that only a's workers had: it came back from
# them (a planner that made a-2 the root of no tree leaves nothing to hold back).
[ -z "$held" ] || [ "$back" -ge 1 ] &&
	ok "a's workers gave results of the cut round back $back times" ||
	{ not_ok "no worker of a gave a result of the cut round back"; grep -v "heartbeat missed" "$D/control.log" | tail -20; }
# The workers can be done before the next heartbeat finds a-2 gone (on a loaded host, the
# daemon's heartbeat can come late): wait for the line and the epoch after it, up to a
# minute.
for _ in $(seq 600); do
	grep -q "gateway a-2 (id .*is down" "$D/control.log" &&
		[ "$(epoch_of "$D/tables/job-1-a.json")" -gt "$e0" ] && break
	sleep 0.1
done
grep -q "gateway a-2 (id .*is down" "$D/control.log" && ok "the control process saw a-2 fail" ||
	{ not_ok "no failure of a-2 in the control log"; grep a-2 "$D/control.log"; }
e1=$(epoch_of "$D/tables/job-1-a.json")
python3 - "$D/tables/job-1-a.json" <<'PY' && [ "$e1" -gt "$e0" ] &&
import json, sys
t = json.load(open(sys.argv[1]))
n = -(-t["elements"] // t["chunk_elements"])
sys.exit(not ("shards" not in t and sum(e["chunk_count"] for e in t["trees"]) == n and
              t["gateway"]["ipv4"] == "10.99.0.1"))
PY
	ok "epoch $e1 (was $e0): a-1 holds every chunk of site a" ||
	not_ok "job 1 at epoch $e1 after a-2 failed"
"$CTL" status --socket "$D/control.sock" --json | python3 -c '
import json, sys
s = json.load(sys.stdin)
st = {g["name"]: g["state"] for g in s["gateways"]}
j = [j for j in s["jobs"] if j["job"] == 1][0]
sys.exit(not (st == {"a-1": "up", "a-2": "down", "b": "up"} and j["gateways"] == ["a-1", "b"]))' &&
	ok "status: a-2 down, job 1 on a-1 and b" || not_ok "status after a-2 failed"

echo "scaleout_e2e: $fails failed"
[ "$fails" = 0 ]
