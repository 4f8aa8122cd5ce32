#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Elastic membership on the emulated WAN with its management network (scripts/lib/
# testbed.py --tls): a job created through the API with "elastic": true and two declared
# workers. Checked: a worker that is not declared joins it (georeduce-worker
# --join-elastic, its certificate naming site-a) and the next rounds include it (3
# contributors, every result exact), and it leaves at its end; a Python worker joins with
# Client.join, its id and first round from a torchrun environment; a joined worker killed
# is removed after the member timeout and the job goes on without it (2 contributors), the
# round it cut run again over the workers left with no chunk of the old membership; bad
# join, leave and heartbeat requests refused with the field named; 64 joins at once and
# their 64 leaves make at most a handful of epochs, the members kept in the state
# directory and shown in status; the control process killed and restarted keeps its
# members, which are then removed when they do not renew; and a job's life from a launcher
# (docs/DEPLOYMENT.md): created by Job.create at one site, grown by a site, shrunk, deleted.
# The test's lines give the timings that BENCHMARKS.md reports.
#
#   elastic_e2e.sh BUILD_DIR
set -u
BUILD=$(cd "$1" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
fails=0

if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
	echo "elastic_e2e: needs root and network namespaces; skipped"
	exit 77
fi
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; fails=$((fails + 1)); }

GEOREDUCE_ROOT=$ROOT
# shellcheck source=../scripts/lib/wan.sh
. "$ROOT/scripts/lib/wan.sh"
D=$(mktemp -d /tmp/georeduce-elastic-e2e.XXXXXX)
cleanup() {
	for p in ${JPID:-} "${WPIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	wan_control_stop "$D"
	wan_down "$D"
	[ "${KEEP:-}" ] || rm -rf "$D"
}
WPIDS=()
trap cleanup EXIT
trap 'exit 130' INT TERM

CTL=$BUILD/control/daemon/georeduce-control
WK=$BUILD/tools/worker/georeduce-worker
PKI=$ROOT/scripts/georeduce-pki
TIMEOUT_MS=4000
BATCH_MS=500

wan_up_tls3 "$D" "$BUILD" elastic-e2e 0.05 --jobs mtree --elements 16384 --slots-max 1024 \
	--prefix "gre$$" || exit 1
NS=$(wan_ctl "$D" ns)
CERTS=$(wan_ctl "$D" pki)
API=$(wan_ctl "$D" api)
as_ctl() { ip netns exec "$NS" "$@"; }
wait_for() { wan_wait_for "$@"; }
status() { "$CTL" status --socket "$D/control.sock" --json; }
# live_with JOB N: live, its epoch planned with N workers
live_with() {
	local s
	s=$(status 2>/dev/null) && [ -n "$s" ] &&
		jq -e ".jobs[] | select(.job == $1) | .state == \"live\" and .workers == $2" \
			<<<"$s" >/dev/null
}
member_epochs() { # JOB: epochs planned for membership changes so far
	status | jq ".jobs[] | select(.job == $1) | .replans.membership // 0"
}
# calls CERT: one TLS connection to the API from the control namespace, a request per
# stdin line ("OP ARGS_JSON"), a reply per stdout line
calls() {
	as_ctl python3 "$ROOT/tests/tls_call.py" "${API#tls://}" "$CERTS/$1.pem" \
		"$CERTS/$1.key" "$CERTS/ca.pem"
}

# The elastic job: job 1's workers on other ports, 66 workers at most. Worker certificates
# that name sites (one a, one a and b) and none.
jq '.jobs[0] | del(.id) | .workers |= map(.port += 5) | .elastic = true |
	.max_workers = 66' "$D/deployment.json" >"$D/job.json"
A_IP=$(jq -r '.workers[0].ipv4' "$D/job.json")
B_IP=$(jq -r '.workers[1].ipv4' "$D/job.json")
A_PORT=$(jq -r '.workers[0].port' "$D/job.json")
"$PKI" cert "$CERTS" elastic-a worker --dns site-a >/dev/null || not_ok "pki site-a"
"$PKI" cert "$CERTS" elastic-ab worker --dns site-a --dns site-b >/dev/null ||
	not_ok "pki site-a site-b"
