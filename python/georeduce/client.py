# SPDX-License-Identifier: BSD-3-Clause
"""georeduce.Client: one worker of a job, over libgeoreduce (docs/PYTHON.md)."""
from __future__ import annotations

import abc
import collections
import concurrent.futures
import ctypes
import errno as _errno
import ipaddress
import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Deque, Dict, Optional, Tuple

from . import _lib, _staging
from .dtypes import DType, RAW_FORMATS, by_code

_U32 = 0xFFFFFFFF
FOLLOW_RUNS_MAX = 16  # runs of one call across re-plans (georeduce-worker --follow's)
FOLLOW_STALL_S = 2.0  # a call stops for a new epoch only after this long without a result


class GeoreduceError(Exception):
    """A failure of libgeoreduce; `errno` is the error's number (0 if none applies)."""

    def __init__(self, message: str, errno: int = 0) -> None:
        super().__init__(message)
        self.errno = errno


class ConfigError(GeoreduceError, ValueError):
    """A table (or another configuration source) that cannot be used."""


class AllreduceTimeout(GeoreduceError, TimeoutError):
    """A result was still missing when the call's time was up."""


# --- Configuration -----------------------------------------------------------------------


@dataclass(frozen=True)
class Tree:
    """One tree of the job as this worker's gateway carries it."""

    id: int
    chunk_first: int
    chunk_count: int
    slots: int
    window: int


