# SPDX-License-Identifier: BSD-3-Clause
"""georeduce with torch: CPU tensors of every dtype in place, the refusals, the DDP hooks
(units with a stand-in bucket, then two-process DistributedDataParallel runs over one
fake gateway against DDP over Gloo, also through a re-plan). Skipped where torch is
absent (tests/python/run.py --needs torch)."""
import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
import torch

import georeduce
import georeduce.torch as grt
from fakegw import FakeGateway, decode, encode

HERE = os.path.dirname(os.path.abspath(__file__))
# The DDP worker processes import the package the tests import (conftest.py).
PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(georeduce.__file__)))
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


def test_step_one_round():
    """The buckets of a step that fit the job's tensor share one round; a bucket that does
    not fit beside the waiting ones sends them in a round of their own (per_bucket=True:
    a round each)."""
    with FakeGateway([1, 2], 400, 64) as gw:
        cs = clients(gw)
        states = [grt.HookState(c, record=True) for c in cs]
        try:
            futs = []
            for step in range(2):
                for i, n in enumerate((300, 77, 200)):
                    for w, s in enumerate(states):
                        t = torch.arange(n, dtype=torch.float32) + 2 * w + 10 * step
                        want = torch.arange(n, dtype=torch.float32) + 1 + 10 * step
                        futs.append((grt.ddp_comm_hook(s, Bucket(t, i, i == 2)), t, want))
            for f, t, want in futs:
                assert f.wait() is t
                assert torch.equal(t, want)
            for s in states:
                assert s.step == 2
                # 300 + 77 in one round; 200 more would pass 400: a round of its own.
                assert [(r.step, r.index, r.round, r.elements) for r in s.records] == [
                    (0, 0, 0, 300), (0, 1, 0, 77), (0, 2, 1, 200),
                    (1, 0, 2, 300), (1, 1, 2, 77), (1, 2, 3, 200)]
        finally:
            for c in cs:
                c.close()
        assert gw.bad == 0
        # Each round's chunks once per worker: 377 and 200 elements in chunks of 64.
        assert gw.contribs - gw.retx == 2 * 2 * (6 + 4), (gw.contribs, gw.retx)
    with FakeGateway([1, 2], 400, 64) as gw:
        cs = clients(gw)
        states = [grt.HookState(c, record=True, per_bucket=True) for c in cs]
        try:
            futs = [grt.ddp_comm_hook(s, Bucket(torch.ones(n), i, i == 1))
                    for i, n in enumerate((300, 77)) for s in states]
            for f in futs:
                f.wait()
            assert [r.round for r in states[0].records] == [0, 1]
        finally:
            for c in cs:
                c.close()


@pytest.mark.parametrize("lan", [None, "fp32", "bf16"])
def test_mx_hook_with_a_bucket(lan):
    """mx_compress_hook on an mxint8 job (with the LAN hop in the job's dtype, fp32 or bf16):
    two buckets a step, the second shorter than a chunk's multiple (its last chunk padded);
    exact averages of exactly representable values, then random values bit for bit the
    reference: each worker's value as it travels to the gateway, summed in fp32 in arrival
    order, encoded once, decoded and divided by 2."""
    with FakeGateway([1, 2], 320, 64, "mxint8", lan_dtype=lan) as gw:
        cs = clients(gw)
        assert all((c.config.lan_dtype.name if c.config.lan_dtype else None) == lan
                   for c in cs)
        states = [grt.HookState(c, record=True) for c in cs]
        try:
            futs = []
            for step in range(2):
                for i, n in enumerate((320, 77)):
                    for w, s in enumerate(states):
                        t = torch.full((n,), 1.0 + 2 * w + step)
                        futs.append((grt.mx_compress_hook(s, Bucket(t, i, i == 1)), t,
                                     2.0 + step))
            for f, t, want in futs:
                assert f.wait() is t
                assert torch.all(t == want)
            gen = torch.Generator().manual_seed(5)
            xs = [torch.randn(320, generator=gen) * 2.0 ** (torch.arange(320) % 9 - 4)
                  for _ in states]
            ins = [x.clone() for x in xs]
            # One at a time: worker 0's CONTRIBs reach the gateway first, as in the reference.
            f0 = grt.mx_compress_hook(states[0], Bucket(xs[0], 0, True))
            rnd = cs[0].next_round - 1

            def first_in():
                with gw.lock:
                    return all(gw.slots.get((gw.epoch, rnd, c)) is not None and
                               1 in gw.slots[(gw.epoch, rnd, c)].workers for c in range(5))
            for _ in range(6000):   # a minute at most
                if first_in():
                    break
                threading.Event().wait(0.01)
            assert first_in()
            f1 = grt.mx_compress_hook(states[1], Bucket(xs[1], 0, True))
            f0.wait()
            f1.wait()
            sent = [x.numpy() for x in ins]
            if lan is None:
                sent = [decode(np.frombuffer(encode(v, "mxint8"), np.uint8), "mxint8")
                        for v in sent]
            elif lan == "bf16":
                sent = [decode(np.frombuffer(encode(v, "bf16"), np.uint8), "bf16")
                        for v in sent]
            acc = np.zeros(320, np.float32)
            for v in sent:
                acc += v
            want = decode(np.frombuffer(encode(acc, "mxint8"), np.uint8), "mxint8")
            want = want / np.float32(2)
            for x in xs:
                assert np.array_equal(x.numpy(), want)
            assert not np.array_equal(want, (ins[0].numpy() + ins[1].numpy()) / 2)
            for s in states:
                assert [r.dtype for r in s.records] == ["mxint8"] * 5
        finally:
            for c in cs:
                c.close()
        assert gw.bad == 0


