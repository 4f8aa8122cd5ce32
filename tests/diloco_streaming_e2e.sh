#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# examples/diloco/run --streaming 2, small: Streaming DiLoCo (georeduce.diloco's
# StreamingOuterSync) on the emulated 4-site WAN, a 17604-parameter model in 2 fragments,
# 3 outer steps of 2 inner steps, the fragments' AllReduces in the background, through an
# mxint8 job and an fp32 job. Checked: every fragment's sync completed at every site, each
# at its staggered step (fragment 0 after inner steps 1, 3, 5; fragment 1 after 2, 4, 6)
# with all four sites in its average; every site ends with the same global parameters, bit
# for bit; the loss stays finite; the report names the mode and ends as usual.
#
#   diloco_streaming_e2e.sh BUILD_DIR
set -u
BUILD=$(cd "$1" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
fails=0
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; fails=$((fails + 1)); }
RUN=$ROOT/examples/diloco/run
D=$(mktemp -d /tmp/georeduce-diloco-stream-e2e.XXXXXX)
trap 'rm -rf "$D"' EXIT

if GEOREDUCE_BUILD=$BUILD "$RUN" --inner 2 --streaming 3 >/dev/null 2>"$D/err"; then
	not_ok "run --inner 2 --streaming 3: accepted"
else
	grep -q "error: .*--streaming" "$D/err" && ok "more fragments than inner steps refused" ||
		not_ok "run --streaming 3: $(cat "$D/err")"
fi
if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
	echo "diloco_streaming_e2e: needs root and network namespaces; skipped"
	exit 77
fi
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
	echo "diloco_streaming_e2e: /usr/bin/python3 cannot import torch; skipped"
	exit 77
fi
if GEOREDUCE_BUILD=$BUILD "$RUN" --outer 3 --inner 2 --hidden 32 --streaming 2 \
	--out "$D/out" >"$D/run.log" 2>&1; then
	ok "3 outer steps of streaming DiLoCo with mxint8 and with fp32 through the gateways"
else
	not_ok "examples/diloco/run --streaming 2"
	tail -n 30 "$D/run.log"
fi
if python3 - "$D/out" >"$D/res" 2>"$D/err" <<'PY'
import glob, json, math, sys
d = sys.argv[1]
for name in ("mxint8", "fp32"):
    docs = [json.load(open(f)) for f in sorted(glob.glob("%s/dl-%s-*.json" % (d, name)))]
    assert len(docs) == 4, (name, len(docs))
    assert len({x["params_sha256"] for x in docs}) == 1, "%s: sites differ" % name
    for x in docs:
        assert x["dtype"] == name and x["streaming"] == 2 and len(x["outer"]) == 4, name
        merged = sorted(tuple(m[:2]) + (m[3],) for r in x["outer"][1:] for m in r["merged"])
        assert merged == [(0, 1, 4), (0, 3, 4), (0, 5, 4), (1, 2, 4), (1, 4, 4),
                          (1, 6, 4)], (name, x["rank"], merged)
        assert all(m[1] <= m[2] for r in x["outer"][1:] for m in r["merged"])
        ev = [r["eval"] for r in x["outer"]]
        assert all(math.isfinite(v) for v in ev), ev
    print("%s: 6 fragment syncs at every site, waited %.3f s (mean)" % (
        name, sum(x["waited_s"] for x in docs) / 4))
PY
then
	ok "every fragment synced at its step, the sites' global parameters the same ($(tr '\n' ' ' <"$D/res"))"
else
	not_ok "results: $(tail -c 600 "$D/err")"
fi
grep -q "streaming with 2 fragments" "$D/out/report.txt" 2>/dev/null &&
	grep -q "^diloco: 3 outer steps of 2 inner" "$D/out/report.txt" &&
	ok "the report names the mode and ends as usual" ||
	not_ok "report: $(tail -n 3 "$D/out/report.txt" 2>&1)"
[ "$fails" -eq 0 ]
