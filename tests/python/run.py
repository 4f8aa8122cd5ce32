# SPDX-License-Identifier: BSD-3-Clause
"""Run pytest on the Python package's tests for meson test (run with /usr/bin/python3).

    python3 tests/python/run.py [--needs MODULE]... TEST_FILE...

Exit 77 (a skip, which meson counts) with the reason printed when a module the tests
need cannot be imported by this interpreter; otherwise pytest's status (no test run at
all counts as a failure).
"""
import importlib
import os
import sys


def main(argv):
    needs, files = [], []
    it = iter(argv)
    for a in it:
        if a == "--needs":
            needs.append(next(it))
        else:
            files.append(a)
    for m in needs:
        try:
            importlib.import_module(m)
        except ImportError as e:
            print("SKIP: %s cannot import %s (%s); on Debian: apt-get install python3-%s"
                  % (sys.executable, m, e, m))
            return 77
    import pytest

    here = os.path.dirname(os.path.abspath(__file__))
    rc = pytest.main(["-q", "-rs", "-p", "no:cacheprovider", "--rootdir", here] + files)
    return 1 if rc == 5 else int(rc)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
