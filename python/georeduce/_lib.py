# SPDX-License-Identifier: BSD-3-Clause
"""ctypes declarations of libgeoreduce (lib/client/georeduce.h) and how the library is found.

The structures mirror the C header field by field; tests/python/test_layout.py compares
their sizes and offsets with what the C compiler gives (tests/python/layout.c), so that
a change on the C side cannot go unnoticed.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from typing import List, Optional

ERR_MAX = 512
TREES_MAX = 256
ORIGINS_MAX = 1024
CSET_BLOCK = 32


class GrTree(ctypes.Structure):
    """struct gr_tree."""

    _fields_ = [
        ("id", ctypes.c_uint16),
        ("chunk_first", ctypes.c_uint32),
        ("chunk_count", ctypes.c_uint32),
        ("slots", ctypes.c_uint32),
        ("window", ctypes.c_uint32),
    ]


class GrGateway(ctypes.Structure):
    """struct gr_gateway: a gateway of the site, where a tree's chunks go."""

    _fields_ = [
        ("id", ctypes.c_uint16),
        ("ipv4", ctypes.c_uint32),
        ("base_port", ctypes.c_uint16),
        ("ports", ctypes.c_uint16),
    ]


class GrConfig(ctypes.Structure):
    """struct gr_config."""

    _fields_ = [
        ("job", ctypes.c_uint32),
        ("epoch", ctypes.c_uint32),
        ("dtype", ctypes.c_int),
        ("elements", ctypes.c_uint64),
        ("chunk_elements", ctypes.c_uint32),
        ("worker_id", ctypes.c_uint16),
        ("worker_ipv4", ctypes.c_uint32),
        ("worker_port", ctypes.c_uint16),
        ("gateway_id", ctypes.c_uint16),
        ("gateway_ipv4", ctypes.c_uint32),
        ("gateway_base_port", ctypes.c_uint16),
        ("gateway_ports", ctypes.c_uint16),
        ("n_trees", ctypes.c_uint),
        ("trees", GrTree * TREES_MAX),
        ("cset_blocks", ctypes.c_uint8),
        ("mcast_send", ctypes.c_bool),
        ("mcast_stream", ctypes.c_uint16),
        ("mcast_rate_gbps", ctypes.c_double),
        ("n_origins", ctypes.c_uint),
        ("origins", ctypes.c_uint16 * ORIGINS_MAX),
        ("origin_streams", ctypes.c_uint16 * ORIGINS_MAX),
        ("mcast_rounds_ahead", ctypes.c_uint32),
        ("tree_gateways", GrGateway * TREES_MAX),
        ("lan_dtype", ctypes.c_int),
        ("forget_results", ctypes.c_bool),
        ("revision", ctypes.c_uint8),
        ("tree_rate_gbps", ctypes.c_double * TREES_MAX),
    ]


PROGRESS_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64)
CANCEL_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
JOIN_WAIT_MAX_MS = 60000
JOIN_RENEW_MS = 1000  # GR_JOIN_RENEW_MS: an elastic worker renews its membership so often


class GrOptions(ctypes.Structure):
    """struct gr_options."""

    _fields_ = [
        ("window", ctypes.c_uint32),
        ("timeout_ms", ctypes.c_uint32),
        ("average", ctypes.c_bool),
        ("progress", PROGRESS_FN),
        ("progress_arg", ctypes.c_void_p),
        ("progress_ms", ctypes.c_uint32),
        ("rto_min_ms", ctypes.c_uint32),
        ("rto_max_ms", ctypes.c_uint32),
        ("rto_initial_ms", ctypes.c_uint32),
        ("csets", ctypes.c_void_p),
        ("rate_gbps", ctypes.c_double),
        ("resume", ctypes.c_bool),
        ("cancel", CANCEL_FN),
        ("cancel_arg", ctypes.c_void_p),
        ("follow_rtt", ctypes.c_bool),
    ]


class GrJoinOpts(ctypes.Structure):
    """struct gr_join_opts."""

    _fields_ = [
        ("control", ctypes.c_char_p),
        ("cert", ctypes.c_char_p),
        ("key", ctypes.c_char_p),
        ("ca", ctypes.c_char_p),
        ("server_name", ctypes.c_char_p),
        ("job", ctypes.c_uint32),
        ("worker_id", ctypes.c_uint16),
        ("timeout_ms", ctypes.c_int),
        ("crl", ctypes.c_char_p),
    ]


