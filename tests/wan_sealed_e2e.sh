#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Protected links end to end on the emulated WAN (scripts/lib/testbed.py --protect): three
# sites with a worker each, every WAN link sealed (docs/PROTOCOL.md section 14) through the
# crypto_aesni_mb cryptodev of each georeduce-dataplane, tables installed by
# georeduce-control over the control sockets. Checked: the mTree job's results are
# bit-exact (georeduce-worker verifies them) in epoch 1 and again in epoch 2 with fresh
# keys; every gateway sealed and opened frames and dropped none as replayed, forged or of
# an unknown key; no key in the table files, in a dump or in stats.
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

[ "$fails" -eq 0 ] && echo "wan_sealed_e2e: all ok" || echo "wan_sealed_e2e: $fails failed"
[ "$fails" -eq 0 ]
