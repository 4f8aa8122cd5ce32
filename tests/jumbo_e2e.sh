#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Jumbo frames end to end on the emulated WAN (scripts/lib/testbed.py --mtu 9000): three
# sites with a worker each, every veth and bridge at an MTU of 9000, three
# georeduce-dataplane processes on af_packet ports whose ring frames hold 9014-byte
# frames, tables compiled by georeduce-control for the jobs' mtu 9000 and installed over
# the control sockets. Checked: an fp32 mTree job with the largest chunk a 9000-byte IP
# packet holds (2229 elements: 8916 bytes, a 9014-byte frame) and an mxint8 job at its
# largest (8640 elements: 270 blocks, 8910 bytes) run rounds whose results are bit-exact
# (georeduce-worker verifies them) through the gateways; every gateway received frames of
# a mean size no MTU of 1500 allows and dropped none as oversize or malformed; the dataplanes report their mbufs' data room (9216). Bad
# inputs: a table one element (one block) past the cap is refused by a dataplane and by
# the worker library, naming `chunk_elements`; a deployment whose chunk_bytes exceed it
# is refused naming `chunk_bytes`; a dataplane whose af_packet interface has a smaller
# MTU than its --mtu refuses to start, naming the interface.
#
#   jumbo_e2e.sh BUILD_DIR
set -u
BUILD=$(cd "$1" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
fails=0

if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
	echo "jumbo_e2e: needs root and network namespaces; skipped"
	exit 77
fi
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; fails=$((fails + 1)); }

GEOREDUCE_ROOT=$ROOT
# shellcheck source=../scripts/lib/wan.sh
. "$ROOT/scripts/lib/wan.sh"
D=$(mktemp -d /tmp/georeduce-jumbo.XXXXXX)
NS=grj$$-x
cleanup() {
	wan_down "$D"
	ip netns del "$NS" 2>/dev/null
	rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
DPCTL=$BUILD/tools/dpctl/georeduce-dpctl
CTL=$BUILD/control/daemon/georeduce-control
WK=$BUILD/tools/worker/georeduce-worker
DP=$BUILD/dataplane/georeduce-dataplane

# fp32 at 2229 elements a chunk (8916 bytes: 82 + 8916 = 8998 <= 9000), explicitly; mxint8
# at the default for mtu 9000, the whole blocks that fit (270: 8640 elements). Both
# tensors end with a shorter chunk.
FP32_ELEMS=$((2229 * 40 + 777)) MX_ELEMS=$((8640 * 12 + 320))
cat >"$D/topo.json" <<'JSON'
{"format": "georeduce-topology/1", "name": "wan-jumbo",
 "nodes": [{"id": "a", "workers": 1}, {"id": "b", "workers": 1}, {"id": "c", "workers": 1}],
 "links": [{"a": "a", "b": "b", "gbps": 0.1, "latency_ms": 4},
           {"a": "a", "b": "c", "gbps": 0.1, "latency_ms": 2},
           {"a": "c", "b": "b", "gbps": 0.1, "latency_ms": 2}]}
JSON
if wan_up "$D" "$D/topo.json" "$BUILD" --scale 1 --workers-from-topology --jobs mtree,mtree \
	--dtype fp32,mxint8 --elements "$FP32_ELEMS,$MX_ELEMS" --chunk-bytes 8916,0 --mtu 9000 \
	--mbufs 32768 --slots-max 1024 --prefix "grj$$"; then
	ok "3 sites up at MTU 9000"
else
	not_ok "emulated WAN at MTU 9000"
	cat "$D"/gw*.log
	echo "jumbo_e2e: $fails failed"
	exit 1
fi
ns_a=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[0]["ns"])' \
	"$D/sites.json")
if [ "$(ip netns exec "$ns_a" cat /sys/class/net/wan0/mtu)" = 9000 ] &&
	[ "$(ip netns exec "$ns_a" cat /sys/class/net/wk0/mtu)" = 9000 ]; then
	ok "the WAN and LAN veths carry 9000-byte IP packets"
else
	not_ok "veth MTU: $(ip -n "$ns_a" -br link)"
fi

# chunk_elements of a table, or "-".
chunk_of() {
	python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["chunk_elements"])' \
		"$1" 2>/dev/null || echo -
}
for job in 1 2; do
	if wan_install "$D" "$job"; then
		ok "job $job installed at every gateway"
	else
		not_ok "job $job install"
	fi
done
c1=$(chunk_of "$D/tables/job-1-a.json") c2=$(chunk_of "$D/tables/job-2-a.json")
[ "$c1" = 2229 ] && ok "fp32 job: chunks of 2229 elements (8916 bytes)" ||
	not_ok "fp32 job: chunk_elements $c1, not 2229"
