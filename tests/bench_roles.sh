#!/usr/bin/env bash
# georeduce-bench in port mode against one dataplane in another process over net_memif,
# with the gateway in every role georeduce-bench-table writes (docs/BENCH.md, "Roles"): a
# root with local workers and child gateways, a leaf (a parent above) and a middle node
# (children and a parent), each a job of its own, paced as the dataplane paces by default
# (the tree at 20 Gbit/s on the links to the parent and the children, and once at
# 0.2 Gbit/s, below what the bench offers, so that frames wait in the pacers),
# in fp32, bf16 and the three MX dtypes, as a partial reduce (crew: contributor sets and a
# threshold), with the links to the other gateways sealed
# (AES-GCM through the dataplane's crypto_aesni_mb cryptodev, the bench's OpenSSL), and
# as multicast tables (selective multicast streams: a root replicating its workers' and
# its children's streams, a leaf and middle nodes a parent's; over sealed links too; an
# NDR search; a gateway that loses copies; once with the bench stopped
# longer than its retransmission timeout, after which no round may wait for a NACK_MCAST,
# the copies being in its RX ring). A bench whose keys are
# not the gateway's fails the run; corrupted partial sums and multicast copies exit 3.
# The bench plays the workers, the children and the parent; every RESULT copy and every
# partial sum the parent gets must be verified and none wrong, and no chunk lost. Bad
# options of the table's roles are refused with the option named.
# Exit 77 (skip) if EAL or net_memif cannot start here.
# Usage: tests/bench_roles.sh BENCH DATAPLANE DPCTL
set -u
bench=${1:?usage: bench_roles.sh BENCH DATAPLANE DPCTL}
dp=${2:?}
dpctl=${3:?}
cd "$(dirname "$0")/.."
# shellcheck source=tests/clilib.sh
. tests/clilib.sh
prefix=gbr$$
# shellcheck source=tests/benchlib.sh
. tests/benchlib.sh
table=(python3 bench/georeduce-bench-table)

expect 2 "--role unknown" "${table[@]}" --role branch
grep -q -- "--role" "$tmp/err" && ok "names --role" || not_ok "names --role"
expect 2 "a leaf with children" "${table[@]}" --role leaf --children 2
grep -q -- "--children" "$tmp/err" && ok "names --children" || not_ok "names --children"
expect 2 "a middle node without children" "${table[@]}" --role middle --children 0
expect 2 "--peer-id colliding with the gateway" "${table[@]}" --role leaf --peer-id 1
grep -q -- "--peer-id" "$tmp/err" && ok "names --peer-id" || not_ok "names --peer-id"
expect 2 "--fanin 0 without children" "${table[@]}" --fanin 0
expect 2 "--min-workers without crew" "${table[@]}" --min-workers 2
grep -q -- "--min-workers" "$tmp/err" && ok "names --min-workers" || not_ok "names --min-workers"
expect 2 "--min-workers above the subtree" "${table[@]}" --algorithm crew --min-workers 5
expect 2 "--sealed at a lone root" "${table[@]}" --sealed
grep -q -- "--sealed" "$tmp/err" && ok "names --sealed" || not_ok "names --sealed"
expect 2 "--multicast above 64" "${table[@]}" --multicast 65
grep -q -- "--multicast" "$tmp/err" && ok "names --multicast" || not_ok "names --multicast"
expect 2 "--multicast with crew" "${table[@]}" --multicast 1 --algorithm crew
expect 2 "--multicast from a root's children without children" "${table[@]}" --multicast 2
expect 2 "--multicast at a root without workers" "${table[@]}" --multicast 1 --fanin 0 \
	--children 2
expect 2 "--mcast-origins without --multicast" "${table[@]}" --mcast-origins 3
grep -q -- "--mcast-origins" "$tmp/err" && ok "names --mcast-origins" ||
	not_ok "names --mcast-origins"
expect 2 "--mcast-origins 0" "${table[@]}" --role leaf --multicast 1 --mcast-origins 0

