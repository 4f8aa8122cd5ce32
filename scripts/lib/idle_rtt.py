#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""How long an idle gateway takes to answer the first CONTRIB of a round (scripts/bench-idle).

One worker of a one-worker job (its table installed on the gateway, one chunk per round)
sends the CONTRIB of round r, waits for its RESULT, then stays quiet for --gap seconds, so
that every CONTRIB finds the gateway idle (asleep, unless it polls). Prints one line of JSON:
the samples' p50, p99 and max in microseconds, send to RESULT, the first one, the share
answered within 1 ms, and how many were lost.

  idle_rtt.py --gateway IP --worker IP --job J --epoch E --samples N --gap S
"""
import argparse
import json
import socket
import struct
import sys
import time

HDR = struct.Struct(">HBBBBBBIIHHHHIIHHII10s")  # 54 bytes, docs/PROTOCOL.md section 3
MAGIC, VERSION = 0x4752, 1
CONTRIB, RESULT = 1, 2
FP32 = 1
WORKER_ID = 11
ELEMENTS = 64


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gateway", required=True)
    ap.add_argument("--worker", required=True)
    ap.add_argument("--job", type=int, required=True)
    ap.add_argument("--epoch", type=int, default=1)
    ap.add_argument("--gateway-port", type=int, default=17400)
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--gap", type=float, default=0.1)
    ap.add_argument("--timeout", type=float, default=1.0)
    a = ap.parse_args()

    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((a.worker, 5000))
    s.settimeout(a.timeout)
    body = struct.pack("<%df" % ELEMENTS, *([1.0] * ELEMENTS))
    rtt, lost = [], 0
    for r in range(a.samples):
        time.sleep(a.gap)
        hdr = HDR.pack(MAGIC, VERSION, CONTRIB, 0, FP32, 0, 0, a.job, a.epoch, 0, WORKER_ID,
                       WORKER_ID, 1, r, 0, ELEMENTS, 0, 0, 0, bytes(10))
        t0 = time.perf_counter()
        s.sendto(hdr + body, (a.gateway, a.gateway_port))
        while True:
            try:
                pkt = s.recv(65536)
            except socket.timeout:
                lost += 1
                break
            f = HDR.unpack_from(pkt)
            if f[0] == MAGIC and f[2] == RESULT and f[13] == r:
                rtt.append((time.perf_counter() - t0) * 1e6)
                break
    if not rtt:
        print(json.dumps({"samples": 0, "lost": lost}))
        return 1
    first = round(rtt[0], 1)
    under_1ms = sum(1 for x in rtt if x <= 1000) / (len(rtt) + lost) * 100
    rtt.sort()
    q = lambda p: rtt[min(len(rtt) - 1, int(p * len(rtt)))]
    print(json.dumps({"samples": len(rtt), "lost": lost, "p50_us": round(q(0.5), 1),
                      "p99_us": round(q(0.99), 1), "max_us": round(rtt[-1], 1), "first_us": first,
                      "under_1ms_pct": round(under_1ms, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
