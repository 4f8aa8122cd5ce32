# SPDX-License-Identifier: BSD-3-Clause
"""Shared by the Python package's tests (run with /usr/bin/python3 -m pytest, whose
site-packages hold Debian's python3-torch, numpy and pytest; meson test sets
GEOREDUCE_LIBRARY to the built libgeoreduce.so, and python/ is put first on sys.path)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# GEOREDUCE_TEST_INSTALLED=1: test the package the interpreter has installed (a pip
# install, tests/python/install.sh), not the source tree's python/.
if not os.environ.get("GEOREDUCE_TEST_INSTALLED"):
    sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
