#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# georeduce-control against three real georeduce-dataplane processes (net_null ports, no
# traffic) on the 3-site example deployment (examples/deployments/3site.json): every
# gateway gets the same live epoch of every job; a killed gateway makes the daemon install
# the next epoch on the other two without it; a restarted one is re-added with a new
# epoch; the three jobs' shares of every link add up to its capacity, each live plan within
# its shares, before and after the failure; garbage on the daemon's socket gets an error;
# bad deployment files exit 2 with one line naming the field.
#
#   control_e2e.sh CONTROL DATAPLANE DPCTL
set -u
CONTROL=$1
DP=$2
DPCTL=$3
source "$(dirname "$0")/clilib.sh"
P=grc$$
HB=100
source "$(dirname "$0")/nulldp.sh"

# ---- bad deployment files: exit 2, one line naming the field --------------------------
bad() { # description jq-filter expected-text
	jq "$2" "$EXAMPLE" >"$tmp/bad.json"
	expect 2 "bad deployment: $1" "$CONTROL" tables "$tmp/bad.json" --out "$tmp/badout"
	if ! grep -qF -- "$3" "$tmp/err"; then
		not_ok "bad deployment: $1: message lacks '$3': $(cat "$tmp/err")"
	fi
}
bad "unknown field" '.jobs[0].workres = 1' "field 'jobs[0].workres': unknown field"
bad "gateway ipv4" '.gateways[1].ipv4 = "10.99.0.256"' "field 'gateways[1].ipv4'"
bad "worker id of a gateway" '.jobs[1].workers[0].id = 2' "field 'jobs[1].workers[0].id'"
bad "algorithm" '.jobs[0].algorithm = "tree"' "field 'jobs[0].algorithm'"
bad "weight 0" '.jobs[1].weight = 0' "field 'jobs[1].weight': 0 is not in"
bad "weight a string" '.jobs[0].weight = "3"' "field 'jobs[0].weight': expected a number"
printf '{"format": "georeduce-deployment/1",\n "jobs": [,]}' >"$tmp/syntax.json"
expect 2 "bad deployment: JSON syntax names line and column" \
	"$CONTROL" run "$tmp/syntax.json" --socket "$tmp/x.sock"
grep -q "syntax.json:2:" "$tmp/err" || not_ok "syntax error position: $(cat "$tmp/err")"
expect 2 "run: bad option value" "$CONTROL" run "$EXAMPLE" --heartbeat-ms 0
expect 2 "run: no re-plan budget" "$CONTROL" run "$EXAMPLE" --replans-per-min 0
expect 2 "run: a failure budget below the re-plan budget" "$CONTROL" run "$EXAMPLE" \
	--replans-per-min 10 --failure-replans-per-min 5 --socket "$tmp/x.sock"
expect 2 "run: a negative minimum epoch age" "$CONTROL" run "$EXAMPLE" --min-epoch-ms -1

# ---- three dataplanes and the daemon ---------------------------------------------------
start_dps

# The counters through DPDK telemetry, read with DPDK's own client (package dpdk-dev):
# the sum over worker lcores, and lcore 1's with its drop reasons. net_null hands the
# dataplane empty frames, counted as not for us.
if printf '/georeduce/stats\n/georeduce/lcore,1\n/georeduce/lcore,7\n' |
	timeout 30 dpdk-telemetry.py -f "${P}a" >"$tmp/tel.out" 2>&1 &&
	python3 - "$tmp/tel.out" 2>"$tmp/tel.err" <<'PY'
import json, sys
docs = [json.loads(l[l.index("{"):]) for l in open(sys.argv[1]) if "{" in l]
st, lc = docs[0]["/georeduce/stats"], docs[1]["/georeduce/lcore"]
assert st["lcores"] == 1 and st["rx_packets"] > 0, st
assert st["not_for_us"] > 0 and st["chunks_completed"] == 0, st
assert lc["rx_packets"] > 0 and "bad_sender" in lc and "duplicate" in lc, lc
assert len(docs) == 3 and docs[2]["/georeduce/lcore"] is None, docs[2]  # no lcore 7
PY
then
	ok "telemetry: /georeduce/stats and /georeduce/lcore through dpdk-telemetry.py"
