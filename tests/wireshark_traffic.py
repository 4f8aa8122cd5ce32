#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Traffic of every georeduce packet type for tests/wireshark_e2e.sh, and its check.

Written from docs/PROTOCOL.md alone. Gateways A (node 1, 10.99.0.1, the root) and B (node
2, 10.99.0.2, a leaf under A) are real georeduce-dataplane processes; workers 11 and 12 at
A and 21 and 22 at B are addresses of this host, speaking over kernel UDP sockets.

  wireshark_traffic.py tables DIR       the tables of the jobs below, for A and B
  wireshark_traffic.py run LOG          send, receive, and log every packet (and what the
                                        gateways must have sent one another) to LOG
  wireshark_traffic.py check LOG FIELDS every line of LOG in FIELDS, tshark's decoding of
                                        the capture (FIELD_NAMES below, tab-separated)
  wireshark_traffic.py crafted HEX WANT packets against each rule of section 6 and
                                        of section 14.3, as text2pcap input, and the
                                        reason of each with "plain" or "sealed"
  wireshark_traffic.py fuzz HEX         random packets behind the magic, as text2pcap input

Jobs: 1 fp32 with contributor sets over a protected link (sealed frames between A and B),
2 fp16, 3 bf16, 4 mxint8, 5 mxfp8, 6 mxfp4 (no sets, plain), 7 a multicast stream from
worker 11 to 12, 21 and 22. Besides the AllReduce rounds: a CONTRIB sent again with RETX
before its chunk completes (answered by an ACK), a NACK_RESULT after the round (answered
by a RESULT with RETX and ECHO), a NACK_CONTRIB (which no gateway takes from a worker: it
is dropped, but it is on the wire), PROBEs (answered by PROBE_REPLYs), and malformed
packets: a truncated header, an unknown type, a bad length, a truncated sealed frame.
"""
import json
import math
import os
import select
import socket
import struct
import sys
import time

HDR = struct.Struct(">HBBBBBBIIHHHHIIHHII10s")  # 54 bytes, section 3
MAGIC, VERSION = 0x4752, 1
CONTRIB, RESULT, ACK, NACK_CONTRIB, NACK_RESULT, PROBE, PROBE_REPLY, MCAST, NACK_MCAST = \
    range(1, 10)
F_RETX, F_ECHO = 0x01, 0x02
DTYPES = {"fp32": 1, "fp16": 2, "bf16": 3, "mxint8": 4, "mxfp8": 5, "mxfp4": 6}
NONE = 0xffff
BASE, PORTS, WPORT = 17400, 16, 5000
A, B = 1, 2
GW_IP = {A: "10.99.0.1", B: "10.99.0.2"}
WORKERS = {11: A, 12: A, 21: B, 22: B}
SHOWN = 4  # tshark -o georeduce.max_elements:4
KEY_ID, KEY = 3405691582, "00112233445566778899aabbccddeeff"
EPOCH = 1

# job: dtype, elements, chunk elements, contributor set blocks, sealed
JOBS = {
    1: ("fp32", 256, 64, 1, True),
    2: ("fp16", 128, 64, 0, False),
    3: ("bf16", 128, 64, 0, False),
    4: ("mxint8", 64, 32, 0, False),
    5: ("mxfp8", 64, 32, 0, False),
    6: ("mxfp4", 64, 32, 0, False),
}
MJOB, MSTREAM, MN, ME = 7, 1, 128, 64

FIELD_NAMES = [
    "ip.src", "udp.srcport", "ip.dst", "udp.dstport",
    "georeduce.type", "georeduce.flags", "georeduce.dtype", "georeduce.cset_blocks",
    "georeduce.job", "georeduce.epoch", "georeduce.tree", "georeduce.stream",
    "georeduce.sender", "georeduce.origin", "georeduce.contrib", "georeduce.round",
    "georeduce.chunk", "georeduce.count", "georeduce.tsval", "georeduce.tsecr",
    "georeduce.cset.id", "georeduce.value", "georeduce.probe_payload", "georeduce.reason",
    "georeduce.seal.job", "georeduce.seal.key_id", "georeduce.seal.aead",
    "georeduce.seal.sender", "georeduce.seal.lane", "georeduce.seal.seq",
    "georeduce.seal.length",
]
IDX = {n: i for i, n in enumerate(FIELD_NAMES)}


def line(**kw):
    """A log line: FIELD_NAMES in order, '-' for an absent field, '*' for any value."""
    out = ["-"] * len(FIELD_NAMES)
    for k, v in kw.items():
        out[IDX[k.replace("__", ".").replace("_dot_", ".")]] = str(v)
    return "\t".join(out)


# --- Values and their encodings (section 4) ------------------------------------------------

def value(job, w, i):
    """Worker w's element i in job `job`: values whose sums every dtype holds exactly."""
    dt = JOBS[job][0] if job in JOBS else "fp32"
    if dt == "mxfp4":
        return [0.0, 0.5, 1.0, 1.5][i % 4]
    if dt.startswith("mx"):
        return float((w + i) % 4)
    return float((w * 7 + i) % 61)


