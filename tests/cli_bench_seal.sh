#!/usr/bin/env bash
# georeduce-bench-seal: bad values exit 2 naming the option; a short run with each software
# AES-GCM PMD exits 0 with one JSON row per payload. The program opens every sealed copy
# it measures with OpenSSL and checks the exact sums and the lcore's counters, and exits 1
# if any check fails, so a broken protected link fails this test.
# Usage: tests/cli_bench_seal.sh PATH/TO/georeduce-bench-seal
set -u
bench=${1:?usage: cli_bench_seal.sh PATH/TO/georeduce-bench-seal}
cd "$(dirname "$0")/.."
# shellcheck source=tests/clilib.sh
. tests/clilib.sh

eal=(--no-huge -m 768 --no-pci --no-shconf --file-prefix="bseal$$" -l 0 --log-level=error)
expect 0 "--help" "$bench" "${eal[@]}" -- --help
expect 2 "payload not a multiple of 64" "$bench" "${eal[@]}" -- --payload 100
grep -q -- "--payload" "$tmp/err" && ok "names --payload" || not_ok "names --payload"
expect 2 "window 0" "$bench" "${eal[@]}" -- --window 0
grep -q -- "--window" "$tmp/err" && ok "names --window" || not_ok "names --window"
expect 1 "no such cryptodev" "$bench" "${eal[@]}" -- --crypto crypto_none0 --payload 1024 \
	--window 8 --rounds 2 --repeat 1
# Each PMD by CPU crypto, and crypto_aesni_gcm0 through operations (--crypto-ops).
for run in crypto_aesni_gcm0 crypto_aesni_mb0 "crypto_aesni_gcm0 --crypto-ops"; do
	# shellcheck disable=SC2086 # the device and an option
	set -- --crypto $run
	path=cpu
	[ $# -eq 3 ] && path=ops
	expect 0 "short run, $run" "$bench" "${eal[@]}" -- "$@" --payload 1024,8192 \
		--window 16 --rounds 2 --repeat 1 --json
	if python3 - "$tmp/out" "$path" 2>"$tmp/err" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert [r["payload"] for r in rows] == [1024, 8192], rows
for r in rows:
    assert r["plain_gbps"] > 0 and r["sealed_gbps"] > 0 and r["pmd"].startswith("crypto_"), r
    assert r["path"] == sys.argv[2] and r["aead_alone_gbps"] > 0, r
    # The bound of the protected link: the AEAD alone (A) and the plain link (P), the
    # time of both added: P_ns / (P_ns + A_ns), and the sealed link's share of it. From
    # the times per chunk (printed to 0.1 ns): the rates, printed to 0.01 Gbit/s, lose
    # too much when the AEAD alone is slow, as on a loaded host (0.07 Gbit/s).
    p_ns, s_ns, a_ns = r["plain_ns_chunk"], r["sealed_ns_chunk"], r["aead_ns_chunk"]
    bound, of_bound = p_ns / (p_ns + a_ns), (p_ns + a_ns) / s_ns
    assert abs(r["bound"] - bound) < 0.0006, (r, bound)
    assert abs(r["of_bound"] - of_bound) < 0.0006 + 1e-4 * of_bound, (r, of_bound)
PY
	then
		ok "$run: one JSON row per payload, the bound beside it"
	else
		not_ok "$run JSON: $(tail -c 300 "$tmp/err")"
	fi
done

echo "1..$n"
[ "$fails" -eq 0 ]