wan_control_start "$D" --heartbeat-ms 200 --fail-after 3 --timeout-ms 3000 \
	--state-dir "$D/state" --member-timeout-ms $TIMEOUT_MS --batch-ms $BATCH_MS
wan_control_wait "$D" || not_ok "static job 1 not live"
out=$(as_ctl "$CTL" job --socket "$API" --cert "$CERTS/control.pem" \
	--key "$CERTS/control.key" --ca "$CERTS/ca.pem" create "$D/job.json")
JOB=$(echo "$out" | sed -n 's/^job \([0-9]*\) created.*/\1/p')
[ -n "$JOB" ] && wait_for 30 live_with "$JOB" 2 &&
	ok "elastic job $JOB created with its 2 declared workers: live" ||
	{ not_ok "job create: '$out'"; tail -5 "$D/control.log"; exit 1; }

# declared FIRST ROUNDS: the two declared workers run ROUNDS rounds from FIRST.
declared() {
	WPIDS=()
	for s in 0 1; do
		ip netns exec "gre$$-s$s" "$WK" --control "$API" --job "$JOB" \
			--cert "$CERTS/workers-site$s.pem" --key "$CERTS/workers-site$s.key" \
			--ca "$CERTS/ca.pem" --worker-id $((1000 + 100 * s)) --first-round "$1" \
			--rounds "$2" --timeout 20 ${3:-} >"$D/w-$s.out" 2>&1 &
		WPIDS+=($!)
	done
}
waitall() {
	local rc=0 p
	for p in "${WPIDS[@]}"; do wait "$p" || rc=1; done
	WPIDS=()
	return $rc
}
# joiner FIRST ROUNDS [OPTIONS]: a worker not declared joins at site a (its own port).
joiner() {
	ip netns exec "gre$$-s0" "$WK" --control "$API" --job "$JOB" \
		--cert "$CERTS/elastic-a.pem" --key "$CERTS/elastic-a.key" --ca "$CERTS/ca.pem" \
		--join-elastic "a:$A_IP:$((A_PORT + 2))" --first-round "$1" --rounds "$2" \
		--timeout 20 ${3:-} >"$D/j.out" 2>&1 &
	JPID=$!
}
contribs() { # FILE: the contributor counts of its rounds, one line
	sed -n 's/.* \([0-9]*\) contributors, verified$/\1/p' "$1" | sort -u | paste -sd' '
}

# ---- 1. rounds of the declared workers, then one joins: the next rounds include it -----
declared 0 5
waitall && [ "$(contribs "$D/w-0.out")" = 2 ] &&
	ok "5 rounds of the 2 declared workers, 2 contributors each, exact" ||
	{ not_ok "declared rounds"; cat "$D"/w-*.out; }
# logt PATTERN: the control log's time (s) of the first line after the last start matching it
logt() {
	local l
	l=$(grep -- "$1" "$D/control.log" | tail -1 | cut -d' ' -f1)
	[ -n "$l" ] && date -d "${l%Z}Z" +%s.%N
}
first_with() { grep -q " 3 contributors, verified" "$D/j.out"; }
t0=$(date +%s.%N)
joiner 5 5
if wait_for 30 live_with "$JOB" 3; then
	t1=$(date +%s.%N)
	declared 5 5
	for _ in $(seq 3000); do first_with && break; sleep 0.01; done
	t2=$(date +%s.%N)
	wid=$(sed -n 's/^worker \([0-9]*\) joined.*/\1/p' "$D/j.out")
	tj=$(logt "worker $wid joined at a")
	tl=$(logt "job $JOB: epoch [0-9]* live on")
	ok "a worker joined ($(head -1 "$D/j.out")): its epoch live $(echo "$tl - $tj" | bc) s after the join (control log), seen live $(echo "$t1 - $t0" | bc) s after its start; its first round done $(echo "$t2 - $t0" | bc) s after its start"
else
	not_ok "no epoch with the joined worker"
	cat "$D/j.out"
	tail -5 "$D/control.log"
	declared 5 5
