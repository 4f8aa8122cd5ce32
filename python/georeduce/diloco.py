# SPDX-License-Identifier: BSD-3-Clause
"""DiLoCo's outer step through georeduce gateways (docs/PYTHON.md, "DiLoCo").

    import georeduce, georeduce.diloco as dl
    client = georeduce.Client.from_table("gw-a.json", worker_id=11)
    outer = dl.OuterSync(model.parameters(), client, outer_lr=0.7, momentum=0.9)
    for k in range(K):
        for _ in range(H):
            ...; inner_opt.step()          # the site's own inner steps
        outer.sync()                       # pseudo-gradient averaged, outer step, copied in

    stream = dl.StreamingOuterSync(model.parameters(), client, fragments=4, inner_steps=H)
    for t in range(K * H):
        ...; inner_opt.step()
        stream.step()                      # starts and merges fragments' outer syncs
    stream.finish()

DiLoCo (Douillard et al., "DiLoCo: Distributed Low-Communication Training of Language
Models", 2023): every site trains its replica alone for H inner steps; then the sites
average their pseudo-gradients, the global parameters of the last outer step minus the
site's parameters now, and every site applies the same outer step (SGD with Nesterov
momentum) to the global parameters, and continues from them. The average comes from the
gateways (Client.allreduce with average=True) in the job's dtype: fp32, or an MX dtype
that the library encodes on the wire. Every site gets the same bits of the average, and
the outer step is the same arithmetic on the same bits at every site, so the global
parameters stay bit for bit the same everywhere.

Streaming DiLoCo (Douillard et al., "Streaming DiLoCo with overlapping communication",
2025): the parameters, laid end to end, are cut into P ranges (fragments), each
synchronised every H inner steps on a staggered schedule (fragment p after inner steps
(p + 1) H // P, then every H), in the background while the inner steps go on; its result
is merged once it is in (or a fixed tau steps after its start) by mixing the site's
fragment with the new global one: local = alpha local + (1 - alpha) global.

Runs in the training thread; the AllReduces run in the client's own thread
(Client.allreduce_async).
"""
from __future__ import annotations

import ctypes
import math
import time
from dataclasses import dataclass
from typing import Any, Iterable, List, Optional

import torch

from . import _lib
from .dtypes import DType

__all__ = ["OuterSync", "StreamingOuterSync", "SyncRecord", "round_like_contribution"]


@dataclass
class SyncRecord:
    """One outer sync of one fragment (the whole model in blocking mode)."""

    fragment: int        # the fragment's index (0 in blocking mode)
    elements: int        # its parameters
    started_step: int    # the inner steps taken when its pseudo-gradient was taken
    merged_step: int     # ... when its result was merged (-1 while in flight)
    contributors: int    # the sites the average holds (0 while in flight)
    allreduce_s: float   # from its start until its average was in
    wait_s: float        # how long the training thread waited for it
    error_norm: float    # the L2 norm of the error kept for the next round (0 without)


def round_like_contribution(tensor: torch.Tensor, dtype: DType) -> torch.Tensor:
    """A copy of a float32 tensor rounded as libgeoreduce rounds a contribution of dtype
    when it sends it (gr_dtype_round(): MX blocks of 32 from the tensor's first element
    encoded and decoded, fp16 and bf16 to nearest even, fp32 unchanged)."""
    if tensor.dtype != torch.float32:
        raise TypeError("a tensor of %s: contributions are rounded from float32" %
                        tensor.dtype)
    out = tensor.detach().to("cpu", copy=True).contiguous()
    rc = _lib.lib().gr_dtype_round(dtype.code, ctypes.c_void_p(out.data_ptr()),
                                   out.numel())
    if rc < 0:
        raise ValueError("dtype %s: libgeoreduce cannot round it (%d)" % (dtype.name, rc))
    return out.to(tensor.device)


def _params(params: Any) -> List[torch.Tensor]:
    if isinstance(params, torch.Tensor):
        raise TypeError("params: an iterable of tensors (model.parameters()), not one tensor")
    try:
        out = list(params)
    except TypeError:
        raise TypeError("params: an iterable of tensors, not a %s" %
                        type(params).__name__) from None
    if not out:
        raise ValueError("params: no parameters")
    seen = set()
    for i, p in enumerate(out):
        if not isinstance(p, torch.Tensor):
            raise TypeError("params[%d]: a %s, not a tensor" % (i, type(p).__name__))
        if p.dtype != torch.float32:
            raise TypeError("params[%d]: a tensor of %s; the outer step keeps float32 "
                            "parameters" % (i, p.dtype))
        if p.is_sparse or p.numel() == 0 or not p.is_contiguous():
            raise ValueError("params[%d]: a sparse, empty or non-contiguous tensor" % i)
        if id(p) in seen:
            raise ValueError("params[%d]: the same tensor twice" % i)
        seen.add(id(p))
    if len({p.device for p in out}) != 1:
        raise ValueError("params: tensors on %s; all must be on one device" %
                         sorted(str(d) for d in {p.device for p in out}))
    return out


