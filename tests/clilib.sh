# shellcheck shell=bash
# Shared by the command-line tests (sourced after cd to the source root): a scratch
# directory removed on exit, TAP-style ok / not_ok counters in n and fails, and expect.

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
n=0

ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; }

# expect STATUS DESCRIPTION CMD...: exit status must match; on status 2 the error must be
# exactly one line on stderr. The command's output is left in $tmp/out and $tmp/err.
expect() {
	local want=$1 desc=$2
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err"
	local got=$?
	if [ "$got" -ne "$want" ]; then
		not_ok "$desc (exit $got, want $want): $(head -c 300 "$tmp/err")"
		return
	fi
	if [ "$want" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -ne 1 ]; then
		not_ok "$desc: want one line on stderr, got $(wc -l <"$tmp/err")"
		return
	fi
	ok "$desc"
}
