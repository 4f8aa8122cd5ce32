#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# georeduce-control status --watch against a real control process and three real
# georeduce-dataplane processes (net_null ports: every frame they hand over is dropped as
# not_ipv4_frame, which gives the drop counters something to count) on the 3-site example
# deployment: --count snapshots on a pipe, each complete, with the jobs' epochs, rounds,
# per-link planned and measured rates and every gateway's drops matching `status --json`;
# --json lines; the in-place redraw with ANSI escapes on a terminal (script(1)); SIGINT
# ends it cleanly; a control process that goes away ends it with one line and status 2;
# bad options. tls_e2e.sh watches over TLS while workers run rounds.
#
#   watch_e2e.sh CONTROL DATAPLANE DPCTL
set -u
CONTROL=$1
DP=$2
DPCTL=$3
source "$(dirname "$0")/clilib.sh"
P=grw$$
source "$(dirname "$0")/nulldp.sh"

# ---- bad options: status 2, one line ---------------------------------------------------
expect 2 "--interval without --watch" "$CONTROL" status --interval 2 --socket "$tmp/none.sock"
expect 2 "--count without --watch" "$CONTROL" status --count 2 --socket "$tmp/none.sock"
expect 2 "--interval 0" "$CONTROL" status --watch --interval 0 --socket "$tmp/none.sock"
expect 2 "--interval not a number" "$CONTROL" status --watch --interval soon
expect 2 "--count negative" "$CONTROL" status --watch --count -1
expect 2 "--watch with replan" "$CONTROL" replan --watch --socket "$tmp/none.sock"
expect 2 "--watch and no control process" "$CONTROL" status --watch --count 1 \
	--socket "$tmp/none.sock"
grep -q "none.sock" "$tmp/err" || not_ok "the error names the socket: $(cat "$tmp/err")"

# ---- three dataplanes and the control process ------------------------------------------
start_dps

start_daemon() {
	"$CONTROL" run "$tmp/deploy.json" --socket "$tmp/ctl.sock" --heartbeat-ms 100 \
		--fail-after 3 --timeout-ms 3000 2>>"$tmp/daemon.log" &
	daemon=$!
}
start_daemon
# Ready: every job live on a, b and c, and every gateway's drops sampled twice.
ready() {
	local st
	st=$("$CONTROL" status --socket "$tmp/ctl.sock" --json 2>/dev/null) &&
		echo "$st" | jq -e '
		([.jobs[] | select(.state == "live" and (.gateways | length) == 3)] | length) == 3
		and ([.gateways[] | select(.drops_per_s != null and .dropped > 0)] | length) == 3
		and ([.jobs[] | select(.rounds != null)] | length) >= 1' >/dev/null
}
for _ in $(seq 600); do ready && break; sleep 0.1; done
if ready; then
	ok "the control process runs every job on a, b and c"
else
	not_ok "the control process never got ready: $(tail -5 "$tmp/daemon.log")"
	exit 1
fi

# ---- snapshots on a pipe ---------------------------------------------------------------
expect 0 "--watch --count 3 on a pipe" "$CONTROL" status --watch --count 3 --interval 0.2 \
	--socket "$tmp/ctl.sock"
cp "$tmp/out" "$tmp/watch.txt"
"$CONTROL" status --socket "$tmp/ctl.sock" --json >"$tmp/status.json"
if python3 - "$tmp/watch.txt" "$tmp/status.json" >"$tmp/py" 2>&1 <<'PY'; then
import json, re, sys
text = open(sys.argv[1]).read()
st = json.load(open(sys.argv[2]))
assert "\033" not in text, "escapes on a pipe"
snaps = re.split(r"(?m)^(?=georeduce-control status --watch: )", text)
snaps = [s for s in snaps if s.strip()]
assert len(snaps) == 3, len(snaps)
for i, s in enumerate(snaps, 1):
    head = s.splitlines()[0]
    assert re.search(r"refresh %d every 0.2 s, \d\d:\d\d:\d\d UTC$" % i, head), head
    assert "gateways: 3 up, 0 down, 0 not heard from yet" in s, s
    # every job with its epoch, every gateway with its drops, every link direction
    for j in st["jobs"]:
        assert re.search(r"(?m)^  job %d \(%s, %s\): epoch \d+ live" %
                         (j["job"], j["algorithm"], j["dtype"]), s), (j["job"], s)
    rounds = re.findall(r"(?m)^    rounds: (\d+) done, round (\d+) \[([#-]{20})\] +(\d+)%, "
                        r"(\d+) chunks in flight \(of (\d+) a round\)$", s)
    assert len(rounds) == sum(1 for j in st["jobs"] if j["rounds"] is not None), s
    for done, nxt, bar, pct, infl, per in rounds:
        assert int(nxt) == int(done) + 1 and int(per) > 0, (done, nxt, per)
        assert bar.count("#") == round(int(pct) / 5), (bar, pct)
    for g in st["gateways"]:
        m = re.search(r"(?m)^  %s +up +\S+ +\S+ +\S+ +(\d+) +(\S+)  (.*)$" % g["name"], s)
        assert m, (g["name"], s)
        assert int(m.group(1)) > 0, m.group(0)
        assert m.group(3).startswith("not_ipv4_frame "), m.group(0)
    dirs = [d for l in st["links"] for d in l["directions"]]
    links = s[s.index("\nlinks (Gbit/s, measured against planned)\n"):]
    rows = re.findall(r"(?m)^  (\w+) +(\w+) +([\d.]+) +([\d.]+|-) +([\d.]+)  ", links)
    assert sorted((f, t) for f, t, *_ in rows) == sorted((d["from"], d["to"]) for d in dirs), rows
    for f, t, planned, measured, cap in rows:
        d = [d for d in dirs if (d["from"], d["to"]) == (f, t)][0]
        assert abs(float(planned) - d["planned_gbps"]) <= 1e-4 + 1e-4 * d["planned_gbps"]
        assert abs(float(cap) - d["capacity_gbps"]) <= 1e-4 * d["capacity_gbps"] + 1e-4
    # with a job's trees: planned against measured
    assert re.search(r"(?m)^    tree 0 +root \w+ +[\d.]+ planned +([\d.]+|-) measured", s), s
