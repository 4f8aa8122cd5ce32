#!/usr/bin/env bash
# georeduce-dpctl end to end: bad options and inputs exit 2 with one line, a missing socket
# exits 2 naming it, and against a stand-in dataplane written from docs/CONTROL.md alone
# (Python, stdlib only) every command exits 0 on ok:true and 1 on ok:false, with --json.
# Usage: tests/cli_dpctl.sh PATH/TO/georeduce-dpctl
set -u
dpctl=${1:?usage: cli_dpctl.sh PATH/TO/georeduce-dpctl}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
server_pid=
cleanup() {
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
n=0

ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; }
check() { if eval "$2"; then ok "$1"; else not_ok "$1"; fi; }

# expect STATUS DESCRIPTION CMD...: exit status must match; on status 1 and 2 the error
# must be exactly one line on stderr.
expect() {
	local want=$1 desc=$2
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err" <"${STDIN:-/dev/null}"
	local got=$?
	if [ "$got" -ne "$want" ]; then
		not_ok "$desc (exit $got, want $want): $(head -c 300 "$tmp/err")"
		return
	fi
	if [ "$want" -ne 0 ] && [ "$(wc -l <"$tmp/err")" -ne 1 ]; then
		not_ok "$desc: want one line on stderr, got $(wc -l <"$tmp/err")"
		return
	fi
	ok "$desc"
}

sock=$tmp/dp.sock
d() { "$dpctl" --socket "$sock" --timeout-ms 3000 "$@"; }

# The table of docs/TABLES.md's example (test_table checks that it is valid).
python3 - "$tmp/table.json" <<'PY'
import re, sys
doc = open("docs/TABLES.md").read()
m = re.search(r"## Example.*?```json\n(.*?)```", doc, re.S)
open(sys.argv[1], "w").write(m.group(1))
PY
sed 's/"expected": 2/"expected": 3/' "$tmp/table.json" >"$tmp/bad-table.json"

# ---- without a dataplane ----
expect 0 "--help" "$dpctl" --help
grep -q "/run/georeduce/dataplane.sock" "$tmp/out" && ok "help names the default socket" ||
	not_ok "help names the default socket"
expect 2 "no command" "$dpctl"
expect 2 "unknown command" d frobnicate
expect 2 "unknown option" "$dpctl" --frob ping
expect 2 "unknown short option" "$dpctl" -x ping
expect 2 "--socket without a path" "$dpctl" --socket
expect 2 "bad --timeout-ms" "$dpctl" --timeout-ms 0 ping
expect 2 "--timeout-ms not a number" "$dpctl" --timeout-ms soon ping
expect 2 "activate without EPOCH" d activate 7
expect 2 "activate JOB not a number" d activate seven 3
grep -q "JOB" "$tmp/err" && ok "error names JOB" || not_ok "error names JOB"
expect 2 "activate EPOCH over 32 bits" d activate 7 4294967296
expect 2 "activate negative JOB" d activate -1 3
expect 2 "remove with two jobs" d remove 1 2
expect 2 "ping with an argument" d ping 1
expect 2 "prepare without a file" d prepare
expect 2 "prepare a missing file" d prepare "$tmp/nope.json"
grep -q "nope.json" "$tmp/err" && ok "error names the file" || not_ok "error names the file"
expect 2 "prepare an invalid table" d prepare "$tmp/bad-table.json"
grep -q "trees\[1\].expected" "$tmp/err" && ok "error names the table field" ||
	not_ok "error names the table field"
expect 2 "raw: not JSON" d raw '{"version":'
expect 2 "raw: not an object" d raw '[1]'
expect 2 "raw without an argument" d raw
expect 2 "socket path too long" "$dpctl" --socket "$tmp/$(printf 'x%.0s' {1..120})" ping
expect 2 "no dataplane" d ping
grep -q "$sock: cannot connect" "$tmp/err" && ok "error names the socket" ||
	not_ok "error names the socket: $(cat "$tmp/err")"
expect 2 "default socket absent" "$dpctl" --socket "$tmp/none.sock" version

# ---- a stand-in dataplane, written from docs/CONTROL.md ----
cat >"$tmp/server.py" <<'PY'
import json, os, socket, struct, sys

path, log = sys.argv[1], sys.argv[2]
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(4)
staged, live = {}, {}

def recv_exact(c, n):
    b = b""
    while len(b) < n:
        part = c.recv(n - len(b))
        if not part:
            raise EOFError
        b += part
    return b

