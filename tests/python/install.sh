#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The Python package installs both ways docs/PYTHON.md says, and imports from there:
# `meson install` (into a DESTDIR: the package in the interpreter's site-packages, with
# the library's directory recorded), and `pip install --no-build-isolation ./python`
# (offline, Debian's setuptools) into a fresh venv, where pip compiles the library by
# meson's worker-only build into the package. Each installed copy makes a client from a
# table; the pip-installed one also runs the package's tests, with no build directory in
# reach. `pip wheel ./python` gives a platform wheel holding the library.
# Usage: tests/python/install.sh BUILD_DIR PYTHON (Debian's /usr/bin/python3)
set -u
build=${1:?usage: install.sh BUILD_DIR PYTHON}
py=${2:?usage: install.sh BUILD_DIR PYTHON}
cd "$(dirname "$0")/../.."
. tests/clilib.sh
# The interpreter with what a sanitizer build of the library needs preloaded (tests/meson.build).
pyrun() { LD_PRELOAD=${GEOREDUCE_PY_PRELOAD:-} ASAN_OPTIONS=detect_leaks=0 "$py" "$@"; }

probe='
import socket, georeduce
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
s.close()
t = """{"format": "georeduce-table/1", "job": 1, "epoch": 1,
 "gateway": {"id": 9, "ipv4": "127.0.0.1", "base_port": 40000, "ports": 1},
 "dtype": "bf16", "elements": 10, "chunk_elements": 4,
 "limits": {"max_trees": 1, "max_children": 1, "max_workers": 1, "max_slots": 16},
 "trees": [{"id": 0, "role": "root", "parent": null, "children": [],
  "workers": [{"id": 3, "ipv4": "127.0.0.1", "port": %d}], "expected": 1,
  "subtree_workers": 1, "chunk_first": 0, "chunk_count": 3, "rate_gbps": 1, "slots": 16}]}""" % port
with georeduce.Client.from_table_string(t, 3) as c:
    print(georeduce.__file__, c.dtype.name, c.config.chunks)
'

# ---- meson install ----
dest=$tmp/dest
if DESTDIR=$dest meson install -C "$build" --no-rebuild >"$tmp/install.log" 2>&1; then
	ok "meson install into a DESTDIR"
else
	not_ok "meson install: $(tail -5 "$tmp/install.log")"
fi
site=$("$py" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
pkg=$dest$site/georeduce
cfg=$pkg/_build_config.py
if [ -f "$pkg/torch.py" ] && [ -f "$pkg/diloco.py" ] && [ -f "$cfg" ]; then
	ok "the package is in $site"
else
	not_ok "no package under $dest$site: $(find "$dest" -name '__init__.py' | head -3)"
fi
libdir=$("$py" -c 'import runpy, sys; print(runpy.run_path(sys.argv[1])["LIBDIR"])' "$cfg" 2>&1)
if [ -e "$dest$libdir/libgeoreduce.so.0" ]; then
	ok "_build_config.py names the library's directory ($libdir)"
else
	not_ok "LIBDIR '$libdir': no $dest$libdir/libgeoreduce.so.0"
fi
# Every module of the package is installed (python/meson.build lists them one by one).
missing=$(cd python/georeduce && for f in *.py; do [ -f "$pkg/$f" ] || echo "$f"; done)
[ -z "$missing" ] && ok "meson installs every module of python/georeduce" ||
	not_ok "meson install lacks: $missing"
# The library is found by the directory _build_config.py records, with nothing else in
# reach: a copy of the installed package whose record names the DESTDIR's library
# directory, as an install without DESTDIR names the prefix's.
mkdir -p "$tmp/recorded" && cp -r "$pkg" "$tmp/recorded/" &&
	printf 'LIBDIR = %s\n' "'$dest$libdir'" >"$tmp/recorded/georeduce/_build_config.py"
out=$(cd "$tmp" && env -u LD_LIBRARY_PATH -u GEOREDUCE_LIBRARY PYTHONPATH=$tmp/recorded \
	LD_PRELOAD="${GEOREDUCE_PY_PRELOAD:-}" ASAN_OPTIONS=detect_leaks=0 "$py" -c \
	'from georeduce import _lib; print(_lib.library_path())' 2>&1)
[ "$out" = "$dest$libdir/libgeoreduce.so.0" ] &&
	ok "the meson-installed package loads the library from the recorded directory" ||
	not_ok "recorded LIBDIR: loaded '$out', not $dest$libdir/libgeoreduce.so.0"
# The DESTDIR is not the root the record names: point at the library there.
out=$(cd "$tmp" && PYTHONPATH=$dest$site GEOREDUCE_LIBRARY=$dest$libdir/libgeoreduce.so.0 \
	pyrun -c "$probe" 2>&1)
case "$out" in
"$pkg/__init__.py bf16 3") ok "the meson-installed package makes a client" ;;
*) not_ok "meson-installed package: $out" ;;
esac

# ---- pip install ./python into a fresh venv: pip compiles the library itself ----
# A venv with --system-site-packages (Debian's torch, numpy, pytest), and pip building
# libgeoreduce by meson's worker-only build (python/setup.py), offline. Nothing of a build
# directory or of the meson install above is in reach: no LD_LIBRARY_PATH, no
# GEOREDUCE_LIBRARY, no PYTHONPATH, and the commands run in the scratch directory.
clean() { env -u LD_LIBRARY_PATH -u LD_PRELOAD -u GEOREDUCE_LIBRARY -u PYTHONPATH "$@"; }
tree() { find python -name __pycache__ -prune -o -print | sort; }
venv=$tmp/venv
vpy=$venv/bin/python
tree >"$tmp/tree.before"
if ! "$py" -m venv --system-site-packages "$venv" >"$tmp/venv.log" 2>&1; then
	not_ok "python3 -m venv: $(tail -3 "$tmp/venv.log") (Debian: python3-venv)"
