# SPDX-License-Identifier: BSD-3-Clause
"""Tensors on any device: the pinned staging buffers' bookkeeping (on the CPU, always),
then CUDA tensors through georeduce.Client and the DDP hooks, bit for bit what the same
calls give with CPU tensors, and DistributedDataParallel on CUDA against DDP over Gloo.
The CUDA tests are skipped, with the reason printed, where torch has no CUDA device;
tests/python/gpu_check.sh runs them on a machine that has one."""
import contextlib
import os
import sys
import threading

import pytest
import torch

import georeduce.torch as grt
from georeduce import _staging
from fakegw import FakeGateway
from test_torch import Bucket, clients, ddp_run, n_params

HERE = os.path.dirname(os.path.abspath(__file__))
TORCH_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
# GEOREDUCE_REQUIRE_CUDA=1 (gpu_check.sh): fail rather than skip where there is no GPU.
cuda = pytest.mark.skipif(
    not torch.cuda.is_available() and not os.environ.get("GEOREDUCE_REQUIRE_CUDA"),
    reason="torch %s has no CUDA device (torch.cuda.is_available() is False); "
    "tests/python/gpu_check.sh runs these where there is one" % torch.__version__)


class Ready:
    """What Pool.give() takes as `ready` (a torch.cuda.Event on a GPU): counts waits."""

    def __init__(self):
        self.waits = 0

    def synchronize(self):
        self.waits += 1


def plain(elements, dtype):
    return torch.empty(elements, dtype=dtype)


def test_pool_reuse_and_bound():
    """One buffer per dtype and length, reused; at most `keep` idle, the oldest freed;
    take() waits on the event of the buffer's last copy out, once."""
    pool = _staging.Pool(plain, keep=2)
    a = pool.take(100, torch.float32)
    b = pool.take(100, torch.float32)   # a is in use: a second one
    assert a.data_ptr() != b.data_ptr() and pool.allocated == 2
    r = Ready()
    pool.give(a, r)
    assert r.waits == 0
    assert pool.take(100, torch.float32) is a and r.waits == 1
    assert pool.take(100, torch.float16).dtype == torch.float16   # another dtype: new
    assert pool.take(50, torch.float32).numel() == 50              # another length: new
    assert pool.allocated == 4
    pool.give(a)
    pool.give(b)
    c = pool.take(7, torch.float32)
    pool.give(c)                                                   # a, b, c: a freed
    assert pool.idle() == [("torch.float32", 100), ("torch.float32", 7)]
    assert pool.freed == 1
    st = pool.stats()
    assert st == {"allocated": 5, "freed": 1, "idle": 2, "idle_bytes": 4 * 107}
    assert pool.take(100, torch.float32) is b
    with pytest.raises(ValueError, match="keep -1"):
        _staging.Pool(plain, keep=-1)


def test_pool_threads():
    """Takes and gives from several threads: nothing handed out twice at once."""
    pool = _staging.Pool(plain, keep=3)
    held, bad = set(), []
    lock = threading.Lock()

    def work():
        for i in range(300):
            t = pool.take(10 + i % 3, torch.float32)
            with lock:
                if t.data_ptr() in held:
                    bad.append(t.data_ptr())
                held.add(t.data_ptr())
            with lock:
                held.discard(t.data_ptr())
            pool.give(t)
    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not bad and len(pool.idle()) <= 3 and pool.allocated >= 3


def test_cpu_path_has_no_staging():
    """A CPU tensor is reduced in place (the library gets its own address): no pinned
    buffer is made; a meta tensor is refused."""
    with FakeGateway([1], 100, 30) as gw:
        c = clients(gw)[0]
        try:
            t = torch.ones(100)
            assert c.allreduce(t) == 1 and torch.all(t == 1)
            assert c.staging() == {"allocated": 0, "freed": 0, "idle": 0, "idle_bytes": 0}
            with pytest.raises(ValueError, match="a tensor on meta: georeduce reduces CPU "
                               "and CUDA tensors"):
                c.allreduce(torch.zeros(100, device="meta"))
            s = grt.HookState(c)
            f = grt.ddp_comm_hook(s, Bucket(torch.ones(50), 0, True))
            assert torch.all(f.wait() == 1)
            assert s.staging()["allocated"] == 0 and not f.wait().is_pinned()
        finally:
            c.close()


def two_worker_calls(gw, make, dtype, stream=None):
    """Both workers reduce make(w) for w = 1, 2 (views at an offset), twice; the
    tensors, now holding the results."""
    cs = clients(gw)
    try:
        out = []
        for _ in range(2):
            base = [make(w) for w in (1, 2)]
            views = [b[100:1099] for b in base]
            ctx = contextlib.nullcontext()
            if stream is not None:  # the side stream after the tensors' making
                stream.wait_stream(torch.cuda.current_stream())
                ctx = torch.cuda.stream(stream)
            with ctx:
                futs = [c.allreduce_async(v) for c, v in zip(cs, views)]
            assert [f.result(timeout=60) for f in futs] == [2, 2]
            out.append(base)
        stats = [c.staging() for c in cs]
    finally:
        for c in cs:
            c.close()
    return out, stats


