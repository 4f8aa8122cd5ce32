#!/usr/bin/env bash
# A gateway that corrupts one sum in 10^6 fails georeduce-bench's run (docs/BENCH.md, "Wrong
# sums"): ring mode's dataplane with --fault 0,tx,corrupt=1e-6 (one bit of a RESULT's
# payload flipped, docs/DATAPLANE.md, "Fault injection") over 512 chunks x 4 workers x 2500
# rounds = 5.12 million RESULT frames, 5.12 corruptions expected (with --fault-seed 1 the
# dataplane's generator picks 6 of the first 5.12 million frames). Every RESULT is verified:
# the run exits 3 and names the wrong sums; the same run without the fault exits 0 with no
# wrong sum. Bad corrupt= values are refused, naming the option, by the bench and by the
# dataplane. Exit 77 (skip) if EAL cannot start here.
# Usage: tests/bench_fault.sh BENCH DATAPLANE
set -u
bench=${1:?usage: bench_fault.sh BENCH DATAPLANE}
dp=${2:?}
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=tests/clilib.sh
. tests/clilib.sh
prefix=gbf$$
trap 'rm -rf "$tmp" /var/run/dpdk/"$prefix"*' EXIT
eal=(--no-huge -m 512 --no-pci --no-shconf "--file-prefix=$prefix" -l 0-1 --log-level=lib.eal:error)

for v in 2 x -1 ""; do
	expect 2 "--dp-fault corrupt=$v refused" "$bench" -- --dp-fault "0,tx,corrupt=$v"
	grep -q -- "--dp-fault: .*corrupt" "$tmp/err" && ok "names --dp-fault and corrupt" ||
		not_ok "--dp-fault corrupt=$v: $(cat "$tmp/err")"
done
expect 2 "--dp-fault on port 1" "$bench" -- --dp-fault 1,tx,corrupt=0.5
expect 2 "--dp-fault in port mode" "$bench" -- --mode port --table x.json --dp-fault 0,tx,corrupt=0.5
expect 2 "--rounds with --search" "$bench" -- --search --rounds 10 --line-gbps 10
grep -q -- "--rounds" "$tmp/err" && ok "names --rounds" || not_ok "--rounds: $(cat "$tmp/err")"
for v in 2 x; do
	"$dp" --no-huge -m 64 --no-pci --no-shconf --file-prefix="${prefix}d" -l 0-1 \
		--log-level=lib.eal:error -- --fault "0,tx,corrupt=$v" -s "$tmp/d.sock" \
		>"$tmp/d.log" 2>&1
	rc=$?
	if [ "$rc" = 2 ] && grep -q "^georeduce-dataplane: --fault: corrupt: .*got '0,tx,corrupt=$v'" "$tmp/d.log"; then
		ok "the dataplane refuses corrupt=$v naming --fault"
	elif grep -q "Cannot init\|cannot initialise EAL" "$tmp/d.log"; then
		echo "# EAL cannot start here: $(head -c 200 "$tmp/d.log")"
		exit 77
	else
		not_ok "the dataplane and corrupt=$v: exit $rc, $(head -c 300 "$tmp/d.log")"
	fi
done

# 5.12 million RESULTs: 2500 rounds of 512 chunks of 64 bytes x 4 workers. --rto-ms 1000:
# a corrupted RESULT is not taken, so its chunk's round is resent after the timeout (the
# gateway answers with the RESULT it kept, which is intact); a generator that waited for a
# core on a busy machine must not resend before then.
run=(-- --no-baseline --payload 64 --window 512 --rounds 2500 --rto-ms 1000 --quiet --json)
"$bench" "${eal[@]}" "${run[@]}" --dp-fault 0,tx,corrupt=1e-6 --dp-fault-seed 1 \
	>"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 2 ] && grep -q "cannot initialise EAL" "$tmp/err"; then
	echo "# EAL cannot start here: $(head -c 200 "$tmp/err")"
	exit 77
fi
[ "$rc" -eq 3 ] && ok "corrupt=1e-6: exit 3" || not_ok "corrupt=1e-6: exit $rc: $(tail -c 300 "$tmp/err")"
grep -Eq "wrong sum: chunk [0-9]+ round [0-9]+ worker [0-9]+ element [0-9]+: expected -?[0-9.e+-]+ \(0x[0-9a-f]+\), received" \
	"$tmp/err" && ok "the wrong sums named on stderr" || not_ok "stderr: $(head -c 600 "$tmp/err")"
python3 - "$tmp/out" <<'PY' && ok "corrupt=1e-6: wrong_results in the report" || not_ok "corrupt=1e-6 report"
import json, sys
p = json.load(open(sys.argv[1]))["phases"][0]
v = p["verify"]
print("# %d RESULTs verified, %d wrong, the dataplane corrupted %d" %
      (v["payloads_checked"], p["wrong_results"], p["gateway_corrupted"]))
assert v["payloads_checked"] >= 2500 * 512 * 4, v
# Every corrupted frame reached the generator as a RESULT copy (a copy the generator
# already had from a resend counts as a duplicate, unverified).
assert 1 <= p["wrong_results"] <= p["gateway_corrupted"], p
assert v["wrong_results"] == p["wrong_results"] and v["failures"] >= p["wrong_results"], v
w = v["wrong"]
assert 1 <= len(w) <= 4 and len(w) == min(4, p["wrong_results"]), w
for x in w:
    assert x["expected_bits"] != x["received_bits"] and x["elements_wrong"] == 1, x
    assert 0 <= x["element"] < 16, x
assert p["losses"]["lost_chunks"] == 0, p["losses"]
PY

"$bench" "${eal[@]}" "${run[@]}" --dp-fault-seed 1 >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] && ok "no fault: exit 0" || not_ok "no fault: exit $rc: $(tail -c 300 "$tmp/err")"
python3 - "$tmp/out" <<'PY' && ok "no fault: nothing wrong" || not_ok "no-fault report"
import json, sys
p = json.load(open(sys.argv[1]))["phases"][0]
assert p["wrong_results"] == 0 and p["gateway_corrupted"] == 0, p
assert p["verify"]["payloads_checked"] >= 2500 * 512 * 4 and p["verify"]["failures"] == 0, p
PY

# fp16: a wrong sum is named with both values as numbers and their 16 bits (every sum of
# the bench's small integers is exact in fp16).
"$bench" "${eal[@]}" -- --no-baseline --dtype fp16 --payload 64 --window 64 --rounds 200 \
	--rto-ms 1000 --quiet --dp-fault 0,tx,corrupt=1e-3 --dp-fault-seed 3 >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 3 ] &&
	grep -qE "wrong sum: chunk [0-9]+ round [0-9]+ worker [0-9]+ element [0-9]+: expected -?[0-9]+ \(0x[0-9a-f]{4}\), received" "$tmp/err" &&
	ok "fp16: exit 3, the wrong sum named: $(grep -m1 -o 'expected.*received [^;]*' "$tmp/err")" ||
	not_ok "fp16 wrong sums: exit $rc: $(grep -m2 'wrong sum' "$tmp/err")"

echo "# $((n - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
