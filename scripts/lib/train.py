#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The training of scripts/demo --train and scripts/bench-train: one worker per site of the
emulated WAN trains the same model, data-parallel, with DistributedDataParallel.

Run with Debian's /usr/bin/python3 (python3-torch); the python3 on PATH may be another
interpreter that does not see Debian's packages.

  train.py params                                     the model's parameter count
  train.py worker --mode georeduce --table T --worker-id W --rank R --world N ...
  train.py worker --mode gloo --master ADDR:PORT --rank R --world N ...
  train.py allreduce --table T --worker-id W --rounds K --out F   (Client.allreduce only)
  train.py report --georeduce 'DIR/geo-*.json' --gloo 'DIR/gloo-*.json' [--every K]
                  [--plot PNG]

The model: an MLP 512 -> 1024 -> 1024 -> 4 (1,579,012 parameters: 6.02 MiB of fp32
gradients per step), trained with SGD (momentum 0.9) on a classification task generated
from the seed: inputs drawn from N(0, 1), labels the argmax of a fixed random linear
teacher of the first 8 inputs; each worker draws its own batches (its rank in the
seed). Both modes build the same model from
the same seed and see the same batches.

--mode georeduce: DDP over a process group of this worker alone, with the georeduce hook
registered: the sites share no network path but the gateways, so every byte of every
gradient bucket goes through them (DDP's one-rank group does nothing across sites; the
replicas start equal because they are built from one seed). --mode gloo: DDP's own
allreduce over a Gloo process group of every worker (TCP), through the kernel-WAN delay
lines (scripts/lib/testbed.py, kernel-wan.sh).
"""
import argparse
import glob
import json
import os
import sys
import tempfile
import time

IN, HIDDEN, CLASSES, LATENT = 512, 1024, 4, 8


def model(seed):
    import torch
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(IN, HIDDEN), torch.nn.ReLU(),
                               torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(),
                               torch.nn.Linear(HIDDEN, CLASSES))


def batches(seed, rank, batch, steps):
    """The worker's batches: the same in every run of the same seed and rank."""
    import torch
    teacher = torch.nn.Linear(IN, CLASSES)
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        teacher.weight.copy_(torch.randn(CLASSES, IN, generator=g))
        teacher.weight[:, LATENT:] = 0
        teacher.bias.zero_()
    g = torch.Generator().manual_seed(seed * 1000 + rank)
    out = []
    for _ in range(steps):
        x = torch.randn(batch, IN, generator=g)
        with torch.no_grad():
            y = teacher(x).argmax(dim=1)
        out.append((x, y))
    return out


def cmd_params(a):
    print(sum(p.numel() for p in model(a.seed).parameters()))
    return 0


def cmd_worker(a):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    net = model(a.seed)
    data = batches(a.seed, a.rank, a.batch, a.steps)
    state = None
    if a.mode == "georeduce":
        import georeduce
        import georeduce.torch as grt
        store = dist.FileStore(tempfile.mktemp(prefix="georeduce-train-"), 1)
        pg = dist.ProcessGroupGloo(store, 0, 1)      # this worker alone
        ddp = DDP(net, process_group=pg, bucket_cap_mb=a.bucket_mb, broadcast_buffers=False)
        client = georeduce.Client.from_table(a.table, a.worker_id, timeout=a.timeout,
                                             first_round=a.first_round)
        state = grt.HookState(client, record=True)
        hook = {"fp32": grt.ddp_comm_hook, "fp16": grt.fp16_compress_hook,
                "bf16": grt.bf16_compress_hook}[a.hook]
        ddp.register_comm_hook(state, hook)
    elif a.mode == "gloo":
        dist.init_process_group("gloo", init_method="tcp://" + a.master, rank=a.rank,
                                world_size=a.world)
        ddp = DDP(net, bucket_cap_mb=a.bucket_mb, broadcast_buffers=False)
        if a.torch_hook == "fp16":
            from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
            ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    else:  # local: the same computation without any communication
        ddp = net
    opt = torch.optim.SGD(ddp.parameters(), lr=a.lr, momentum=0.9)
    steps = []
    t0 = time.perf_counter()
    for i, (x, y) in enumerate(data):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
        steps.append({"step": i, "loss": loss.item(), "t": time.perf_counter() - t0})
    doc = {"mode": a.mode, "rank": a.rank, "params": sum(p.numel() for p in net.parameters()),
           "steps": steps, "t0": t0}
    if state is not None:
        doc["records"] = [{"step": r.step, "index": r.index, "round": r.round,
                           "elements": r.elements, "submitted": r.submitted - t0,
                           "started": r.started - t0, "in_library": r.in_library,
                           "finished": r.finished - t0, "done": r.done - t0,
                           "contributors": r.contributors, "epoch": r.epoch}
                          for r in state.records]
        doc["stats"] = state.client.stats()
        state.client.close()
    if a.mode == "gloo":
        dist.destroy_process_group()
    with open(a.out, "w") as f:
        json.dump(doc, f)
    # Out now: torch 1.13 now and then hangs tearing DDP's reducer down after a run with
    # a communication hook over Gloo (everything is written by now).
    sys.stdout.flush()
    os._exit(0)


