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
#                           carries on, rounds verified); down removes the namespaces and
#                           keeps the logs where it says
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
	finish
fi

BUILD=$(cd "${2:?usage: testbed.sh help | live BUILD}" && pwd)
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
# status FIELD-EXPRESSION: evaluate a Python expression over the daemon's status (s).
status() {
	"$CTL" status --socket "$W/control.sock" --json 2>/dev/null |
		python3 -c 'import json, sys; s = json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"
}
# until_true SECONDS EXPRESSION: wait for a status expression to print True.
until_true() {
	local end=$((SECONDS + $1))
	until [ "$(status "$2")" = True ]; do
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.2
	done
}

if "$TB" up --build "$BUILD" --dir "$W" --topology "$D/topo.json" --scale 1 \
	--jobs mtree,ring --elements 65536 --prefix "$P" >"$D/up.out" 2>&1; then
	ok "up: two sites, two jobs, the control process"
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
[ "$(status 's["jobs"][0]["epoch"]')" = "$e1" ] && grep -q "found live on 2 gateways" "$W/control.log" &&
	ok "it carried on epoch $e1" || not_ok "after the restart: $(tail -5 "$W/control.log")"
"$TB" run --dir "$W" --job 2 --rounds 2 >"$D/run2" 2>&1 && ok "rounds after the restart" ||
	{ not_ok "rounds after the control process's restart"; cat "$D/run2"; }

# down: the namespaces go, the logs stay where it says.
"$TB" down --dir "$W" --logs "$D/logs" >"$D/down" 2>&1 && ok "down" || not_ok "down: $(cat "$D/down")"
grep -q "logs kept in $D/logs" "$D/down" && [ -s "$D/logs/control.log" ] && [ -s "$D/logs/gw1.log" ] &&
	[ -e "$D/logs/run-1-0.json" ] && [ -d "$D/logs/tables" ] &&
	ok "down kept the logs in $D/logs" || not_ok "logs after down: $(ls "$D/logs" 2>&1)"
grep -q "is down" "$D/logs/control.log" || not_ok "the kept control log lacks b's failure"
[ ! -e "$W" ] && ! ip netns list | grep -q "^$P-" && ok "no namespace or directory left" ||
	not_ok "left after down: $(ip netns list | grep "^$P-")"
finish
