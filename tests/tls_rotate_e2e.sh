#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Certificates that rotate without restarts (docs/DEPLOYMENT.md, "Certificates"), with real
# processes: three dataplanes on net_null ports (no traffic, no root), gateway a serving
# the control protocol over TLS on 127.0.0.1, and georeduce-control installing it over TLS
# and serving its API (the workers' `worker` op) over TLS, every side with a CRL.
# Checked:
#  - gateway a's certificate renewed (georeduce-pki renew) and SIGHUP: the next handshake
#    presents the new serial (openssl s_client), the dataplane logs it, and a connection
#    made before goes on; the control process's own connection to it too (a re-plan
#    installs over it);
#  - a broken certificate file on SIGHUP: the error names the file, the old certificate
#    stays in use; `reload_tls` over TLS: a control certificate may, a monitor one not;
#  - worker 102 revoked (georeduce-pki revoke) and the control process's CRL reloaded on
#    SIGHUP: its next connection is refused at the handshake (the log names it and the
#    serial), georeduce-worker's join fails, worker 101 still gets its table, and the
#    connection worker 102 had opened before keeps its session;
#  - a broken CRL through `georeduce-control reload-tls`: an error naming the file, the
#    CRL loaded before stays in use;
#  - worker 101 joined with libgeoreduce: its certificate renewed and the old one revoked,
#    its open connection goes on; a broken key on gr_join_reload_tls() is an error naming
#    it; after the reload and a restart of the control process it reconnects with the new
#    certificate;
#  - the control certificate revoked: georeduce-worker --crl refuses it (the error names
#    it), and the control process refuses a CRL that revokes its own certificate.
#
#   tls_rotate_e2e.sh CONTROL DATAPLANE DPCTL WORKER
set -u
CONTROL=$1
DP=$2
DPCTL=$3
WK=$4
source "$(dirname "$0")/clilib.sh"
P=grr$$
source "$(dirname "$0")/nulldp.sh"
PKI=scripts/georeduce-pki
CALL="python3 tests/tls_call.py"
holders=()
trap 'for h in "${holders[@]}"; do kill "$h" 2>/dev/null; done; nulldp_cleanup' EXIT

for t in openssl jq python3; do
	command -v $t >/dev/null || { echo "1..0 # SKIP no $t"; exit 77; }
done

# Two free TCP ports on 127.0.0.1: gateway a's, and the control process's API.
read -r PA PC < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')

# ---- certificates: made in pki/, each server given copies of its own files ------------
K=$tmp/pki
$PKI ca "$K" && $PKI cert "$K" gw-a gateway --dns a --ip 127.0.0.1 &&
	$PKI cert "$K" control control --dns control --ip 127.0.0.1 &&
	$PKI cert "$K" monitor monitor && $PKI cert "$K" w101 worker --dns worker-101 &&
	$PKI cert "$K" w102 worker --dns worker-102 || { not_ok "georeduce-pki"; exit 1; }
mkdir -p "$tmp/gw" "$tmp/ctl"
install_files() { # DIR NAME...: copies of pki/NAME.{pem,key} into DIR, replaced whole
	local dir=$1 f
	shift
	for f in "$@" ca.pem crl.pem; do
		case $f in *.pem) ;; *) f="$f.pem $f.key" ;; esac
		for g in $f; do cp "$K/$g" "$dir/.$g" && mv -f "$dir/.$g" "$dir/$g"; done
	done
}
install_files "$tmp/gw" gw-a
install_files "$tmp/ctl" control
serial_of() { openssl x509 -in "$1" -noout -serial | cut -d= -f2; }
# The serial gateway a presents to a new handshake now.
gw_serial() {
	openssl s_client -connect "127.0.0.1:$PA" -cert "$K/monitor.pem" -key "$K/monitor.key" \
		-CAfile "$K/ca.pem" -verify_return_error </dev/null 2>/dev/null |
		openssl x509 -noout -serial | cut -d= -f2
}

