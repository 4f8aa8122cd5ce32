#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# georeduce-worker end to end: bad options and files exit 2 with one line; a silent
# gateway exits 1 with one line; against a stand-in gateway on 127.0.0.1 (Python, stdlib
# only, written from docs/PROTOCOL.md: it sums fp32 CONTRIBs and sends the RESULTs) rounds
# verify, --json reports them, --input and --output carry a tensor, a wrong
# --all-workers fails the check with exit 1, and --follow workers that began a round under
# two epochs both run it again under the newer one.
# Usage: tests/cli_worker.sh PATH/TO/georeduce-worker
set -u
worker=${1:?usage: cli_worker.sh PATH/TO/georeduce-worker}
cd "$(dirname "$0")/.."
. tests/clilib.sh
gw_pid=
trap '[ -n "$gw_pid" ] && kill "$gw_pid" 2>/dev/null; rm -rf "$tmp"' EXIT

N=20000 CE=352
P=$((20000 + RANDOM % 40000))
cat >"$tmp/t.json" <<JSON
{"format": "georeduce-table/1", "job": 9, "epoch": 2,
 "gateway": {"id": 1, "ipv4": "127.0.0.1", "base_port": $P, "ports": 1},
 "dtype": "fp32", "elements": $N, "chunk_elements": $CE,
 "limits": {"max_trees": 2, "max_children": 1, "max_workers": 4, "max_slots": 256},
 "trees": [{"id": 0, "role": "root", "parent": null, "children": [],
            "workers": [{"id": 11, "ipv4": "127.0.0.1", "port": $((P + 1))},
                        {"id": 12, "ipv4": "127.0.0.1", "port": $((P + 2))}],
            "expected": 2, "subtree_workers": 2, "chunk_first": 0,
            "chunk_count": $(((N + CE - 1) / CE)), "rate_gbps": 1.0, "slots": 256}]}
JSON
w() { "$worker" --table "$tmp/t.json" "$@"; }

# ---- options ----
expect 0 "--help" "$worker" --help
grep -q -- "--all-workers" "$tmp/out" && ok "help lists --all-workers" || not_ok "help text"
expect 2 "no options" "$worker"
expect 2 "no --worker-id" w
expect 2 "no --table" "$worker" --worker-id 11
expect 2 "unknown option" w --worker-id 11 --frob
expect 2 "missing argument" w --worker-id
expect 2 "stray argument" w --worker-id 11 extra
expect 2 "--worker-id 0" w --worker-id 0
expect 2 "--worker-id 65535" w --worker-id 65535
expect 2 "--worker-id not a number" w --worker-id eleven
expect 2 "--worker-id twice" w --worker-id 11 --worker-id 11
expect 2 "--rounds 0" w --worker-id 11 --rounds 0
expect 2 "--window 0" w --worker-id 11 --window 0
expect 2 "--timeout 0" w --worker-id 11 --timeout 0
expect 2 "--first-round 2^32" w --worker-id 11 --first-round 4294967296
expect 2 "--all-workers empty item" w --worker-id 11 --all-workers 11,,12
expect 2 "--all-workers twice the same" w --worker-id 11 --all-workers 11,11
expect 2 "--output with two workers" w --worker-id 11 --worker-id 12 --output "$tmp/o"
expect 2 "--input with --all-workers" w --worker-id 11 --input "$tmp/t.json" --all-workers 11
grep -q "exclude" "$tmp/err" && ok "names the conflict" || not_ok "conflict: $(cat "$tmp/err")"
expect 2 "missing table" "$worker" --table "$tmp/none.json" --worker-id 11
grep -q "none.json" "$tmp/err" && ok "names the table" || not_ok "missing table message"
echo '{"format": "georeduce-table/1"' >"$tmp/bad.json"
expect 2 "broken table" "$worker" --table "$tmp/bad.json" --worker-id 11
expect 2 "worker not in the table" w --worker-id 13
grep -q "worker 13" "$tmp/err" && ok "names the worker" || not_ok "$(cat "$tmp/err")"
expect 2 "--input of the wrong size" w --worker-id 11 --input "$tmp/t.json"
grep -q "80000" "$tmp/err" && ok "says the size wanted" || not_ok "$(cat "$tmp/err")"