def send(c, obj):
    body = json.dumps(obj, separators=(",", ":")).encode()
    c.sendall(struct.pack(">I", len(body)) + body)

def answer(req):
    rid = req.get("id")
    def err(e, msg):
        return {"version": 1, "id": rid, "ok": False, "errno": e, "error": msg}
    def ok(**res):
        return {"version": 1, "id": rid, "ok": True, **res}
    if req.get("version") != 1:
        return err(93, "field 'version': protocol version %s is not supported" % req.get("version"))
    op = req.get("op")
    args = {k: v for k, v in req.items() if k not in ("version", "id", "op")}
    if op == "ping":
        return ok()
    if op == "version":
        return ok(program="georeduce-dataplane", program_version="0.1.0", protocol=1,
                  table_format="georeduce-table/1")
    if op == "stats":
        lc = lambda n, rx: {"lcore": n, "rx_packets": rx, "rx_bytes": rx * 1100,
                            "tx_packets": rx // 2, "tx_bytes": rx * 550,
                            "chunks_completed": 5, "results_sent": 4,
                            "duplicates": 1, "drops": {"bad_magic": n, "unknown_job": 2}}
        return ok(lcores=[lc(1, 100), lc(2, 50)], ports=[{"port": 0, "rx_missed": 0}],
                  memory={"slot_bytes": 4096, "mempool": {"free": 10, "used": 2}}, jobs=[])
    if op in ("prepare", "install"):
        t = args.get("table")
        if set(args) != {"table"} or not isinstance(t, dict):
            return err(22, "field 'table': missing")
        key = (t["job"], t["epoch"])
        staged[key] = t
        if op == "prepare":
            return ok(job=t["job"], epoch=t["epoch"], state="prepared")
        args = {"job": t["job"], "epoch": t["epoch"]}
    if op in ("activate", "install"):
        key = (args.get("job"), args.get("epoch"))
        if key not in staged:
            return err(2, "nothing staged for job %s epoch %s" % key)
        live[key[0]] = dict(staged.pop(key), state="live")
        return ok(job=key[0], epoch=key[1], state="live")
    if op == "remove":
        if args.get("job") not in live:
            return err(2, "field 'job': no job %s" % args.get("job"))
        del live[args["job"]]
        return ok()
    if op == "dump":
        job = args.get("job")
        return ok(tables=[t for j, t in live.items() if job is None or j == job])
    if op == "silent":
        return None
    return err(95, "field 'op': unknown op '%s'" % op)

while True:
    c, _ = srv.accept()
    try:
        while True:
            (n,) = struct.unpack(">I", recv_exact(c, 4))
            req = json.loads(recv_exact(c, n))
            with open(log, "a") as f:
                f.write(json.dumps(req) + "\n")
            resp = answer(req)
            if resp is not None:
                send(c, resp)
    except EOFError:
        pass
    c.close()
PY
python3 "$tmp/server.py" "$sock" "$tmp/requests.log" &
server_pid=$!
for _ in $(seq 1200); do
	[ -S "$sock" ] && break
	sleep 0.05
done
check "stand-in dataplane listening" '[ -S "$sock" ]'

# last_request PYTHON_EXPR: evaluate an assertion on the last request the server got.
last_request() {
	python3 - "$tmp/requests.log" "$1" <<'PY'
import json, sys
req = json.loads(open(sys.argv[1]).read().splitlines()[-1])
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}

expect 0 "ping" d ping
grep -q "answered in" "$tmp/out" && ok "ping prints the round trip" || not_ok "ping output"
check "request envelope" \
	'last_request "req[\"version\"] == 1 and req[\"op\"] == \"ping\" and set(req) == {\"version\", \"id\", \"op\"}"'
expect 0 "version" d version
grep -q "georeduce-dataplane 0.1.0, control protocol 1, tables georeduce-table/1" "$tmp/out" &&
	ok "version line" || not_ok "version line: $(cat "$tmp/out")"
expect 0 "version --json" d --json version
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["ok"] and d["protocol"] == 1' \
	"$tmp/out" && ok "--json prints the response" || not_ok "--json prints the response"

expect 0 "stats" d stats
grep -qE '^  rx_packets +100 +50 +150$' "$tmp/out" && ok "stats: per-lcore counters and total" ||
	not_ok "stats table: $(cat "$tmp/out")"
