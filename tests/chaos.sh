#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Chaos on the emulated 4-site AWS WAN (scripts/testbed, examples/topologies/aws-4region.json
# with Tokyo a relay site, a gateway and no workers): an mTree job and a CREW job run
# rounds back to back (scripts/testbed run, every result verified) while seeded faults
# strike one at a time: the gateway that roots most trees of the two jobs' live epochs
# killed, the one that roots fewest killed, a link cut, a burst of delay on a link, the
# control process killed. Each fault is repaired (the gateway or the control process
# started again, the link back up, its delay restored) once the control process has seen
# it, and each job must then complete a verified round that began after the fault within
# RECOVERY_S seconds of it (docs/DEPLOYMENT.md, "Chaos"). Checked: no wrong sum in any
# round, no process that was not killed died, every fault detected where it must be
# (gateways and links down in `status`), no link down but those cut, every recovery within
# the bound. Events are counted, nothing is timed tightly: it passes on a busy machine.
# Prints, per fault, the time from the fault to each job's next verified round and the
# epochs it made, and a summary per fault kind.
#
#   chaos.sh BUILD [FAULTS [SEED]]
#
# FAULTS [GEOREDUCE_CHAOS_FAULTS, 5]: with 5, one of each kind in a seeded order (the short
# run of the suite, a few minutes); more draws each kind at random. SEED
# [GEOREDUCE_CHAOS_SEED, 1] seeds the order, the gateways and the links.
set -u
BUILD=$(cd "${1:?usage: chaos.sh BUILD [FAULTS [SEED]]}" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FAULTS=${2:-${GEOREDUCE_CHAOS_FAULTS:-5}}
SEED=${3:-${GEOREDUCE_CHAOS_SEED:-1}}
TB=$ROOT/scripts/testbed
GEOREDUCE_ROOT=$ROOT
# shellcheck source=../scripts/lib/wan.sh
. "$ROOT/scripts/lib/wan.sh"
CTL=$BUILD/control/daemon/georeduce-control
RECOVERY_S=180 # from a fault to each job's next verified round
ROUND_S=20     # a round with no result for this long fails (and the next one starts)
fails=0
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; fails=$((fails + 1)); }

[[ $FAULTS =~ ^[1-9][0-9]*$ && $SEED =~ ^[0-9]+$ ]] || {
	echo "chaos: FAULTS must be >= 1 and SEED >= 0" >&2
	exit 2
}
if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
	echo "chaos: needs root and network namespaces; skipped"
	exit 77