# ---- three dataplanes (a over TLS too) and the control process -------------------------
jq --arg a "tls://127.0.0.1:$PA" --arg d "$tmp/ctl" --arg l "127.0.0.1:$PC" \
	'.gateways[0].socket = $a | .tls = {"ca": ($d + "/ca.pem"), "cert": ($d + "/control.pem"),
	 "key": ($d + "/control.key"), "crl": ($d + "/crl.pem"), "listen": $l}' \
	"$tmp/deploy.json" >"$tmp/deploy-tls.json"
"$DP" --no-huge -m 256 --no-pci --no-shconf --file-prefix="${P}a" -l 0-1 \
	--vdev=net_null0 --log-level=lib.eal:error \
	-- --addr "0:10.99.0.1/24" -s "$tmp/a.sock" --idle-spin 100 \
	--ctl-listen "127.0.0.1:$PA" --ctl-cert "$tmp/gw/gw-a.pem" --ctl-key "$tmp/gw/gw-a.key" \
	--ctl-ca "$tmp/gw/ca.pem" --ctl-crl "$tmp/gw/crl.pem" >"$tmp/dp-a.log" 2>&1 &
dp_a=$!
pids+=($!)
start_dp b 2
start_dp c 3
for s in a b c; do wait_dp $s; done
"$CONTROL" run "$tmp/deploy-tls.json" --socket "$tmp/ctl.sock" --heartbeat-ms 200 \
	--fail-after 5 --timeout-ms 5000 2>"$tmp/daemon.log" &
daemon=$!
if wait_for_line "$tmp/daemon.log" "gateway a \(id 1, tls://127.0.0.1:$PA\) is up" 60 \
	"$daemon" && wait_for_line "$tmp/daemon.log" "API over TLS on 127.0.0.1:$PC" 5; then
	ok "gateway a installed over TLS, the API over TLS, every side with a CRL"
else
	not_ok "control process with TLS: $(tail -5 "$tmp/daemon.log")"
	exit 1
fi
# worker ID CERT: one `worker` request of job 1 over a new connection, its reply.
worker() {
	$CALL "127.0.0.1:$PC" "$K/$2.pem" "$K/$2.key" "$K/ca.pem" worker \
		"{\"job\": 1, \"worker\": $1}" | tail -1
}
has_table() { jq -e '.ok and .table != null' >/dev/null 2>&1 <<<"$1"; }
for _ in $(seq 300); do has_table "$(worker 101 w101)" && break; sleep 0.1; done
has_table "$(worker 101 w101)" && ok "worker 101 gets its table over TLS" ||
	not_ok "worker 101: $(worker 101 w101)"

# hold NAME ENDPOINT CERT: a connection kept open, fed requests through fd of $NAME.in.
hold() {
	mkfifo "$tmp/$1.in"
	$CALL "$2" "$K/$3.pem" "$K/$3.key" "$K/ca.pem" <"$tmp/$1.in" >"$tmp/$1.out" 2>&1 &
	holders+=($!)
}
# ask NAME N REQUEST: send a request on held connection NAME; wait for its Nth line.
ask() {
	printf '%s\n' "$3" >&"$(eval echo "\$fd_$1")"
	for _ in $(seq 300); do
		[ "$(wc -l <"$tmp/$1.out")" -ge "$2" ] && { sed -n "${2}p" "$tmp/$1.out"; return; }
		sleep 0.1
	done
	echo "no answer: $(cat "$tmp/$1.out")"
}

# ---- 1. gateway a's certificate renewed: SIGHUP, the next handshake shows it -----------
s0=$(gw_serial)
[ -n "$s0" ] && [ "$s0" = "$(serial_of "$K/gw-a.pem")" ] &&
	ok "gateway a presents its certificate ($s0)" || not_ok "s_client serial: '$s0'"
hold gwold "127.0.0.1:$PA" monitor
exec {fd_gwold}>"$tmp/gwold.in"
r=$(ask gwold 2 ping)
jq -e .ok >/dev/null 2>&1 <<<"$r" && [ "$(head -1 "$tmp/gwold.out")" = "serial $s0" ] &&
	ok "a connection opened before the renewal" || not_ok "held connection: $r"
