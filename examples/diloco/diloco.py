#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""DiLoCo-style training through georeduce gateways: each site trains its replica alone
for H inner steps, then the sites average their pseudo-gradients (the change of the
parameters over those steps) through the gateways, in one AllReduce, and every site
applies the same outer step to the global parameters.

Run with Debian's /usr/bin/python3 (python3-torch); examples/diloco/run starts one worker
per site of the emulated WAN and compares an mxint8 job with an fp32 one.

  diloco.py params [--hidden N]                   the model's parameter count
  diloco.py worker --table T --worker-id W --rank R --out F [--compare-table T2] ...
  diloco.py report --runs NAME=GLOB [NAME=GLOB...] [--data F]

The algorithm is DiLoCo's (Douillard et al., "DiLoCo: Distributed Low-Communication
Training of Language Models", 2023): AdamW as the inner optimizer, kept by each site
across outer steps; SGD with Nesterov momentum as the outer optimizer (lr 0.7, momentum
0.9), whose gradient is the average pseudo-gradient theta - theta_site. Every site gets
the same bits of that average from the gateways, so every site's global parameters stay
bit for bit the same.

The task (as scripts/lib/train.py's): an MLP 512 -> HIDDEN -> HIDDEN -> 4 classifying
inputs drawn from N(0, 1) by the argmax of a fixed random linear teacher of the first 8
inputs; each site draws its own batches (its rank in the seed), and every site evaluates
the global model on the same held-out set after every outer step.

The outer step is georeduce.diloco's: OuterSync.sync() after the H inner steps, or with
--streaming P, StreamingOuterSync (Streaming DiLoCo: P fragments synced in the background
on a staggered schedule while the inner steps go on, each mixed in with --alpha when its
average is in, or --overlap TAU inner steps after its start). Every outer step records the
time the inner steps waited on the outer sync (wait_s): in blocking mode the whole
AllReduce, in streaming mode only where a fragment's average was needed and not in yet.
The eval loss is the global model's (in streaming mode the site's own parameters are a mix
of it and the site's inner steps).

--compare-table T2 (a second job, fp32; blocking mode): the same pseudo-gradient is also
averaged through T2's job, and the relative L2 error of the job's average against it is
recorded per outer step (the quantisation error the training saw). --error-feedback keeps
what each site's contribution lost in the MX encoding and adds it to the next outer
step's. --dump-first F saves the first outer step's pseudo-gradient and the global
parameters before and after it, for tests/diloco_e2e.sh's check of the outer step.
"""
import argparse
import glob
import hashlib
import json
import math
import sys
import time

IN, CLASSES, LATENT = 512, 4, 8


def model(seed, hidden):
    import torch
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(IN, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, CLASSES))


def teacher(seed):
    import torch
    t = torch.nn.Linear(IN, CLASSES)
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        t.weight.copy_(torch.randn(CLASSES, IN, generator=g))
        t.weight[:, LATENT:] = 0
        t.bias.zero_()
    return t


def draw(t, g, n):
    import torch
    x = torch.randn(n, IN, generator=g)
    with torch.no_grad():
        y = t(x).argmax(dim=1)
    return x, y


def cmd_params(a):
    print(sum(p.numel() for p in model(a.seed, a.hidden).parameters()))
    return 0


def cmd_worker(a):
    import torch
    import georeduce
    import georeduce.diloco as dl

    torch.set_num_threads(1)
    net = model(a.seed, a.hidden)
    params = list(net.parameters())
    n = sum(p.numel() for p in params)
    tch = teacher(a.seed)
    data = torch.Generator().manual_seed(a.seed * 1000 + a.rank)
    held = draw(tch, torch.Generator().manual_seed(a.seed * 1000 + 999), 1024)
    inner = torch.optim.AdamW(params, lr=a.inner_lr)
    client = georeduce.Client.from_table(a.table, a.worker_id, timeout=a.timeout,
                                         first_round=a.first_round)
    ref = None
    if a.compare_table:
        ref = georeduce.Client.from_table(a.compare_table, a.worker_id, timeout=a.timeout,
                                          first_round=a.first_round)
    if client.elements < n:
        raise SystemExit("the job's tensor has %d elements, the model %d parameters"
                         % (client.elements, n))
    outer_kw = dict(outer_lr=a.outer_lr, momentum=a.momentum,
                    error_feedback=a.error_feedback)
    if a.streaming:
        outer = dl.StreamingOuterSync(params, client, fragments=a.streaming,
                                      inner_steps=a.inner, alpha=a.alpha,
                                      overlap=a.overlap or None, **outer_kw)
    else:
        outer = dl.OuterSync(params, client, **outer_kw)

    def evaluate():
        # The global model: in streaming mode the site's own parameters are a mix.
        with torch.no_grad():
            keep = [p.clone() for p in params]
            for p, g in zip(params, outer.global_params()):
                p.copy_(g)
            loss = torch.nn.functional.cross_entropy(net(held[0]), held[1]).item()
            for p, k in zip(params, keep):
                p.copy_(k)
        return loss

    def inner_step():
        x, y = draw(tch, data, a.batch)
        inner.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        inner.step()
        return loss.item()

    outer_steps = [{"outer": 0, "eval": evaluate(), "inner": None, "t": 0.0}]
    # Every site starts its inner steps at the same instant (a launcher's barrier), so
    # that the sites' different start-up times are not counted as waits on the outer sync.
    late = 0.0
    if a.start_at:
        ahead = a.start_at - time.time()
        if ahead > 0:
            time.sleep(ahead)
        else:
            late = -ahead
            print("started %.3f s after --start-at" % late, flush=True)
    t0 = time.perf_counter()
    for k in range(1, a.outer + 1):
        losses, merged = [], []
        for i in range(a.inner):
            losses.append(inner_step())
            if a.step_s:
                time.sleep(a.step_s)  # an accelerator's step: the CPU free meanwhile
            if a.rank == a.slow_site and i == a.inner - 1:
                time.sleep(a.slow_s)  # a site whose inner steps take longer
            if a.streaming:
                merged += outer.step()
        plain, before = None, outer.global_flat()
        if not a.streaming:
            with torch.no_grad():
                plain = before - torch.cat([p.detach().reshape(-1) for p in params])
        if a.streaming:
            if k == a.outer:
                merged += outer.finish()
        else:
            merged.append(outer.sync())
        if a.dump_first and k == 1 and not a.streaming:
            # For a check of the outer step: its input, and the global parameters around it.
            torch.save({"delta": plain, "before": before, "after": outer.global_flat()},
                       a.dump_first)
        rec = {"outer": k, "inner": sum(losses) / len(losses),
               "allreduce_s": max((m.allreduce_s for m in merged), default=0.0),
               "wait_s": sum(m.wait_s for m in merged),
               "contributors": min((m.contributors for m in merged), default=None),
               "merged": [[m.fragment, m.started_step, m.merged_step, m.contributors]
                          for m in merged]}
        if ref is not None and not a.streaming:
            ref.allreduce(plain, average=True)
            avg = outer.last_average()
            rec["pseudo_grad_rel_err"] = (torch.linalg.vector_norm(avg - plain) /
                                          torch.linalg.vector_norm(plain)).item()
        rec["eval"] = evaluate()
        rec["t"] = time.perf_counter() - t0
        outer_steps.append(rec)
        print("outer %d: inner loss %.4f, eval loss %.4f, allreduce %.3f s, waited %.3f s" % (
            k, rec["inner"], rec["eval"], rec["allreduce_s"], rec["wait_s"]), flush=True)
    flat = outer.global_flat()
    doc = {"rank": a.rank, "params": n, "dtype": client.dtype.name,
           "lan_dtype": client.config.lan_dtype.name if client.config.lan_dtype else None,
           "inner_steps": a.inner, "streaming": a.streaming, "outer": outer_steps,
           "waited_s": outer.waited_s, "late_start_s": late,
           "params_sha256": hashlib.sha256(flat.numpy().tobytes()).hexdigest(),
           "stats": client.stats()}
    client.close()
    if ref is not None:
        ref.close()
    with open(a.out, "w") as f:
        json.dump(doc, f)
    return 0


def load(pattern):
    docs = [json.load(open(p)) for p in sorted(glob.glob(pattern))]
    if not docs:
        raise SystemExit("report: no file matches %s" % pattern)
    return docs


def cmd_report(a):
    runs = []
    for spec in a.runs:
        name, _, pattern = spec.partition("=")
        if not pattern:
            raise SystemExit("report: --runs NAME=GLOB, not '%s'" % spec)
        runs.append((name, load(pattern)))
    k = min(len(d["outer"]) for _, docs in runs for d in docs)
    head = "  %5s" % "outer"
    for name, _ in runs:
        head += "  %12s  %12s" % ("eval " + name, "inner " + name)
    print(head)
    curves = {}
    for name, docs in runs:
        if len({d["params_sha256"] for d in docs}) != 1:
            raise SystemExit("report: the %s sites ended with different parameters" % name)
        curves[name] = [docs[0]["outer"][i]["eval"] for i in range(k)]
    for i in range(k):
        line = "  %5d" % i
        for name, docs in runs:
            inner = [d["outer"][i]["inner"] for d in docs]
            line += "  %12.5f  %12s" % (curves[name][i], "-" if inner[0] is None
                                        else "%.5f" % (sum(inner) / len(inner)))
        print(line)
    for name, docs in runs:
        # The site that came last waits for no other: its call is the transfer alone.
        ar = [min(d["outer"][i]["allreduce_s"] for d in docs) for i in range(1, k)]
        ar = [x for x in ar if x > 0]     # streaming: an outer step may merge nothing
        err = [d["outer"][i].get("pseudo_grad_rel_err") for d in docs for i in range(1, k)]
        err = [e for e in err if e is not None]
        sent = sum(d["stats"]["contribs_sent"] for d in docs)
        retx = sum(d["stats"]["contribs_retx"] for d in docs)
        waited = [d.get("waited_s", 0.0) for d in docs]
        mode = ", streaming with %d fragments" % docs[0]["streaming"] \
            if docs[0].get("streaming") else ""
        print("%s: %d sites, %s%s%s, final eval loss %.5f, AllReduce of %s "
              "%.3f s (median; at the site that came last)%s; contributions resent %.2f%% "
              "(%d of %d); the inner steps waited %.3f s on the outer sync (mean of the "
              "sites, whole run)" % (
                  name, len(docs), docs[0]["dtype"],
                  " (LAN %s)" % docs[0]["lan_dtype"] if docs[0]["lan_dtype"] else "", mode,
                  curves[name][-1], "a fragment's pseudo-gradient, from its start," if mode
                  else "the pseudo-gradient", sorted(ar)[len(ar) // 2] if ar else float("nan"),
                  ", its error against fp32: %.3g relative L2 (mean)" %
                  (sum(err) / len(err)) if err else "",
                  100.0 * retx / sent if sent else 0.0, retx, sent,
                  sum(waited) / len(waited)))
        late = max(d.get("late_start_s", 0.0) for d in docs)
        if late > 0:
            print("%s: a site started its inner steps %.3f s after the common start "
                  "(its set-up took longer): that much of the waits is start-up" % (name, late))
    if len(runs) >= 2:
        a_name, b_name = runs[0][0], runs[1][0]
        d = max(abs(x - y) for x, y in zip(curves[a_name], curves[b_name]))
        print("diloco: %d outer steps of %d inner, eval loss %s %.5f, %s %.5f, "
              "max difference %.2e" % (k - 1, runs[0][1][0]["inner_steps"], a_name,
                                       curves[a_name][-1], b_name, curves[b_name][-1], d))
    if a.data:
        with open(a.data, "w") as f:
            f.write("# outer step, eval loss; one block per run: %s\n"
                    % ", ".join(n for n, _ in runs))
            for name, _ in runs:
                for i, v in enumerate(curves[name]):
                    f.write("%d %.6f\n" % (i, v))
                f.write("\n\n")
    bad = [n for n, c in curves.items() if not all(math.isfinite(v) for v in c)]
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("params")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--hidden", type=int, default=1024)
    w = sub.add_parser("worker")
    w.add_argument("--table", required=True)
    w.add_argument("--compare-table")
    w.add_argument("--worker-id", type=int, required=True)
    w.add_argument("--rank", type=int, required=True)
    w.add_argument("--outer", type=int, default=20, help="outer steps [20]")
    w.add_argument("--inner", type=int, default=20, help="inner steps H per outer step [20]")
    w.add_argument("--hidden", type=int, default=1024)
    w.add_argument("--batch", type=int, default=64)
    w.add_argument("--inner-lr", type=float, default=1e-3)
    w.add_argument("--outer-lr", type=float, default=0.7)
    w.add_argument("--momentum", type=float, default=0.9)
    w.add_argument("--seed", type=int, default=7)
    w.add_argument("--timeout", type=float, default=120.0)
    w.add_argument("--first-round", type=int, default=0)
    w.add_argument("--slow-site", type=int, default=-1,
                   help="the rank of a site whose inner steps take --slow-s longer [none]")
    w.add_argument("--slow-s", type=float, default=0.0)
    w.add_argument("--step-s", type=float, default=0.0,
                   help="seconds each inner step also takes, the CPU idle (a stand-in for "
                   "an accelerator's compute) [0]")
    w.add_argument("--streaming", type=int, default=0, metavar="P",
                   help="streaming DiLoCo with P fragments [0: blocking outer steps]")
    w.add_argument("--alpha", type=float, default=0.5,
                   help="streaming: the mixing factor of a merged fragment [0.5]")
    w.add_argument("--overlap", type=int, default=0, metavar="TAU",
                   help="streaming: merge TAU inner steps after a fragment's start [0: "
                   "once its average is in]")
    w.add_argument("--start-at", type=float, default=0.0, metavar="T",
                   help="start the inner steps at Unix time T (the same at every site); "
                   "a site set up later starts at once and says how late [0: at once]")
    w.add_argument("--error-feedback", action="store_true",
                   help="keep each contribution's MX error for the next outer step")
    w.add_argument("--dump-first", metavar="F",
                   help="blocking: save the first outer step's pseudo-gradient and the "
                   "global parameters before and after it (torch.save) into F")
    w.add_argument("--out", required=True)
    r = sub.add_parser("report")
    r.add_argument("--runs", nargs="+", required=True, metavar="NAME=GLOB")
    r.add_argument("--data", help="write eval loss against outer step for gnuplot here")
    a = ap.parse_args()
    if a.cmd in ("params", "worker") and a.hidden < 1:
        ap.error("--hidden must be at least 1")
    if a.cmd == "worker" and (a.outer < 1 or a.inner < 1):
        ap.error("--outer and --inner must be at least 1")
    if a.cmd == "worker" and not 0 <= a.step_s < 3600:
        ap.error("--step-s: seconds, 0 or more, not %g" % a.step_s)
    if a.cmd == "worker" and not 0 <= a.streaming <= a.inner:
        ap.error("--streaming: 0 (blocking) to --inner fragments, not %d" % a.streaming)
    return {"params": cmd_params, "worker": cmd_worker, "report": cmd_report}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
