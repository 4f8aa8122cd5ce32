# shellcheck shell=bash
# Shared by the command-line tests (sourced after cd to the source root): a scratch
# directory removed on exit, TAP-style ok / not_ok counters in n and fails, expect, and
# wait_for_line.

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

# wait_for_line FILE REGEX SECONDS [PID]: wait until a line of FILE matches REGEX (grep -E),
# as a process writes it to say it is ready; 1 if none did within SECONDS or PID exited
# first.
wait_for_line() {
	local end=$((SECONDS + $3))
	until grep -Eq -- "$2" "$1" 2>/dev/null; do
		if [ "$SECONDS" -ge "$end" ] ||
			{ [ -n "${4:-}" ] && ! kill -0 "$4" 2>/dev/null; }; then
			grep -Eq -- "$2" "$1" 2>/dev/null
			return
		fi
		sleep 0.02
	done
}

# expect_out DIR JSON NAME...: a report's --out directory holds each NAME, not empty, and
# its report.json is the JSON document in the file JSON (what stdout had).
expect_out() {
	local dir=$1 json=$2 f
	shift 2
	for f in "$@"; do
		[ -s "$dir/$f" ] && ok "--out wrote $f" || not_ok "--out did not write $f"
	done
	cmp -s "$json" "$dir/report.json" && ok "report.json is stdout's JSON" ||
		not_ok "report.json differs from stdout's JSON"
}