if ! memif_dp --crypto crypto_aesni_mb0; then
	echo "# skip: the dataplane did not start on net_memif: $(tail -c 300 "$tmp/dp.log")"
	exit 77
fi

# run NAME JOB ROLE WORKERS CHILDREN [TABLE OPTIONS...]: one job, installed, driven briefly.
run() {
	local name=$1 job=$2 role=$3 workers=$4 children=$5 rc
	shift 5
	if ! "${table[@]}" --job "$job" --role "$role" --payload 512 --window 32 \
		--rate-gbps 20 "$@" -o "$tmp/$name.json"; then
		not_ok "$name: table written"
		return
	fi
	memif_run "$tmp/$name.json" --verify-every 1
	rc=$?
	if [ "$rc" -eq 125 ]; then
		not_ok "$name: table installed: $(tail -c 300 "$tmp/install")"
		return
	fi
	[ "$rc" -eq 0 ] && ok "$name: exits 0" ||
		not_ok "$name: exits $rc: $(tail -c 300 "$tmp/err") $(tr -d ' \n' <"$tmp/out" |
			grep -o '"error":"[^"]*"\|"losses":{[^}]*}\|"gateway_drops":{[^}]*}')"
	python3 - "$tmp/out" "$role" "$workers" "$children" "$*" <<'PY' &&
import json, sys
d = json.load(open(sys.argv[1]))
role, workers, children = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
links = (role != "root") + children if "--sealed" in sys.argv[5] else 0
assert d["sealed_links"] == links, d
s = d["phases"][0]["sealed_frames"]
assert (s["sealed"] > 0 and s["opened"] > 0) == (links > 0), s
assert d["role"] == {"middle": "interior"}.get(role, role), d["role"]
assert d["workers"] == workers + children and d["child_gateways"] == children, d
p = d["phases"][0]
v = p["verify"]
assert v["failures"] == 0 and v["payloads_checked"] > 0, v
assert p["wrong_results"] == 0 and v["wrong_results"] == 0, v
assert (v["partial_sums_checked"] > 0) == (role != "root"), v
assert p["losses"]["lost_chunks"] == 0 and p["received"]["mpps"] > 0, p
PY
		ok "$name: every RESULT verified, none wrong" || not_ok "$name: report"
}

run root 1 root 3 2 --fanin 3 --children 2
run leaf 2 leaf 3 0 --fanin 3
run middle 3 middle 2 2 --fanin 2 --children 2 --child-workers 3
run middle-no-workers 4 middle 0 3 --fanin 0 --children 3
run leaf-bf16 5 leaf 2 0 --fanin 2 --dtype bf16
# Frames wait in the gateway's pacers: 0.2 Gbit/s to the parent and each child.
run middle-paced 17 middle 2 2 --fanin 2 --children 2 --rate-gbps 0.2
run leaf-mxint8 6 leaf 3 0 --fanin 3 --dtype mxint8
run middle-mxfp8 7 middle 2 2 --fanin 2 --children 2 --dtype mxfp8
run root-mxfp4 8 root 2 2 --fanin 2 --children 2 --dtype mxfp4
run root-sealed 9 root 2 2 --fanin 2 --children 2 --sealed
run leaf-sealed 10 leaf 3 0 --fanin 3 --sealed --aead aes-256-gcm
run middle-sealed-mxint8 11 middle 2 2 --fanin 2 --children 2 --sealed --dtype mxint8
run root-crew 13 root 2 2 --fanin 2 --children 2 --algorithm crew --min-workers 3
run leaf-crew 14 leaf 4 0 --fanin 4 --algorithm crew --min-workers 2
run middle-crew-sealed-mxfp4 15 middle 2 2 --fanin 2 --children 2 --algorithm crew \
	--sealed --dtype mxfp4

