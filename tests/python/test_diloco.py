# SPDX-License-Identifier: BSD-3-Clause
"""georeduce.diloco over the fake gateway: the refusals of bad arguments, the rounding of a
contribution against the specification's encoder, one blocking outer step and one with
error feedback bit for bit against references computed here, and streaming DiLoCo at two
workers (the staggered schedule, the fixed-delay merge, the same global parameters at both,
and the whole run against a simulation written here). Skipped where torch is absent."""
import threading

import numpy as np
import pytest
import torch

import georeduce
import georeduce.diloco as dl
from fakegw import FakeGateway, decode, encode

LR, MOM = 0.7, 0.9


def clients(gw, **kw):
    return [georeduce.Client.from_table_string(gw.table(), w, **kw) for w in gw.workers]


def model(seed=3):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(40, 7, generator=g), torch.randn(7, generator=g),
            torch.randn(3, 40, generator=g), torch.randn(23, generator=g)]   # 430


def nudge(params, worker, step, scale=0.05):
    """An inner step stand-in: a different, reproducible change at every worker and step."""
    g = torch.Generator().manual_seed(1000 * worker + step)
    with torch.no_grad():
        for p in params:
            p.add_(torch.randn(p.shape, generator=g) * scale)


def flat(ts):
    return torch.cat([t.reshape(-1) for t in ts])


