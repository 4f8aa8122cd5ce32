#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# georeduce-worker end to end: bad options and files exit 2 with one line; a silent
# gateway exits 1 with one line; against a stand-in gateway on 127.0.0.1 (Python, stdlib
# only, written from docs/PROTOCOL.md: it sums fp32 CONTRIBs and sends the RESULTs) rounds
# verify (each round's line through a pipe as the round ends), --json reports them,
# --input and --output carry a tensor, a wrong
# --all-workers fails the check with exit 1, and --follow workers that began a round under
# two epochs both run it again under the newer one. Then --multicast against a stand-in
# gateway that forwards MCAST between two local workers and adds the updates of two remote
# origins: every chunk verified; a corrupted chunk, a lost chunk and a silent origin
# reported as docs/CLIENT.md says.
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
# The compatibility mode: revisions 1.13 to 1.16 only.
expect 2 "--revision 12" w --worker-id 11 --revision 12
expect 2 "--revision 17" w --worker-id 11 --revision 17
expect 2 "--revision x" w --worker-id 11 --revision x
expect 2 "--worker-id not a number" w --worker-id eleven
expect 2 "--worker-id twice" w --worker-id 11 --worker-id 11
expect 2 "--rounds 0" w --worker-id 11 --rounds 0
expect 2 "--window 0" w --worker-id 11 --window 0
expect 2 "--window follows" w --worker-id 11 --window follows
grep -q "nor 'follow'" "$tmp/err" && ok "... names the word it takes" ||
	not_ok "--window follows: $(cat "$tmp/err")"
expect 2 "--timeout 0" w --worker-id 11 --timeout 0
expect 2 "--first-round 2^32" w --worker-id 11 --first-round 4294967296
expect 2 "--all-workers empty item" w --worker-id 11 --all-workers 11,,12
expect 2 "--all-workers twice the same" w --worker-id 11 --all-workers 11,11
expect 2 "--output with two workers" w --worker-id 11 --worker-id 12 --output "$tmp/o"
expect 2 "--input with --all-workers" w --worker-id 11 --input "$tmp/t.json" --all-workers 11
grep -q "exclude" "$tmp/err" && ok "names the conflict" || not_ok "conflict: $(cat "$tmp/err")"
# A list of control endpoints (docs/CONTROL.md, "Several control endpoints"), refused
# before anything connects, the element named.
for bad in "tls://a:1,,tls://b:2|control endpoint 2 of the list is empty" \
	"tls://a:1,tls://a:1|control endpoint 2 of the list, 'tls://a:1': given twice" \
	"tls://a:1,/run/b.sock|mixes a socket path" \
	"a,b,c,d,e,f,g,h,i|more than 8 control endpoints"; do
	expect 2 "--control ${bad%%|*}" "$worker" --control "${bad%%|*}" --job 1 --worker-id 11
	grep -qF "${bad#*|}" "$tmp/err" && ok "... says: ${bad#*|}" ||
		not_ok "--control ${bad%%|*}: $(cat "$tmp/err")"
done
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
print("ready", flush=True)
slots, done, workers, seen, end = {}, {}, {}, set(), time.time() + 600
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
    if (epoch, rnd, origin) not in seen:    # the test waits for these
        seen.add((epoch, rnd, origin))
        print("contrib epoch %d round %d origin %d" % (epoch, rnd, origin), flush=True)
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
wait_for_line "$tmp/gw.log" '^ready$' 60 "$gw_pid" && ok "stand-in gateway ready" ||
	not_ok "stand-in gateway: $(cat "$tmp/gw.log")"

expect 0 "two workers, three rounds" w --worker-id 11 --worker-id 12 --rounds 3 --first-round 5
[ "$(grep -c "verified" "$tmp/out")" -eq 6 ] && ok "six rounds verified" ||
	not_ok "rounds: $(cat "$tmp/out")"
grep -q "worker 12 round 7: .* Gbit/s, 2 contributors, verified" "$tmp/out" &&
	ok "per-round line" || not_ok "per-round line: $(head -2 "$tmp/out")"
# Through a pipe, each round's line comes as the round ends, not when the process exits:
# 11 runs rounds 60 and 61, 12 only round 60, so 11 waits in round 61 (no result without
# 12) while its line of round 60 must already be through the pipe. Then 12's round 61
# lets it finish.
w --worker-id 11 --first-round 60 --rounds 2 --timeout 120 2>&1 | cat >"$tmp/pipe.out" &
p11=$!
w --worker-id 12 --first-round 60 --rounds 1 >"$tmp/out12" 2>&1 ||
	not_ok "worker 12, round 60: $(cat "$tmp/out12")"