$PKI renew "$K" gw-a || not_ok "georeduce-pki renew"
s1=$(serial_of "$K/gw-a.pem")
install_files "$tmp/gw" gw-a
kill -HUP "$dp_a"
if wait_for_line "$tmp/dp-a.log" "tls: reloaded: .*gw-a.pem: .*CN=gw-a, serial $s1" 30; then
	ok "SIGHUP: the dataplane logs the renewed certificate"
else
	not_ok "dataplane reload: $(grep tls: "$tmp/dp-a.log")"
fi
s2=$(gw_serial)
[ "$s2" = "$s1" ] && [ "$s1" != "$s0" ] && ok "the next handshake presents the new serial ($s1)" ||
	not_ok "after SIGHUP: '$s2', want '$s1' (old '$s0')"
r=$(ask gwold 3 ping)
jq -e .ok >/dev/null 2>&1 <<<"$r" && ok "the connection made before keeps its session" ||
	not_ok "held connection after the renewal: $r"
# The control process's connection to a, made before, goes on (its heartbeats).
grep -q "gateway a .*down" "$tmp/daemon.log" &&
	not_ok "gateway a seen down: $(grep "gateway a" "$tmp/daemon.log")" ||
	ok "the control process's connection to gateway a goes on"

# ---- 2. a broken certificate file: the old one stays; reload_tls by role ---------------
echo "not a certificate" >"$tmp/gw/gw-a.pem"
kill -HUP "$dp_a"
if wait_for_line "$tmp/dp-a.log" "tls: reload failed, the old files stay in use: certificate .*gw/gw-a.pem" 30; then
	ok "a broken certificate on SIGHUP: one line naming the file"
else
	not_ok "broken certificate: $(grep tls: "$tmp/dp-a.log")"
fi
[ "$(gw_serial)" = "$s1" ] && ok "the certificate loaded before stays in use" ||
	not_ok "after a broken reload: '$(gw_serial)'"
install_files "$tmp/gw" gw-a
dpa() { # CERT COMMAND...: georeduce-dpctl to gateway a over TLS
	local c=$1
	shift
	"$DPCTL" -s "tls://127.0.0.1:$PA" --cert "$K/$c.pem" --key "$K/$c.key" \
		--ca "$K/ca.pem" --crl "$K/crl.pem" --server-name a "$@"
}
expect 0 "reload_tls as control: the dataplane reloads" dpa control reload_tls
grep -q "reloads: 2" "$tmp/out" || not_ok "reload_tls reply: $(cat "$tmp/out")"
expect 1 "reload_tls as monitor: refused" dpa monitor reload_tls
grep -q "needs a certificate of role 'control'" "$tmp/err" ||
	not_ok "monitor reload_tls: $(cat "$tmp/err")"

# ---- 3. worker 102 revoked: refused at its next handshake, 101 goes on -----------------
hold w102old "127.0.0.1:$PC" w102
exec {fd_w102old}>"$tmp/w102old.in"
r=$(ask w102old 2 'worker {"job": 1, "worker": 102}')
has_table "$r" && ok "worker 102 gets its table before the revocation" ||
	not_ok "worker 102 before: $r"
$PKI revoke "$K" w102 || not_ok "georeduce-pki revoke"
w102_serial=$(serial_of "$K/w102.pem")
openssl crl -in "$K/crl.pem" -noout -text | grep -q "Serial Number: $w102_serial" &&
	ok "the CRL names worker 102's serial" || not_ok "CRL: $(openssl crl -in "$K/crl.pem" -noout -text)"
install_files "$tmp/ctl" control
kill -HUP "$daemon"
wait_for_line "$tmp/daemon.log" "tls: reloaded: .*crl.pem: 1 revoked" 30 &&
	ok "SIGHUP: the control process reloads its CRL" ||
	not_ok "control reload: $(grep tls: "$tmp/daemon.log")"