elif clean "$vpy" -m pip install --no-build-isolation --no-index --no-cache-dir ./python \
	>"$tmp/pip.log" 2>&1; then
	ok "pip install --no-build-isolation ./python into a fresh venv"
else
	not_ok "pip install: $(tail -5 "$tmp/pip.log")"
fi
vsite=$("$vpy" -c 'import sysconfig; print(sysconfig.get_path("platlib"))' 2>&1)
vprobe='
import sys, georeduce
from georeduce import _lib
lb = _lib.lib()
for d in georeduce.DTYPES:
    assert lb.gr_dtype_size(d.code) == d.size, d
    assert lb.gr_dtype_name(d.code).decode() == d.name, d
with georeduce.Client.from_table(sys.argv[1], 3) as c:
    print(georeduce.__file__, _lib.library_path(), c.dtype.name, c.config.chunks)
'
table=$tmp/table.json
"$py" - "$table" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
s.close()
t = {"format": "georeduce-table/1", "job": 1, "epoch": 1,
     "gateway": {"id": 9, "ipv4": "127.0.0.1", "base_port": 40000, "ports": 1},
     "dtype": "fp16", "elements": 10, "chunk_elements": 4,
     "limits": {"max_trees": 1, "max_children": 1, "max_workers": 1, "max_slots": 16},
     "trees": [{"id": 0, "role": "root", "parent": None, "children": [],
                "workers": [{"id": 3, "ipv4": "127.0.0.1", "port": port}], "expected": 1,
                "subtree_workers": 1, "chunk_first": 0, "chunk_count": 3, "rate_gbps": 1,
                "slots": 16}]}
json.dump(t, open(sys.argv[1], "w"))
PY
out=$(cd "$tmp" && clean "$vpy" -c "$vprobe" "$table" 2>&1)
want="$vsite/georeduce/__init__.py $vsite/georeduce/_libs/libgeoreduce.so.0 fp16 3"
if [ "$out" = "$want" ]; then
	ok "the venv's package loads the library pip built into it, and makes a client"
else
	not_ok "pip-installed package: $out (want: $want)"
fi
# The package's own tests, on the installed package (conftest.py: GEOREDUCE_TEST_INSTALLED).
for t in test_binding test_torch test_cuda test_diloco; do
	needs=()
	[ "$t" = test_binding ] || needs=(--needs torch)
	clean GEOREDUCE_TEST_INSTALLED=1 GEOREDUCE_LAYOUT="$build/tests/python_layout" \
		PYTHONDONTWRITEBYTECODE=1 "$vpy" tests/python/run.py "${needs[@]}" \
		"tests/python/$t.py" >"$tmp/$t.log" 2>&1
	case $? in
	0) ok "tests/python/$t.py passes on the pip-installed package" ;;
	77) ok "# SKIP $t: $(head -1 "$tmp/$t.log")" ;;
	*) not_ok "tests/python/$t.py on the pip-installed package: $(tail -5 "$tmp/$t.log")" ;;
	esac
done
# Without the library: an ImportError that says what to do, on first use.
out=$(cd "$tmp" && clean GEOREDUCE_LIBRARY="$tmp/none.so" "$vpy" -c "$vprobe" "$table" 2>&1)
case "$out" in
*"libgeoreduce not found; install it (meson install) or name it in GEOREDUCE_LIBRARY"*)
	ok "no library: the error says what to do" ;;
*) not_ok "no library: $out" ;;
esac

# ---- pip wheel ./python: a wheel for this platform, with the library in it ----
if clean "$py" -m pip wheel --no-build-isolation --no-index --no-deps --no-cache-dir \
	-w "$tmp/wheels" ./python >"$tmp/wheel.log" 2>&1; then
	ok "pip wheel --no-build-isolation ./python"
else
	not_ok "pip wheel: $(tail -5 "$tmp/wheel.log")"
fi
whl=$(find "$tmp/wheels" -name 'georeduce-*.whl' -print -quit 2>/dev/null)
case "$whl" in
*-py3-none-linux_*.whl) ok "the wheel is tagged py3-none-PLATFORM: ${whl##*/}" ;;
*) not_ok "the wheel's name: '${whl##*/}'" ;;
esac
if [ -n "$whl" ] && "$py" -m zipfile -l "$whl" | grep -q ' *georeduce/_libs/libgeoreduce.so.0 '; then
	ok "the wheel holds georeduce/_libs/libgeoreduce.so.0"
else
	not_ok "no georeduce/_libs/libgeoreduce.so.0 in the wheel"
fi

# pip built outside the source tree: nothing under python/ was added or removed.
tree >"$tmp/tree.after"
if cmp -s "$tmp/tree.before" "$tmp/tree.after"; then
	ok "pip left python/ as it was"
else
	not_ok "pip changed python/: $(diff "$tmp/tree.before" "$tmp/tree.after" | head -5 | tr '\n' ' ')"
fi
echo "# $((n - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