def cmd_allreduce(a):
    """Client.allreduce of the job's whole tensor, round after round (the hook's bytes of
    one step in one call, without DDP): the Python binding against georeduce-worker."""
    import numpy as np
    import georeduce

    c = georeduce.Client.from_table(a.table, a.worker_id, timeout=a.timeout,
                                    first_round=a.first_round, follow=not a.no_follow)
    buf = np.ones(c.elements, np.float32)
    times = []
    for _ in range(a.rounds):
        t = time.perf_counter()
        n = c.allreduce(buf)
        times.append(time.perf_counter() - t)
        if n != a.world:
            raise SystemExit("round: %d contributors, not %d" % (n, a.world))
        buf.fill(1.0)
    stats = c.stats()
    # What the binding adds to a call: before and after libgeoreduce, in its thread, and
    # the hop to that thread and back.
    binding = [(t.finished - t.started) - t.in_library for t in c.timings]
    c.close()
    with open(a.out, "w") as f:
        json.dump({"rounds_s": times, "elements": int(buf.size), "stats": stats,
                   "binding_s": binding,
                   "in_library_s": [t.in_library for t in c.timings]}, f)
    return 0


def load(pattern):
    docs = [json.load(open(p)) for p in sorted(glob.glob(pattern))]
    if not docs:
        raise SystemExit("report: no file matches %s" % pattern)
    return docs


def per_step(docs):
    """Per step: the mean loss over the workers, and the time the slowest ended it."""
    n = min(len(d["steps"]) for d in docs)
    loss = [sum(d["steps"][i]["loss"] for d in docs) / len(docs) for i in range(n)]
    t = [max(d["steps"][i]["t"] for d in docs) for i in range(n)]
    return loss, t


def s_per_step(t):
    """Seconds per step after the first (which waits for every worker to start)."""
    return (t[-1] - t[0]) / (len(t) - 1)


def cmd_report(a):
    geo, gloo = load(a.georeduce), load(a.gloo)
    gl, gt = per_step(geo)
    ll, lt = per_step(gloo)
    n = min(len(gl), len(ll))
    print("  %5s  %14s  %14s  %10s  %12s  %12s" % ("step", "loss georeduce", "loss gloo",
                                                   "difference", "t georeduce", "t gloo"))
    for i in range(n):
        if i % a.every == 0 or i == n - 1:
            print("  %5d  %14.6f  %14.6f  %10.2e  %11.2fs  %11.2fs" % (
                i, gl[i], ll[i], abs(gl[i] - ll[i]), gt[i], lt[i]))
    d = max(abs(gl[i] - ll[i]) for i in range(n))
    sg, sl = s_per_step(gt[:n]), s_per_step(lt[:n])
    if a.data:
        with open(a.data, "w") as f:
            f.write("# time since the end of step 0 (s), mean loss: georeduce, then gloo\n")
            for i in range(n):
                f.write("%.3f %.6f\n" % (gt[i] - gt[0], gl[i]))
            f.write("\n\n")
            for i in range(n):
                f.write("%.3f %.6f\n" % (lt[i] - lt[0], ll[i]))
    print("train: %d steps, georeduce %.2f s/step, gloo %.2f s/step, speedup %.2fx, "
          "max loss difference %.2e" % (n, sg, sl, sl / sg, d))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("params")
    p.add_argument("--seed", type=int, default=7)
    w = sub.add_parser("worker")
    w.add_argument("--mode", choices=("georeduce", "gloo", "local"), required=True)
    w.add_argument("--rank", type=int, required=True)
    w.add_argument("--world", type=int, required=True)
    w.add_argument("--steps", type=int, default=30)
    w.add_argument("--batch", type=int, default=64)
    w.add_argument("--lr", type=float, default=0.1)
    w.add_argument("--seed", type=int, default=7)
    w.add_argument("--bucket-mb", type=float, default=25.0, help="DDP's bucket_cap_mb [25]")
    w.add_argument("--table")
    w.add_argument("--worker-id", type=int)
    w.add_argument("--hook", choices=("fp32", "fp16", "bf16"), default="fp32")
    w.add_argument("--timeout", type=float, default=120.0)
    w.add_argument("--first-round", type=int, default=0)
    w.add_argument("--master")
    w.add_argument("--torch-hook", choices=("none", "fp16"), default="none",
                   help="gloo: torch's fp16_compress_hook")
    w.add_argument("--out", required=True)
    r = sub.add_parser("allreduce")
    r.add_argument("--table", required=True)
    r.add_argument("--worker-id", type=int, required=True)
    r.add_argument("--world", type=int, required=True)
    r.add_argument("--rounds", type=int, default=5)
    r.add_argument("--timeout", type=float, default=120.0)
    r.add_argument("--first-round", type=int, default=0)
    r.add_argument("--no-follow", action="store_true", help="Client(follow=False)")
    r.add_argument("--out", required=True)
    rp = sub.add_parser("report")
    rp.add_argument("--georeduce", required=True)
    rp.add_argument("--gloo", required=True)
    rp.add_argument("--every", type=int, default=5)
    rp.add_argument("--data", help="write loss against time for gnuplot here")
    a = ap.parse_args()
    if a.cmd == "worker" and a.mode == "georeduce" and (not a.table or not a.worker_id):
        ap.error("--mode georeduce needs --table and --worker-id")
    if a.cmd == "worker" and a.mode == "gloo" and not a.master:
        ap.error("--mode gloo needs --master ADDR:PORT")
    return {"params": cmd_params, "worker": cmd_worker, "allreduce": cmd_allreduce,
            "report": cmd_report}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