@cuda
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_cuda_tensors(dtype):
    """CUDA tensors, on a side stream: the same bytes as CPU tensors, nothing outside the
    view touched, one pinned buffer per worker reused by the second call."""
    td = TORCH_DTYPES[dtype]

    def make_cpu(w):
        return torch.arange(1200, dtype=torch.float32).remainder(17).to(td) * w

    with FakeGateway([1, 2], 1000, 96, dtype, trees=[(0, 0, 5), (1, 5, 6)]) as gw:
        want, _ = two_worker_calls(gw, make_cpu, dtype)
    side = torch.cuda.Stream()
    with FakeGateway([1, 2], 1000, 96, dtype, trees=[(0, 0, 5), (1, 5, 6)]) as gw:
        got, stats = two_worker_calls(gw, lambda w: make_cpu(w).cuda(), dtype, side)
        assert gw.bad == 0
    side.synchronize()
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            assert torch.equal(a.cpu(), b)
    for st in stats:
        size = torch.empty(0, dtype=td).element_size()  # torch.dtype.itemsize is 2.1's
        assert st["allocated"] == 1 and st["idle"] == 1 and st["idle_bytes"] == 999 * size


@cuda
def test_cuda_refusals():
    """Bad CUDA tensors are refused before anything is copied or a round used."""
    with FakeGateway([1], 100, 30) as gw:
        c = clients(gw)[0]
        try:
            for t, exc, msg in [
                (torch.zeros(10, 20, device="cuda").t(), ValueError, "non-contiguous"),
                (torch.zeros(100, dtype=torch.float64, device="cuda"), TypeError, "float64"),
                (torch.zeros(100, device="cuda", requires_grad=True), ValueError,
                 "requires grad"),
                (torch.zeros(101, device="cuda"), ValueError, "101 elements"),
                (torch.zeros(0, device="cuda"), ValueError, "empty"),
            ]:
                with pytest.raises(exc, match=msg):
                    c.allreduce(t)
            assert c.next_round == 0 and c.staging()["allocated"] == 0
        finally:
            c.close()


def hook_steps(gw, device, per_bucket, hook, dtype):
    """Two steps of three buckets through the hook at both workers; the buckets after."""
    cs = clients(gw)
    states = [grt.HookState(c, record=True, per_bucket=per_bucket) for c in cs]
    try:
        done = []
        for step in range(2):
            for i, n in enumerate((300, 77, 200)):
                for w, s in enumerate(states):
                    gen = torch.Generator().manual_seed(100 * step + 10 * i + w)
                    t = torch.randn(n, generator=gen).to(device)
                    done.append((hook(s, Bucket(t, i, i == 2)), t))
        out = []
        for f, t in done:
            r = f.wait()   # a CUDA future: the current stream waits for the copy back
            assert r is t
            out.append(t.cpu())
        return out, [s.staging() for s in states], [len(s.records) for s in states]
    finally:
        for c in cs:
            c.close()


@cuda
@pytest.mark.parametrize("per_bucket", [False, True])
@pytest.mark.parametrize("dtype,hook", [("fp32", grt.ddp_comm_hook),
                                        ("bf16", grt.bf16_compress_hook),
                                        ("mxint8", grt.mx_compress_hook)])
def test_cuda_hook(per_bucket, dtype, hook):
    """CUDA buckets through the hooks give the bytes CPU buckets give; the pinned staging
    tensors are kept and reused (one a round in flight)."""
    with FakeGateway([1, 2], 608, 64, dtype) as gw:
        want, st, _ = hook_steps(gw, "cpu", per_bucket, hook, dtype)
        assert all(s["allocated"] == 0 for s in st)
    with FakeGateway([1, 2], 608, 64, dtype) as gw:
        got, st, recs = hook_steps(gw, "cuda", per_bucket, hook, dtype)
        assert gw.bad == 0
    for a, b in zip(got, want):
        assert torch.equal(a, b)
    assert recs == [6, 6]
    for s in st:  # a staging tensor a round in flight: up to 6 rounds, or 2 steps
        assert 1 <= s["allocated"] <= (6 if per_bucket else 2)
        assert s["idle"] == s["allocated"] - s["freed"] <= _staging.KEEP


@cuda
def test_cuda_ddp(tmp_path):
    """Two DDP processes on the GPU whose hook goes through one gateway train exactly as
    DDP over Gloo does on the GPU (deterministic kernels, two workers: the same sums)."""
    env = {"DDP_DEVICE": "cuda"}
    ref = ddp_run(tmp_path, "gloo", "gloo", 6, env=env)
    with FakeGateway([11, 12], n_params(), 200) as gw:
        gw.write_table(str(tmp_path / "gw.json"))
        got = ddp_run(tmp_path, "gr", "fp32", 6, gw, env=env)
        assert gw.bad == 0
    for g in got:
        assert g["params"] == ref[0]["params"]
        assert g["losses"] == ref[got.index(g)]["losses"]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-rs"]))