# Multicast tables (selective multicast, docs/PROTOCOL.md 7.5): the bench plays the
# origins (local workers, or the gateway a stream comes from) and every output; each copy
# is verified against what its origin sent, none lost.
mcast() {
	local name=$1 job=$2 role=$3 streams=$4 children=$5 rc
	shift 5
	if ! "${table[@]}" --job "$job" --role "$role" --payload 512 --window 16 \
		--rate-gbps 20 --multicast "$streams" --children "$children" "$@" \
		-o "$tmp/$name.json"; then
		not_ok "$name: table written"
		return
	fi
	memif_run "$tmp/$name.json"
	rc=$?
	[ "$rc" -eq 0 ] && ok "$name: exits 0" ||
		not_ok "$name: exits $rc: $(tail -c 300 "$tmp/install" "$tmp/err")"
	python3 - "$tmp/out" "$role" "$streams" "$children" <<'PY' &&
import json, sys
d = json.load(open(sys.argv[1]))
role, streams, children = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
assert d["role"] == {"middle": "interior"}.get(role, role), d["role"]
assert d["multicast_streams"] == streams and d["child_gateways"] == children, d
p = d["phases"][0]
v, m = p["verify"], p["multicast"]
assert v["failures"] == 0 and p["wrong_results"] == 0, v
assert m["copies_verified"] > 0 and v["payloads_checked"] == m["copies_verified"], (v, m)
assert p["losses"]["lost_chunks"] == 0 and p["received"]["mpps"] > 0, p
PY
		ok "$name: every copy verified, none lost or wrong" || not_ok "$name: report"
}

mcast mcast-root 21 root 3 2 --fanin 3
mcast mcast-leaf 22 leaf 2 0 --fanin 3 --mcast-origins 3
mcast mcast-middle-bf16 23 middle 2 2 --fanin 2 --dtype bf16
mcast mcast-middle-mxfp4 24 middle 1 2 --fanin 0 --dtype mxfp4
# Over sealed links: a middle node's streams come sealed from its parent and go sealed to
# its children; a root's own stream and its children's go sealed between the children.
mcast mcast-middle-sealed 26 middle 2 2 --fanin 2 --sealed
sealed_ok() {
	python3 - "$tmp/out" "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
p = d["phases"][0]
assert d["sealed_links"] == int(sys.argv[2]), d["sealed_links"]
assert p["sealed_frames"]["sealed"] > 0 and p["sealed_frames"]["opened"] > 0, p["sealed_frames"]
PY
}
sealed_ok 3 && ok "mcast-middle-sealed: frames sealed and opened on its 3 links" ||
	not_ok "mcast-middle-sealed: $(tr -d ' \n' <"$tmp/out" | grep -o '"sealed_frames":{[^}]*}')"
mcast mcast-root-sealed 27 root 3 2 --fanin 2 --sealed
sealed_ok 2 && ok "mcast-root-sealed: frames sealed and opened on its 2 links" ||
	not_ok "mcast-root-sealed: $(tr -d ' \n' <"$tmp/out" | grep -o '"sealed_frames":{[^}]*}')"
# A bench held off its core for longer than its retransmission timeout (stopped here:
# a busy machine does the same) finds the copies the gateway sent meanwhile waiting in its
# RX ring: it must take them before its timers run, so that no round waits for a
# NACK_MCAST (none sent, no timeout, no stale repair). The generator is stopped once it
# runs (its first line), in the warm-up, with up to 512 copies in flight. A bench that
# judged its timers first times out on every round in flight, on every try. The timeout
# (3 s) is long and the stop (4 s) longer, so that a machine busy enough to slow rounds
# does not time them out by itself; a try that does anyway is made again, up to three,
# and one must be clean.
"${table[@]}" --job 25 --role leaf --payload 512 --window 128 --rate-gbps 20 \
	--multicast 2 --fanin 4 -o "$tmp/mcast-held.json"