if wait_for_line "$tmp/pipe.out" '^worker 11 round 60: .*verified' 60 "$p11" &&
	! grep -q "round 61" "$tmp/pipe.out"; then
	ok "through a pipe, a round's line comes before the process exits"
else
	not_ok "no round line through the pipe while the worker runs: $(cat "$tmp/pipe.out")"
fi
w --worker-id 12 --first-round 61 --rounds 1 >"$tmp/out12" 2>&1 ||
	not_ok "worker 12, round 61: $(cat "$tmp/out12")"
wait "$p11" && grep -q "^worker 11 round 61: .*verified" "$tmp/pipe.out" &&
	ok "then its next round" || not_ok "round 61 through the pipe: $(cat "$tmp/pipe.out")"
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

# --start-at without --multicast: two processes start their first AllReduce round at the
# same instant, 2 s ahead, and the round's time is the AllReduce's (under a second here,
# also on a loaded machine: the wait before it is not counted).
t0=$(($(date +%s) + 3))
w --worker-id 12 --first-round 15 --start-at "$t0" >"$tmp/out12" 2>&1 &
p12=$!
expect 0 "--start-at: an AllReduce round of two processes" w --worker-id 11 --first-round 15 \
	--start-at "$t0" --json
wait $p12 && ok "its partner completed" || not_ok "partner: $(cat "$tmp/out12")"
python3 -c '
import json, sys, time
d = json.load(open(sys.argv[1]))
r = d["workers"][0]["rounds"][0]
assert d["ok"] and r["verified"] and r["contrib"] == 2, d
assert time.time() >= int(sys.argv[2]) and r["ms"] < 10000, r
' "$tmp/out" "$t0" && ok "--start-at: the round waited for the start, then ran" ||
	not_ok "--start-at: $(head -c 300 "$tmp/out")"

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
# 11's table changes while its round runs, which gets no result (11 is alone in epoch 2):
# 2 s later it stops the round and runs it again under epoch 3, where 12 is, and both
# complete without a timeout (were the change only seen when 11's round timed out, 12
# would time out too and go on with the round).
# 11 starts once the stand-in has 12's first chunk, and its table changes once the
# stand-in has 11's.
sed 's/"epoch": 2,/"epoch": 3,/' "$tmp/t.json" >"$tmp/t3.json"
cp "$tmp/t.json" "$tmp/t11.json"
"$worker" --table "$tmp/t3.json" --worker-id 12 --first-round 40 --follow --timeout 60 \
	--json >"$tmp/out12" 2>&1 &
p12=$!
wait_for_line "$tmp/gw.log" '^contrib epoch 3 round 40 origin 12$' 60 "$p12" ||
	not_ok "worker 12 sent nothing under epoch 3: $(cat "$tmp/out12")"
(wait_for_line "$tmp/gw.log" '^contrib epoch 2 round 40 origin 11$' 60 &&
	cp "$tmp/t3.json" "$tmp/t11.new" && mv "$tmp/t11.new" "$tmp/t11.json") &
expect 0 "--follow: a round begun under two epochs" "$worker" --table "$tmp/t11.json" \
	--worker-id 11 --first-round 40 --follow --timeout 60
grep -q "worker 11 round 40: epoch 3 installed, round run again" "$tmp/out" &&
	grep -q "worker 11 round 40: .* 2 contributors, verified" "$tmp/out" &&
	ok "stopped at the table's change, run again under the new epoch" ||
	not_ok "worker 11: $(cat "$tmp/out" "$tmp/err")"
wait $p12 && python3 -c '
import json, sys
w = json.load(open(sys.argv[1]))["workers"][0]
assert w["ok"] and w["rounds"][0]["contrib"] == 2, w
assert w["stats"]["timeouts"] == 0 and w["stats"]["cancels"] == 0, w["stats"]
' "$tmp/out12" && ok "its partner completed the round under epoch 3, no timeout" ||
	not_ok "worker 12: $(cat "$tmp/out12")"

# ---- --multicast: a selmcast job's table, streams and no trees ----
kill "$gw_pid" 2>/dev/null
wait "$gw_pid" 2>/dev/null
MN=2000 MCE=64
MC=$(((MN + MCE - 1) / MCE)) # 32 chunks, the last one of 16 elements
Q=$((P + 100))
mw() { echo "{\"id\": $1, \"ipv4\": \"127.0.0.1\", \"port\": $2}"; }
wl() { echo "$(mw 11 $((Q + 1))), $(mw 12 $((Q + 2)))"; }
cat >"$tmp/m.json" <<JSON
{"format": "georeduce-table/1", "job": 10, "epoch": 3,
 "gateway": {"id": 1, "ipv4": "127.0.0.1", "base_port": $Q, "ports": 1},
 "dtype": "fp32", "elements": $MN, "chunk_elements": $MCE,
 "limits": {"max_trees": 1, "max_children": 1, "max_workers": 4, "max_slots": 256},
 "trees": [],
 "streams": [{"id": 0, "source": 1, "from": null, "to": [], "deliver": [$(wl)],
              "rate_gbps": 1.0, "origins": [11, 12]},
             {"id": 1, "source": 2,
              "from": {"id": 2, "ipv4": "127.0.0.2", "base_port": $Q, "ports": 1}, "to": [], "deliver": [$(wl)], "rate_gbps": 1.0, "origins": [21, 22]}]}
