# shellcheck shell=bash
# Shared by the tests of control replicas on etcd (sourced after clilib.sh and nulldp.sh,
# with CONTROL and P set): etcd_first starts an etcd cluster of MEMBERS members on free
# local ports, stop_etcd stops it, start_etcd starts it again on the same ports and data;
# start_replica NAME [OPTIONS...] starts `georeduce-control run` on $tmp/deploy.json with
# --etcd (its pid in rpid[NAME], its log in $tmp/NAME.log); st NAME FILTER reads its
# status; leader_of and wait_leader find the one replica that leads. With IN_NS set to a
# network namespace, etcd and the replicas run in it; DEPLOY is the deployment file
# ($tmp/deploy.json unless set); with ETCD_LISTEN_EXTRA set to an address, the members
# also answer clients there.
# (ip netns exec execs the command: the pids stay those of etcd and the replicas.)

# MEMBERS etcd members (1 or 3; default 1), member i on client port EC[i] and peer port
# EP[i], its data in $tmp/etcd-i, its pid in etcd_pids[i]; ETCD the client URLs, comma-
# separated.
MEMBERS=${MEMBERS:-1}
declare -a EC EP etcd_pids
# start_member I: member I (0-based) started; it joins the others as they start.
start_member() {
	local i=$1 cluster="" k
	for k in $(seq 0 $((MEMBERS - 1))); do
		cluster="$cluster${cluster:+,}e$k=http://127.0.0.1:${EP[k]}"
	done
	${IN_NS:+ip netns exec $IN_NS} etcd --name "e$i" --data-dir "$tmp/etcd-$i" \
		--listen-client-urls "http://127.0.0.1:${EC[i]}${ETCD_LISTEN_EXTRA:+,http://$ETCD_LISTEN_EXTRA:${EC[i]}}" \
		--advertise-client-urls "http://127.0.0.1:${EC[i]}" \
		--listen-peer-urls "http://127.0.0.1:${EP[i]}" \
		--initial-advertise-peer-urls "http://127.0.0.1:${EP[i]}" \
		--initial-cluster "$cluster" --initial-cluster-token "$P" \
		>>"$tmp/etcd-$i.log" 2>&1 &
	etcd_pids[i]=$!
	disown $!
	pids+=($!)
}
# start_etcd: every member, on the ports in EC and EP; 1 unless all answer.
start_etcd() {
	local i
	for i in $(seq 0 $((MEMBERS - 1))); do start_member "$i"; done
	for _ in $(seq 300); do
		for i in $(seq 0 $((MEMBERS - 1))); do
			kill -0 "${etcd_pids[i]}" 2>/dev/null || return 1
		done
		ETCDCTL_API=3 ${IN_NS:+ip netns exec $IN_NS} etcdctl --endpoints "$ETCD" --dial-timeout 1s endpoint health \
			>/dev/null 2>&1 && return 0
		sleep 0.2
	done
	return 1
}
# stop_etcd: every member, SIGTERM, waited for.
stop_etcd() {
	local p
	for p in "${etcd_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${etcd_pids[@]}"; do
		for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
	done
}

# one_job_setup: etcd, the deployment cut to its first job, the three dataplanes (for the
# benchmarks: the dataplanes' packet pools hold that job, a job of the API and the next
# epochs of both).
one_job_setup() {
	etcd_first || exit 1
	jq '.jobs |= [.[0]]' "$tmp/deploy.json" >"$tmp/d1.json" &&
		mv "$tmp/d1.json" "$tmp/deploy.json"
	start_dps
}

# etcd_first: free ports, picked and released (another process may take one first, so a
# few tries), and etcd on them; ok or not_ok.
etcd_first() {
	local ports i
	if ! command -v etcd >/dev/null; then
		echo "no etcd (Debian package etcd-server); skipped"
		exit 77
	fi
	for _ in 1 2 3 4 5; do
		ports=$(python3 -c '
import socket, sys
s = [socket.socket() for _ in range(2 * int(sys.argv[1]))]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])' "$MEMBERS")
		read -r -a ports <<<"$ports"
		ETCD=
		for i in $(seq 0 $((MEMBERS - 1))); do
			EC[i]=${ports[2 * i]} EP[i]=${ports[2 * i + 1]}
			ETCD="$ETCD${ETCD:+,}http://127.0.0.1:${EC[i]}"
			rm -rf "$tmp/etcd-$i"
		done
		start_etcd && break
		stop_etcd
		for p in "${etcd_pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	done
	if kill -0 "${etcd_pids[0]}" 2>/dev/null; then
		ok "etcd ($MEMBERS member(s)) answers at $ETCD"
	else
		not_ok "etcd did not start: $(tail -3 "$tmp"/etcd-*.log)"
		return 1
	fi
}

declare -A rpid
start_replica() { # NAME [OPTIONS...]
	local name=$1
	shift
	${IN_NS:+ip netns exec $IN_NS} "$CONTROL" run "${DEPLOY:-$tmp/deploy.json}" --socket "$tmp/$name.sock" \
		--etcd "http://127.0.0.1:1,$ETCD" --etcd-prefix "/$P" --name "$name" "$@" \
		2>>"$tmp/$name.log" &
	rpid[$name]=$!
	disown $!
	pids+=($!)
}
st() { # rN FILTER: jq of its status, "" if it does not answer
	"$CONTROL" status --socket "$tmp/$1.sock" --json --timeout-ms 5000 2>/dev/null |
		jq -r "$2" 2>/dev/null
}
# leader_of R...: the replica among R... whose status says it leads (exactly one)
leader_of() {
	local r found=
	for r in "$@"; do
		[ "$(st "$r" .election.role)" = leader ] && found="$found $r"
	done
	found=${found# }
	[ -n "$found" ] && [ "${found// /}" = "$found" ] && echo "$found"
}
wait_leader() { # SECONDS R...: sets $leader
	local end=$((SECONDS + $1))
	shift
	while [ "$SECONDS" -lt "$end" ]; do
		leader=$(leader_of "$@") && return 0
		sleep 0.2
	done
	return 1
}
