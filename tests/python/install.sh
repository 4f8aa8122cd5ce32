#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The Python package installs both ways docs/PYTHON.md says, and imports from there:
# `meson install` (into a DESTDIR: the package in the interpreter's site-packages, with
# the library's directory recorded), and `pip install --no-build-isolation` of python/
# (offline, Debian's setuptools). Each installed copy then makes a client from a table.
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
if [ -f "$pkg/torch.py" ] && [ -f "$cfg" ]; then
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
# The DESTDIR is not the root the record names: point at the library there.
out=$(cd "$tmp" && PYTHONPATH=$dest$site GEOREDUCE_LIBRARY=$dest$libdir/libgeoreduce.so.0 \
	pyrun -c "$probe" 2>&1)
case "$out" in
"$pkg/__init__.py bf16 3") ok "the meson-installed package makes a client" ;;
*) not_ok "meson-installed package: $out" ;;
esac

# ---- pip install ./python (a copy: pip builds in the tree) ----
cp -r python "$tmp/src"
if "$py" -m pip install --no-build-isolation --no-deps --no-index --target "$tmp/pip" \
	"$tmp/src" >"$tmp/pip.log" 2>&1; then
	ok "pip install --no-build-isolation"
else
	not_ok "pip install: $(tail -5 "$tmp/pip.log")"
fi
out=$(cd "$tmp" && PYTHONPATH=$tmp/pip GEOREDUCE_LIBRARY=$dest$libdir/libgeoreduce.so.0 \
	pyrun -c "$probe" 2>&1)
case "$out" in
"$tmp/pip/georeduce/__init__.py bf16 3") ok "the pip-installed package makes a client" ;;
*) not_ok "pip-installed package: $out" ;;
esac
# Without the library: an ImportError that says what to do, on first use.
out=$(cd "$tmp" && PYTHONPATH=$tmp/pip GEOREDUCE_LIBRARY=$tmp/none.so pyrun -c "$probe" 2>&1)
case "$out" in
*"libgeoreduce not found; install it (meson install) or name it in GEOREDUCE_LIBRARY"*)
	ok "no library: the error says what to do" ;;
*) not_ok "no library: $out" ;;
esac
echo "# $((n - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
