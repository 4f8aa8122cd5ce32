#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The emulated WAN's delay line for kernel traffic (tests/wan_delayline.c) between two
# network namespaces this test creates and removes, laid out as scripts/lib/testbed.py
# lays a site: the kernel's addresses on wk0, its peer lan0 and the WAN veth wan0 taken
# by the tool, wan0 shaped with tc tbf. Checks: ping's round trip is twice the one-way
# delay (the best of ten plus little), TCP gets through at no more than the shaped rate
# (and at no less than half of it), the counters add up, bad options exit 2. Needs root
# (skipped otherwise).
#
#   delayline_e2e.sh WAN_DELAYLINE
set -u
DL=${1:?usage: delayline_e2e.sh WAN_DELAYLINE}
PY=/usr/bin/python3 # Debian's interpreter (stdlib only here)
fails=0
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; fails=$((fails + 1)); }

# ---- options (no root needed) ----
for bad in "" "--lan lan0" "--lan lan0,addr=10.0.0.1,peer=02:00:00:00:00:01" \
	"--lan lan0,addr=10.0.0.1 --wan x,delay_ms=1" \
	"--lan lan0,addr=10.0.0.1,peer=zz --wan x,delay_ms=1" \
	"--lan lan0,addr=10.0.0.1,peer=02:00:00:00:00:01 --wan x,delay_ms=-1" \
	"--lan lan0,addr=10.0.0.1,peer=02:00:00:00:00:01 --wan x,route=10.0.0.0" \
	"--lan lan0,addr=10.0.0.1,peer=02:00:00:00:00:01 --wan x,frob=1" \
	"--lan lan0,addr=10.0.0.1,peer=02:00:00:00:00:01 --wan x --queue 1"; do
	# shellcheck disable=SC2086
	"$DL" $bad >/dev/null 2>"/tmp/dl.err.$$"
	st=$?
	if [ $st -eq 2 ] && [ "$(wc -l <"/tmp/dl.err.$$")" -eq 1 ]; then
		ok "refused: '$bad'"
	else
		not_ok "'$bad': exit $st, $(cat "/tmp/dl.err.$$")"
	fi
done
rm -f "/tmp/dl.err.$$"

if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
	echo "delayline_e2e: needs root and network namespaces; the rest skipped"
	[ $fails -eq 0 ] && exit 77
	exit 1
fi
P=grdl$$
NA=${P}a NB=${P}b
TMP=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for n in "$NA" "$NB"; do ip netns del "$n" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

DELAY=20 MBIT=40
ip netns add "$NA" && ip netns add "$NB" || exit 1
ip link add wan0 netns "$NA" type veth peer name wan0 netns "$NB" || exit 1
i=0
for ns in "$NA" "$NB"; do
	ip -n "$ns" link set lo up
	ip -n "$ns" link add lan0 type veth peer name wk0
	ip -n "$ns" addr add "10.99.$i.10/24" dev wk0
	for l in lan0 wk0 wan0; do ip -n "$ns" link set "$l" up; done
	ip -n "$ns" route add 10.99.0.0/16 via "10.99.$i.1" dev wk0
	# As testbed.py --kernel-wan: checksums in software, frames of one MTU each.
	ip netns exec "$ns" ethtool -K wk0 tx off tso off gso off gro off >/dev/null
	ip netns exec "$ns" ethtool -K lan0 gro off >/dev/null
	tc -n "$ns" qdisc add dev wan0 root tbf rate ${MBIT}mbit burst 20000 latency 400ms
	peer=$(ip netns exec "$ns" cat /sys/class/net/wk0/address)
	ip netns exec "$ns" "$DL" --lan "lan0,addr=10.99.$i.1,peer=$peer" \
		--wan "wan0,delay_ms=$DELAY,route=10.99.$((1 - i)).0/24" >"$TMP/dl$i.log" 2>&1 &
	pids+=($!)
	i=$((i + 1))
done
for i in 0 1; do
	for _ in $(seq 3000); do grep -q '^ready$' "$TMP/dl$i.log" && break; sleep 0.02; done
	grep -q '^ready$' "$TMP/dl$i.log" && ok "delay line $i ready" ||
		not_ok "delay line $i: $(cat "$TMP/dl$i.log")"
