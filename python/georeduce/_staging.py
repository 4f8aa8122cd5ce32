# SPDX-License-Identifier: BSD-3-Clause
"""CUDA tensors through pinned host memory: the copies on the tensor's own CUDA stream,
ordered by events, and the pinned buffers kept for the next call of the same size.

libgeoreduce reads and writes host memory, so a CUDA tensor is reduced in a page-locked
(pinned) host buffer: copied there asynchronously on the stream that is current for the
tensor's device when the call is made, an event recorded after the copy, the client's
thread waiting on that event alone (never on the whole device) before the library
reads the buffer; the result copied back asynchronously, on the same stream, after
which another event says when the buffer may be reused. Work the caller queues on that
stream later is ordered after the copy back; a caller on another stream waits for the
stream (torch.cuda.Stream.wait_stream) or, in the DDP hooks, for the future's value,
whose CUDA-aware torch.futures.Future makes the waiting stream wait.

Used by georeduce.Client (for a CUDA tensor) and georeduce.torch (for CUDA buckets), in
the caller's thread (copy in) and the client's thread (wait, copy back). Imports torch
only when a CUDA tensor is met: georeduce itself does not need torch.
"""
from __future__ import annotations

import collections
import threading
from typing import Any, Callable, Dict, List, Tuple

#: Idle pinned buffers a pool keeps, all sizes together (the oldest idle one is freed when
#: one more is given back). Buffers in a call are not counted: one per call in flight.
KEEP = 4

Key = Tuple[str, int]  # (dtype name, elements)


class Pool:
    """Host buffers by dtype and length, allocated once and reused, at most `keep` idle.

    alloc(elements, dtype) makes a buffer (torch.empty(..., pin_memory=True) for CUDA
    staging). A buffer given back carries `ready`, an object with synchronize() (a
    torch.cuda.Event recorded after the last copy out of the buffer) or None; take()
    waits on it before handing the buffer out again, so a buffer is never written while
    a copy out of it may still run. Thread-safe.
    """

    def __init__(self, alloc: Callable[[int, Any], Any], keep: int = KEEP) -> None:
        if keep < 0:
            raise ValueError("keep %r: must be >= 0" % (keep,))
        self._alloc = alloc
        self.keep = keep
        self._idle: "collections.OrderedDict[int, Tuple[Key, Any, Any]]" = \
            collections.OrderedDict()  # id -> (key, buffer, ready), oldest first
        self._lock = threading.Lock()
        self._seq = 0
        self.allocated = 0  # buffers allocated so far
        self.freed = 0      # idle buffers dropped for the bound

    @staticmethod
    def key(elements: int, dtype: Any) -> Key:
        return (str(dtype), int(elements))

    def take(self, elements: int, dtype: Any) -> Any:
        """An idle buffer of that dtype and length (the most recently given back), or a
        new one."""
        k = self.key(elements, dtype)
        got = None
        with self._lock:
            for i in reversed(self._idle):
                if self._idle[i][0] == k:
                    got = self._idle.pop(i)
                    break
            if got is None:
                self.allocated += 1
        if got is None:
            return self._alloc(elements, dtype)
        if got[2] is not None:
            got[2].synchronize()  # the last copy out of it is done
        return got[1]

    def give(self, buf: Any, ready: Any = None) -> None:
        """Give a buffer back for reuse once `ready` (None: at once) has happened."""
        k = self.key(buf.numel(), buf.dtype)
        with self._lock:
            self._seq += 1
            self._idle[self._seq] = (k, buf, ready)
            while len(self._idle) > self.keep:
                self._idle.popitem(last=False)
                self.freed += 1

    def idle(self) -> List[Key]:
        """The idle buffers' keys, oldest first."""
        with self._lock:
            return [v[0] for v in self._idle.values()]

    def stats(self) -> Dict[str, int]:
        """allocated and freed (counts so far), idle buffers and their bytes now."""
        with self._lock:
            return {"allocated": self.allocated, "freed": self.freed,
                    "idle": len(self._idle),
                    "idle_bytes": sum(v[1].numel() * v[1].element_size()
                                      for v in self._idle.values())}


def pinned(elements: int, dtype: Any) -> Any:
    """A page-locked host tensor (needs a CUDA build of torch with a device)."""
    import torch

    return torch.empty(int(elements), dtype=dtype, pin_memory=True)


def is_cuda(t: Any) -> bool:
    return getattr(getattr(t, "device", None), "type", None) == "cuda"


class Staged:
    """One CUDA tensor staged in a pinned host buffer for a call.

    Made in the caller's thread: the device-to-host copy is queued on the tensor's
    current stream, and an event after it. wait() (client's thread) waits on that event
    alone; back() queues the copy into the tensor on the same stream and gives the buffer
    back to its pool with an event after the copy.
    """

    __slots__ = ("tensor", "host", "stream", "copied", "pool")

    def __init__(self, tensor: Any, pool: Pool) -> None:
        import torch

        self.tensor = tensor
        self.pool = pool
        self.stream = torch.cuda.current_stream(tensor.device)
        self.host = pool.take(tensor.numel(), tensor.dtype)
        with torch.cuda.stream(self.stream):
            self.host.copy_(tensor.reshape(-1), non_blocking=True)
            self.copied = torch.cuda.Event()
            self.copied.record(self.stream)

    def wait(self) -> None:
        self.copied.synchronize()

    def back(self, write: bool = True) -> None:
        """Copy the result into the tensor (write=False: a failed call, nothing to copy)
        and give the buffer back."""
        import torch

        with torch.cuda.stream(self.stream):
            if write:
                self.tensor.view(-1).copy_(self.host, non_blocking=True)
            done = torch.cuda.Event()
            done.record(self.stream)
        self.pool.give(self.host, done)
        self.host = None
