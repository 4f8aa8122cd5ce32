#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The deployment across hosts, on the emulated WAN with its management network
# (scripts/lib/testbed.py --tls): georeduce-control in a namespace of its own installs
# every gateway over TLS 1.3 with certificates made for the run, and workers join their
# job through it. Checked: the gateways installed over TLS from the control namespace;
# refused, each logged with the peer and counted: no client certificate, a certificate
# of another CA, an expired one, a monitor certificate trying to install, plain TCP,
# TLS 1.2; 64 idle connections to every gateway's TLS port and 64 to its unix socket
# held while the control process re-plans (it must succeed); a worker of another id and
# one the deployment does not name refused; the control process killed and restarted
# mid-job (the job goes on, no epoch is installed, the next re-plan works); workers that
# joined through the control process follow a re-plan after a gateway failure, every
# result exact; Python clients (georeduce.Client.from_control) join the new epoch, and
# one with another worker's certificate is refused.
#
#   tls_e2e.sh BUILD_DIR
set -u
BUILD=$(cd "$1" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
fails=0

if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
	echo "tls_e2e: needs root and network namespaces; skipped"
	exit 77
fi
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; fails=$((fails + 1)); }

GEOREDUCE_ROOT=$ROOT
# shellcheck source=../scripts/lib/wan.sh
. "$ROOT/scripts/lib/wan.sh"
D=$(mktemp -d /tmp/georeduce-tls-e2e.XXXXXX)
holders=()
cleanup() {
	for p in "${holders[@]}"; do kill "$p" 2>/dev/null; done
	wan_control_stop "$D"
	wan_down "$D"
	rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

CTL=$BUILD/control/daemon/georeduce-control
DPCTL=$BUILD/tools/dpctl/georeduce-dpctl
WK=$BUILD/tools/worker/georeduce-worker
PKI=$ROOT/scripts/georeduce-pki
quick=${GEOREDUCE_TEST_QUICK:-0}
ROUNDS=$([ "$quick" != 0 ] && echo 20 || echo 30)

cat >"$D/topo.json" <<'JSON'
{"format": "georeduce-topology/1", "name": "tls-e2e",
 "nodes": [{"id": "a", "workers": 1}, {"id": "b", "workers": 1}, {"id": "c", "workers": 0}],
 "links": [{"a": "a", "b": "b", "gbps": 0.02, "latency_ms": 4},
           {"a": "a", "b": "c", "gbps": 0.05, "latency_ms": 2},
           {"a": "c", "b": "b", "gbps": 0.05, "latency_ms": 2}]}
JSON
if wan_up "$D" "$D/topo.json" "$BUILD" --scale 1 --workers-from-topology --jobs mtree \
	--elements 131072 --prefix "grt$$" --tls; then
	ok "3 sites, a control namespace and the management network up"
else
	not_ok "emulated WAN with TLS"
	cat "$D"/gw*.log
	exit 1
fi
NS=$(wan_ctl "$D" ns)
CERTS=$(wan_ctl "$D" pki)
API=$(wan_ctl "$D" api)
EP0=tls://10.98.0.2:7300
as_ctl() { ip netns exec "$NS" "$@"; }
# dp_as NAME COMMAND...: georeduce-dpctl to gateway a from the control namespace, with
# the certificate NAME (in $CERTS, or a path without .pem).
dp_as() {
	local c=$1
	shift
	[ "${c#/}" = "$c" ] && c=$CERTS/$c
	as_ctl "$DPCTL" -s "$EP0" --cert "$c.pem" --key "$c.key" --ca "$CERTS/ca.pem" \
		--server-name a "$@"
}
live_epoch() { # SITE_INDEX: job 1's live epoch there
	wan_dpctl "$D" "$1" --json dump 1 2>/dev/null |
		jq -r '[.tables[] | select(.state == "live") | .table.epoch] | max // "none"'
}
all_live() { # EPOCH: job 1 live at that epoch on every gateway given (site indexes)
	local e=$1 s
	shift
	for s in "$@"; do [ "$(live_epoch "$s")" = "$e" ] || return 1; done
}
wait_for() { # SECONDS COMMAND...: until it succeeds
	local n=$(($1 * 10))
	shift
	for _ in $(seq "$n"); do "$@" && return 0; sleep 0.1; done
	return 1
}
refused() { # REASON: gateway a's counter of that refusal
	dp_as monitor --json stats | jq -r ".control.refused.$1"
}

# ---- 1. the control process installs every gateway over TLS from its namespace --------
wan_control_start "$D" --heartbeat-ms 200 --fail-after 3 --timeout-ms 3000
if wan_control_wait "$D" && all_live 1 0 1 2 &&
	grep -q "gateway a (id 1, tls://10.98.0.2:7300) is up" "$D/control.log"; then
	ok "job 1 installed over TLS from the control namespace: epoch 1 on a, b, c"
else
	not_ok "installing over TLS"
	tail -20 "$D/control.log"
fi
dp_as monitor ping >/dev/null && ok "a monitor certificate may read (ping)" ||
	not_ok "monitor ping"

# ---- 2. refusals, each one line in the gateway's log and a counter --------------------
hs0=$(refused handshake)
fb0=$(refused forbidden)
"$PKI" ca "$D/other" && "$PKI" cert "$D/other" control control &&
	"$PKI" cert "$CERTS" old control --days -1 || not_ok "pki"
if dp_as "$D/other/control" ping >/dev/null 2>"$D/err"; then
	not_ok "a certificate of another CA was accepted"
else
	ok "refused: a certificate of another CA ($(cat "$D/err"))"
fi
dp_as old ping >/dev/null 2>"$D/err" && not_ok "an expired certificate was accepted" ||
	ok "refused: an expired certificate ($(cat "$D/err"))"
dp_as monitor install "$D/tables/job-1-a.json" >/dev/null 2>"$D/err"
rc=$?
[ $rc = 1 ] && grep -q "Operation not permitted" "$D/err" &&
	ok "refused: a monitor certificate trying to install (EPERM)" ||
	not_ok "monitor install: exit $rc: $(cat "$D/err")"
# TLS 1.3: the server's verdict on the client comes after the client's handshake; keep
# the client reading for a moment.
sleep 1 | as_ctl timeout 10 openssl s_client -connect 10.98.0.2:7300 -CAfile "$CERTS/ca.pem" \
	-verify_return_error >"$D/s1" 2>&1
grep -qi "alert certificate required" "$D/s1" && ok "refused: no client certificate" ||
	not_ok "no client certificate: $(tail -3 "$D/s1")"
as_ctl timeout 10 openssl s_client -connect 10.98.0.2:7300 -tls1_2 -CAfile "$CERTS/ca.pem" \
	-cert "$CERTS/control.pem" -key "$CERTS/control.key" </dev/null >"$D/s2" 2>&1
grep -qi "alert protocol version" "$D/s2" && ok "refused: TLS 1.2" ||
	not_ok "TLS 1.2: $(tail -3 "$D/s2")"
as_ctl python3 - <<'PY' && ok "refused: plain TCP (no answer)" || not_ok "plain TCP was answered"
import json, socket, struct, sys
s = socket.create_connection(("10.98.0.2", 7300), timeout=5)
body = json.dumps({"version": 1, "id": 1, "op": "ping"}).encode()
s.sendall(struct.pack(">I", len(body)) + body)
try:
    data = s.recv(4096)
except OSError:
    data = b""
sys.exit(0 if b'"ok"' not in data else 1)
PY
wait_for 10 test "$(refused handshake)" -ge $((hs0 + 5)) &&
	ok "5 failed handshakes counted ($(refused handshake) in all)" ||
	not_ok "handshake refusals counted: $(refused handshake) (were $hs0)"
[ "$(refused forbidden)" -gt "$fb0" ] && ok "the monitor's install counted" ||
	not_ok "forbidden not counted"
n=$(grep -c "control: refused 10.98.0.1:[0-9]* " "$D/gw0.log")
for why in "unable to get local issuer certificate" "certificate has expired" \
	"did not return a certificate" "unsupported protocol" "needs the role 'control'"; do
	grep "control: refused 10.98.0.1:" "$D/gw0.log" | grep -q "$why" ||
		not_ok "no log line with '$why'"
done
[ "$n" -ge 6 ] && ok "$n refusals logged with the peer's address and the reason" ||
	not_ok "refusals in the log: $n"

# ---- 3. 64 idle connections on every gateway while the control process re-plans ------
cat >"$D/hold.py" <<'PY'
import socket, sys, time
conns = []
for _ in range(64):
    if sys.argv[1] == "-":
        s = socket.socket(socket.AF_UNIX)
        s.connect(sys.argv[2])
    else:
        s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
    conns.append(s)
print("held", flush=True)
time.sleep(600)
PY
for i in 0 1 2; do
	ip netns exec "$NS" python3 "$D/hold.py" 10.98.0.$((i + 2)) 7300 >"$D/hold-t$i" &
	holders+=($!)
	python3 "$D/hold.py" - "$D/gw$i.sock" >"$D/hold-u$i" &
	holders+=($!)
done
wait_for 20 bash -c "[ \$(cat $D/hold-* | grep -c held) = 6 ]" ||
	not_ok "holding the idle connections: $(cat "$D"/hold-*)"
e=$(live_epoch 0)
as_ctl "$CTL" replan --socket "$API" --cert "$CERTS/control.pem" --key "$CERTS/control.key" \
	--ca "$CERTS/ca.pem" 1 >/dev/null || not_ok "replan over TLS"
if wait_for 30 all_live $((e + 1)) 0 1 2; then
	ok "384 idle connections held: the re-plan installed epoch $((e + 1)) everywhere"
else
	not_ok "re-plan under 384 idle connections: $(live_epoch 0) $(live_epoch 1) $(live_epoch 2)"
	tail -5 "$D/control.log"
fi
dp_as control ping >/dev/null && ok "a new client is still served" ||
	not_ok "a new client is locked out"
[ "$(refused evicted)" -gt 0 ] && ok "quiet connections evicted: $(refused evicted)" ||
	not_ok "no eviction counted"
for p in "${holders[@]}"; do kill "$p" 2>/dev/null; done
holders=()

# ---- 4. workers the deployment does not name, or with the wrong certificate ----------
as_w() { # SITE CERT WORKER-ID: join job 1 and run one round
	ip netns exec "grt$$-s$1" "$WK" --control "$API" --job 1 --cert "$2.pem" --key "$2.key" \
		--ca "$CERTS/ca.pem" --worker-id "$3" --rounds 1 --timeout 5
}
as_w 0 "$CERTS/workers-site0" 1100 >"$D/w.out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "does not name worker-1100" "$D/w.out" &&
	ok "refused: worker 1100 with worker 1000's certificate" ||
	not_ok "wrong certificate: exit $rc: $(cat "$D/w.out")"
"$PKI" cert "$CERTS" stranger worker --dns worker-4242 || not_ok "pki"
as_w 0 "$CERTS/stranger" 4242 >"$D/w.out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "has no worker 4242" "$D/w.out" &&
	ok "refused: a worker the deployment does not name" ||
	not_ok "unknown worker: exit $rc: $(cat "$D/w.out")"
grep -q "refused 10.98.0.2:[0-9]* (worker): the certificate does not name worker-1100" \
	"$D/control.log" && ok "the control process logged the refusal" ||
	not_ok "no refusal in the control log"

# workers FIRST ROUNDS: both sites' workers join job 1 through the control process.
workers() {
	WPIDS=()
	for s in 0 1; do
		ip netns exec "grt$$-s$s" "$WK" --control "$API" --job 1 \
			--cert "$CERTS/workers-site$s.pem" --key "$CERTS/workers-site$s.key" \
			--ca "$CERTS/ca.pem" --worker-id $((1000 + 100 * s)) --first-round "$1" \
			--rounds "$2" --timeout 4 >"$D/w-$s.out" 2>&1 &
		WPIDS+=($!)
	done
}
waitall() {
	local rc=0 p
	for p in "${WPIDS[@]}"; do wait "$p" || rc=1; done
	return $rc
}

# ---- 5. the control process killed and restarted mid-job ------------------------------
e=$(live_epoch 0)
workers 0 "$ROUNDS"
sleep 0.5
wan_control_stop "$D" KILL
sleep 0.5
wan_control_start "$D" --heartbeat-ms 200 --fail-after 3 --timeout-ms 3000
if waitall; then
	ok "killed and restarted mid-job: $ROUNDS rounds joined through it, every result exact"
else
	not_ok "rounds across the control process's restart"
	cat "$D"/w-*.out
fi
wait_for 20 grep -q "job 1: epoch $e found live on 3 gateways (a b c): carried on" \
	"$D/control.log" && all_live "$e" 0 1 2 &&
	ok "the restarted control process carried on with epoch $e (nothing installed)" ||
	{ not_ok "no carry-on after the restart"; tail -8 "$D/control.log"; }
# status --watch over TLS with a monitor certificate: epoch $e has run the workers'
# $ROUNDS rounds and nothing else, so every gateway has had every chunk's RESULT that
# many times.
wait_for 30 bash -o pipefail -c "'$CTL' status --socket '$D/control.sock' --json |
	jq -e '.jobs[0].rounds.completed == $ROUNDS' >/dev/null"
as_ctl "$CTL" status --watch --count 2 --interval 0.3 --socket "$API" \
	--cert "$CERTS/monitor.pem" --key "$CERTS/monitor.key" --ca "$CERTS/ca.pem" \
	>"$D/watch.out" 2>"$D/watch.err"
rc=$?
[ $rc = 0 ] && [ "$(grep -c '^georeduce-control status --watch: tls://' "$D/watch.out")" = 2 ] &&
	[ "$(grep -c "^    rounds: $ROUNDS done, round $((ROUNDS + 1)) \[-*\]   0%, 0 chunks in flight" \
		"$D/watch.out")" = 2 ] &&
	grep -q "^  job 1 (mtree, fp32): epoch $e live" "$D/watch.out" &&
	grep -q '^gateways: 3 up, 0 down' "$D/watch.out" &&
	ok "status --watch over TLS (monitor): epoch $e, $ROUNDS rounds done on every gateway" ||
	{ not_ok "status --watch over TLS: exit $rc: $(cat "$D/watch.err")"; head -30 "$D/watch.out"; }
as_ctl "$CTL" replan --socket "$API" --cert "$CERTS/control.pem" --key "$CERTS/control.key" \
	--ca "$CERTS/ca.pem" 1 >/dev/null &&
	wait_for 30 all_live $((e + 1)) 0 1 2 &&
	ok "the next re-plan works: epoch $((e + 1)) everywhere" || not_ok "re-plan after restart"

# ---- 6. workers follow a re-plan after a gateway failure -----------------------------
e=$(live_epoch 0)
workers 100 "$ROUNDS"
sleep 0.5
ip netns pids "grt$$-s2" | xargs -r kill -KILL
if waitall; then
	ok "relay gateway killed mid-job: $ROUNDS rounds, every result exact" \
		"($(cat "$D"/w-*.out | grep -c 'run again') run again)"
else
	not_ok "rounds across the gateway failure"
	cat "$D"/w-*.out
	tail -10 "$D/control.log"
fi
e2=$(live_epoch 0)
[ "$e2" != none ] && [ "$e2" -gt "$e" ] && [ "$(live_epoch 1)" = "$e2" ] &&
	grep -q "gateway c (id 3, tls://10.98.0.4:7300) is down" "$D/control.log" &&
	ok "the workers learnt epoch $e2 (without c) from the control process" ||
	not_ok "epoch after the failure: $e2 (was $e)"

# ---- 7. Python clients join through the control process (georeduce.Client) ----------
# Debian's /usr/bin/python3 (numpy); the package from python/, the library just built.
pyw() { # SITE CERT WORKER-ID FIRST-ROUND: join job 1, two rounds, exact sums
	ip netns exec "grt$$-s$1" env PYTHONPATH="$ROOT/python" \
		GEOREDUCE_LIBRARY="$BUILD/lib/client/libgeoreduce.so" \
		LD_PRELOAD="${GEOREDUCE_PY_PRELOAD:-}" ASAN_OPTIONS=detect_leaks=0 /usr/bin/python3 - "$API" \
		"$2" "$CERTS/ca.pem" "$3" "$4" <<'PY'
import sys
import numpy as np
import georeduce
api, cert, ca = sys.argv[1:4]
wid, first = int(sys.argv[4]), int(sys.argv[5])
try:
    c = georeduce.Client.from_control(api, 1, wid, cert=cert + ".pem", key=cert + ".key",
                                      ca=ca, join_timeout=20, first_round=first, timeout=10)
except georeduce.ConfigError as e:
    print("refused errno %d: %s" % (e.errno, e))
    sys.exit(3)
for _ in range(2):
    b = np.full(c.elements, wid // 100 % 10 + 1, np.float32)   # 1000: 1, 1100: 2
    n = c.allreduce(b)
    assert n == 2 and np.all(b == 3), (n, b[:4])
print("joined: epoch %d, %d rounds exact" % (c.epoch, 2))
c.close()
PY
}
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
	pyw 0 "$CERTS/workers-site0" 1000 500 >"$D/py-0.out" 2>&1 &
	p0=$!
	pyw 1 "$CERTS/workers-site1" 1100 500 >"$D/py-1.out" 2>&1
	r1=$?
	wait "$p0"
	r0=$?
	[ $r0 = 0 ] && [ $r1 = 0 ] && grep -q "epoch $e2, 2 rounds exact" "$D/py-0.out" &&
		ok "Python clients joined through the control process: $(cat "$D/py-0.out")" ||
		not_ok "Python clients: $(cat "$D"/py-*.out)"
	pyw 0 "$CERTS/workers-site0" 1100 600 >"$D/py.out" 2>&1
	rc=$?
	[ $rc = 3 ] && grep -q "refused errno 1: .*does not name worker-1100" "$D/py.out" &&
		ok "Python: refused with worker 1000's certificate (EPERM)" ||
		not_ok "Python, wrong certificate: exit $rc: $(cat "$D/py.out")"
else
	echo "# no numpy for /usr/bin/python3: the Python clients' part skipped"
fi

wan_control_stop "$D"
echo "tls_e2e: $fails failed"
[ "$fails" = 0 ]