fi
P=grch$$
D=$(mktemp -d /tmp/georeduce-chaos.XXXXXX)
W=$D/tb
mkdir -p "$D/r"
runners=()
finish() {
	echo "chaos: $fails failed (seed $SEED, $FAULTS faults; logs and rounds in $D)"
	[ "$fails" = 0 ]
	exit
}
cleanup() {
	touch "$D/stop"
	for p in "${runners[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	if [ -e "$W/down.sh" ]; then
		"$TB" down --dir "$W" --logs "$D/logs" >/dev/null 2>&1
	fi
	# Kept on failure, for the logs.
	[ "$fails" != 0 ] || rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now_ms() { date +%s%3N; }
status() { wan_status "$W" "$1"; }
until_true() { wan_until "$W" "$@"; }
# pick_gateway KIND PICK: the gateway rooting most trees of both jobs (gateway-root) or
# fewest (gateway-other), a tie broken by PICK.
pick_gateway() {
	"$CTL" status --socket "$W/control.sock" --json 2>/dev/null | python3 -c '
import json, sys
s = json.load(sys.stdin)
c = {g["name"]: sum(t["root"] == g["name"] for j in s["jobs"] for t in j["trees"])
     for g in s["gateways"]}
b = (max if sys.argv[1] == "gateway-root" else min)(c.values())
tied = sorted(g for g in c if c[g] == b)
print(tied[int(sys.argv[2]) % len(tied)])' "$1" "$2"
}
epochs() { status 'sum(j["epoch"] for j in s["jobs"])'; }

# The 4-site AWS WAN with Tokyo a relay (a gateway and no workers): a gateway whose kill
# cuts no worker off, beside those that do.
python3 -c 'import json, sys
t = json.load(open(sys.argv[1]))
for n in t["nodes"]:
    n["workers"] = 0 if n["id"] == "tokyo" else 1
json.dump(t, open(sys.argv[2], "w"))' "$ROOT/examples/topologies/aws-4region.json" "$D/topo.json"
if "$TB" up --build "$BUILD" --dir "$W" --topology "$D/topo.json" --workers topology \
	--scale 0.05 --jobs mtree,crew --elements 65536 --prefix "$P" >"$D/up.out" 2>&1; then
	ok "up: the 4-site AWS WAN (Tokyo a relay), an mTree job and a CREW job"
else
	not_ok "up"
	cat "$D/up.out"
	finish
fi

# runner JOB: rounds of the job back to back until $D/stop; per run, "start end ok" (ms,
# 1 if every worker verified its round) in $D/runs-JOB and the workers' JSON kept.
runner() {
	local j=$1 n=0 s rc f
	while [ ! -e "$D/stop" ]; do
		n=$((n + 1))
		s=$(now_ms)
		"$TB" run --dir "$W" --job "$j" --rounds 1 --timeout $ROUND_S >"$D/r/$j-$n.out" 2>&1 &&
			rc=1 || rc=0
		for f in "$W"/run-"$j"-*.json; do
			[ -e "$f" ] && cp "$f" "$D/r/$j-$n-${f##*-}"
		done
		echo "$s $(now_ms) $rc" >>"$D/runs-$j"
	done
}
# verified_since JOB T: the end (ms) of the job's first verified run that began at T or
# later; nothing if none yet.
verified_since() {
	[ -e "$D/runs-$1" ] && awk -v t="$2" '$1 >= t && $3 == 1 { print $2; exit }' "$D/runs-$1"
}
# recovered T: wait until both jobs have a verified run that began at T or later.
recovered() {
	local end=$((SECONDS + RECOVERY_S + ROUND_S + 30))
	until [ -n "$(verified_since 1 "$1")" ] && [ -n "$(verified_since 2 "$1")" ]; do
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.5
	done
}
for j in 1 2; do
	runner "$j" &
	runners+=($!)
done
t=$(now_ms)
recovered "$t" && ok "both jobs run verified rounds before any fault" ||
	{ not_ok "no verified round before the faults"; cat "$D"/r/*.out | tail -20; finish; }

# The faults, seeded: gateway kill of a root and of a non-root, a link cut, a delay burst,
# the control process killed. Five faults: each kind once; more: each drawn.
python3 - "$FAULTS" "$SEED" "$W/topology.json" >"$D/plan" <<'EOF'
import json, random, sys
n, seed = int(sys.argv[1]), int(sys.argv[2])
topo = json.load(open(sys.argv[3]))
kinds = ["gateway-root", "gateway-other", "link-cut", "delay-burst", "control-kill"]
rng = random.Random(seed)
order = rng.sample(kinds, len(kinds)) if n == len(kinds) else [rng.choice(kinds) for _ in range(n)]
for k in order:
    l = rng.choice(topo["links"])
    print(k, l["a"], l["b"], l["latency_ms"], rng.randrange(1 << 30))
EOF
all_up='all(g["state"] == "up" for g in s["gateways"]) and all(l["up"] for l in s["links"]) and all(j["state"] == "live" for j in s["jobs"])'
i=0
while read -r kind la lb lat pick; do
	i=$((i + 1))
	until_true 120 "$all_up" || not_ok "fault $i: the WAN is not whole before it: $(status 's["gateways"], s["links"]')"
	e0=$(epochs)
	what=$kind
	t0=$(now_ms)
	case $kind in
	gateway-*)
		gw=$(pick_gateway "$kind" "$pick")
		roots=$(status 'sum(t["root"] == "'"$gw"'" for j in s["jobs"] for t in j["trees"])')
		what="$kind $gw (root of $roots trees)"
		t0=$(now_ms)
		"$TB" gateway "$gw" kill --dir "$W" >>"$D/faults.log" 2>&1 || not_ok "fault $i: kill $gw"
		until_true 60 '[g["state"] for g in s["gateways"] if g["name"] == "'"$gw"'"] == ["down"]' ||
			not_ok "fault $i: $gw not seen down"
		"$TB" gateway "$gw" start --dir "$W" >>"$D/faults.log" 2>&1 || not_ok "fault $i: start $gw"
		;;
	link-cut)
		what="$kind $la-$lb"
		t0=$(now_ms)
		"$TB" link "$la" "$lb" --down --dir "$W" >>"$D/faults.log" 2>&1 || not_ok "fault $i: cut $la-$lb"
		until_true 60 'any(not l["up"] for l in s["links"] if {l["a"], l["b"]} == {"'"$la"'", "'"$lb"'"})' ||
			not_ok "fault $i: link $la-$lb not seen down"
		sleep 5 # rounds under the plan without it
		"$TB" link "$la" "$lb" --up --dir "$W" >>"$D/faults.log" 2>&1 || not_ok "fault $i: $la-$lb up"
		;;
	delay-burst)
		what="$kind $la-$lb 300 ms for 8 s"
		t0=$(now_ms)
		"$TB" link "$la" "$lb" --delay 300 --dir "$W" >>"$D/faults.log" 2>&1 || not_ok "fault $i: delay $la-$lb"
		sleep 8
		"$TB" link "$la" "$lb" --delay "$lat" --dir "$W" >>"$D/faults.log" 2>&1 ||
			not_ok "fault $i: delay $la-$lb back to $lat ms"
		;;
	control-kill)
		"$TB" control kill --dir "$W" >>"$D/faults.log" 2>&1 || not_ok "fault $i: control kill"
		sleep 3 # rounds go on under the live epochs
		"$TB" control start --dir "$W" >>"$D/faults.log" 2>&1 || not_ok "fault $i: control start"
		;;
	esac
	if recovered "$t0"; then
		r1=$(($(verified_since 1 "$t0") - t0))
		r2=$(($(verified_since 2 "$t0") - t0))
		ne=$(($(epochs) - e0))
		echo "$kind $r1 $r2 $ne" >>"$D/recoveries"
		[ "$r1" -le $((RECOVERY_S * 1000)) ] && [ "$r2" -le $((RECOVERY_S * 1000)) ] &&
			ok "fault $i, $what: next verified round of mTree $((r1 / 1000)).$((r1 % 1000 / 100)) s, CREW $((r2 / 1000)).$((r2 % 1000 / 100)) s after it; $ne epochs" ||
			not_ok "fault $i, $what: recovery $r1 ms, $r2 ms over ${RECOVERY_S} s"
	else
		not_ok "fault $i, $what: no verified round of both jobs since ($(tail -3 "$D/runs-1" "$D/runs-2" 2>/dev/null | tr '\n' ' '))"
	fi
done <"$D/plan"

touch "$D/stop"
for p in "${runners[@]}"; do wait "$p"; done
runners=()
# Every round's result: none wrong (a worker that found an element other than the sum
# says so: "element E is X, want Y"). Rounds that a fault cut (timed out) or completed
# without a failed site's workers (fewer contributors than --all-workers names) are
# counted, not failed: the next verified round is what recovery means.
python3 - "$D/r" >"$D/tally" <<'EOF' && ok "no wrong sum: $(cat "$D/tally")" || not_ok "a wrong sum: $(cat "$D/tally")"
import glob, json, re, sys
n = {"verified": 0, "without a failed site": 0, "cut": 0, "wrong": 0}
for f in glob.glob(sys.argv[1] + "/*.json"):
    try:
        doc = json.load(open(f))
    except ValueError:
        continue
    for w in doc["workers"]:
        err = w.get("error") or ""
        for r in w["rounds"]:
            if r["verified"]:
                n["verified"] += 1
            elif re.search(r"element \d+ is 0x[0-9a-f]+, want", err):
                n["wrong"] += 1
                print("%s: %s" % (f, err), file=sys.stderr)
            elif r["contrib"] >= 0:
                n["without a failed site"] += 1
            else:
                n["cut"] += 1
print(", ".join("%d %s" % (v, k) for k, v in n.items()) + " (worker rounds)")
sys.exit(n["wrong"] != 0 or n["verified"] == 0)
EOF
# No link taken for down that was not cut: a starved host's late probes must not look like
# a failure (docs/DEPLOYMENT.md, "Failures").
cut=$(awk '$1 == "link-cut" { print $2 "-" $3; print $3 "-" $2 }' "$D/plan" | sort -u)
false_downs=$(grep -o "link [a-z0-9-]* is down" "$W/control.log" | awk '{ print $2 }' |
	grep -vxF -f <(echo "${cut:-none}") | sort | uniq -c | tr '\n' ' ')
[ -z "$false_downs" ] && ok "no link down but those cut ($(grep -c "link [a-z0-9-]* is down" "$W/control.log") down events)" ||
	not_ok "links taken for down that were not cut: $false_downs"
# No process died that was not killed: every gateway and the control process run.
"$TB" gateway --list --dir "$W" >"$D/list" 2>&1
[ "$(awk 'NR > 1 && $3 == "-"' "$D/list" | wc -l)" = 0 ] && kill -0 "$(cat "$W/control.pid")" 2>/dev/null &&
	ok "every gateway and the control process are running" || not_ok "a process died: $(cat "$D/list")"
# Per kind: the time to the next verified round (either job), min/median/max, and epochs.
python3 - "$D/recoveries" <<'EOF'
import statistics, sys
by = {}
for line in open(sys.argv[1]):
    k, r1, r2, e = line.split()
    by.setdefault(k, []).append((int(r1) / 1e3, int(r2) / 1e3, int(e)))
print("# kind            faults  mTree s min/med/max    CREW s min/med/max     epochs/fault")
for k in sorted(by):
    v = by[k]
    f = lambda xs: "%.1f/%.1f/%.1f" % (min(xs), statistics.median(xs), max(xs))
    print("# %-16s %6d  %-20s  %-20s  %.1f" % (k, len(v), f([x[0] for x in v]),
          f([x[1] for x in v]), statistics.mean(x[2] for x in v)))
EOF
finish
