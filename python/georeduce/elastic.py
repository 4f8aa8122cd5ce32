# SPDX-License-Identifier: BSD-3-Clause
"""Joining an elastic job (docs/PYTHON.md, "Elastic jobs"; docs/CONTROL.md, "Elastic
membership"): a worker that its job's object does not declare joins it through the control
process (libgeoreduce's gr_join_elastic()), which gives it a worker id and plans an epoch
with it; it renews its membership every second from a thread of its own and leaves when
closed. Client.join() builds a georeduce.Client on it, the worker id and first round
derived from torchrun's environment where it is set (torchrun_identity()).
"""
import ctypes
import os
import threading
from typing import Any, Mapping, Optional, Tuple

from . import _lib
from .client import Client, ConfigError, ControlSource, _err_buf

#: A restart of the job starts its rounds this many rounds after the previous one's first
#: (torchrun's restart count times this): a restarted worker never reuses a round number
#: that the gateways may still hold from before the restart. 2^24 rounds per run.
ROUNDS_PER_RESTART = 1 << 24


def torchrun_identity(env: Optional[Mapping[str, str]] = None,
                      id_base: Optional[int] = None) -> Tuple[Optional[int], int]:
    """(worker_id, first_round) from torchrun's environment (env: os.environ).

    - worker_id: id_base + RANK when id_base is given and RANK is set (RANK < WORLD_SIZE,
      and the ids id_base .. id_base + WORLD_SIZE - 1 within 1 .. 65534); else None, for
      the control process to choose. The same RANK after a restart asks for the same id,
      and a join from the same site, address and port is the same member again.
    - first_round: TORCHELASTIC_RESTART_COUNT (0 without it) x ROUNDS_PER_RESTART, so
      that every worker of one run of the job starts from the same round, and each run
      (torchrun restarts every worker when one fails or the membership changes) from
      rounds of its own, without anyone computing it by hand.
    """
    env = os.environ if env is None else env

    def number(name: str, default: Optional[int]) -> Optional[int]:
        v = env.get(name)
        if v is None or v == "":
            return default
        try:
            n = int(v)
        except ValueError:
            raise ValueError("%s=%r: not an integer" % (name, v)) from None
        if n < 0:
            raise ValueError("%s=%r: must not be negative" % (name, v))
        return n

    restarts = number("TORCHELASTIC_RESTART_COUNT", 0) or 0
    first_round = (restarts * ROUNDS_PER_RESTART) & 0xFFFFFFFF
    rank, world = number("RANK", None), number("WORLD_SIZE", None)
    if id_base is None or rank is None:
        return None, first_round
    if world is not None and rank >= world:
        raise ValueError("RANK=%d: not below WORLD_SIZE=%d" % (rank, world))
    last = id_base + (world - 1 if world else rank)
    if id_base < 1 or last > 0xFFFE:
        raise ValueError("id_base %d: the ids %d .. %d are not within 1 .. 65534"
                         % (id_base, id_base, last))
    return id_base + rank, first_round


class ElasticSource(ControlSource):
    """A ControlSource that joins an elastic job (gr_join_elastic()) when made: at site
    `site` (a topology node id), reached at address:port; as worker_id, or None for the id
    the control process gives (the attribute worker_id holds it). Its membership is
    renewed every second (gr_join_renew()) by a thread of its own, which shares the one
    connection under a lock; close() leaves the job (gr_join_leave()). Other arguments:
    see ControlSource."""

    def __init__(self, control: str, job: int, site: str, address: str, port: int, *,
                 worker_id: Optional[int] = None, **kwargs: Any) -> None:
        super().__init__(control, job, **kwargs)
        if not 1 <= port <= 0xFFFF:
            raise ValueError("port %r: 1 .. 65535" % (port,))
        if worker_id is not None and not 1 <= worker_id <= 0xFFFE:
            raise ValueError("worker_id %r: 1 .. 65534" % (worker_id,))
        self._lock = threading.RLock()
        ctl, cert, key, ca, name, crl = self._strings
        o = _lib.GrJoinOpts(control=ctl, cert=cert, key=key, ca=ca, server_name=name,
                            job=job, worker_id=worker_id or 0,
                            timeout_ms=int(min(self.timeout, 10.0) * 1000), crl=crl)
        wid = ctypes.c_uint16(0)
        err = _err_buf()
        j = _lib.lib().gr_join_elastic(ctypes.byref(o), os.fsencode(site),
                                       os.fsencode(address), port, ctypes.byref(wid), err,
                                       _lib.ERR_MAX)
        if not j:
            raise ConfigError(err.value.decode(errors="replace"), ctypes.get_errno())
        self._join = j
        self.worker_id = wid.value
        self.site = site
        self._stop = threading.Event()
        self._renewer = threading.Thread(target=self._renew_loop, daemon=True,
                                         name="georeduce-renew-%d" % self.worker_id)
        self._renewer.start()

    def _renew_loop(self) -> None:
        while not self._stop.wait(_lib.JOIN_RENEW_MS / 1000):
            with self._lock:
                if self._join is None:
                    return
                _lib.lib().gr_join_renew(self._join, _err_buf(), _lib.ERR_MAX)

    def _open(self, worker_id: int) -> int:
        if self._join is None:
            raise ConfigError("worker %d left job %d" % (self.worker_id, self.job), 0)
        return self._join

    def load(self, worker_id: int) -> _lib.GrConfig:
        with self._lock:
            return super().load(worker_id)

    def _ask(self, wait_ms: int) -> bool:
        with self._lock:  # the long polls of an elastic join last a second at most
            return super()._ask(wait_ms)

    def leave(self) -> None:
        """Leave the job now (the next epoch is planned without this worker); the source
        is closed."""
        self._stop.set()
        with self._lock:
            j, self._join = self._join, None
            if j is None:
                return
            err = _err_buf()
            rc = _lib.lib().gr_join_leave(j, err, _lib.ERR_MAX)
            _lib.lib().gr_join_close(j)
        if rc < 0:
            raise ConfigError(err.value.decode(errors="replace"), -rc)

    def close(self) -> None:
        try:
            self.leave()
        except ConfigError:
            pass  # the control process away or the worker removed: nothing to leave

    def describe(self) -> str:
        return "%s (job %d, worker %d joined at %s)" % (self.control, self.job,
                                                         self.worker_id, self.site)


def join(cls: Any, control: str, job: int, site: str, address: str, port: int, *,
         worker_id: Optional[int] = None, id_base: Optional[int] = None,
         first_round: Optional[int] = None, env: Optional[Mapping[str, str]] = None,
         cert: Optional[str] = None, key: Optional[str] = None, ca: Optional[str] = None,
         server_name: Optional[str] = None, join_timeout: float = 60.0,
         crl: Optional[str] = None, **kwargs: Any) -> Client:
    """Client.join(): see docs/PYTHON.md, "Elastic jobs"."""
    env_id, env_round = torchrun_identity(env, id_base)
    src = ElasticSource(control, job, site, address, port,
                        worker_id=worker_id if worker_id is not None else env_id,
                        cert=cert, key=key, ca=ca, server_name=server_name,
                        timeout=join_timeout, crl=crl)
    try:
        return cls(src, src.worker_id,
                   first_round=env_round if first_round is None else first_round, **kwargs)
    except BaseException:
        src.close()
        raise
