# SPDX-License-Identifier: BSD-3-Clause
"""georeduce.Client against the fake gateway: dtypes, sizes, buffers, partial reduce,
re-plans, futures, timeouts and bad arguments. Needs numpy, not torch."""
import array
import ctypes
import json
import os
import subprocess
import threading
import time

import numpy as np
import pytest

import georeduce
from georeduce import _lib
from fakegw import FakeGateway, decode, encode


def clients(gw, **kw):
    return [georeduce.Client.from_table_string(gw.table(), w, **kw) for w in gw.workers]


def run_all(cs, bufs, **kw):
    """allreduce every buffer through its client at once; the contributor counts."""
    futs = [c.allreduce_async(b, **kw) for c, b in zip(cs, bufs)]
    return [f.result(timeout=60) for f in futs]


def close_all(cs):
    for c in cs:
        c.close()


def inputs(n, workers, dtype, rnd=0):
    """Integer-valued inputs (exact sums) of each worker, as fp32."""
    return [((np.arange(n) * 7 + 3 * w + rnd) % 13).astype(np.float32) for w in workers]


def as_dtype(v, dtype):
    """fp32 values as a numpy array in the job's dtype (bf16 as its uint16 bits)."""
    return np.frombuffer(encode(v, dtype), {"fp32": np.float32, "fp16": np.float16,
                                            "bf16": np.uint16}[dtype]).copy()