r=$(worker 102 w102)
# The server's alert (certificate revoked) may reach the client as it closes, or not.
case $r in
"error:"*) ok "worker 102 refused at the handshake ($r)" ;;
*) not_ok "worker 102 after the revocation: $r" ;;
esac
revoked_lines() {
	grep -c "refused 127.0.0.1:[0-9]* (handshake): TLS handshake: certificate rejected: certificate revoked: .*CN=w102, serial $w102_serial" \
		"$tmp/daemon.log"
}
[ "$(revoked_lines)" = 1 ] && ok "the control process logs the revoked certificate" ||
	not_ok "refusal log: $(grep refused "$tmp/daemon.log" | tail -2)"
# The worker learns of it from the alert or the closed connection, whichever comes first.
expect 2 "georeduce-worker with the revoked certificate: the join fails" \
	timeout 60 "$WK" --control "tls://127.0.0.1:$PC" --job 1 --worker-id 102 \
	--cert "$K/w102.pem" --key "$K/w102.key" --ca "$K/ca.pem" --timeout 10
for _ in $(seq 100); do [ "$(revoked_lines)" -ge 2 ] && break; sleep 0.1; done
[ "$(revoked_lines)" -ge 2 ] || not_ok "georeduce-worker not refused as revoked: $(cat "$tmp/err")"
has_table "$(worker 101 w101)" && ok "worker 101 still gets its table" ||
	not_ok "worker 101 after the revocation: $(worker 101 w101)"
r=$(ask w102old 3 'worker {"job": 1, "worker": 102}')
has_table "$r" && ok "worker 102's connection made before keeps its session" ||
	not_ok "worker 102's old connection: $r"

# ---- 4. a broken CRL through reload-tls: an error, the old CRL stays --------------------
echo "not a CRL" >"$tmp/ctl/crl.pem"
ctl_tls() { # CERT COMMAND...: georeduce-control over its API's TLS
	local cmd=$1 c=$2
	shift 2
	"$CONTROL" "$cmd" --socket "tls://127.0.0.1:$PC" --cert "$K/$c.pem" --key "$K/$c.key" \
		--ca "$K/ca.pem" "$@"
}
expect 1 "reload-tls with a broken CRL: an error" ctl_tls reload-tls control
grep -q "ctl/crl.pem" "$tmp/err" || not_ok "reload-tls error: $(cat "$tmp/err")"
case $(worker 102 w102) in
"error:"*) ok "the CRL loaded before stays in use" ;;
*) not_ok "worker 102 after a broken CRL: $(worker 102 w102)" ;;
esac
expect 1 "reload-tls as monitor: refused" ctl_tls reload-tls monitor
install_files "$tmp/ctl" control
expect 0 "reload-tls as control" ctl_tls reload-tls control
grep -q "^reloaded: certificate .*1 revoked" "$tmp/out" || not_ok "reload-tls: $(cat "$tmp/out")"
expect 0 "reload-tls on the unix socket" "$CONTROL" reload-tls --socket "$tmp/ctl.sock"

# ---- 5. a worker's certificate renewed, reloaded in place (libgeoreduce) ----------------
# Worker 101 joins with copies of its files; its certificate is renewed and the old one
# revoked; its open connection goes on; after gr_join_reload_tls() and a restart of the
# control process it reconnects with the new certificate (the old one would be refused).
BUILD=$(cd "$(dirname "$CONTROL")/../.." && pwd)
mkdir -p "$tmp/wk"
install_files "$tmp/wk" w101
cp "$K/w101.pem" "$K/w101-old.pem"
mkfifo "$tmp/join.in"
env PYTHONPATH=python GEOREDUCE_LIBRARY="$BUILD/lib/client/libgeoreduce.so" \
	LD_PRELOAD="${GEOREDUCE_PY_PRELOAD:-}" ASAN_OPTIONS=detect_leaks=0 \
	python3 tests/tls_join.py "tls://127.0.0.1:$PC" 1 101 "$tmp/wk/w101.pem" \
	"$tmp/wk/w101.key" "$tmp/wk/ca.pem" <"$tmp/join.in" >"$tmp/join.out" 2>&1 &
