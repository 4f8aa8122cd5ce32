# shellcheck shell=bash
# Shared by the port-mode tests of georeduce-bench (sourced after clilib.sh, with dp,
# dpctl and prefix set): EAL options for both processes, and a dataplane in a process of
# its own on net_memif (server side; the bench joins as the client), stopped on exit.

eal=(--no-huge -m 512 --no-pci --no-shconf --log-level=lib.eal:error)
dp_pid=
trap '[ -n "$dp_pid" ] && kill -INT "$dp_pid" 2>/dev/null && wait "$dp_pid"
	rm -rf "$tmp" /var/run/dpdk/"$prefix"*' EXIT

# memif_dp [DATAPLANE OPTIONS...]: start the dataplane (control socket $tmp/ctl.sock, memif
# socket $tmp/m.sock, log $tmp/dp.log) and wait until it answers; 1 if it never did.
memif_dp() {
	"$dp" "${eal[@]}" --file-prefix="${prefix}d" -l 0-1 \
		--vdev="net_memif0,role=server,socket=$tmp/m.sock" -- --addr 0:10.0.0.1/16 \
		-s "$tmp/ctl.sock" --idle-spin 100 "$@" >"$tmp/dp.log" 2>&1 &
	dp_pid=$!
	for _ in $(seq 600); do
		"$dpctl" -s "$tmp/ctl.sock" ping >/dev/null 2>&1 && return 0
		kill -0 "$dp_pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# memif_bench [BENCH OPTIONS...]: the bench in port mode against it, the report in
# $tmp/out and stderr in $tmp/err; its exit status.
memif_bench() {
	"$bench" "${eal[@]}" --file-prefix="$prefix" -l 0 \
		--vdev="net_memif0,role=client,socket=$tmp/m.sock" -- --mode port "$@" \
		>"$tmp/out" 2>"$tmp/err"
}

# memif_run TABLE [BENCH OPTIONS...]: install TABLE on the dataplane and run the bench on
# it (--table TABLE, --gw-socket, the options), as memif_bench, the job removed first if
# the gateway holds it and after the run; its exit status (3: a wrong sum), or 125 if the
# table did not install ($tmp/install says why). The warm-up spans a retransmission
# timeout, so that RESULTs the gateway could not send before it had learnt the bench's
# MACs are resent within it. A run in which no chunk completed at all (the machine held
# the bench or the gateway for the whole measurement) runs again, on the job installed
# afresh, up to three times; a run with a wrong sum never does.
memif_run() {
	local table=$1 job try rc
	shift
	job=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["job"])' "$table")
	for try in 1 2 3; do
		# A job the gateway holds already is removed first: the bench starts at round 1.
		"$dpctl" -s "$tmp/ctl.sock" remove "$job" >/dev/null 2>&1
		"$dpctl" -s "$tmp/ctl.sock" install "$table" >"$tmp/install" 2>&1 || return 125
		memif_bench --table "$table" --gw-socket "$tmp/ctl.sock" --warmup 1 --duration 0.3 \
			--rto-ms 300 --quiet --json "$@"
		rc=$?
		# Retired, so that the gateway's memory holds the next test's jobs.
		"$dpctl" -s "$tmp/ctl.sock" remove "$job" >/dev/null 2>&1
		[ "$rc" -eq 1 ] && grep -q "no chunk completed" "$tmp/err" &&
			! grep -q '"failures": [1-9]' "$tmp/out" || return "$rc"
		echo "# no chunk completed (try $try): $(tr -d ' \n' <"$tmp/out" |
			grep -o '"gateway_drops":{[^}]*}')"
	done
	return "$rc"
}
