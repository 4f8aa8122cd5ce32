#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Benchmarks of control replicas on etcd (BENCHMARKS.md), on one etcd server (MEMBERS=3 in
# the environment: a cluster of three), three
# net_null dataplanes (nulldp.sh) and the 3-site example deployment cut to its first job
# (etcdlib.sh, one_job_setup):
#
#  failover: three `georeduce-control run --etcd` replicas with the default heartbeat and
#    lease; the leader SIGKILLed N times (started again each time, as a follower). Per
#    kill: the time from the SIGKILL to the new leader winning its term ("leader of term"
#    in its log) and to the end of its first successful heartbeat round (its last
#    "gateway ... is up"); then min, median and max of each.
#  job_create: one control process run three ways in turn: a replica on etcd (the state
#    written to etcd in a transaction), with a state directory (a file written, synced and
#    renamed), and in memory. Each: N times `georeduce-control job create` of one small
#    job then `job delete` of it, each command timed from its start to its exit (the
#    command line's own start included, the same every way); min, median and max of the
#    creates.
#
#   replicas_bench.sh CONTROL DATAPLANE DPCTL failover|job_create [N]
#   (from the source root; N 20)
set -u
CONTROL=$1
DP=$2
DPCTL=$3
WHAT=$4
N=${5:-20}
source "$(dirname "$0")/clilib.sh"
P=grb$$
source "$(dirname "$0")/nulldp.sh"
source "$(dirname "$0")/etcdlib.sh"
one_job_setup

failover() {
	for r in r1 r2 r3; do start_replica $r; done
	wait_leader 60 r1 r2 r3 || { not_ok "no leader"; exit 1; }
	: >"$tmp/kills"
	for k in $(seq "$N"); do
		old=$leader
		others=$(echo r1 r2 r3 | tr ' ' '\n' | grep -v "^$old$" | tr '\n' ' ')
		# Every follower knows the leader (it polls every lease/3) before the kill.
		sleep 2
		t=$(date +%s.%N)
		kill -KILL "${rpid[$old]}"
		if ! wait_leader 60 $others; then
			not_ok "kill $k: no new leader"
			break
		fi
		term=$(st "$leader" .election.term)
		for _ in $(seq 100); do
			[ "$(grep -A3 "leader of term $term " "$tmp/$leader.log" | grep -c "is up")" = 3 ] &&
				break
			sleep 0.1
		done
		echo "$t $leader $term" >>"$tmp/kills"
		start_replica "$old"
	done
	python3 - "$tmp" <<-'PY'
	import datetime, statistics, sys
	d = sys.argv[1]
	def ts(line):
	    return datetime.datetime.strptime(line.split()[0], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
	        tzinfo=datetime.timezone.utc).timestamp()
	won, up = [], []
	for row in open(d + "/kills"):
	    t, r, term = row.split()
	    lines = open(f"{d}/{r}.log").read().splitlines()
	    i = next(i for i, l in enumerate(lines) if f"leader of term {term} " in l)
	    ups = [l for l in lines[i + 1:] if " is up" in l][:3]
	    won.append(ts(lines[i]) - float(t))
	    up.append(ts(ups[-1]) - float(t))
	    print(f"kill: new leader {r} term {term}: won after {won[-1]:.3f} s, first heartbeat "
	          f"round done after {up[-1]:.3f} s")
	for name, v in (("leader elected", won), ("first heartbeat round", up)):
	    print(f"{name}: n {len(v)}, min {min(v):.3f} s, median {statistics.median(v):.3f} s, "
	          f"max {max(v):.3f} s")
	PY
}

jq -c '.jobs[0] | .id = 9 | .elements = 65536 | .slots.max = 256 | .workers |= map(.port += 5)' \
	"$EXAMPLE" >"$tmp/job.json"
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

job_create() {
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
	python3 - "$tmp" <<-'PY'
	import statistics, sys
	for way in ("etcd", "statedir", "memory"):
	    v = [int(l) / 1000 for l in open(f"{sys.argv[1]}/{way}.ms")]
	    print(f"job create, {way}: n {len(v)}, min {min(v):.1f} ms, median "
	          f"{statistics.median(v):.1f} ms, max {max(v):.1f} ms")
	PY
}

case $WHAT in
failover) failover ;;
job_create) job_create ;;
*)
	echo "replicas_bench: failover or job_create, not '$WHAT'" >&2
	exit 2
	;;
esac
echo "1..$n"
[ "$fails" -eq 0 ]
