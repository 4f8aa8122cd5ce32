#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Workers of an end-to-end dataplane test, written from docs/PROTOCOL.md alone.

Each worker (an address on this host) sends its CONTRIB for every chunk of one round to
its gateway over a kernel UDP socket, then collects the RESULTs and checks them
bit-exactly against the sum of every worker's integer-valued tensor. A chunk still without
its RESULT is sent again with RETX every half second (section 10): the gateway answers with
an ACK while the chunk is open and with the RESULT once it is done.

  e2e_worker.py --job J --epoch E --round R --elements N --chunk-elements C \
      --gateway-port BASE --gateway-ports P --worker ID,IP,GATEWAY_IP [...]
      --all-workers ID,ID,... [--port 5000] [--timeout 10]
"""
import argparse
import select
import socket
import struct
import sys
import time

HDR = struct.Struct(">HBBBBBBIIHHHHIIHHII10s")  # 54 bytes, docs/PROTOCOL.md section 3
MAGIC, VERSION = 0x4752, 1
CONTRIB, RESULT, ACK = 1, 2, 3
F_RETX = 0x01
FP32 = 1
RESEND_S = 0.5


def value(worker, element):
    """Worker `worker`'s gradient element: a small integer, so sums are exact."""
    return float((worker * 7 + element) % 61)


def chunk_len(n, ce, c):
    return min(ce, n - c * ce)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--job", type=int, required=True)
    ap.add_argument("--epoch", type=int, required=True)
    ap.add_argument("--round", type=int, default=0)
    ap.add_argument("--tree", type=int, default=0)
    ap.add_argument("--elements", type=int, required=True)
    ap.add_argument("--chunk-elements", type=int, required=True)
    ap.add_argument("--gateway-port", type=int, default=17400)
    ap.add_argument("--gateway-ports", type=int, default=16)
    ap.add_argument("--port", type=int, default=5000)
    ap.add_argument("--worker", action="append", required=True,
                    help="ID,IP,GATEWAY_IP")
    ap.add_argument("--all-workers", required=True)
    ap.add_argument("--timeout", type=float, default=10)
    a = ap.parse_args()

    n, ce = a.elements, a.chunk_elements
    chunks = (n + ce - 1) // ce
    everyone = [int(x) for x in a.all_workers.split(",")]
    workers = []
    for spec in a.worker:
        wid, ip, gw = spec.split(",")
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        s.bind((ip, a.port))
        s.setblocking(False)
        workers.append((int(wid), s, gw))

    def send(wid, s, gw, c, flags):
        cnt = chunk_len(n, ce, c)
        hdr = HDR.pack(MAGIC, VERSION, CONTRIB, flags, FP32, 0, 0, a.job, a.epoch, a.tree,
                       wid, wid, 1, a.round, c, cnt, 0, 0, 0, bytes(10))
        body = struct.pack("<%df" % cnt, *(value(wid, c * ce + i) for i in range(cnt)))
        port = a.gateway_port + c % a.gateway_ports
        while True:
            try:
                s.sendto(hdr + body, (gw, port))
                return
            except BlockingIOError:
                time.sleep(0.001)

    for wid, s, gw in workers:
        for c in range(chunks):
            send(wid, s, gw, c, 0)

    got = {wid: set() for wid, _, _ in workers}
    resend_at = time.time() + RESEND_S
    bad = []
    deadline = time.time() + a.timeout
    socks = {s: wid for wid, s, _ in workers}
    while any(len(g) < chunks for g in got.values()) and time.time() < deadline:
        if time.time() >= resend_at:
            for wid, s, gw in workers:
                for c in range(chunks):
                    if c not in got[wid]:
                        send(wid, s, gw, c, F_RETX)
            resend_at = time.time() + RESEND_S
        ready, _, _ = select.select(list(socks), [], [], 0.1)
        for s in ready:
            wid = socks[s]
            while True:
                try:
                    pkt = s.recv(65536)
                except BlockingIOError:
                    break
                f = HDR.unpack_from(pkt)
                (magic, ver, typ, flags, dtype, cset, _, job, epoch, tree, sender, origin,
                 contrib, rnd, chunk, count) = f[:16]
                if magic == MAGIC and ver == VERSION and typ == ACK and job == a.job:
                    continue  # held at the gateway: the RESULT follows
                if magic != MAGIC or ver != VERSION or typ != RESULT or job != a.job:
                    bad.append("worker %d: unexpected packet type %d" % (wid, typ))
                    continue
                if contrib != len(everyone) or rnd != a.round or count != chunk_len(n, ce, chunk):
                    bad.append("worker %d chunk %d: contrib %d round %d count %d"
                               % (wid, chunk, contrib, rnd, count))
                    continue
                vals = struct.unpack_from("<%df" % count, pkt, HDR.size)
                for i, v in enumerate(vals):
                    e = chunk * ce + i
                    want = sum(value(w, e) for w in everyone)
                    if v != want:
                        bad.append("worker %d chunk %d element %d: %r, want %r"
                                   % (wid, chunk, i, v, want))
                        break
                got[wid].add(chunk)
    for wid, g in got.items():
        if len(g) < chunks:
            bad.append("worker %d: %d of %d results" % (wid, len(g), chunks))
    for b in bad[:20]:
        print("e2e_worker: " + b, file=sys.stderr)
    if bad:
        return 1
    print("e2e_worker: %d workers, %d chunks each, every result exact" % (len(workers), chunks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
