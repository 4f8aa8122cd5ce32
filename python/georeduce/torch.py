# SPDX-License-Identifier: BSD-3-Clause
"""DistributedDataParallel communication hooks that reduce gradients through georeduce.

    import georeduce, georeduce.torch
    client = georeduce.Client.from_table("gw-a.json", worker_id=11)
    state = georeduce.torch.HookState(client)
    ddp.register_comm_hook(state, georeduce.torch.ddp_comm_hook)

The buckets of a step share AllReduce rounds: each is copied, in the order DDP hands them
over (bucket 0 first, every step), to the next place of a staging tensor of the job's
elements, and a round reduces that tensor once the step's last bucket is in, or earlier
when the next bucket would not fit (a job smaller than the gradient). A step whose
gradient fits the job's tensor so costs one AllReduce of the gradient, its trees all
busy at once, and not one round trip and window ramp per bucket. Every worker lays the
same buckets the same way, so every worker gives the same element the same place and
round. The hook returns a torch.futures.Future at once and the client's thread
completes it when the results are in. The result is the sum divided, chunk by chunk, by
the number of workers it holds: in a partial reduce (a CREW job) each chunk's own count.
A round cut by a re-plan runs again under the new epoch (georeduce.Client, follow=True).
HookState(per_bucket=True) gives each bucket a round of its own instead, as before 0.2.0.

CUDA buckets are copied, on their stream, into a staging tensor in pinned host memory,
and their results back; their futures are CUDA-aware (docs/PYTHON.md, "CUDA tensors").
hierarchical_hook with a HierState sums each batch inside the node first and sends one
shard per local rank through the gateways (docs/PYTHON.md, "Multi-GPU nodes").

The hooks' annotations are exactly those DistributedDataParallel.register_comm_hook()
checks (dist.GradBucket, torch.futures.Future[torch.Tensor]).
"""
import concurrent.futures
import contextlib
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, ContextManager, List, Optional, Tuple

import torch
import torch.distributed as dist

from . import _staging
from .client import Client
from .dtypes import DType

__all__ = ["BucketRecord", "HierState", "HookState", "bf16_compress_hook", "ddp_comm_hook",
           "fp16_compress_hook", "hierarchical_hook", "mx_compress_hook"]


@dataclass(frozen=True)
class BucketRecord:
    """One bucket's AllReduce, as HookState(record=True) keeps it."""

    step: int           # the step (backward pass) it belonged to, from 0
    index: int          # the bucket's index in the step
    round: int          # its AllReduce round
    elements: int
    dtype: str          # as sent: the job's dtype
    submitted: float    # time.perf_counter() when the hook was called
    started: float      # ... when the client's thread took the call up
    in_library: float   # seconds inside libgeoreduce
    finished: float     # ... when the call returned in the client's thread
    done: float         # ... when its future was completed (after the copy back)
    contributors: int
    epoch: int          # the epoch it completed under


class HookState:
    """What the hooks keep between calls: the client, the step count and, if asked for,
    a record of every bucket.

    Args:
        client: the worker's georeduce.Client; its next round is the first bucket's.
        timeout: seconds per round (None: the client's).
        record: keep a BucketRecord per bucket in `records`.
        per_bucket: one round per bucket instead of one per step.

    Memory: staging tensors of the job's elements in the dtype sent, one per round in
    flight (one, when a step's gradient fits the job), allocated on first use and kept:
    for CPU buckets in ordinary memory, for CUDA buckets in pinned host memory (at most
    georeduce._staging.KEEP of them idle; staging() counts them).
    """

    def __init__(self, client: Client, *, timeout: Optional[float] = None,
                 record: bool = False, per_bucket: bool = False) -> None:
        self.client = client
        self.timeout = timeout
        self.step = 0
        self.record = record
        self.per_bucket = per_bucket
        self.records: List[BucketRecord] = []
        self._lock = threading.Lock()
        self._free: List[torch.Tensor] = []  # staging tensors not in a round
        self._batch: Optional[_Batch] = None  # the buckets waiting for their round
        self._pinned = _staging.Pool(_staging.pinned)  # CUDA buckets' staging tensors
        self._capacity = client.elements    # elements a batch may hold

    def staging(self) -> dict:
        """The pinned staging tensors of CUDA buckets: allocated and freed so far, idle
        ones and their bytes (georeduce._staging.Pool.stats())."""
        return self._pinned.stats()

    def _take(self, want: torch.dtype, device: torch.device) -> torch.Tensor:
        """A staging tensor for a batch of buckets on device: pinned host memory for a
        CUDA device, ordinary memory for the CPU."""
        if device.type == "cuda":
            return self._pinned.take(self._capacity, want)
        with self._lock:
            flat = next((t for t in self._free if t.dtype == want), None)
            if flat is not None:
                self._free.remove(flat)
        return flat if flat is not None else torch.zeros(self._capacity, dtype=want)

    def _give(self, flat: torch.Tensor, ready: Any) -> None:
        if flat.is_pinned() and ready is not None:
            self._pinned.give(flat, ready)
        else:
            with self._lock:
                self._free.append(flat)

    def _send(self, b: "_Batch") -> Tuple["concurrent.futures.Future[int]", int]:
        """Start the batch's round: its future (of the contributor count) and round."""
        rnd = self.client.next_round
        return self.client.allreduce_async(b.flat[:b.at], average=True,
                                           timeout=self.timeout, ready=b.copied), rnd


