#!/usr/bin/env bash
# The parsers of hostile bytes under libFuzzer (tests/fuzz/fuzz_*.c, one harness per
# parser): builds every harness with clang, -fsanitize=fuzzer,address,undefined, from the
# lib/ (and control/daemon deployment) sources it needs; runs each input of
# tests/fuzz/regress/<harness>/ (crashes found and fixed) once; then fuzzes each harness
# for a bounded time from its seed corpus (tests/fuzz/corpus/<harness>/) and dictionary
# (tests/fuzz/<harness>.dict), new inputs going to a temporary directory; stdin is
# /dev/null (a deployment may name a topology file such as /dev/stdin). Exits 1 on any
# crash, leak, sanitizer report or failed check, naming the reproducer; 77 (skipped) when
# clang or libFuzzer is missing, or in the quick (sanitizer) suite, where it would only
# repeat itself.
#
#   tests/fuzz/run.sh [--seconds N] [--build DIR] [--only HARNESS] [--regress-only]
#
#   --seconds N     fuzz each harness N seconds (default 8: about a minute in all)
#   --build DIR     build folder (default build-fuzz in the source tree; kept, incremental)
#   --only H        this harness alone (e.g. fuzz_wire)
#   --regress-only  build and run the regression inputs, no fuzzing
#
# A crash is reproduced with: BUILD/fuzz_HARNESS PATH (the path printed).
set -u
cd "$(dirname "$0")/../.."
src=$PWD

seconds=8
build=$src/build-fuzz
only=
regress_only=0
while [ $# -gt 0 ]; do
	case $1 in
	--seconds) seconds=$2; shift 2 ;;
	--build) build=$2; shift 2 ;;
	--only) only=$2; shift 2 ;;
	--regress-only) regress_only=1; shift ;;
	*) echo "usage: $0 [--seconds N] [--build DIR] [--only HARNESS] [--regress-only]" >&2
	   exit 2 ;;
	esac
done
case $seconds in '' | *[!0-9]*) echo "fuzz: --seconds wants a whole number" >&2; exit 2 ;; esac

if [ "${GEOREDUCE_TEST_QUICK:-0}" = 1 ]; then
	echo "fuzz: skipped in the quick suite (GEOREDUCE_TEST_QUICK=1): the harnesses carry" \
		"their own sanitizers, the main suite runs them"
	exit 77
fi
cc=$(command -v clang-14 || command -v clang || true)
if [ -z "$cc" ]; then
	echo "fuzz: skipped: clang is not installed (Debian: clang, libclang-rt-14-dev)"
	exit 77
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' \
	>"$probe/p.c"
if ! "$cc" -fsanitize=fuzzer,address,undefined -o "$probe/p" "$probe/p.c" 2>"$probe/err"; then
	echo "fuzz: skipped: $cc cannot link libFuzzer (Debian: libclang-rt-14-dev):" \
		"$(head -c 300 "$probe/err")"
	exit 77
fi
command -v ninja >/dev/null || { echo "fuzz: ninja is missing" >&2; exit 1; }
jansson_cflags=$(pkg-config --cflags jansson 2>/dev/null)
jansson_libs=$(pkg-config --libs jansson 2>/dev/null || echo -ljansson)

# harness: the sources it links besides itself.
declare -A srcs=(
	[fuzz_wire]="lib/wire.c"
	[fuzz_table]="lib/table.c lib/table_check.c lib/table_check_mcast.c lib/table_json.c
		lib/table_json_write.c lib/jsonutil.c lib/wire.c"
	[fuzz_ctlmsg]="lib/ctlmsg.c lib/ctlreq.c lib/jsonutil.c"
	[fuzz_topo]="lib/topo.c lib/plan.c lib/jsonutil.c"
	[fuzz_deploy]="control/daemon/deploy.c control/daemon/deploy_field.c
		control/daemon/deploy_job.c control/daemon/deploy_tenant.c lib/topo.c lib/plan.c
		lib/ctltls.c lib/ctltls_ctx.c lib/ctlmsg.c lib/ctlreq.c lib/jsonutil.c
		lib/table.c lib/table_check.c lib/table_check_mcast.c lib/table_json.c
		lib/table_json_write.c lib/wire.c"
	# Not sum_select.c: clang 14 knows no "f16c" CPU builtin; fuzz_mx.c reads CPUID itself.
	[fuzz_mx]="lib/kernels/sum_scalar.c lib/kernels/mx_scalar.c
		lib/kernels/sum_avx2.c lib/kernels/mx_avx2.c lib/kernels/sum_avx512.c
		lib/kernels/mx_avx512.c"
)
# Longest input: a frame of a 9000-byte MTU; a kernel chunk pair; documents of a few KiB.
declare -A max_len=([fuzz_wire]=9100 [fuzz_table]=16384 [fuzz_ctlmsg]=8192
	[fuzz_topo]=16384 [fuzz_deploy]=16384 [fuzz_mx]=40000)
