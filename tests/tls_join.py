#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""One worker joined through the control process with libgeoreduce's join API (through
the Python binding's ControlSource), driven from stdin, for the certificate rotation
test (tls_rotate_e2e.sh): it loads the live epoch's configuration, then for each line

  ask     one `worker` request without waiting (gr_join_wait(), 0 ms): prints
          "ask RC ERROR", RC 0 (no other epoch), 1 (another) or a negative errno
  reload  gr_join_reload_tls(): prints "reloaded: LINE" or "reload failed: ERROR"

  tls_join.py CONTROL JOB WORKER CERT KEY CA
"""
import ctypes
import sys

from georeduce import _lib
from georeduce.client import ConfigError, ControlSource


def main():
    control, job, worker, cert, key, ca = sys.argv[1:7]
    src = ControlSource(control, int(job), cert=cert, key=key, ca=ca, timeout=30)
    epoch = src.load(int(worker)).epoch
    print("loaded epoch", epoch, flush=True)
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "ask":
            cfg, err = _lib.GrConfig(), ctypes.create_string_buffer(_lib.ERR_MAX)
            rc = _lib.lib().gr_join_wait(src._join, epoch, 0, ctypes.byref(cfg), err,
                                         _lib.ERR_MAX)
            print("ask", rc, err.value.decode(errors="replace") if rc < 0 else "",
                  flush=True)
        elif cmd == "reload":
            try:
                print("reloaded:", src.reload_tls(), flush=True)
            except ConfigError as e:
                print("reload failed:", e, flush=True)
    src.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