JSON
m() { "$worker" --table "$tmp/m.json" --multicast "$@"; }
expect 2 "streams only, without --multicast" "$worker" --table "$tmp/m.json" --worker-id 11
grep -q "use --multicast" "$tmp/err" && ok "says to use --multicast" || not_ok "$(cat "$tmp/err")"
expect 2 "--multicast on a table without streams" w --multicast --worker-id 11
grep -q "neither sends nor receives" "$tmp/err" && ok "says why" || not_ok "$(cat "$tmp/err")"
expect 2 "--require-all without --multicast" w --worker-id 11 --require-all
expect 2 "--round-interval without --multicast" w --worker-id 11 --round-interval 1
expect 2 "--multicast with --input" m --worker-id 11 --input "$tmp/in.bin"
expect 2 "--multicast with --all-workers" m --worker-id 11 --all-workers 11,12
expect 2 "--round-interval 0" m --worker-id 11 --round-interval 0
expect 2 "--start-at -1" m --worker-id 11 --start-at -1

# The stand-in: MCAST from 11 or 12 goes to the other one; each chunk of 11's also brings
# that chunk of the remote origins 21 and 22 to both (stream 1, as B's gateway would).
# Round 41 corrupts one element of 22's chunk 3 to 12, round 42 loses 21's chunk 4 to 11,
# round 43 loses every chunk of 22 to 12. The workers' NACK_MCASTs for what was lost get
# no answer here (gateways' repairs: dataplane_e2e.sh).
python3 - "$Q" >"$tmp/mgw.log" 2>&1 <<'PY' &
import socket, struct, sys, time
HDR = struct.Struct(">HBBBBBBIIHHHHIIHHII10s")   # docs/PROTOCOL.md section 3
q = int(sys.argv[1])
port = {11: q + 1, 12: q + 2}
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
s.bind(("127.0.0.1", q))
s.settimeout(0.5)
print("ready", flush=True)
end = time.time() + 600
def send(stream, origin, rnd, chunk, count, job, epoch, body, to):
    hdr = HDR.pack(0x4752, 1, 8, 0, 1, 0, 0, job, epoch, stream, 1, origin, 1, rnd, chunk,
                   count, 0, 0, 0, bytes(10))
    s.sendto(hdr + body, ("127.0.0.1", port[to]))
while time.time() < end:
    try:
        pkt, addr = s.recvfrom(9000)
    except socket.timeout:
        continue
    f = HDR.unpack_from(pkt)
    typ, job, epoch, tree, sender, origin = f[2], f[7], f[8], f[9], f[10], f[11]
    rnd, chunk, count = f[13], f[14], f[15]
    if typ == 9 and sender in port:
        continue    # NACK_MCAST: this stand-in retains nothing and answers none
    if typ != 8 or tree != 0 or sender != origin or origin not in port:
        print("unexpected packet", f, flush=True)
        continue
    send(0, origin, rnd, chunk, count, job, epoch, pkt[HDR.size:], 23 - origin)
    if origin != 11:
        continue
    for o in (21, 22):
        vals = [float((7 * o + chunk * 64 + i) % 61) for i in range(count)]
        for to in (11, 12):
            v = list(vals)
            if rnd == 41 and o == 22 and chunk == 3 and to == 12:
                v[5] += 1.0
            if (rnd == 42 and o == 21 and chunk == 4 and to == 11) or \
               (rnd == 43 and o == 22 and to == 12):
                continue
            send(1, o, rnd, chunk, count, job, epoch, struct.pack("<%df" % count, *v), to)
PY
gw_pid=$!
wait_for_line "$tmp/mgw.log" '^ready$' 60 "$gw_pid" && ok "multicast stand-in ready" ||
	not_ok "multicast stand-in: $(cat "$tmp/mgw.log")"

expect 0 "--multicast: two workers, two rounds" m --worker-id 11 --worker-id 12 --rounds 2 \
	--first-round 38 --timeout 5
[ "$(grep -c "3 of 3 origins complete, $((3 * MC)) chunks verified$" "$tmp/out")" -eq 4 ] &&
	ok "every round: 3 origins complete, every chunk verified" ||
	not_ok "multicast rounds: $(cat "$tmp/out")"