done

# ---- delay: ping's round trip is two one-way delays ----
out=$(ip netns exec "$NA" ping -c 10 -i 0.1 -q 10.99.1.10 2>&1)
read -r min avg max < <(echo "$out" |
	sed -n 's|.*= \([0-9.]*\)/\([0-9.]*\)/\([0-9.]*\)/.*|\1 \2 \3|p')
# Never early; the best of ten within 5 ms of the delay (the mean and the worst include
# however long a busy machine keeps the delay lines and ping from running).
if [ -n "${min:-}" ] && awk -v m="$min" -v d=$DELAY \
	'BEGIN { exit !(m >= 2 * d && m < 2 * d + 5) }'; then
	ok "ping round trip ${min}/${avg}/${max} ms for 2 x $DELAY ms"
else
	not_ok "ping: $out"
fi

# ---- rate: TCP through the tbf reaches the shaped rate ----
ip netns exec "$NB" "$PY" - >"$TMP/rx.log" 2>&1 <<'PY' &
import socket, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.99.1.10", 5201))
s.listen(1)
print("listening", flush=True)
c, _ = s.accept()
n, t0, t1 = 0, None, None
while True:
    b = c.recv(1 << 20)
    if not b:
        break
    now = time.monotonic()
    if t0 is None:
        t0 = now
    n += len(b)
    t1 = now
print("bytes %d seconds %.3f" % (n, t1 - t0), flush=True)
PY
rx=$!
pids+=($rx)
for _ in $(seq 3000); do grep -q listening "$TMP/rx.log" && break; sleep 0.02; done
ip netns exec "$NA" "$PY" - <<'PY'
import socket, time
s = socket.create_connection(("10.99.1.10", 5201))
buf, end = bytes(1 << 16), time.monotonic() + 4
while time.monotonic() < end:
    s.sendall(buf)
s.close()
PY
wait "$rx"
read -r bytes secs < <(sed -n 's/^bytes \([0-9]*\) seconds \([0-9.]*\)$/\1 \2/p' "$TMP/rx.log")
# From the first byte received to the last (slow start included).
mbit=$(awk -v b="${bytes:-0}" -v s="${secs:-1}" 'BEGIN { printf "%.1f", b * 8 / s / 1e6 }')
# tbf counts frames: 1514 bytes carry 1448 of TCP payload (timestamps on).
wire=$(awk -v m="$mbit" 'BEGIN { printf "%.1f", m * 1514 / 1448 }')
# The shaping holds on any machine: never above the rate. Below it is the hosts' share
# of the CPU as much as the path's (a busy machine delays the delay lines and leaves the
# tbf idle); what the floor catches is a delay line whose queue caps TCP, which holds it
# to a small fraction of the rate (the queue must cover the path's 20 ms x 40 Mbit/s).
# On a quiet machine TCP's payload runs at 0.92-0.93 of the link's rate.
if awk -v m="$mbit" -v r=$MBIT 'BEGIN { exit !(m >= 0.5 * r && m <= 1.05 * r) }'; then
	ok "TCP at $mbit Mbit/s ($wire Mbit/s of frames) through a $MBIT Mbit/s link"
else
	not_ok "TCP at $mbit Mbit/s through a $MBIT Mbit/s link ($(cat "$TMP/rx.log"))"
fi

# ---- counters ----
for p in "${pids[@]:0:2}"; do kill -INT "$p"; wait "$p"; done
pids=()
for i in 0 1; do
	line=$(grep '^wan wan0' "$TMP/dl$i.log")
	if echo "$line" | grep -q 'queue_drops 0 qdisc_drops 0 send_errors 0' &&
		echo "$line" | awk '{ for (i = 1; i < NF; i++) if ($i == "tx") exit !($(i+1) > 100) }'; then
		ok "delay line $i: $line"
	else
		not_ok "delay line $i counters: $(cat "$TMP/dl$i.log")"
	fi
done
echo "# $fails failed"
[ $fails -eq 0 ]
