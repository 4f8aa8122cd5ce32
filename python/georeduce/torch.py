# SPDX-License-Identifier: BSD-3-Clause
"""DistributedDataParallel communication hooks that reduce gradients through georeduce.

    import georeduce, georeduce.torch
    client = georeduce.Client.from_table("gw-a.json", worker_id=11)
    state = georeduce.torch.HookState(client)
    ddp.register_comm_hook(state, georeduce.torch.ddp_comm_hook)

Each gradient bucket is one AllReduce round through the gateways, in the order DDP hands
the buckets over (bucket 0 first, every step), so every worker gives the same bucket the
same round. The hook returns a torch.futures.Future at once and the client's thread
completes it when the results are in, so the transfer overlaps the rest of the backward
pass, as DDP's own hooks do. The result is the sum divided, chunk by chunk, by the number
of workers it holds: in a partial reduce (a CREW job) each chunk's own count. A bucket cut
by a re-plan runs again under the new epoch (georeduce.Client, follow=True).

The hooks' annotations are exactly those DistributedDataParallel.register_comm_hook()
checks (dist.GradBucket, torch.futures.Future[torch.Tensor]).
"""
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, List, Optional

import torch
import torch.distributed as dist

from .client import Client
from .dtypes import DType

__all__ = ["BucketRecord", "HookState", "bf16_compress_hook", "ddp_comm_hook",
           "fp16_compress_hook", "mx_compress_hook"]


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
        timeout: seconds per bucket (None: the client's).
        record: keep a BucketRecord per bucket in `records`.
    """

    def __init__(self, client: Client, *, timeout: Optional[float] = None,
                 record: bool = False) -> None:
        self.client = client
        self.timeout = timeout
        self.step = 0
        self.record = record
        self.records: List[BucketRecord] = []
        self._lock = threading.Lock()


def _torch_dtype(d: DType) -> torch.dtype:
    if d.torch is None:
        raise TypeError("the job's dtype %s has no torch counterpart" % d.name)
    return getattr(torch, d.torch)


def _reduce(state: HookState, bucket: dist.GradBucket, send: torch.Tensor, out: torch.Tensor
            ) -> torch.futures.Future[torch.Tensor]:
    """AllReduce send (averaged) in the client's thread; copy it into out if they differ;
    a future of out."""
    fut: torch.futures.Future[torch.Tensor] = torch.futures.Future()
    step, index = state.step, bucket.index()
    rnd = state.client.next_round
    submitted = time.perf_counter()
    cf = state.client.allreduce_async(send, average=True, timeout=state.timeout)
    if bucket.is_last():
        state.step += 1

    def done(f: Any) -> None:
        try:
            contributors = f.result()
            if send is not out:
                out.copy_(send)
            if state.record:
                tm = next((t for t in reversed(state.client.timings) if t.round == rnd), None)
                with state._lock:
                    state.records.append(BucketRecord(
                        step, index, rnd, send.numel(), state.client.dtype.name, submitted,
                        tm.started if tm else submitted, tm.in_library if tm else 0.0,
                        tm.finished if tm else submitted, time.perf_counter(), contributors,
                        state.client.epoch))
            fut.set_result(out)
        except BaseException as e:  # the backward pass raises it from DDP's wait
            fut.set_exception(e)

    cf.add_done_callback(done)
    return fut


def ddp_comm_hook(state: HookState, bucket: dist.GradBucket
                  ) -> torch.futures.Future[torch.Tensor]:
    """Average the bucket over the job's workers through the gateways, in the job's dtype.

    A bucket of the job's dtype is reduced in place, without a copy. Of another dtype
    (fp32 gradients and an fp16 or bf16 job), it is cast to the job's dtype, reduced, and
    cast back into the bucket, as the compression hooks do. An MX job (mxint8, mxfp8,
    mxfp4) takes fp32 buckets in place: libgeoreduce quantises them on the wire.
    """
    buf = bucket.buffer()
    want = _torch_dtype(state.client.dtype)
    if buf.dtype == want:
        return _reduce(state, bucket, buf, buf)
    return _reduce(state, bucket, buf.to(want), buf)


def _compress_hook(name: str, dtype: str) -> Callable[..., Any]:
    def hook(state: HookState, bucket: dist.GradBucket
             ) -> torch.futures.Future[torch.Tensor]:
        if state.client.dtype.name != dtype:
            raise ValueError("%s: the job's dtype is %s; this hook needs a job of %s (its "
                             "table's dtype)" % (name, state.client.dtype.name, dtype))
        buf = bucket.buffer()
        want = _torch_dtype(state.client.dtype)
        return _reduce(state, bucket, buf.to(want), buf)

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
    if buf.dtype == torch.float32:
        return _reduce(state, bucket, buf, buf)
    return _reduce(state, bucket, buf.to(torch.float32), buf)
