#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The Wireshark dissector (tools/wireshark/georeduce.lua) on a capture of a real run. Two
# georeduce-dataplane processes over net_af_packet on veth pairs in network namespaces this
# test creates, as in dataplane_e2e: gateway A (10.99.0.1, root) and B (10.99.0.2, a leaf
# under A, the link between them protected: sealed frames), four workers on a bridge in a
# third namespace speaking over kernel UDP sockets (tests/wireshark_traffic.py). dumpcap
# captures on the bridge ports of both gateways while the workers run AllReduce rounds in
# every dtype, with and without contributor sets, a multicast stream, retransmissions, a
# NACK_RESULT, PROBEs, and malformed packets. tshark then decodes the capture with the
# dissector, and every packet the workers sent or received, and what the gateways must have
# sent one another, must be there with each field as sent; every packet type must appear;
# the malformed packets must be shown as malformed with the reason; tshark must not fail.
#
# Before that, without a dataplane: the worked examples of docs/PROTOCOL.md decoded from
# the text, and crafted packets against each rule of its section 6, for which the
# dissector must give the reason that the reference decoder (wire_hdr_decode(), through
# tests/wire_verdicts.c) gives, and one of its own for broken sealed frames.
#
#   wireshark_e2e.sh DATAPLANE DPCTL WIRE_VERDICTS
set -u
DP=$1
CTL=$2
VERDICTS=$3
HERE=$(cd "$(dirname "$0")" && pwd)
LUA=$HERE/../tools/wireshark/georeduce.lua
fails=0

if ! command -v tshark >/dev/null || ! command -v dumpcap >/dev/null ||
	! command -v text2pcap >/dev/null; then
	echo "wireshark_e2e: tshark and dumpcap not installed (Debian tshark); skipped"
	exit 77
fi
if ! tshark -v 2>/dev/null | grep -qi 'with lua'; then
	echo "wireshark_e2e: this tshark is built without Lua; skipped"
	exit 77
fi
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; fails=$((fails + 1)); }

# tshark with the tree's dissector and Wireshark's defaults: a HOME of its own keeps the
# personal preferences and plugins out. A copy installed in the global plugin folder
# would clash with -X (a second protocol of the same name): an identical one is used as
# it is, another one stops the test.
WSHOME=$(mktemp -d /tmp/georeduce-wireshark-home.XXXXXX)
export HOME=$WSHOME
trap 'rm -rf "$WSHOME" "${EX:-}"' EXIT
global=$(tshark -G folders 2>/dev/null | sed -n 's/^Global Lua Plugins:[[:space:]]*//p')
TSX=(-X lua_script:"$LUA")
if [ -n "$global" ] && [ -f "$global/georeduce.lua" ]; then
	if cmp -s "$global/georeduce.lua" "$LUA"; then
		TSX=()
	else
		echo "not ok - $global/georeduce.lua is another version of the dissector; remove it"
		rm -rf "$WSHOME"
		exit 1
	fi
fi
ts() { tshark "${TSX[@]}" "$@"; }

# First the worked examples of docs/PROTOCOL.md (sections 11 and 14.4), byte for byte from
# the text, through text2pcap.
EX=$(mktemp -d /tmp/georeduce-wireshark-ex.XXXXXX)
sed -n '/^0000  02 00 00 00 00 02/,/^0080/p' "$HERE/../docs/PROTOCOL.md" >"$EX/11.txt"
sed -n '/^0000  47 53 01 01/,/^0090/p' "$HERE/../docs/PROTOCOL.md" >"$EX/14.txt"
# (text2pcap writes a separator line on stdout even with -q.)
text2pcap -q "$EX/11.txt" "$EX/11.pcap" >/dev/null &&
	text2pcap -q -4 10.0.1.1,10.0.2.1 -u 17408,17408 "$EX/14.txt" "$EX/14.pcap" >/dev/null ||
	not_ok "text2pcap on the worked examples"
got=$(ts -r "$EX/11.pcap" -T fields -E separator=' ' \
	-e georeduce.type -e georeduce.flags -e georeduce.dtype -e georeduce.cset_blocks \
	-e georeduce.job -e georeduce.epoch -e georeduce.tree -e georeduce.sender \
	-e georeduce.origin -e georeduce.contrib -e georeduce.round -e georeduce.chunk \
	-e georeduce.count -e georeduce.tsval -e georeduce.tsecr -e georeduce.cset.id \
	-e georeduce.value -e georeduce.reason 2>/dev/null)
