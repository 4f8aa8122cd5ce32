# SPDX-License-Identifier: BSD-3-Clause
"""Jobs created, changed and deleted through the control process, from a launcher.

    import georeduce
    job = georeduce.Job.create("tls://10.0.0.5:7310", {
        "algorithm": "mtree", "dtype": "bf16", "elements": 25_000_000,
        "workers": [{"node": "a", "id": 11, "ipv4": "10.1.0.11", "port": 5000}, ...]},
        cert="launcher.pem", key="launcher.key", ca="ca.pem")
    ...                       # the workers join job.id (Client.from_control)
    job.update(algorithm="ring")
    job.delete()              # removed from every gateway

The job object is an item of the deployment file's "jobs" (docs/DEPLOYMENT.md); without
an "id" the control process gives one. Over tls:// the certificate has the role control,
and names the launcher's tenant if it has one (docs/DEPLOYMENT.md, "Tenants"). Each call
is one request on a new connection through libgeoreduce (gr_job_create(),
gr_job_update(), gr_job_delete(); docs/CONTROL.md, "Jobs through the API").
"""
from __future__ import annotations

import ctypes
import json
from typing import Any, Mapping, Optional

from . import _lib
from .client import GeoreduceError


class ControlOpts(ctypes.Structure):
    """struct gr_control_opts."""

    _fields_ = [
        ("control", ctypes.c_char_p),
        ("cert", ctypes.c_char_p),
        ("key", ctypes.c_char_p),
        ("ca", ctypes.c_char_p),
        ("server_name", ctypes.c_char_p),
        ("timeout_ms", ctypes.c_int),
        ("crl", ctypes.c_char_p),
    ]


class JobError(GeoreduceError):
    """The control process refused a job call, or could not be reached; `errno` says why
    (errno.EINVAL: a field, named in the message; errno.EDQUOT: a tenant's quota; ...)."""


def _declare() -> ctypes.CDLL:
    lb = _lib.lib()
    c, o, err = ctypes, ctypes.POINTER(ControlOpts), ctypes.c_char_p
    for name, args in (("gr_job_create", [o, c.c_char_p, c.POINTER(c.c_uint32), err,
                                          c.c_size_t]),
                       ("gr_job_update", [o, c.c_uint32, c.c_char_p, err, c.c_size_t]),
                       ("gr_job_delete", [o, c.c_uint32, err, c.c_size_t])):
        f = getattr(lb, name)
        f.restype = c.c_int
        f.argtypes = args
    return lb


def _enc(s: Optional[str]) -> Optional[bytes]:
    return None if s is None else str(s).encode()


class Job:
    """A job of the control process, made by Job.create(); `id` is its id."""

    def __init__(self, job_id: int, control: str, *, cert: Optional[str] = None,
                 key: Optional[str] = None, ca: Optional[str] = None,
                 server_name: Optional[str] = None, timeout_ms: int = 0,
                 crl: Optional[str] = None) -> None:
        if isinstance(job_id, bool) or not isinstance(job_id, int) or \
                not 0 <= job_id <= 0xFFFFFFFF:
            raise ValueError("job id %r: an integer 0 .. 2^32 - 1" % (job_id,))
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or \
                not 0 <= timeout_ms <= 3600000:
            raise ValueError("timeout_ms %r: an integer 0 .. 3600000" % (timeout_ms,))
        self.id = job_id
        self._args = (control, cert, key, ca, server_name, timeout_ms, crl)
        self._opts = ControlOpts(*[_enc(a) for a in self._args[:5]], timeout_ms, _enc(crl))

    @classmethod
    def create(cls, control: str, job: Mapping[str, Any], *, cert: Optional[str] = None,
               key: Optional[str] = None, ca: Optional[str] = None,
               server_name: Optional[str] = None, timeout_ms: int = 0,
               crl: Optional[str] = None) -> "Job":
        """Create a job through the control process at `control` ("tls://HOST:PORT" or
        its unix socket path); its first epoch is planned and installed next. `crl`: the
        CA's CRL, which refuses a revoked control certificate."""
        if not isinstance(job, Mapping):
            raise TypeError("job: a mapping (a job object), not %s" % type(job).__name__)
        made = cls(0, control, cert=cert, key=key, ca=ca, server_name=server_name,
                   timeout_ms=timeout_ms, crl=crl)
        out = ctypes.c_uint32(0)
        made._call("gr_job_create", json.dumps(dict(job)).encode(), ctypes.byref(out))
        made.id = out.value
        return made

    def update(self, **changes: Any) -> None:
        """Change algorithm, options, weight or grace_ms (None: back to the default); a new
        epoch is planned."""
        self._call("gr_job_update", self.id, json.dumps(changes).encode())

    def delete(self) -> None:
        """Delete the job: removed from every gateway, its workers told."""
        self._call("gr_job_delete", self.id)

    def _call(self, name: str, *args: Any) -> None:
        err = ctypes.create_string_buffer(_lib.ERR_MAX)
        rc = getattr(_declare(), name)(ctypes.byref(self._opts), *args, err, len(err))
        if rc != 0:
            raise JobError(err.value.decode(errors="replace"), -rc)

    def __enter__(self) -> "Job":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.delete()

    def __repr__(self) -> str:
        return "Job(%d, %r)" % (self.id, self._args[0])