held_try() {
	local bpid rc
	"$dpctl" -s "$tmp/ctl.sock" remove 25 >/dev/null 2>&1
	"$dpctl" -s "$tmp/ctl.sock" install "$tmp/mcast-held.json" >"$tmp/install" 2>&1
	"$bench" "${eal[@]}" --file-prefix="$prefix" -l 0 \
		--vdev="net_memif0,role=client,socket=$tmp/m.sock" -- --mode port \
		--table "$tmp/mcast-held.json" --gw-socket "$tmp/ctl.sock" --warmup 1 \
		--duration 2 --rto-ms 3000 --json >"$tmp/out" 2>"$tmp/err" &
	bpid=$!
	until grep -q "generator on lcore" "$tmp/err" || ! kill -0 "$bpid" 2>/dev/null; do
		sleep 0.1
	done
	sleep 0.5
	kill -STOP "$bpid" 2>/dev/null
	sleep 4
	kill -CONT "$bpid" 2>/dev/null
	wait "$bpid"
	rc=$?
	"$dpctl" -s "$tmp/ctl.sock" remove 25 >/dev/null 2>&1
	[ "$rc" -eq 0 ] && python3 - "$tmp/out" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["phases"][0]
m, l = p["multicast"], p["losses"]
assert p["verify"]["failures"] == 0 and m["copies_verified"] > 0, p["verify"]
assert m["nacks_sent"] == 0 and l["timeouts"] == 0 and l["stale"] == 0, (m, l)
PY
}
held=
for try in 1 2 3; do
	held_try && { held=$try; break; }
	echo "# held off its core, try $try: $(tr -d ' \n' <"$tmp/out" |
		grep -o '"losses":{[^}]*}\|"multicast":{[^}]*}')"
done
[ -n "$held" ] && ok "mcast held off its core: no round waits for a NACK_MCAST (try $held)" ||
	not_ok "mcast held off its core: $(tail -c 300 "$tmp/err")"
# A sealed multicast root whose keys are not the gateway's: the copies of its workers'
# stream reach the children the bench plays sealed under keys it does not have, and the
# run fails naming the sealed frame.
for k in gw bench; do
	"${table[@]}" --job 28 --role root --payload 512 --window 16 --rate-gbps 20 \
		--multicast 1 --children 2 --fanin 2 --sealed -o "$tmp/mcast-$k-keys.json"
done
"$dpctl" -s "$tmp/ctl.sock" install "$tmp/mcast-gw-keys.json" >"$tmp/install" 2>&1 ||
	not_ok "sealed multicast, other keys: installed: $(tail -c 300 "$tmp/install")"
memif_bench --table "$tmp/mcast-bench-keys.json" --quick --duration 0.3 --rto-ms 100 --quiet \
	--json
rc=$?
[ "$rc" -eq 1 ] && grep -q "sealed frame from the gateway that does not open" "$tmp/out" &&
	ok "sealed multicast, other keys: exits 1 naming the sealed frame" ||
	not_ok "sealed multicast, other keys: exits $rc: $(head -c 300 "$tmp/out")"
"$dpctl" -s "$tmp/ctl.sock" remove 28 >/dev/null 2>&1
# ... and one whose gateway has the links plain: its copies come plain where the bench
# expects them sealed, and the run fails naming the link.
python3 - "$tmp/mcast-gw-keys.json" "$tmp/mcast-plain.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
del d["sealed"]
json.dump(d, open(sys.argv[2], "w"))
PY
"$dpctl" -s "$tmp/ctl.sock" install "$tmp/mcast-plain.json" >"$tmp/install" 2>&1 ||
	not_ok "plain multicast at the gateway: installed: $(tail -c 300 "$tmp/install")"
memif_bench --table "$tmp/mcast-gw-keys.json" --quick --duration 0.3 --rto-ms 100 --quiet --json
rc=$?
[ "$rc" -eq 1 ] && grep -q "came plain, its link is sealed" "$tmp/out" &&
	ok "sealed multicast, plain gateway: exits 1 naming the plain frame" ||
	not_ok "sealed multicast, plain gateway: exits $rc: $(head -c 300 "$tmp/out")"