def test_public_names():
    """Every public hook and class of georeduce.torch is in __all__ (from ... import *)."""
    public = {n for n, v in vars(grt).items()
              if not n.startswith("_") and getattr(v, "__module__", None) == grt.__name__}
    assert public == set(grt.__all__)
    assert "mx_compress_hook" in grt.__all__


def test_hook_errors():
    with FakeGateway([1, 2], 100, 30) as gw:
        c = clients(gw, timeout=0.3)[0]
        s = grt.HookState(c)
        try:
            with pytest.raises(ValueError, match="fp16_compress_hook: the job's dtype is fp32"):
                grt.fp16_compress_hook(s, Bucket(torch.zeros(10), 0, True))
            with pytest.raises(ValueError, match="mx_compress_hook: the job's dtype is fp32"):
                grt.mx_compress_hook(s, Bucket(torch.zeros(10), 0, True))
            with pytest.raises(ValueError, match="101 elements"):
                grt.ddp_comm_hook(s, Bucket(torch.zeros(101), 0, True))
            with pytest.raises(TypeError, match="hierarchical_hook: the state is a "
                               "HookState; it needs a HierState"):
                grt.hierarchical_hook(s, Bucket(torch.zeros(10), 0, True))
            # The other worker never comes: the future carries the timeout.
            f = grt.ddp_comm_hook(s, Bucket(torch.zeros(100), 0, True))
            with pytest.raises(Exception, match="without a result"):
                f.wait()
        finally:
            c.close()


def ddp_run(tmp_path, name, hook, steps, gw=None, world=2, env=None):
    store = tmp_path / ("%s.store" % name)
    if store.exists():
        store.unlink()
    procs = []
    for rank in range(world):
        args = [sys.executable, os.path.join(HERE, "ddp_worker.py"), str(rank), str(world),
                str(store), hook, str(steps), str(tmp_path / ("%s-%d.json" % (name, rank)))]
        if gw is not None:
            args += [str(tmp_path / "gw.json"), str(gw.workers[rank])]
        log = open(tmp_path / ("%s-%d.log" % (name, rank)), "w")
        procs.append(subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                      env=dict(ENV, **(env or {}))))
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
    # gradients came); the buckets of a step share one round (the gradient fits the
    # job's tensor): one round per step, each of the whole gradient's chunks once.
    recs = got[0]["records"]
    per_step = [sum(1 for r in recs if r[0] == s) for s in range(6)]
    assert per_step[0] >= 1 and all(k == per_step[1] >= 2 for k in per_step[1:]), per_step
    assert [r[2] for r in recs] == [r[0] for r in recs]
    assert all(sum(r[3] for r in recs if r[0] == s) == n_params() for s in range(6))
    assert all(r[4] == 2 for r in recs)
    assert got[0]["records"] == got[1]["records"]
    assert gw.contribs - gw.retx == 2 * 6 * -(-n_params() // 200), (gw.contribs, gw.retx)


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


@pytest.mark.parametrize("lan", [None, "fp32"])
def test_ddp_mx(tmp_path, lan):
    """mx_compress_hook trains close to DDP over Gloo in fp32, through an mxint8 job (the
    buckets shorter than the job's tensor of whole blocks), with the workers' hop in mxint8
    or fp32; the two workers end with the same parameters."""
    ref = ddp_run(tmp_path, "gloo", "gloo", 6)
    with FakeGateway([11, 12], -(-n_params() // 32) * 32, 224, "mxint8", lan_dtype=lan) as gw:
        gw.write_table(str(tmp_path / "gw.json"))
        got = ddp_run(tmp_path, "gr", "mx", 6, gw)
        assert gw.bad == 0
    assert got[0]["params"] == got[1]["params"]
    a = np.frombuffer(bytes.fromhex(ref[0]["params"]), np.float32)
    b = np.frombuffer(bytes.fromhex(got[0]["params"]), np.float32)
    # Measured: 1.3e-4 (LAN mxint8) and 9e-5 (LAN fp32) at most, losses within 2e-5.
    assert 0 < np.max(np.abs(a - b)) < 2e-3
    assert max(abs(x - y) for x, y in zip(got[0]["losses"], ref[0]["losses"])) < 5e-3
