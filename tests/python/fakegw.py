# SPDX-License-Identifier: BSD-3-Clause
"""A fake georeduce gateway for the Python package's tests, written from docs/PROTOCOL.md.

One thread serves UDP sockets on 127.0.0.1 (one per port of the steering range) and plays
the root aggregator of every tree for the job's local workers: it sums their CONTRIBs in
fp32, rounds once to the job's dtype (mxint8: encodes the sum once, the OCP MX rules of
docs/PROTOCOL.md section 4; with a lan_dtype, takes the workers' CONTRIBs in it), sends
each worker the RESULT from the port of the
chunk, answers RETX CONTRIBs (the RESULT if done, else an ACK) and NACK_RESULTs from the
results it keeps. With a threshold (partial reduce, contributor sets) it completes a chunk
at that many workers and answers late ones with the result. It can fall silent for its
epoch after some results and call back (a gateway failure: the test installs a new
epoch). Every packet of a client that breaks a rule is counted in `bad`, which tests
expect to stay 0.
"""
from __future__ import annotations

import json
import os
import random
import selectors
import socket
import struct
import threading
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

HDR = struct.Struct(">HBBBBBBIIHHHHIIHHII10s")
MAGIC, VERSION = 0x4752, 1
CONTRIB, RESULT, ACK, NACK_CONTRIB, NACK_RESULT = 1, 2, 3, 4, 5
F_RETX, F_ECHO = 1, 2
DTYPES = {"fp32": (1, 4), "fp16": (2, 2), "bf16": (3, 2), "mxint8": (4, 0)}


def payload_len(dtype: str, count: int) -> int:
    """Bytes of count elements: the element size, or 33 bytes per MXINT8 block of 32."""
    return count // 32 * 33 if dtype == "mxint8" else count * DTYPES[dtype][1]


def mx_decode(data: np.ndarray) -> np.ndarray:
    """MXINT8 chunk bytes (elements first, then one E8M0 scale per block) to fp32."""
    nb = len(data) // 33
    n = data[:32 * nb].view(np.int8).astype(np.float64).reshape(nb, 32)
    e = data[32 * nb:].astype(np.int64)
    v = n / 64.0 * np.ldexp(1.0, e - 127)[:, None]
    v[e == 255] = np.nan
    return v.reshape(-1).astype(np.float32)


def mx_encode(v: np.ndarray) -> bytes:
    """fp32 to MXINT8: per block the scale of the largest magnitude, elements rounded to
    nearest even in 1/64 and saturated at 127/64; a non-finite block gets scale 255."""
    b = v.astype(np.float64).reshape(-1, 32)
    amax = np.max(np.abs(b), axis=1)
    bad = ~np.isfinite(amax)
    _, k = np.frexp(np.where(bad, 1.0, amax))     # amax = m 2^k, m in [0.5, 1)
    e = np.where(amax > 0, np.clip(k - 1 + 127, 0, 254), 0)
    q = np.rint(np.where(bad[:, None], 0.0, b) / np.ldexp(1.0, e - 127)[:, None] * 64)
    q = np.clip(q, -127, 127)
    e = np.where(bad, 255, e)
    q[bad] = 0
    return q.astype(np.int8).tobytes() + e.astype(np.uint8).tobytes()
LOCALHOST = "127.0.0.1"


def decode(data: np.ndarray, dtype: str) -> np.ndarray:
    """Little-endian payload bytes to fp32 values."""
    if dtype == "mxint8":
        return mx_decode(data)
    if dtype == "fp32":
        return data.view("<f4").astype(np.float32)
    if dtype == "fp16":
        return data.view("<f2").astype(np.float32)
    return (data.view("<u2").astype(np.uint32) << 16).view(np.float32)


def encode(v: np.ndarray, dtype: str) -> bytes:
    """fp32 values to payload bytes, rounded to nearest even."""
    v = v.astype(np.float32)
    if dtype == "mxint8":
        return mx_encode(v)
    if dtype == "fp32":
        return v.astype("<f4").tobytes()
    if dtype == "fp16":
        return v.astype("<f2").tobytes()
    u = v.view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype("<u2").tobytes()