grep -q "worker 12 round 39: .* ms, $MC chunks sent, " "$tmp/out" && ok "says the chunks sent" ||
	not_ok "multicast line: $(cat "$tmp/out")"
expect 0 "--multicast --json" m --worker-id 11 --worker-id 12 --first-round 40 --timeout 5 --json
python3 -c '
import json, sys
d, mc = json.load(open(sys.argv[1])), int(sys.argv[2])
assert d["ok"] and d["multicast"] and len(d["workers"]) == 2
for w in d["workers"]:
    r = w["rounds"][0]
    assert w["ok"] and r["verified"] and r["round"] == 40 and r["sent"] == mc, r
    assert r["origins"] == 3 and r["origins_complete"] == 3 and r["chunks_verified"] == 3 * mc
    assert r["chunks_missing"] == 0 and r["chunks_wrong"] == 0
    assert w["stats"]["mcast_sent"] == mc and w["stats"]["mcast_received"] == 3 * mc
' "$tmp/out" "$MC" && ok "multicast JSON summary" || not_ok "multicast JSON: $(head -c 600 "$tmp/out")"

# Workers in two processes keep in step by the clock. A process that starts late still
# sends round 38 while the other receives it, if it is less than the interval late: the
# start leaves a second for both to start, the interval two more.
t0=$(python3 -c 'import time; print("%.3f" % (time.time() + 1))')
m --worker-id 12 --rounds 2 --first-round 38 --start-at "$t0" --round-interval 2 \
	>"$tmp/out12" 2>&1 &
p12=$!
expect 0 "--start-at, --round-interval: two processes" m --worker-id 11 --rounds 2 \
	--first-round 38 --start-at "$t0" --round-interval 2
if wait $p12 && [ "$(grep -c "3 of 3 origins complete" "$tmp/out" "$tmp/out12" |
	awk -F: '{s += $2} END {print s}')" = 4 ]; then
	ok "both processes verified both rounds"
else
	not_ok "two processes: $(cat "$tmp/out" "$tmp/out12")"
fi

expect 1 "a corrupted chunk fails the round" m --worker-id 11 --worker-id 12 --first-round 41 \
	--timeout 5
want=$(python3 -c 'import struct
v = float((7 * 22 + 197) % 61)
b = lambda x: struct.unpack("<I", struct.pack("<f", x))[0]
print("0x%x, want 0x%x" % (b(v + 1), b(v)))')
grep -qx "georeduce-worker: worker 12 round 41: origin 22 chunk 3 element 197 is $want (1 wrong chunks)" \
	"$tmp/err" && ok "names worker, origin, chunk and element" || not_ok "corrupted: $(cat "$tmp/err")"
grep -q "worker 12 round 41: .*3 of 3 origins complete, $((3 * MC - 1)) chunks verified, 1 WRONG (failed)" \
	"$tmp/out" && grep -q "worker 11 round 41: .*$((3 * MC)) chunks verified$" "$tmp/out" &&
	ok "the round line counts the wrong chunk" || not_ok "corrupted line: $(cat "$tmp/out")"

expect 0 "a lost chunk is reported, not a failure" m --worker-id 11 --worker-id 12 \
	--first-round 42 --timeout 2
grep -q "worker 11 round 42: .*2 of 3 origins complete, $((3 * MC - 1)) chunks verified, 1 missing$" \
	"$tmp/out" && ok "says 1 missing" || not_ok "lost chunk: $(cat "$tmp/out")"
expect 1 "--require-all: a lost chunk fails" m --worker-id 11 --worker-id 12 --first-round 42 \
	--timeout 2 --require-all
grep -q "worker 11 round 42: 2 of 3 origins complete, 1 chunks missing after .* ms (--require-all)" \
	"$tmp/err" && ok "says why" || not_ok "--require-all: $(cat "$tmp/err")"
expect 1 "an origin that sent nothing fails" m --worker-id 11 --worker-id 12 --first-round 43 \
	--timeout 2
grep -q "worker 12 round 43: nothing from origin 22 in .* ms (2 of 3 origins complete, $MC chunks missing)" \
	"$tmp/err" && [ "$(wc -l <"$tmp/err")" -eq 1 ] && ok "names the origin" ||
	not_ok "silent origin: $(cat "$tmp/err")"
grep -q "unexpected" "$tmp/mgw.log" && not_ok "stand-in: $(cat "$tmp/mgw.log")" ||
	ok "the stand-in saw only MCAST and NACK_MCAST of the local workers"

echo "cli_worker: $n tests, $fails failed"
[ "$fails" -eq 0 ]
