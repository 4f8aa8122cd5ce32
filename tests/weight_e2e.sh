#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Jobs share the WAN by weight (docs/CONTROL.md), on the emulated WAN with real processes
# (scripts/lib/wan.sh): two sites, one shaped link of 8 Mbit/s, two mtree jobs of weights 3
# and 1, georeduce-control installing them over TLS and the workers joining through it,
# both jobs running AllReduce rounds through the gateways at the same time.
#
#   weight_e2e.sh BUILD   (root; skipped otherwise)
#
# Checks: before any round, both jobs idle, each is planned over the whole link (only the
# jobs that run share it); once both run, `status` gives each job its weight and its share
# of the link (3/4 and 1/4 of it, each direction), the plans' rates follow the shares; the
# metrics say the same; while both jobs' rounds run, the bytes each job's gateways hand to
# the link (counted by the gateways, first transmissions and retransmissions, both paced;
# read through `status`, links[].sent_bytes and retx_bytes) split 3:1 within 10%; and once
# their rounds are over and --idle-ms has passed, each has the whole link again.
#
# Both jobs must be backlogged at their pacers for the split to show: each job's tensor is
# sized so that at its share a round of either takes as long (3 MiB and 1 MiB, 4.2 s), so
# whatever a round costs beyond the link (the workers' turn between rounds, slower on a
# busy host) idles both alike; and the slot pools (the workers' windows) are at least 256
# chunks, so that a round trip that grows on a busy host (the pools are sized from the
# planned latency) does not bound the jobs by their windows instead of their pacers.
# Counted, not timed: the status is sampled every second, and only the intervals in which
# both jobs sent, both runs were still going and neither job changed its epoch count; at
# least 3 MiB of job 2 must be counted (about 3 of its rounds).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../scripts/lib/wan.sh
. "$ROOT/scripts/lib/wan.sh"
GEOREDUCE_ROOT=$ROOT
fails=0
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; fails=$((fails + 1)); }
finish() {
	echo "weight_e2e: $fails failed"
	[ "$fails" = 0 ]
	exit
}

BUILD=$(cd "${1:?usage: weight_e2e.sh BUILD}" && pwd)
if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
	echo "weight_e2e: needs root and network namespaces; skipped"
	exit 77
fi
D=$(mktemp -d /tmp/georeduce-weight-e2e.XXXXXX)
r1='' r2=''
# Whatever happens, the runs, the control process and the WAN go.
# shellcheck disable=SC2086
trap 'kill $r1 $r2 2>/dev/null; wan_control_stop "$D"; wan_down "$D"; rm -rf "$D"' EXIT
trap 'exit 130' INT TERM
CTL=$BUILD/control/daemon/georeduce-control
status_json() { "$CTL" status --socket "$D/control.sock" --json 2>/dev/null; }

# Two sites a and b, one worker each, 8 Mbit/s and 5 ms between them.
cat >"$D/topo.json" <<'JSON'
{"format": "georeduce-topology/1", "name": "wt",
 "nodes": [{"id": "a", "workers": 1}, {"id": "b", "workers": 1}],
 "links": [{"a": "a", "b": "b", "gbps": 0.008, "latency_ms": 5}]}
JSON
# 3 MiB of fp32 a round for job 1 at 6 Mbit/s, 1 MiB for job 2 at 2 Mbit/s: 4.2 s each.
if wan_up "$D" "$D/topo.json" "$BUILD" --scale 1 --jobs mtree,mtree --weights 3,1 \
	--elements 786432,262144 --slots-min 256 --prefix "grwt$$" --tls; then
	ok "up: two sites, two jobs of weights 3 and 1"
else
	not_ok "up"
	cat "$D"/gw*.log 2>/dev/null | tail -30
	finish
fi
MPORT=$((20000 + $$ % 20000))
# Short hysteresis: the jobs' re-plans when they start and stop running come within seconds.
wan_control_start "$D" --metrics "127.0.0.1:$MPORT" --idle-ms 3000 --min-epoch-ms 2000
if wan_control_wait "$D"; then
	ok "both jobs live"