@dataclass(frozen=True)
class Config:
    """A snapshot of the client's configuration (struct gr_config, docs/CLIENT.md)."""

    job: int
    epoch: int
    dtype: DType
    elements: int
    chunk_elements: int
    worker_id: int
    worker_address: str
    worker_port: int
    gateway_id: int
    gateway_address: str
    gateway_base_port: int
    gateway_ports: int
    trees: Tuple[Tree, ...]
    cset_blocks: int
    lan_dtype: Optional[DType] = None   # an MX job's CONTRIBs to the gateway (fp32, bf16)

    @property
    def chunks(self) -> int:
        """Chunks of the job's tensor."""
        return -(-self.elements // self.chunk_elements)

    @staticmethod
    def from_c(c: _lib.GrConfig) -> "Config":
        return Config(
            job=c.job, epoch=c.epoch, dtype=by_code(c.dtype), elements=c.elements,
            chunk_elements=c.chunk_elements, worker_id=c.worker_id,
            worker_address=str(ipaddress.IPv4Address(c.worker_ipv4)),
            worker_port=c.worker_port, gateway_id=c.gateway_id,
            gateway_address=str(ipaddress.IPv4Address(c.gateway_ipv4)),
            gateway_base_port=c.gateway_base_port, gateway_ports=c.gateway_ports,
            trees=tuple(Tree(t.id, t.chunk_first, t.chunk_count, t.slots, t.window)
                        for t in c.trees[:c.n_trees]),
            cset_blocks=c.cset_blocks,
            lan_dtype=by_code(c.lan_dtype) if c.lan_dtype not in (0, c.dtype) else None)


class ConfigSource(abc.ABC):
    """Where a client's configuration comes from, and whether a newer one is there.

    A client asks its source for a configuration when it is created, and, when it follows
    re-plans, asks whether the source changed before each call and while a call waits for
    a new epoch. A table file is one such source; a control endpoint is another.
    """

    #: The source can change while the client runs (a re-plan): the client then keeps a
    #: copy of each tensor's input, to run a call again under a new epoch.
    dynamic: bool = False

    @abc.abstractmethod
    def load(self, worker_id: int) -> _lib.GrConfig:
        """The current configuration of worker_id; ConfigError if there is none."""

    def changed(self) -> bool:
        """Whether load() may now give something else than it last did (cheap: asked
        between calls, and every 200 ms while a call waits)."""
        return False

    def changed_during_call(self) -> bool:
        """changed(), asked while a call waits: a yes stops the call at once (it runs
        again under the new epoch) instead of at its timeout. Must not block."""
        return self.changed()

    def wait_changed(self, seconds: float) -> None:
        """Return once changed() may say yes, or after seconds."""
        until = time.monotonic() + seconds
        while not self.changed() and time.monotonic() < until:
            time.sleep(0.05)

    def close(self) -> None:
        """Release what the source holds (the client closes its source)."""

    @abc.abstractmethod
    def describe(self) -> str:
        """A few words naming the source, for messages."""


def _err_buf() -> Any:
    return ctypes.create_string_buffer(_lib.ERR_MAX)


class TableFile(ConfigSource):
    """A georeduce-table/1 file of this worker's gateway (docs/TABLES.md).

    The control process rewrites the file when it installs a new epoch; a change of the
    file's inode, size or modification time counts as a change.
    """

    dynamic = True

    def __init__(self, path: "os.PathLike[str] | str") -> None:
        self.path = os.fspath(path)
        self._stamp: Optional[Tuple[int, int, int]] = None
        self._failed: Optional[Tuple[int, int, int]] = None  # a version that did not load

    def _stat(self) -> Optional[Tuple[int, int, int]]:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def load(self, worker_id: int) -> _lib.GrConfig:
        stamp = self._stat()
        cfg = _lib.GrConfig()
        err = _err_buf()
        rc = _lib.lib().gr_config_from_table(ctypes.byref(cfg), os.fsencode(self.path),
                                             worker_id, err, _lib.ERR_MAX)
        if rc < 0:
            self._failed = stamp
            raise ConfigError(err.value.decode(errors="replace"), -rc)
        self._stamp = stamp
        return cfg

    def changed(self) -> bool:
        st = self._stat()
        return st != self._stamp and st != self._failed

    def describe(self) -> str:
        return self.path


class TableString(ConfigSource):
    """A georeduce-table/1 document held in memory (it never changes)."""

    def __init__(self, json: str) -> None:
        self.json = json

    def load(self, worker_id: int) -> _lib.GrConfig:
        cfg = _lib.GrConfig()
        err = _err_buf()
        rc = _lib.lib().gr_config_from_table_string(ctypes.byref(cfg), self.json.encode(),
                                                    worker_id, err, _lib.ERR_MAX)
        if rc < 0:
            raise ConfigError(err.value.decode(errors="replace"), -rc)
        return cfg

    def describe(self) -> str:
        return "a table string"


class ControlSource(ConfigSource):
    """The worker's configuration from the control process (libgeoreduce's gr_join_*,
    docs/CLIENT.md "Joining through the control process"): TLS 1.3 with the worker's
    certificate to tls://HOST:PORT, or the control process's unix socket path. Each new
    epoch the control process installs for the job is learnt by asking it (a long poll
    while a call waits for one).

    Args:
        control: "tls://HOST:PORT" or a unix socket path.
        job: the job id.
        cert, key, ca: for tls://, the worker's certificate and key and the deployment's CA.
        crl: for tls://, the CA's CRL (optional): a revoked control certificate is refused.
        server_name: the name the control process's certificate carries (None: "control").
        timeout: seconds to wait for a live epoch when loading, and for connecting.
    """

    dynamic = True

    def __init__(self, control: str, job: int, *, cert: Optional[str] = None,
                 key: Optional[str] = None, ca: Optional[str] = None,
                 server_name: Optional[str] = None, timeout: float = 60.0,
                 crl: Optional[str] = None) -> None:
        if not 0 <= job <= _U32:
            raise ValueError("job %r: 0 .. 2^32 - 1" % (job,))
        if not timeout > 0:
            raise ValueError("timeout %r: must be > 0 seconds" % (timeout,))
        self.control, self.job, self.timeout = control, job, float(timeout)
        self._strings = [None if v is None else os.fsencode(v)
                         for v in (control, cert, key, ca, server_name, crl)]
        self._join: Optional[int] = None
        self._epoch: Optional[int] = None
        self._pending: Optional[_lib.GrConfig] = None
        self._away_until = 0.0      # the control process did not answer: ask after this

    def _open(self, worker_id: int) -> int:
        if self._join is None:
            ctl, cert, key, ca, name, crl = self._strings
            o = _lib.GrJoinOpts(control=ctl, cert=cert, key=key, ca=ca, server_name=name,
                                job=self.job, worker_id=worker_id,
                                timeout_ms=int(min(self.timeout, 10.0) * 1000), crl=crl)
            err = _err_buf()
            j = _lib.lib().gr_join_open(ctypes.byref(o), err, _lib.ERR_MAX)
            if not j:
                raise ConfigError(err.value.decode(errors="replace"), ctypes.get_errno())
            self._join = j
        return self._join

    def load(self, worker_id: int) -> _lib.GrConfig:
        j = self._open(worker_id)
        if self._pending is not None:
            cfg, self._pending = self._pending, None
        else:
            cfg = _lib.GrConfig()
            err = _err_buf()
            rc = _lib.lib().gr_join_config(j, ctypes.byref(cfg), int(self.timeout * 1000),
                                           err, _lib.ERR_MAX)
            if rc < 0:
                raise ConfigError(err.value.decode(errors="replace"), -rc)
        self._epoch = cfg.epoch
        return cfg

    def _ask(self, wait_ms: int) -> bool:
        if self._pending is not None:
            return True
        if self._join is None or self._epoch is None or time.monotonic() < self._away_until:
            return False
        cfg = _lib.GrConfig()
        err = _err_buf()
        rc = _lib.lib().gr_join_wait(self._join, self._epoch, wait_ms, ctypes.byref(cfg),
                                     err, _lib.ERR_MAX)
        if rc < 0:
            # Away (restarting): the gateways keep the live epoch; go on with it, and
            # ask again in a while, never while a call waits on a reconnect.
            self._away_until = time.monotonic() + 1.0
            return False
        if rc == 1:
            self._pending = cfg
        return rc == 1

    def changed(self) -> bool:
        return self._ask(0)

    def changed_during_call(self) -> bool:
        return self._pending is not None or (time.monotonic() >= self._away_until and
                                             self._ask(0))

    def wait_changed(self, seconds: float) -> None:
        until = time.monotonic() + seconds
        while True:
            left = until - time.monotonic()
            if left <= 0 or self._ask(int(min(left, _lib.JOIN_WAIT_MAX_MS / 1000) * 1000)):
                return
            if time.monotonic() < self._away_until:
                time.sleep(min(max(left, 0), 0.2))

    def reload_tls(self) -> str:
        """Read the certificate, key, CA and CRL files again for the next connection to
        the control process (the open one keeps its session). Returns one line on the
        certificate now in use; raises ConfigError naming the file at fault, and the
        files loaded before stay in use. Call it from the thread that uses this source
        (a SIGHUP handler should only set a flag)."""
        if self._join is None:
            return "not connected: the files are read when it connects"
        err = _err_buf()
        rc = _lib.lib().gr_join_reload_tls(self._join, err, _lib.ERR_MAX)
        if rc < 0:
            raise ConfigError(err.value.decode(errors="replace"), -rc)
        return err.value.decode(errors="replace")

    def close(self) -> None:
        j, self._join = self._join, None
        if j is not None:
            _lib.lib().gr_join_close(j)

    def describe(self) -> str:
        return "%s (job %d)" % (self.control, self.job)


# --- Tensors -------------------------------------------------------------------------------


class _Region:
    """The memory of one tensor or buffer: address, elements, and what keeps it alive."""

    __slots__ = ("ptr", "elements", "nbytes", "keep", "_release")

    def __init__(self, ptr: int, elements: int, nbytes: int, keep: Any,
                 release: Optional[Callable[[], None]] = None) -> None:
        self.ptr, self.elements, self.nbytes, self.keep = ptr, elements, nbytes, keep
        self._release = release

    def release(self) -> None:
        if self._release is not None:
            self._release()
            self._release = None
        self.keep = None


def _is_torch_tensor(obj: Any) -> bool:
    return type(obj).__module__.startswith("torch") and hasattr(obj, "data_ptr") and \
        hasattr(obj, "is_contiguous")


def _torch_check(t: Any, dtype: DType) -> None:
    if str(t.layout) != "torch.strided":
        raise ValueError("a %s tensor: georeduce reduces dense (strided) tensors" % t.layout)
    if t.device.type not in ("cpu", "cuda"):
        raise ValueError("a tensor on %s: georeduce reduces CPU and CUDA tensors (copy it "
                         "with .cpu(), and the result back)" % t.device)
    name = str(t.dtype).rsplit(".", 1)[-1]
    if name != dtype.torch:
        raise TypeError("a tensor of %s: the job's dtype is %s (torch.%s)" % (
            t.dtype, dtype.name, dtype.torch))
    if t.requires_grad:
        raise ValueError("a tensor that requires grad: an in-place reduction would bypass "
                         "autograd; pass tensor.detach() (the same memory)")
    if not t.is_contiguous():
        raise ValueError("a non-contiguous tensor (shape %s, stride %s): pass "
                         "tensor.contiguous() and copy the result back" % (
                             tuple(t.shape), tuple(t.stride())))


def _torch_region(t: Any, dtype: DType) -> _Region:
    _torch_check(t, dtype)
    n = t.numel()
    # data_ptr() is the address of the first element (storage offset included); the
    # tensor, kept referenced until the call ends, keeps its storage alive.
    return _Region(t.data_ptr(), n, n * dtype.size, t)


def _buffer_region(obj: Any, dtype: DType) -> _Region:
    try:
        mv = memoryview(obj)
    except TypeError:
        raise TypeError("a %s: georeduce takes a CPU torch tensor or an object with the "
                        "buffer protocol (numpy array, bytearray, array.array)" %
                        type(obj).__name__) from None
    try:
        if mv.readonly:
            raise TypeError("a read-only buffer (%s): the result is written in place; pass "
                            "a writable one" % type(obj).__name__)
        if not mv.c_contiguous:
            raise ValueError("a non-contiguous buffer (shape %s, strides %s): pass a "
                             "C-contiguous one" % (mv.shape, mv.strides))
        fmt = mv.format
        if fmt[:1] in (">", "!"):
            raise TypeError("a big-endian buffer (format %r): elements are little-endian"
                            % fmt)
        fmt = fmt.lstrip("@=<")
        if fmt in RAW_FORMATS:
            if mv.nbytes % dtype.size != 0:
                raise ValueError("%d bytes: not a whole number of %s elements (%d bytes "
                                 "each)" % (mv.nbytes, dtype.name, dtype.size))
        elif fmt not in dtype.formats or mv.itemsize != dtype.size:
            raise TypeError("a buffer of format %r: the job's dtype %s takes %s" % (
                mv.format, dtype.name, " or ".join(
                    ["format %r" % f for f in dtype.formats] + ["raw bytes"])))
        flat = mv.cast("B")
    except BaseException:
        mv.release()
        raise
    raw = (ctypes.c_char * flat.nbytes).from_buffer(flat) if flat.nbytes else None

    def release() -> None:
        nonlocal raw
        raw = None
        flat.release()
        mv.release()

    ptr = ctypes.addressof(raw) if raw is not None else 0
    return _Region(ptr, flat.nbytes // dtype.size, flat.nbytes, raw, release)


def _region(obj: Any, dtype: DType, elements: int, pool: Callable[[], Any]
            ) -> Tuple[_Region, Optional[_staging.Staged]]:
    """The memory the library reduces, and for a CUDA tensor its staging (its pinned host
    buffer from pool(), the copy to it queued on the tensor's stream)."""
    staged = None
    if _is_torch_tensor(obj) and _staging.is_cuda(obj):
        _torch_check(obj, dtype)
        if obj.numel() == 0:
            raise ValueError("an empty tensor: nothing to reduce")
        if obj.numel() > elements:  # refused before anything is copied
            raise ValueError("a tensor of %d elements: the job's tensor has %d, and a tensor "
                             "may have no more" % (obj.numel(), elements))
        staged = _staging.Staged(obj, pool())
        obj = staged.host
    r = _torch_region(obj, dtype) if _is_torch_tensor(obj) else _buffer_region(obj, dtype)
    if r.elements == 0:
        r.release()
        raise ValueError("an empty tensor: nothing to reduce")
    return r, staged


# --- The client ----------------------------------------------------------------------------


@dataclass(frozen=True)
class CallTiming:
    """Where the time of one call went (time.perf_counter() seconds): asked for, taken up
    by the client's thread, inside libgeoreduce (every gr_allreduce() of the call, also a
    run again after a re-plan), and done (its future about to be completed)."""

    round: int
    elements: int
    submitted: float
    started: float
    in_library: float   # seconds
    finished: float
    contributors: int   # or the negative errno of a failed call


class Client:
    """One worker of a georeduce job: AllReduce (sum) of tensors through its gateway.

    A client owns a UDP socket bound to the worker's address and port, and one background
    thread that makes every call, in the order they were asked for (libgeoreduce is used
    by one thread at a time). allreduce() waits for its call; allreduce_async() returns a
    concurrent.futures.Future at once. The GIL is released while a call runs.

    Tensors are reduced in place, without a copy: a contiguous CPU torch tensor of the
    job's dtype, or any writable C-contiguous object with the buffer protocol (a numpy
    array, bytearray, array.array) whose format is the dtype's (fp32 "f"; fp16 "e" or "H";
    bf16 "H") or raw bytes. A tensor may be shorter than the job's (docs/CLIENT.md). A
    contiguous CUDA tensor goes through a pinned host buffer, its copies queued on its
    stream (georeduce._staging; docs/PYTHON.md, "CUDA tensors").

    With follow=True and a source that can change (a table file), the client takes up
    every new epoch the control process installs: before each call it reloads a changed
    source, and a call that times out waits for a new epoch and runs again under it from
    its input (as georeduce-worker --follow does; docs/PYTHON.md, "Re-plans").
    """

    def __init__(self, source: ConfigSource, worker_id: int, *, first_round: int = 0,
                 timeout: float = 60.0, window: int = 0, follow: bool = True) -> None:
        """Create the client of worker_id from source.

        Args:
            source: where the configuration comes from (TableFile, TableString, ...).
            worker_id: this worker's node id, one of the gateway's local workers.
            first_round: the round of the first call that names none; every worker of the
                job must start from the same one.
            timeout: seconds a call may take (libgeoreduce's timeout_ms).
            window: chunks in flight per tree; 0: the table's.
            follow: take up new epochs of the source (see the class).

        Raises:
            ConfigError: the source has no usable configuration for worker_id.
            GeoreduceError: the socket could not be bound (errno EADDRINUSE, ...).
        """
        if not 1 <= worker_id <= 65534:
            raise ValueError("worker id %r: 1 .. 65534" % (worker_id,))
        if not timeout > 0:
            raise ValueError("timeout %r: must be > 0 seconds" % (timeout,))
        if not 0 <= window <= 65536:
            raise ValueError("window %r: 0 .. 65536" % (window,))
        self._handle: Optional[int] = None
        self._pool: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self.source = source
        self.worker_id = worker_id
        self.timeout = float(timeout)
        self.window = window
        self.follow = follow
        self._next_round = _check_round(first_round)
        self._round_lock = threading.Lock()
        self._follow_error = ""
        self._backup: Optional[ctypes.Array] = None
        self._pinned: Optional[_staging.Pool] = None  # CUDA tensors' host buffers
        #: The latest calls' timings, oldest first (at most 4096).
        self.timings: Deque[CallTiming] = collections.deque(maxlen=4096)
        self._in_library = 0.0
        lb = _lib.lib()
        cfg = source.load(worker_id)
        err = _err_buf()
        h = lb.gr_client_create(ctypes.byref(cfg), err, _lib.ERR_MAX)
        if not h:
            e = ctypes.get_errno()
            raise GeoreduceError("worker %d: %s" % (worker_id, err.value.decode(
                errors="replace")), e)
        self._handle = h
        self._config = Config.from_c(cfg)
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="georeduce-%d" % worker_id)
        # gr_options.cancel: a call that has had no result for FOLLOW_STALL_S stops as
        # soon as its source has another epoch (asked every 200 ms in the client's
        # thread, never per packet); gr_options.progress says when results last came.
        self._cancel_fn = _lib.CANCEL_FN(self._source_moved)
        self._progress_fn = _lib.PROGRESS_FN(self._on_progress)
        self._prog_done = 0
        self._prog_at = 0.0

    @classmethod
    def from_table(cls, path: "os.PathLike[str] | str", worker_id: int,
                   **kwargs: Any) -> "Client":
        """A client configured from a table file of its gateway (see __init__)."""
        return cls(TableFile(path), worker_id, **kwargs)

    @classmethod
    def from_table_string(cls, json: str, worker_id: int, **kwargs: Any) -> "Client":
        """A client configured from a table held in a string (it never changes)."""
        return cls(TableString(json), worker_id, **kwargs)

    @classmethod
    def from_control(cls, control: str, job: int, worker_id: int, *,
                     cert: Optional[str] = None, key: Optional[str] = None,
                     ca: Optional[str] = None, server_name: Optional[str] = None,
                     join_timeout: float = 60.0, crl: Optional[str] = None,
                     **kwargs: Any) -> "Client":
        """A client that joins its job through the control process (ControlSource) and
        follows each epoch it installs: "tls://HOST:PORT" with the worker's certificate,
        key and the deployment's CA (and optionally its CRL), or the control process's
        unix socket path. Waits up to join_timeout seconds for a live epoch. Other
        arguments: see __init__."""
        src = ControlSource(control, job, cert=cert, key=key, ca=ca,
                            server_name=server_name, timeout=join_timeout, crl=crl)
        try:
            return cls(src, worker_id, **kwargs)
        except BaseException:
            src.close()
            raise

    @classmethod
    def join(cls, control: str, job: int, site: str, address: str, port: int,
             **kwargs: Any) -> "Client":
        """A client that joins an elastic job without being declared in it
        (georeduce.elastic.ElasticSource; docs/PYTHON.md, "Elastic jobs"): at site `site`,
        reached at address:port, its worker id from the control process (or worker_id=,
        or id_base + RANK from torchrun's environment) and its first round from
        TORCHELASTIC_RESTART_COUNT (unless first_round= is given). It renews its
        membership while open and leaves the job when closed."""
        from .elastic import join  # the module builds on this one

        return join(cls, control, job, site, address, port, **kwargs)

    # --- state ---

    @property
    def config(self) -> Config:
        """The configuration in use (it changes with each new epoch taken up)."""
        return self._config

    @property
    def epoch(self) -> int:
        return self._config.epoch

    @property
    def dtype(self) -> DType:
        return self._config.dtype

    @property
    def elements(self) -> int:
        """Elements of the job's tensor: the longest a call may reduce."""
        return self._config.elements

    @property
    def next_round(self) -> int:
        """The round the next call that names none gets."""
        return self._next_round

    def stats(self) -> Dict[str, Any]:
        """libgeoreduce's counters and timer estimates (struct gr_stats); the per-tree
        ones (tree_windows, tree_rtt_min_us) as lists of the configuration's trees."""
        st = _lib.GrStats()
        handle = self._live()
        _lib.lib().gr_client_stats(handle, ctypes.byref(st))
        n_trees = _lib.lib().gr_client_config(handle).contents.n_trees
        out: Dict[str, Any] = {}
        for name, _ in _lib.STATS_FIELDS:
            v = getattr(st, name)
            out[name] = list(v)[:n_trees] if isinstance(v, ctypes.Array) else v
        return out

    def _live(self) -> int:
        if self._handle is None:
            raise GeoreduceError("the client is closed", _errno.EBADF)
        return self._handle

    # --- calls ---

    def allreduce(self, tensor: Any, round: Optional[int] = None, *, average: bool = False,
                  timeout: Optional[float] = None) -> int:
        """Sum tensor in place with every worker of the job.

        Args:
            tensor: a contiguous CPU or CUDA torch tensor or a writable buffer (see the
                class), of 1 to `elements` elements of the job's dtype.
            round: the AllReduce round (every worker the same for the same tensor, later
                for the next); None: the next one (first_round, then one more per call).
            average: divide each chunk by its contributor count.
            timeout: seconds for this call; None: the client's.

        Returns:
            The contributor count: the workers summed (in a partial reduce, the smallest
            count of the tensor's chunks; with average each chunk is divided by its own).

        Raises:
            TypeError, ValueError: a tensor that cannot be reduced (the message names the
                problem: dtype, device, layout, size).
            AllreduceTimeout: a result was still missing after the timeout (and, when
                following, after waiting for a new epoch).
            GeoreduceError: the socket failed, or the client is closed.
        """
        return self.allreduce_async(tensor, round, average=average, timeout=timeout).result()

    def allreduce_async(self, tensor: Any, round: Optional[int] = None, *,
                        average: bool = False, timeout: Optional[float] = None,
                        ready: Any = None) -> "concurrent.futures.Future[int]":
        """allreduce() in the client's thread: a Future of the contributor count.

        The round is taken now, so calls get their rounds in the order they are made, and
        run in that order. The tensor must not be touched until the future is done. Bad
        arguments raise here, at once; failures of the call itself come from the future.
        ready: an object whose synchronize() the client's thread calls before the call
        reads the tensor (a torch.cuda.Event recorded after an asynchronous copy into a
        pinned host tensor), or None.
        """
        if self._pool is None:
            raise GeoreduceError("the client is closed", _errno.EBADF)
        t = timeout if timeout is not None else self.timeout
        if not t > 0:
            raise ValueError("timeout %r: must be > 0 seconds" % (t,))
        region, staged = _region(tensor, self._config.dtype, self._config.elements,
                                 self._pinned_pool)
        if region.elements > self._config.elements:
            n = region.elements
            region.release()
            raise ValueError("a tensor of %d elements: the job's tensor has %d, and a tensor "
                             "may have no more" % (n, self._config.elements))
        with self._round_lock:
            r = self._next_round if round is None else _check_round(round)
            self._next_round = (r + 1) & _U32
            if staged is None and ready is None:
                fut = self._pool.submit(self._run, region, r, average, t, time.perf_counter())
            elif staged is None:
                fut = self._pool.submit(self._run_ready, ready, region, r, average, t,
                                        time.perf_counter())
            else:
                fut = self._pool.submit(self._run_staged, staged, region, r, average, t,
                                        time.perf_counter())
        return fut

    def _pinned_pool(self) -> _staging.Pool:
        if self._pinned is None:
            self._pinned = _staging.Pool(_staging.pinned)
        return self._pinned

    def staging(self) -> Dict[str, int]:
        """The pinned host buffers of CUDA calls: allocated and freed so far, idle (kept
        for the next call of the same dtype and length) and their bytes."""
        return self._pinned_pool().stats()

    def _run_ready(self, ready: Any, region: _Region, rnd: int, average: bool,
                   timeout: float, submitted: float) -> int:
        try:
            ready.synchronize()
        except BaseException:
            region.release()
            raise
        return self._run(region, rnd, average, timeout, submitted)

    def _run_staged(self, staged: _staging.Staged, region: _Region, rnd: int,
                    average: bool, timeout: float, submitted: float) -> int:
        # The copy out of the device is waited for here, by its event alone; the result
        # goes back on the tensor's stream (a failed call leaves the tensor as it was).
        ok = False
        try:
            staged.wait()
            rc = self._run(region, rnd, average, timeout, submitted)
            ok = True
            return rc
        finally:
            staged.back(ok)

    def _run(self, region: _Region, rnd: int, average: bool, timeout: float,
             submitted: float) -> int:
        started = time.perf_counter()
        self._in_library = 0.0
        rc = -_errno.EINVAL
        try:
            rc = self._run_following(region, rnd, average, timeout)
            return rc
        except GeoreduceError as e:
            rc = -e.errno
            raise
        finally:
            self.timings.append(CallTiming(rnd, region.elements, submitted, started,
                                           self._in_library, time.perf_counter(), rc))
            region.release()

    def _run_following(self, region: _Region, rnd: int, average: bool,
                       timeout: float) -> int:
        following = self.follow and self.source.dynamic
        if following:
            self._take_new_epoch()
            self._save(region)
        rc = self._call(region, rnd, average, timeout, False)
        # A gateway failed mid-round: the control process installs a new epoch without
        # it, the source changes and the call stops; the round runs again under the new
        # epoch from its input. Or the round timed out: the workers began it under two
        # epochs, and every one goes on with it under the newer one (under the same
        # epoch once, taken up where it stopped: docs/CLIENT.md, resume). A re-plan may
        # follow a re-plan: up to FOLLOW_RUNS_MAX runs, as georeduce-worker --follow.
        again, same = 0, 0
        while (following and rc in (-_errno.ETIMEDOUT, -_errno.ECANCELED)
               and again < FOLLOW_RUNS_MAX):
            ran = self._config.epoch
            if rc == -_errno.ECANCELED:
                self._take_new_epoch()
            elif not self._await_epoch(ran, same, timeout):
                break
            resume = self._config.epoch == ran
            same += resume
            if not resume:
                self._restore(region)
            rc = self._call(region, rnd, average, timeout, resume)
            again += 1
        if rc < 0:
            raise self._error(rc, rnd)
        return rc

    def _call(self, region: _Region, rnd: int, average: bool, timeout: float,
              resume: bool) -> int:
        opt = _lib.GrOptions(window=self.window, timeout_ms=max(1, int(timeout * 1000 + 0.5)),
                             average=average, resume=resume, progress_ms=200)
        if self.follow and self.source.dynamic:
            opt.cancel = self._cancel_fn
            opt.progress = self._progress_fn
            self._prog_done, self._prog_at = -1, time.monotonic()
        t = time.perf_counter()
        rc = _lib.lib().gr_allreduce(self._live(), region.ptr, region.elements,
                                     self._config.dtype.code, rnd, ctypes.byref(opt))
        self._in_library += time.perf_counter() - t
        return rc

    def _error(self, rc: int, rnd: int) -> GeoreduceError:
        msg = "worker %d round %d: %s" % (self.worker_id, rnd, _lib.lib().gr_client_error(
            self._live()).decode(errors="replace"))
        if self._follow_error:
            msg += " (and %s: %s)" % (self.source.describe(), self._follow_error)
        e = -rc
        if e == _errno.ETIMEDOUT:
            return AllreduceTimeout(msg, e)
        if e == _errno.EINVAL:
            return ArgumentError(msg, e)
        return GeoreduceError(msg, e)

    def _save(self, region: _Region) -> None:
        if self._backup is None or len(self._backup) < region.nbytes:
            self._backup = (ctypes.c_char * region.nbytes)()
        ctypes.memmove(self._backup, region.ptr, region.nbytes)

    def _restore(self, region: _Region) -> None:
        assert self._backup is not None
        ctypes.memmove(region.ptr, self._backup, region.nbytes)

    # --- re-plans ---

    def refresh(self) -> bool:
        """Take up a new epoch of the source now, between calls; True if one was taken.

        Raises ConfigError if the source changed to something unusable.
        """
        return self._pool_call(lambda: self._take_new_epoch(strict=True))

    def reconfigure(self, config: _lib.GrConfig) -> None:
        """Move the client to a new epoch's configuration (between calls)."""
        self._pool_call(lambda: self._reconfigure(config))

    def _pool_call(self, fn: Callable[[], Any]) -> Any:
        if self._pool is None:
            raise GeoreduceError("the client is closed", _errno.EBADF)
        return self._pool.submit(fn).result()

    def _reconfigure(self, cfg: _lib.GrConfig) -> None:
        err = _err_buf()
        rc = _lib.lib().gr_client_reconfigure(self._live(), ctypes.byref(cfg), err,
                                              _lib.ERR_MAX)
        if rc < 0:
            raise ConfigError("worker %d: %s" % (self.worker_id, err.value.decode(
                errors="replace")), -rc)
        self._config = Config.from_c(cfg)

    def _take_new_epoch(self, strict: bool = False) -> bool:
        """If the source changed, load it and move to its epoch (in the client's thread)."""
        if not self.source.changed():
            return False
        try:
            cfg = self.source.load(self.worker_id)
            if cfg.epoch == self._config.epoch:
                return False
            self._reconfigure(cfg)
        except ConfigError as e:
            # A table being rewritten, or one that does not fit: the client goes on
            # with what it has, and says so if a call then fails.
            self._follow_error = str(e)
            if strict:
                raise
            return False
        self._follow_error = ""
        return True

    def _on_progress(self, _arg: Any, done: int, _total: int) -> None:
        if done != self._prog_done:
            self._prog_done, self._prog_at = done, time.monotonic()

    def _source_moved(self, _arg: Any) -> int:
        # Only a call that stalled: one still getting results finishes under its epoch
        # (a re-plan for a link's measured rate leaves the old trees working), since a
        # round some workers complete under the old epoch and others run again under
        # the new one could never complete for the latter (georeduce-worker --follow).
        if time.monotonic() - self._prog_at < FOLLOW_STALL_S:
            return 0
        try:
            return 1 if self.source.changed_during_call() else 0
        except Exception:  # never raise into libgeoreduce
            return 0

    def _await_epoch(self, ran: int, same: int, timeout: float) -> bool:
        until = time.monotonic() + timeout
        while True:
            self._take_new_epoch()
            if self._config.epoch != ran or same == 0:
                return True
            left = until - time.monotonic()
            if left <= 0:
                return False
            self.source.wait_changed(left)

    # --- life ---

    def close(self) -> None:
        """Finish the calls asked for, then close the socket and free the client."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
        h, self._handle = self._handle, None
        if h is not None:
            _lib.lib().gr_client_free(h)
            self.source.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        c = self._config
        return "<georeduce.Client worker %d of job %d, epoch %d, %d x %s, %s>" % (
            self.worker_id, c.job, c.epoch, c.elements, c.dtype.name, self.source.describe())


class ArgumentError(GeoreduceError, ValueError):
    """libgeoreduce refused the call's arguments (a tensor that no longer fits the job)."""


def _check_round(r: Any) -> int:
    if isinstance(r, bool) or not isinstance(r, int) or not 0 <= r <= _U32:
        raise ValueError("round %r: an integer 0 .. 2^32 - 1" % (r,))
    return r
