#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# `meson install` into a staging directory: the programs, libgeoreduce with its header
# and pkg-config file (a program builds and links against them), the systemd units with
# the installed paths, the docs, the examples and georeduce-pki.
#
#   install.sh BUILD_DIR
set -u
BUILD=$(cd "$1" && pwd)
source "$(dirname "$0")/clilib.sh"
D=$tmp/stage
if ! meson install -C "$BUILD" --destdir "$D" --no-rebuild --quiet >"$tmp/out" 2>&1; then
	not_ok "meson install: $(tail -5 "$tmp/out")"
	exit 1
fi
option() { # NAME: a build option's value
	meson introspect "$BUILD" --buildoptions | python3 -c '
import json, sys
print([o["value"] for o in json.load(sys.stdin) if o["name"] == sys.argv[1]][0])' "$1"
}
prefix=$(option prefix)
# A sanitized build's library needs its runtime in the program too.
san=$(option b_sanitize)
sanflags=()
[ "$san" != none ] && sanflags=(-fsanitize="$san")
P=$D$prefix
for f in bin/georeduce-dataplane bin/georeduce-control bin/georeduce-dpctl bin/georeduce-worker \
	bin/georeduce-plan bin/georeduce-pki bin/georeduce-bench bin/georeduce-bench-table \
	include/georeduce.h \
	share/doc/georeduce/DEPLOYMENT.md share/doc/georeduce/CONTROL.md \
	share/doc/georeduce/examples/dataplane-a.conf \
	share/doc/georeduce/examples/deployments/3site-tls.json; do
	[ -e "$P/$f" ] || not_ok "not installed: $f"
done
# The Wireshark dissector in the plugin folder of the build option (LIBDIR/wireshark/plugins
# by default), loadable by tshark where it is installed.
plugdir=$(option wireshark_plugindir)
[ -n "$plugdir" ] || plugdir=$(option libdir)/wireshark/plugins
case $plugdir in /*) ;; *) plugdir=$prefix/$plugdir ;; esac
if [ -f "$D$plugdir/georeduce.lua" ]; then
	ok "Wireshark dissector installed in $plugdir"
	if command -v tshark >/dev/null; then
		# From the personal Lua plugin folder (docs/PROTOCOL.md section 15).
		mkdir -p "$tmp/home/.local/lib/wireshark/plugins"
		cp "$D$plugdir/georeduce.lua" "$tmp/home/.local/lib/wireshark/plugins/"
		HOME=$tmp/home tshark -G protocols 2>/dev/null | grep -q '^georeduce' &&
			ok "tshark loads the installed dissector from ~/.local/lib/wireshark/plugins" ||
			not_ok "tshark does not load georeduce.lua from the personal plugin folder"
		# With the prefix /usr the default folder is the one Wireshark reads itself.
		global=$(tshark -G folders 2>/dev/null | sed -n 's/^Global Lua Plugins:[[:space:]]*//p')
		if [ "$prefix" = /usr ] && [ -z "$(option wireshark_plugindir)" ]; then
			[ "$plugdir" = "$global" ] && ok "the default folder is Wireshark's: $global" ||
				not_ok "installed in $plugdir, Wireshark reads $global"
		fi
	fi
else
	not_ok "dissector not installed in $plugdir: $(find "$D" -name georeduce.lua)"
fi
units=$(find "$D" -name 'georeduce-*.service' | sort)
[ "$(echo "$units" | grep -c .)" = 2 ] && ok "two systemd units installed" ||
	not_ok "systemd units: $units"
grep -q "ExecStart=$prefix/bin/georeduce-dataplane \$EAL_ARGS --" \
	"$(echo "$units" | grep dataplane)" && ok "the dataplane unit runs the installed binary" ||
	not_ok "dataplane unit: $(grep ExecStart "$(echo "$units" | grep dataplane)")"
pc=$(find "$D" -name georeduce.pc | head -1)
[ -n "$pc" ] && ok "pkg-config file installed" || not_ok "no georeduce.pc"
cat >"$tmp/prog.c" <<'C'
#include <georeduce.h>
#include <stdio.h>
int main(void) { printf("%s\n", gr_dtype_name(GR_DTYPE_FP32)); return 0; }
C
flags=$(PKG_CONFIG_SYSROOT_DIR=$D PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs georeduce)
if cc "${sanflags[@]}" "$tmp/prog.c" -o "$tmp/prog" $flags -Wl,-rpath,"$(dirname "$(find "$D" -name 'libgeoreduce.so' | head -1)")" \
	2>"$tmp/cc" && [ "$("$tmp/prog")" = fp32 ]; then
	ok "a program builds against the installed libgeoreduce (pkg-config)"
else
	not_ok "building against libgeoreduce: $flags: $(tail -3 "$tmp/cc")"
fi
"$P/bin/georeduce-pki" ca "$tmp/pki" && "$P/bin/georeduce-pki" cert "$tmp/pki" gw-a gateway \
	--dns a && openssl verify -CAfile "$tmp/pki/ca.pem" "$tmp/pki/gw-a.pem" >/dev/null &&
	ok "the installed georeduce-pki makes a certificate the CA verifies" || not_ok "georeduce-pki"
# The installed bench and its table generator: the table they write is one the bench takes
# (--help runs before EAL; the table generator's output parses as georeduce-table/1).
"$P/bin/georeduce-bench" -- --help | grep -q -- "--search" &&
	ok "the installed georeduce-bench runs" || not_ok "georeduce-bench --help"
"$P/bin/georeduce-bench-table" --payload 512 --fanin 3 -o "$tmp/gw.json" &&
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
assert d["format"] == "georeduce-table/1" and d["chunk_elements"] == 128, d
assert len(d["trees"][0]["workers"]) == 3, d' "$tmp/gw.json" &&
	ok "the installed georeduce-bench-table writes a gateway table" ||
	not_ok "georeduce-bench-table"
"$P/bin/georeduce-bench-table" --fanin 0 2>"$tmp/err"
[ $? = 2 ] && grep -q -- "--fanin" "$tmp/err" && ok "georeduce-bench-table names a bad option" ||
	not_ok "georeduce-bench-table --fanin 0: $(cat "$tmp/err")"
echo "# $((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]