def e4m3(p):
    """The E4M3 code of p, which must be exact."""
    s = 0x80 if p < 0 else 0
    p = abs(p)
    if p == 0:
        return s
    e = math.floor(math.log2(p))
    if e < -6:
        m = p / 2 ** -9
        assert m == int(m) and m < 8
        return s | int(m)
    m = (p / 2 ** e - 1) * 8
    assert m == int(m) and 0 <= m < 8 and e + 7 <= 15, p
    return s | (e + 7) << 3 | int(m)


def e2m1(p):
    codes = {0: 0, 0.5: 1, 1: 2, 1.5: 3, 2: 4, 3: 5, 4: 6, 6: 7}
    return (8 if p < 0 else 0) | codes[abs(p)]


def encode(dt, vals):
    if dt == "fp32":
        return struct.pack("<%df" % len(vals), *vals)
    if dt == "fp16":
        return struct.pack("<%de" % len(vals), *vals)
    if dt == "bf16":
        return b"".join(struct.pack("<I", struct.unpack("<I", struct.pack("<f", v))[0])[2:]
                        for v in vals)
    emax = {"mxint8": 0, "mxfp8": 8, "mxfp4": 2}[dt]
    elems, scales = b"", b""
    for b in range(0, len(vals), 32):
        blk = vals[b:b + 32]
        m = max(abs(v) for v in blk)
        e = max(0, math.floor(math.log2(m)) - emax + 127) if m > 0 else 0
        x = 2.0 ** (e - 127)
        ps = [v / x for v in blk]
        if dt == "mxint8":
            assert all(p * 64 == int(p * 64) for p in ps)
            elems += bytes(int(p * 64) & 0xff for p in ps)
        elif dt == "mxfp8":
            elems += bytes(e4m3(p) for p in ps)
        else:
            c = [e2m1(p) for p in ps]
            elems += bytes(c[i] | c[i + 1] << 4 for i in range(0, 32, 2))
        scales += bytes([e])
    return elems + scales


def fmt(v):
    return "%g" % v


def chunks(n, e):
    return (n + e - 1) // e


def clen(n, e, c):
    return min(e, n - c * e)