want="2 0x00 1 1 7 3 2 9 8 3 41 1000 4 11259375 0 1,2,5 1,-2,3.5,0.25 "
[ "$got" = "$want" ] && ok "section 11's RESULT decoded field by field" ||
	not_ok "section 11's RESULT: '$got', want '$want'"
got=$(ts -r "$EX/14.pcap" -T fields -E separator=' ' \
	-e georeduce.sealed -e georeduce.seal.aead -e georeduce.seal.job \
	-e georeduce.seal.key_id -e georeduce.seal.sender -e georeduce.seal.lane \
	-e georeduce.seal.seq -e georeduce.seal.length -e georeduce.seal.tag \
	-e georeduce.type 2>/dev/null)
want="1 1 7 42 9 0 1 102 e982322bd01906a0cc63397efa8be7c7 "
[ "$got" = "$want" ] && ok "section 14.4's sealed frame: clear header, 102 bytes encrypted" ||
	not_ok "section 14.4's sealed frame: '$got', want '$want'"
python3 "$HERE/wireshark_traffic.py" crafted "$EX/crafted.txt" "$EX/want" &&
	text2pcap -q -4 10.99.0.11,10.99.0.1 -u 17401,17400 "$EX/crafted.txt" "$EX/crafted.pcap" \
	>/dev/null ||
	not_ok "crafted packets"
ts -r "$EX/crafted.pcap" -T fields -e georeduce.reason 2>/dev/null |
	sed 's/^$/-/' >"$EX/got"
"$VERDICTS" "$EX/crafted.txt" >"$EX/ref"
# The reference decoder knows no sealed frames ("GS" is a bad magic to it): for those the
# reason is the one expected (want: the reason and whether the packet is plain or sealed).
paste "$EX/want" "$EX/got" "$EX/ref" | awk -F'\t' '
	$1 != $3 || ($2 == "plain" && $1 != $4) {
		bad++
		print "packet " NR ": want " $1 ", dissector " $3 ", reference " $4
	}
	' >"$EX/diff"
if [ -s "$EX/diff" ] || [ "$(wc -l <"$EX/got")" != "$(wc -l <"$EX/want")" ]; then
	not_ok "crafted packets: $(head -5 "$EX/diff")"
else
	ok "$(wc -l <"$EX/want") crafted packets: each rule of section 6 given the reference" \
		"decoder's reason, broken sealed frames bad_seal"
fi
# Random bytes behind the magic: every frame decoded (as malformed, mostly), no Lua error.
python3 "$HERE/wireshark_traffic.py" fuzz "$EX/fuzz.txt" &&
	text2pcap -q -4 10.99.0.11,10.99.0.1 -u 17401,17400 "$EX/fuzz.txt" "$EX/fuzz.pcap" \
	>/dev/null || not_ok "fuzz packets"
ts -r "$EX/fuzz.pcap" -V >"$EX/fuzz.out" 2>&1
nf=$(ts -r "$EX/fuzz.pcap" -Y georeduce 2>/dev/null | wc -l)
nm=$(ts -r "$EX/fuzz.pcap" -Y georeduce.malformed 2>/dev/null |
	wc -l)
if grep -qi "lua error" "$EX/fuzz.out" || [ "$nf" != 400 ]; then
	not_ok "random packets: $nf of 400 decoded; $(grep -i -m2 "lua error" "$EX/fuzz.out")"
else
	ok "400 random packets behind the magic decoded without a Lua error ($nm malformed)"
fi
rm -rf "$EX"

if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
	echo "wireshark_e2e: the capture of a run needs root and network namespaces; skipped"
	rm -rf "$WSHOME"
	exit 77
fi
P=grws$$
NA=${P}a NB=${P}b NW=${P}w
TMP=$(mktemp -d /tmp/georeduce-wireshark.XXXXXX)
pids=()
cap_pid=