@pytest.mark.parametrize("dtype,elements,ce,trees,ports", [
    ("fp32", 10007, 352, 2, 3),
    ("fp16", 4099, 704, 1, 2),
    ("bf16", 7, 3, 3, 1),          # three chunks, the last of one element
    ("bf16", 1, 4096, 1, 1),       # one element
    ("fp32", 4097, 2048, 1, 1),    # 8 KiB chunks
])
def test_dtypes_and_odd_sizes(dtype, elements, ce, trees, ports):
    n_chunks = -(-elements // ce)
    cut = [n_chunks * t // trees for t in range(trees + 1)]
    tr = [(10 * t, cut[t], cut[t + 1] - cut[t]) for t in range(trees) if cut[t + 1] > cut[t]]
    with FakeGateway([11, 12, 13], elements, ce, dtype, trees=tr, ports=ports) as gw:
        cs = clients(gw)
        try:
            for rnd in range(3):
                vals = inputs(elements, gw.workers, dtype, rnd)
                bufs = [as_dtype(v, dtype) for v in vals]
                assert run_all(cs, bufs) == [3, 3, 3]
                want = as_dtype(sum(vals), dtype)
                for b in bufs:
                    assert np.array_equal(b, want)
            assert [c.next_round for c in cs] == [3, 3, 3]
        finally:
            close_all(cs)
        assert gw.bad == 0


def test_buffer_kinds():
    """array.array, bytearray (raw bytes), ctypes arrays and 2-D numpy arrays."""
    with FakeGateway([1, 2], 100, 30) as gw:
        cs = clients(gw)
        try:
            a = array.array("f", [float(i % 5) for i in range(100)])
            b = bytearray(np.full(100, 2, np.float32).tobytes())
            assert run_all(cs, [a, b]) == [2, 2]
            want = np.arange(100) % 5 + 2
            assert np.array_equal(np.array(a), want)
            assert np.array_equal(np.frombuffer(b, np.float32), want)
            c = (ctypes.c_float * 100)(*range(100))
            d = np.ones((10, 10), np.float32)
            assert run_all(cs, [c, d], average=True) == [2, 2]
            assert np.array_equal(np.array(c[:]), (np.arange(100) + 1) / 2)
            assert np.array_equal(d.ravel(), (np.arange(100) + 1) / 2)
        finally:
            close_all(cs)
        assert gw.bad == 0


def test_shorter_tensor_and_too_long():
    """A tensor shorter than the job's reduces, nothing past it changes; a longer one is
    refused before anything is sent."""
    with FakeGateway([1, 2], 1000, 64, trees=[(0, 0, 8), (1, 8, 8)]) as gw:
        cs = clients(gw)
        try:
            for n in (1, 63, 65, 500, 999, 1000):
                bufs = [np.full(1001, w, np.float32) for w in (1, 2)]
                assert run_all(cs, [b[:n] for b in bufs]) == [2, 2]
                for b in bufs:
                    assert np.all(b[:n] == 3) and np.all(b[n:] == b[-1])
            with pytest.raises(ValueError, match="1001 elements: the job's tensor has 1000"):
                cs[0].allreduce(np.zeros(1001, np.float32))
            assert cs[0].next_round == 6            # a refused call takes no round
        finally:
            close_all(cs)
        assert gw.bad == 0


def test_bad_arguments():
    with FakeGateway([1], 100, 30) as gw:
        c = clients(gw)[0]
        try:
            cases = [
                (np.zeros(200, np.float32)[::2], ValueError, "non-contiguous"),
                (np.zeros(100, np.float64), TypeError, "format 'd'"),
                (np.zeros(100, np.float16), TypeError, "format 'e'"),
                (bytes(400), TypeError, "read-only"),
                (bytearray(399), ValueError, "399 bytes: not a whole number of fp32"),
                (np.zeros(0, np.float32), ValueError, "empty"),
                ([0.0] * 100, TypeError, "a list: georeduce takes"),
                (np.zeros(100, ">f4"), TypeError, "big-endian"),
            ]
            for obj, exc, msg in cases:
                with pytest.raises(exc, match=msg):
                    c.allreduce(obj)
            for r in (-1, 1 << 32, True, 1.5, "3"):
                with pytest.raises(ValueError, match="round"):
                    c.allreduce(np.zeros(100, np.float32), r)
            with pytest.raises(ValueError, match="timeout"):
                c.allreduce(np.zeros(100, np.float32), timeout=0)
        finally:
            c.close()
        with pytest.raises(georeduce.GeoreduceError, match="closed"):
            c.allreduce(np.zeros(100, np.float32))
        c.close()  # twice: a no-op
        for wid in (0, 65535):
            with pytest.raises(ValueError, match="worker id"):
                georeduce.Client.from_table_string(gw.table(), wid)
        with pytest.raises(ValueError, match="window"):
            georeduce.Client.from_table_string(gw.table(), 1, window=70000)
        assert gw.bad == 0


def test_config_errors(tmp_path):
    with FakeGateway([1], 100, 30) as gw:
        with pytest.raises(georeduce.ConfigError, match="nothere.json") as e:
            georeduce.Client.from_table(tmp_path / "nothere.json", 1)
        assert e.value.errno == 2
        bad = tmp_path / "bad.json"
        bad.write_text('{"format": "georeduce-table/1"')
        with pytest.raises(georeduce.ConfigError, match="bad.json"):
            georeduce.Client.from_table(bad, 1)
        with pytest.raises(georeduce.ConfigError, match="worker 5"):
            georeduce.Client.from_table_string(gw.table(), 5)
        # The port is taken: the socket's errno.
        c = clients(gw)[0]
        with pytest.raises(georeduce.GeoreduceError) as e:
            clients(gw)
        assert e.value.errno == 98 and "bind" in str(e.value)
        cfg = c.config
        assert (cfg.job, cfg.epoch, cfg.dtype.name, cfg.elements, cfg.chunk_elements,
                cfg.chunks, cfg.worker_id, cfg.gateway_address) == \
            (7, 3, "fp32", 100, 30, 4, 1, "127.0.0.1")
        assert "worker 1 of job 7" in repr(c)
        c.close()


def test_partial_reduce_count():
    """Three workers, a chunk complete at two: the two first get their sum and count 2,
    the third, late, gets the same result without its own gradient."""
    with FakeGateway([11, 12, 13], 1000, 100, threshold=2) as gw:
        cs = clients(gw)
        try:
            bufs = [np.full(1000, w, np.float32) for w in (1.0, 2.0, 40.0)]
            futs = [cs[i].allreduce_async(bufs[i], 5) for i in range(2)]
            assert [f.result(timeout=30) for f in futs] == [2, 2]
            assert cs[2].allreduce(bufs[2], 5) == 2
            for b in bufs:
                assert np.all(b == 3)
            # Averaged: each chunk divided by its own count.
            bufs = [np.full(1000, w, np.float32) for w in (1.0, 2.0, 40.0)]
            futs = [cs[i].allreduce_async(bufs[i], 6, average=True) for i in range(2)]
            assert [f.result(timeout=30) for f in futs] == [2, 2]
            assert cs[2].allreduce(bufs[2], 6, average=True) == 2
            for b in bufs:
                assert np.all(b == 1.5)
        finally:
            close_all(cs)
        assert gw.bad == 0 and gw.late >= 10  # the third worker came late


def test_replan_mid_step(tmp_path):
    """The gateway falls silent for epoch 3 halfway through a round, and a table of epoch
    4 is installed: both workers, following the table file, stop the stalled call (2 s
    without a result, before its timeout), run the round again from its input under epoch
    4, and the sums are right."""
    table = str(tmp_path / "gw.json")

    def fail(g):
        g.write_table(table, epoch=4)
        g.epoch = 4  # in the gateway's thread, under its lock

    with FakeGateway([1, 2], 5000, 100, fail_after=25, on_fail=fail) as gw:
        gw.write_table(table)
        cs = [georeduce.Client.from_table(table, w, timeout=10.0) for w in gw.workers]
        try:
            vals = inputs(5000, gw.workers, "fp32")
            bufs = [v.copy() for v in vals]
            assert run_all(cs, bufs) == [2, 2]
            for b in bufs:
                assert np.array_equal(b, sum(vals))
            assert [c.epoch for c in cs] == [4, 4]
            assert (3, 0) in gw.rounds_seen and (4, 0) in gw.rounds_seen
            # The new table stopped the calls at once (gr_options.cancel), no timeout.
            assert all(c.stats()["cancels"] == 1 and c.stats()["timeouts"] == 0 for c in cs)
            # The next round runs under epoch 4 at once.
            bufs = [v.copy() for v in vals]
            assert run_all(cs, bufs) == [2, 2]
            # Per-tree stats: a list of the configuration's one tree; the window a
            # follow_rtt call would start with at least the table's (its slots: no window
            # in it), the round trip measured.
            for c in cs:
                st = c.stats()
                assert len(st["tree_windows"]) == 1 and st["tree_windows"][0] >= 4096
                assert len(st["tree_rtt_min_us"]) == 1 and st["tree_rtt_min_us"][0] > 0
        finally:
            close_all(cs)
        assert gw.bad == 0


def test_no_follow_and_timeout():
    """A silent gateway: AllreduceTimeout naming the round, and the client goes on."""
    with FakeGateway([1, 2], 100, 30) as gw:
        gw.silent_epochs.add(3)
        c = clients(gw, timeout=0.3)[0]
        try:
            with pytest.raises(georeduce.AllreduceTimeout, match="round 0: 4 of 4 chunks"):
                c.allreduce(np.zeros(100, np.float32))
            assert c.stats()["timeouts"] == 1
        finally:
            c.close()


def test_async_releases_the_gil():
    """A call waits for the other worker, whose call this thread makes only later: the
    first call must not hold the GIL meanwhile. Futures of several rounds queue."""
    with FakeGateway([1, 2], 20000, 350) as gw:
        cs = clients(gw)
        try:
            a = [np.full(20000, 1, np.float32) for _ in range(3)]
            b = [np.full(20000, 2, np.float32) for _ in range(3)]
            fa = [cs[0].allreduce_async(x) for x in a]
            ticks = 0
            until = time.monotonic() + 0.3
            while time.monotonic() < until:
                ticks += 1
            assert not any(f.done() for f in fa)
            fb = [cs[1].allreduce_async(x) for x in b]
            assert [f.result(timeout=30) for f in fa + fb] == [2] * 6
            assert all(np.all(x == 3) for x in a + b)
            assert ticks > 1000
        finally:
            close_all(cs)


def test_layout():
    """The ctypes structures have the C compiler's sizes and offsets."""
    exe = os.environ.get("GEOREDUCE_LAYOUT")
    if not exe:
        pytest.skip("GEOREDUCE_LAYOUT (tests/python/layout, built by meson) not set")
    c = json.loads(subprocess.run([exe], check=True, capture_output=True, text=True).stdout)
    for name, cls in (("gr_tree", _lib.GrTree), ("gr_gateway", _lib.GrGateway),
                      ("gr_config", _lib.GrConfig),
                      ("gr_options", _lib.GrOptions), ("gr_stats", _lib.GrStats),
                      ("gr_join_opts", _lib.GrJoinOpts),
                      ("gr_control_opts", georeduce.job.ControlOpts)):
        fields = {f[0]: getattr(cls, f[0]).offset for f in cls._fields_}
        assert ctypes.sizeof(cls) == c[name]["size"], name
        assert fields == c[name]["fields"], name


def test_fake_gateway_rounding():
    """The fake gateway's encoders round to nearest even (its results are the test's
    reference)."""
    v = np.array([1.0, 1 + 2 ** -8, 1 + 3 * 2 ** -8, 65504.0, -0.0], np.float32)
    assert list(decode(np.frombuffer(encode(v, "bf16"), np.uint8), "bf16")) == \
        [1.0, 1.0, 1 + 2 ** -6, 65536.0, -0.0]


def test_replan_by_timeout(tmp_path):
    """Without a new table the cut round times out and goes on under the same epoch
    (resumed) until the table of epoch 4 comes, later than the timeout: then it runs
    again under that epoch."""
    table = str(tmp_path / "gw.json")

    def fail(g):
        threading.Timer(1.2, lambda: (g.write_table(table, epoch=4), g.set_epoch(4))).start()

    with FakeGateway([1, 2], 3000, 100, fail_after=10, on_fail=fail) as gw:
        gw.write_table(table)
        cs = [georeduce.Client.from_table(table, w, timeout=0.5) for w in gw.workers]
        try:
            vals = inputs(3000, gw.workers, "fp32")
            bufs = [v.copy() for v in vals]
            assert run_all(cs, bufs) == [2, 2]
            for b in bufs:
                assert np.array_equal(b, sum(vals))
            assert [c.epoch for c in cs] == [4, 4]
            assert all(c.stats()["timeouts"] >= 1 for c in cs)
        finally:
            close_all(cs)
        assert gw.bad == 0


def test_from_control_refused(tmp_path):
    """Joining through a control process that is not there: ConfigError with the
    socket's errno; bad arguments before any connection."""
    with pytest.raises(georeduce.ConfigError) as e:
        georeduce.Client.from_control(str(tmp_path / "no-control.sock"), 1, 11,
                                      join_timeout=2)
    assert e.value.errno in (2, 111) and "no-control.sock" in str(e.value)
    with pytest.raises(ValueError, match="job"):
        georeduce.ControlSource("tls://127.0.0.1:1", -1)
    with pytest.raises(ValueError, match="timeout"):
        georeduce.ControlSource("tls://127.0.0.1:1", 1, timeout=0)


def test_from_control_list(tmp_path):
    """A list of control endpoints (the replicas of a replicated control process): none
    there, the error is the last one's; a bad list is refused, the element named."""
    socks = [str(tmp_path / ("r%d.sock" % i)) for i in range(3)]
    with pytest.raises(georeduce.ConfigError) as e:
        georeduce.Client.from_control(",".join(socks), 1, 11, join_timeout=2)
    assert e.value.errno == 2 and "r2.sock" in str(e.value)
    nine = ",".join(str(tmp_path / ("s%d.sock" % i)) for i in range(9))
    for bad, why in ((socks[0] + ",," + socks[1], "control endpoint 2 of the list is empty"),
                     (nine, "more than 8 control endpoints"),
                     (socks[0] + "," + socks[0], "given twice"),
                     ("tls://127.0.0.1:1," + socks[0], "mixes a socket path")):
        with pytest.raises(georeduce.ConfigError, match=why) as e:
            georeduce.Client.from_control(bad, 1, 11, join_timeout=2)
        assert e.value.errno == 22


def test_dtype_table_is_the_library_s():
    """Every row of georeduce.DTYPES has the library's size and name for its code, and
    the library knows no code below the rows' that the table lacks."""
    lb = _lib.lib()
    for d in georeduce.DTYPES:
        assert lb.gr_dtype_size(d.code) == d.size, d
        assert lb.gr_dtype_name(d.code).decode() == d.name, d
    codes = {d.code for d in georeduce.DTYPES}
    for code in range(1, max(codes) + 1):
        assert (code in codes) == (lb.gr_dtype_name(code) is not None), code
    assert lb.gr_dtype_name(max(codes) + 1) is None, "a dtype the table lacks"


def test_torchrun_identity():
    """The worker id and first round of an elastic worker from torchrun's environment."""
    t = georeduce.torchrun_identity
    assert t({}) == (None, 0)
    assert t({"RANK": "3", "WORLD_SIZE": "4"}) == (None, 0)  # no id_base: the control's
    env = {"RANK": "3", "WORLD_SIZE": "4", "TORCHELASTIC_RESTART_COUNT": "2"}
    assert t(env, id_base=100) == (103, 2 << 24)
    assert t({"TORCHELASTIC_RESTART_COUNT": "256"}) == (None, 0)  # modulo 2^32
    for bad, base in (({"RANK": "4", "WORLD_SIZE": "4"}, 100),
                      ({"RANK": "x"}, 100),
                      ({"RANK": "-1"}, 100),
                      ({"TORCHELASTIC_RESTART_COUNT": "-1"}, None),
                      ({"RANK": "0", "WORLD_SIZE": "2"}, 65534),
                      ({"RANK": "0"}, 0)):
        with pytest.raises(ValueError):
            t(bad, id_base=base)


def test_join_refused(tmp_path):
    """Client.join: bad arguments refused before any connection; a control process that
    is not there is a ConfigError with errno."""
    with pytest.raises(ValueError):
        georeduce.Client.join(str(tmp_path / "none.sock"), 1, "a", "10.0.0.1", 0)
    with pytest.raises(ValueError):
        georeduce.Client.join(str(tmp_path / "none.sock"), 1, "a", "10.0.0.1", 5000,
                              worker_id=70000)
    with pytest.raises(georeduce.ConfigError) as e:
        georeduce.Client.join(str(tmp_path / "none.sock"), 1, "a", "10.0.0.1", 5000,
                              join_timeout=1)
    assert e.value.errno != 0
