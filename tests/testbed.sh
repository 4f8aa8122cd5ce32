#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# scripts/testbed, the emulated WAN a tester drives.
#
#   testbed.sh help         --help of the script and of every command (no root): complete,
#                           and refused options, commands and arguments exit 1
#   testbed.sh live BUILD   a two-site testbed with its control process (root; skipped
#                           otherwise): rounds of two jobs at once; a link's delay changed
#                           while it runs (the probes' round trip follows); one gateway
#                           killed and started again (down, then up in a new epoch, rounds
#                           verified); the control process killed and started again (it
#                           carries on, rounds verified); killed again while rounds run and
#                           started again with a re-plan at once (a round begun while it
#                           was away follows the new epoch within 2 s plus a round); a job
#                           whose workers were killed mid-round goes on with a later round
#                           under the same epoch (the gateways give the abandoned round
#                           up), and so does a third job killed in a round that had gone
#                           past the slot pool, 101 rounds later; down removes the
#                           namespaces and keeps the logs where it says
#   testbed.sh ha BUILD     a two-site testbed with three control replicas on etcd (--ha,
#                           root; skipped otherwise): rounds; the leader killed, rounds
#                           through the new one (the workers given every replica's
#                           endpoint); the killed replica started again; the new leader
#                           killed in turn, rounds; down
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TB=$ROOT/scripts/testbed
fails=0
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; fails=$((fails + 1)); }
finish() {
	echo "testbed: $fails failed"
	[ "$fails" = 0 ]
	exit
}

if [ "${1:-}" = help ]; then
	out=$("$TB" --help) && ok "--help exits 0" || not_ok "--help exit status"
	for c in up run gateway control link down; do
		grep -Eq "^  $c +[a-z]" <<<"$out" || not_ok "--help does not describe '$c'"
	done
	# The last line is an example, whole: the text is not cut short.
	[ "$(tail -1 <<<"$out")" = "  scripts/testbed down" ] && ok "--help is complete" ||
		not_ok "--help ends with: $(tail -1 <<<"$out")"
	grep -q "docs/DEPLOYMENT.md" <<<"$out" || not_ok "--help does not say where the docs are"
	for c in up run gateway control link down; do
		for h in --help -h; do
			o=$("$TB" "$c" "$h" 2>&1) && head -1 <<<"$o" | grep -q "^Usage: scripts/testbed $c" ||
				{ not_ok "$c $h: $(head -2 <<<"$o")"; continue 2; }
		done
		ok "$c --help"
	done
	grep -q -- "--delay" <(
		"$TB" link --help
	) && grep -q "kill" <("$TB" gateway --help) && grep -q "logs" <("$TB" down --help) &&
		ok "the commands' help names their options" || not_ok "the commands' help"
	expect1() {
		local what=$1
		shift
		if "$TB" "$@" >/dev/null 2>"$D/err"; then
			not_ok "$what: accepted"
		elif [ "$(wc -l <"$D/err")" = 1 ] && grep -q "^error: " "$D/err"; then
			ok "$what: refused with one line"
		else
			not_ok "$what: $(cat "$D/err")"
		fi
	}
	D=$(mktemp -d)
	trap 'rm -rf "$D"' EXIT
	expect1 "no command"
	expect1 "an unknown command" frobnicate
	expect1 "an unknown option" run --bogus 1
	expect1 "link with one site" link a --delay 5
	expect1 "gateway without what to do" gateway a
	expect1 "control with two arguments" control start now
	expect1 "run with an argument" run 1
	expect1 "--ha with run" run --ha
	expect1 "--ha of 9 replicas" up --ha 9 --dir "$D/x"
	expect1 "--ha with --unix" up --ha --unix --dir "$D/x"
	expect1 "--control-opts with run" run --control-opts "--short-ms 1"
	expect1 "--control-opts with --unix" up --unix --control-opts "--short-ms 1" --dir "$D/x"
	expect1 "--replica with run" run --replica 1
	finish
fi

BUILD=$(cd "${2:?usage: testbed.sh help | live BUILD | ha BUILD}" && pwd)
if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
	echo "testbed: needs root and network namespaces; skipped"
	exit 77
