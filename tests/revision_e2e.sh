#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Mixed protocol revisions (docs/PROTOCOL.md section 12; docs/DEPLOYMENT.md, "Upgrades") on
# the emulated WAN at MTU 9000 (the setup of jumbo_e2e, with the control process over TLS):
# three sites with a worker each and an fp32 mTree job at its default chunk size for mtu
# 9000 (8896 bytes, 2224 elements from revision 1.14).
#  (a) gateway a runs as revision 1.13 (georeduce-dataplane --revision 13): its `version`
#      has no revision and it refuses a table of 2224-element chunks naming
#      `chunk_elements`; the control status gives gateway a revision 0, the others 16, and
#      the job revision 13 with chunks of 8192 bytes (2048 elements); the job's `membership`
#      (1.16) is named to gateways b and c only; rounds through it are bit-exact, with
#      workers at --revision 13 too.
#  (b) gateway a restarted without --revision: after the re-plan the status gives it 16,
#      the job 16 and chunks of 8896 bytes (2224 elements), and gateway a has the
#      membership; rounds bit-exact with current workers.
#  (c) a worker at --revision 13 refuses that job's table: non-zero exit, the message saying
#      the chunk is too large for it.
# Waits for states with generous timeouts; no duration is asserted.
#
#   revision_e2e.sh BUILD_DIR
set -u
BUILD=$(cd "$1" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
fails=0

if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
	echo "revision_e2e: needs root and network namespaces; skipped"
	exit 77
fi
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; fails=$((fails + 1)); }
finish() {
	[ "$fails" -eq 0 ] && echo "revision_e2e: all ok" || echo "revision_e2e: $fails failed"
	[ "$fails" -eq 0 ]
	exit
}