else
	not_ok "the jobs did not go live: $(tail -5 "$D/control.log")"
	finish
fi

# Idle, each job has the whole link: the jobs that run share it, and neither runs yet.
status_json >"$D/status.json"
if python3 - "$D/status.json" <<'PY'; then
import json, sys
s = json.load(open(sys.argv[1]))
for j in s["jobs"]:
    assert j["running"] is False and j["idle_s"] is None, j
    (lk,) = j["links"]
    assert all(abs(x - 0.008) < 1e-9 for x in lk["share_gbps"]), lk
    assert abs(j["rate_gbps"] - 0.008) < 0.008 * 0.01, j["rate_gbps"]
PY
	ok "idle: each job planned over the whole link"
else
	not_ok "idle: $(python3 -m json.tool "$D/status.json" | grep -A12 '"weight"' | head -40)"
fi

# Both jobs' rounds at once.
first=$(($(date +%s) % 100000000 * 16))
wan_run "$D" 1 12 "$first" >"$D/run1" 2>&1 &
r1=$!
wan_run "$D" 2 12 "$first" >"$D/run2" 2>&1 &
r2=$!
# Both run: wait for their shares, and for both re-planned over them.
shared() {
	status_json | python3 -c '
import json, sys
s = json.load(sys.stdin)
ok = all(j["running"] and j["state"] == "live" and
         abs(j["links"][0]["share_gbps"][0] - 0.008 * p) < 1e-9 and
         abs(j["rate_gbps"] - 0.008 * p) < 0.008 * p * 0.01
         for j, p in zip(s["jobs"], (0.75, 0.25)))
sys.exit(not ok)' 2>/dev/null
}
for _ in $(seq 150); do
	shared && break
	sleep 0.2
done
# The shares as status reports them.
status_json >"$D/status.json"
if python3 - "$D/status.json" <<'PY'; then
import json, sys
s = json.load(open(sys.argv[1]))
j1, j2 = s["jobs"]
assert j1["weight"] == 3 and j2["weight"] == 1, (j1["weight"], j2["weight"])
for j, part in ((j1, 0.75), (j2, 0.25)):
    (lk,) = j["links"]
    assert (lk["a"], lk["b"]) == ("a", "b"), lk
    for d in (0, 1):
        assert abs(lk["share_gbps"][d] - 0.008 * part) < 1e-9, lk
        assert 0 < lk["planned_gbps"][d] <= lk["share_gbps"][d] * (1 + 1e-6), lk
    assert abs(j["rate_gbps"] - 0.008 * part) < 0.008 * part * 0.01, j["rate_gbps"]
PY
	ok "status: weights 3 and 1, shares 6 and 2 Mbit/s of the link, the plans' rates follow"
else
	not_ok "status: $(python3 -m json.tool "$D/status.json" | grep -A12 '"weight"' | head -40)"
fi
# The same in the metrics (bytes per second).
ip netns exec "$(wan_ctl "$D" ns)" curl -sf "http://127.0.0.1:$MPORT/metrics" >"$D/metrics" || :
if grep -q '^georeduce_control_job_weight{job="1"} 3$' "$D/metrics" &&
	grep -q '^georeduce_control_job_weight{job="2"} 1$' "$D/metrics" &&
	grep -q '^georeduce_control_job_running{job="2"} 1$' "$D/metrics" &&
	grep -q '^georeduce_control_job_link_share_bytes_per_second{job="1",link="a-b",from="a",to="b"} 750000$' "$D/metrics" &&
	grep -q '^georeduce_control_job_link_share_bytes_per_second{job="2",link="a-b",from="b",to="a"} 250000$' "$D/metrics" &&
	grep -q '^georeduce_control_job_link_planned_bytes_per_second{job="2",link="a-b",from="a",to="b"} 250000$' "$D/metrics"; then
	ok "metrics: each job's weight, that it runs, and its share of each link direction"
