# shellcheck shell=bash
# Shared by the tests of control replicas on etcd (sourced after clilib.sh and nulldp.sh,
# with CONTROL set): etcd_first starts one etcd server on free local ports (EC clients, EP
# peers; ETCD its URL, etcd_pid), start_etcd starts it again on the same ones and data;
# start_replica NAME [OPTIONS...] starts `georeduce-control run` on $tmp/deploy.json with
# --etcd (its pid in rpid[NAME], its log in $tmp/NAME.log); st NAME FILTER reads its
# status; leader_of and wait_leader find the one replica that leads.

etcd_pid=
# start_etcd: on the ports in EC and EP; 1 if it does not answer.
start_etcd() {
	etcd --name e1 --data-dir "$tmp/etcd" --listen-client-urls "$ETCD" \
		--advertise-client-urls "$ETCD" --listen-peer-urls "http://127.0.0.1:$EP" \
		--initial-advertise-peer-urls "http://127.0.0.1:$EP" \
		--initial-cluster "e1=http://127.0.0.1:$EP" >>"$tmp/etcd.log" 2>&1 &
	etcd_pid=$!
	disown $!
	pids+=($!)
	for _ in $(seq 300); do
		kill -0 "$etcd_pid" 2>/dev/null || return 1
		ETCDCTL_API=3 etcdctl --endpoints "$ETCD" --dial-timeout 1s endpoint health \
			>/dev/null 2>&1 && return 0
		sleep 0.2
	done
	return 1
}

# etcd_first: free ports, picked and released (another process may take one first, so a
# few tries), and etcd on them; ok or not_ok.
etcd_first() {
	if ! command -v etcd >/dev/null; then
		echo "no etcd (Debian package etcd-server); skipped"
		exit 77
	fi
	for _ in 1 2 3 4 5; do
		read -r EC EP < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
		ETCD=http://127.0.0.1:$EC
		rm -rf "$tmp/etcd"
		start_etcd && break
		kill -KILL "$etcd_pid" 2>/dev/null
	done
	if kill -0 "$etcd_pid" 2>/dev/null; then
		ok "etcd answers at $ETCD"
	else
		not_ok "etcd did not start: $(tail -3 "$tmp/etcd.log")"
		return 1
	fi
}

declare -A rpid
start_replica() { # NAME [OPTIONS...]
	local name=$1
	shift
	"$CONTROL" run "$tmp/deploy.json" --socket "$tmp/$name.sock" --timeout-ms 3000 \
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
