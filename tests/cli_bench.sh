#!/usr/bin/env bash
# georeduce-bench: bad options exit 2 with one line naming the option (before EAL starts),
# and a short ring-mode run (the dataplane on lcore 1, the generator on the main lcore)
# verifies every RESULT it samples, loses nothing and reports both phases. Exit 77 (skip)
# if EAL cannot start here. GEOREDUCE_TEST_QUICK=1 shortens the run.
# Usage: tests/cli_bench.sh PATH/TO/georeduce-bench
set -u
bench=${1:?usage: cli_bench.sh PATH/TO/georeduce-bench}
cd "$(dirname "$0")/.."
# shellcheck source=tests/clilib.sh
. tests/clilib.sh
prefix=gbtest$$
trap 'rm -rf "$tmp" "/var/run/dpdk/$prefix" "${XDG_RUNTIME_DIR:-/nonexistent}/dpdk/$prefix"' EXIT
eal=(--no-huge -m 512 --no-pci --no-shconf "--file-prefix=$prefix" -l 0-1 --log-level=lib.eal:error)

expect 0 "--help" "$bench" -- --help
grep -q -- "--rate-gbps" "$tmp/out" && ok "--help lists --rate-gbps" || not_ok "--help lists --rate-gbps"
expect 2 "unknown option" "$bench" -- --bogus
expect 2 "missing value" "$bench" -- --duration
expect 2 "bad mode" "$bench" -- --mode nic
grep -q -- "--mode" "$tmp/err" && ok "names --mode" || not_ok "names --mode"
expect 2 "payload not a multiple of 64" "$bench" -- --payload 1000
grep -q -- "--payload" "$tmp/err" && ok "names --payload" || not_ok "names --payload"
expect 2 "payload too large" "$bench" -- --payload 16KiB
expect 2 "fan-in 0" "$bench" -- --fanin 0
expect 2 "fan-in above the table's cap" "$bench" -- --fanin 193
expect 2 "bad dtype" "$bench" -- --dtype fp64
expect 2 "negative rate" "$bench" -- --rate-gbps -1
expect 2 "line rate 0" "$bench" -- --line-gbps 0
grep -q -- "--line-gbps" "$tmp/err" && ok "names --line-gbps" || not_ok "names --line-gbps"
expect 2 "zero duration" "$bench" -- --duration 0
expect 2 "burst above 64" "$bench" -- --burst 65
expect 2 "window 0" "$bench" -- --window 0
expect 2 "MTU below the chunk" "$bench" -- --payload 4096 --mtu 1500
expect 2 "bad MAC" "$bench" -- --mode port --table x.json --gw-mac 1:2:3
expect 2 "port mode without --table" "$bench" -- --mode port
expect 2 "--table in ring mode" "$bench" -- --table x.json
expect 2 "--fanin in port mode" "$bench" -- --mode port --table x.json --fanin 4
expect 2 "--json with --csv" "$bench" -- --json --csv
expect 2 "stray argument" "$bench" -- extra
expect 2 "--json= without a file" "$bench" -- --json=
grep -q -- "--json" "$tmp/err" && ok "names --json" || not_ok "names --json"
: >"$tmp/file"
expect 2 "--out on a file" "$bench" -- --out "$tmp/file"
grep -q -- "--out" "$tmp/err" && ok "names --out" || not_ok "names --out"
expect 2 "--out below a missing directory" "$bench" -- --out "$tmp/missing/dir"

# A short ring-mode run: skip if EAL cannot start on this machine. Loss is counted from the
# generator's retransmissions: --rto-ms 2000 keeps a generator that waited for a core on a
# busy machine from counting its own pause as loss (ring mode loses nothing).
dur=0.3
[ "${GEOREDUCE_TEST_QUICK:-0}" != 0 ] && dur=0.15
"$bench" "${eal[@]}" -- --quick --duration "$dur" --quiet --json --verify-every 1 --rto-ms 2000 \
	--out "$tmp/o" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 2 ] && grep -q "cannot initialise EAL" "$tmp/err"; then
	echo "# EAL cannot start here: $(head -c 200 "$tmp/err")"
	exit 77