# ---- no gateway: a timeout is exit 1 with one line ----
"$worker" --table "$tmp/t.json" --worker-id 11 --timeout 0.3 >"$tmp/out" 2>"$tmp/err"
st=$?
if [ $st -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "without a result" "$tmp/err"; then
	ok "silent gateway: exit 1, one line"
else
	not_ok "silent gateway: exit $st: $(cat "$tmp/err")"
fi

# ---- a stand-in gateway ----
python3 - "$P" 2 >"$tmp/gw.log" 2>&1 <<'PY' &
import socket, struct, sys, time
HDR = struct.Struct(">HBBBBBBIIHHHHIIHHII10s")   # docs/PROTOCOL.md section 3
port, n = int(sys.argv[1]), int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
s.bind(("127.0.0.1", port))
s.settimeout(0.5)
slots, done, workers, end = {}, {}, {}, time.time() + 60
while time.time() < end:
    try:
        pkt, addr = s.recvfrom(9000)
    except socket.timeout:
        continue
    f = HDR.unpack_from(pkt)
    typ, job, epoch, tree, origin, rnd, chunk, count = f[2], f[7], f[8], f[9], f[11], f[13], f[14], f[15]
    if typ != 1:        # NACK_RESULT: this stand-in never loses anything
        continue
    workers[origin] = addr
    key = (epoch, rnd, chunk)   # as a gateway: each epoch's slots apart
    if key in done:             # a worker that runs the round again: the retained RESULT
        s.sendto(done[key], addr)
        continue
    vals = struct.unpack_from("<%df" % count, pkt, HDR.size)
    got, acc = slots.setdefault(key, (set(), [0.0] * count))
    if origin in got:
        continue
    got.add(origin)
    for i, v in enumerate(vals):
        acc[i] += v
    if len(got) == n:
        hdr = HDR.pack(0x4752, 1, 2, 0, 1, 0, 0, job, epoch, tree, 1, 1, n, rnd, chunk, count,
                       0, 0, 0, bytes(10))
        done[key] = hdr + struct.pack("<%df" % count, *acc)
        for o in got:
            s.sendto(done[key], workers[o])
        del slots[key]
PY
gw_pid=$!
sleep 0.3

expect 0 "two workers, three rounds" w --worker-id 11 --worker-id 12 --rounds 3 --first-round 5
[ "$(grep -c "verified" "$tmp/out")" -eq 6 ] && ok "six rounds verified" ||
	not_ok "rounds: $(cat "$tmp/out")"
grep -q "worker 12 round 7: .* Gbit/s, 2 contributors, verified" "$tmp/out" &&
	ok "per-round line" || not_ok "per-round line: $(head -2 "$tmp/out")"
expect 0 "--all-workers, --json" w --worker-id 11 --worker-id 12 --all-workers 11,12 \
	--first-round 10 --json
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] and d["elements"] == 20000 and len(d["workers"]) == 2
for w in d["workers"]:
    assert w["ok"] and w["rounds"][0]["verified"] and w["rounds"][0]["contrib"] == 2
    assert w["rounds"][0]["round"] == 10 and w["stats"]["results"] == 57
' "$tmp/out" && ok "JSON summary" || not_ok "JSON summary: $(head -c 300 "$tmp/out")"

# A file-backed tensor: both workers send (1 + e mod 7), the sum is twice that.
python3 -c 'import struct, sys; open(sys.argv[1], "wb").write(struct.pack("<20000f", *[1.0 + e % 7 for e in range(20000)]))' \
	"$tmp/in.bin"
w --worker-id 12 --first-round 20 --input "$tmp/in.bin" >"$tmp/out12" 2>&1 &
p12=$!
expect 0 "--input, --output" w --worker-id 11 --first-round 20 --input "$tmp/in.bin" --output "$tmp/out.bin"
wait $p12 && ok "its partner completed" || not_ok "partner: $(cat "$tmp/out12")"
grep -q "not verified (--input)" "$tmp/out" && ok "says the input is not verified" ||
	not_ok "input line: $(cat "$tmp/out")"
python3 -c '
import struct, sys
v = struct.unpack("<20000f", open(sys.argv[1], "rb").read())
assert all(x == 2.0 * (1 + e % 7) for e, x in enumerate(v))
' "$tmp/out.bin" && ok "--output holds the sum" || not_ok "--output content"

# The check fails: --all-workers names a worker that never contributes.
expect 1 "wrong --all-workers fails the check" w --worker-id 11 --worker-id 12 \
	--all-workers 11,12,13 --first-round 30
grep -q "2 contributors, --all-workers names 3" "$tmp/err" && ok "says why" ||
	not_ok "why: $(cat "$tmp/err")"

# --follow across a new epoch that came between the two workers' starts of a round: 11
# begins round 40 under epoch 2, 12 under epoch 3, and the stand-in sums each epoch apart.
# Both time out; 11 finds epoch 3 in its table by then, 12 has no newer one. 11 runs the
# round again under epoch 3 and 12 goes on with it there, both at once: had 12 waited for
# another epoch, 11 would have run it there alone.
sed 's/"epoch": 2,/"epoch": 3,/' "$tmp/t.json" >"$tmp/t3.json"
cp "$tmp/t.json" "$tmp/t11.json"
"$worker" --table "$tmp/t3.json" --worker-id 12 --first-round 40 --follow --timeout 2 \
	>"$tmp/out12" 2>&1 &
p12=$!
(sleep 1 && cp "$tmp/t3.json" "$tmp/t11.new" && mv "$tmp/t11.new" "$tmp/t11.json") &
expect 0 "--follow: a round begun under two epochs" "$worker" --table "$tmp/t11.json" \
	--worker-id 11 --first-round 40 --follow --timeout 2
grep -q "worker 11 round 40: epoch 3 installed, round run again" "$tmp/out" &&
	grep -q "worker 11 round 40: .* 2 contributors, verified" "$tmp/out" &&
	ok "run again under the new epoch" || not_ok "worker 11: $(cat "$tmp/out" "$tmp/err")"
wait $p12 && grep -q "worker 12 round 40: epoch 3 as before, round taken up again" "$tmp/out12" &&
	ok "its partner went on with it under the same epoch" || not_ok "worker 12: $(cat "$tmp/out12")"

echo "cli_worker: $n tests, $fails failed"
[ "$fails" -eq 0 ]