fi
P=grtbt$$
D=$(mktemp -d /tmp/georeduce-testbed-e2e.XXXXXX)
W=$D/tb
# Two sites a and b, one worker each, 50 Mbit/s and 5 ms between them.
python3 -c 'import json, sys; json.dump({"format": "georeduce-topology/1", "name": "tb",
    "nodes": [{"id": n, "workers": 1} for n in "ab"],
    "links": [{"a": "a", "b": "b", "gbps": 0.05, "latency_ms": 5}]}, open(sys.argv[1], "w"))' \
	"$D/topo.json"
# Whatever happens, the testbed goes (down.sh is there until it went).
trap '[ ! -e "$W/down.sh" ] || "$TB" down --dir "$W" --discard-logs >/dev/null 2>&1; rm -rf "$D"' EXIT
trap 'exit 130' INT TERM
CTL=$BUILD/control/daemon/georeduce-control
GEOREDUCE_ROOT=$ROOT

if [ "$1" = ha ]; then
	# shellcheck source=../scripts/lib/wan.sh
	. "$ROOT/scripts/lib/wan.sh"
	if "$TB" up --topology "$D/topo.json" --scale 1 --jobs mtree --elements 65536 --ha \
		--build "$BUILD" --prefix "$P" --dir "$W" >"$D/up.out" 2>&1 &&
		grep -q "3 control replicas on etcd" "$D/up.out"; then
		ok "up --ha: $(grep -o '3 control replicas.*' "$D/up.out")"
	else
		not_ok "up --ha: $(tail -3 "$D/up.out")"
		finish
	fi
	rounds() { # WHAT: 2 rounds of job 1, every result verified
		if "$TB" run --dir "$W" --job 1 --rounds 2 --timeout 60 >"$D/run.out" 2>&1 &&
			[ "$(grep -c 'every result verified' "$D/run.out")" = 2 ]; then
			ok "$1: 2 rounds, every result verified"
		else
			not_ok "$1: $(tail -3 "$D/run.out")"
		fi
	}
	rounds "replica $(wan_ha_leader "$W") leading"
	first=$(wan_ha_leader "$W")
	"$TB" control kill --dir "$W" >"$D/kill.out" 2>&1 && second=$(wan_ha_leader "$W") &&
		[ "$second" != "$first" ] &&
		ok "control kill: the leader (replica $first) killed, replica $second leads" ||
		not_ok "control kill: $(tail -2 "$D/kill.out")"
	rounds "through the new leader"
	"$TB" control start --dir "$W" >"$D/start.out" 2>&1 && pid_of=$(cat "$W/control-$first.pid") &&
		kill -0 "$pid_of" && ok "control start: replica $first runs again, a follower" ||
		not_ok "control start: $(tail -2 "$D/start.out")"
	"$TB" control kill --dir "$W" >"$D/kill.out" 2>&1 && third=$(wan_ha_leader "$W") &&
		[ "$third" != "$second" ] &&
		ok "control kill again: replica $second killed, replica $third leads" ||
		not_ok "control kill again: $(tail -2 "$D/kill.out")"
	rounds "through the third leader"
	"$TB" down --dir "$W" --logs "$D/logs" >/dev/null 2>&1 && [ ! -e "$W" ] &&
		ls "$D/logs"/control-0.log "$D/logs"/etcd-0.log >/dev/null 2>&1 &&
		ok "down: gone, the replicas' and etcd's logs kept" || not_ok "down with replicas"
	finish
fi
# shellcheck source=../scripts/lib/wan.sh
. "$ROOT/scripts/lib/wan.sh"
status() { wan_status "$W" "$1"; }
until_true() { wan_until "$W" "$@"; }

# A control option the control process refuses: up fails at once, saying so, and leaves
# nothing behind.
if "$TB" up --build "$BUILD" --dir "$D/bad" --topology "$D/topo.json" --scale 1 --jobs mtree \
	--elements 4096 --prefix "${P}b" --control-opts "--bogus 1" >"$D/bad.out" 2>&1; then
	not_ok "up with --control-opts \"--bogus 1\": accepted"
