#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A control-protocol client over TLS 1.3 written from docs/CONTROL.md with Python's ssl
module, for the certificate rotation test (tls_rotate_e2e.sh): one connection, made with
the given certificate, whose server certificate's serial is printed first, then one
request per line of stdin (or the single request of the command line), each reply printed
as one line of JSON. A refused handshake or a connection closed by the server prints
"error: REASON" and exits 1.

  tls_call.py HOST:PORT CERT KEY CA [OP [ARGS_JSON]]

Without OP, each stdin line is "OP [ARGS_JSON]"; the connection stays open until stdin
ends, so that a test can show that a connection made before a certificate changed still
works after it.
"""
import json
import socket
import ssl
import struct
import sys


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        part = s.recv(n - len(buf))
        if not part:
            raise ConnectionError("connection closed by the server")
        buf += part
    return buf


def call(s, rid, op, args):
    req = {"version": 1, "id": rid, "op": op}
    req.update(args)
    body = json.dumps(req).encode()
    s.sendall(struct.pack(">I", len(body)) + body)
    (n,) = struct.unpack(">I", recv_exact(s, 4))
    return json.loads(recv_exact(s, n))


def request(line):
    op, _, rest = line.strip().partition(" ")
    return op, json.loads(rest) if rest.strip() else {}


def main():
    hostport, cert, key, ca = sys.argv[1:5]
    host, port = hostport.rsplit(":", 1)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.check_hostname = False  # names are the subject of other tests (tls_e2e)
    ctx.load_verify_locations(ca)
    ctx.load_cert_chain(cert, key)
    try:
        raw = socket.create_connection((host, int(port)), timeout=20)
        s = ctx.wrap_socket(raw)
        print("serial", s.getpeercert()["serialNumber"], flush=True)
        lines = [" ".join(sys.argv[5:7])] if len(sys.argv) > 5 else sys.stdin
        for rid, line in enumerate(lines, 1):
            if line.strip():
                op, args = request(line)
                print(json.dumps(call(s, rid, op, args)), flush=True)
    except (OSError, ssl.SSLError, ConnectionError) as e:
        print("error:", e, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