PY
	ok "three complete snapshots: jobs, rounds, gateways with their drops, every link"
else
	not_ok "snapshots: $(tail -5 "$tmp/py")"
	head -40 "$tmp/watch.txt" | sed 's/^/#   /'
fi

expect 0 "--watch --json --count 2" "$CONTROL" status --watch --json --count 2 --interval 0.1 \
	--socket "$tmp/ctl.sock"
if python3 - "$tmp/out" <<'PY'; then
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 2, len(lines)
docs = [json.loads(l) for l in lines]
assert [d["refresh"] for d in docs] == [1, 2]
for d in docs:
    assert all(g["dropped"] > 0 and "not_ipv4_frame" in g["drops"] for g in d["gateways"]), d
    r = [j["rounds"] for j in d["jobs"] if j["rounds"] is not None][0]
    assert r["completed"] == 0 and r["chunks_per_round"] > 0 and r["chunks_in_flight"] == 0, r
PY
	ok "--json: one document a line, with drops by reason and rounds"
else
	not_ok "--watch --json: $(head -c 400 "$tmp/out")"
fi

# ---- on a terminal: redrawn in place ---------------------------------------------------
if command -v script >/dev/null; then
	TERM=xterm script -qec "'$CONTROL' status --watch --count 2 --interval 0.1 --socket \
'$tmp/ctl.sock'" /dev/null >"$tmp/tty.out" 2>&1
	rc=$?
	if [ "$rc" = 0 ] && python3 - "$tmp/tty.out" <<'PY'; then
import sys
t = open(sys.argv[1], "rb").read()
assert t.startswith(b"\033[?25l\033[H\033[2J"), t[:40]   # cursor hidden, screen cleared
assert t.count(b"\033[H") == 3, t.count(b"\033[H")          # then home before each refresh
assert t.count(b"\033[J") == 2 and b"\033[K" in t
assert t.rstrip().endswith(b"\033[?25h"), t[-40:]           # the cursor back
assert b"refresh 2 every 0.1 s" in t
PY
		ok "on a terminal: each refresh redrawn in place, the cursor restored"
	else
		not_ok "terminal: exit $rc: $(head -c 300 "$tmp/tty.out" | od -c | head -5)"
	fi
fi

# ---- SIGINT ends it cleanly ------------------------------------------------------------
"$CONTROL" status --watch --interval 0.2 --socket "$tmp/ctl.sock" >"$tmp/int.out" 2>"$tmp/int.err" &
w=$!
if wait_for_line "$tmp/int.out" "^links " 60 $w; then
	kill -INT $w
	wait $w
	rc=$?
	last=$(tail -1 "$tmp/int.out")
	[ "$rc" = 0 ] && [ ! -s "$tmp/int.err" ] && echo "$last" | grep -Eq '^  \w+ +\w+ +[0-9.]+ ' &&
		ok "SIGINT: exit 0, no error, the last snapshot complete" ||
		not_ok "SIGINT: exit $rc, stderr $(cat "$tmp/int.err"), last line '$last'"
else
	not_ok "watch printed nothing: $(cat "$tmp/int.err")"
	kill -KILL $w 2>/dev/null
fi

# ---- the control process goes away -----------------------------------------------------
"$CONTROL" status --watch --interval 0.1 --socket "$tmp/ctl.sock" >"$tmp/gone.out" 2>"$tmp/gone.err" &
w=$!
if wait_for_line "$tmp/gone.out" "refresh 2 " 60 $w; then
	kill -TERM "$daemon"
	wait "$daemon"
	daemon=
	for _ in $(seq 600); do kill -0 $w 2>/dev/null || break; sleep 0.1; done
	if kill -0 $w 2>/dev/null; then
		not_ok "watch goes on without its control process"
		kill -KILL $w
	else
		wait $w
		rc=$?
		[ "$rc" = 2 ] && [ "$(wc -l <"$tmp/gone.err")" = 1 ] &&
			grep -q "the control process stopped answering after [0-9]* refreshes: .*ctl.sock" \
				"$tmp/gone.err" &&
			ok "the control process gone: status 2, one line ($(cat "$tmp/gone.err"))" ||
			not_ok "control process gone: exit $rc: $(cat "$tmp/gone.err")"
	fi
else
	not_ok "watch printed no second refresh: $(cat "$tmp/gone.err")"
	kill -KILL $w 2>/dev/null
fi

echo "# $((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]