grep -qE '^  drops.bad_magic +1 +2 +3$' "$tmp/out" && ok "stats: drops by reason" ||
	not_ok "stats drops"
grep -q "lcore 1" "$tmp/out" && grep -q "mempool.free" "$tmp/out" && grep -q "^jobs: none" "$tmp/out" &&
	ok "stats: headers, memory, jobs" || not_ok "stats sections: $(cat "$tmp/out")"

expect 0 "prepare" d prepare "$tmp/table.json"
grep -q "job 7 epoch 3: prepared" "$tmp/out" && ok "prepare output" || not_ok "prepare output"
check "prepare sends the file's table" \
	"last_request 'req[\"table\"] == json.load(open(\"$tmp/table.json\")) and set(req) == {\"version\", \"id\", \"op\", \"table\"}'"
expect 1 "activate an epoch never staged" d activate 7 9
grep -qx "georeduce-dpctl: activate: nothing staged for job 7 epoch 9 (No such file or directory)" \
	"$tmp/err" && ok "error line format" || not_ok "error line: $(cat "$tmp/err")"
expect 1 "activate --json on ok:false" d --json activate 7 9
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["ok"] is False and d["errno"] == 2' \
	"$tmp/out" && ok "--json prints the error response" || not_ok "--json error response"
expect 0 "activate" d activate 7 3
grep -q "job 7 epoch 3: live" "$tmp/out" && ok "activate output" || not_ok "activate output"
check "activate sends job and epoch" \
	'last_request "req[\"job\"] == 7 and req[\"epoch\"] == 3 and req[\"op\"] == \"activate\""'
STDIN=$tmp/table.json expect 0 "install from stdin" d install -
grep -q "job 7 epoch 3: live" "$tmp/out" && ok "install output" || not_ok "install output"
expect 0 "dump" d dump
grep -q "job 7 epoch 3 (live): gateway 3 10.0.0.3:40000+4" "$tmp/out" &&
	grep -q "tree 1 interior: chunks 24..39" "$tmp/out" &&
	grep -q "children \[2 10.0.0.2:40000+4 (1 worker below)\]" "$tmp/out" && ok "dump output" ||
	not_ok "dump output: $(cat "$tmp/out")"
expect 0 "dump JOB --json" d --json dump 7
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["tables"][0]["state"] == "live"' \
	"$tmp/out" && ok "dump --json" || not_ok "dump --json"
expect 0 "dump of another job" d dump 8
grep -q "no tables" "$tmp/out" && ok "dump: no tables" || not_ok "dump: no tables"
expect 1 "remove an unknown job" d remove 8
expect 0 "remove" d remove 7

expect 0 "raw request" d raw '{"version":1,"id":77,"op":"ping"}'
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["id"] == 77 and d["ok"]' \
	"$tmp/out" && ok "raw prints the response" || not_ok "raw output"
expect 1 "raw: another protocol version" d raw '{"version":2,"id":1,"op":"ping"}'
grep -q "Protocol not supported" "$tmp/err" && ok "EPROTONOSUPPORT named" ||
	not_ok "EPROTONOSUPPORT: $(cat "$tmp/err")"
expect 1 "raw: unknown op" d raw '{"version":1,"id":1,"op":"frobnicate"}'
expect 2 "no answer within the timeout" "$dpctl" --socket "$sock" --timeout-ms 200 \
	raw '{"version":1,"id":1,"op":"silent"}'
expect 0 "still answering after a timeout" d ping

# The Python client of docs/CONTROL.md, as printed there.
python3 - "$tmp/client.py" <<'PY'
import re, sys
doc = open("docs/CONTROL.md").read()
m = re.search(r"## A client in 20 lines of Python\n\n```python\n(.*?)```", doc, re.S)
open(sys.argv[1], "w").write(m.group(1))
PY
python3 "$tmp/client.py" "$sock" activate '{"job": 42, "epoch": 3}' >"$tmp/out" 2>&1
grep -q "'ok': False, 'errno': 2" "$tmp/out" && ok "CONTROL.md's Python client" ||
	not_ok "CONTROL.md's Python client: $(cat "$tmp/out")"
python3 "$tmp/client.py" "$sock" ping >"$tmp/out" 2>&1
grep -q "'id': 1, 'ok': True" "$tmp/out" && ok "CONTROL.md's Python client: ping" ||
	not_ok "CONTROL.md's Python client: ping: $(cat "$tmp/out")"

echo "# $((n - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