harnesses=(fuzz_wire fuzz_table fuzz_ctlmsg fuzz_topo fuzz_deploy fuzz_mx)
if [ -n "$only" ]; then
	[ -n "${srcs[$only]:-}" ] || { echo "fuzz: no harness $only" >&2; exit 2; }
	harnesses=("$only")
fi

# The build: one ninja file, objects shared between harnesses, header dependencies tracked.
mkdir -p "$build/obj"
flags="-std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer -Wall -Wextra -Werror
	-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
	-I$src/lib -I$src/lib/kernels -I$src/control/daemon $jansson_cflags"
flags=$(echo $flags)
{
	echo "cflags = $flags"
	echo "rule cc"
	echo "  command = $cc \$cflags \$extra -MMD -MF \$out.d -c \$in -o \$out"
	echo "  depfile = \$out.d"
	echo "  deps = gcc"
	echo "rule link"
	echo "  command = $cc -fsanitize=fuzzer,address,undefined \$in -o \$out" \
		"$jansson_libs -lssl -lcrypto -lm"
	declare -A seen=()
	for h in "${harnesses[@]}"; do
		objs=
		for s in tests/fuzz/$h.c ${srcs[$h]}; do
			o=$build/obj/${s//\//_}.o
			objs+=" $o"
			[ -n "${seen[$s]:-}" ] && continue
			seen[$s]=1
			extra=
			case $s in
			lib/kernels/*) extra="-ffp-contract=off" ;;
			esac
			case $s in
			lib/kernels/*scalar.c) extra+=" -fno-tree-vectorize" ;;
			lib/kernels/*avx2.c) extra+=" -mavx2 -mf16c -mfma" ;;
			lib/kernels/*avx512.c) extra+=" -mavx512f -mavx512bw" ;;
			esac
			echo "build $o: cc $src/$s"
			echo "  extra = $extra"
		done
		echo "build $build/$h: link$objs"
	done
} >"$build/build.ninja"
if ! ninja -C "$build" >"$build/ninja.log" 2>&1; then
	cat "$build/ninja.log" >&2
	echo "fuzz: the harnesses do not build" >&2
	exit 1
fi

fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$probe" "$tmp"' EXIT
# Leaks are reported at the end of each input (libFuzzer's -detect_leaks, on by default).
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}abort_on_error=0:detect_leaks=1
export UBSAN_OPTIONS=${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}halt_on_error=1:print_stacktrace=1

for h in "${harnesses[@]}"; do
	reg=tests/fuzz/regress/$h
	if [ -d "$reg" ] && [ -n "$(ls -A "$reg")" ]; then
		if "$build/$h" -runs=1 "$reg"/* </dev/null >"$tmp/$h.regress.log" 2>&1; then
			echo "ok: $h: $(ls "$reg" | wc -l) regression inputs"
		else
			tail -n 40 "$tmp/$h.regress.log"
			echo "not ok: $h: a regression input fails again (inputs in $reg)"
			fails=$((fails + 1))
		fi
	fi
	[ "$regress_only" = 1 ] && continue
	mkdir -p "$tmp/$h.new" "$tmp/$h.art"
	dict=()
	[ -f "tests/fuzz/$h.dict" ] && dict=(-dict="tests/fuzz/$h.dict")
	"$build/$h" -max_total_time="$seconds" -max_len="${max_len[$h]}" -timeout=10 -error_exitcode=1 \
		-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$tmp/$h.art/" \
		"${dict[@]}" "$tmp/$h.new" "tests/fuzz/corpus/$h" </dev/null >"$tmp/$h.log" 2>&1
	rc=$?
	stats=$(grep -E '^#[0-9]+.*(DONE|cov:)' "$tmp/$h.log" | tail -n 1)
	if [ $rc -eq 0 ]; then
		echo "ok: $h: ${seconds}s: $stats"
		continue
	fi
	fails=$((fails + 1))
	tail -n 60 "$tmp/$h.log"
	keep=$build/crashes/$h
	mkdir -p "$keep"
	for a in "$tmp/$h.art"/*; do
		[ -e "$a" ] || continue
		cp "$a" "$keep/"
		echo "fuzz: reproducer: $keep/$(basename "$a") (run: $build/$h $keep/$(basename "$a"))"
	done
	echo "not ok: $h: exit $rc"
done
echo "fuzz: ${#harnesses[@]} harnesses, $fails failed"
[ $fails -eq 0 ]