[ "$c2" = 8640 ] && ok "mxint8 job: chunks of 8640 elements (270 blocks, 8910 bytes)" ||
	not_ok "mxint8 job: chunk_elements $c2, not 8640"

for job in 1 2; do
	if wan_run "$D" "$job" 3 "$((job * 100))" "" 60 >"$D/ms"; then
		ok "job $job: 3 rounds, every result bit-exact ($(tr '\n' ' ' <"$D/ms")ms)"
	else
		not_ok "job $job rounds"
	fi
done

for i in 0 1 2; do
	if "$DPCTL" -s "$D/gw$i.sock" --json stats >"$D/stats$i.json" 2>/dev/null &&
		python3 - "$D/stats$i.json" <<'PY'; then
import json, sys
st = json.load(open(sys.argv[1]))
lc = st["lcores"][0]  # the testbed's dataplanes run one worker lcore (-l 0-1)
assert len(st["lcores"]) == 1, len(st["lcores"])
assert st["memory"]["mbuf_data_room"] == 9216, st["memory"]
assert lc["drops"].get("oversize", 0) == 0, lc["drops"]
assert lc["bad_frame"] == 0 and lc["no_mbuf"] == 0, (lc["bad_frame"], lc["no_mbuf"])
# Every frame of an MTU of 1500 is at most 1514 bytes: a larger mean needs jumbo frames.
mean = lc["rx_bytes"] / max(lc["rx_packets"], 1)
assert mean > 1514, mean
print("  rx packets %d, rx bytes %d (%.0f a frame), mempool %d bytes" % (
    lc["rx_packets"], lc["rx_bytes"], mean, st["memory"]["mempool_bytes"]), file=sys.stderr)
PY
		ok "gateway $i: data room 9216, frames above 1514 bytes received, none dropped as oversize"
	else
		not_ok "gateway $i counters: $(head -c 600 "$D/stats$i.json")"
	fi
done

# Bad inputs: one element (one block) past the cap.
python3 - "$D/tables/job-1-a.json" "$D/big-fp32.json" 2230 \
	"$D/tables/job-2-a.json" "$D/big-mx.json" 8672 <<'PY'
import json, sys
for src, dst, n in ((sys.argv[1], sys.argv[2], sys.argv[3]), (sys.argv[4], sys.argv[5], sys.argv[6])):
    t = json.load(open(src))
    t["chunk_elements"] = int(n)
    json.dump(t, open(dst, "w"))
PY
for t in big-fp32 big-mx; do
	out=$("$DPCTL" -s "$D/gw0.sock" install "$D/$t.json" 2>&1)
	if [ $? -ne 0 ] && grep -q "field 'chunk_elements'" <<<"$out"; then
		ok "$t: a chunk past 8918 bytes refused by the dataplane, field named"
	else
		not_ok "$t: dataplane answered: $out"
	fi
	out=$("$WK" --table "$D/$t.json" --worker-id 1000 --rounds 1 2>&1)
	if [ $? -ne 0 ] && grep -q "chunk_elements" <<<"$out"; then
		ok "$t: refused by the worker library, field named"
	else
		not_ok "$t: georeduce-worker answered: $out"
	fi
done
python3 - "$D/deployment.json" "$D/bad-deploy.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["topology"] = "topology.json"
d["jobs"][0]["chunk_bytes"] = 8920
json.dump(d, open(sys.argv[2], "w"))
PY
out=$("$CTL" tables "$D/bad-deploy.json" --out "$D/bad-tables" --job 1 2>&1)
if [ $? -ne 0 ] && grep -q "chunk_bytes" <<<"$out"; then
	ok "a deployment's chunk_bytes of 8920 refused, field named"
else
	not_ok "chunk_bytes 8920: $out"
fi

# A dataplane whose af_packet interface is smaller than its --mtu does not start.
ip netns add "$NS" && ip -n "$NS" link add v0 type veth peer name v1 &&
	ip -n "$NS" link set v0 up && ip -n "$NS" link set v1 up
out=$(timeout 60 ip netns exec "$NS" "$DP" --no-huge -m 256 --no-pci --no-shconf \
	--file-prefix="$NS" -l 0-1 --vdev "net_af_packet0,iface=v0,framesz=9216,blocksz=36864" \
	-- --addr 0:10.99.0.1/24 -s "$D/x.sock" --mtu 9000 --mbufs 2048 2>&1)
if grep -q "interface v0 has an MTU of 1500, not --mtu 9000" <<<"$out"; then
	ok "an af_packet interface of MTU 1500 under --mtu 9000 refused, interface named"
else
	not_ok "af_packet MTU check: $(tail -3 <<<"$out")"
fi
rm -rf "/var/run/dpdk/$NS"

[ "$fails" -eq 0 ] && echo "jumbo_e2e: all ok" || echo "jumbo_e2e: $fails failed"
[ "$fails" -eq 0 ]