elif grep -q "the control process exited" "$D/bad.out" &&
	! ip netns list | grep -q "^${P}b-"; then
	ok "up with a control option the control process refuses: $(tail -1 "$D/bad.out")"
else
	not_ok "up with --control-opts \"--bogus 1\": $(tail -3 "$D/bad.out")"
fi

# A link must carry less than planned for 10 minutes before the control process plans
# with its measured capacity: on a host starved of CPU the links look short, and such a
# re-plan between a killed round and its restart would leave the far-ahead check below
# nothing to judge (it is tried three times, and a loaded host can re-plan in each).
if "$TB" up --build "$BUILD" --dir "$W" --topology "$D/topo.json" --scale 1 \
	--jobs mtree,ring,mtree --elements 65536,65536,4000000 --prefix "$P" \
	--control-opts "--short-ms 600000" >"$D/up.out" 2>&1; then
	ok "up: two sites, three jobs, the control process"
else
	not_ok "up"
	cat "$D/up.out" "$W"/*.log 2>/dev/null | tail -30
	finish
fi
for s in 0 1; do
	ip netns list | grep -q "^$P-s$s\b" || not_ok "no namespace $P-s$s"
done
ip netns list | grep -q "^$P-ctl\b" && ok "namespaces $P-s0, $P-s1, $P-ctl" ||
	not_ok "no namespace $P-ctl"
"$TB" gateway --list --dir "$W" >"$D/list" && grep -q "^b  *$P-s1  *[0-9]" "$D/list" &&
	ok "gateway --list" || not_ok "gateway --list: $(cat "$D/list")"

# Two jobs' rounds at once: each job's workers have a port of their own. Job 1's worker
# at site b is stopped (SIGSTOP) as soon as it runs, so that job 1's round stays open at
# site a while job 2's rounds run through the same hosts; then it goes on.
"$TB" run --dir "$W" --job 1 --rounds 3 >"$D/run1" 2>&1 &
r1=$!
wpid=
for _ in $(seq 600); do
	for p in $(ip netns pids "$P-s1" 2>/dev/null); do
		tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q "georeduce-worker.* --job 1 " &&
			wpid=$p
	done
	[ -n "$wpid" ] && break
	sleep 0.1
done
[ -n "$wpid" ] && kill -STOP "$wpid"
"$TB" run --dir "$W" --job 2 --rounds 3 >"$D/run2" 2>&1 && r2=0 || r2=1
[ -n "$wpid" ] && kill -CONT "$wpid"
[ -n "$wpid" ] && kill -0 "$r1" 2>/dev/null && [ $r2 = 0 ] && wait $r1 &&
	[ "$(cat "$D/run1" "$D/run2" | grep -c 'every result verified')" = 6 ] &&
	ok "two jobs run rounds at once (job 2's while job 1's are open), every result verified" ||
	{ not_ok "two jobs at once (job 1's worker at b: ${wpid:-not found})"; cat "$D/run1" "$D/run2"; }
wait $r1 2>/dev/null

# worker SITE_INDEX ROUND START_AT [NAME [JOB]]: job JOB's [1] worker of that site, one
# round, in the background; its output in $D/NAME-SITE_INDEX.json and .err [held].
# START_AT +N: N seconds after the worker starts (the lookups below take seconds on a
# loaded machine), the time given in $START_AT.
worker() {
	local ns ids pki api at=$3
	ns=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[int(sys.argv[2])]["ns"])' \
		"$W/sites.json" "$1")
	ids=$(python3 -c 'import json, sys
print(" ".join("--worker-id %d" % w["id"] for w in json.load(open(sys.argv[1]))[int(sys.argv[2])]["workers"]))' \
		"$W/sites.json" "$1")
	all=$(python3 -c 'import json, sys
print(",".join(str(w["id"]) for s in json.load(open(sys.argv[1])) for w in s["workers"]))' "$W/sites.json")
	pki=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["pki"])' "$W/control.json")
	api=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["api"])' "$W/control.json")
	[ "${at#+}" = "$at" ] || at=$(($(date +%s) + ${at#+}))
	START_AT=$at
	# shellcheck disable=SC2086
	ip netns exec "$ns" "$BUILD/tools/worker/georeduce-worker" --control "$api" --job "${5:-1}" \
		--cert "$pki/workers-site$1.pem" --key "$pki/workers-site$1.key" --ca "$pki/ca.pem" \
		$ids --all-workers "$all" --rounds 1 --first-round "$2" --start-at "$at" \
		--timeout 120 --json >"$D/${4:-held}-$1.json" 2>"$D/${4:-held}-$1.err" &
}
DPCTL=$BUILD/tools/dpctl/georeduce-dpctl
# Slots that gave a round up, at both gateways.
given_up() {
	local n=0 v g
	for g in gw0 gw1; do
		v=$("$DPCTL" --socket "$W/$g.sock" --json stats 2>/dev/null | python3 -c 'import json, sys
print(sum(l["rounds_given_up"] for l in json.load(sys.stdin)["lcores"]))') || v=0
		n=$((n + ${v:-0}))
	done
	echo "$n"
}

# A link's delay, changed while it runs: the gateways' probes see the new round trip.
"$TB" link a b --delay 150ms --dir "$W" >"$D/link" 2>&1 && ok "link a b --delay 150ms" ||
	not_ok "link --delay: $(cat "$D/link")"
until_true 120 'any(d["rtt_ms"] is not None and d["rtt_ms"] > 250 for l in s["links"] for d in l["directions"])' &&
	ok "the probes' round trip is above 250 ms" ||
	not_ok "round trip after the delay: $(status 's["links"]')"
"$TB" link a b --delay 5 --dir "$W" >"$D/link" 2>&1 || not_ok "link --delay 5: $(cat "$D/link")"
"$TB" link a b --rate 20 --dir "$W" >"$D/link" 2>&1 &&
	tc -n "$P-s0" qdisc show dev wan0 | grep -q "rate 20Mbit" && ok "link a b --rate 20" ||
	not_ok "link --rate: $(cat "$D/link"; tc -n "$P-s0" qdisc show dev wan0)"
"$TB" link a b --delay 99999 --dir "$W" >/dev/null 2>&1 && not_ok "a delay of 99999 ms accepted" ||
	ok "a delay out of range refused"

# One gateway killed and started again.
e0=$(status 's["jobs"][0]["epoch"]')
"$TB" gateway b kill --dir "$W" >/dev/null 2>&1 && ok "gateway b killed" || not_ok "gateway kill"
until_true 120 '[g["state"] for g in s["gateways"]] == ["up", "down"]' &&
	ok "the control process found b down" || not_ok "b not down: $(status 's["gateways"]')"
"$TB" gateway b start --dir "$W" >"$D/gw" 2>&1 && ok "gateway b started again" ||
	not_ok "gateway start: $(cat "$D/gw")"
until_true 120 'all(j["gateways"] == ["a", "b"] and j["state"] == "live" and j["epoch"] > '"$e0"' for j in s["jobs"])' &&
	ok "every job in a new epoch with b again" || not_ok "b not back: $(status 's["jobs"]')"
"$TB" run --dir "$W" --job 1 --rounds 2 >"$D/run1" 2>&1 && ok "rounds after b's restart" ||
	{ not_ok "rounds after b's restart"; cat "$D/run1"; }

# The control process killed and started again: it carries on the live epochs.
e1=$(status 's["jobs"][0]["epoch"]')
"$TB" control kill --dir "$W" >/dev/null 2>&1 && ! status 1 >/dev/null 2>&1 &&
	ok "control process killed" || not_ok "control kill"
"$TB" control start --dir "$W" >"$D/ctl" 2>&1 && ok "control process started again" ||
	not_ok "control start: $(cat "$D/ctl")"
tr '\0' ' ' <"/proc/$(cat "$W/control.pid")/cmdline" | grep -q -- "--short-ms 600000" &&
	ok "... with the options of up --control-opts" ||
	not_ok "control start without --control-opts: $(tr '\0' ' ' <"/proc/$(cat "$W/control.pid")/cmdline")"
[ "$(status 's["jobs"][0]["epoch"]')" = "$e1" ] && grep -q "found live on 2 gateways" "$W/control.log" &&
	ok "it carried on epoch $e1" || not_ok "after the restart: $(tail -5 "$W/control.log")"
"$TB" run --dir "$W" --job 2 --rounds 2 >"$D/run2" 2>&1 && ok "rounds after the restart" ||
	{ not_ok "rounds after the control process's restart"; cat "$D/run2"; }

# Workers follow a control process that restarts and re-plans at once (docs/CLIENT.md,
# georeduce-worker --control). Site a's worker joins job 1 and is to begin its round 10 s
# later (--start-at); meanwhile the control process is killed, so the round begins while it
# is away, under the live epoch, and stays open: site b's worker is not there yet. The
# control process starts again and re-plans job 1 at once; once the new epoch is live, b's
# worker starts. The round must complete under the new epoch within 2 s plus a round of b
# beginning it, where a round that learnt of the epoch only at its timeout would take 60 s
# more. The kill must come before a's round begins: 12 s after the worker starts, which
# leaves it 5 s to join and the kill 7 s on a loaded machine.
round=$(($(date +%s) % 100000000 * 16 + 8))
worker 0 "$round" +12
wa=$!
start_at=$START_AT
sleep 5 # a's worker joins
"$TB" control kill --dir "$W" >/dev/null 2>&1 || not_ok "control kill (2)"
[ "$(date +%s)" -lt "$start_at" ] || not_ok "the control process was killed after a's round began"
# a's round begins without the control process, and waits for b
while [ "$(date +%s)" -le $((start_at + 1)) ]; do sleep 0.2; done
"$TB" control start --dir "$W" >"$D/ctl" 2>&1 || not_ok "control start (2): $(cat "$D/ctl")"
e2=$(status 's["jobs"][0]["epoch"]')
"$CTL" replan --socket "$W/control.sock" 1 >"$D/replan" 2>&1 || not_ok "replan: $(cat "$D/replan")"
until_true 120 's["jobs"][0]["epoch"] > '"$e2"' and s["jobs"][0]["state"] == "live"' ||
	not_ok "no new epoch after the re-plan: $(status 's["jobs"][0]')"
e3=$(status 's["jobs"][0]["epoch"]')
worker 1 "$round" 0
wb=$!
wait $wa
ra=$?
wait $wb
rb=$?
if [ $ra = 0 ] && [ $rb = 0 ]; then
	# b's round, from its start to its result, holds whatever a's round still needed: had
	# a not followed the new epoch, b would have waited for a's timeout. "A round": the
	# plan's prediction.
	v=$(python3 - "$D" "$e3" "$W/tables/job-1-plan.json" <<'EOF'
import json, sys
d, e3 = sys.argv[1], int(sys.argv[2])
docs = [json.load(open("%s/held-%d.json" % (d, i))) for i in (0, 1)]
ok = all(doc["ok"] and doc["epoch"] == e3 and all(r["verified"] for w in doc["workers"]
         for r in w["rounds"]) for doc in docs)
a, b = (doc["workers"][0] for doc in docs)
print("%d %d %.3f %.3f %.3f" % (ok, a["stats"]["cancels"], a["rounds"][0]["ms"] / 1e3,
      b["rounds"][0]["ms"] / 1e3, json.load(open(sys.argv[3]))["predicted"]["allreduce_seconds"]))
EOF
	) && read -r verified cancels held after round <<<"$v" && [ "$verified" = 1 ] &&
		[ "$cancels" -ge 1 ] && python3 -c "import sys; sys.exit(not $after <= 2 + $round)" &&
		ok "a round begun while the control process was away (held $held s) completed under epoch $e3, $after s after b's worker began it (a round: $round s)" ||
		{ not_ok "the held round (verified, a's cancels, a's time, b's time, a round): ${v:-}"; cat "$D"/held-*; }
else
	not_ok "the round held across the control process's restart (a: $ra, b: $rb)"
	cat "$D"/held-*.err
fi

# A restarted job (docs/CLIENT.md, PROTOCOL.md 10.1 rule 7): site a's worker begins a round
# alone and is killed in it (its CONTRIBs wait in the root's slots for b's, which never
# come); then both sites' workers start a later round under the same epoch. The gateways
# give the abandoned round up once every contributor is past it, and the later round
# completes, verified, without a re-plan.
e4=$(status 's["jobs"][0]["epoch"]')
g0=$(given_up)
r0=$(($(date +%s) % 100000000 * 16 + 40))
worker 0 "$r0" 0 gone
wg=$!
sleep 3
kill -9 "$(ip netns pids "$P-s0" | while read -r p; do
	tr '\0' ' ' <"/proc/$p/cmdline" | grep -q "georeduce-worker.* --first-round $r0 " && echo "$p"
done | head -1)" 2>/dev/null
wait $wg 2>/dev/null
worker 0 $((r0 + 16)) 0 again
wa=$!
worker 1 $((r0 + 16)) 0 again
wb=$!
wait $wa && wait $wb && python3 - "$D" "$e4" <<'EOF' && [ "$(given_up)" -gt "${g0:-0}" ] &&
import json, sys
docs = [json.load(open("%s/again-%d.json" % (sys.argv[1], i))) for i in (0, 1)]
assert all(d["ok"] and d["epoch"] == int(sys.argv[2]) and
           all(r["verified"] for w in d["workers"] for r in w["rounds"]) for d in docs)
EOF
	ok "a restarted job's later round went through under epoch $e4 ($(($(given_up) - g0)) slots gave the abandoned round up)" ||
	{ not_ok "the restarted job's round (given up: $(given_up), before $g0)"; cat "$D"/again-*.err "$D"/gone-0.err; }

# A job restarted far ahead of a round that had gone past the slot pool: job 3 (an mTree of
# one tree of 256 slots, 11,364 chunks; run only here, so that the checks above see the
# jobs they always did) runs a round at both sites, alone on the links; its workers are
# killed once gateway a has done 1,200 of the round's chunks (the tree's slots then hold
# chunks a pool or more into the tensor, OPEN or COMPLETE) and before its end; both start
# again 101 rounds later, a number of rounds that is no multiple of the pool. The
# restarted round's first chunks meet slots that other chunks of the abandoned round
# hold: those are given up too, and the round completes, verified, under the same epoch.
done2() {
	job3 gw0 chunks_done
}
# job3 GW FIELD: job 3's FIELD (summed over its epochs) in gateway GW's stats.
job3() {
	"$DPCTL" --socket "$W/$1.sock" --json stats 2>/dev/null | python3 -c 'import json, sys
print(sum(j[sys.argv[1]] for j in json.load(sys.stdin)["jobs"] if j["job"] == 3))' "$2" || echo 0
}
# kill_far SITE: kill the far-gone worker of SITE.
kill_far() {
	kill -9 "$(ip netns pids "$P-s$1" | while read -r p; do
		tr '\0' ' ' <"/proc/$p/cmdline" | grep -q "georeduce-worker.* --first-round $r0 " && echo "$p"
	done | head -1)" 2>/dev/null
}
# far_attempt: one try; sets far (ok, replan, again or fail) and says why in far_why.
far_attempt() {
	local e0 e5 g0 c0 c1 r0 start_at wg0 wg1 wa wb v held
	until_true 120 'not any(j["running"] for j in s["jobs"]) and all(j["state"] == "live" for j in s["jobs"])' ||
		{ far=fail far_why="jobs still running: $(status '[(j["job"], j["running"], j["state"]) for j in s["jobs"]]')"; return; }
	g0=$(given_up)
	c0=$(done2)
	e0=$(status '[j["epoch"] for j in s["jobs"] if j["job"] == 3][0]')
	r0=$(($(date +%s) % 100000000 * 16 + 48))
	start_at=$(($(date +%s) + 3))
	worker 0 "$r0" "$start_at" far-gone 3
	wg0=$!
	worker 1 "$r0" "$start_at" far-gone 3
	wg1=$!
	for _ in $(seq 1200); do
		[ "$(done2)" -lt $((c0 + 1200)) ] || break
		sleep 0.1
	done
	# b's worker first: a's goes on with the RESULTs of what b's had sent, up to a window
	# past it, and those chunks' slots at a stay OPEN without b (killed together, the two
	# may leave every slot complete, and the restart would have nothing to give up).
	kill_far 1
	for _ in $(seq 100); do
		[ "$(job3 gw0 chunks_in_flight)" -eq 0 ] || break
		sleep 0.1
	done
	kill_far 0
	wait $wg0 2>/dev/null
	wait $wg1 2>/dev/null
	c1=$(done2)
	held=$(($(job3 gw0 chunks_in_flight) + $(job3 gw1 chunks_in_flight)))
	e5=$(status '[j["epoch"] for j in s["jobs"] if j["job"] == 3][0]')
	# Killed within the round, past the pool: 1,200 chunks done or more, fewer than all.
	[ $((c1 - c0)) -ge 1200 ] && [ $((c1 - c0)) -lt 11364 ] ||
		{ far=fail far_why="not killed within the round: $((c1 - c0)) chunks done at a"; return; }
	# Slots left holding the abandoned round, or nothing for the restart to give up.
	[ "$held" -gt 0 ] ||
		{ far=again far_why="no slot held the abandoned round after the kills ($((c1 - c0)) chunks done at a)"; return; }
	worker 0 $((r0 + 101)) 0 far 3
	wa=$!
	worker 1 $((r0 + 101)) 0 far 3
	wb=$!
	wait $wa && wait $wb || { far=fail far_why="$(tail -n 3 "$D"/far-[01].err)"; return; }
	v=$(python3 - "$D" "$e5" <<'EOF'
import json, sys
docs = [json.load(open("%s/far-%d.json" % (sys.argv[1], i))) for i in (0, 1)]
ok = all(d["ok"] and all(r["verified"] for w in d["workers"] for r in w["rounds"]) for d in docs)
same = all(d["epoch"] == int(sys.argv[2]) for d in docs)
print("ok" if ok and same else "replan" if ok else "fail",
      [d["epoch"] for d in docs], [round(r["ms"]) for d in docs for w in d["workers"] for r in w["rounds"]])
EOF
	)
	far=${v%% *}
	# A re-plan during the killed round (a link measured short, say) put the restarted
	# round in fresh slots: nothing to judge either.
	[ "$far" != ok ] || [ "$e0" = "$e5" ] || far=replan
	far_why="begun under epoch $e0, killed after $((c1 - c0)) of 11364 chunks under epoch $e5 ($held slots held); restarted round: epochs and ms ${v#* }; slots given up $(($(given_up) - g0))"
	[ "$far" != ok ] || [ "$(given_up)" -gt "$g0" ] || far=fail
}
# A re-plan between the kill and the restarted round's end (the control process's own,
# for the links), or kills that left no slot held, leave nothing to judge: the scenario
# again, up to three times.
for try in 1 2 3; do
	far_attempt
	case $far in
	replan) echo "# try $try: a re-plan came between: $far_why" ;;
	again) echo "# try $try: $far_why" ;;
	*) break ;;
	esac
done
[ "$far" = ok ] && ok "job 3, killed in a round past the slot pool and restarted 101 rounds later, went through: $far_why" ||
	{
		not_ok "job 3 restarted far ahead: $far ($far_why)"
		grep "job 3" "$W/control.log" | tail -n 20
	}

# down: the namespaces go, the logs stay where it says.
"$TB" down --dir "$W" --logs "$D/logs" >"$D/down" 2>&1 && ok "down" || not_ok "down: $(cat "$D/down")"
grep -q "logs kept in $D/logs" "$D/down" && [ -s "$D/logs/control.log" ] && [ -s "$D/logs/gw1.log" ] &&
	[ -e "$D/logs/run-1-0.json" ] && [ -d "$D/logs/tables" ] &&
	ok "down kept the logs in $D/logs" || not_ok "logs after down: $(ls "$D/logs" 2>&1)"
grep -q "is down" "$D/logs/control.log" || not_ok "the kept control log lacks b's failure"
[ ! -e "$W" ] && ! ip netns list | grep -q "^$P-" && ok "no namespace or directory left" ||
	not_ok "left after down: $(ip netns list | grep "^$P-")"
finish
