#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Idle gateways (docs/DATAPLANE.md, "Idle lcores"), with a real georeduce-dataplane in a
# network namespace this test creates and a worker in another (the kernel's UDP stack,
# scripts/lib/idle_rtt.py): on net_tap, whose queues raise Rx interrupts, the default mode
# waits on them; on net_af_packet, which has none, it sleeps. Either way the gateway is left
# until its counters show it asleep, then a worker sends the CONTRIB of a round after each
# pause and every round completes. --idle with a bad mode is refused. Counted, not timed.
#
#   idle_e2e.sh DATAPLANE DPCTL
set -u
DP=$1
CTL=$2
HERE=$(cd "$(dirname "$0")" && pwd)
RTT=$HERE/../scripts/lib/idle_rtt.py
fails=0

if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
	echo "idle_e2e: needs root and network namespaces; skipped"
	exit 77
fi
P=gie$$
NG=${P}g NW=${P}w
TMP=$(mktemp -d)
pid=

cleanup() {
	[ -n "$pid" ] && kill -INT "$pid" 2>/dev/null && sleep 0.5 && kill -KILL "$pid" 2>/dev/null
	for n in "$NG" "$NW"; do ip netns del "$n" 2>/dev/null; done
	rm -rf "$TMP" /var/run/dpdk/"$P"*
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; fails=$((fails + 1)); }

for m in "" bogus Poll; do
	"$DP" --no-huge -m 64 --no-pci --no-shconf --file-prefix="${P}x" -l 0-1 \
		--log-level=lib.eal:error -- --idle "$m" -s "$TMP/x.sock" >"$TMP/x.log" 2>&1
	rc=$?
	if [ "$rc" = 2 ] && grep -q "^georeduce-dataplane: --idle: .*got '$m'" "$TMP/x.log"; then
		ok "--idle '$m': refused"
	else
		not_ok "--idle '$m': exit $rc, $(head -c 300 "$TMP/x.log")"
	fi
done
"$DP" -- --help | grep -q -- "--idle MODE" && ok "--help lists --idle" || not_ok "--help: no --idle"

ip netns add "$NG" || exit 1
ip netns add "$NW" || exit 1
ip -n "$NW" link set lo up
cat >"$TMP/table.json" <<JSON
{"format": "georeduce-table/1", "job": 7, "epoch": 1,
 "gateway": {"id": 1, "ipv4": "10.98.0.1", "base_port": 17400, "ports": 16},
 "dtype": "fp32", "elements": 64, "chunk_elements": 64,
 "limits": {"max_trees": 1, "max_children": 1, "max_workers": 1, "max_slots": 4},
 "trees": [{"id": 0, "role": "root", "parent": null, "children": [],
            "workers": [{"id": 11, "ipv4": "10.98.0.11", "port": 5000}],
            "expected": 1, "subtree_workers": 1, "chunk_first": 0, "chunk_count": 1,
            "rate_gbps": 1.0, "slots": 4}]}
JSON

lcore() { # name key: that key of the first lcore's stats
	"$CTL" -s "$TMP/$1.sock" --json stats | python3 -c "
import json, sys
print(json.load(sys.stdin)['lcores'][0]['$2'])"
}

run() { # name vdev worker-iface mode
	local name=$1 vdev=$2 dev=$3 mode=$4
	ip netns exec "$NG" "$DP" --no-huge -m 256 --no-pci --no-shconf --file-prefix="$P$name" \
		-l 0-1 --vdev="$vdev" --log-level=lib.eal:error --log-level=pmd:error \
		-- --addr 0:10.98.0.1/24 -s "$TMP/$name.sock" --mbufs 8192 --hdr-mbufs 2048 \
		>"$TMP/$name.log" 2>&1 &
	pid=$!
	for _ in $(seq 300); do
		"$CTL" -s "$TMP/$name.sock" ping >/dev/null 2>&1 && break
		sleep 0.2
	done
	if ! "$CTL" -s "$TMP/$name.sock" install "$TMP/table.json" >/dev/null; then
		not_ok "$name: dataplane or table: $(tail -3 "$TMP/$name.log")"
		return
	fi
	# net_tap's interface goes to the worker's namespace once the dataplane holds it.
	case $vdev in net_tap*) ip -n "$NG" link set "$dev" netns "$NW" ;; esac
	ip -n "$NW" addr add 10.98.0.11/24 dev "$dev"
	ip -n "$NW" link set "$dev" up
	ip netns exec "$NW" ethtool -K "$dev" tx off >/dev/null 2>&1
	m=$(lcore "$name" idle_mode)
	[ "$m" = "$mode" ] && ok "$name: idle mode $m" || not_ok "$name: idle mode $m, not $mode"
	local s=0
	for _ in $(seq 600); do
		s=$(lcore "$name" sleeps)
		[ "$s" -ge 10 ] && break
		sleep 0.1
	done
	[ "$s" -ge 10 ] && ok "$name: asleep ($s sleeps)" || not_ok "$name: $s sleeps"
	out=$(ip netns exec "$NW" python3 "$RTT" --gateway 10.98.0.1 --worker 10.98.0.11 \
		--job 7 --samples 20 --gap 0.05 --timeout 10)
	local done
	done=$(lcore "$name" chunks_completed)
	if [ "$done" = 20 ] && echo "$out" | grep -q '"samples": 20, "lost": 0'; then
		ok "$name: 20 rounds after 20 pauses, each answered"
	else
		not_ok "$name: $done chunks completed, $out"
	fi
	if [ "$mode" = intr ]; then
		w=$(lcore "$name" intr_wakeups)
		[ "$w" -ge 10 ] && ok "$name: woken by Rx interrupts ($w)" || not_ok "$name: $w wakeups"
	fi
	kill -INT "$pid"
	wait "$pid"
	rc=$?
	pid=
	[ "$rc" = 0 ] && ok "$name: stopped" || not_ok "$name: exit $rc"
	ip -n "$NW" link del "$dev" 2>/dev/null
}

ip link add "${P}a" netns "$NG" type veth peer name "${P}b" netns "$NW" || exit 1
ip -n "$NG" link set "${P}a" up
run afp "net_af_packet0,iface=${P}a" "${P}b" sleep
if [ -c /dev/net/tun ]; then
	run tap "net_tap0,iface=${P}t" "${P}t" intr
else
	echo "ok - # SKIP no /dev/net/tun: Rx interrupts untested"
fi

[ "$fails" = 0 ] || exit 1
exit 0