STATS_FIELDS = [
    ("calls", ctypes.c_uint64),
    ("calls_ok", ctypes.c_uint64),
    ("timeouts", ctypes.c_uint64),
    ("contribs_sent", ctypes.c_uint64),
    ("contribs_retx", ctypes.c_uint64),
    ("nacks_sent", ctypes.c_uint64),
    ("results", ctypes.c_uint64),
    ("acks", ctypes.c_uint64),
    ("nack_contribs", ctypes.c_uint64),
    ("probes", ctypes.c_uint64),
    ("duplicates", ctypes.c_uint64),
    ("stale", ctypes.c_uint64),
    ("invalid", ctypes.c_uint64),
    ("send_errors", ctypes.c_uint64),
    ("srtt_us", ctypes.c_uint32),
    ("rttvar_us", ctypes.c_uint32),
    ("path_srtt_us", ctypes.c_uint32),
    ("t1_us", ctypes.c_uint32),
    ("superseded", ctypes.c_uint64),
    ("latest_round", ctypes.c_uint32),
    ("mcast_sent", ctypes.c_uint64),
    ("mcast_received", ctypes.c_uint64),
    ("mcast_late", ctypes.c_uint64),
    ("mcast_too_far", ctypes.c_uint64),
    ("mcast_skipped", ctypes.c_uint64),
    ("cancels", ctypes.c_uint64),
    ("mcast_nacks_sent", ctypes.c_uint64),
    ("mcast_repaired", ctypes.c_uint64),
    ("kept_answers", ctypes.c_uint64),
    ("kept_misses", ctypes.c_uint64),
    ("held_asked", ctypes.c_uint64),
    ("retx_fast", ctypes.c_uint64),
    ("asks_unanswered", ctypes.c_uint64),
    ("tree_windows", ctypes.c_uint32 * TREES_MAX),
    ("tree_rtt_min_us", ctypes.c_uint32 * TREES_MAX),
]


class GrStats(ctypes.Structure):
    """struct gr_stats."""

    _fields_ = STATS_FIELDS


def _candidates() -> List[str]:
    """Where libgeoreduce.so may be, in the order tried."""
    out = []
    env = os.environ.get("GEOREDUCE_LIBRARY")
    if env:
        out.append(env)
        return out  # an explicit choice is the only one tried
    here = os.path.dirname(os.path.abspath(__file__))
    # Built into the package by `pip install ./python` (python/setup.py).
    bundled = os.path.join(here, "_libs", "libgeoreduce.so.0")
    if os.path.exists(bundled):
        out.append(bundled)
    try:  # written by `meson install` next to this file
        from . import _build_config  # type: ignore[attr-defined]

        out.append(os.path.join(_build_config.LIBDIR, "libgeoreduce.so.0"))
    except ImportError:
        pass
    found = ctypes.util.find_library("georeduce")
    if found:
        out.append(found)
    # A source checkout: python/ beside a meson build directory named build.
    out.append(os.path.join(here, "..", "..", "build", "lib", "client", "libgeoreduce.so"))
    out.append("libgeoreduce.so.0")  # the dynamic loader's own search
    return out


def _declare(lib: ctypes.CDLL) -> ctypes.CDLL:
    c = ctypes
    cfg_p, cli_p, err = c.POINTER(GrConfig), c.c_void_p, c.c_char_p
    protos = {
        "gr_config_from_table": (c.c_int, [cfg_p, c.c_char_p, c.c_uint16, err, c.c_size_t]),
        "gr_config_from_table_string": (c.c_int,
                                        [cfg_p, c.c_char_p, c.c_uint16, err, c.c_size_t]),
        "gr_config_check": (c.c_int, [cfg_p, err, c.c_size_t]),
        "gr_client_create": (cli_p, [cfg_p, err, c.c_size_t]),
        "gr_client_reconfigure": (c.c_int, [cli_p, cfg_p, err, c.c_size_t]),
        "gr_client_free": (None, [cli_p]),
        "gr_client_config": (cfg_p, [cli_p]),
        "gr_allreduce": (c.c_int, [cli_p, c.c_void_p, c.c_size_t, c.c_int, c.c_uint32,
                                   c.POINTER(GrOptions)]),
        "gr_client_error": (c.c_char_p, [cli_p]),
        "gr_client_stats": (None, [cli_p, c.POINTER(GrStats)]),
        "gr_join_open": (c.c_void_p, [c.POINTER(GrJoinOpts), err, c.c_size_t]),
        "gr_join_config": (c.c_int, [c.c_void_p, cfg_p, c.c_int, err, c.c_size_t]),
        "gr_join_wait": (c.c_int, [c.c_void_p, c.c_uint32, c.c_int, cfg_p, err, c.c_size_t]),
        "gr_join_reload_tls": (c.c_int, [c.c_void_p, err, c.c_size_t]),
        "gr_join_close": (None, [c.c_void_p]),
        "gr_join_elastic": (c.c_void_p, [c.POINTER(GrJoinOpts), c.c_char_p, c.c_char_p,
                                         c.c_uint16, c.POINTER(c.c_uint16), err,
                                         c.c_size_t]),
        "gr_join_renew": (c.c_int, [c.c_void_p, err, c.c_size_t]),
        "gr_join_leave": (c.c_int, [c.c_void_p, err, c.c_size_t]),
        "gr_dtype_size": (c.c_size_t, [c.c_int]),
        "gr_dtype_name": (c.c_char_p, [c.c_int]),
        "gr_dtype_round": (c.c_int, [c.c_int, c.c_void_p, c.c_size_t]),
    }
    for name, (res, args) in protos.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    return lib


_lib: Optional[ctypes.CDLL] = None


def lib() -> ctypes.CDLL:
    """The loaded library (loaded on first use, with every prototype declared).

    ctypes.CDLL releases the GIL for the length of every call into it, so a gr_allreduce()
    that waits on the network lets other Python threads run.
    """
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    for path in _candidates():
        try:
            _lib = _declare(ctypes.CDLL(path, use_errno=True))
            return _lib
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError("libgeoreduce not found; install it (meson install) or name it in "
                      "GEOREDUCE_LIBRARY. Tried: " + "; ".join(tried))


def library_path() -> str:
    """The file the library was loaded from."""
    lb = lib()
    return str(lb._name)
