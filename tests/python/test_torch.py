# SPDX-License-Identifier: BSD-3-Clause
"""georeduce with torch: CPU tensors of every dtype in place, the refusals, the DDP hooks
(units with a stand-in bucket, then two-process DistributedDataParallel runs over one
fake gateway against DDP over Gloo, also through a re-plan). Skipped where torch is
absent (tests/python/run.py --needs torch)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import georeduce
import georeduce.torch as grt
from fakegw import FakeGateway, free_ports

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.normpath(os.path.join(HERE, "..", "..", "python"))
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(
    [PACKAGE] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
TORCH_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def clients(gw, **kw):
    return [georeduce.Client.from_table_string(gw.table(), w, **kw) for w in gw.workers]


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_tensors_in_place(dtype):
    """Every dtype, a view with a storage offset: only its elements change."""
    td = TORCH_DTYPES[dtype]
    with FakeGateway([1, 2], 1000, 96, dtype, trees=[(0, 0, 5), (1, 5, 6)]) as gw:
        cs = clients(gw)
        try:
            base = [torch.arange(1200, dtype=torch.float32).remainder(17).to(td) * w
                    for w in (1, 2)]
            views = [b[100:1099] for b in base]
            futs = [c.allreduce_async(v) for c, v in zip(cs, views)]
            assert [f.result(timeout=30) for f in futs] == [2, 2]
            want = torch.arange(1200, dtype=torch.float32).remainder(17).to(td)
            for b in base:
                assert torch.equal(b[100:1099], want[100:1099] * 3)
                assert torch.equal(b[:100], want[:100] * (b[1] / want[1]))
            assert torch.equal(base[0][1099:], want[1099:])
            # Averaged, bf16 on a 2-D tensor.
            ts = [torch.full((10, 100), float(w), dtype=td) for w in (1, 4)]
            futs = [c.allreduce_async(t, average=True) for c, t in zip(cs, ts)]
            assert [f.result(timeout=30) for f in futs] == [2, 2]
            assert all(torch.all(t == 2.5) for t in ts)
        finally:
            for c in cs:
                c.close()
        assert gw.bad == 0


def test_refused_tensors():
    with FakeGateway([1], 100, 30) as gw:
        c = clients(gw)[0]
        try:
            cases = [
                (torch.zeros(10, 20).t(), ValueError, "non-contiguous tensor"),
                (torch.zeros(200)[::2], ValueError, "non-contiguous"),
                (torch.zeros(100, dtype=torch.float64), TypeError, "torch.float64: the job's "
                 "dtype is fp32"),
                (torch.zeros(100, dtype=torch.bfloat16), TypeError, "bfloat16"),
                (torch.zeros(100, dtype=torch.int32), TypeError, "int32"),
                (torch.zeros(100, device="meta"), ValueError, "a tensor on meta"),
                (torch.zeros(100, requires_grad=True), ValueError, "requires grad"),
                (torch.zeros(100).to_sparse(), ValueError, "sparse"),
                (torch.zeros(101), ValueError, "101 elements"),
                (torch.zeros(0), ValueError, "empty"),
            ]
            if torch.cuda.is_available():
                cases.append((torch.zeros(100, device="cuda"), ValueError, "a tensor on cuda"))
            for t, exc, msg in cases:
                with pytest.raises(exc, match=msg):
                    c.allreduce(t)
            assert c.next_round == 0
        finally:
            c.close()


class Bucket:
    """What the hooks use of torch.distributed.GradBucket."""

    def __init__(self, t, index, last):
        self.t, self.i, self.last = t, index, last

    def buffer(self):
        return self.t

    def index(self):
        return self.i

    def is_last(self):
        return self.last


@pytest.mark.parametrize("dtype,hook", [("fp32", grt.ddp_comm_hook),
                                        ("fp16", grt.fp16_compress_hook),
                                        ("bf16", grt.bf16_compress_hook),
                                        ("fp16", grt.ddp_comm_hook)])
def test_hooks_with_a_bucket(dtype, hook):
    """A step of two buckets: futures completed from the client's thread, the average of
    the two workers, rounds one per bucket, the step counted."""
    with FakeGateway([1, 2], 300, 64, dtype) as gw:
        cs = clients(gw)
        states = [grt.HookState(c, record=True) for c in cs]
        try:
            futs = []
            for step in range(2):
                for i, n in enumerate((300, 77)):
                    for w, s in enumerate(states):
                        t = torch.full((n,), 1.0 + 2 * w + step)
                        futs.append((hook(s, Bucket(t, i, i == 1)), t, 2.0 + step))
            for f, t, want in futs:
                assert f.wait() is t
                assert torch.all(t == want)
            for s in states:
                assert s.step == 2
                assert [(r.step, r.index, r.round, r.elements, r.contributors, r.dtype)
                        for r in s.records] == [(0, 0, 0, 300, 2, dtype), (0, 1, 1, 77, 2, dtype),
                                                (1, 0, 2, 300, 2, dtype), (1, 1, 3, 77, 2, dtype)]
        finally:
            for c in cs:
                c.close()
        assert gw.bad == 0


def test_hook_errors():
    with FakeGateway([1, 2], 100, 30) as gw:
        c = clients(gw, timeout=0.3)[0]
        s = grt.HookState(c)
        try:
            with pytest.raises(ValueError, match="fp16_compress_hook: the job's dtype is fp32"):
                grt.fp16_compress_hook(s, Bucket(torch.zeros(10), 0, True))
            with pytest.raises(ValueError, match="101 elements"):
                grt.ddp_comm_hook(s, Bucket(torch.zeros(101), 0, True))
            # The other worker never comes: the future carries the timeout.
            f = grt.ddp_comm_hook(s, Bucket(torch.zeros(100), 0, True))
            with pytest.raises(Exception, match="without a result"):
                f.wait()
        finally:
            c.close()


def ddp_run(tmp_path, name, hook, steps, gw=None, world=2):
    port = free_ports(1)
    procs = []
    for rank in range(world):
        args = [sys.executable, os.path.join(HERE, "ddp_worker.py"), str(rank), str(world),
                str(port), hook, str(steps), str(tmp_path / ("%s-%d.json" % (name, rank)))]
        if gw is not None:
            args += [str(tmp_path / "gw.json"), str(gw.workers[rank])]
        log = open(tmp_path / ("%s-%d.log" % (name, rank)), "w")
        procs.append(subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=ENV))
        log.close()
    for rank, p in enumerate(procs):
        try:
            p.wait(timeout=240)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
        out = (tmp_path / ("%s-%d.log" % (name, rank))).read_text()
        assert p.wait() == 0, out
    docs = []
    for rank in range(world):
        with open(tmp_path / ("%s-%d.json" % (name, rank))) as f:
            docs.append(json.load(f))
    return docs


def n_params():
    sys.path.insert(0, HERE)
    import ddp_worker
    return sum(p.numel() for p in ddp_worker.model().parameters())


def test_ddp_fp32_as_gloo(tmp_path):
    """Two DDP processes whose hook goes through one gateway train exactly as DDP over
    Gloo does: with two workers every sum and average is the same float."""
    ref = ddp_run(tmp_path, "gloo", "gloo", 6)
    with FakeGateway([11, 12], n_params(), 200) as gw:
        gw.write_table(str(tmp_path / "gw.json"))
        got = ddp_run(tmp_path, "gr", "fp32", 6, gw)
        assert gw.bad == 0
    assert ref[0]["params"] == ref[1]["params"]
    for g in got:
        assert g["params"] == ref[0]["params"]
        assert g["losses"] == ref[got.index(g)]["losses"]
    # DDP's first step has one bucket, later ones several (it rebuilds them in the order
    # gradients came); one round per bucket, the same at both workers.
    recs = got[0]["records"]
    per_step = [sum(1 for r in recs if r[0] == s) for s in range(6)]
    assert per_step[0] >= 1 and all(k == per_step[1] >= 2 for k in per_step[1:]), per_step
    assert [r[2] for r in recs] == list(range(len(recs)))
    assert all(r[4] == 2 for r in recs)
    assert got[0]["records"] == got[1]["records"]


def test_ddp_replan(tmp_path):
    """The gateway fails for epoch 3 in the third step and epoch 4 is installed: the cut
    bucket is run again under epoch 4, and training ends as DDP over Gloo ends."""
    ref = ddp_run(tmp_path, "gloo", "gloo", 5)
    table = str(tmp_path / "gw.json")

    def fail(g):
        g.write_table(table, epoch=4)
        g.epoch = 4

    n = n_params()
    with FakeGateway([11, 12], n, 200, fail_after=2 * (-(-n // 200)) + 3,
                     on_fail=fail) as gw:
        gw.write_table(table)
        got = ddp_run(tmp_path, "gr", "fp32", 5, gw)
        assert gw.bad == 0 and 3 in gw.silent_epochs
    for g in got:
        assert g["epoch"] == 4
        assert g["params"] == ref[0]["params"]
        assert {r[5] for r in g["records"]} == {3, 4}


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_ddp_compressed(tmp_path, dtype):
    """The compression hooks train close to torch's fp16_compress_hook over Gloo."""
    ref = ddp_run(tmp_path, "gloo", "gloo-fp16", 6)
    with FakeGateway([11, 12], n_params(), 200, dtype) as gw:
        gw.write_table(str(tmp_path / "gw.json"))
        got = ddp_run(tmp_path, "gr", dtype, 6, gw)
        assert gw.bad == 0
    a = np.frombuffer(bytes.fromhex(ref[0]["params"]), np.float32)
    for g in got:
        b = np.frombuffer(bytes.fromhex(g["params"]), np.float32)
        assert np.max(np.abs(a - b)) < (2e-3 if dtype == "fp16" else 2e-2)
        assert max(abs(x - y) for x, y in zip(g["losses"], ref[0]["losses"])) < 0.05
