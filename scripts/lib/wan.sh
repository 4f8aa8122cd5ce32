# shellcheck shell=bash
# The emulated multi-datacenter WAN (scripts/lib/testbed.py describes it), for
# scripts/testbed, scripts/demo and the end-to-end tests. Needs root.
#
#   wan_up DIR TOPOLOGY BUILD [testbed.py options...]   build it (DIR/down.sh undoes it);
#                                                       --mtu N: every veth and bridge,
#                                                       the dataplanes and the jobs at an
#                                                       IP MTU of N (9000: jumbo frames)
#   wan_down DIR                                        remove it
#   wan_install DIR JOB [EPOCH]                         plan job JOB, install its tables
#   wan_run DIR JOB ROUNDS [FIRST [multicast [TIMEOUT]]]  every site's workers, in
#                                                       parallel (multicast: a selmcast
#                                                       job's rounds; TIMEOUT s a round)
#   wan_status DIR EXPR, wan_until DIR SECONDS EXPR     the control process's status
#   wan_kernel DIR                                      the dataplanes out, delay lines in
#   wan_kernel_stop DIR                                 the delay lines out (counters)
#   wan_train DIR MODE NAME [train.py worker options]   one training worker per site
#
# wan_run keeps each site's worker summary in DIR/run-JOB-SITE.json and prints, for each
# round, the time of the slowest worker (ms) on stdout; WAN_WORKER_ARGS, if set, are more
# georeduce-worker options for every site's workers (e.g. --revision 13).
#
# With testbed.py --tls (DIR/control.json): the control process runs in a namespace of
# its own and reaches the gateways over the management network with TLS; workers join
# through it.
#   wan_control_start DIR [georeduce-control run options...]   start it (pid in DIR/control.pid)
#   wan_control_wait DIR                                        until every job is live
#   wan_control_alone DIR JOB [SECONDS]     until the other jobs are idle and JOB, re-planned
#                                           over the whole links, is live
#   wan_control_stop DIR [SIGNAL]
#   wan_dpctl DIR SITE_INDEX COMMAND [ARGS]                     georeduce-dpctl over TLS
#                                                               from the control namespace
#                                                               (the site's first gateway)
#   wan_endpoints DIR          per gateway, the tls:// endpoint through which it was
#                              installed and its jobs' live epochs (from the daemon)
#   wan_up_tls3 DIR BUILD NAME AB_GBPS [testbed.py options...]
#                              a 3-site WAN with TLS for the control API's tests: sites a
#                              and b (a worker each, joined by a link of AB_GBPS) and c (no
#                              worker), 0.05 Gbit/s links to c; "ok" or "not ok" printed
#   wan_wait_for SECONDS COMMAND...                             until COMMAND succeeds
#
# Control replicas on etcd instead of one control process (scripts/testbed and
# scripts/demo --ha; docs/DEPLOYMENT.md, "Replicas on etcd"): N etcd members and N
# georeduce-control replicas in the control namespace. Replica K (0-based) serves the API
# on the API's port + K, its socket DIR/control-K.sock, log DIR/control-K.log, pid
# DIR/control-K.pid; etcd member K's data, log and pid DIR/etcd-K{,.log,.pid}; DIR/ha holds
# N and DIR/ha-options the replicas' extra options.
#   wan_ha_start DIR N [georeduce-control run options...]   etcd, then the replicas
#   wan_ha_replica DIR K start|kill|stop                    one replica
#   wan_ha_leader DIR                   the index of the replica that leads; 1 if none
#   wan_api DIR                         the API workers are given: the control process's,
#                                       or every replica's, comma-separated
#   wan_sock DIR                        the control socket: with replicas, the leader's

wan_up_tls3() {
	local dir=$1 build=$2 name=$3 ab=$4
	shift 4
	cat >"$dir/topo.json" <<JSON
{"format": "georeduce-topology/1", "name": "$name",
 "nodes": [{"id": "a", "workers": 1}, {"id": "b", "workers": 1}, {"id": "c", "workers": 0}],
 "links": [{"a": "a", "b": "b", "gbps": $ab, "latency_ms": 4},
           {"a": "a", "b": "c", "gbps": 0.05, "latency_ms": 2},
           {"a": "c", "b": "b", "gbps": 0.05, "latency_ms": 2}]}
JSON
	if wan_up "$dir" "$dir/topo.json" "$build" --scale 1 --workers-from-topology "$@" --tls; then
		echo "ok - 3 sites, a control namespace and the management network up"
		return 0
	fi
	echo "not ok - emulated WAN with TLS"
	cat "$dir"/gw*.log
	return 1
}

