#!/usr/bin/env bash
# The worker side alone (meson -Dgateway=disabled, docs/CLIENT.md "A worker-only build"):
# it configures without looking for DPDK, libnuma, GLPK, libmicrohttpd or CUnit, builds
# libgeoreduce, its pkg-config file, georeduce-worker, georeduce-dpctl and the Python
# package, and installs them and nothing of the gateway side.
#
#   client_only.sh
set -u
. "$(dirname "$0")/clilib.sh"

b=$tmp/build
if ! meson setup "$b" . -Dgateway=disabled -Dpython=/usr/bin/python3 >"$tmp/setup" 2>&1; then
	not_ok "meson setup -Dgateway=disabled: $(tail -3 "$tmp/setup" | tr '\n' ' ')"
	echo "client_only: $n tests, $fails failed"
	exit 1
fi
ok "meson setup -Dgateway=disabled"
looked=$(grep -E "found: (YES|NO)" "$b/meson-logs/meson-log.txt" |
	grep -iE "dpdk|numa|glpk|microhttpd|cunit" | head -3)
[ -z "$looked" ] && ok "no gateway dependency looked up" ||
	not_ok "gateway dependencies looked up: $looked"
if ninja -C "$b" >"$tmp/ninja" 2>&1; then
	ok "the worker side builds"
else
	not_ok "ninja: $(grep -m3 -E 'error|FAILED' "$tmp/ninja" | tr '\n' ' ')"
fi
DESTDIR=$tmp/inst meson install -C "$b" --quiet >"$tmp/install" 2>&1 ||
	not_ok "meson install: $(tail -3 "$tmp/install" | tr '\n' ' ')"
for f in bin/georeduce-worker bin/georeduce-dpctl include/georeduce.h; do
	[ -n "$(find "$tmp/inst" -path "*/$f" -print -quit)" ] && ok "installs $f" ||
		not_ok "does not install $f"
done
for f in libgeoreduce.so georeduce.pc georeduce/client.py; do
	[ -n "$(find "$tmp/inst" -path "*$f" -print -quit)" ] && ok "installs $f" ||
		not_ok "does not install $f"
done
for f in georeduce-dataplane georeduce-control georeduce-plan; do
	[ -z "$(find "$tmp/inst" -name "$f" -print -quit)" ] && ok "installs no $f" ||
		not_ok "installs $f in a worker-only build"
done
so=$(find "$tmp/inst" -name 'libgeoreduce.so.*.*' -print -quit)
if [ -n "$so" ]; then
	bad=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -vE '^(gr_|GEOREDUCE_[0-9]+$)' | head -3 | tr '\n' ' ')
	[ -z "$bad" ] && ok "libgeoreduce.so exports gr_* only" || not_ok "also exports: $bad"
	"$b/tools/worker/georeduce-worker" --help >/dev/null 2>&1 &&
		ok "georeduce-worker runs" || not_ok "georeduce-worker --help failed"
fi

echo "client_only: $n tests, $fails failed"
[ "$fails" -eq 0 ]
