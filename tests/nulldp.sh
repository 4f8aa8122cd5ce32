# shellcheck shell=bash
# Shared by the tests that run georeduce-control against three real dataplanes on net_null
# ports, on the 3-site example deployment (sourced after clilib.sh, with DP, DPCTL and a
# file prefix P set): `pids` and `daemon` killed on exit (TERM, then KILL), the
# deployment with its sockets in $tmp ($tmp/deploy.json), start_dp NAME N (its pid in
# dp_NAME, its log in $tmp/dp-NAME.log) and start_dps, which starts a, b and c and waits
# until each answers on its socket.

EXAMPLE=examples/deployments/3site.json
pids=()
daemon=

nulldp_cleanup() {
	for p in "${pids[@]}" $daemon; do kill -TERM "$p" 2>/dev/null; done
	sleep 0.3
	for p in "${pids[@]}" $daemon; do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap nulldp_cleanup EXIT
trap 'exit 130' INT TERM

jq --arg d "$tmp" '.gateways[].socket |= ($d + "/" + (split("/") | last))' "$EXAMPLE" \
	>"$tmp/deploy.json"

start_dp() { # name n
	"$DP" --no-huge -m 256 --no-pci --no-shconf --file-prefix="$P$1" -l 0-1 \
		--vdev=net_null0 --log-level=lib.eal:error \
		-- --addr "0:10.99.0.$2/24" -s "$tmp/$1.sock" --idle-spin 100 \
		>"$tmp/dp-$1.log" 2>&1 &
	eval "dp_$1=$!"
	disown $!
	pids+=($!)
}

wait_dp() { # name: it answers its socket within 60 s, however busy the machine
	for _ in $(seq 600); do
		"$DPCTL" -s "$tmp/$1.sock" ping >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	not_ok "dataplane $1 did not start: $(tail -3 "$tmp/dp-$1.log")"
	exit 1
}

start_dps() { # a, b and c, each answering
	start_dp a 1
	start_dp b 2
	start_dp c 3
	for s in a b c; do wait_dp $s; done
	ok "three dataplanes answer"
}
