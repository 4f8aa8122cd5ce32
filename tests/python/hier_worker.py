# SPDX-License-Identifier: BSD-3-Clause
"""One rank of 2 "nodes" x 2 local ranks, for tests/python/test_hier.py and the benchmark.

    python3 hier_worker.py MODE NODE LOCAL STORE OUT TABLE WORKER_ID [STEPS [WIDTH]]

MODE "flat": every rank is a worker of one job of the whole gradient (ddp_comm_hook);
"hier": local rank i is a worker of the job of shard i (hierarchical_hook over the node's
Gloo group); "gloo": DDP's own AllReduce over the 4 ranks (no gateway). The 4 ranks meet
through STORE (torch's file rendezvous); Gloo's own traffic stays on the loopback.

Writes to OUT: the results of stand-in buckets of exactly summable values and of random
values (hex of their fp32 bytes), then the losses and final parameters of STEPS steps of
DDP training with the hook (tests/python/ddp_worker.py's model), the records, the time of
each training step and the client's counters. WIDTH > 0 (the benchmark): no stand-in
buckets, and a model of one hidden layer of WIDTH units (bench_model()).
"""
import faulthandler
import json
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import georeduce
import georeduce.torch as grt
from ddp_worker import model
from test_torch import Bucket  # the stand-in GradBucket

NODES, LOCAL = 2, 2
SIZES = (301, 77, 1000)  # stand-in buckets a step: none a multiple of the local world


def bench_model(width):
    torch.manual_seed(1234)
    return torch.nn.Sequential(torch.nn.Linear(37, width), torch.nn.ReLU(),
                               torch.nn.Linear(width, 5))


def values(rank, step, exact):
    """The stand-in buckets of a rank and step: multiples of 1/16 below 2**10 (every sum
    and the quarter exact), or random values of mixed magnitudes."""
    gen = torch.Generator().manual_seed(1000 * rank + step + (0 if exact else 500))
    ts = []
    for n in SIZES:
        if exact:
            ts.append(torch.randint(-2 ** 14, 2 ** 14, (n,), generator=gen) / 16.0)
        else:
            ts.append(torch.randn(n, generator=gen) * 2.0 ** torch.randint(
                -8, 8, (n,), generator=gen))
    return ts


def buckets(state, hook, rank, exact):
    """Two steps of stand-in buckets through the hook; the results' bytes, hex."""
    out = []
    for step in range(2):
        ts = values(rank, step, exact)
        futs = [hook(state, Bucket(t, i, i == len(ts) - 1)) for i, t in enumerate(ts)]
        for f in futs:
            f.wait()
        out.append(torch.cat(ts).numpy().tobytes().hex())
    return out


def main() -> int:
    mode, node, local, store, out, table, wid = sys.argv[1:8]
    node, local, wid = int(node), int(local), int(wid)
    steps = int(sys.argv[8]) if len(sys.argv) > 8 else 6
    width = int(sys.argv[9]) if len(sys.argv) > 9 else 0
    rank = node * LOCAL + local
    faulthandler.dump_traceback_later(200, exit=True)  # a hang shows where it is
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="file://" + os.path.abspath(store),
                            rank=rank, world_size=NODES * LOCAL)
    groups = [dist.new_group(list(range(n * LOCAL, (n + 1) * LOCAL)))
              for n in range(NODES)]
    doc = {}
    state = None
    if mode != "gloo":
        client = georeduce.Client.from_table(table, wid, timeout=10.0)
        if mode == "hier":
            state = grt.HierState(client, groups[node], record=True)
            hook = grt.hierarchical_hook
        else:
            state = grt.HookState(client, record=True)
            hook = grt.ddp_comm_hook
        if not width:
            doc["exact"] = buckets(state, hook, rank, True)
            doc["random"] = buckets(state, hook, rank, False)
            state.records.clear()
            state.step = 0
    dist._DEFAULT_FIRST_BUCKET_BYTES = 4096 if not width else 2 ** 20
    net = DDP(bench_model(width) if width else model(),
              bucket_cap_mb=4096 / 2 ** 20 if not width else 25, broadcast_buffers=False)
    if state is not None:
        net.register_comm_hook(state, hook)
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(99 + rank)
    losses, times = [], []
    for _ in range(steps):
        x = torch.randn(16, 37, generator=gen)
        y = torch.randint(0, 5, (16,), generator=gen)
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        losses.append(loss.item())
    params = torch.cat([p.detach().reshape(-1) for p in net.parameters()])
    doc.update(losses=losses, times=times, params=params.numpy().tobytes().hex())
    if state is not None:
        doc["records"] = [[r.step, r.index, r.round, r.elements, r.contributors]
                          for r in state.records]
        doc["stats"] = state.client.stats()
        doc["elements"] = state.client.elements
        if mode == "hier":
            state.close()
        state.client.close()
    with open(out, "w") as f:
        json.dump(doc, f)
    dist.barrier()
    sys.stdout.flush()
    os._exit(0)  # as ddp_worker.py: torch 1.13 may hang tearing DDP's reducer down


if __name__ == "__main__":
    sys.exit(main())