else
	not_ok "telemetry: $(tail -c 300 "$tmp/tel.out") $(tail -c 300 "$tmp/tel.err")"
fi

# Requests may wait 3 s: an activation waits for an RCU grace period, which on a loaded
# 2-core machine (other tests in parallel) can take over a second; a dataplane that took
# that long would be marked down and the epochs would churn. A killed one is seen at once
# (its socket refuses).
"$CONTROL" run "$tmp/deploy.json" --socket "$tmp/ctl.sock" --heartbeat-ms $HB \
	--fail-after 3 --timeout-ms 3000 2>"$tmp/daemon.log" &
daemon=$!

# live_epochs JOB GATEWAYS...: the live epoch of JOB on each gateway, space-separated.
live_epochs() {
	local job=$1 s e
	shift
	for s in "$@"; do
		e=$("$DPCTL" -s "$tmp/$s.sock" --json dump "$job" 2>/dev/null |
			jq -r '[.tables[] | select(.state == "live") | (.table.epoch // .epoch)]
				| max // "none"')
		printf '%s ' "${e:-none}"
	done
}
# wait_same JOB GATEWAYS...: wait until all gateways run one epoch (> floor); sets $epoch.
wait_same() {
	local job=$1 floor=$2 got first
	shift 2
	for _ in $(seq 600); do
		got=$(live_epochs "$job" "$@")
		first=${got%% *}
		if [ "$first" != none ] && [ "$first" -gt "$floor" ] &&
			[ "$(echo "$got" | tr ' ' '\n' | sort -u | grep -c .)" = 1 ]; then
			epoch=$first
			return 0
		fi
		sleep 0.1
	done
	echo "# live epochs of job $job on $*: $got" >&2
	return 1
}

for job in 1 2 3; do
	if wait_same $job 0 a b c; then
		ok "job $job: every gateway runs the same live epoch ($epoch)"
	else
		not_ok "job $job: gateways never agreed on a live epoch"
	fi
done
e1=$(live_epochs 1 a)
e1=${e1%% *}

expect 0 "status answers" "$CONTROL" status --socket "$tmp/ctl.sock"
grep -q "epoch $e1 live on a b c" "$tmp/out" || not_ok "status text: $(head -c 600 "$tmp/out")"
expect 0 "status --json" "$CONTROL" status --socket "$tmp/ctl.sock" --json
[ "$(jq -r '[.gateways[].state] | join(",")' "$tmp/out")" = "up,up,up" ] ||
	not_ok "status --json gateways: $(jq -c .gateways "$tmp/out")"
[ "$(jq '.jobs[0].trees | length' "$tmp/out")" -ge 1 ] ||
	not_ok "status --json: no trees for job 1"
[ "$(jq '.jobs[0].replans.start' "$tmp/out")" = 1 ] &&
	[ "$(jq '.hysteresis.min_epoch_ms' "$tmp/out")" = 10000 ] &&
	ok "status counts re-plans by cause and shows the hysteresis" ||
	not_ok "status --json re-plans: $(jq -c '.jobs[0] | {replans, replans_held}' "$tmp/out")"

# shares_ok WHAT: in the status in $tmp/out, the shares of the jobs that run add up to the
# capacity plans use on every link direction that is up (with none running, every job has
# the whole of each: it would run alone), and the live plans of the jobs not re-planning
# stay within their shares (docs/CONTROL.md, "Jobs share the WAN by weight").
shares_ok() {
	python3 - "$tmp/out" <<'PY' && ok "$1: the jobs' shares fill every link, plans within them" ||
import json, sys
s = json.load(open(sys.argv[1]))
cap = {(l["a"], l["b"]): [d["capacity_gbps"] for d in l["directions"]]
       for l in s["links"] if l["up"]}
tot = {}
running = [j for j in s["jobs"] if j["running"]]
for j in s["jobs"]:
    assert j["weight"] == 1, j["weight"]
    for l in j["links"]:
        for d in (0, 1):
            k = (l["a"], l["b"], d)
            if j["running"]:
                tot[k] = tot.get(k, 0) + l["share_gbps"][d]
            elif not running and k[:2] in cap:
                c = cap[k[:2]][d]
                assert abs(l["share_gbps"][d] - c) <= 1e-6 * c, (j["job"], l, c)
            assert j["state"] != "live" or \
                l["planned_gbps"][d] <= l["share_gbps"][d] * (1 + 1e-6), (j["job"], l)
for (a, b), c in cap.items():
    for d in (0, 1):
        assert not running or abs(tot.get((a, b, d), 0) - c[d]) <= 1e-6 * c[d], \
            (a, b, d, tot, c)
PY
		not_ok "$1: shares: $(jq -c '[.jobs[] | {job, state, links}]' "$tmp/out")"
}
shares_ok "three jobs"

# Garbage on the daemon's socket: an error answer with id null, and the daemon goes on.
resp=$(python3 - "$tmp/ctl.sock" <<'EOF'
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
body = b"this is not json"
s.sendall(struct.pack(">I", len(body)) + body)
n, = struct.unpack(">I", s.recv(4))
buf = b""
while len(buf) < n:
    buf += s.recv(n - len(buf))
print(json.dumps(json.loads(buf), sort_keys=True))
EOF
)
if [ "$(echo "$resp" | jq -r '"\(.ok) \(.errno) \(.id)"')" = "false 74 null" ]; then
	ok "garbage on the daemon's socket gets EBADMSG"
else
	not_ok "garbage on the daemon's socket: $resp"
fi
expect 1 "an unknown op is refused" "$DPCTL" -s "$tmp/ctl.sock" raw '{"version":1,"id":5,"op":"frobnicate"}'
expect 0 "the daemon still answers" "$CONTROL" status --socket "$tmp/ctl.sock"

# ---- kill gateway c: the next epoch goes to a and b without it -------------------------
kill -KILL "$dp_c"
if wait_same 1 "$e1" a b; then
	ok "gateway c killed: job 1 epoch $epoch live on a and b"
	e2=$epoch
	tb=$("$DPCTL" -s "$tmp/a.sock" --json dump 1 | jq -c '[.tables[] | select(.state ==
		"live") | .table.trees[] | [.parent.id, (.children[].id)]] | flatten | unique')
	if echo "$tb" | grep -q '\b3\b'; then
		not_ok "epoch $e2 at a still names gateway 3: $tb"
	else
		ok "epoch $e2 does not use gateway c"
	fi