def cset_bytes(k, ids):
    b = bytearray(32 * k)
    for i in ids:
        b[i // 8] |= 1 << (i % 8)
    return bytes(b)


def gwport(chunk):
    return BASE + chunk % PORTS


# --- Tables -------------------------------------------------------------------------------

def gw(i):
    return {"id": i, "ipv4": GW_IP[i], "base_port": BASE, "ports": PORTS}


def wk(i):
    return {"id": i, "ipv4": "10.99.0.%d" % i, "port": WPORT}


def tables(d):
    for job, (dt, n, e, k, sealed) in JOBS.items():
        for g in (A, B):
            t = {"format": "georeduce-table/1", "job": job, "epoch": EPOCH, "gateway": gw(g),
                 "dtype": dt, "elements": n, "chunk_elements": e,
                 "limits": {"max_trees": 1, "max_children": 1, "max_workers": 2,
                            "max_slots": 16}}
            if k:
                t["cset_blocks"] = k
            tree = {"id": 0, "chunk_first": 0, "chunk_count": chunks(n, e),
                    "rate_gbps": 0.1, "slots": 16}
            if g == A:
                child = dict(gw(B), subtree_workers=2)
                if k:
                    child["workers_below"] = [21, 22]
                tree.update(role="root", parent=None, children=[child],
                            workers=[wk(11), wk(12)], expected=3, subtree_workers=4)
            else:
                tree.update(role="leaf", parent=gw(A), children=[],
                            workers=[wk(21), wk(22)], expected=2, subtree_workers=2)
            t["trees"] = [tree]
            if sealed:
                t["sealed"] = [{"peer": B if g == A else A, "key_id": KEY_ID,
                                "aead": "aes-128-gcm", "key": KEY}]
            with open(os.path.join(d, "job%d-%s.json" % (job, "ab"[g - 1])), "w") as f:
                json.dump(t, f, indent=1)
    for g in (A, B):
        if g == A:
            st = {"id": MSTREAM, "source": A, "from": None, "to": [gw(B)],
                  "deliver": [wk(12)], "rate_gbps": 0.1, "origins": [11]}
        else:
            st = {"id": MSTREAM, "source": A, "from": gw(A), "to": [],
                  "deliver": [wk(21), wk(22)], "rate_gbps": 0.1, "origins": [11]}
        t = {"format": "georeduce-table/1", "job": MJOB, "epoch": EPOCH, "gateway": gw(g),
             "dtype": "fp32", "elements": MN, "chunk_elements": ME,
             "limits": {"max_trees": 1, "max_children": 1, "max_workers": 2,
                        "max_slots": 16},
             "trees": [], "streams": [st]}
        with open(os.path.join(d, "job%d-%s.json" % (MJOB, "ab"[g - 1])), "w") as f:
            json.dump(t, f, indent=1)


# --- Sending and receiving ----------------------------------------------------------------

class Net:
    def __init__(self, log):
        self.log = log
        self.socks = {}
        for w in WORKERS:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            s.bind(("10.99.0.%d" % w, WPORT))
            s.setblocking(False)
            self.socks[w] = s
        self.t0 = time.monotonic()
        self.received = []

    def clock(self):
        return int((time.monotonic() - self.t0) * 1e6 + 1000) & 0xffffffff

    def send(self, w, dst_ip, dport, pkt, expect):
        """Send pkt from worker w and log `expect`, its decoding."""
        self.socks[w].sendto(pkt, (dst_ip, dport))
        self.log.append(expect)

    def data(self, w, typ, job, tree, rnd, chunk, dt, vals, flags=0, k=0, ids=(), tsecr=0,
             dst=None, dport=None):
        ts = self.clock()
        pkt = HDR.pack(MAGIC, VERSION, typ, flags, DTYPES[dt], k, 0, job, EPOCH, tree, w, w,
                       1, rnd, chunk, len(vals), 0, ts, tsecr, bytes(10))
        pkt += cset_bytes(k, ids) + encode(dt, vals)
        dst = dst or GW_IP[WORKERS[w]]
        dport = dport or gwport(chunk)
        kw = {"tree" if typ != MCAST else "stream": tree}
        self.send(w, dst, dport, pkt, line(
            ip__src="10.99.0.%d" % w, udp__srcport=WPORT, ip__dst=dst, udp__dstport=dport,
            georeduce__type=typ, georeduce__flags="0x%02x" % flags,
            georeduce__dtype=DTYPES[dt], georeduce__cset_blocks=k, georeduce__job=job,
            georeduce__epoch=EPOCH, georeduce__sender=w, georeduce__origin=w,
            georeduce__contrib=1, georeduce__round=rnd, georeduce__chunk=chunk,
            georeduce__count=len(vals), georeduce__tsval=ts, georeduce__tsecr=tsecr,
            georeduce__cset_dot_id=",".join(map(str, ids)) if ids else "-",
            georeduce__value=",".join(fmt(v) for v in vals[:SHOWN]),
            **{"georeduce." + a: b for a, b in kw.items()}))
        return ts

    def control(self, w, typ, job, rnd, chunk, count, flags=0, sender=None, origin=None,
                payload=b"", tree=0, tsecr=0):
        ts = self.clock()
        sender = w if sender is None else sender
        origin = w if origin is None else origin
        pkt = HDR.pack(MAGIC, VERSION, typ, flags, 0, 0, 0, job, EPOCH, tree, sender, origin,
                       0, rnd, chunk, count, 0, ts, tsecr, bytes(10)) + payload
        dst, dport = GW_IP[WORKERS[w]], gwport(chunk)
        self.send(w, dst, dport, pkt, line(
            ip__src="10.99.0.%d" % w, udp__srcport=WPORT, ip__dst=dst, udp__dstport=dport,
            georeduce__type=typ, georeduce__flags="0x%02x" % flags, georeduce__dtype=0,
            georeduce__cset_blocks=0, georeduce__job=job, georeduce__epoch=EPOCH,
            georeduce__sender=sender, georeduce__origin=origin,
            **({"georeduce__stream": tree} if typ == NACK_MCAST else {"georeduce__tree": tree}),
            georeduce__contrib=0, georeduce__round=rnd, georeduce__chunk=chunk,
            georeduce__count=count, georeduce__tsval=ts, georeduce__tsecr=tsecr,
            georeduce__probe_payload=payload.hex() if payload else "-"))
        return ts

    def raw(self, w, chunk, pkt, reason, typ="*"):
        dst, dport = GW_IP[WORKERS[w]], gwport(chunk)
        exp = ["*"] * len(FIELD_NAMES)
        for n, v in (("ip.src", "10.99.0.%d" % w), ("udp.srcport", WPORT), ("ip.dst", dst),
                     ("udp.dstport", dport), ("georeduce.reason", reason),
                     ("georeduce.type", typ)):
            exp[IDX[n]] = str(v)
        self.send(w, dst, dport, pkt, "\t".join(exp))

    def poll(self, until, timeout=60):
        """Receive (and log) until until() holds; False at the deadline."""
        deadline = time.monotonic() + timeout
        while not until():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            r, _, _ = select.select(list(self.socks.values()), [], [], min(left, 0.1))
            for s in r:
                w = [k for k, v in self.socks.items() if v is s][0]
                while True:
                    try:
                        pkt, (ip, port) = s.recvfrom(65536)
                    except BlockingIOError:
                        break
                    self.got(w, ip, port, pkt)
        return True

    def got(self, w, ip, port, pkt):
        f = HDR.unpack_from(pkt)
        (_, _, typ, flags, dtype, k, _, job, epoch, tree, sender, origin, contrib, rnd, chunk,
         count, _, tsval, tsecr, _) = f
        ids, vals = [], []
        if typ in (CONTRIB, RESULT, MCAST):
            cs = pkt[HDR.size:HDR.size + 32 * k]
            ids = [i for i in range(8 * len(cs)) if cs[i // 8] >> (i % 8) & 1]
            # The payload is the dissector's to decode; its values must be these: a RESULT
            # the sum of every worker's, an MCAST its origin's.
            e = JOBS[job][2] if job in JOBS else ME
            if typ == RESULT:
                vals = [sum(value(job, x, chunk * e + i) for x in WORKERS)
                        for i in range(min(count, SHOWN))]
            elif typ == MCAST:
                vals = [value(job, origin, chunk * e + i) for i in range(min(count, SHOWN))]
        kw = {"georeduce.stream" if typ == MCAST else "georeduce.tree": tree}
        self.received.append((w, typ, flags, job, rnd, chunk, sender, origin, contrib, ids,
                              vals, tsecr))
        self.log.append(line(
            ip__src=ip, udp__srcport=port, ip__dst="10.99.0.%d" % w, udp__dstport=WPORT,
            georeduce__type=typ, georeduce__flags="0x%02x" % flags, georeduce__dtype=dtype,
            georeduce__cset_blocks=k, georeduce__job=job, georeduce__epoch=epoch,
            georeduce__sender=sender, georeduce__origin=origin, georeduce__contrib=contrib,
            georeduce__round=rnd, georeduce__chunk=chunk, georeduce__count=count,
            georeduce__tsval=tsval, georeduce__tsecr=tsecr,
            georeduce__cset_dot_id=",".join(map(str, ids)) if ids else "-",
            georeduce__value=",".join(fmt(v) for v in vals) if vals else "-",
            georeduce__probe_payload=pkt[HDR.size:].hex() if typ in (PROBE, PROBE_REPLY)
            and len(pkt) > HDR.size else "-",
            **kw))


def run(logfile):
    log = []
    net = Net(log)
    expect = []  # (worker, job, chunk, its gateway, ...): the RESULTs each worker must get

    for job, (dt, n, e, k, sealed) in JOBS.items():
        nc = chunks(n, e)
        for c in range(nc):
            cnt = clen(n, e, c)
            total = [sum(value(job, w, c * e + i) for w in WORKERS) for i in range(cnt)]
            at_b = [sum(value(job, w, c * e + i) for w in (21, 22)) for i in range(cnt)]
            for w in sorted(WORKERS):
                vals = [value(job, w, c * e + i) for i in range(cnt)]
                net.data(w, CONTRIB, job, 0, 0, c, dt, vals, k=k, ids=[w] if k else ())
                if job == 1 and w == 11 and c == 0:
                    # Again with RETX while the chunk is open at A: A answers with an ACK.
                    ts = net.data(w, CONTRIB, job, 0, 0, c, dt, vals, flags=F_RETX, k=k,
                                  ids=[w])
                    if not net.poll(lambda: any(r[1] == ACK for r in net.received)):
                        print("wireshark_traffic: no ACK for the RETX CONTRIB",
                              file=sys.stderr)
                        return 1
                    ack = [r for r in net.received if r[1] == ACK][0]
                    if ack[11] != ts or ack[7] != 11 or ack[6] != A:
                        print("wireshark_traffic: ACK %r" % (ack,), file=sys.stderr)
                        return 1
            shown = ",".join(fmt(v) for v in total[:SHOWN])
            ids = "11,12,21,22" if k else "-"
            for w in WORKERS:
                g = WORKERS[w]
                # Every RESULT is logged as received; what it must say is checked here.
                expect.append((w, job, c, g, shown, ids))
            if sealed:
                # Between A and B only sealed frames: the partial sum up, the RESULT down.
                for src, dst, length in ((B, A, 54 + 32 * k + 4 * cnt),
                                         (A, B, 54 + 32 * k + 4 * cnt)):
                    log.append(line(ip__src=GW_IP[src], udp__srcport=gwport(c),
                                    ip__dst=GW_IP[dst], udp__dstport=gwport(c),
                                    georeduce__seal_dot_job=job,
                                    georeduce__seal_dot_key_id=KEY_ID,
                                    georeduce__seal_dot_aead=1,
                                    georeduce__seal_dot_sender=src,
                                    georeduce__seal_dot_lane="*", georeduce__seal_dot_seq="*",
                                    georeduce__seal_dot_length=length))
            else:
                common = dict(georeduce__dtype=DTYPES[dt], georeduce__cset_blocks=0,
                              georeduce__job=job, georeduce__epoch=EPOCH,
                              georeduce__tree=0, georeduce__round=0, georeduce__chunk=c,
                              georeduce__count=cnt, georeduce__tsval="*",
                              georeduce__flags="0x00", georeduce__tsecr=0)
                log.append(line(ip__src=GW_IP[B], udp__srcport=gwport(c), ip__dst=GW_IP[A],
                                udp__dstport=gwport(c), georeduce__type=CONTRIB,
                                georeduce__sender=B, georeduce__origin=B,
                                georeduce__contrib=2,
                                georeduce__value=",".join(fmt(v) for v in at_b[:SHOWN]),
                                **common))
                log.append(line(ip__src=GW_IP[A], udp__srcport=gwport(c), ip__dst=GW_IP[B],
                                udp__dstport=gwport(c), georeduce__type=RESULT,
                                georeduce__sender=A, georeduce__origin=A,
                                georeduce__contrib=4, georeduce__value=shown, **common))
        # Every worker's RESULT of every chunk; a CONTRIB whose RESULT is late is sent again
        # with RETX (section 10), which the capture and the log hold like any other.
        def missing():
            return sorted({(w, c) for w in WORKERS for c in range(nc)} -
                          {(r[0], r[5]) for r in net.received if r[1] == RESULT and
                           r[3] == job})
        deadline = time.monotonic() + 60
        while not net.poll(lambda: not missing(), timeout=5):
            if time.monotonic() > deadline:
                print("wireshark_traffic: job %d: no RESULT for (worker, chunk) %r" % (
                    job, missing()), file=sys.stderr)
                return 1
            for w, c in missing():
                net.data(w, CONTRIB, job, 0, 0, c, dt,
                         [value(job, w, c * e + i) for i in range(clen(n, e, c))],
                         flags=F_RETX, k=k, ids=[w] if k else ())

    # The RESULTs as the workers received them: from their own gateway, summed at A.
    bad = 0
    for w, job, c, g, shown, ids in expect:
        k = JOBS[job][3]
        rs = [r for r in net.received if r[0] == w and r[1] == RESULT and r[3] == job and
              r[5] == c]
        if not rs or rs[0][6] != g or rs[0][7] != A or rs[0][8] != 4 or \
                (k and rs[0][9] != [11, 12, 21, 22]):
            print("wireshark_traffic: worker %d job %d chunk %d: %r" % (w, job, c, rs),
                  file=sys.stderr)
            bad += 1
    if bad:
        return 1

    # NACK_RESULT for chunk 1 of job 1 from 21: B answers with the RESULT, RETX and ECHO.
    n0 = len(net.received)
    ts = net.control(21, NACK_RESULT, 1, 0, 1, 1)
    if not net.poll(lambda: any(r[1] == RESULT and r[2] == F_RETX | F_ECHO
                                for r in net.received[n0:])):
        print("wireshark_traffic: no answer to the NACK_RESULT", file=sys.stderr)
        return 1
    r = [r for r in net.received[n0:] if r[1] == RESULT][0]
    if r[11] != ts or r[6] != B or r[5] != 1:
        print("wireshark_traffic: NACK_RESULT answer %r" % (r,), file=sys.stderr)
        return 1

    # NACK_CONTRIB: an aggregator's request, which A takes from nobody but B's parent; on
    # the wire from a worker it is dropped (bad_sender), but decoded all the same.
    net.control(12, NACK_CONTRIB, 1, 0, 2, 2)

    # PROBEs: outside any job (job 0, no node), and in job 1 from worker 11, padded.
    for job, node, payload in ((0, NONE, b""), (1, 11, bytes(range(16)))):
        n0 = len(net.received)
        ts = net.control(11, PROBE, job, 77, 5, 0, sender=node, origin=node, payload=payload)
        if not net.poll(lambda: any(r[1] == PROBE_REPLY for r in net.received[n0:])):
            print("wireshark_traffic: no PROBE_REPLY", file=sys.stderr)
            return 1
        r = [r for r in net.received[n0:] if r[1] == PROBE_REPLY][0]
        if r[11] != ts or r[7] != node:
            print("wireshark_traffic: PROBE_REPLY %r" % (r,), file=sys.stderr)
            return 1

    # MCAST: 11's update to A; A copies it to B and to 12, B to 21 and 22.
    for c in range(chunks(MN, ME)):
        vals = [value(MJOB, 11, c * ME + i) for i in range(clen(MN, ME, c))]
        net.data(11, MCAST, MJOB, MSTREAM, 3, c, "fp32", vals)
        log.append(line(ip__src=GW_IP[A], udp__srcport=gwport(c), ip__dst=GW_IP[B],
                        udp__dstport=gwport(c), georeduce__type=MCAST, georeduce__flags="0x00",
                        georeduce__dtype=1, georeduce__cset_blocks=0, georeduce__job=MJOB,
                        georeduce__epoch=EPOCH, georeduce__stream=MSTREAM,
                        georeduce__sender=A, georeduce__origin=11, georeduce__contrib=1,
                        georeduce__round=3, georeduce__chunk=c, georeduce__count=len(vals),
                        georeduce__tsval="*", georeduce__tsecr=0,
                        georeduce__value=",".join(fmt(v) for v in vals[:SHOWN])))
    want = 3 * chunks(MN, ME)
    if not net.poll(lambda: sum(1 for r in net.received if r[1] == MCAST) >= want):
        print("wireshark_traffic: %d of %d multicast copies" % (
            sum(1 for r in net.received if r[1] == MCAST), want), file=sys.stderr)
        return 1

    # NACK_MCAST: 12 lacks chunk 0 of 11's update; A answers with the copy it retained,
    # RETX, to 12's address.
    n0 = len(net.received)
    net.control(12, NACK_MCAST, MJOB, 3, 0, 1, origin=11, tree=MSTREAM)
    if not net.poll(lambda: any(r[1] == MCAST and r[2] == F_RETX for r in net.received[n0:])):
        print("wireshark_traffic: no answer to the NACK_MCAST", file=sys.stderr)
        return 1

    # Malformed packets, each to A, which drops them: the dissector must say why.
    good = HDR.pack(MAGIC, VERSION, PROBE, 0, 0, 0, 0, 0, 0, 0, NONE, NONE, 0, 0, 9, 0, 0,
                    0, 0, bytes(10))
    net.raw(11, 9, good[:20], "truncated", typ=PROBE)
    net.raw(11, 9, good[:3] + b"\x0a" + good[4:], "bad_type", typ=10)
    bad_len = HDR.pack(MAGIC, VERSION, CONTRIB, 0, 1, 0, 0, 2, EPOCH, 0, 11, 11, 1, 0, 9, 4,
                       0, 0, 0, bytes(10)) + bytes(12)
    net.raw(11, 9, bad_len, "bad_length", typ=CONTRIB)
    net.raw(11, 9, b"GS\x01\x01" + bytes(36), "bad_seal")

    time.sleep(0.2)
    net.poll(lambda: False, timeout=0.5)  # late copies, logged too
    with open(logfile, "w") as f:
        f.write("\n".join(log) + "\n")
    print("wireshark_traffic: %d packets sent and received, logged" % len(log))
    return 0


def check(logfile, fieldsfile):
    with open(fieldsfile) as f:
        frames = [l.rstrip("\n").split("\t") for l in f if l.strip()]
    frames = [[x if x != "" else "-" for x in fr] + ["-"] * (len(FIELD_NAMES) - len(fr))
              for fr in frames]
    with open(logfile) as f:
        want = [l.rstrip("\n").split("\t") for l in f if l.strip()]
    missing = 0
    for w in want:
        if not any(all(a == "*" or a == b for a, b in zip(w, fr)) for fr in frames):
            missing += 1
            if missing <= 10:
                print("not decoded as sent: %s" % "  ".join(
                    "%s=%s" % (n, v) for n, v in zip(FIELD_NAMES, w) if v != "-"))
                near = [fr for fr in frames if fr[:4] == w[:4]]
                for fr in near[:2]:
                    print("   a frame of that flow: %s" % "  ".join(
                        "%s=%s" % (n, v) for n, v in zip(FIELD_NAMES, fr) if v != "-"))
    types = {}
    for fr in frames:
        t = fr[IDX["georeduce.type"]]
        types[t] = types.get(t, 0) + 1
    sealed = sum(1 for fr in frames if fr[IDX["georeduce.seal.job"]] != "-")
    plain_job1 = [fr for fr in frames if fr[IDX["georeduce.job"]] == "1" and
                  fr[IDX["ip.src"]] in GW_IP.values() and fr[IDX["ip.dst"]] in GW_IP.values()]
    print("frames %d, by type %s, sealed %d; %d of %d logged packets decoded as sent" % (
        len(frames), ", ".join("%s: %d" % kv for kv in sorted(types.items())), sealed,
        len(want) - missing, len(want)))
    ok = missing == 0
    for t in range(1, 10):
        if types.get(str(t), 0) == 0:
            print("no frame of type %d" % t)
            ok = False
    if plain_job1:
        print("%d frames of the protected link's job between the gateways in the clear"
              % len(plain_job1))
        ok = False
    return 0 if ok else 1


def crafted(hexfile, wantfile):
    """Packets against each rule of section 6 (and rule 1 of section 14.3), as text2pcap
    input, and the reason the dissector must give each ('-' for a valid one)."""
    def hdr(typ=CONTRIB, flags=0, dtype=1, k=0, rsvd7=0, job=2, sender=11, origin=11,
            contrib=1, chunk=0, count=4, tsecr=0, tail=bytes(10), magic=MAGIC, ver=VERSION):
        return HDR.pack(magic, ver, typ, flags, dtype, k, rsvd7, job, EPOCH, 0, sender,
                        origin, contrib, 0, chunk, count, 0, 7, tsecr, tail)
    ctl = dict(dtype=0, contrib=0, count=1)
    probe = dict(typ=PROBE, dtype=0, contrib=0, count=0, sender=NONE, origin=NONE)
    fp32 = bytes(16)
    one = cset_bytes(1, [11])
    cases = [
        # valid, one of each type
        (hdr() + fp32, "-"),
        (hdr(typ=RESULT, flags=F_RETX | F_ECHO, tsecr=5, k=1, contrib=1) + one + fp32, "-"),
        (hdr(typ=ACK, flags=F_ECHO, tsecr=9, **ctl), "-"),
        (hdr(typ=NACK_CONTRIB, chunk=3, **dict(ctl, count=32)), "-"),
        (hdr(typ=NACK_RESULT, **ctl), "-"),
        (hdr(**probe) + b"opaque", "-"),
        (hdr(flags=F_ECHO, tsecr=3, **dict(probe, typ=PROBE_REPLY)), "-"),
        (hdr(typ=MCAST, dtype=6, count=64) + bytes(34), "-"),
        (hdr(typ=MCAST, flags=F_RETX) + fp32, "-"),
        (hdr(typ=NACK_MCAST, chunk=5, **dict(ctl, count=32)), "-"),
        (hdr(dtype=2, count=3) + bytes(6), "-"),
        (hdr(typ=ACK, flags=F_ECHO, tsecr=1, chunk=0xffffffff, **ctl), "-"),
        # 1-14 in order
        (hdr()[:53], "truncated"),
        (b"GR", "truncated"),
        (hdr(magic=0x4750) + fp32, "bad_magic"),
        (hdr(ver=2) + fp32, "bad_version"),
        (hdr(typ=0) + fp32, "bad_type"),
        (hdr(typ=10) + fp32, "bad_type"),
        (hdr(flags=0x04) + fp32, "bad_flags"),
        (hdr(typ=ACK, flags=F_RETX | F_ECHO, tsecr=1, **ctl), "bad_flags"),
        (hdr(typ=ACK, **ctl), "bad_flags"),
        (hdr(typ=MCAST, flags=F_ECHO, tsecr=1) + fp32, "bad_flags"),
        (hdr(typ=NACK_MCAST, flags=F_RETX, **ctl), "bad_flags"),
        (hdr(rsvd7=1) + fp32, "reserved_nonzero"),
        (hdr(tail=bytes(9) + b"\x01") + fp32, "reserved_nonzero"),
        (hdr(tsecr=1) + fp32, "reserved_nonzero"),
        (hdr(dtype=7) + fp32, "bad_dtype"),
        (hdr(typ=NACK_RESULT, **dict(ctl, dtype=1)), "bad_dtype"),
        (hdr(k=17) + fp32, "bad_cset_len"),
        (hdr(typ=MCAST, k=1) + one + fp32, "bad_cset_len"),
        (hdr(sender=0) + fp32, "bad_node_id"),
        (hdr(origin=NONE) + fp32, "bad_node_id"),
        (hdr(contrib=0) + fp32, "bad_contrib"),
        (hdr(k=1, contrib=256) + one + fp32, "bad_contrib"),
        (hdr(typ=MCAST, contrib=2) + fp32, "bad_contrib"),
        (hdr(typ=ACK, flags=F_ECHO, tsecr=1, **dict(ctl, contrib=1)), "bad_contrib"),
        (hdr(count=0), "bad_count"),
        (hdr(dtype=4, count=31) + bytes(33), "bad_count"),
        (hdr(typ=NACK_RESULT, **dict(ctl, count=33)), "bad_count"),
        (hdr(typ=NACK_MCAST, **dict(ctl, count=33)), "bad_count"),
        (hdr(typ=ACK, flags=F_ECHO, tsecr=1, chunk=0xffffffff, **dict(ctl, count=2)),
         "bad_count"),
        (hdr(**dict(probe, count=1)), "bad_count"),
        (hdr(count=2300), "oversize"),
        (hdr(**probe) + bytes(8972 - 53), "oversize"),
        (hdr() + bytes(15), "bad_length"),
        (hdr(typ=ACK, flags=F_ECHO, tsecr=1, **ctl) + b"x", "bad_length"),
        (hdr(k=1, contrib=2) + one + fp32, "bad_cset"),
        (hdr(k=1, contrib=2) + cset_bytes(1, [0, 11]) + fp32, "bad_cset"),
    ]
    sealed = []
    seal = struct.Struct(">HBBIIHHQ8s")
    inner = bytes(54 + 16 + 16)
    for lane, seq, ver, aead, rsvd, body, why in (
            (0, 1, 1, 1, bytes(8), inner, "-"), (63, 2 ** 64 - 1, 1, 2, bytes(8), inner, "-"),
            (0, 1, 1, 1, bytes(8), inner[:69], "bad_seal"),
            (0, 1, 2, 1, bytes(8), inner, "bad_seal"), (0, 1, 1, 3, bytes(8), inner, "bad_seal"),
            (64, 1, 1, 1, bytes(8), inner, "bad_seal"), (0, 0, 1, 1, bytes(8), inner, "bad_seal"),
            (0, 1, 1, 1, b"\x01" + bytes(7), inner, "bad_seal")):
        sealed.append((seal.pack(0x4753, ver, aead, 1, KEY_ID, 2, lane, seq, rsvd) + body,
                       why))
    sealed.append((b"GS\x01\x01" + bytes(10), "bad_seal"))
    with open(hexfile, "w") as f:
        for pkt, _ in cases + sealed:
            for i in range(0, len(pkt), 16):
                f.write("%06x  %s\n" % (i, " ".join("%02x" % b for b in pkt[i:i + 16])))
            f.write("\n")
    with open(wantfile, "w") as f:
        f.write("".join("%s\tplain\n" % w for _, w in cases))
        f.write("".join("%s\tsealed\n" % w for _, w in sealed))


def fuzz(hexfile, n=400):
    """n packets of random bytes behind the magic and version (seeded: every run the same),
    as text2pcap input: headers of every length up to 54 and beyond, any type, flags, dtype
    and set length, sealed frames of any length."""
    import random
    rnd = random.Random(20)
    with open(hexfile, "w") as f:
        for i in range(n):
            kind = rnd.randrange(4)
            if kind == 0:    # a header cut anywhere
                pkt = b"GR\x01" + bytes(rnd.randrange(256) for _ in range(rnd.randrange(60)))
            elif kind == 1:  # a whole header, random fields, a random tail
                h = bytearray(rnd.randrange(256) for _ in range(54))
                h[0:3] = b"GR\x01"
                h[3] = rnd.randrange(10)
                h[5] = rnd.randrange(8)
                h[6] = rnd.choice([0, 1, 2, 16, 17, 255])
                pkt = bytes(h) + bytes(rnd.randrange(256) for _ in range(rnd.randrange(700)))
            elif kind == 2:  # a valid-looking data header, any count, short payloads
                pkt = HDR.pack(MAGIC, VERSION, rnd.choice([CONTRIB, RESULT, MCAST]), 0,
                               rnd.randrange(1, 7), rnd.randrange(3), 0, 1, 1, 0, 11, 11,
                               rnd.randrange(1, 4), 0, 0, rnd.randrange(1, 400), 0, 0, 0,
                               bytes(10))
                pkt += bytes(rnd.randrange(256) for _ in range(rnd.randrange(800)))
            else:            # a sealed frame of any length
                pkt = b"GS\x01" + bytes(rnd.randrange(256) for _ in range(rnd.randrange(200)))
            for j in range(0, len(pkt), 16):
                f.write("%06x  %s\n" % (j, " ".join("%02x" % b for b in pkt[j:j + 16])))
            f.write("\n")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "fuzz":
        fuzz(sys.argv[2])
        sys.exit(0)
    if len(sys.argv) == 4 and sys.argv[1] == "crafted":
        crafted(sys.argv[2], sys.argv[3])
        sys.exit(0)
    if len(sys.argv) == 3 and sys.argv[1] == "tables":
        tables(sys.argv[2])
        sys.exit(0)
    if len(sys.argv) == 3 and sys.argv[1] == "run":
        sys.exit(run(sys.argv[2]))
    if len(sys.argv) == 4 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], sys.argv[3]))
    print(__doc__, file=sys.stderr)
    sys.exit(2)
