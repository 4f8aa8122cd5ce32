#!/usr/bin/env bash
# The shape of the code (docs/ARCHITECTURE.md, "Rules every part follows"): the size rules
# (tests/sizes.py: files up to 1,000 lines, functions up to 200 without a stated reason)
# and the format of every C file outside tests/, of the dataplane's tests and of the fuzz
# harnesses (.clang-format, applied with Debian 12's clang-format 14; `clang-format -i FILE`
# fixes a file).
#
#   style.sh
set -u
. "$(dirname "$0")/clilib.sh"

out=$(python3 tests/sizes.py .)
rc=$?
printf '%s\n' "$out" | sed 's/^/# sizes.py: /'
[ $rc -eq 0 ] && ok "files and functions within their sizes" ||
	not_ok "files or functions too long: $(printf '%s\n' "$out" | grep '^not ok' | cut -c1-400 | tr '\n' ' ')"

if ! command -v clang-format >/dev/null; then
	echo "style: clang-format not installed (Debian: clang-format), format not checked"
	echo "style: $n tests, $fails failed"
	[ "$fails" -eq 0 ] && exit 77 || exit 1
fi
mapfile -t files < <(git ls-files '*.c' '*.h' | grep -v '^tests/'
	git ls-files 'tests/test_dp_*.c' 'tests/dp_fixture.*' 'tests/fuzz/*.c')
bad=()
for f in "${files[@]}"; do
	clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
[ ${#files[@]} -gt 100 ] && [ ${#bad[@]} -eq 0 ] &&
	ok "${#files[@]} C files as .clang-format writes them" ||
	not_ok "${#bad[@]} of ${#files[@]} files differ from .clang-format (clang-format -i): ${bad[*]:0:10}"
# The check can fail: a file with the return type on the definition's line is caught.
printf 'static int f(void)\n{\n\treturn 0;\n}\n' >"$tmp/probe.c"
cp .clang-format "$tmp/.clang-format"
(cd "$tmp" && clang-format --dry-run --Werror probe.c >/dev/null 2>&1) &&
	not_ok "a definition in the other style passes: the format check is blind" ||
	ok "a definition in the other style is caught"

echo "style: $n tests, $fails failed"
[ "$fails" -eq 0 ]