def _check_client(client: Any, error_feedback: bool) -> DType:
    cfg = getattr(client, "config", None)
    if cfg is None or not hasattr(client, "allreduce_async"):
        raise TypeError("client: a georeduce.Client, not a %s" % type(client).__name__)
    dt = cfg.dtype
    if dt.name != "fp32" and dt.wire != "mx":
        raise ValueError("the job's dtype is %s: the pseudo-gradient goes as fp32 or an MX "
                         "dtype (mxint8, mxfp8, mxfp4)" % dt.name)
    sent = cfg.lan_dtype or dt
    if error_feedback and sent.name == "fp32":
        raise ValueError("error_feedback: this job's contributions leave the worker in fp32 "
                         "(dtype %s%s), so there is no error to keep" % (
                             dt.name, ", lan_dtype fp32" if cfg.lan_dtype else ""))
    return sent


def _check_outer(outer_lr: float, momentum: float, nesterov: bool) -> None:
    if not (isinstance(outer_lr, (int, float)) and math.isfinite(outer_lr) and outer_lr > 0):
        raise ValueError("outer_lr %r: a finite number > 0" % (outer_lr,))
    if not (isinstance(momentum, (int, float)) and 0 <= momentum < 1):
        raise ValueError("momentum %r: 0 <= momentum < 1" % (momentum,))
    if nesterov and momentum == 0:
        raise ValueError("nesterov needs a momentum > 0")