fi
wait "$JPID" && waitall && [ "$(contribs "$D/j.out")" = 3 ] &&
	[ "$(contribs "$D/w-0.out")" = 3 ] && [ "$(contribs "$D/w-1.out")" = 3 ] &&
	ok "rounds 5 to 9 include it: 3 contributors at every worker, every result exact" ||
	{ not_ok "rounds with the joined worker"; cat "$D/j.out" "$D"/w-*.out; }
wait_for 30 live_with "$JOB" 2 && grep -q "worker [0-9]* left (leave)" "$D/control.log" &&
	ok "it left at its end: an epoch with the 2 declared workers again" ||
	{ not_ok "the joined worker's leave"; tail -5 "$D/control.log"; }

# ---- 1b. Python: Client.join, its id and first round from torchrun's environment -------
cat >"$D/pyjoin.py" <<'PY'
import array
import sys
import georeduce

api, certs, job, ip, port = sys.argv[1:6]
env = {"RANK": "2", "WORLD_SIZE": "4", "TORCHELASTIC_RESTART_COUNT": "1"}
c = georeduce.Client.join(api, int(job), "b", ip, int(port), id_base=3000, env=env,
                          cert=certs + "/elastic-ab.pem", key=certs + "/elastic-ab.key",
                          ca=certs + "/ca.pem", timeout=20)
print("joined", c.config.worker_id, "first round", c.next_round, flush=True)
n = c.elements
counts, exact = [], True
for _ in range(3):
    x = array.array("f", (e % 61 for e in range(n)))
    k = c.allreduce(x)
    counts.append(k)
    exact = exact and all(v == k * (e % 61) for e, v in enumerate(x))
print("contributors", counts, "exact" if exact else "WRONG", flush=True)
c.close()
PY
B_PORT=$(jq -r '.workers[1].port' "$D/job.json")
ip netns exec "gre$$-s1" env PYTHONPATH="$ROOT/python" \
	GEOREDUCE_LIBRARY="$BUILD/lib/client/libgeoreduce.so" LD_PRELOAD="${GEOREDUCE_PY_PRELOAD:-}" \
	ASAN_OPTIONS=detect_leaks=0 python3 "$D/pyjoin.py" "$API" \
	"$CERTS" "$JOB" "$B_IP" $((B_PORT + 2)) >"$D/py.out" 2>&1 &
PYPID=$!
wait_for 60 live_with "$JOB" 3 || not_ok "no epoch with the Python worker: $(cat "$D/py.out")"
declared $((1 << 24)) 3
waitall || not_ok "the declared workers' rounds with the Python worker: $(tail -2 "$D"/w-*.out)"
wait $PYPID
if grep -q "^joined 3002 first round 16777216" "$D/py.out" &&
	grep -q "^contributors \[3, 3, 3\] exact" "$D/py.out"; then
	ok "Python Client.join: id 3002 (id_base + RANK), first round 2^24 (restart count 1), 3 exact rounds of 3 contributors"
else
	not_ok "Python Client.join: $(cat "$D/py.out")"
fi
wait_for 30 live_with "$JOB" 2 && ok "its close() left the job" || not_ok "the Python worker's leave"