"$dpctl" -s "$tmp/ctl.sock" remove 28 >/dev/null 2>&1
# What the bench does not drive is refused naming the option: a multicast table against
# an io-forwarder.
memif_bench --table "$tmp/mcast-leaf.json" --peer io --gw-mac 02:00:00:00:00:01 --quick \
	--quiet --json
rc=$?
[ "$rc" -eq 2 ] && grep -q -- "--peer" "$tmp/err" &&
	ok "multicast against an io-forwarder refused naming --peer" ||
	not_ok "multicast with --peer io: exit $rc: $(tail -c 300 "$tmp/err")"

# A search runs several trials, each with a generator built afresh from recycled frames,
# its rounds past the last trial's: none may lose a chunk or get a wrong sum (with a
# multicast table: every trial's copies verified).
search() {
	local name=$1 rc mc
	mc=$(python3 -c '
import json, sys
print(len(json.load(open(sys.argv[1])).get("streams", [])))' "$2")
	memif_run "$2" --search --line-gbps 10 --resolution 50 --retries 0 --latency-at none
	rc=$?
	python3 - "$tmp/out" "$rc" "$mc" <<'PY' && ok "$name: every trial verified, none lost" ||
import json, sys
d = json.load(open(sys.argv[1]))
assert sys.argv[2] == "0" and len(d["trials"]) >= 2, (sys.argv[2], d.get("trials"))
for t in d["trials"]:
    assert t["verify"]["failures"] == 0 and t["losses"]["lost_chunks"] == 0, t
    assert sys.argv[3] == "0" or t["multicast"]["copies_verified"] > 0, t
PY
		not_ok "$name: exits $rc: $(tail -c 300 "$tmp/err")"
}
"${table[@]}" --job 16 --role leaf --payload 512 --window 32 --algorithm crew \
	--min-workers 2 -o "$tmp/search.json"
search "crew search" "$tmp/search.json"
# The multicast leaf (2 streams of 3 origins).
search "multicast search" "$tmp/mcast-leaf.json"

# The gateway's keys are not the bench's: the bench cannot open the gateway's frames (nor
# the gateway the bench's), and the run fails naming the sealed frame.
"${table[@]}" --job 12 --role leaf --payload 512 --window 8 --sealed -o "$tmp/gw-keys.json"
"${table[@]}" --job 12 --role leaf --payload 512 --window 8 --sealed -o "$tmp/bench-keys.json"
"$dpctl" -s "$tmp/ctl.sock" install "$tmp/gw-keys.json" >"$tmp/install" 2>&1 ||
	not_ok "other keys: the gateway's table installed: $(tail -c 300 "$tmp/install")"
memif_bench --table "$tmp/bench-keys.json" --quick --duration 0.3 --rto-ms 100 --quiet --json
rc=$?
[ "$rc" -eq 1 ] && ok "other keys: exits 1" || not_ok "other keys: exits $rc"
grep -q "sealed frame from the gateway that does not open" "$tmp/out" &&
	ok "other keys: the sealed frame named" || not_ok "other keys: $(head -c 300 "$tmp/out")"

# A sealed leaf against a dataplane that corrupts one frame in 100 it receives (--fault
# 0,rx,corrupt): only the workers' plain CONTRIBs can be corrupted (the parent's sealed
# RESULTs pass unchanged), so the gateway's partial sums go wrong and the parent the bench
# plays catches every one: the run exits 3, each wrong sum named with the parent's id.
kill -INT "$dp_pid" 2>/dev/null
wait "$dp_pid"
dp_pid=
"${table[@]}" --job 18 --role leaf --payload 512 --window 32 --fanin 3 --sealed \
	-o "$tmp/corrupt.json"
if memif_dp --crypto crypto_aesni_mb0 --fault 0,rx,corrupt=0.01 --fault-seed 5 &&
	"$dpctl" -s "$tmp/ctl.sock" install "$tmp/corrupt.json" >"$tmp/install" 2>&1; then
	memif_bench --table "$tmp/corrupt.json" --gw-socket "$tmp/ctl.sock" --warmup 1 \
		--duration 0.3 --rto-ms 300 --quiet --json
	rc=$?
	[ "$rc" -eq 3 ] && ok "corrupted partial sums: exit 3" ||
		not_ok "corrupted partial sums: exit $rc: $(tail -c 300 "$tmp/err")"
	grep -q "wrong sum: chunk .* worker 2 element" "$tmp/err" &&
		ok "corrupted partial sums: named at the parent" ||
		not_ok "corrupted partial sums: stderr: $(head -c 400 "$tmp/err")"
	python3 - "$tmp/out" <<'PY' && ok "corrupted partial sums: counted as wrong sums" ||
import json, sys
v = json.load(open(sys.argv[1]))["phases"][0]["verify"]
assert v["wrong_results"] > 0 and v["partial_sums_checked"] > 0, v
assert v["wrong"] and all(x["worker"] == 2 for x in v["wrong"]), v["wrong"]
PY
		not_ok "corrupted partial sums: report"
	# A multicast leaf there: the MCASTs the bench sends as the parent are corrupted as
	# the gateway receives them, so it forwards wrong copies, which the outputs catch.
	"${table[@]}" --job 19 --role leaf --payload 512 --window 16 --fanin 3 \
		--multicast 1 -o "$tmp/corrupt-mcast.json"
	memif_run "$tmp/corrupt-mcast.json"
	rc=$?
	[ "$rc" -eq 3 ] && ok "corrupted multicast copies: exit 3" ||
		not_ok "corrupted multicast copies: exit $rc: $(tail -c 300 "$tmp/err")"
	python3 - "$tmp/out" <<'PY' && ok "corrupted multicast copies: counted as wrong" ||
import json, sys
p = json.load(open(sys.argv[1]))["phases"][0]
v = p["verify"]
assert v["wrong_results"] > 0 and p["multicast"]["copies_verified"] > 0, v
assert v["wrong"] and all(101 <= x["worker"] <= 103 for x in v["wrong"]), v["wrong"]
PY
		not_ok "corrupted multicast copies: report"
else
	not_ok "the corrupting dataplane: $(tail -c 300 "$tmp/dp.log") $(cat "$tmp/install")"
fi

# A multicast leaf against a dataplane that loses 2 in 100 of the frames it sends: the
# outputs ask for the copies that do not come (NACK_MCAST) and the gateway repairs them
# from its retained copies; those copies are the run's lost frames (what a search judges),
# never more than the NACK_MCASTs sent.
kill -INT "$dp_pid" 2>/dev/null
wait "$dp_pid"
dp_pid=
"${table[@]}" --job 25 --role leaf --payload 512 --window 16 --fanin 3 --multicast 1 \
	-o "$tmp/lossy-mcast.json"
if memif_dp --fault 0,tx,loss=0.02 --fault-seed 5; then
	memif_run "$tmp/lossy-mcast.json"
	rc=$?
	python3 - "$tmp/out" "$rc" <<'PY' && ok "lost multicast copies: counted as lost frames" ||
import json, sys
p = json.load(open(sys.argv[1]))["phases"][0]
m, l = p["multicast"], p["loss"]
assert sys.argv[2] == "0", sys.argv[2]
assert p["verify"]["failures"] == 0 and p["losses"]["lost_chunks"] == 0, p["losses"]
assert m["nacks_sent"] > 0 and m["repairs_received"] > 0, m
assert 0 < l["frames"] <= m["nacks_sent"] and l["ratio"] > 0, (l, m)
PY
		not_ok "lost multicast copies: exit $rc: $(tail -c 300 "$tmp/err") $(tr -d ' \n' <"$tmp/out" |
			grep -o '"loss":{[^}]*}\|"multicast":{[^}]*}')"
else
	not_ok "the lossy dataplane: $(tail -c 300 "$tmp/dp.log")"
fi

echo "# $((n - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
