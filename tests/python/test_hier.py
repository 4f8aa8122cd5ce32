# SPDX-License-Identifier: BSD-3-Clause
"""georeduce.torch.hierarchical_hook against the flat hook through a real gateway:
2 "nodes" x 2 local ranks (tests/python/hier_worker.py, 4 processes in a network
namespace, Gloo inside each node over the loopback) and one georeduce-dataplane in
another namespace on a veth pair (af_packet), holding three jobs: the flat hook's job of
the whole gradient (4 workers) and the two shard jobs (local rank i of both nodes).
Needs root, network namespaces and the dataplane built (GEOREDUCE_DATAPLANE and
GEOREDUCE_DPCTL, set by meson test); skipped with the reason otherwise.

Also the benchmark of BENCHMARKS.md ("Hierarchical hook"), as root:
    GEOREDUCE_LIBRARY=build/lib/client/libgeoreduce.so \
        /usr/bin/python3 tests/python/test_hier.py --bench STEPS WIDTH BUILD_DIR
"""
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
NODES, LOCAL = 2, 2
GW_IP, W_IP = "10.97.0.1", "10.97.0.11"
CHUNK = 200


def n_params():
    from ddp_worker import model
    return sum(p.numel() for p in model().parameters())


def table(job, elements, workers):
    """A one-gateway table: the gateway is the root of one tree of the job's workers."""
    chunks = -(-elements // CHUNK)
    return {"format": "georeduce-table/1", "job": job, "epoch": 1,
            "gateway": {"id": 1, "ipv4": GW_IP, "base_port": 17400, "ports": 16},
            "dtype": "fp32", "elements": elements, "chunk_elements": CHUNK,
            "limits": {"max_trees": 1, "max_children": 1, "max_workers": len(workers),
                       "max_slots": 64},
            "trees": [{"id": 0, "role": "root", "parent": None, "children": [],
                       "workers": [{"id": w, "ipv4": W_IP, "port": 5000 + w}
                                   for w in workers],
                       "expected": len(workers), "subtree_workers": len(workers),
                       "chunk_first": 0, "chunk_count": chunks, "rate_gbps": 1.0,
                       "slots": 64}]}


def flat_id(node, local):
    return 11 + node * LOCAL + local


def hier_id(node, local):
    return 21 + node * LOCAL + local


class Site:
    """The gateway's namespace with the dataplane, the workers' namespace, a veth pair."""

    def __init__(self, dp, ctl, tmp):
        self.dp, self.ctl, self.tmp = dp, ctl, str(tmp)
        p = "gph%d" % os.getpid()
        self.p, self.ng, self.nw = p, p + "g", p + "w"
        self.proc = None

    def sh(self, *args):
        subprocess.run(list(args), check=True, stdout=subprocess.DEVNULL)

    def up(self, n):
        self.sh("ip", "netns", "add", self.ng)
        self.sh("ip", "netns", "add", self.nw)
        self.sh("ip", "-n", self.nw, "link", "set", "lo", "up")
        self.sh("ip", "link", "add", self.p + "a", "netns", self.ng, "type", "veth", "peer",
                "name", self.p + "b", "netns", self.nw)
        self.sh("ip", "-n", self.ng, "link", "set", self.p + "a", "up")
        self.sh("ip", "-n", self.nw, "addr", "add", W_IP + "/24", "dev", self.p + "b")
        self.sh("ip", "-n", self.nw, "link", "set", self.p + "b", "up")
        subprocess.run(["ip", "netns", "exec", self.nw, "ethtool", "-K", self.p + "b", "tx",
                        "off"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sock = os.path.join(self.tmp, "gw.sock")
        self.log = open(os.path.join(self.tmp, "dp.log"), "w")
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", self.ng, self.dp, "--no-huge", "-m", "256", "--no-pci",
             "--no-shconf", "--file-prefix=" + self.p, "-l", "0-1",
             "--vdev=net_af_packet0,iface=%sa" % self.p, "--log-level=lib.eal:error",
             "--log-level=pmd:error", "--", "--addr", "0:%s/24" % GW_IP, "-s", sock,
             "--mbufs", "8192", "--hdr-mbufs", "2048"],
            stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(300):
            if subprocess.run([self.ctl, "-s", sock, "ping"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0:
                break
            time.sleep(0.2)
        half = -(-n // LOCAL)
        tables = {"flat": table(71, n, [flat_id(a, b) for a in range(NODES)
                                        for b in range(LOCAL)])}
        for i in range(LOCAL):
            tables["shard%d" % i] = table(72 + i, half, [hier_id(a, i) for a in range(NODES)])
        for name, t in tables.items():
            path = os.path.join(self.tmp, name + ".json")
            with open(path, "w") as f:
                json.dump(t, f)
            self.sh(self.ctl, "-s", sock, "install", path)

    def tx_bytes(self):
        """Bytes the workers' namespace has sent on its veth (all to the gateway)."""
        out = subprocess.run(["ip", "-n", self.nw, "-s", "-j", "link", "show", "dev",
                              self.p + "b"], check=True, capture_output=True, text=True)
        return json.loads(out.stdout)[0]["stats64"]["tx"]["bytes"]

    def run(self, mode, steps=6, width=0):
        """The 4 ranks of MODE; their outputs, and the workers' bytes sent to the gateway."""
        env = dict(os.environ, GLOO_SOCKET_IFNAME="lo", PYTHONPATH=os.pathsep.join(
            [os.path.dirname(os.path.dirname(os.path.abspath(__import__("georeduce")
                                                             .__file__)))]
            + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
        store = os.path.join(self.tmp, mode + ".store")
        if os.path.exists(store):
            os.unlink(store)
        before = self.tx_bytes()
        procs = []
        for node in range(NODES):
            for local in range(LOCAL):
                name = "%s-%d-%d" % (mode, node, local)
                tab = "flat" if mode != "hier" else "shard%d" % local
                wid = (hier_id if mode == "hier" else flat_id)(node, local)
                log = open(os.path.join(self.tmp, name + ".log"), "w")
                procs.append((name, subprocess.Popen(
                    ["ip", "netns", "exec", self.nw, sys.executable,
                     os.path.join(HERE, "hier_worker.py"), mode, str(node), str(local),
                     store, os.path.join(self.tmp, name + ".json"),
                     os.path.join(self.tmp, tab + ".json"), str(wid), str(steps),
                     str(width)],
                    stdout=log, stderr=subprocess.STDOUT, env=env)))
                log.close()
        docs = []
        for name, p in procs:
            try:
                p.wait(timeout=300)
            except subprocess.TimeoutExpired:
                for _, q in procs:
                    q.kill()
            with open(os.path.join(self.tmp, name + ".log")) as f:
                out = f.read()
            assert p.wait() == 0, name + ": " + out
            with open(os.path.join(self.tmp, name + ".json")) as f:
                docs.append(json.load(f))
        return docs, self.tx_bytes() - before

    def down(self):
        if self.proc is not None:
            self.proc.send_signal(2)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.log.close()
        for n in (self.ng, self.nw):
            subprocess.run(["ip", "netns", "del", n], stderr=subprocess.DEVNULL)
        subprocess.run("rm -rf /var/run/dpdk/%s*" % self.p, shell=True)


def site_or_skip(tmp_path):
    dp, ctl = os.environ.get("GEOREDUCE_DATAPLANE"), os.environ.get("GEOREDUCE_DPCTL")
    if os.geteuid() != 0 or subprocess.run(["ip", "netns", "list"], stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL).returncode != 0:
        pytest.skip("needs root and network namespaces")
    if not dp or not ctl or not os.path.exists(dp):
        pytest.skip("needs georeduce-dataplane and georeduce-dpctl (GEOREDUCE_DATAPLANE, "
                    "GEOREDUCE_DPCTL; meson test sets them where the gateway is built)")
    return Site(dp, ctl, tmp_path)


def f32(hexes):
    return [np.frombuffer(bytes.fromhex(h), np.float32) for h in hexes]


def inputs(rank, step, exact):
    """The stand-in buckets hier_worker.py made at that rank and step, concatenated."""
    import torch
    from hier_worker import values
    return torch.cat(values(rank, step, exact)).double().numpy()


def test_hierarchical_against_flat(tmp_path):
    site = site_or_skip(tmp_path)
    n = n_params()
    try:
        site.up(n)
        ref, _ = site.run("gloo")
        flat, flat_bytes = site.run("flat")
        hier, hier_bytes = site.run("hier")
    finally:
        site.down()
    world = NODES * LOCAL
    for step in range(2):
        # Exactly summable values: every rank of both hooks ends with the same bytes.
        want = sum(inputs(r, step, True) for r in range(world)) / world
        for d in flat + hier:
            assert np.array_equal(f32(d["exact"])[step], want.astype(np.float32))
        # Random values of mixed magnitudes: the hooks add in other orders (the gateway in
        # arrival order; inside the node first, then the nodes), each within the rounding
        # of a sum of 4 fp32 terms of the float64 average.
        xs = [inputs(r, step, False) for r in range(world)]
        want = sum(xs) / world
        bound = 3 * 2.0 ** -24 * sum(np.abs(x) for x in xs) / world + 2.0 ** -149
        for d in flat + hier:
            got = f32(d["random"])[step].astype(np.float64)
            assert np.all(np.abs(got - want) <= bound)
        # Every rank of a hook ends with the same average.
        assert len({d["random"][step] for d in flat}) == 1
        assert len({d["random"][step] for d in hier}) == 1
    # DDP training: the ranks of each hook alike, both close to DDP over Gloo.
    a = f32([ref[0]["params"]])[0]
    for docs in (flat, hier):
        assert len({d["params"] for d in docs}) == 1
        b = f32([docs[0]["params"]])[0]
        assert np.max(np.abs(a - b)) < 1e-5
        assert max(abs(x - y) for x, y in zip(docs[0]["losses"], ref[0]["losses"])) < 1e-5
    # One round a step in both; each hierarchical rank sends half the gradient.
    assert {r[4] for r in flat[0]["records"]} == {world}
    assert {r[4] for r in hier[0]["records"]} == {NODES}
    assert hier[0]["elements"] == -(-n // LOCAL)
    # Each worker sent every chunk of its rounds once (first transmissions; resent ones,
    # which a busy machine makes, apart): a round of E elements is ceil(E / CHUNK) chunks
    # at a flat worker and ceil(ceil(E / 2) / CHUNK) at a hierarchical one, so a node's
    # LAN traffic to the gateway is halved, up to a chunk a round.
    from hier_worker import SIZES
    sent = {}
    for mode, docs, shards in (("flat", flat, 1), ("hier", hier, LOCAL)):
        for d in docs:
            rounds = {}
            for r in d["records"]:
                rounds[r[2]] = rounds.get(r[2], 0) + r[3]
            es = [sum(SIZES)] * 4 + list(rounds.values())
            want = sum(-(-(-(-e // shards)) // CHUNK) for e in es)
            assert d["stats"]["contribs_sent"] == want, (mode, d["stats"], want)
        sent[mode] = sum(d["stats"]["contribs_sent"] for d in docs[:LOCAL])  # node 0
    assert sent["hier"] <= sent["flat"] / 2 + len(es)
    print("bytes the workers sent to the gateway (veth, retransmissions included): flat %d, "
          "hierarchical %d" % (flat_bytes, hier_bytes))


def bench(steps, width, build):
    """Step times and LAN bytes per node of the flat and the hierarchical hook, DDP
    training of hier_worker.bench_model(width)."""
    import shutil
    import tempfile
    from hier_worker import bench_model
    tmp = tempfile.mkdtemp()
    site = Site(os.path.join(build, "dataplane", "georeduce-dataplane"),
                os.path.join(build, "tools", "dpctl", "georeduce-dpctl"), tmp)
    n = sum(p.numel() for p in bench_model(width).parameters())
    out = {"parameters": n, "steps": steps}
    try:
        site.up(n)
        for mode in ("flat", "hier"):
            docs, sent = site.run(mode, steps, width)
            times = sorted(t for d in docs for t in d["times"][1:])
            out[mode] = {"lan_bytes_per_node_step": sent // NODES // steps,
                         "step_ms_median": round(1000 * times[len(times) // 2], 2),
                         "step_ms_p90": round(1000 * times[len(times) * 9 // 10], 2)}
    finally:
        site.down()
        shutil.rmtree(tmp)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--bench":
        sys.path.insert(1, os.path.join(HERE, "..", "..", "python"))
        bench(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    else:
        sys.exit("usage: test_hier.py --bench STEPS WIDTH BUILD_DIR")