else
	not_ok "metrics: $(grep 'job_weight\|job_link' "$D/metrics" | head -12)"
fi

# Sample every second while both run: each job's epoch and the bytes of its live epoch on
# the link (both directions, first transmissions and retransmissions), then whether both
# runs still go (if so, the interval up to this sample had both running).
: >"$D/samples"
while kill -0 "$r1" 2>/dev/null && kill -0 "$r2" 2>/dev/null; do
	status_json | python3 -c '
import json, sys, time
s = json.load(sys.stdin)
out = ["%.3f" % time.monotonic()]
for j in s["jobs"]:
    b = sum(sum(l["sent_bytes"]) + sum(l["retx_bytes"]) for l in j["links"])
    out += [str(j["epoch"]), str(b)]
print(" ".join(out))' >>"$D/samples" 2>/dev/null
	if kill -0 "$r1" 2>/dev/null && kill -0 "$r2" 2>/dev/null; then
		echo alive >>"$D/samples"
	fi
	sleep 1
done
wait "$r1" && wait "$r2" && [ "$(cat "$D/run1" "$D/run2" | wc -l)" = 24 ] &&
	ok "both jobs' rounds ran at once, every result verified" ||
	{ not_ok "the rounds"; tail -5 "$D/run1" "$D/run2"; }
r1='' r2=''

# Their rounds over, both go idle and have the whole link again.
alone() {
	status_json | python3 -c '
import json, sys
s = json.load(sys.stdin)
sys.exit(not all(not j["running"] and j["state"] == "live" and
                 abs(j["rate_gbps"] - 0.008) < 0.008 * 0.01 for j in s["jobs"]))' 2>/dev/null
}
for _ in $(seq 300); do # up to 8 --idle-ms for a job that came back soon after going idle
	alone && break
	sleep 0.2
done
if alone; then
	ok "idle again: each job re-planned over the whole link"
else
	not_ok "idle again: $(status_json | python3 -c 'import json,sys; print([(j["running"], j["state"], j["rate_gbps"]) for j in json.load(sys.stdin)["jobs"]])')"
fi
grep -q "job 1: idle for" "$D/control.log" && grep -q "job 2: running" "$D/control.log" &&
	ok "the log says when each job runs and goes idle" ||
	not_ok "the log: $(grep 'running\|idle for' "$D/control.log" | head -4)"

# Count the intervals between two samples where both jobs sent, in the same epochs, and
# both runs were still going at the second.
if python3 - "$D/samples" <<'PY'; then
import sys
lines = open(sys.argv[1]).read().split("\n")
samples = []
for i, line in enumerate(lines):
    f = line.split()
    if len(f) != 5:
        continue
    alive = i + 1 < len(lines) and lines[i + 1] == "alive"
    samples.append((float(f[0]), f[1], int(f[2]), f[3], int(f[4]), alive))
b1 = b2 = n = 0
t = 0.0
for a, b in zip(samples, samples[1:]):
    d1, d2 = b[2] - a[2], b[4] - a[4]
    if a[1] != b[1] or a[3] != b[3] or not b[5] or d1 <= 0 or d2 <= 0:
        continue
    b1, b2, n, t = b1 + d1, b2 + d2, n + 1, t + b[0] - a[0]
# Both directions together: per direction, half of it.
print("%d intervals, %.1f s: job 1 %d bytes (%.2f Mbit/s each way), job 2 %d bytes "
      "(%.2f Mbit/s each way), ratio %.3f" %
      (n, t, b1, b1 * 4 / t / 1e6 if t else 0, b2, b2 * 4 / t / 1e6 if t else 0,
       b1 / b2 if b2 else 0))
assert b2 >= 3 << 20, "too little of job 2 counted to tell"
assert abs(b1 / b2 - 3) <= 0.3, "not 3:1 within 10%"
PY
	ok "the link's bytes split 3:1 within 10%"
else
	not_ok "the split (samples: $(wc -l <"$D/samples") lines)"
	grep -v "live on" "$D/control.log" | tail -20
fi
finish