else
	not_ok "no new epoch on a and b after c was killed"
	e2=$e1
fi
grep -q "gateway c .* is down" "$tmp/daemon.log" || not_ok "the log does not say c is down"
expect 0 "status after the failure" "$CONTROL" status --socket "$tmp/ctl.sock" --json
[ "$(jq -r '.gateways[2].state' "$tmp/out")" = down ] || not_ok "c not down in status"
shares_ok "c down"

# ---- c comes back: re-added with a new epoch -------------------------------------------
start_dp c 3
wait_dp c
if wait_same 1 "$e2" a b c; then
	ok "gateway c back: job 1 epoch $epoch live on a, b and c"
else
	not_ok "gateway c was not re-added"
fi

# ---- SIGTERM stops the daemon cleanly --------------------------------------------------
kill -TERM "$daemon"
for _ in $(seq 600); do kill -0 "$daemon" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$daemon" 2>/dev/null; then
	not_ok "the daemon did not stop on SIGTERM"
else
	wait "$daemon"
	rc=$?
	daemon=
	[ "$rc" = 0 ] && [ ! -e "$tmp/ctl.sock" ] && ok "SIGTERM: clean stop" ||
		not_ok "SIGTERM: exit $rc, socket left: $(ls "$tmp")"
fi
if [ "$fails" != 0 ] || [ -n "${CONTROL_E2E_LOG:-}" ]; then
	echo "# daemon log:"
	sed 's/^/#   /' "$tmp/daemon.log"
fi
echo "$n tests, $fails failed"
[ "$fails" = 0 ]