wan_wait_for() {
	local n=$(($1 * 10))
	shift
	for _ in $(seq "$n"); do "$@" && return 0; sleep 0.1; done
	return 1
}

wan_up() {
	local dir=$1 topology=$2 build=$3
	shift 3
	mkdir -p "$dir"
	python3 "$GEOREDUCE_ROOT/scripts/lib/testbed.py" "$topology" --dir "$dir" \
		--dataplane "$build/dataplane/georeduce-dataplane" \
		--dpctl "$build/tools/dpctl/georeduce-dpctl" \
		--pki "$GEOREDUCE_ROOT/scripts/georeduce-pki" "$@" >/dev/null || return 2
	echo "$build" >"$dir/build"
	bash "$dir/up.sh"
}

wan_down() {
	local dir=$1
	[ -x "$dir/down.sh" ] && bash "$dir/down.sh" >/dev/null 2>&1
	return 0
}

wan_tls() { [ -e "$1/control.json" ]; }

# A field of DIR/control.json.
wan_ctl() {
	python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' \
		"$1/control.json" "$2"
}

wan_ha() { [ -e "$1/ha" ]; }

wan_api() {
	local dir=$1 api n k host port list=''
	api=$(wan_ctl "$dir" api)
	wan_ha "$dir" || { echo "$api"; return 0; }
	n=$(cat "$dir/ha")
	host=${api%:*}
	port=${api##*:}
	for k in $(seq 0 $((n - 1))); do list="$list${list:+,}$host:$((port + k))"; done
	echo "$list"
}

wan_ha_leader() {
	local dir=$1 k build
	build=$(cat "$dir/build")
	for k in $(seq 0 $(($(cat "$dir/ha") - 1))); do
		[ -S "$dir/control-$k.sock" ] || continue
		[ "$("$build/control/daemon/georeduce-control" status --socket "$dir/control-$k.sock" \
			--json --timeout-ms 3000 2>/dev/null | jq -r .election.role 2>/dev/null)" = leader ] &&
			{ echo "$k"; return 0; }
	done
	return 1
}

wan_sock() {
	local k
	wan_ha "$1" || { echo "$1/control.sock"; return 0; }
	k=$(wan_ha_leader "$1") || k=0
	echo "$1/control-$k.sock"
}

wan_ha_replica() {
	local dir=$1 k=$2 what=$3 build api n etcd='' i pid opts=()
	build=$(cat "$dir/build")
	case "$what" in
	start)
		n=$(cat "$dir/ha")
		api=$(wan_ctl "$dir" api)
		for i in $(seq 0 $((n - 1))); do etcd="$etcd${etcd:+,}http://127.0.0.1:$((23790 + i))"; done
		mapfile -t opts <"$dir/ha-options"
		rm -f "$dir/control-$k.sock"
		ip netns exec "$(wan_ctl "$dir" ns)" "$build/control/daemon/georeduce-control" run \
			"$dir/deployment.json" --socket "$dir/control-$k.sock" --out "$dir/tables" \
			--listen "$(api=${api#tls://}; echo "${api%:*}:$((${api##*:} + k))")" \
			--etcd "$etcd" --name "r$k" "${opts[@]}" \
			2>>"$dir/control-$k.log" &
		echo $! >"$dir/control-$k.pid"
		disown $!
		;;
	kill | stop)
		[ -e "$dir/control-$k.pid" ] || return 0
		pid=$(cat "$dir/control-$k.pid")
		kill "-$([ "$what" = kill ] && echo KILL || echo TERM)" "$pid" 2>/dev/null || :
		for _ in $(seq 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		rm -f "$dir/control-$k.pid"
		;;
	*) return 2 ;;
	esac
}

wan_ha_start() {
	local dir=$1 n=$2 ns cluster='' k api
	shift 2
	ns=$(wan_ctl "$dir" ns)
	echo "$n" >"$dir/ha"
	: >"$dir/ha-options"
	[ $# = 0 ] || printf '%s\n' "$@" >"$dir/ha-options"
	for k in $(seq 0 $((n - 1))); do
		cluster="$cluster${cluster:+,}e$k=http://127.0.0.1:$((23800 + k))"
	done
	for k in $(seq 0 $((n - 1))); do
		ip netns exec "$ns" etcd --name "e$k" --data-dir "$dir/etcd-$k" \
			--listen-client-urls "http://127.0.0.1:$((23790 + k))" \
			--advertise-client-urls "http://127.0.0.1:$((23790 + k))" \
			--listen-peer-urls "http://127.0.0.1:$((23800 + k))" \
			--initial-advertise-peer-urls "http://127.0.0.1:$((23800 + k))" \
			--initial-cluster "$cluster" --initial-cluster-token "$(basename "$dir")" \
			>>"$dir/etcd-$k.log" 2>&1 &
		echo $! >"$dir/etcd-$k.pid"
		disown $!
	done
	for _ in $(seq 300); do
		ip netns exec "$ns" env ETCDCTL_API=3 etcdctl --dial-timeout 1s \
			--endpoints "http://127.0.0.1:23790" endpoint health >/dev/null 2>&1 && break
		sleep 0.2
	done
	# The replicas share the API's address, each on a port of its own.
	api=$(wan_ctl "$dir" api)
	for k in $(seq 0 $((n - 1))); do
		wan_ha_replica "$dir" "$k" start
		if [ "$k" = 0 ]; then sleep 1; fi # the first leads, normally
	done
	return 0
}

wan_control_start() {
	local dir=$1 build
	shift
	build=$(cat "$dir/build")
	ip netns exec "$(wan_ctl "$dir" ns)" "$build/control/daemon/georeduce-control" run \
		"$dir/deployment.json" --socket "$dir/control.sock" --out "$dir/tables" "$@" \
		2>>"$dir/control.log" &
	echo $! >"$dir/control.pid"
	disown $!
}

wan_control_stop() {
	local dir=$1 sig=${2:-INT} pid
	[ -e "$dir/control.pid" ] || return 0
	pid=$(cat "$dir/control.pid")
	kill "-$sig" "$pid" 2>/dev/null
	for _ in $(seq 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	rm -f "$dir/control.pid"
}

# wan_status DIR EXPR: print a Python expression over the status of the testbed's control
# process (s, georeduce-control status --json); nothing if it does not answer.
wan_status() {
	"$(cat "$1/build")/control/daemon/georeduce-control" status --socket "$(wan_sock "$1")" \
		--json 2>/dev/null |
		python3 -c 'import json, sys; s = json.load(sys.stdin); print(eval(sys.argv[1]))' \
			"$2" 2>/dev/null
}

# wan_until DIR SECONDS EXPR: wait until the status expression prints True; 1 if it did
# not within SECONDS.
wan_until() {
	local end=$((SECONDS + $2))
	until [ "$(wan_status "$1" "$3")" = True ]; do
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.2
	done
}

wan_control_wait() {
	local dir=$1 build
	build=$(cat "$dir/build")
	for _ in $(seq 300); do
		"$build/control/daemon/georeduce-control" status --socket "$(wan_sock "$dir")" \
			--json 2>/dev/null | python3 -c '
import json, sys
try:
    s = json.load(sys.stdin)
except ValueError:
    sys.exit(1)
sys.exit(not all(j["epoch"] is not None and j["state"] == "live" for j in s["jobs"]))' &&
			return 0
		# A control process that exited (a bad option, say) installs nothing: no wait.
		if ! wan_ha "$dir" && [ -e "$dir/control.pid" ] &&
			! kill -0 "$(cat "$dir/control.pid")" 2>/dev/null; then
			echo "the control process exited (see $dir/control.log)" >&2
			return 1
		fi
		sleep 0.2
	done
	echo "the control process installed no epoch of every job (see $dir/control.log)" >&2
	return 1
}

# Wait until job JOB has the links to itself: every other job idle (its rounds over for the
# control process's --idle-ms) and JOB's live epoch planned since (not re-planning); at most
# SECONDS [60]. The jobs that run share the links (docs/CONTROL.md), so a job started while
# another's rounds have just ended would run its first rounds over a share.
wan_control_alone() {
	local dir=$1 job=$2 secs=${3:-60}
	local e="all(j['state'] == 'live' if j['job'] == $job else not j['running'] for j in s['jobs'])"
	wan_until "$dir" "$secs" "$e" && return 0
	echo "job $job: the other jobs did not go idle, or its re-plan did not come (see" \
		"$dir/control*.log)" >&2
	return 1
}

wan_dpctl() {
	local dir=$1 i=$2 build pki ep id
	shift 2
	build=$(cat "$dir/build")
	pki=$(wan_ctl "$dir" pki)
	read -r ep id < <(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))[int(sys.argv[2])]
print(s["gateway"]["endpoint"], s["gateway"].get("name", s["id"]))' "$dir/sites.json" "$i")
	ip netns exec "$(wan_ctl "$dir" ns)" "$build/tools/dpctl/georeduce-dpctl" -s "$ep" \
		--cert "$pki/control.pem" --key "$pki/control.key" --ca "$pki/ca.pem" \
		--server-name "$id" "$@"
}

wan_endpoints() {
	local dir=$1 build
	build=$(cat "$dir/build")
	"$build/control/daemon/georeduce-control" status --socket "$(wan_sock "$dir")" --json |
		python3 -c '
import json, sys
s = json.load(sys.stdin)
for g in s["gateways"]:
    name = g.get("name", g["node"])
    jobs = ["job %d epoch %s" % (j["job"], j["epoch"]) for j in s["jobs"]
            if name in j["gateways"]]
    print("  gateway %-12s installed through %-22s %s" % (name, g["socket"],
          ", ".join(jobs) if jobs else "(no job: not on any plan)"))'
}

# Sites as "index id namespace" lines.
wan_sites() {
	python3 -c '
import json, sys
for s in json.load(open(sys.argv[1])):
    print(s["index"], s["id"], s["ns"])' "$1/sites.json"
}

# Gateways as "site_index name socket" lines (a site with several has a line for each).
wan_gateways() {
	python3 -c '
import json, sys
for s in json.load(open(sys.argv[1])):
    for g in s.get("gateways", [s["gateway"]]):
        print(s["index"], g.get("name", s["id"]), g["socket"])' "$1/sites.json"
}

wan_install() {
	local dir=$1 job=$2 epoch=${3:-1} build name sock
	build=$(cat "$dir/build")
	# Protected links: the tables hold keys, which travel only over the control sockets
	# (the table files have none): georeduce-control installs them itself.
	if [ -e "$dir/protected" ]; then
		"$build/control/daemon/georeduce-control" tables "$dir/deployment.json" --out "$dir/tables" \
			--epoch "$epoch" --job "$job" --install >"$dir/plan.log" 2>&1 ||
			{ cat "$dir/plan.log" >&2; return 1; }
		return 0
	fi
	# The job alone over the whole links: it is the one about to run.
	"$build/control/daemon/georeduce-control" tables "$dir/deployment.json" --out "$dir/tables" \
		--epoch "$epoch" --job "$job" >"$dir/plan.log" 2>&1 || { cat "$dir/plan.log" >&2; return 1; }
	while read -r _ name sock; do
		# A relay site in none of the job's trees has no table.
		[ -e "$dir/tables/job-$job-$name.json" ] || continue
		"$build/tools/dpctl/georeduce-dpctl" -s "$sock" install \
			"$dir/tables/job-$job-$name.json" >/dev/null || return 1
	done < <(wan_gateways "$dir")
}

# The predicted AllReduce seconds of a job, from the plan georeduce-control wrote.
wan_predicted() {
	python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
print("%.3f" % p["predicted"]["allreduce_seconds"])' "$1/tables/job-$2-plan.json"
}

wan_run() {
	local dir=$1 job=$2 rounds=$3 first=${4:-0} mode=${5:-} build pids=() all rc=0
	local how=(--all-workers) timeout=${6:-120}
	build=$(cat "$dir/build")
	local start_at
	start_at=$(($(date +%s) + 2))
	all=$(python3 -c '
import json, sys
print(",".join(str(w["id"]) for s in json.load(open(sys.argv[1])) for w in s["workers"]))' \
		"$dir/sites.json")
	while read -r i id ns; do
		local ids
		ids=$(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))[int(sys.argv[2])]
print(" ".join("--worker-id %d" % w["id"] for w in s["workers"]))' "$dir/sites.json" "$i")
		[ -n "$ids" ] || continue # a relay site: no workers
		local src=(--table "$dir/tables/job-$job-$id.json") pki
		if wan_tls "$dir"; then
			pki=$(wan_ctl "$dir" pki)
			src=(--control "$(wan_api "$dir")" --job "$job"
				--cert "$pki/workers-site$i.pem" --key "$pki/workers-site$i.key"
				--ca "$pki/ca.pem")
		fi
		# A selmcast job: each site's workers send their updates and receive the
		# others' (georeduce-worker --multicast), a round given up after 10 s. They
		# start the first round together (--start-at, the same for every process):
		# a receiver whose socket is not open yet loses what arrives before it, and
		# a gateway keeps only its latest copies for repairs.
		# AllReduce workers start their first round together too: each process joins
		# (or reads its table) in its own time, and the round's time is the
		# AllReduce's, not the spread of the processes' starts.
		[ "$mode" = multicast ] && how=(--multicast) all= timeout=10
		# shellcheck disable=SC2086
		ip netns exec "$ns" "$build/tools/worker/georeduce-worker" \
			"${src[@]}" $ids "${how[@]}" ${all:+"$all"} --start-at "$start_at" \
			--rounds "$rounds" --first-round "$first" --timeout "$timeout" --json \
			${WAN_WORKER_ARGS:-} >"$dir/run-$job-$i.json" 2>"$dir/run-$job-$i.err" &
		pids+=($!)
	done < <(wan_sites "$dir")
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	[ $rc -eq 0 ] || { cat "$dir"/run-"$job"-*.err >&2; return 1; }
	python3 - "$dir" "$job" <<'PY'
import glob, json, sys
d, job = sys.argv[1], sys.argv[2]
rounds = {}
for f in sorted(glob.glob("%s/run-%s-*.json" % (d, job))):
    doc = json.load(open(f))
    for w in doc["workers"]:
        for r in w["rounds"]:
            rounds.setdefault(r["round"], []).append(r["ms"])
for r in sorted(rounds):
    print("%.1f" % max(rounds[r]))
PY
}

# The kernel's traffic over the same links (wan_up with --delayline): for Gloo.
wan_kernel() {
	bash "$1/kernel-wan.sh"
}

# Stop the delay lines, which then write their counters into DIR/dl*.log.
wan_kernel_stop() {
	local f p
	for f in "$1"/dl*.pid; do
		[ -e "$f" ] || continue
		p=$(cat "$f")
		kill -INT "$p" 2>/dev/null || continue
		for _ in $(seq 1200); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
		rm -f "$f"
	done
}

# wan_train DIR MODE NAME [OPTIONS...]: scripts/lib/train.py worker in every site's
# namespace at once, rank = the site's index, with Debian's /usr/bin/python3 (its
# site-packages have python3-torch), the package from python/ and the library from the
# build. MODE georeduce: each worker's table of job 1; gloo: rendezvous at site 0's
# worker. Writes DIR/train-NAME-RANK.json (and .log).
wan_train() {
	local dir=$1 mode=$2 name=$3 build pids=() rc=0 world master
	shift 3
	build=$(cat "$dir/build")
	world=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))))' \
		"$dir/sites.json")
	master=$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))[0]["workers"][0]["ipv4"])' "$dir/sites.json"):29500
	while read -r i id ns; do
		local wid opts=()
		wid=$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))[int(sys.argv[2])]["workers"][0]["id"])' "$dir/sites.json" "$i")
		case $mode in
		georeduce) opts=(--table "$dir/tables/job-1-$id.json" --worker-id "$wid") ;;
		gloo) opts=(--master "$master") ;;
		esac
		ip netns exec "$ns" env PYTHONPATH="$GEOREDUCE_ROOT/python" \
			GEOREDUCE_LIBRARY="$build/lib/client/libgeoreduce.so" GLOO_SOCKET_IFNAME=wk0 \
			/usr/bin/python3 "$GEOREDUCE_ROOT/scripts/lib/train.py" worker --mode "$mode" \
			--rank "$i" --world "$world" "${opts[@]}" "$@" \
			--out "$dir/train-$name-$i.json" >"$dir/train-$name-$i.log" 2>&1 &
		pids+=($!)
	done < <(wan_sites "$dir")
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	[ $rc -eq 0 ] || { tail -n 20 "$dir"/train-"$name"-*.log >&2; return 1; }
}