fi
if [ "$rc" -eq 0 ]; then ok "ring run exits 0"; else not_ok "ring run exits $rc: $(tail -c 300 "$tmp/err")"; fi
python3 - "$tmp/out" <<'PY' && ok "ring run verified, both phases" || not_ok "ring run report"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["mode"] == "ring" and d["payload"] == 1024 and d["workers"] == 4, d
ph = {p["phase"]: p for p in d["phases"]}
assert set(ph) == {"dataplane", "io-forward"}, ph.keys()
dp = ph["dataplane"]
assert dp["verify"]["failures"] == 0 and dp["verify"]["payloads_checked"] > 0, dp
assert dp["losses"]["lost_chunks"] == 0 and dp["achieved_mpps"] > 0, dp
assert dp["latency_us"]["p50"] > 0 and dp["latency_us"]["p999"] >= dp["latency_us"]["p50"], dp
assert [l["role"] for l in dp["lcores"]] == ["generator", "dataplane"], dp["lcores"]
assert d["ratio_to_io"] > 0, d
# The certifier's figures: net_ring reports 10 Gbit/s; L1 = L2 + 20 bytes a frame, L2 =
# the port's bytes + 4 (FCS); every frame answered.
for p in d["phases"]:
    o, r = p["offered"], p["received"]
    assert p["line_gbps"] == 10 and p["line_from"] == "port", p
    assert o["mpps"] > 0 and r["mpps"] > 0, p
    assert abs(o["l1_gbps"] - o["l2_gbps"] - o["mpps"] * 1e6 * 20 * 8 / 1e9) < 1e-3 * o["l1_gbps"], o
    assert abs(o["l1_pct"] - 10 * o["l1_gbps"]) < 1e-6 * o["l1_pct"], o
    assert p["loss"]["frames"] == 0 and p["loss"]["sent"] > 0, p["loss"]
    for k in ("imissed", "rx_nombuf", "ierrors", "oerrors"):
        assert k in p["port_stats"]["before"] and k in p["port_stats"]["after"], p
    assert p["port_stats"]["after"]["opackets"] > p["port_stats"]["before"]["opackets"], p
    assert isinstance(p["gateway_drops"], dict), p
PY

expect_out "$tmp/o" "$tmp/out" report.txt report.json report.csv
grep -q "^dataplane  |" "$tmp/o/report.txt" && ok "report.txt has the table" ||
	not_ok "report.txt: $(head -c 300 "$tmp/o/report.txt")"

# fp16 at 256 B with 16 workers, paced: every payload exact, no loss.
"$bench" "${eal[@]}" -- --quick --duration "$dur" --quiet --csv --no-baseline --payload 256 \
	--rto-ms 2000 \
	--fanin 16 --dtype fp16 --rate-gbps 5 --verify-every 1 --json="$tmp/r.json" \
	>"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 0 ]; then ok "paced fp16 run exits 0"; else not_ok "paced fp16 run exits $rc: $(tail -c 300 "$tmp/err")"; fi
python3 - "$tmp/out" <<'PY' && ok "paced run never above its rate" || not_ok "paced run report"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 1 and rows[0]["phase"] == "dataplane", rows
r = rows[0]
assert int(r["failures"]) == 0 and int(r["lost"]) == 0, r
# 5 Gbit/s on the wire: 352-byte frames (256 B payload) + 24 bytes, at most 1.66 Mpps (less
# when the machine is busy: the run is closed-loop).
assert 0 < float(r["offered_mpps"]) < 1.75, r
PY
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["payload"] == 256, d' \
	"$tmp/r.json" && ok "--json=FILE beside --csv on stdout" || not_ok "--json=FILE"

# A short search against ring mode's dataplane: every trial after the first starts its
# chunks past the rounds of the one before, and the gateway sums them as new rounds (every
# payload checked, none wrong); the JSON has the search and its trials. A trial that a
# busy machine held back runs again (--retries), and does not count in the search.
"$bench" "${eal[@]}" -- --search --duration "$dur" --warmup 0.1 --resolution 25 --rto-ms 2000 \
	--retries 3 \
	--line-gbps 400 --pace-burst 256KiB --verify-every 1 --quiet --json >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] && ok "ring search exits 0" || not_ok "ring search exits $rc: $(tail -c 300 "$tmp/err" | tr "\n" " ") $(head -c 3000 "$tmp/out" | tr -d " \n")"
python3 - "$tmp/out" <<'PY' && ok "ring search: trials verified" || not_ok "ring search report"
import json, sys
d = json.load(open(sys.argv[1]))
s, trials = d["search"], d["trials"]
judged = [t for t in trials if not t["repeated"]]
assert s["line_gbps"] == 400 and 2 <= len(judged) <= 2 * (1 + 2 * 2), (s, len(trials))
assert trials[0]["asked_l1_gbps"] == 400 and not trials[0]["reached"], trials[0]
for t in trials:
    assert t["verify"]["failures"] == 0 and t["phase"] == "dataplane", t
for t in judged:
    assert t["verify"]["payloads_checked"] > 0, t
PY

echo "# $((n - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
