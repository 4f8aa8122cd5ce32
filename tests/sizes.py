#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The size rules of docs/ARCHITECTURE.md ("Rules every part follows"): no source file
outside tests/ above 1,000 lines, and no C function above 200 lines unless the comment
just above its definition says why it is one function (the words "one function").

    sizes.py [ROOT]   TAP lines, one per rule and offender; exit 1 on any offender

A C function is a definition in the project's style: a line that begins with "{" after a
signature, up to the next line that begins with "}". Source files are what git tracks
with a code suffix or a "#!" line, outside tests/, examples/ and shared data.
"""
import os
import re
import subprocess
import sys

FILE_MAX = 1000
FUNC_MAX = 200
CODE = (".c", ".h", ".py", ".sh", ".lua", ".build")
EXEMPT_WORDS = "one function"


def sources(root):
    out = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True,
                         check=True).stdout.split()
    for f in out:
        if f.startswith(("tests/", "examples/")):
            continue
        path = os.path.join(root, f)
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        if f.endswith(CODE):
            yield f, path
            continue
        try:
            with open(path, "rb") as fh:
                if fh.read(2) == b"#!":
                    yield f, path
        except OSError:
            pass


def functions(lines):
    """(name, first line number, length, comment above) of each C function definition."""
    start = None
    for i, line in enumerate(lines):
        if line.startswith("{") and start is None:
            j = i - 1
            while j >= 0 and "(" not in lines[j] and j > i - 6:
                j -= 1
            m = re.search(r"(\w+)\s*\(", lines[j]) if j >= 0 else None
            if m is None:
                continue  # an initializer's brace, not a function
            k = j
            while k > 0 and lines[k - 1].strip() and not lines[k - 1].startswith(("}", "#")):
                k -= 1
            above = "\n".join(lines[max(0, k - 12):k + 1])
            start = (i, m.group(1), j, above)
        elif line.startswith("}") and start is not None:
            yield start[1], start[2] + 1, i - start[0] + 1, start[3]
            start = None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    n = fails = 0
    big_files, big_funcs, counted = [], [], 0
    for rel, path in sources(root):
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().split("\n")
        counted += 1
        if len(lines) - 1 > FILE_MAX:
            big_files.append(f"{rel} ({len(lines) - 1} lines)")
        if rel.endswith((".c", ".h")):
            for name, at, length, above in functions(lines):
                if length > FUNC_MAX and EXEMPT_WORDS not in above:
                    big_funcs.append(f"{rel}:{at} {name} ({length} lines)")
    for what, bad in ((f"no source file above {FILE_MAX} lines", big_files),
                      (f"no function above {FUNC_MAX} lines without a reason", big_funcs)):
        n += 1
        if bad:
            fails += 1
            print(f"not ok {n} - {what}: " + ", ".join(bad))
        else:
            print(f"ok {n} - {what}")
    # The check can fail: it must have read the tree, and it must see a long function.
    n += 1
    probe = ["int", "f(void)", "{"] + ["\tx++;"] * (FUNC_MAX + 1) + ["}"]
    if counted > 100 and any(l > FUNC_MAX for _, _, l, _ in functions(probe)):
        print(f"ok {n} - the checks see the tree ({counted} files) and a long function")
    else:
        fails += 1
        print(f"not ok {n} - the checks are blind ({counted} files read)")
    print(f"sizes: {n} tests, {fails} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