# ---- 2. a joined worker killed: removed after the member timeout, the job goes on ------
# One chunk at a time in flight (--window 1): its rounds take a round trip a chunk, so
# that the kill most likely cuts one with some of its chunks summed and others not. The
# declared worker at b is held (SIGSTOP) from the kill until 2 s after the epoch without
# the joiner is live, so that the one at a runs the cut round under that epoch alone
# first: its retransmissions and NACK_RESULTs of the chunks the old epoch completed find
# their old RESULTs at the gateways, which must not answer with them.
joiner 10 1000000 "--window 1"
wait_for 30 live_with "$JOB" 3 || not_ok "the second joiner"
declared 10 1000000
rounds_in() { [ "$(grep -c "contributors, verified" "$1")" -ge "$2" ]; }
wait_for 60 rounds_in "$D/j.out" 3 || not_ok "the joiner's rounds: $(tail -2 "$D/j.out")"
kill -9 "$JPID"
kill -STOP "${WPIDS[1]}"
wait "$JPID" 2>/dev/null
JPID=
n3=$(grep -c " 3 contributors, verified" "$D/w-0.out")
if wait_for 60 grep -q "left (not heard from for $TIMEOUT_MS ms)" "$D/control.log" &&
	wait_for 30 live_with "$JOB" 2; then
	ok "a joined worker killed after $n3 rounds with it: $(grep -o "worker [0-9]* left (not heard.*" "$D/control.log" | head -1), an epoch without it live"
else
	not_ok "no removal after the member timeout"
fi
sleep 2
kill -CONT "${WPIDS[1]}"
# The round in flight at the removal runs again under the new epoch, every chunk of it
# over the 2 workers left (docs/CONTROL.md, "Rounds across a change"): the chunks the old
# epoch completed with the joiner are not taken from it, so no round mixes counts, which
# georeduce-worker's check of one count per round would call wrong. Both go on.
after_kill() { # FILE LINES: rounds of 2 contributors, verified, after its first LINES lines
	sed -n "$(($2 + 1)),\$p" "$1" | grep -c " 2 contributors, verified$"
}
l0=$(wc -l <"$D/w-0.out") l1=$(wc -l <"$D/w-1.out")
if wait_for 60 eval '[ "$(after_kill "$D/w-0.out" "$l0")" -ge 3 ] &&
		[ "$(after_kill "$D/w-1.out" "$l1")" -ge 3 ]' &&
	! grep -q "element [0-9]* is" "$D"/w-*.out && kill -0 "${WPIDS[@]}" 2>/dev/null; then
	ok "the round in flight at the removal ran again over the 2 workers left: no round of mixed counts, $(after_kill "$D/w-0.out" "$l0") rounds of 2 since the removal"
else
	not_ok "rounds across the removal: $(tail -qn 2 "$D"/w-*.out)"
fi
for p in "${WPIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
WPIDS=()
# How many RESULTs of the joiner's epoch the gateways kept from the workers (0: the kill
# cut no round with chunks summed under it).
withheld=0
for g in 0 1 2; do
	withheld=$((withheld + $("$BUILD/tools/dpctl/georeduce-dpctl" -s "$D/gw$g.sock" --json \
		stats | jq '[.lcores[].recover_other_members // 0] | add // 0')))
done
echo "# RESULTs of another membership withheld by the gateways: $withheld"
# The next rounds after the last one begun (a restarted job's workers go on so).
next=$(($(sed -n 's/^worker [0-9]* round \([0-9]*\):.*/\1/p' "$D"/w-*.out | sort -n | tail -1) + 1))
declared "$next" 5
waitall && [ "$(contribs "$D/w-0.out")" = 2 ] && [ "$(contribs "$D/w-1.out")" = 2 ] &&
	ok "the job goes on without it: rounds $next to $((next + 4)) of the 2 declared workers, 2 contributors, exact" ||
	{ not_ok "rounds after a joined worker was killed"; tail -n 3 "$D"/w-*.out; }

# ---- 3. bad requests: the field named ---------------------------------------------------
j() { echo "join {\"job\": $JOB, \"node\": \"a\", \"ipv4\": \"$A_IP\", \"port\": 30000, $1}"; }
{
	echo "join {\"job\": $JOB, \"node\": \"z\", \"ipv4\": \"$A_IP\", \"port\": 30000}"
	echo "join {\"job\": $JOB, \"node\": \"a\", \"ipv4\": \"10.0.0\", \"port\": 30000}"
	echo "join {\"job\": $JOB, \"node\": \"a\", \"ipv4\": \"$A_IP\", \"port\": 0}"
	echo "join {\"job\": $JOB, \"node\": \"a\", \"ipv4\": \"$A_IP\"}"
	j '"worker": 70000'
	j '"worker": 1000'
	j '"colour": 1'
	echo "join {\"job\": 99, \"node\": \"a\", \"ipv4\": \"$A_IP\", \"port\": 30000}"
	echo "join {\"job\": 1, \"node\": \"a\", \"ipv4\": \"$A_IP\", \"port\": 30000}"
	echo "join {\"job\": $JOB, \"node\": \"b\", \"ipv4\": \"$B_IP\", \"port\": 30000}"
	echo "join {\"job\": $JOB, \"node\": \"a\", \"ipv4\": \"$A_IP\", \"port\": $A_PORT}"
	echo "leave {\"job\": $JOB, \"worker\": 1000}"
	echo "heartbeat {\"job\": $JOB, \"worker\": 4321}"
	echo "job_list {}"
} | calls elastic-a >"$D/bad.out"
want=("field 'node': 'z' is not a site" "field 'ipv4'" "field 'port'" "field 'port'"
	"field 'worker': expected 1" "field 'worker': job $JOB has a worker 1000"
	"field 'colour'" "field 'job': no job 99" "field 'job': job 1 is not elastic"
	"field 'node': this certificate does not name site-b"
	"field 'port': $A_IP:$A_PORT is worker 1000's" "field 'worker': worker 1000 is declared"
	"field 'worker': job $JOB has no worker 4321" "field 'op': 'job_list' is not for")
bad=0
for k in "${!want[@]}"; do
	line=$(sed -n "$((k + 2))p" "$D/bad.out")
	if ! echo "$line" | jq -e '.ok == false' >/dev/null ||
		! echo "$line" | grep -qF -- "${want[$k]}"; then
		not_ok "bad request $k: want '${want[$k]}', got $line"
		bad=1
	fi
done
[ $bad = 0 ] && ok "${#want[@]} bad join, leave and heartbeat requests refused, each naming its field"
live_with "$JOB" 2 && ok "none of them changed the job" || not_ok "the job after bad requests"

# ---- 4. 64 joins at once, then 64 leaves: a handful of epochs ---------------------------
e0=$(member_epochs "$JOB")
storm() { # the joins, renewals every second for 6 s, the leaves
	for k in $(seq 0 64); do
		if [ $((k % 2)) = 0 ]; then n=a ip=$A_IP; else n=b ip=$B_IP; fi
		echo "join {\"job\": $JOB, \"node\": \"$n\", \"ipv4\": \"$ip\", \"port\": $((20000 + k)), \"worker\": $((2000 + k))}"
	done
	for _ in 1 2 3 4 5 6; do
		sleep 1
		for k in $(seq 0 63); do echo "heartbeat {\"job\": $JOB, \"worker\": $((2000 + k))}"; done
	done
	for k in $(seq 0 63); do echo "leave {\"job\": $JOB, \"worker\": $((2000 + k))}"; done
}
t0=$(date +%s.%N)
storm | calls elastic-ab >"$D/storm.out" &
SPID=$!
if wait_for 60 live_with "$JOB" 66; then
	t1=$(date +%s.%N)
	e1=$(member_epochs "$JOB")
	n_ok=$(sed -n '2,65p' "$D/storm.out" | jq -s '[.[] | select(.ok)] | length')
	[ "$n_ok" = 64 ] && [ $((e1 - e0)) -le 4 ] &&
		ok "64 joins at once: $((e1 - e0)) epochs, stable with 66 workers after $(echo "$t1 - $t0" | bc) s" ||
		not_ok "64 joins: $n_ok accepted, $((e1 - e0)) epochs"
	sed -n '66p' "$D/storm.out" | grep -q "field 'job': job $JOB has 66 workers, its max_workers" &&
		ok "the 65th refused: $(sed -n '66p' "$D/storm.out" | jq -r .error)" ||
		not_ok "the 65th join: $(sed -n '66p' "$D/storm.out")"
	jq -e ".jobs[0].joined | length == 64" "$D/state/jobs.json" >/dev/null &&
		status | jq -e ".jobs[] | select(.job == $JOB) | .elastic ==
			{\"workers\": 66, \"joined\": 64, \"pending\": 0}" >/dev/null &&
		ok "the 64 members kept in the state directory and shown in status" ||
		not_ok "the members in the state file and status"
else
	not_ok "64 joins: no stable epoch with 66 workers"
	tail -5 "$D/control.log"
fi
e1=$(member_epochs "$JOB")
wait $SPID
if wait_for 60 live_with "$JOB" 2; then
	e2=$(member_epochs "$JOB")
	n_ok=$(tail -64 "$D/storm.out" | jq -s '[.[] | select(.ok)] | length')
	[ "$n_ok" = 64 ] && [ $((e2 - e1)) -le 4 ] &&
		ok "64 leaves at once: $((e2 - e1)) epochs, back to the 2 declared workers" ||
		not_ok "64 leaves: $n_ok accepted, $((e2 - e1)) epochs"
else
	not_ok "64 leaves: no epoch with 2 workers"
fi
grep -q "timeout\|not heard" <(grep "worker 20[0-9][0-9] left" "$D/control.log") &&
	not_ok "a renewed member timed out" || ok "the renewed members never timed out"

# ---- 5. the control process restarted: its members kept, then timed out ---------------
for k in 0 1; do
	echo "join {\"job\": $JOB, \"node\": \"a\", \"ipv4\": \"$A_IP\", \"port\": $((21000 + k)), \"worker\": $((2100 + k))}"
done | calls elastic-a >/dev/null
wait_for 30 live_with "$JOB" 4 || not_ok "2 more members"
wan_control_stop "$D" KILL
wan_control_start "$D" --heartbeat-ms 200 --fail-after 3 --timeout-ms 3000 \
	--state-dir "$D/state" --member-timeout-ms $TIMEOUT_MS --batch-ms $BATCH_MS
if wait_for 30 live_with "$JOB" 4 && grep -q "job $JOB: epoch [0-9]* found live on" "$D/control.log"; then
	ok "restarted: job $JOB's 2 members read from the state directory, its epoch with 4 workers carried on"
else
	not_ok "the members after a restart"
	tail -5 "$D/control.log"
fi
wait_for 30 live_with "$JOB" 2 &&
	[ "$(grep -c "worker 210[01] left (not heard from for $TIMEOUT_MS ms)" "$D/control.log")" = 2 ] &&
	ok "not renewed after the restart: both removed after the member timeout" ||
	{ not_ok "members not renewed after the restart"; tail -5 "$D/control.log"; }

# ---- 5b. the operator's commands: georeduce-control job join and leave -----------------
# (No worker renews the member: it leaves at once, well within the member timeout.)
out=$("$CTL" job join "$JOB" a "$A_IP:31000" 2200 --socket "$D/control.sock" 2>&1)
out2=$("$CTL" job leave "$JOB" 2200 --socket "$D/control.sock" 2>&1)
[ "$out" = "job $JOB: worker 2200 joined; an epoch with it follows within the batch window; it must renew within $TIMEOUT_MS ms" ] &&
	ok "job join: $out" || not_ok "job join: '$out'"
[ "$out2" = "job $JOB: worker 2200 left; the next epoch is planned without it" ] &&
	wait_for 30 live_with "$JOB" 2 && grep -q "job $JOB: worker 2200 joined at a" "$D/control.log" &&
	ok "job leave: $out2" || not_ok "job leave: '$out2'"
bad=0
for args in "join $JOB a $A_IP" "join $JOB a $A_IP:0" "join $JOB a $A_IP:31000 0" "leave $JOB" \
	"leave $JOB 70000" "join x a $A_IP:31000"; do
	# shellcheck disable=SC2086
	"$CTL" job $args --socket "$D/control.sock" >/dev/null 2>&1
	[ $? = 2 ] || { bad=$((bad + 1)); echo "# job $args: not refused as usage"; }
done
out=$("$CTL" job join "$JOB" z "$A_IP:31000" --socket "$D/control.sock" 2>&1)
[ $bad = 0 ] && grep -q "field 'node'" <<<"$out" && live_with "$JOB" 2 &&
	ok "bad join and leave arguments refused (exit 2), an unknown site by the daemon: $out" ||
	not_ok "bad job join/leave: $bad, '$out'"

# ---- 6. a job's life from a launcher (docs/DEPLOYMENT.md, "A job's life from a launcher"):
# created at site a with its declared worker, grown by site b (a worker joins there),
# shrunk back (it leaves), deleted (the worker left is told) ----------------------------
jq '.jobs[0] | del(.id) | .workers |= map(select(.node == "a") | .port += 11) |
	.elastic = true | .max_workers = 4' "$D/deployment.json" >"$D/life.json"
cat >"$D/launcher.py" <<'PY'
import json
import sys
import georeduce

api, certs, op, arg = sys.argv[1:5]
tls = dict(cert=certs + "/control.pem", key=certs + "/control.key", ca=certs + "/ca.pem")
if op == "create":
    print(georeduce.Job.create(api, json.load(open(arg)), **tls).id)
else:
    georeduce.Job(int(arg), api, **tls).delete()
    print("deleted")
PY
launcher() {
	as_ctl env PYTHONPATH="$ROOT/python" GEOREDUCE_LIBRARY="$BUILD/lib/client/libgeoreduce.so" \
		LD_PRELOAD="${GEOREDUCE_PY_PRELOAD:-}" ASAN_OPTIONS=detect_leaks=0 \
		python3 "$D/launcher.py" "$API" "$CERTS" "$@"
}
# height LIFE: the live plan's tallest tree (0 ms while the job is at one site)
height() { status | jq ".jobs[] | select(.job == $1) | [.trees[].height_ms] | max"; }
# life_worker FIRST ROUNDS: the declared worker at a
life_worker() {
	ip netns exec "gre$$-s0" "$WK" --control "$API" --job "$LIFE" \
		--cert "$CERTS/workers-site0.pem" --key "$CERTS/workers-site0.key" \
		--ca "$CERTS/ca.pem" --worker-id 1000 --first-round "$1" --rounds "$2" \
		--timeout 20 >"$D/life-a.out" 2>&1
}
LIFE=$(launcher create "$D/life.json" 2>"$D/launcher.err")
if [ -n "$LIFE" ] && wait_for 30 live_with "$LIFE" 1 && [ "$(height "$LIFE")" = 0 ]; then
	ok "the launcher created job $LIFE (Job.create): live at site a, its one declared worker"
else
	not_ok "launcher: '$LIFE' $(cat "$D/launcher.err")"
fi
ip netns exec "gre$$-s1" "$WK" --control "$API" --job "$LIFE" \
	--cert "$CERTS/elastic-ab.pem" --key "$CERTS/elastic-ab.key" --ca "$CERTS/ca.pem" \
	--join-elastic "b:$B_IP:$((B_PORT + 13))" --first-round 0 --rounds 3 --timeout 20 \
	>"$D/life-b.out" 2>&1 &
LPID=$!
# The plan's height is read while the epoch with b is live: b leaves at its end, and the
# epoch after that is at site a alone again.
if wait_for 30 live_with "$LIFE" 2 && h=$(height "$LIFE") && life_worker 0 3 && wait $LPID &&
	[ "$(contribs "$D/life-a.out")" = 2 ] && [ "$(contribs "$D/life-b.out")" = 2 ] &&
	awk -v h="$h" 'BEGIN { exit !(h > 0) }'; then
	ok "grown by site b: a worker joined there, the plan spans a and b, 3 rounds of 2 contributors, exact"
else
	not_ok "growing by a site: height ${h:-?} ms; $(tail -qn 2 "$D/life-a.out" "$D/life-b.out")"
fi
if wait_for 30 live_with "$LIFE" 1 && life_worker 3 3 && [ "$(contribs "$D/life-a.out")" = 1 ] &&
	[ "$(height "$LIFE")" = 0 ]; then
	ok "shrunk: the worker at b left, the plan back at site a, 3 rounds of 1 contributor, exact"
else
	not_ok "shrinking: $(tail -2 "$D/life-a.out")"
fi
out=$(launcher delete "$LIFE" 2>&1)
if [ "$out" = deleted ] && ! life_worker 6 1 && grep -q "job $LIFE was deleted" "$D/life-a.out" &&
	! status | jq -e ".jobs[] | select(.job == $LIFE)" >/dev/null; then
	ok "deleted (Job.delete): gone from status, its worker told: $(tail -1 "$D/life-a.out")"
else
	not_ok "deleting: '$out' $(tail -2 "$D/life-a.out")"
fi

echo "elastic_e2e: $fails failed"
[ $fails = 0 ]
