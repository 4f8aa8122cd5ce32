#!/usr/bin/env bash
# georeduce-bench's zero-loss search (docs/BENCH.md, "Zero-loss search") on a path with a
# known limit: the bench's af_packet port on one end of a veth pair whose other end sends
# every frame back (tc mirred) through a token bucket (tc tbf) of 20 Mbit/s with a 128 KB
# bucket that queues at most 16 KB and drops the rest. The NDR it finds must be within 2% of that limit
# (counted as the bench counts, with 24 bytes a frame beyond the bucket's count), the trial
# at the NDR must have lost nothing and a trial above it must have lost frames. The limit
# is far below what even a busy machine forwards on a veth, and the pacer's 128 KiB burst
# with the bucket's 128 KB lets the generator catch up after the scheduler kept it waiting
# (at 20 Mbit/s, for up to 50 ms) without a loss; a trial that still fell short of its
# rate by more than 1% without a loss runs again (up to 3 times), and one with a loss
# fails, so that a busy machine slows the search without moving its result. Above the
# limit, 4.5 s of trial at 1% more than it sends 112 KB too many, which with what the
# bucket and the queue hold (144 KB) bounds the NDR at 1.3% above the limit. Also the search's options refused with
# the option named. Exit 77 (skip) without root, network namespaces, tc's u32, mirred and
# tbf, or EAL.
# Usage: tests/bench_search.sh PATH/TO/georeduce-bench
set -u
bench=${1:?usage: bench_search.sh PATH/TO/georeduce-bench}
cd "$(dirname "$0")/.."
# shellcheck source=tests/clilib.sh
. tests/clilib.sh
prefix=gbs$$
ns=gbs$$
trap 'ip netns del "$ns" 2>/dev/null; rm -rf "$tmp" "/var/run/dpdk/$prefix"' EXIT

expect 2 "--pdr without --search" "$bench" -- --pdr 1
grep -q -- "--pdr" "$tmp/err" && ok "names --pdr" || not_ok "names --pdr"
expect 2 "--resolution 0" "$bench" -- --search --resolution 0
grep -q -- "--resolution" "$tmp/err" && ok "names --resolution" || not_ok "names --resolution"
expect 2 "--pdr above 50" "$bench" -- --search --pdr 60
expect 2 "--rate-tolerance -1" "$bench" -- --search --rate-tolerance -1
grep -q -- "--rate-tolerance" "$tmp/err" && ok "names --rate-tolerance" ||
	not_ok "names --rate-tolerance"
expect 2 "--search with --rate-gbps" "$bench" -- --search --rate-gbps 1
grep -q -- "--rate-gbps" "$tmp/err" && ok "names --rate-gbps" || not_ok "names --rate-gbps"
expect 2 "--latency-at 0" "$bench" -- --search --latency-at 0
grep -q -- "--latency-at" "$tmp/err" && ok "names --latency-at" || not_ok "names --latency-at"
expect 2 "--latency-at without --search" "$bench" -- --latency-at 50
expect 2 "--latency-at with 9 percentages" "$bench" -- --search --latency-at 1,2,3,4,5,6,7,8,9
expect 2 "--pace-burst below 1 KiB" "$bench" -- --pace-burst 100
grep -q -- "--pace-burst" "$tmp/err" && ok "names --pace-burst" || not_ok "names --pace-burst"

if [ "$(id -u)" != 0 ] || ! ip netns add "$ns" 2>/dev/null; then
	echo "# skip: needs root and network namespaces"
	exit 77
fi
ip -n "$ns" link add va type veth peer name vb &&
	ip -n "$ns" link set va up && ip -n "$ns" link set vb up || exit 1
ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null
if ! tc -n "$ns" qdisc add dev vb clsact ||
	! tc -n "$ns" filter add dev vb ingress protocol all u32 match u32 0 0 \
		action mirred egress redirect dev vb ||
	! tc -n "$ns" qdisc add dev vb root tbf rate 20mbit burst 128kb limit 16kb; then
	echo "# skip: tc cannot reflect and shape here (u32, mirred, tbf)"
	exit 77
fi
# 256 B of payload: 352-byte frames (without FCS, as the bucket counts them).
python3 bench/georeduce-bench-table --payload 256 --fanin 2 --window 128 -o "$tmp/t.json" ||
	exit 1
