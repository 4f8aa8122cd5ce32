#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The failover time of control replicas on etcd (BENCHMARKS.md): one etcd server, three
# net_null dataplanes and three georeduce-control replicas with the default heartbeat and
# lease (as tests/replicas_e2e.sh sets them up); the leader SIGKILLed KILLS times (started
# again each time, as a follower). Per kill: the time from the SIGKILL to the new leader
# winning its term ("leader of term" in its log) and to the end of its first successful
# heartbeat round (its last "gateway ... is up"); then min, median and max of each.
#
#   failover_bench.sh CONTROL DATAPLANE DPCTL [KILLS]   (from the source root; KILLS 20)
set -u
CONTROL=$1
DP=$2
DPCTL=$3
KILLS=${4:-20}
source "$(dirname "$0")/clilib.sh"
P=grf$$
source "$(dirname "$0")/nulldp.sh"
source "$(dirname "$0")/etcdlib.sh"
etcd_first || exit 1
jq '.jobs |= [.[0]]' "$tmp/deploy.json" >"$tmp/d1.json" && mv "$tmp/d1.json" "$tmp/deploy.json"
start_dps
for r in r1 r2 r3; do start_replica $r; done
wait_leader 60 r1 r2 r3 || { not_ok "no leader"; exit 1; }
: >"$tmp/kills"
for k in $(seq "$KILLS"); do
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
python3 - "$tmp" <<'PY'
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
echo "1..$n"
[ "$fails" -eq 0 ]