def free_ports(n: int) -> int:
    """A base port with n consecutive ports free on 127.0.0.1 (UDP)."""
    for _ in range(200):
        base = random.randint(20000, 60000 - n)
        socks = []
        try:
            for p in range(base, base + n):
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                socks.append(s)
                s.bind((LOCALHOST, p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no %d consecutive free UDP ports" % n)


class Slot:
    def __init__(self, count: int) -> None:
        self.acc = np.zeros(count, np.float32)
        self.workers: Set[int] = set()
        self.result: Optional[bytes] = None     # the RESULT packet once complete
        self.contrib = 0


class FakeGateway:
    """A gateway for one job of local workers on 127.0.0.1.

    Args:
        workers: worker ids (below 256 with contributor sets).
        elements, chunk_elements, dtype: the job's tensor.
        trees: (id, chunk_first, chunk_count) per tree; default one tree of every chunk.
        ports: ports of the steering range.
        threshold: partial reduce: complete a chunk at this many workers (needs sets).
        fail_after: fall silent for the epoch after this many chunks completed in it,
            then call on_fail (in the gateway's thread).
        lan_dtype: the workers' CONTRIBs in this dtype (fp32 or bf16 for mxint8).
    """

    def __init__(self, workers: Sequence[int], elements: int, chunk_elements: int,
                 dtype: str = "fp32", trees: Optional[Sequence[Tuple[int, int, int]]] = None,
                 ports: int = 1, job: int = 7, epoch: int = 3, gw_id: int = 900,
                 threshold: int = 0, fail_after: int = 0,
                 on_fail: Optional[Callable[["FakeGateway"], None]] = None,
                 lan_dtype: Optional[str] = None) -> None:
        self.workers = list(workers)
        self.lan_dtype = lan_dtype
        self.elements, self.ce, self.dtype = elements, chunk_elements, dtype
        self.n_chunks = -(-elements // chunk_elements)
        self.trees = list(trees) if trees else [(0, 0, self.n_chunks)]
        self.ports, self.job, self.epoch, self.gw_id = ports, job, epoch, gw_id
        self.threshold = threshold
        self.cset_blocks = 1 if threshold else 0
        self.fail_after, self.on_fail = fail_after, on_fail
        self.base = free_ports(ports + len(self.workers))
        self.wport = {w: self.base + ports + i for i, w in enumerate(self.workers)}
        self.slots: Dict[Tuple[int, int, int], Slot] = {}
        self.silent_epochs: Set[int] = set()
        self.completed: Dict[int, int] = {}     # per epoch
        self.bad = self.stale = self.contribs = self.retx = self.nacks = 0
        self.results_sent = self.late = 0
        self.rounds_seen: Set[Tuple[int, int]] = set()   # (epoch, round)
        self.socks: List[socket.socket] = []
        self.sel = selectors.DefaultSelector()
        for i in range(ports):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            s.bind((LOCALHOST, self.base + i))
            s.setblocking(False)
            self.socks.append(s)
            self.sel.register(s, selectors.EVENT_READ, i)
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, name="fakegw", daemon=True)
        self.thread.start()

    # --- tables ---

    def table(self, epoch: Optional[int] = None, elements: Optional[int] = None) -> str:
        """The georeduce-table/1 document of this gateway (docs/TABLES.md)."""
        ws = [{"id": w, "ipv4": LOCALHOST, "port": self.wport[w]} for w in self.workers]
        trees = []
        for tid, first, count in self.trees:
            t = {"id": tid, "role": "root", "parent": None, "children": [], "workers": ws,
                 "expected": len(ws), "subtree_workers": len(ws), "chunk_first": first,
                 "chunk_count": count, "rate_gbps": 1.0, "slots": 4096}
            if self.threshold:
                t["threshold"] = self.threshold
            trees.append(t)
        doc = {"format": "georeduce-table/1", "job": self.job,
               "epoch": self.epoch if epoch is None else epoch,
               "gateway": {"id": self.gw_id, "ipv4": LOCALHOST, "base_port": self.base,
                           "ports": self.ports},
               "dtype": self.dtype, "elements": elements or self.elements,
               "chunk_elements": self.ce,
               "limits": {"max_trees": 8, "max_children": 4, "max_workers": 16,
                          "max_slots": 4096},
               "trees": trees}
        if self.cset_blocks:
            doc["cset_blocks"] = self.cset_blocks
        if self.lan_dtype:
            doc["lan_dtype"] = self.lan_dtype
        return json.dumps(doc, indent=1)

    def write_table(self, path: str, epoch: Optional[int] = None) -> None:
        """Write the table as the control process does: a new file renamed over the old."""
        tmp = path + ".new"
        with open(tmp, "w") as f:
            f.write(self.table(epoch))
        os.replace(tmp, path)

    def set_epoch(self, epoch: int) -> None:
        """Serve epoch from now on (a new table installed); packets of others are stale."""
        with self.lock:
            self.epoch = epoch

    # --- packets ---

    def _tree_of(self, chunk: int) -> Optional[Tuple[int, int, int]]:
        for t in self.trees:
            if t[1] <= chunk < t[1] + t[2]:
                return t
        return None

    def _chunk_len(self, chunk: int) -> int:
        return min(self.ce, self.elements - chunk * self.ce)

    def _send(self, chunk: int, pkt: bytes, worker: int) -> None:
        self.socks[chunk % self.ports].sendto(pkt, (LOCALHOST, self.wport[worker]))

    def _hdr(self, typ: int, flags: int, epoch: int, tree: int, origin: int, contrib: int,
             rnd: int, chunk: int, count: int, tsecr: int = 0, dtype: int = 0,
             cset: int = 0) -> bytes:
        return HDR.pack(MAGIC, VERSION, typ, flags, dtype, cset, 0, self.job, epoch, tree,
                        self.gw_id, origin, contrib, rnd, chunk, count, 0, 0, tsecr,
                        bytes(10))

    def _result(self, s: Slot, epoch: int, tree: int, rnd: int, chunk: int) -> bytes:
        code = DTYPES[self.dtype][0]
        h = self._hdr(RESULT, 0, epoch, tree, self.gw_id, s.contrib, rnd, chunk,
                      len(s.acc), dtype=code, cset=self.cset_blocks)
        cset = b""
        if self.cset_blocks:
            bits = bytearray(32 * self.cset_blocks)
            for w in s.workers:
                bits[w // 8] |= 1 << (w % 8)
            cset = bytes(bits)
        return h + cset + encode(s.acc, self.dtype)

    @staticmethod
    def _answer(pkt: bytes, tsecr: int) -> bytes:
        """pkt sent again as an answer: RETX|ECHO, tsecr."""
        f = list(HDR.unpack_from(pkt))
        f[3] |= F_RETX | F_ECHO
        f[18] = tsecr
        return HDR.pack(*f) + pkt[HDR.size:]

    def _rx(self, port_idx: int, pkt: bytes, addr: Tuple[str, int]) -> None:
        if len(pkt) < HDR.size:
            self.bad += 1
            return
        (magic, ver, typ, flags, dt, cset_blocks, _r0, job, epoch, tree, sender, origin,
         contrib, rnd, chunk, count, _r1, tsval, _tsecr, _r2) = HDR.unpack_from(pkt)
        t = self._tree_of(chunk)
        if (magic != MAGIC or ver != VERSION or job != self.job or origin not in self.wport
                or sender != origin or addr[1] != self.wport[origin] or t is None
                or tree != t[0] or chunk % self.ports != port_idx):
            self.bad += 1
            return
        if epoch != self.epoch or epoch in self.silent_epochs:
            self.stale += 1
            return
        if typ == CONTRIB:
            self._contrib(pkt, flags, dt, cset_blocks, epoch, t, origin, contrib, rnd, chunk,
                          count, tsval)
        elif typ == NACK_RESULT:
            self.nacks += 1
            for c in range(chunk, chunk + count):
                s = self.slots.get((epoch, rnd, c))
                if s is not None and s.result is not None:
                    self._send(c, self._answer(s.result, tsval), origin)
                elif s is not None and origin in s.workers:  # held (PROTOCOL.md rev. 1.4)
                    self._send(c, self._hdr(ACK, F_ECHO, epoch, t[0], origin, 0, rnd, c, 1,
                                            tsecr=tsval), origin)
        else:
            self.bad += 1

    def _contrib(self, pkt: bytes, flags: int, dt: int, cset_blocks: int, epoch: int,
                 t: Tuple[int, int, int], origin: int, contrib: int, rnd: int, chunk: int,
                 count: int, tsval: int) -> None:
        lan = self.lan_dtype or self.dtype
        code = DTYPES[lan][0]
        plen = payload_len(lan, count)
        off = HDR.size + 32 * cset_blocks
        if (dt != code or cset_blocks != self.cset_blocks or contrib != 1
                or count != self._chunk_len(chunk) or len(pkt) != off + plen):
            self.bad += 1
            return
        self.contribs += 1
        self.rounds_seen.add((epoch, rnd))
        retx = bool(flags & F_RETX)
        self.retx += retx
        key = (epoch, rnd, chunk)
        s = self.slots.get(key)
        if s is None:
            s = self.slots[key] = Slot(count)
        if s.result is not None:
            if origin not in s.workers:
                self.late += 1          # partial reduce: complete without it
            if retx or origin not in s.workers:
                self._send(chunk, self._answer(s.result, tsval), origin)
            return
        if origin not in s.workers:
            s.workers.add(origin)
            s.contrib += 1
            s.acc += decode(np.frombuffer(pkt, np.uint8, plen, off), lan)
        elif retx:
            self._send(chunk, self._hdr(ACK, F_ECHO, epoch, t[0], origin, 0, rnd, chunk, 1,
                                        tsecr=tsval), origin)
            return
        need = self.threshold or len(self.workers)
        if s.contrib < need:
            return
        s.result = self._result(s, epoch, t[0], rnd, chunk)
        for w in self.workers:
            self._send(chunk, s.result, w)
            self.results_sent += 1
        done = self.completed[epoch] = self.completed.get(epoch, 0) + 1
        if self.fail_after and done == self.fail_after:
            self.fail_after = 0     # once
            self.silent_epochs.add(epoch)
            if self.on_fail is not None:
                self.on_fail(self)

    def _serve(self) -> None:
        while not self._stop.is_set():
            for key, _ in self.sel.select(timeout=0.1):
                sock = key.fileobj
                for _ in range(64):
                    try:
                        pkt, addr = sock.recvfrom(9000)  # type: ignore[union-attr]
                    except BlockingIOError:
                        break
                    with self.lock:
                        self._rx(key.data, pkt, addr)

    def close(self) -> None:
        self._stop.set()
        self.thread.join()
        for s in self.socks:
            s.close()
        self.sel.close()

    def __enter__(self) -> "FakeGateway":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