# The limit in the bench's L1 Gbit/s; the top at 1.7 times it, so that no halving lands on it.
limit=$(python3 -c 'print(0.02 * (352 + 24) / 352)')
top=$(python3 -c "print(1.7 * $limit)")
# One search and the check of its report. A search is a measurement: a machine busy
# enough to keep the generator from a core for longer than the bucket covers disturbs
# it, so a failed check is measured once more (and reported), and the test fails only
# if both searches are off.
search() {
	ip netns exec "$ns" "$bench" --no-huge -m 256 --no-pci --no-shconf "--file-prefix=$prefix" -l 0 \
		--log-level=lib.eal:error --vdev=net_af_packet0,iface=va -- --mode port \
		--table "$tmp/t.json" --peer io --gw-mac 02:00:00:00:00:01 --search --line-gbps "$top" \
		--duration 4 --warmup 0.5 --pace-burst 128KiB --rate-tolerance 1 --retries 3 --json \
		--out "$tmp/o" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}
search
if [ "$rc" -eq 2 ] && grep -q "cannot initialise EAL" "$tmp/err"; then
	echo "# EAL cannot start here: $(head -c 200 "$tmp/err")"
	exit 77
fi
[ "$rc" -eq 0 ] && ok "search exits 0" || not_ok "search exits $rc: $(tail -c 400 "$tmp/err")"
grep -q "^trial  1: asked" "$tmp/err" && ok "trials printed as they run" ||
	not_ok "no trial lines: $(head -c 300 "$tmp/err")"
check() {
	grep -E "^(trial|latency)" "$tmp/err" | sed 's/^/# /'
	uptime | sed 's/^/# /'
	python3 - "$tmp/out" "$limit" "$top" 2>"$tmp/why" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
limit, top = float(sys.argv[2]), float(sys.argv[3])
s = d["search"]
assert abs(s["line_gbps"] / top - 1) < 1e-5 and s["line_from"] == "--line-gbps", s
trials = d["trials"]
assert 2 <= sum(not x["repeated"] for x in trials) <= 1 + 2 * 8, len(trials)
ndr = s["ndr"]["l1_gbps"]
print("# limit %.6f, NDR %.6f (%+.2f%%), PDR %.6f, %d trials" % (
    limit, ndr, 100 * (ndr / limit - 1), s["pdr"]["l1_gbps"], len(trials)))
assert abs(ndr / limit - 1) <= 0.02, (ndr, limit)
t = trials[s["ndr"]["trial"] - 1]
assert abs(t["asked_l1_gbps"] / ndr - 1) < 1e-5 and t["loss"]["frames"] == 0, t
assert t["reached"], t
assert any(x["loss"]["frames"] > 0 and x["asked_l1_gbps"] > ndr for x in trials), trials
assert s["pdr"]["l1_gbps"] >= ndr, s
assert abs(s["pdr"]["l1_gbps"] / limit - 1) <= 0.03, s["pdr"]
# Latency at 10, 50, 90 and 100% of the NDR (the default --latency-at); at 10% the path
# has nine tenths of its rate to spare and loses nothing.
lat = d["latency_at_ndr"]
assert [x["ndr_pct"] for x in lat] == [10, 50, 90, 100], lat
for x in lat:
    assert x["latency_us"]["samples"] > 0 and x["latency_us"]["p50"] > 0, x
    assert abs(x["asked_l1_gbps"] / (ndr * x["ndr_pct"] / 100) - 1) < 1e-4, x
assert lat[0]["loss"]["frames"] == 0, lat[0]
for x in trials:
    assert abs(x["offered"]["l1_pct"] / (100 * x["offered"]["l1_gbps"] / top) - 1) < 1e-4, x
PY
}
if check; then
	ok "NDR within 2% of the limit"
else
	echo "# the first search was off ($(tail -n 1 "$tmp/why")); measuring again"
	search
	if [ "$rc" -eq 0 ] && check; then
		ok "NDR within 2% of the limit (the second search)"
	else
		not_ok "search report: $(tail -n 1 "$tmp/why")"
	fi
fi

# --out: the same report in three forms, the trials as plot data and, with gnuplot, plots.
expect_out "$tmp/o" "$tmp/out" report.txt report.json report.csv search.dat search.gp
grep -q "^NDR  |" "$tmp/o/report.txt" && grep -q "^latency |" "$tmp/o/report.txt" &&
	ok "report.txt has the final table and the latency at the NDR" ||
	not_ok "report.txt: $(head -c 300 "$tmp/o/report.txt")"
[ "$(grep -c . "$tmp/o/report.csv")" -eq "$(python3 -c 'import json,sys; print(1 + len(json.load(open(sys.argv[1]))["trials"]))' "$tmp/out")" ] &&
	ok "report.csv: a row per trial" || not_ok "report.csv rows"
if command -v gnuplot >/dev/null; then
	for f in search-rate.png search-latency.png; do
		[ -s "$tmp/o/$f" ] && ok "gnuplot drew $f" || not_ok "no $f"
	done
fi

echo "# $((n - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
