#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Protected links end to end on the emulated WAN (scripts/lib/testbed.py --protect): three
# sites with a worker each, every WAN link sealed (docs/PROTOCOL.md section 14) through the
# crypto_aesni_mb cryptodev of each georeduce-dataplane, tables installed by
# georeduce-control over the control sockets. Checked: the mTree job's results are
# bit-exact (georeduce-worker verifies them) in epoch 1 and again in epoch 2 with fresh
# keys; every gateway sealed and opened frames and dropped none as replayed, forged or of
# an unknown key; no key in the table files, in a dump or in stats. Then georeduce-control
# run, started twice, takes the protected epoch over without its keys (none in its state
# directory) and the rounds go on exact; with the links sealed by another AEAD it installs
# a new epoch instead.
#
#   wan_sealed_e2e.sh BUILD_DIR
set -u
BUILD=$(cd "$1" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
fails=0

if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
	echo "wan_sealed_e2e: needs root and network namespaces; skipped"
	exit 77
fi
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; fails=$((fails + 1)); }

GEOREDUCE_ROOT=$ROOT
# shellcheck source=../scripts/lib/wan.sh
. "$ROOT/scripts/lib/wan.sh"
D=$(mktemp -d /tmp/georeduce-wan-sealed.XXXXXX)
cleanup() {
	wan_control_stop "$D" KILL
	wan_down "$D"
	rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
DPCTL=$BUILD/tools/dpctl/georeduce-dpctl

cat >"$D/topo.json" <<'JSON'
{"format": "georeduce-topology/1", "name": "wan-sealed",
 "nodes": [{"id": "a", "workers": 1}, {"id": "b", "workers": 1}, {"id": "c", "workers": 1}],
 "links": [{"a": "a", "b": "b", "gbps": 0.05, "latency_ms": 4},
           {"a": "a", "b": "c", "gbps": 0.05, "latency_ms": 2},
           {"a": "c", "b": "b", "gbps": 0.05, "latency_ms": 2}]}
JSON
if wan_up "$D" "$D/topo.json" "$BUILD" --scale 1 --workers-from-topology --jobs mtree \
	--elements 262144 --prefix "grs$$" --protect crypto_aesni_mb0; then
	ok "3 sites up, every WAN link protected"
else
	not_ok "emulated WAN"
	cat "$D"/gw*.log
	echo "1..$((fails))"
	exit 1
fi

for epoch in 1 2; do
	if wan_install "$D" 1 "$epoch"; then
		ok "epoch $epoch installed over the control sockets"
	else
		not_ok "epoch $epoch install"
		continue
	fi
	if wan_run "$D" 1 3 "$((epoch * 10))" >"$D/ms"; then
		ok "epoch $epoch: 3 rounds, every result bit-exact ($(tr '\n' ' ' <"$D/ms")ms)"
	else
		not_ok "epoch $epoch rounds"
	fi
done

if grep -rq -e '"key"' -e '"sealed"' "$D/tables"; then
	not_ok "a table file holds link keys"
else
	ok "no link key in the table files"
fi
for i in 0 1 2; do
	"$DPCTL" -s "$D/gw$i.sock" --json stats >"$D/stats$i.json" 2>/dev/null &&
		"$DPCTL" -s "$D/gw$i.sock" --json dump >"$D/dump$i.json" 2>/dev/null ||
		{ not_ok "gateway $i: no stats"; continue; }
	if python3 - "$D/stats$i.json" "$D/dump$i.json" <<'PY'
import json, re, sys
st = json.load(open(sys.argv[1]))
text = open(sys.argv[1]).read() + open(sys.argv[2]).read()
def total(name):
    n = 0
    for lc in st["lcores"]:
        for k, v in lc.items():
            if k == name:
                n += v
            if isinstance(v, dict) and name in v:
                n += v[name]
    return n
assert total("sealed") > 0 and total("opened") > 0, (total("sealed"), total("opened"))
for r in ("replay", "bad_tag", "unknown_key", "bad_seal", "no_mbuf"):
    assert total(r) == 0, (r, total(r))
print("  sealed %d opened %d" % (total("sealed"), total("opened")), file=sys.stderr)
assert st["memory"]["crypto"]["driver"].startswith("crypto_aesni_mb"), st["memory"]["crypto"]
assert '"key":' not in text and not re.search(r'"key"\s*:', text), "a key in stats or dump"
PY
	then
		ok "gateway $i: frames sealed and opened, none dropped, no key in stats or dump"
	else
		not_ok "gateway $i counters: $(head -c 400 "$D/stats$i.json")"
	fi
done

# ---- A control process takes over the protected epoch without its keys -------------
# The keys live only in the gateways' tables: the state directory holds none, and a
# control process that starts takes over the live epoch as it is (the links it seals and
# their AEAD compared with the gateways' dump), installing nothing.
CTL=$BUILD/control/daemon/georeduce-control
ctl_start() {
	"$CTL" run "$D/deployment.json" --socket "$D/control.sock" --out "$D/tables" \
		--state-dir "$D/state" --heartbeat-ms 200 --fail-after 3 --timeout-ms 3000 \
		2>>"$D/control.log" &
	echo $! >"$D/control.pid"
}
log_has() { wan_wait_for 60 grep -q "$1" "$D/control.log"; }
for start in 1 2; do
	ctl_start
	if log_has "job 1: epoch 2 found live on 3 gateways (.*): carried on, nothing installed"; then
		ok "control process start $start: the protected epoch 2 carried on, nothing installed"
	else
		not_ok "start $start: epoch 2 not taken over: $(tail -5 "$D/control.log")"
	fi
	wan_run "$D" 1 3 "$((start * 100))" >"$D/ms" &&
		ok "epoch 2 after start $start: 3 rounds, every result bit-exact" ||
		not_ok "rounds after start $start"
	if grep -q -i -e '"key"' -e '"sealed"' "$D/state/jobs.json"; then
		not_ok "the state directory holds link keys"
	else
		jq -e '.epochs[] | select(.job == 1) | .epoch == 2 and .next > 2' \
			"$D/state/jobs.json" >/dev/null &&
			ok "the state records epoch 2 live, and no key" ||
			not_ok "state: $(jq -c .epochs "$D/state/jobs.json")"
	fi
	wan_control_stop "$D" KILL
done
# Links sealed with another AEAD than the gateways': not the same epoch, a new one with
# fresh keys replaces it.
jq '.protected.aead = "aes-256-gcm"' "$D/deployment.json" >"$D/d.json" &&
	mv "$D/d.json" "$D/deployment.json"
ctl_start
if log_has "job 1: epoch 2 on the gateways is not what this deployment plans now" &&
	log_has "job 1: epoch 3 live on 3 gateways"; then
	ok "another AEAD: epoch 2 not taken over, epoch 3 installed"
	wan_run "$D" 1 3 300 >"$D/ms" &&
		ok "epoch 3 (aes-256-gcm): 3 rounds, every result bit-exact" ||
		not_ok "rounds in epoch 3"
else
	not_ok "another AEAD: $(tail -5 "$D/control.log")"
fi
wan_control_stop "$D" KILL

[ "$fails" -eq 0 ] && echo "wan_sealed_e2e: all ok" || echo "wan_sealed_e2e: $fails failed"
[ "$fails" -eq 0 ]
