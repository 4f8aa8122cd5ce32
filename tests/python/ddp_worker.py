# SPDX-License-Identifier: BSD-3-Clause
"""One rank of a small DistributedDataParallel training, for tests/python/test_torch.py.

    python3 ddp_worker.py RANK WORLD STORE_FILE HOOK STEPS OUT [TABLE WORKER_ID]

The ranks meet through STORE_FILE (torch's file rendezvous), not a TCP port: a port
chosen free by the test can be taken by any outgoing connection before rank 0 binds it.

HOOK is "gloo" (DDP's own allreduce over the Gloo process group) or one of "fp32",
"fp16", "bf16", "mx" (georeduce.torch's ddp_comm_hook, fp16_compress_hook,
bf16_compress_hook, mx_compress_hook through the gateway of TABLE), or "gloo-fp16"
(torch's fp16_compress_hook). Writes the
losses, the final parameters (hex of their fp32 bytes) and the hook's records to OUT.
"""
import faulthandler
import json
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import georeduce
import georeduce.torch as grt


def model() -> torch.nn.Module:
    torch.manual_seed(1234)
    return torch.nn.Sequential(torch.nn.Linear(37, 64), torch.nn.ReLU(),
                               torch.nn.Linear(64, 33), torch.nn.ReLU(),
                               torch.nn.Linear(33, 5))


def main() -> int:
    rank, world, store, hook, steps, out = sys.argv[1:7]
    rank, world, steps = int(rank), int(world), int(steps)
    faulthandler.dump_traceback_later(200, exit=True)  # a hang shows where it is
    torch.set_num_threads(1)
    # DDP_DEVICE=cuda (tests/python/test_cuda.py): the model and batches on the GPU, with
    # deterministic kernels, so that two runs compute the same gradients.
    device = torch.device(os.environ.get("DDP_DEVICE", "cpu"))
    if device.type == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
    dist.init_process_group("gloo", init_method="file://" + os.path.abspath(store), rank=rank,
                            world_size=world)
    # Several buckets of a small model: DDP's first bucket (1 MiB by default) too.
    dist._DEFAULT_FIRST_BUCKET_BYTES = 4096
    net = DDP(model().to(device), bucket_cap_mb=4096 / 2 ** 20, broadcast_buffers=False)
    state = None
    if hook == "gloo-fp16":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        net.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif hook != "gloo":
        table, wid = sys.argv[7], int(sys.argv[8])
        client = georeduce.Client.from_table(table, wid, timeout=2.0)
        state = grt.HookState(client, record=True)
        fn = {"fp32": grt.ddp_comm_hook, "fp16": grt.fp16_compress_hook,
              "bf16": grt.bf16_compress_hook, "mx": grt.mx_compress_hook}[hook]
        net.register_comm_hook(state, fn)
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(99 + rank)
    losses = []
    for _ in range(steps):
        x = torch.randn(16, 37, generator=gen)
        y = torch.randint(0, 5, (16,), generator=gen)
        x, y = x.to(device), y.to(device)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    params = torch.cat([p.detach().reshape(-1) for p in net.parameters()]).cpu()
    doc = {"losses": losses, "params": params.numpy().tobytes().hex()}
    if state is not None:
        doc["records"] = [[r.step, r.index, r.round, r.elements, r.contributors, r.epoch]
                          for r in state.records]
        doc["epoch"] = state.client.epoch
        state.client.close()
    with open(out, "w") as f:
        json.dump(doc, f)
    dist.destroy_process_group()
    # Out now: torch 1.13 now and then hangs tearing DDP's reducer down after a run with
    # a communication hook over Gloo (everything is written by now).
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
