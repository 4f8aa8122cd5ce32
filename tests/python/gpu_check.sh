#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The CUDA checks of the Python package, for a machine with an NVIDIA GPU and a CUDA torch
# (1.13 to 2.x): builds libgeoreduce alone (the worker-only build, no DPDK), runs the
# CUDA tests (tests/python/test_cuda.py) and the CPU torch tests (test_torch.py) with that
# interpreter, then measures what staging a CUDA tensor through pinned host memory adds
# to a call: the copy to the host, the wait on its event and the copy back, per MiB.
#
#   tests/python/gpu_check.sh [PYTHON]        (default: python3; run from anywhere)
#
# Needs a C compiler, meson, ninja, pkg-config, jansson and OpenSSL headers, and pytest
# and numpy for PYTHON. Exit status: pytest's (0: every test passed; the CUDA tests fail,
# not skip, where torch sees no GPU: GEOREDUCE_REQUIRE_CUDA=1).
set -eu
PY=${1:-python3}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${GEOREDUCE_GPU_BUILD:-$ROOT/build-gpu}

"$PY" -c 'import torch, sys
print("torch", torch.__version__, "CUDA", torch.version.cuda,
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no device")
sys.exit(0 if torch.cuda.is_available() else 1)' ||
	{ echo "gpu_check: torch sees no CUDA device"; exit 1; }

[ -f "$B/build.ninja" ] || meson setup "$B" "$ROOT" -Dgateway=disabled -Dbuildtype=release \
	-Dpython="$(command -v "$PY")" >/dev/null
ninja -C "$B" lib/client/libgeoreduce.so.0.2.0 >/dev/null
export GEOREDUCE_LIBRARY=$B/lib/client/libgeoreduce.so
export GEOREDUCE_REQUIRE_CUDA=1

rc=0
(cd "$ROOT/tests/python" && "$PY" run.py test_cuda.py test_torch.py) || rc=$?

"$PY" - "$ROOT/python" <<'PY'
import sys, time
sys.path.insert(0, sys.argv[1])
import torch
from georeduce import _staging

pool = _staging.Pool(_staging.pinned)
print("staging overhead of a CUDA tensor (copy to pinned host memory, event, copy back):")
print("%8s %10s %10s %10s" % ("MiB", "ms", "ms/MiB", "GB/s"))
for mib in (1, 4, 16, 64, 256):
    t = torch.ones(mib << 18, device="cuda")
    for _ in range(3):  # the pinned buffer allocated, then reused
        s = _staging.Staged(t, pool)
        s.wait()
        s.back()
    torch.cuda.synchronize()
    runs = 10
    t0 = time.perf_counter()
    for _ in range(runs):
        s = _staging.Staged(t, pool)
        s.wait()
        s.back()
        torch.cuda.current_stream().synchronize()
    dt = (time.perf_counter() - t0) / runs
    print("%8d %10.3f %10.4f %10.2f" % (mib, 1000 * dt, 1000 * dt / mib,
                                        2 * (mib << 20) / dt / 1e9))
print("pinned buffers:", pool.stats())
PY
exit $rc