def mx_round(v):
    """The specification's MXINT8 encoding, then decoding (fakegw.py, numpy)."""
    n = -(-len(v) // 32) * 32
    pad = np.zeros(n, np.float32)
    pad[:len(v)] = v
    return decode(np.frombuffer(encode(pad, "mxint8"), np.uint8), "mxint8")[:len(v)]


def in_threads(fns):
    """Run each worker's function in a thread of its own (the collective needs them all)."""
    out, errs = [None] * len(fns), []

    def run(i):
        try:
            out[i] = fns[i]()
        except BaseException as e:   # reported below
            errs.append(e)
    ts = [threading.Thread(target=run, args=(i,)) for i in range(len(fns))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    if errs:
        raise errs[0]
    return out


def test_bad_arguments():
    with FakeGateway([1], 448, 64) as gw, FakeGateway([1], 448, 64, "fp16") as g16, \
            FakeGateway([1], 448, 64, "mxint8", lan_dtype="fp32") as gmx:
        c, c16, cmx = clients(gw)[0], clients(g16)[0], clients(gmx)[0]
        try:
            ps = model()
            cases = [
                (dict(params=ps[0]), TypeError, "not one tensor"),
                (dict(params=3), TypeError, "not a int"),
                (dict(params=[]), ValueError, "no parameters"),
                (dict(params=[ps[0], "x"]), TypeError, r"params\[1\]: a str"),
                (dict(params=[ps[0].double()]), TypeError, "float64"),
                (dict(params=[ps[0], ps[0]]), ValueError, "the same tensor twice"),
                (dict(params=[ps[0].t()]), ValueError, "non-contiguous"),
                (dict(params=[torch.zeros(0)]), ValueError, "empty"),
                (dict(params=[torch.zeros(449)]), ValueError, "449 parameters: the job's "
                 "tensor has 448"),
                (dict(client=object()), TypeError, "a georeduce.Client"),
                (dict(client=c16), ValueError, "dtype is fp16"),
                (dict(outer_lr=0), ValueError, "outer_lr"),
                (dict(outer_lr=float("nan")), ValueError, "outer_lr"),
                (dict(momentum=1.0), ValueError, "momentum"),
                (dict(momentum=-0.1), ValueError, "momentum"),
                (dict(momentum=0.0), ValueError, "nesterov needs"),
                (dict(error_feedback=True), ValueError, "fp32"),
                (dict(client=cmx, error_feedback=True), ValueError, "lan_dtype fp32"),
            ]
            for kw, exc, msg in cases:
                args = dict(params=ps, client=c)
                args.update(kw)
                with pytest.raises(exc, match=msg):
                    dl.OuterSync(args.pop("params"), args.pop("client"), **args)
            dl.OuterSync(ps, c, momentum=0.0, nesterov=False)   # plain SGD is fine
            scases = [
                (dict(fragments=0), "fragments 0"),
                (dict(fragments=True), "fragments True"),
                (dict(fragments=5), "fragments 5"),          # more than inner_steps
                (dict(inner_steps=0), "inner_steps 0"),
                (dict(inner_steps=2.0), "inner_steps 2.0"),
                (dict(alpha=1.0), "alpha"),
                (dict(alpha=-0.5), "alpha"),
                (dict(overlap=0), "overlap 0"),
                (dict(overlap=5), "overlap 5"),
            ]
            for kw, msg in scases:
                args = dict(fragments=2, inner_steps=4)
                args.update(kw)
                with pytest.raises(ValueError, match=msg):
                    dl.StreamingOuterSync(ps, c, **args)
            with pytest.raises(TypeError, match="float64"):
                dl.round_like_contribution(torch.zeros(3, dtype=torch.float64),
                                           georeduce.DTYPES[3])
        finally:
            for x in (c, c16, cmx):
                x.close()


def test_round_like_contribution():
    """The library's rounding of a contribution is the specification's (mxint8, bf16), a
    partial last block padded with zeros; fp32 stays."""
    dts = {d.name: d for d in georeduce.DTYPES}
    x = torch.randn(1000, generator=torch.Generator().manual_seed(2)) * \
        2.0 ** (torch.arange(1000) % 11 - 5)
    assert torch.equal(dl.round_like_contribution(x, dts["fp32"]), x)
    got = dl.round_like_contribution(x, dts["mxint8"])
    assert np.array_equal(got.numpy(), mx_round(x.numpy()))
    assert not torch.equal(got, x)
    b = dl.round_like_contribution(x, dts["bf16"])
    assert np.array_equal(b.numpy(), decode(np.frombuffer(encode(x.numpy(), "bf16"),
                                                          np.uint8), "bf16"))
    for name in ("mxfp8", "mxfp4"):
        r = dl.round_like_contribution(x, dts[name])
        assert torch.equal(dl.round_like_contribution(r, dts[name]), r)   # idempotent
        assert float(torch.linalg.vector_norm(r - x) / torch.linalg.vector_norm(x)) < 0.2


def run_blocking(gw, steps, **kw):
    cs = clients(gw)
    try:
        nets = [model() for _ in cs]
        outs = [dl.OuterSync(n, c, outer_lr=LR, momentum=MOM, **kw) for n, c in zip(nets, cs)]
        trace = []

        def worker(w):
            seen = []
            for k in range(steps):
                nudge(nets[w], w, k)
                seen.append((flat(nets[w]).clone(), outs[w].fragments[0].err))
                outs[w].sync()
            return seen
        trace = in_threads([lambda w=w: worker(w) for w in range(len(cs))])
        return nets, outs, trace
    finally:
        for c in cs:
            c.close()


def test_blocking_outer_step():
    """Two outer steps through an fp32 job: the mean pseudo-gradient and the Nesterov step
    computed here with torch, bit for bit; the model holds the global parameters; and the
    same within rounding as torch.optim.SGD(nesterov=True) on the model's tensors."""
    with FakeGateway([1, 2], 448, 64) as gw:
        nets, outs, trace = run_blocking(gw, 2)
        assert gw.bad == 0
    glob = flat(model())
    mom = None
    sgd_p = [p.clone().requires_grad_(True) for p in model()]
    sgd = torch.optim.SGD(sgd_p, lr=LR, momentum=MOM, nesterov=True)
    for k in range(2):
        deltas = [glob - trace[w][k][0] for w in range(2)]
        g = (deltas[0] + deltas[1]) / 2
        mom = g.clone() if mom is None else mom.mul(MOM).add(g)
        glob = glob.add(g.add(mom, alpha=MOM), alpha=-LR)
        for p, d in zip(sgd_p, torch.split(g, [p.numel() for p in sgd_p])):
            p.grad = d.view_as(p).clone()
        sgd.step()
        for o in outs:
            rec = o.records[k]
            assert rec.contributors == 2 and rec.fragment == 0 and rec.elements == 430
    for w in range(2):
        assert torch.equal(outs[w].global_flat(), glob)
        assert torch.equal(flat(nets[w]), glob)
        assert all(a.shape == b.shape for a, b in zip(outs[w].global_params(), nets[w]))
    assert torch.allclose(flat(sgd_p).detach(), glob, rtol=1e-6, atol=1e-6)


def test_blocking_error_feedback():
    """An mxint8 job with error feedback: each worker keeps what its contribution lost in
    the encoding and adds it to the next pseudo-gradient; the average is the gateway's
    (each contribution encoded, decoded, summed in fp32, encoded once, halved)."""
    with FakeGateway([1, 2], 448, 64, "mxint8") as gw:
        nets, outs, trace = run_blocking(gw, 2, error_feedback=True)
        assert gw.bad == 0
    glob = flat(model())
    mom = None
    errs = [np.zeros(430, np.float32)] * 2
    for k in range(2):
        sent = [(glob - trace[w][k][0]).numpy() + errs[w] for w in range(2)]
        q = [mx_round(s) for s in sent]
        errs = [s - r for s, r in zip(sent, q)]
        g = torch.from_numpy(mx_round(q[0] + q[1]) / np.float32(2))
        mom = g.clone() if mom is None else mom.mul(MOM).add(g)
        glob = glob.add(g.add(mom, alpha=MOM), alpha=-LR)
    for w in range(2):
        assert np.array_equal(outs[w].fragments[0].err.numpy(), errs[w])
        assert torch.equal(outs[w].global_flat(), glob)
        assert all(r.error_norm > 0 for r in outs[w].records)
    assert np.linalg.norm(errs[0]) > 0


def simulate(steps, h, n_frag, alpha, overlap, workers=2):
    """Streaming DiLoCo written out: per worker a flat local vector, per fragment a global
    range, its momentum and its sync (start at (p + 1) h // P mod h, merge overlap later)."""
    init = flat(model())
    total = len(init)
    cuts = [(i * total // n_frag, (i + 1) * total // n_frag) for i in range(n_frag)]
    glob, mom = init.clone(), [None] * n_frag
    local = [init.clone() for _ in range(workers)]
    flight = {}

    def merge(p):
        a, b = cuts[p]
        g = (flight[p][1][0] + flight[p][1][1]) / 2
        mom[p] = g.clone() if mom[p] is None else mom[p].mul(MOM).add(g)
        glob[a:b] -= LR * g.add(mom[p], alpha=MOM)
        for w in range(workers):
            local[w][a:b] = alpha * local[w][a:b] + (1 - alpha) * glob[a:b]
        del flight[p]
    for t in range(1, steps + 1):
        for w in range(workers):
            ps = [x.clone() for x in torch.split(local[w], [280, 7, 120, 23])]
            nudge(ps, w, t - 1)
            local[w] = flat(ps)
        for p in range(n_frag):
            if p in flight and t - flight[p][0] == overlap:
                merge(p)
        for p, (a, b) in enumerate(cuts):
            if t % h == (p + 1) * h // n_frag % h:
                flight[p] = (t, [glob[a:b] - local[w][a:b] for w in range(workers)])
    for p in sorted(flight):     # finish()
        merge(p)
    return glob, local


def test_streaming():
    """P = 3 fragments, H = 6, a merge 2 inner steps after each start, 18 inner steps: each
    fragment synced 3 times at its staggered steps, merged exactly 2 steps later (the last
    by finish()); both
    workers end with the same global parameters, those of the simulation (within fp32
    rounding: the mixing runs on the model's tensors there, on flat ranges here)."""
    h, n_frag, steps, alpha, tau = 6, 3, 18, 0.5, 2
    with FakeGateway([1, 2], 200, 32) as gw:
        cs = clients(gw)
        try:
            nets = [model() for _ in cs]
            ss = [dl.StreamingOuterSync(n, c, fragments=n_frag, inner_steps=h, alpha=alpha,
                                        overlap=tau, outer_lr=LR, momentum=MOM)
                  for n, c in zip(nets, cs)]
            assert [f.elements for f in ss[0].fragments] == [143, 143, 144]

            def worker(w):
                for t in range(steps):
                    nudge(nets[w], w, t)
                    ss[w].step()
                return ss[w].finish()
            leftover = in_threads([lambda w=w: worker(w) for w in range(2)])
        finally:
            for c in cs:
                c.close()
        assert gw.bad == 0
    # The sync started at the last step is merged by finish().
    assert [[(r.fragment, r.started_step) for r in x] for x in leftover] == [[(2, 18)]] * 2
    for s in ss:
        assert sorted((r.fragment, r.started_step, r.merged_step) for r in s.records) == [
            (0, 2, 4), (0, 8, 10), (0, 14, 16), (1, 4, 6), (1, 10, 12), (1, 16, 18),
            (2, 6, 8), (2, 12, 14), (2, 18, 18)]
        assert all(r.contributors == 2 for r in s.records) and s.in_flight() == 0
    assert torch.equal(ss[0].global_flat(), ss[1].global_flat())
    glob, local = simulate(steps, h, n_frag, alpha, tau)
    assert torch.allclose(ss[0].global_flat(), glob, rtol=1e-5, atol=1e-6)
    for w in range(2):
        assert torch.allclose(flat(nets[w]), local[w], rtol=1e-5, atol=1e-6)


def test_public_names():
    """Every public name of georeduce.diloco is in __all__."""
    public = {n for n in vars(dl) if not n.startswith("_") and
              getattr(getattr(dl, n), "__module__", None) == dl.__name__}
    assert public == set(dl.__all__)


def test_failed_sync():
    """A sync whose AllReduce times out raises from sync() and from step(); the parameters
    stay as they were, and the object goes on."""
    with FakeGateway([1, 2], 448, 64) as gw:
        c = clients(gw, timeout=0.3)[0]     # worker 2 never comes: every round times out
        try:
            ps = model()
            before = flat(ps).clone()
            o = dl.OuterSync(ps, c)
            nudge(ps, 0, 0)
            after_nudge = flat(ps).clone()
            with pytest.raises(georeduce.AllreduceTimeout):
                o.sync()
            assert torch.equal(o.global_flat(), before)
            assert torch.equal(flat(ps), after_nudge) and o.records == []
            s = dl.StreamingOuterSync(ps, c, fragments=2, inner_steps=2, overlap=1)
            s.step()                         # fragment 0 starts
            with pytest.raises(georeduce.AllreduceTimeout):
                s.step()                     # ... is merged: it failed; fragment 1 starts
            assert [f.future is not None for f in s.fragments] == [False, True]
            assert torch.equal(s.global_flat(), after_nudge) and s.records == []
        finally:
            c.close()