holders+=($!)
exec {fd_join}>"$tmp/join.in"
join_ask() { # N COMMAND: send it, print the Nth line of the output
	printf '%s\n' "$2" >&"$fd_join"
	for _ in $(seq 300); do
		[ "$(wc -l <"$tmp/join.out")" -ge "$1" ] && { sed -n "${1}p" "$tmp/join.out"; return; }
		sleep 0.1
	done
	echo "no answer: $(cat "$tmp/join.out")"
}
wait_for_line "$tmp/join.out" "^loaded epoch" 60 && ok "worker 101 joined with libgeoreduce" ||
	not_ok "libgeoreduce join: $(cat "$tmp/join.out")"
$PKI renew "$K" w101 && $PKI revoke "$K" w101-old || not_ok "renew w101, revoke the old one"
w101_new=$(serial_of "$K/w101.pem")
install_files "$tmp/ctl" control
kill -HUP "$daemon"
wait_for_line "$tmp/daemon.log" "tls: reloaded: .*crl.pem: 2 revoked" 30 ||
	not_ok "control reload with 2 revoked: $(grep tls: "$tmp/daemon.log" | tail -1)"
r=$(join_ask 2 ask)
# 0: no other epoch; 1: another (a re-plan): either is an answer.
case $r in "ask 0 " | "ask 1 ") true ;; *) false ;; esac &&
	ok "the worker's connection made before goes on" ||
	not_ok "ask on the old connection: $r"
install_files "$tmp/wk" w101
echo "not a key" >"$tmp/wk/w101.key"
r=$(join_ask 3 reload)
case $r in
"reload failed:"*w101.key*) ok "gr_join_reload_tls with a broken key: an error naming it" ;;
*) not_ok "broken key reload: $r" ;;
esac
install_files "$tmp/wk" w101
r=$(join_ask 4 reload)
case $r in
"reloaded: "*"serial $w101_new"*) ok "gr_join_reload_tls takes the renewed certificate" ;;
*) not_ok "worker reload: $r" ;;
esac
kill -TERM "$daemon"
wait "$daemon" 2>/dev/null
"$CONTROL" run "$tmp/deploy-tls.json" --socket "$tmp/ctl.sock" --heartbeat-ms 200 \
	--fail-after 5 --timeout-ms 5000 2>>"$tmp/daemon.log" &
daemon=$!
for _ in $(seq 600); do
	[ "$(grep -c "API over TLS on" "$tmp/daemon.log")" -ge 2 ] && break
	sleep 0.1
done
refusals=$(grep -c "certificate revoked" "$tmp/daemon.log")
r=$(join_ask 5 ask)
case $r in "ask 0 " | "ask 1 ") true ;; *) false ;; esac &&
	[ "$(grep -c "certificate revoked" "$tmp/daemon.log")" = "$refusals" ] &&
	ok "after the control process restarted, worker 101 reconnects with the new certificate" ||
	not_ok "reconnect after the reload: $r; $(grep refused "$tmp/daemon.log" | tail -1)"

# ---- 6. the control certificate revoked: workers with the CRL refuse it ----------------
$PKI revoke "$K" control || not_ok "georeduce-pki revoke control"
expect 2 "a worker given the CRL refuses a revoked control certificate" \
	timeout 60 "$WK" --control "tls://127.0.0.1:$PC" --job 1 --worker-id 101 \
	--cert "$K/w101.pem" --key "$K/w101.key" --ca "$K/ca.pem" --crl "$K/crl.pem" --timeout 10
grep -q "certificate rejected: certificate revoked: .*CN=control, serial $(serial_of "$K/control.pem")" \
	"$tmp/err" || not_ok "the worker's error: $(cat "$tmp/err")"
# The control process given a CRL that revokes its own certificate keeps the old files.
install_files "$tmp/ctl" control
kill -HUP "$daemon"
wait_for_line "$tmp/daemon.log" "tls: reload failed.*control.pem: revoked by CRL .*ctl/crl.pem" 30 &&
	ok "a CRL revoking the control process's own certificate is refused" ||
	not_ok "own certificate revoked: $(grep tls: "$tmp/daemon.log" | tail -2)"
has_table "$(worker 101 w101)" && ok "worker 101 (without the CRL) still gets its table" ||
	not_ok "worker 101 at the end: $(worker 101 w101)"

echo "1..$n"
[ "$fails" -eq 0 ]