class HierState(HookState):
    """HookState for hierarchical_hook: a worker that is one local rank of a node.

    Args:
        client: this local rank's georeduce.Client. Local rank i of every node is a worker
            of the job of shard i: each job's tensor holds a shard, the node's gradient
            (or the part of it a round takes) divided by the local world size, rounded up.
        group: the node's process group (dist.new_group() of the node's ranks; NCCL for
            CUDA buckets, Gloo for CPU ones), used by nothing else while a step runs.
        timeout, record, per_bucket: as HookState.

    A batch of buckets holds up to client.elements x the local world size elements. Its
    rounds run in a thread of their own, in order: the collectives inside the node are
    issued in the same order at every local rank. Memory: a staging tensor of that many
    elements per round in flight, on the buckets' device, kept; and the client's pinned
    host buffers of a shard for CUDA buckets (Client.staging()).
    """

    def __init__(self, client: Client, group: Any, *, timeout: Optional[float] = None,
                 record: bool = False, per_bucket: bool = False) -> None:
        super().__init__(client, timeout=timeout, record=record, per_bucket=per_bucket)
        self.group = group
        self.local_rank = dist.get_rank(group)
        self.local_world = dist.get_world_size(group)
        if self.local_rank < 0:
            raise ValueError("HierState: this process is not in the node's group")
        self._capacity = client.elements * self.local_world
        self._next = client.next_round
        self._node = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="georeduce-node")
        # Gloo in torch 1.13 has no reduce-scatter: an AllReduce inside the node instead
        # (the same sums; each rank then keeps its shard).
        self._scatter = dist.get_backend(group) == "nccl"

    def _take(self, want: torch.dtype, device: torch.device) -> torch.Tensor:
        with self._lock:
            flat = next((t for t in self._free if t.dtype == want and t.device == device),
                        None)
            if flat is not None:
                self._free.remove(flat)
        if flat is None:
            flat = torch.zeros(self._capacity, dtype=want, device=device)
        return flat

    def _give(self, flat: torch.Tensor, ready: Any) -> None:
        with self._lock:  # a CUDA one is reused on the same stream, in its order
            self._free.append(flat)

    def _send(self, b: "_Batch") -> Tuple["concurrent.futures.Future[int]", int]:
        rnd, self._next = self._next, (self._next + 1) & 0xFFFFFFFF
        return self._node.submit(self._node_round, b, rnd), rnd

    def _node_round(self, b: "_Batch", rnd: int) -> int:
        """Reduce-scatter inside the node, this rank's shard through the gateways (the
        average over the nodes, then divided by the local world size), all-gather inside
        the node. The batch is padded with zeros to a multiple of the local world size."""
        n, size, me = b.at, self.local_world, self.local_rank
        shard = -(-n // size)
        with b.on_stream():
            x = b.flat[:shard * size]
            x[n:].zero_()
            parts = list(x.split(shard))
            mine = parts[me]
            if size > 1 and self._scatter:
                got = torch.empty_like(mine)
                dist.reduce_scatter(got, parts, group=self.group)
                mine.copy_(got)
            elif size > 1:
                dist.all_reduce(x, group=self.group)
            contributors = self.client.allreduce(mine, rnd, average=True,
                                                 timeout=self.timeout)
            if size > 1:
                mine.div_(size)
                dist.all_gather(parts, mine.clone(), group=self.group)
        return contributors

    def close(self) -> None:
        """Finish the rounds asked for and stop the node's thread (not the client)."""
        self._node.shutdown(wait=True)


@dataclass
class _Part:
    """A bucket in a batch: its place in the staging tensor and where its result goes."""

    send: torch.Tensor
    out: torch.Tensor
    fut: "torch.futures.Future[torch.Tensor]"
    offset: int
    index: int
    step: int
    submitted: float


@dataclass
class _Batch:
    """Buckets packed into one staging tensor, reduced in one round."""

    flat: torch.Tensor
    parts: List[_Part]
    device: torch.device
    stream: Any = None  # CUDA buckets: the stream their copies are queued on
    copied: Any = None  # ... and a torch.cuda.Event after the latest copy in
    at: int = 0

    def on_stream(self) -> ContextManager[Any]:
        """The batch's CUDA stream made current (nothing for CPU buckets)."""
        if self.stream is None:
            return contextlib.nullcontext()
        return torch.cuda.stream(self.stream)


def _torch_dtype(d: DType) -> torch.dtype:
    if d.torch is None:
        raise TypeError("the job's dtype %s has no torch counterpart" % d.name)
    return getattr(torch, d.torch)


def _record(state: HookState, p: _Part, elements: int, rnd: int, contributors: int) -> None:
    tm = next((t for t in reversed(state.client.timings) if t.round == rnd), None)
    with state._lock:
        state.records.append(BucketRecord(
            p.step, p.index, rnd, elements, state.client.dtype.name, p.submitted,
            tm.started if tm else p.submitted, tm.in_library if tm else 0.0,
            tm.finished if tm else p.submitted, time.perf_counter(), contributors,
            state.client.epoch))


def _flush(state: HookState) -> None:
    """Reduce the waiting batch in one round (averaged), in the client's thread; then
    each bucket's result goes into its output and its future is completed."""
    b, state._batch = state._batch, None
    if b is None:
        return
    try:
        cf, rnd = state._send(b)
    except BaseException as e:
        state._give(b.flat, b.copied)
        for p in b.parts:
            p.fut.set_exception(e)
        raise

    def done(f: Any) -> None:
        back = b.copied
        try:
            contributors = f.result()
            with b.on_stream():  # CUDA: copies back queued on the buckets' stream
                for p in b.parts:
                    n = p.send.numel()
                    part = b.flat[p.offset:p.offset + n]
                    if b.stream is not None:  # to the device as it is, cast there
                        part = part.to(p.out.device, non_blocking=True)
                    p.out.view(-1).copy_(part)
                    if state.record:
                        _record(state, p, n, rnd, contributors)
                if b.stream is not None:
                    back = torch.cuda.Event()
                    back.record(b.stream)
                    # A CUDA-aware future records its own event on the current stream,
                    # after the copies back, for the stream that waits on it.
                    for p in b.parts:
                        p.fut.set_result(p.out)
        except BaseException as e:  # the backward pass raises it from DDP's wait
            for p in b.parts:
                if not p.fut.done():
                    p.fut.set_exception(e)
            return
        finally:
            state._give(b.flat, back)
        for p in b.parts:
            if not p.fut.done():
                p.fut.set_result(p.out)

    cf.add_done_callback(done)


def _reduce(state: HookState, bucket: dist.GradBucket, want: torch.dtype
            ) -> torch.futures.Future[torch.Tensor]:
    """Average the bucket, sent as `want`, over the job's workers with the step's other
    buckets (one round per step, or per bucket with per_bucket), in place; a future of
    the bucket. The copy into the staging tensor casts, and so does the copy back."""
    buf = bucket.buffer()
    send, out = buf, buf
    n, cap = send.numel(), state._capacity
    if n > cap:
        raise ValueError("a bucket of %d elements: the job's tensor has %d, and a bucket may "
                         "have no more" % (n, cap))
    cuda = buf.device.type == "cuda"
    fut: torch.futures.Future[torch.Tensor] = (
        torch.futures.Future(devices=[buf.device]) if cuda else torch.futures.Future())
    b = state._batch
    if b is not None and (b.at + n > cap or b.flat.dtype != want or b.device != buf.device
                          or (cuda and b.stream != torch.cuda.current_stream(buf.device))):
        _flush(state)  # it does not fit: the waiting buckets go in a round of their own
        b = None
    if b is None:
        b = state._batch = _Batch(state._take(want, buf.device), [], buf.device)
        if cuda:
            b.stream = torch.cuda.current_stream(buf.device)
    if not cuda:
        b.flat[b.at:b.at + n].copy_(send.view(-1))
    else:  # queued on the bucket's stream, overlapping the backward pass and other rounds
        with b.on_stream():
            b.flat[b.at:b.at + n].copy_(send.view(-1).to(want), non_blocking=True)
            b.copied = torch.cuda.Event()
            b.copied.record(b.stream)
    b.parts.append(_Part(send, out, fut, b.at, bucket.index(), state.step,
                         time.perf_counter()))
    b.at += n
    if bucket.is_last():
        state.step += 1
    if bucket.is_last() or state.per_bucket:
        _flush(state)
    return fut


def ddp_comm_hook(state: HookState, bucket: dist.GradBucket
                  ) -> torch.futures.Future[torch.Tensor]:
    """Average the bucket over the job's workers through the gateways, in the job's dtype.

    The bucket goes through the step's staging tensor (in the job's dtype) and its result
    back into it: of another dtype (fp32 gradients and an fp16 or bf16 job), it is cast on
    the way in and out, as the compression hooks do. An MX job (mxint8, mxfp8,
    mxfp4) takes fp32 buckets in place: libgeoreduce quantises them on the wire.
    """
    return _reduce(state, bucket, _torch_dtype(state.client.dtype))


def _compress_hook(name: str, dtype: str) -> Callable[..., Any]:
    def hook(state: HookState, bucket: dist.GradBucket
             ) -> torch.futures.Future[torch.Tensor]:
        if state.client.dtype.name != dtype:
            raise ValueError("%s: the job's dtype is %s; this hook needs a job of %s (its "
                             "table's dtype)" % (name, state.client.dtype.name, dtype))
        return _reduce(state, bucket, _torch_dtype(state.client.dtype))

    # Not torch's own names: DistributedDataParallel refuses a hook called
    # bf16_compress_hook without CUDA and NCCL, which this one does not need.
    hook.__name__ = hook.__qualname__ = "georeduce_" + name
    hook.__doc__ = (
        "Send the bucket as %s, as torch's %s does: the gateways sum it in fp32 and round "
        "the sum once per chunk to %s; it is divided by each chunk's contributor count "
        "and cast back into the bucket. The job's dtype must be %s." % (
            dtype, name, dtype, dtype))
    return hook


fp16_compress_hook = _compress_hook("fp16_compress_hook", "fp16")
bf16_compress_hook = _compress_hook("bf16_compress_hook", "bf16")


def mx_compress_hook(state: HookState, bucket: dist.GradBucket
                     ) -> torch.futures.Future[torch.Tensor]:
    """Send the bucket as OCP microscaling blocks (the job's mxint8, mxfp8 or mxfp4), as
    fp16_compress_hook sends fp16: libgeoreduce encodes each chunk of the fp32 bucket (or,
    with the table's lan_dtype, sends it to the gateway in fp32 or bf16), the gateways sum
    in fp32 and encode once per hop, and the decoded sum, divided by each chunk's
    contributor count, lands in the bucket in place. A bucket of another float dtype is
    cast to fp32 and back. The job's dtype must be an MX one.
    """
    d = state.client.dtype
    if d.wire != "mx":
        raise ValueError("mx_compress_hook: the job's dtype is %s; this hook needs a job of "
                         "mxint8, mxfp8 or mxfp4 (its table's dtype)" % d.name)
    buf = bucket.buffer()
    if not buf.is_floating_point():
        raise TypeError("mx_compress_hook: a bucket of %s, not floating point" % buf.dtype)
    return _reduce(state, bucket, torch.float32)


def hierarchical_hook(state: HierState, bucket: dist.GradBucket
                      ) -> torch.futures.Future[torch.Tensor]:
    """Average the bucket over every rank of every node: summed inside the node over
    state.group (reduce-scatter), each local rank's shard averaged over the nodes through
    the gateways in its own job, then gathered inside the node (all-gather). A node sends
    its gradient to the gateways once, in shards, one per local rank.

    As ddp_comm_hook: the bucket goes through the step's staging tensor in the job's dtype
    (fp32 for an MX job, which libgeoreduce encodes), and its result back into it.
    """
    if not isinstance(state, HierState):
        raise TypeError("hierarchical_hook: the state is a %s; it needs a HierState (the "
                        "node's process group)" % type(state).__name__)
    d = state.client.dtype
    return _reduce(state, bucket, torch.float32 if d.wire == "mx" else _torch_dtype(d))
