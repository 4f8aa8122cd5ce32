#!/usr/bin/env bash
# Each part where it belongs (docs/ARCHITECTURE.md, "Rules every part follows"): the
# gateway runs tables and carries no plan, topology or compiler code; the worker library
# carries neither those nor DPDK; lib/ includes no DPDK header and nothing of dataplane/ or
# control/; nothing outside control/ (and the tests of control/) includes a control/ header.
#
#   layering.sh DATAPLANE WORKER LIBGEOREDUCE_SO
set -u
dataplane=$1 worker=$2 libso=$3
. "$(dirname "$0")/clilib.sh"

# Symbols of the plan model, the topology model, the table compiler, the planner and GLPK.
planner_syms='^(plan|topo|mtree|crew|selmcast|bc|sim|eventq|packing|graph|baseline|jobplan|deploy)_|^table_(compile|slots|hold_ms|split_chunks)$|^glp_'

# defined_matching BINARY REGEX: the binary's defined function and data symbols matching.
defined_matching() {
	nm --defined-only "$1" 2>/dev/null | awk '{print $3}' | sed 's/\.localalias$//' |
		grep -E "$2" | sort -u
}

for b in "$dataplane" "$worker" "$libso"; do
	[ -s "$b" ] || { not_ok "$(basename "$b"): no such binary"; continue; }
	nm --defined-only "$b" >/dev/null 2>&1 || { not_ok "$(basename "$b"): nm failed"; continue; }
	bad=$(defined_matching "$b" "$planner_syms" | head -5 | tr '\n' ' ')
	[ -z "$bad" ] && ok "$(basename "$b") carries no plan, topology or compiler code" ||
		not_ok "$(basename "$b") defines $bad"
done
for b in "$worker" "$libso"; do
	bad=$(defined_matching "$b" '^rte_' | head -5 | tr '\n' ' ')
	[ -z "$bad" ] && ok "$(basename "$b") carries no DPDK" || not_ok "$(basename "$b") defines $bad"
done
# The check can fail: the control daemon does carry the compiler.
control=$(dirname "$dataplane")/../control/daemon/georeduce-control
[ -n "$(defined_matching "$control" '^table_compile$')" ] &&
	ok "the symbol check sees the compiler where it is (georeduce-control)" ||
	not_ok "table_compile not found in $control: the symbol check is blind"

# Headers: the names of control/'s headers, and who includes them.
control_headers=$(cd control && find . -name '*.h' -printf '%f\n' | sort -u)
bad=""
for h in $control_headers; do
	bad+=$(grep -rlF "#include \"$h\"" lib dataplane tools bench 2>/dev/null | sed "s|\$|:$h |")
done
[ -z "$bad" ] && ok "nothing outside control/ includes a control/ header" ||
	not_ok "control/ headers included from outside: $bad"
bad=$(grep -rlE '#include <(rte_|glpk)' lib | tr '\n' ' ')
[ -z "$bad" ] && ok "lib/ includes no DPDK and no GLPK header" || not_ok "in lib/: $bad"

# lib/ is below both programs: it includes no header of dataplane/ or control/ (by name,
# or by a path into them), and its build files reach into neither.
lib_includes() { # lib_includes DIR: "file:header" for every header of DIR that lib/ includes
	local h
	for h in $(cd "$1" && find . -name '*.h' -printf '%f\n' -printf '%P\n' | sort -u); do
		grep -rlE "#include [\"<]([a-z_]+/)*$h[\">]" lib --include='*.[ch]' 2>/dev/null |
			sed "s|\$|:$h|"
	done
}
for up in dataplane control; do
	bad=$(lib_includes "$up" | sort -u | tr '\n' ' ')
	bad+=$(grep -lE "['\"/]\\.\\./($up|\\.\\./$up)|'$up/|\"$up/" $(find lib -name meson.build) |
		sed "s|\$|:reaches into $up/ |" | tr '\n' ' ')
	[ -z "$bad" ] && ok "lib/ includes nothing from $up/" || not_ok "lib/ -> $up/: $bad"
done
# The check can fail: dataplane/ does include a header of lib/kernels/, and a lib/ file
# that included one of dataplane/ would be found.
[ -n "$(grep -rlE '#include "sum.h"' dataplane)" ] &&
	ok "the include check sees includes where they are (dataplane/ -> sum.h)" ||
	not_ok "no dataplane/ file includes sum.h: the include check is blind"

echo "layering: $n tests, $fails failed"
[ "$fails" -eq 0 ]
