#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# What keeping the jobs in etcd costs a job_create (BENCHMARKS.md): three net_null
# dataplanes (nulldp.sh) and one georeduce-control of the 3-site example deployment (its
# first job), run three ways in turn: a replica on a one-member etcd (the state written to
# etcd in a transaction), with a state directory (a file written, synced and renamed), and
# in memory. Each: N times `georeduce-control job create` of one small job then `job
# delete` of it, each command timed from its start to its exit (the command line's own
# start included, the same every way); min, median and max of the creates.
#
#   jobcreate_bench.sh CONTROL DATAPLANE DPCTL [N]   (from the source root; N 20)
set -u
CONTROL=$1
DP=$2
DPCTL=$3
N=${4:-20}
source "$(dirname "$0")/clilib.sh"
P=grb$$
source "$(dirname "$0")/nulldp.sh"
source "$(dirname "$0")/etcdlib.sh"
etcd_first || exit 1
jq '.jobs |= [.[0]]' "$tmp/deploy.json" >"$tmp/d1.json" && mv "$tmp/d1.json" "$tmp/deploy.json"
jq -c '.jobs[0] | .id = 9 | .elements = 65536 | .slots.max = 256 | .workers |= map(.port += 5)' \
	"$EXAMPLE" >"$tmp/job.json"
start_dps

# cycles NAME SOCKET: N creates and deletes, the creates' times (ms) into $tmp/NAME.ms.
cycles() {
	local t0 t1
	: >"$tmp/$1.ms"
	for _ in $(seq "$N"); do
		t0=$(date +%s%N)
		"$CONTROL" job create "$tmp/job.json" --socket "$2" >/dev/null ||
			not_ok "$1: job create failed"
		t1=$(date +%s%N)
		echo $(((t1 - t0) / 1000)) >>"$tmp/$1.ms"
		"$CONTROL" job delete 9 --socket "$2" >/dev/null || not_ok "$1: job delete failed"
	done
}
# daemon_up SOCKET: it answers status
daemon_up() {
	for _ in $(seq 300); do
		"$CONTROL" status --socket "$1" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	return 1
}

start_replica r1
wait_leader 60 r1 || { not_ok "no leader"; exit 1; }
cycles etcd "$tmp/r1.sock"
kill -TERM "${rpid[r1]}"
for way in statedir memory; do
	opts=()
	[ $way = statedir ] && opts=(--state-dir "$tmp/state")
	"$CONTROL" run "$tmp/deploy.json" --socket "$tmp/$way.sock" "${opts[@]}" \
		2>"$tmp/$way.log" &
	daemon=$!
	daemon_up "$tmp/$way.sock" || { not_ok "$way: control process did not start"; exit 1; }
	cycles $way "$tmp/$way.sock"
	kill -TERM $daemon
	wait $daemon 2>/dev/null
	daemon=
done
python3 - "$tmp" <<'PY'
import statistics, sys
for way in ("etcd", "statedir", "memory"):
    v = [int(l) / 1000 for l in open(f"{sys.argv[1]}/{way}.ms")]
    print(f"job create, {way}: n {len(v)}, min {min(v):.1f} ms, median "
          f"{statistics.median(v):.1f} ms, max {max(v):.1f} ms")
PY
echo "1..$n"
[ "$fails" -eq 0 ]
