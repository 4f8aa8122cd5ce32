# SPDX-License-Identifier: BSD-3-Clause
"""The build step of `pip install ./python` and `pip wheel ./python` (docs/PYTHON.md).

The metadata is in pyproject.toml. This file adds what pyproject.toml cannot say: the
package carries its own libgeoreduce, compiled from the source tree this directory is in
by meson's worker-only build (`meson setup TMP ROOT -Dgateway=disabled`, then the
library's target alone; docs/CLIENT.md, "A worker-only build"), which needs a C compiler,
jansson and OpenSSL only. The library goes into the package as
georeduce/_libs/libgeoreduce.so.0, where georeduce/_lib.py looks first after an explicit
GEOREDUCE_LIBRARY, and the wheel is tagged for the platform (py3-none-PLAT): it holds a
shared object, but no CPython extension, so any Python 3 on the platform can load it.

Nothing is written into the source tree: meson's build directory, setuptools' build/
and its egg-info go to temporary directories that are removed when the build ends.
GEOREDUCE_MESON_ARGS adds options to `meson setup` (split on blanks), for example
"-Dbuildtype=release".
"""
import atexit
import os
import shutil
import subprocess
import sys
import tempfile

from setuptools import Distribution, setup
from setuptools.command.build import build
from setuptools.command.build_py import build_py
from setuptools.command.egg_info import egg_info

try:  # setuptools >= 70.1 has its own; before, the wheel package's
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    from wheel.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SONAME = "libgeoreduce.so.0"
_scratch = []


def scratch():
    """A temporary directory for this build, removed when the build process ends."""
    if not _scratch:
        _scratch.append(tempfile.mkdtemp(prefix="georeduce-pip-"))
        atexit.register(shutil.rmtree, _scratch[0], True)
    return _scratch[0]


def run(cmd):
    print("georeduce: " + " ".join(cmd), flush=True)
    try:
        subprocess.run(cmd, check=True, stdout=sys.stderr)
    except FileNotFoundError as e:
        sys.exit("georeduce: %s not found: libgeoreduce is built with meson and ninja "
                 "(Debian: apt-get install meson ninja-build pkg-config libjansson-dev "
                 "libssl-dev)" % e.filename)
    except subprocess.CalledProcessError as e:
        sys.exit("georeduce: %s failed (exit status %d); see its output above"
                 % (cmd[0], e.returncode))


def build_library(dest):
    """Compile libgeoreduce by meson's worker-only build and copy it to DEST as SONAME."""
    if not os.path.isfile(os.path.join(ROOT, "meson.build")) or \
            not os.path.isfile(os.path.join(ROOT, "lib", "client", "georeduce.h")):
        sys.exit("georeduce: %s is not the georeduce source tree: the package is built "
                 "from python/ of a checkout (pip install ./python), which holds the "
                 "library's sources one directory up" % ROOT)
    bdir = os.path.join(scratch(), "meson")
    extra = os.environ.get("GEOREDUCE_MESON_ARGS", "").split()
    run(["meson", "setup", bdir, ROOT, "-Dgateway=disabled", "-Dpython=" + sys.executable]
        + extra)
    run(["meson", "compile", "-C", bdir, "lib/client/georeduce:shared_library"])
    os.makedirs(dest, exist_ok=True)
    # SONAME is a link to the versioned file: copy the file under the name the loader uses.
    shutil.copyfile(os.path.join(bdir, "lib", "client", SONAME), os.path.join(dest, SONAME))


class Build(build):
    """setuptools' build/ in the scratch directory, not in the source tree."""

    def initialize_options(self):
        super().initialize_options()
        self.build_base = os.path.join(scratch(), "build")


class EggInfo(egg_info):
    """The egg-info in the scratch directory, not in the source tree."""

    def initialize_options(self):
        super().initialize_options()
        self.egg_base = scratch()


class BuildPy(build_py):
    """The package's files, and the library compiled for it in georeduce/_libs/."""

    def run(self):
        super().run()
        build_library(os.path.join(self.build_lib, "georeduce", "_libs"))


class BinaryDistribution(Distribution):
    """Not pure Python: the wheel's root is platlib, and its tag names the platform."""

    def has_ext_modules(self):
        return True


class BdistWheel(bdist_wheel):
    """A wheel for the platform (it holds a shared object) and any Python 3 (ctypes)."""

    def get_tag(self):
        return ("py3", "none", super().get_tag()[2])


setup(distclass=BinaryDistribution,
      cmdclass={"build": Build, "egg_info": EggInfo, "build_py": BuildPy,
                "bdist_wheel": BdistWheel})