cleanup() {
	[ -n "$cap_pid" ] && kill -INT "$cap_pid" 2>/dev/null
	for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null; done
	sleep 0.5
	for p in "${pids[@]}" $cap_pid; do kill -KILL "$p" 2>/dev/null; done
	for n in "$NA" "$NB" "$NW"; do ip netns del "$n" 2>/dev/null; done
	rm -rf "$TMP" "$WSHOME" /var/run/dpdk/"$P"a /var/run/dpdk/"$P"b
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for n in "$NA" "$NB" "$NW"; do ip netns add "$n" || exit 1; done
ip link add vA netns "$NA" type veth peer name pA netns "$NW" || exit 1
ip link add vB netns "$NB" type veth peer name pB netns "$NW" || exit 1
ip -n "$NW" link add br0 type bridge
for l in pA pB br0 lo; do ip -n "$NW" link set "$l" up; done
ip -n "$NW" link set pA master br0
ip -n "$NW" link set pB master br0
for w in 11 12 21 22; do ip -n "$NW" addr add "10.99.0.$w/24" dev br0; done
ip -n "$NA" link set vA up
ip -n "$NB" link set vB up
# UDP checksums in software (af_packet hands frames over before a NIC would compute them).
for l in br0 pA pB; do ip netns exec "$NW" ethtool -K "$l" tx off >/dev/null || exit 1; done

start_dp() { # ns iface addr name
	ip netns exec "$1" "$DP" --no-huge -m 256 --no-pci --no-shconf --file-prefix="$P$4" \
		-l 0-1 --vdev="net_af_packet0,iface=$2" --log-level=lib.eal:error \
		--log-level=pmd.net.af_packet:error \
		-- --addr "0:$3/24" -s "$TMP/$4.sock" --mbufs 8192 --hdr-mbufs 2048 \
		--crypto crypto_aesni_mb0 >"$TMP/$4.log" 2>&1 &
	pids+=($!)
}
start_dp "$NA" vA 10.99.0.1 a
start_dp "$NB" vB 10.99.0.2 b
for s in a b; do
	for _ in $(seq 300); do
		"$CTL" -s "$TMP/$s.sock" ping >/dev/null 2>&1 && break
		sleep 0.2
	done
	if "$CTL" -s "$TMP/$s.sock" version >/dev/null 2>&1; then
		ok "dataplane $s answers on its control socket"
	else
		not_ok "dataplane $s did not start:"
		cat "$TMP/$s.log"
		exit 1
	fi
done

python3 "$HERE/wireshark_traffic.py" tables "$TMP" || exit 1
inst=0
for t in "$TMP"/job*-a.json "$TMP"/job*-b.json; do
	g=${t%.json}
	g=${g##*-}
	"$CTL" -s "$TMP/$g.sock" install "$t" >"$TMP/err" 2>&1 || {
		not_ok "install $(basename "$t"): $(cat "$TMP/err")"
		inst=1
	}
done
[ "$inst" = 0 ] && ok "7 jobs installed on both gateways (job 1 over a protected link)" ||
	exit 1

resolved() {
	"$CTL" -s "$TMP/$1.sock" --json stats | python3 -c '
import json, sys
s = json.load(sys.stdin)
sys.exit(0 if s["neighbours"] and all(n["mac"] for n in s["neighbours"]) else 1)'
}
for s in a b; do
	for _ in $(seq 300); do resolved "$s" && break; sleep 0.2; done
	resolved "$s" || not_ok "dataplane $s did not resolve its neighbours"
done

# The capture: both gateways' bridge ports (frames between A and B appear on each).
ip netns exec "$NW" dumpcap -q -i pA -i pB -w "$TMP/run.pcapng" 2>"$TMP/dumpcap.err" &
cap_pid=$!
for _ in $(seq 300); do
	grep -q "Capturing on" "$TMP/dumpcap.err" && break
	kill -0 "$cap_pid" 2>/dev/null || break
	sleep 0.2
done
if ! grep -q "Capturing on" "$TMP/dumpcap.err"; then
	not_ok "dumpcap did not start: $(cat "$TMP/dumpcap.err")"
	exit 1
fi
# The capture runs once a ping to A is in the file.
seen=0
for _ in $(seq 60); do
	ip netns exec "$NW" ping -c 1 -W 1 -I 10.99.0.11 10.99.0.1 >/dev/null 2>&1
	[ -s "$TMP/run.pcapng" ] && [ "$(tshark -r "$TMP/run.pcapng" -Y icmp 2>/dev/null |
		wc -l)" -gt 0 ] && seen=1 && break
	sleep 0.5
done
[ "$seen" = 1 ] || not_ok "a ping to A never reached the capture"

if ip netns exec "$NW" python3 "$HERE/wireshark_traffic.py" run "$TMP/sent.log"; then
	ok "every packet type sent and answered (ACK, RESULT RETX|ECHO, PROBE_REPLY, MCAST copies, an MCAST repair)"
else
	not_ok "traffic"
	for s in a b; do "$CTL" -s "$TMP/$s.sock" stats; done
fi
# The gateways' own count of what they sealed and opened.
sealed() {
	"$CTL" -s "$TMP/$1.sock" --json stats | python3 -c "import json,sys
l = json.load(sys.stdin)['lcores']
print(sum(x.get('$2', 0) for x in l))"
}
# The last packet sent (a broken sealed frame to A) in the file before the capture stops.
for _ in $(seq 120); do
	[ "$(ts -r "$TMP/run.pcapng" -Y 'georeduce.reason == "bad_seal"' \
		2>/dev/null | wc -l)" -gt 0 ] && break
	sleep 0.5
done
kill -INT "$cap_pid"
for _ in $(seq 300); do kill -0 "$cap_pid" 2>/dev/null || break; sleep 0.2; done
wait "$cap_pid" 2>/dev/null
cap_pid=

fields=()
while read -r f; do fields+=(-e "$f"); done < <(python3 -c "
import sys; sys.path.insert(0, '$HERE')
import wireshark_traffic as w; print('\n'.join(w.FIELD_NAMES))")
if ts -o georeduce.max_elements:4 -r "$TMP/run.pcapng" \
	-Y 'georeduce' -T fields -E separator=/t "${fields[@]}" >"$TMP/fields" 2>"$TMP/tshark.err"
then
	ok "tshark decoded the capture ($(wc -l <"$TMP/fields") georeduce frames)"
else
	not_ok "tshark failed: $(grep -v '^Running as' "$TMP/tshark.err" | head -5)"
fi
if grep -qi "lua error\|error" "$TMP/tshark.err"; then
	not_ok "tshark reports errors: $(grep -i error "$TMP/tshark.err" | head -3)"
fi
if python3 "$HERE/wireshark_traffic.py" check "$TMP/sent.log" "$TMP/fields"; then
	ok "every packet decoded as sent, every type present, the protected link sealed"
else
	not_ok "decoded fields differ from what was sent"
fi

# The summary and the full tree decode without a Lua error, the malformed packets
# marked as such (expert info, group Malformed).
ts -r "$TMP/run.pcapng" -V >"$TMP/verbose" 2>&1
if grep -qi "lua error" "$TMP/verbose"; then
	not_ok "a Lua error in the verbose decoding: $(grep -i -m3 "lua error" "$TMP/verbose")"
else
	ok "full decoding of $(tshark -r "$TMP/run.pcapng" 2>/dev/null | wc -l) frames," \
		"no Lua error"
fi
mal=$(ts -r "$TMP/run.pcapng" -Y georeduce.malformed -T fields \
	-e georeduce.reason 2>/dev/null | sort | tr '\n' ' ')
[ "$mal" = "bad_length bad_seal bad_type truncated " ] &&
	ok "malformed packets shown as malformed: $mal" || not_ok "malformed packets: '$mal'"
# Each gateway's sealed frames, as it counts them, are those the capture shows leaving it
# (on its own bridge port, interface 0 for A and 1 for B).
for x in "a 10.99.0.1 0" "b 10.99.0.2 1"; do
	read -r s ip ifc <<<"$x"
	n=$(ts -r "$TMP/run.pcapng" -T fields -e frame.number \
		-Y "georeduce.sealed && ip.src == $ip && frame.interface_id == $ifc" 2>/dev/null |
		wc -l)
	c=$(sealed "$s" sealed)
	[ "$n" -gt 0 ] && [ "$n" = "$c" ] && ok "$s sealed $c frames, all in the capture" ||
		not_ok "$s sealed $c frames, the capture shows $n"
done

for s in a b; do
	"$CTL" -s "$TMP/$s.sock" ping >/dev/null && ok "dataplane $s still serves" ||
		not_ok "dataplane $s after the run"
done
echo "wireshark_e2e: $fails failed"
[ "$fails" = 0 ]