def _count(name: str, v: Any, lo: int, hi: Optional[int] = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo or (hi is not None and v > hi):
        raise ValueError("%s %r: an integer %d .. %s" % (name, v, lo,
                                                          hi if hi is not None else "n"))
    return v


class _Fragment:
    """A range [first, first + elements) of the model's parameters laid end to end, synced
    together: its global copy (flat fp32), the outer momentum, the error kept, and the
    sync in flight."""

    def __init__(self, index: int, params: List[torch.Tensor], first: int, end: int) -> None:
        self.index, self.first, self.elements = index, first, end - first
        # The parameters' flat views (the same memory) that fall into the range.
        self.pieces: List[torch.Tensor] = []
        at = 0
        for p in params:
            lo, hi = max(first, at), min(end, at + p.numel())
            if lo < hi:
                self.pieces.append(p.detach().view(-1)[lo - at:hi - at])
            at += p.numel()
        self.sizes = [v.numel() for v in self.pieces]
        with torch.no_grad():
            self.glob = self.local().clone()
        self.mom: Optional[torch.Tensor] = None
        self.err: Optional[torch.Tensor] = None
        self.err_before: Optional[torch.Tensor] = None  # to undo a failed sync's
        self.delta: Optional[torch.Tensor] = None   # in flight: the average comes here
        self.average: Optional[torch.Tensor] = None  # the last sync's average
        self.future: Any = None
        self.record: Optional[SyncRecord] = None
        self.t0 = 0.0
        self.t_done = 0.0

    def local(self) -> torch.Tensor:
        return torch.cat(self.pieces)

    def start(self, client: Any, sent: Optional[DType], step: int) -> None:
        """Take the pseudo-gradient (plus the error kept) and start its AllReduce."""
        with torch.no_grad():
            delta = self.glob - self.local()
            norm = 0.0
            self.err_before = self.err
            if sent is not None:
                if self.err is not None:
                    delta.add_(self.err)
                self.err = delta - round_like_contribution(delta, sent)
                norm = float(torch.linalg.vector_norm(self.err))
        self.t0, self.t_done = time.perf_counter(), 0.0
        try:
            fut = client.allreduce_async(delta, average=True)
        except BaseException:
            self.err = self.err_before    # refused at once (a closed client): not started
            raise
        self.delta, self.future = delta, fut
        self.record = SyncRecord(self.index, self.elements, step, -1, 0, 0.0, 0.0, norm)
        fut.add_done_callback(self._done)

    def _done(self, _f: Any) -> None:
        self.t_done = time.perf_counter()

    def done(self) -> bool:
        return self.future is not None and self.future.done()

    def wait(self) -> int:
        """The contributor count, once the average is in (the time waited is recorded)."""
        assert self.future is not None and self.record is not None
        t = time.perf_counter()
        contributors = self.future.result()
        self.record.wait_s += time.perf_counter() - t
        self.record.contributors = contributors
        self.record.allreduce_s = (self.t_done or time.perf_counter()) - self.t0
        return contributors

    def outer_step(self, lr: float, momentum: float, nesterov: bool) -> None:
        """SGD with momentum (Nesterov's if asked) on the global copy, torch.optim.SGD's
        arithmetic: buf = g (first) or momentum buf + g; g + momentum buf (Nesterov) or buf;
        glob -= lr x that."""
        g = self.delta
        assert g is not None
        with torch.no_grad():
            upd = g
            if momentum != 0:
                if self.mom is None:
                    self.mom = g.clone()
                else:
                    self.mom.mul_(momentum).add_(g)
                upd = g.add(self.mom, alpha=momentum) if nesterov else self.mom
            self.glob.add_(upd, alpha=-lr)
        self.average, self.delta, self.future = g, None, None

    def merge(self, alpha: float) -> None:
        """local = alpha local + (1 - alpha) global; alpha 0 copies the global exactly."""
        with torch.no_grad():
            for v, g in zip(self.pieces, torch.split(self.glob, self.sizes)):
                if alpha == 0:
                    v.copy_(g)
                else:
                    v.mul_(alpha).add_(g, alpha=1.0 - alpha)


class _OuterBase:
    """What both modes share: the checks, the fragments, completing a sync, the records."""

    def __init__(self, client: Any, error_feedback: bool, outer_lr: float, momentum: float,
                 nesterov: bool) -> None:
        sent = _check_client(client, bool(error_feedback))
        _check_outer(outer_lr, momentum, nesterov)
        self.client = client
        self.sent: Optional[DType] = sent if error_feedback else None
        self.outer_lr, self.momentum, self.nesterov = float(outer_lr), float(momentum), \
            bool(nesterov)
        self.params: List[torch.Tensor] = []
        self.fragments: List[_Fragment] = []
        self.records: List[SyncRecord] = []
        self.steps = 0
        self.waited_s = 0.0

    def _check_fit(self) -> None:
        cap = self.client.config.elements
        for f in self.fragments:
            if f.elements > cap:
                raise ValueError("fragment %d has %d parameters: the job's tensor has %d "
                                 "elements, and a fragment may have no more" %
                                 (f.index, f.elements, cap))

    def _complete(self, f: _Fragment, alpha: float) -> SyncRecord:
        try:
            f.wait()
        except BaseException:
            # A failed AllReduce (a timeout, a closed client): the sync is dropped, the
            # global and local parameters and the error kept stay as they were before it.
            f.err = f.err_before
            f.future, f.delta, f.record = None, None, None
            raise
        f.outer_step(self.outer_lr, self.momentum, self.nesterov)
        f.merge(alpha)
        rec = f.record
        assert rec is not None
        rec.merged_step = self.steps
        self.waited_s += rec.wait_s
        self.records.append(rec)
        f.record = None
        return rec

    def global_flat(self) -> torch.Tensor:
        """The global parameters laid end to end in the order given (a copy): bit for bit
        the same at every site."""
        return torch.cat([f.glob for f in self.fragments])

    def last_average(self) -> torch.Tensor:
        """The averaged pseudo-gradient of each fragment's last sync, laid end to end as
        global_flat() (zeros for a fragment not synced yet): what the outer step took."""
        return torch.cat([f.average if f.average is not None else torch.zeros_like(f.glob)
                          for f in self.fragments])

    def global_params(self) -> List[torch.Tensor]:
        """The global parameters, a copy shaped as the model's tensors."""
        return [g.view_as(p) for p, g in zip(self.params, torch.split(
            self.global_flat(), [p.numel() for p in self.params]))]


class OuterSync(_OuterBase):
    """DiLoCo's outer step, blocking: call sync() after the inner steps of an outer step.

    Args:
        params: the model's parameters (float32 tensors on one device), the inner
            optimiser's; their values now are the first global parameters, which must be
            the same at every site.
        client: a georeduce.Client of a job of fp32 or an MX dtype, whose tensor holds
            the parameters; every site's client in the same job, from the same round.
        outer_lr: the outer learning rate (DiLoCo: 0.7).
        momentum: the outer momentum (DiLoCo: 0.9).
        nesterov: Nesterov momentum (DiLoCo's choice), else heavy ball.
        error_feedback: keep the error the contribution took on when it was sent (the
            MX encoding, or the lan_dtype's rounding) and add it to the next outer sync's
            pseudo-gradient. Refused where contributions leave in fp32.

    Raises TypeError or ValueError naming the bad argument.
    """

    def __init__(self, params: Iterable[torch.Tensor], client: Any, *, outer_lr: float = 0.7,
                 momentum: float = 0.9, nesterov: bool = True,
                 error_feedback: bool = False) -> None:
        ps = _params(params)
        super().__init__(client, error_feedback, outer_lr, momentum, nesterov)
        self.params = ps
        self.fragments = [_Fragment(0, self.params, 0, sum(p.numel() for p in self.params))]
        self._check_fit()

    def sync(self) -> SyncRecord:
        """One outer step: the pseudo-gradient global - local (plus the error kept) averaged
        through the gateways, the outer step on the global parameters, which are then
        copied into the model. Blocks for the AllReduce; its failures
        (georeduce.AllreduceTimeout, ...) are raised here, the parameters unchanged."""
        f = self.fragments[0]
        f.start(self.client, self.sent, self.steps)
        return self._complete(f, 0.0)

    def step(self) -> None:
        """Count an inner step (only for the records' step numbers)."""
        self.steps += 1


class StreamingOuterSync(_OuterBase):
    """Streaming DiLoCo: P fragments of the model, each synced every H inner steps on a
    staggered schedule in the background, merged when their average is in. Call step()
    after every inner step, and finish() at the end.

    Fragment p's sync starts after inner step t when t % H == (p + 1) H // P % H (the
    first after (p + 1) H // P steps: the last fragment is on the blocking schedule); its
    AllReduce runs in the client's thread while the inner steps go on. It is merged at the
    first step() that finds its average in (overlap None), or exactly `overlap` inner steps
    after its start (overlap tau: the paper's fixed delay, the same step at every site);
    in either case at the latest when the fragment's next sync is due, waiting there if
    need be. Merging: the outer step on the fragment's global parameters, then
    local = alpha local + (1 - alpha) global on the model's fragment (alpha 0: the global
    fragment, as in blocking DiLoCo). The pseudo-gradient is global - local at the start,
    so the inner steps taken meanwhile stay in the local parameters.

    Args:
        params, client, outer_lr, momentum, nesterov, error_feedback: as OuterSync.
        fragments: P, 1 .. H: the parameters laid end to end (in the order given, each
            tensor flattened) cut into P ranges of equal length (within one element);
            a range may end inside a tensor.
        inner_steps: H, inner steps between two syncs of a fragment.
        alpha: the mixing factor, 0 <= alpha < 1 (the paper's 0.5).
        overlap: None, or tau, 1 .. H inner steps between a fragment's start and its merge.

    Every site must make the same calls: the fragments' AllReduces take rounds in the order
    they start. The training thread waits only where a fragment's average is needed and
    not in: waited_s sums those waits.
    """

    def __init__(self, params: Iterable[torch.Tensor], client: Any, *, fragments: Any,
                 inner_steps: int, alpha: float = 0.5, overlap: Optional[int] = None,
                 outer_lr: float = 0.7, momentum: float = 0.9, nesterov: bool = True,
                 error_feedback: bool = False) -> None:
        ps = _params(params)
        super().__init__(client, error_feedback, outer_lr, momentum, nesterov)
        self.params = ps
        h = _count("inner_steps", inner_steps, 1)
        total = sum(p.numel() for p in self.params)
        n = _count("fragments", fragments, 1, min(h, total))
        if not (isinstance(alpha, (int, float)) and 0 <= alpha < 1):
            raise ValueError("alpha %r: 0 <= alpha < 1" % (alpha,))
        if overlap is not None:
            _count("overlap", overlap, 1, h)
        self.inner_steps, self.alpha, self.overlap = h, float(alpha), overlap
        self.fragments = [_Fragment(i, self.params, i * total // n, (i + 1) * total // n)
                          for i in range(n)]
        self.offsets = [(p + 1) * h // n % h for p in range(n)]
        self._check_fit()

    def step(self) -> List[SyncRecord]:
        """After an inner step: merge what is due or in, then start the syncs due. Returns
        the records of the syncs merged now. A failed AllReduce raises here (or from
        finish()), once the step's other merges and starts are done: that sync is
        dropped, its fragment left as it was before it started, and the schedule goes
        on."""
        self.steps += 1
        t, merged, failed = self.steps, [], None
        for f in self.fragments:
            if f.future is None:
                continue
            due = t % self.inner_steps == self.offsets[f.index]
            if self.overlap is not None:
                due = due or t - f.record.started_step >= self.overlap   # type: ignore
            elif f.done():
                due = True
            if due:
                try:
                    merged.append(self._complete(f, self.alpha))
                except Exception as e:   # raised once the step's other work is done
                    failed = failed or e
        for f in self.fragments:
            if t % self.inner_steps == self.offsets[f.index]:
                f.start(self.client, self.sent, t)
        if failed is not None:
            raise failed
        return merged

    def finish(self) -> List[SyncRecord]:
        """Wait for the syncs in flight and merge them (at the end of training)."""
        return [self._complete(f, self.alpha) for f in self.fragments
                if f.future is not None]

    def in_flight(self) -> int:
        """Fragments whose sync has started and is not merged yet."""
        return sum(f.future is not None for f in self.fragments)