GEOREDUCE_ROOT=$ROOT
# shellcheck source=../scripts/lib/wan.sh
. "$ROOT/scripts/lib/wan.sh"
D=$(mktemp -d /tmp/georeduce-revision.XXXXXX)
cleanup() {
	wan_control_stop "$D"
	wan_down "$D"
	rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
DPCTL=$BUILD/tools/dpctl/georeduce-dpctl
WK=$BUILD/tools/worker/georeduce-worker

ELEMS=$((2224 * 20 + 100))
cat >"$D/topo.json" <<'JSON'
{"format": "georeduce-topology/1", "name": "wan-revision",
 "nodes": [{"id": "a", "workers": 1}, {"id": "b", "workers": 1}, {"id": "c", "workers": 1}],
 "links": [{"a": "a", "b": "b", "gbps": 0.1, "latency_ms": 4},
           {"a": "a", "b": "c", "gbps": 0.1, "latency_ms": 2},
           {"a": "c", "b": "b", "gbps": 0.1, "latency_ms": 2}]}
JSON
if wan_up "$D" "$D/topo.json" "$BUILD" --scale 1 --workers-from-topology --jobs mtree \
	--dtype fp32 --elements "$ELEMS" --mtu 9000 --mbufs 32768 --slots-max 1024 \
	--prefix "grv$$" --tls; then
	ok "3 sites up at MTU 9000, the control namespace and the management network"
else
	not_ok "emulated WAN at MTU 9000 with TLS"
	cat "$D"/gw*.log
	finish
fi

# gw_restart ARGS: gateway a (site 0) started again, with ARGS after "--" (its start script
# as the testbed wrote it, saved in gw0.sh.orig, plus ARGS).
gw_restart() {
	local pid
	pid=$(cat "$D/gw0.pid")
	kill -INT "$pid" 2>/dev/null
	for _ in $(seq 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	[ -e "$D/gw0.sh.orig" ] || cp "$D/gw0.sh" "$D/gw0.sh.orig"
	sed "s| -- --addr | -- $* --addr |" "$D/gw0.sh.orig" >"$D/gw0.sh"
	rm -f "$D/gw0.sock"
	bash "$D/gw0.sh"
	wan_wait_for 120 "$DPCTL" -s "$D/gw0.sock" ping >/dev/null 2>&1
}
# table_chunk: chunk_elements of job 1's table at gateway a, as the control process wrote it.
table_chunk() {
	jq -r .chunk_elements "$D/tables/job-1-a.json" 2>/dev/null || echo -
}
# planned_as GATEWAY_REVISIONS JOB_REVISION CHUNK_BYTES CHUNK_ELEMENTS: wait (3 minutes at
# most) until the status gives the gateways (a, b, c) and job 1, live on all three, these
# revisions and chunk size, then check the table the control process wrote for gateway a.
planned_as() {
	local c e="[g['revision'] for g in s['gateways']] == $1 and s['jobs'][0]['state'] == \
'live' and s['jobs'][0]['revision'] == $2 and s['jobs'][0]['chunk_bytes'] == $3 and \
len(s['jobs'][0]['gateways']) == 3"
	wan_until "$D" 180 "$e" || { not_ok "status, not $*: $(status_brief)"; return 1; }
	c=$(table_chunk)
	[ "$c" = "$4" ] || { not_ok "gateway a's table: chunk_elements $c, not $4"; return 1; }
}
# The `membership` of job 1's live epoch at gateway N's dataplane (`stats`), or null; the
# control process's for the job.
live_membership() {
	"$DPCTL" -s "$D/gw$1.sock" --json stats |
		jq -r '[.jobs[] | select(.job == 1 and .state == "live")][0].membership'
}
status_membership() { wan_status "$D" "s['jobs'][0]['membership']"; }
status_brief() {
	wan_status "$D" "[(g['name'], g['state'], g['revision']) for g in s['gateways']] + \
[(j['state'], j.get('revision'), j.get('chunk_bytes')) for j in s['jobs']]"
}

# ---- (a) gateway a at revision 1.13 ----------------------------------------------------
if gw_restart --revision 13 && grep -q -- "--revision 13" "$D/gw0.sh"; then
	ok "gateway a started again with --revision 13"
else
	not_ok "gateway a with --revision 13: $(tail -3 "$D/gw0.log")"
	finish
fi
v0=$("$DPCTL" -s "$D/gw0.sock" --json version) v1=$("$DPCTL" -s "$D/gw1.sock" --json version)
if jq -e 'has("revision") | not' <<<"$v0" >/dev/null &&
	jq -e '.revision == 16' <<<"$v1" >/dev/null; then
	ok "version: gateway a (--revision 13) answers no revision, gateway b 16"
else
	not_ok "version answers: $v0 / $v1"
fi
wan_control_start "$D" --heartbeat-ms 200 --fail-after 3 --timeout-ms 3000
wan_control_wait "$D" || not_ok "job 1 not live (see $D/control.log)"
planned_as "[0, 16, 16]" 13 8192 2048 &&
	ok "status: gateway a revision 0 (older), b and c 16; the job revision 13, 2048-element chunks"
# `prepare`'s `membership` (1.16) goes to the gateways that take it, and to no other.
if [ -n "$(live_membership 1)" ] && [ "$(live_membership 1)" = "$(status_membership)" ] &&
	[ "$(live_membership 0)" = null ]; then
	ok "membership $(status_membership) named to gateway b, not to gateway a (1.13)"
else
	not_ok "membership: status $(status_membership), gateway a $(live_membership 0), b $(live_membership 1)"
fi
grep -q "gateway a answers \`version\` without a revision" "$D/control.log" &&
	grep -q "job 1: chunks of 8192 bytes, not 8896: gateway a implements revision 1.13" \
		"$D/control.log" &&
	ok "the control log says why: gateway a and its revision named" ||
	not_ok "control log: $(grep -i revision "$D/control.log" | tail -3)"
# The dataplane's own gate: a full-size table (as a job 77 it does not run) is refused.
# The same chunks, each of 2224 elements (valid for this build: only the revision refuses it).
jq '.job = 77 | .elements = ((.elements + .chunk_elements - 1) / .chunk_elements | floor) * 2224 |
	.chunk_elements = 2224' "$D/tables/job-1-a.json" >"$D/big.json"
out=$("$DPCTL" -s "$D/gw0.sock" prepare "$D/big.json" 2>&1)
if [ $? -ne 0 ] && grep -q "field 'chunk_elements': must be in \[1, 2048\] for fp32 (8192 bytes" \
	<<<"$out"; then
	ok "gateway a (--revision 13) refuses 2224-element chunks at prepare, as a 1.13 gateway"
else
	not_ok "gateway a's prepare of 2224-element chunks: $out"
fi
if WAN_WORKER_ARGS="--revision 13" wan_run "$D" 1 3 0 "" 60 >"$D/ms"; then
	ok "job 1 within revision 1.13: 3 rounds bit-exact, workers at --revision 13"
else
	not_ok "rounds with gateway a at 1.13"
fi

# ---- (b) gateway a at this build's revision --------------------------------------------
wan_until "$D" 60 "s['gateways'][0]['state'] == 'up'" || not_ok "gateway a not up before"
pid=$(cat "$D/gw0.pid")
kill -INT "$pid"
wan_until "$D" 120 "s['gateways'][0]['state'] == 'down'" ||
	not_ok "the control process did not see gateway a down: $(status_brief)"
if gw_restart; then
	ok "gateway a started again without --revision"
else
	not_ok "gateway a restart: $(tail -3 "$D/gw0.log")"
fi
planned_as "[16, 16, 16]" 16 8896 2224 &&
	ok "after the re-plan: every gateway revision 16, the job 16 with 2224-element chunks"
[ "$(live_membership 0)" = "$(status_membership)" ] &&
	ok "gateway a now has the job's membership too" ||
	not_ok "membership after the upgrade: status $(status_membership), gateway a $(live_membership 0)"
grep -q "cause gateway_up" "$D/control.log" &&
	ok "the new plan came with cause gateway_up" || not_ok "no re-plan with cause gateway_up"
if wan_run "$D" 1 3 100 "" 60 >"$D/ms"; then
	ok "job 1 at the full size: 3 rounds bit-exact with current workers"
else
	not_ok "rounds after gateway a's upgrade"
fi

# ---- (c) an older worker against the full-size job -------------------------------------
read -r ns wid < <(jq -r '.[0] | "\(.ns) \(.workers[0].id)"' "$D/sites.json")
PKI=$(wan_ctl "$D" pki)
out=$(ip netns exec "$ns" "$WK" --control "$(wan_api "$D")" --job 1 --cert "$PKI/workers-site0.pem" \
	--key "$PKI/workers-site0.key" --ca "$PKI/ca.pem" --worker-id "$wid" --rounds 1 \
	--first-round 200 --timeout 20 --revision 13 2>&1)
rc=$?
if [ $rc -ne 0 ] && grep -q "too large for a worker of revision 1.13" <<<"$out"; then
	ok "a worker at --revision 13 refuses the table (exit $rc): $(tail -1 <<<"$out")"
else
	not_ok "worker at --revision 13: exit $rc: $out"
fi
finish
