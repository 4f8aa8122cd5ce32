#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Describe an emulated multi-datacenter WAN on one machine, from a topology.

Writes into DIR:
  gwI[-K].sh       starts gateway K of site I (its dataplane, in the background; pid in
                   gwI[-K].pid, output appended to gwI[-K].log, control socket
                   gwI[-K].sock): up.sh runs each, and running one again restarts a
                   gateway that was killed
  up.sh            builds it: a network namespace per site, a veth pair per WAN link
                   (shaped with tc tbf to the link's scaled bandwidth, both directions),
                   a LAN veth pair per site (the workers' kernel side and the dataplane's
                   side), and one georeduce-dataplane per site on net_af_packet ports,
                   its WAN ports delaying their frames by the link's one-way latency
                   (the dataplane's --fault delay line: these kernels have no netem)
  down.sh          removes everything up.sh made (safe to run twice, or after a failure)
  deployment.json  georeduce-deployment/1 for georeduce-control: the scaled topology,
                   the gateways and one job per algorithm asked for
  topology.json    the scaled topology the plans are made for
  sites.json       per site: namespace, gateway, workers (for the scripts that drive it)
  control.json     with --tls: the control process's namespace, address and API
  pki/             with --tls: the CA and certificates of the run (scripts/georeduce-pki)
  kernel-wan.sh    with --delayline: stops the dataplanes and puts a delay line
                   (tests/wan_delayline.c) in each site instead, so that the kernel's own
                   traffic between the sites (Gloo's TCP) crosses the same links, shaped
                   and delayed as the gateways' traffic was: each WAN veth keeps its tbf,
                   each frame sent on it waits the link's one-way latency first

With --mtu N (576 .. 9000, default 1500) every veth and bridge of the sites carries IP
packets of N bytes, the dataplanes run --mtu N with af_packet ring frames that hold them
(framesz: their mbufs' data room, docs/DATAPLANE.md "Jumbo frames"), and every job's
`mtu` is N, so that the control process sizes its chunks for it (--chunk-bytes sets
them instead).

Addressing: site i (0-based) is 10.99.i.0/24; its gateway is 10.99.i.1 on every port
(the WAN ports are unnumbered point-to-point links with a /32 and a route to the peer
site's /24), its workers 10.99.i.10, .11, ... on the kernel side of the LAN pair.
Only addresses inside the namespaces it creates are used.

With --gateways-per-site G (one number, or one per site: 2,1,...) site i has G
georeduce-dataplane processes in its namespace, gateway k at 10.99.i.(k+1), each holding a
shard of every job's tensor: the workers' addresses are on a bridge (lanbr) to which each
gateway has a veth of its own (glK on the dataplane's side), and each WAN link's veth is
on a bridge (wbL) to which each gateway has a veth (gKwL), so that the site's gateways
share the site's shaped links. --gateway-mbit R shapes each gateway's LAN veth to R
Mbit/s each way (tbf on both ends), so that a gateway, not the WAN, can be the
bottleneck; the topology's lan_gbps is then R. Either option selects this layout, also
with G = 1, so that runs with one and with several gateways differ in nothing else.

With --tls, a namespace of its own for the control process (CTL) and a management
network of veths (not the shaped WAN): a bridge 10.98.0.1/24 in CTL and, per site i, a
veth to it, 10.98.0.(i+2) in the site's namespace. Each dataplane serves the control
protocol over TLS there on port 7300 (besides its unix socket); the deployment names
those tls:// endpoints, and the control process's API is tls://10.98.0.1:7310.
Certificates are made for the run.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys

BASE_PORT, PORTS, WORKER_PORT = 17400, 16, 5000
MGMT_PORT, API_PORT, CONTROL_IP = 7300, 7310, "10.98.0.1"


def mgmt_ip(i, k=0):
    """The management address of gateway k of site i."""
    return "10.98.%d.%d" % (k, i + 2)


def fail(msg):
    print("testbed: " + msg, file=sys.stderr)
    sys.exit(2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("topology")
    ap.add_argument("--dir", required=True)
    ap.add_argument("--dataplane", required=True, help="georeduce-dataplane executable")
    ap.add_argument("--dpctl", required=True, help="georeduce-dpctl executable")
    ap.add_argument("--scale", type=float, default=0.1,
                    help="bandwidth scale: emulated Mbit/s = gbps x 1000 x scale [0.1]")
    ap.add_argument("--latency-scale", type=float, default=1.0,
                    help="one-way latency scale [1]")
    ap.add_argument("--workers", type=int, default=1, help="workers per site [1]")
    ap.add_argument("--workers-from-topology", action="store_true",
                    help="workers per site as the topology's nodes say (0: a relay)")
    ap.add_argument("--jobs", default="mtree", help="algorithms, one job each: "
                    "mtree, ring, single-tree, crew, blueconnect, selmcast [mtree]")
    ap.add_argument("--min-workers", type=int, default=0,
                    help="crew jobs: a round completes at this many workers [all]")
    ap.add_argument("--grace-ms", default="",
                    help="crew jobs with --min-workers: the grace window after it, ms or "
                    "\"auto\" (docs/DEPLOYMENT.md) [none]")
    ap.add_argument("--lan-delay", default="", metavar="SITE=MS[,SITE=MS...]",
                    help="delay every frame a site's gateways send to its workers by MS "
                    "(a delay line on the LAN port, which the dataplanes' `delay` op may "
                    "change): its workers get their results that much later and so start "
                    "each round that much late [none]")
    ap.add_argument("--weights", default="",
                    help="the jobs' weights in the links (docs/DEPLOYMENT.md), one per job "
                         "(comma-separated) [1 each]")
    ap.add_argument("--elements", default=str(1 << 24),
                    help="the jobs' tensor length, or one per job (comma-separated)")
    ap.add_argument("--dtype", default="fp32",
                    help="the jobs' dtype, or one per job (comma-separated) [fp32]")
    ap.add_argument("--lan-dtype", default="",
                    help="the MX jobs' lan_dtype: fp32 or bf16 (docs/DEPLOYMENT.md) [none]")
    ap.add_argument("--max-trees", type=int, default=4)
    ap.add_argument("--prefix", default="gr%d" % os.getpid(),
                    help="prefix of namespace and DPDK file names [gr<pid>]")
    ap.add_argument("--slots-min", type=int, default=0,
                    help="floor of every tree's slot pool (and so of the workers' windows)")
    ap.add_argument("--slots-max", type=int, default=4096,
                    help="cap of every tree's slot pool (a power of two) [4096]")
    ap.add_argument("--mbufs", type=int, default=65536,
                    help="the dataplanes' packet mbufs (their memory grows with it); every "
                    "tree entry of the installed tables commits two per slot [65536]")
    # A worker's window arrives as one burst; an af_packet ring that overflows drops
    # frames in the kernel, where no dataplane counter sees them (with 512 frames, 10% of
    # the DiLoCo example's fp32 contributions were lost so and resent).
    ap.add_argument("--mtu", type=int, default=1500,
                    help="IP MTU of every veth and bridge, the dataplanes' --mtu and the "
                    "jobs' mtu (576 .. 9000) [1500]")
    ap.add_argument("--chunk-bytes", default="",
                    help="the jobs' chunk_bytes, or one per job (comma-separated; 0: the "
                    "default for the MTU, docs/DEPLOYMENT.md) [the default]")
    ap.add_argument("--desc", type=int, default=2048,
                    help="the dataplanes' RX and TX descriptors per queue, and the frames of "
                    "their af_packet rings [2048]")
    ap.add_argument("--fault-queue", type=int, default=2048,
                    help="the dataplanes' delay line per lcore and WAN port, frames (a "
                    "power of two; a link's rate times its latency must fit) [2048]")
    ap.add_argument("--loss", type=float, default=0.0,
                    help="random loss on every WAN port, each direction [0]")
    ap.add_argument("--loss-burst", type=float, default=0.0,
                    help="with --loss: lose frames in runs of this many on average (a "
                    "Gilbert-Elliott channel of mean loss --loss, the dataplanes' "
                    "--fault burst=) [0: independent losses]")
    ap.add_argument("--fault-seed", type=int, default=0,
                    help="seed of the dataplanes' fault generators [0]")
    ap.add_argument("--no-pace", action="store_true",
                    help="dataplanes send at once instead of pacing trees at their rates")
    ap.add_argument("--tls", action="store_true",
                    help="a control namespace and a management network with TLS")
    ap.add_argument("--pki", help="scripts/georeduce-pki (with --tls)")
    ap.add_argument("--protect", metavar="CRYPTODEV", default="",
                    help="protect every WAN link (sealed frames, docs/PROTOCOL.md section "
                         "14): the dataplanes run --crypto CRYPTODEV, e.g. crypto_aesni_mb0")
    ap.add_argument("--delayline", help="wan_delayline executable: write kernel-wan.sh "
                    "(one gateway per site, the layout without --gateways-per-site)")
    ap.add_argument("--gateways-per-site", metavar="G[,G...]",
                    help="gateways of each site: one number, or one per site [1]")
    ap.add_argument("--metrics-port", type=int, default=0,
                    help="every dataplane serves Prometheus metrics on 127.0.0.1:PORT of "
                    "its site's namespace (docs/METRICS.md) [off]")
    ap.add_argument("--gateway-mbit", type=float, default=0.0,
                    help="shape each gateway's LAN port to this rate, each way [off]")
    a = ap.parse_args()

    try:
        topo = json.load(open(a.topology))
    except (OSError, ValueError) as e:
        fail("%s: %s" % (a.topology, e))
    nodes = topo.get("nodes", [])
    links = topo.get("links", [])
    if not 2 <= len(nodes) <= 200:
        fail("%s: need 2 to 200 sites, not %d" % (a.topology, len(nodes)))
    if a.tls and not a.pki:
        fail("--tls needs --pki")
    if a.scale <= 0 or a.workers < 1 or a.workers > 50:
        fail("--scale must be > 0 and --workers 1 .. 50")
    algos = a.jobs.split(",")
    lan_delay = {}
    for item in filter(None, a.lan_delay.split(",")):
        site, _, ms = item.partition("=")
        try:
            lan_delay[site] = float(ms)
        except ValueError:
            fail("--lan-delay: expected SITE=MS, not '%s'" % item)
        if not 0 <= lan_delay[site] <= 10000:
            fail("--lan-delay: %s: 0 .. 10000 ms" % item)
    if a.grace_ms and a.grace_ms != "auto" and not a.grace_ms.isdigit():
        fail("--grace-ms: expected milliseconds or \"auto\", not '%s'" % a.grace_ms)
    for al in algos:
        if al not in ("mtree", "ring", "single-tree", "crew", "blueconnect", "selmcast"):
            fail("--jobs: unknown algorithm '%s'" % al)
    bridged = a.gateways_per_site is not None or a.gateway_mbit > 0
    try:
        per = [int(x) for x in (a.gateways_per_site or "1").split(",")]
    except ValueError:
        fail("--gateways-per-site: expected G or G,G,... (integers)")
    if len(per) == 1:
        per = per * len(nodes)
    if len(per) != len(nodes) or not all(1 <= g <= 8 for g in per):
        fail("--gateways-per-site: one count of 1 .. 8, or one per site (%d sites)"
             % len(nodes))
    if a.gateway_mbit < 0:
        fail("--gateway-mbit must be >= 0")
    if not 576 <= a.mtu <= 9000:
        fail("--mtu: 576 .. 9000, not %d" % a.mtu)
    # Every link the testbed makes carries the MTU (the default adds nothing).
    mtu = " mtu %d" % a.mtu if a.mtu != 1500 else ""
    if a.delayline and bridged:
        fail("--delayline takes the layout of one gateway per site (no --gateways-per-site "
             "or --gateway-mbit)")
    index = {n["id"]: i for i, n in enumerate(nodes)}
    os.makedirs(a.dir, exist_ok=True)
    d = os.path.abspath(a.dir)

    sites = []
    for i, n in enumerate(nodes):
        gws = []
        for k in range(per[i]):
            # The first gateway of a site is as with one per site; names as the deployment
            # gives them (docs/DEPLOYMENT.md): the node id, or NODE-K.
            sfx = "" if per[i] == 1 else "-%d" % (k + 1)
            gws.append({"id": i + 1 if k == 0 else 30000 + 16 * i + k,
                        "ipv4": "10.99.%d.%d" % (i, k + 1),
                        "name": n["id"] + sfx, "shard": k,
                        "socket": "%s/gw%d%s.sock" % (d, i, sfx),
                        "log": "%s/gw%d%s.log" % (d, i, sfx),
                        "prefix": "%s-gw%d%s" % (a.prefix, i, sfx)})
        sites.append({
            "index": i, "id": n["id"], "ns": "%s-s%d" % (a.prefix, i),
            "gateway": gws[0], "gateways": gws,
            "workers": [{"id": 1000 + 100 * i + k, "ipv4": "10.99.%d.%d" % (i, 10 + k),
                         "port": WORKER_PORT}
                        for k in range(n.get("workers", 1) if a.workers_from_topology
                                       else a.workers)],
            "wan": [],
        })
    scaled = {"format": "georeduce-topology/1", "name": topo.get("name", "wan") + "-emulated",
              "notes": "bandwidth x %g (Gbit/s as given x %g), latency x %g, for the "
                       "emulated WAN" % (a.scale, a.scale, a.latency_scale),
              "nodes": [dict({"id": n["id"], "workers": len(s["workers"])},
                             **({"gateways": len(s["gateways"])} if bridged else {}),
                             **({"lan_gbps": a.gateway_mbit / 1000.0}
                                if a.gateway_mbit > 0 else {}))
                        for n, s in zip(nodes, sites)],
              "links": []}
    for li, l in enumerate(links):
        x, y = index[l["a"]], index[l["b"]]
        gab, gba = l["gbps"] * a.scale, l.get("gbps_ba", l["gbps"]) * a.scale
        lat = l.get("latency_ms", 0) * a.latency_scale
        scaled["links"].append({"a": l["a"], "b": l["b"], "gbps": round(gab, 6),
                                "gbps_ba": round(gba, 6), "latency_ms": round(lat, 3)})
        for s, peer, rate in ((x, y, gab), (y, x, gba)):
            sites[s]["wan"].append({"link": li, "iface": "wan%d" % li, "peer": peer,
                                    "mbit": max(rate * 1000, 1.0), "latency_ms": lat})

    deploy = {
        "format": "georeduce-deployment/1", "name": "emulated " + scaled["name"],
        "topology": "topology.json",
        "gateways": [{"node": s["id"], "id": g["id"], "ipv4": g["ipv4"],
                      "socket": g["socket"]} for s in sites for g in s["gateways"]],
        "jobs": [],
    }
    ctl_ns = "%s-ctl" % a.prefix
    if a.tls:
        for g, dg in zip([g for s in sites for g in s["gateways"]], deploy["gateways"]):
            g["mgmt"] = mgmt_ip(sites[index[dg["node"]]]["index"], g["shard"])
            g["endpoint"] = "tls://%s:%d" % (g["mgmt"], MGMT_PORT)
            del dg["socket"]
            dg["endpoint"] = g["endpoint"]
        deploy["tls"] = {"ca": "pki/ca.pem", "cert": "pki/control.pem", "key": "pki/control.key",
                         "listen": "%s:%d" % (CONTROL_IP, API_PORT)}
    if a.protect:
        deploy["protected"] = {"links": "all"}
    dtypes = a.dtype.split(",")
    if len(dtypes) == 1:
        dtypes *= len(algos)
    if len(dtypes) != len(algos):
        fail("--dtype: %d dtypes for %d jobs (one, or one per job)" % (len(dtypes), len(algos)))
    try:
        elements = [int(x) for x in a.elements.split(",")]
    except ValueError:
        fail("--elements: expected N or N,N,... (integers)")
    if len(elements) == 1:
        elements *= len(algos)
    if len(elements) != len(algos):
        fail("--elements: %d lengths for %d jobs (one, or one per job)"
             % (len(elements), len(algos)))
    try:
        weights = [float(x) for x in a.weights.split(",")] if a.weights else []
    except ValueError:
        fail("--weights: expected W,W,... (numbers)")
    if weights and len(weights) != len(algos):
        fail("--weights: %d weights for %d jobs (one per job)" % (len(weights), len(algos)))
    try:
        chunk_bytes = [int(x) for x in a.chunk_bytes.split(",")] if a.chunk_bytes else []
    except ValueError:
        fail("--chunk-bytes: expected B or B,B,... (integers)")
    if len(chunk_bytes) == 1:
        chunk_bytes *= len(algos)
    if chunk_bytes and len(chunk_bytes) != len(algos):
        fail("--chunk-bytes: %d sizes for %d jobs (one, or one per job)"
             % (len(chunk_bytes), len(algos)))
    if a.lan_dtype not in ("", "fp32", "bf16"):
        fail("--lan-dtype: fp32 or bf16, not '%s'" % a.lan_dtype)
    for j, al in enumerate(algos):
        job = {"id": j + 1, "algorithm": al, "dtype": dtypes[j], "elements": elements[j],
               "slots": dict({"max": a.slots_max},
                             **({"min": a.slots_min} if a.slots_min else {})),
               # Each job its own UDP port, so that a worker may run several jobs at once.
               "workers": [dict(w, node=s["id"], port=w["port"] + j)
                           for s in sites for w in s["workers"]]}
        if al in ("mtree", "blueconnect"):
            job["options"] = {"max_trees": a.max_trees}
        if al == "crew" and a.min_workers > 0:
            job["options"] = {"min_workers": a.min_workers}
            if a.grace_ms:
                job["options"]["grace_ms"] = (a.grace_ms if a.grace_ms == "auto"
                                              else int(a.grace_ms))
        if a.lan_dtype and dtypes[j].startswith("mx"):
            job["lan_dtype"] = a.lan_dtype
        if weights:
            job["weight"] = weights[j]
        if a.mtu != 1500:
            job["mtu"] = a.mtu
        if chunk_bytes and chunk_bytes[j] > 0:
            job["chunk_bytes"] = chunk_bytes[j]
        deploy["jobs"].append(job)

    q = shlex.quote
    gw_scripts = {}
    up = ["#!/bin/bash", "# Generated by scripts/lib/testbed.py: builds the emulated WAN.",
          "set -e"]
    down = ["#!/bin/bash", "# Generated by scripts/lib/testbed.py: removes the emulated WAN."]
    all_ns = [s["ns"] for s in sites] + ([ctl_ns] if a.tls else [])
    for ns in all_ns:
        up.append("ip netns add %s" % ns)
        up.append("ip -n %s link set lo up" % ns)
        down.append("ip netns pids %s 2>/dev/null | xargs -r kill -INT 2>/dev/null" % ns)
    down.append("sleep 1")
    for ns in all_ns:
        down.append("ip netns pids %s 2>/dev/null | xargs -r kill -KILL 2>/dev/null" % ns)
        down.append("ip netns del %s 2>/dev/null" % ns)
    for s in sites:
        for g in s["gateways"]:
            down.append("rm -rf /var/run/dpdk/%s" % g["prefix"])
    if a.tls:
        # The management network: a bridge in the control namespace, a veth per site.
        up.append("ip -n %s link add mgbr type bridge" % ctl_ns)
        up.append("ip -n %s addr add %s/24 dev mgbr" % (ctl_ns, CONTROL_IP))
        # Gateway k > 0 of a site is on 10.98.k.0/24: the control process is there too.
        for k in range(1, max(per)):
            up.append("ip -n %s addr add 10.98.%d.1/24 dev mgbr" % (ctl_ns, k))
        up.append("ip -n %s link set mgbr up" % ctl_ns)
        for s in sites:
            up.append("ip link add mg%d netns %s type veth peer name mgmt netns %s"
                      % (s["index"], ctl_ns, s["ns"]))
            up.append("ip -n %s link set mg%d master mgbr up" % (ctl_ns, s["index"]))
            for g in s["gateways"]:
                up.append("ip -n %s addr add %s/24 dev mgmt" % (s["ns"], g["mgmt"]))
            up.append("ip -n %s link set mgmt up" % s["ns"])
    down.append("true")
    for li, l in enumerate(links):
        x, y = index[l["a"]], index[l["b"]]
        up.append("ip link add wan%d netns %s%s type veth peer name wan%d netns %s%s"
                  % (li, sites[x]["ns"], mtu, li, sites[y]["ns"], mtu))
    def tbf(ns, dev, mbit):
        burst = max(int(mbit * 1e6 / 8 / 250), 16000)  # 4 ms of traffic
        up.append("tc -n %s qdisc add dev %s root tbf rate %.3fmbit burst %d latency 400ms"
                  % (ns, dev, mbit, burst))

    def dataplane(s, g, lan, wans):
        """Start gateway g of site s: port 0 on interface lan, ports 1.. on wans (one per
        WAN link of the site, in s["wan"] order), its address on each."""
        # The af_packet rings hold --desc frames (the PMD's own default is 512); above
        # MTU 1500, ring frames of the mbufs' data room (the PMD's default, 2048 bytes,
        # holds 1982 of a frame), four to a block.
        ring = ",framecnt=%d" % a.desc if a.desc != 512 else ""
        room = max(2048, (a.mtu + 18 + 64 + 1023) // 1024 * 1024)  # dp_mbuf_room()
        if a.mtu > 1500:
            ring += ",framesz=%d,blocksz=%d" % (room, 4 * room)
        # EAL memory: the mempools (a packet mbuf is its data room and about 320 bytes
        # more: 2.3 KiB at MTU 1500, 9.3 KiB at 9000) and room for the rest.
        mem = max(256, (a.mbufs * (room + 512) // 1024 + a.desc * 16) // 1024 + 160)
        args = [a.dataplane, "--no-huge", "-m", str(mem), "--no-pci", "--no-shconf",
                "--file-prefix=%s" % g["prefix"], "-l", "0-1",
                "--log-level=lib.eal:error", "--log-level=pmd.net.af_packet:error",
                "--vdev=net_af_packet0,iface=%s%s%s" % (lan, ",qdisc_bypass=0"
                                                        if a.gateway_mbit > 0 else "", ring)]
        for p, dev in enumerate(wans, start=1):
            args.append("--vdev=net_af_packet%d,iface=%s,qdisc_bypass=0%s" % (p, dev, ring))
        args += ["--", "--addr", "0:%s/24" % g["ipv4"], "-s", g["socket"],
                 "--mbufs", str(a.mbufs), "--hdr-mbufs", "8192", "--rx-desc", str(a.desc),
                 "--tx-desc", str(a.desc), "--fault-queue", str(a.fault_queue),
                 "--rto-ms", "1000"]
        if a.mtu != 1500:
            args += ["--mtu", str(a.mtu)]
        if a.no_pace:
            args.append("--no-pace")
        if a.fault_seed:
            args += ["--fault-seed", str(a.fault_seed)]
        if a.tls:
            pki = os.path.join(d, "pki")
            args += ["--ctl-listen", "%s:%d" % (g["mgmt"], MGMT_PORT),
                     "--ctl-cert", "%s/gw-%s.pem" % (pki, g["name"]),
                     "--ctl-key", "%s/gw-%s.key" % (pki, g["name"]),
                     "--ctl-ca", "%s/ca.pem" % pki]
        if a.metrics_port:
            # Each site's namespace has its own loopback; several gateways of one site
            # take consecutive ports.
            g["metrics"] = "127.0.0.1:%d" % (a.metrics_port + g.get("shard", 0))
            args += ["--metrics", g["metrics"]]
        if a.protect:
            args += ["--crypto", a.protect]
        for p, wan in enumerate(s["wan"], start=1):
            args += ["--addr", "%d:%s/32" % (p, g["ipv4"]),
                     "--route", "10.99.%d.0/24,port=%d" % (wan["peer"], p)]
            fault = []
            if wan["latency_ms"] > 0:
                fault.append("delay_ms=%g" % wan["latency_ms"])
            if a.loss > 0:
                fault.append("loss=%g" % a.loss)
                if a.loss_burst > 0:
                    fault.append("burst=%g" % a.loss_burst)
            if fault:
                args += ["--fault", "%d,tx,%s" % (p, ",".join(fault))]
        if s["id"] in lan_delay:
            args += ["--fault", "0,tx,delay_ms=%g" % lan_delay[s["id"]]]
        # Its own script, which up.sh runs and scripts/testbed runs again to restart it:
        # the log is appended to, so that a restart keeps what the last run wrote.
        base = g["log"][:-len(".log")]
        g["start"] = base + ".sh"
        g["pid"] = base + ".pid"
        gw_scripts[base + ".sh"] = "\n".join([
            "#!/bin/bash",
            "# Generated by scripts/lib/testbed.py: starts gateway %s (site %s) in the "
            "background," % (g["name"], s["id"]),
            "# its pid in %s, its output appended to %s." % (g["pid"], g["log"]),
            "ip netns exec %s %s >> %s 2>&1 &" % (s["ns"], " ".join(q(x) for x in args),
                                                  q(g["log"])),
            "echo $! > %s" % q(g["pid"])]) + "\n"
        up.append("bash %s" % q(g["start"]))

    for s in sites:
        ns = s["ns"]
        wk = "lanbr" if bridged else "wk0"
        if bridged:
            up.append("ip -n %s link add lanbr%s type bridge" % (ns, mtu))
            up.append("ip -n %s link set lanbr up" % ns)
        else:
            up.append("ip -n %s link add lan0%s type veth peer name wk0%s" % (ns, mtu, mtu))
            for dev in ("lan0", "wk0"):
                up.append("ip -n %s link set %s up" % (ns, dev))
        for w in s["workers"]:
            up.append("ip -n %s addr add %s/24 dev %s" % (ns, w["ipv4"], wk))
        # The kernel leaves UDP checksums to the NIC; veth never computes them and
        # af_packet takes the frame before: compute them in software.
        up.append("ip netns exec %s ethtool -K %s tx off >/dev/null" % (ns, wk))
        for wan in s["wan"]:
            up.append("ip -n %s link set %s up" % (ns, wan["iface"]))
            tbf(ns, wan["iface"], wan["mbit"])
            if bridged:
                # The link is the site's: each gateway reaches it through the bridge.
                up.append("ip -n %s link add wb%d%s type bridge" % (ns, wan["link"], mtu))
                up.append("ip -n %s link set wan%d master wb%d" % (ns, wan["link"], wan["link"]))
                up.append("ip -n %s link set wb%d up" % (ns, wan["link"]))
        if not bridged:
            dataplane(s, s["gateway"], "lan0", [wan["iface"] for wan in s["wan"]])
            continue
        for g in s["gateways"]:
            k = g["shard"]
            up.append("ip -n %s link add gl%d%s type veth peer name bl%d%s"
                      % (ns, k, mtu, k, mtu))
            up.append("ip -n %s link set bl%d master lanbr" % (ns, k))
            for dev in ("gl%d" % k, "bl%d" % k):
                up.append("ip -n %s link set %s up" % (ns, dev))
            # The namespace's kernel also sees the dataplane's interfaces: it must not
            # answer the other gateways' ARP requests for the workers' addresses there.
            up.append("ip -n %s link set gl%d arp off" % (ns, k))
            up.append("ip netns exec %s ethtool -K bl%d tx off >/dev/null" % (ns, k))
            if a.gateway_mbit > 0:
                tbf(ns, "bl%d" % k, a.gateway_mbit)   # the workers to the gateway
                tbf(ns, "gl%d" % k, a.gateway_mbit)   # the gateway to the workers
            for wan in s["wan"]:
                gd, bd = "g%dw%d" % (k, wan["link"]), "b%dw%d" % (k, wan["link"])
                up.append("ip -n %s link add %s%s type veth peer name %s%s"
                          % (ns, gd, mtu, bd, mtu))
                up.append("ip -n %s link set %s master wb%d" % (ns, bd, wan["link"]))
                for dev in (gd, bd):
                    up.append("ip -n %s link set %s up" % (ns, dev))
                up.append("ip -n %s link set %s arp off" % (ns, gd))
            dataplane(s, g, "gl%d" % k, ["g%dw%d" % (k, wan["link"]) for wan in s["wan"]])
    up.append("for s in %s; do" % " ".join(q(g["socket"]) for s in sites
                                           for g in s["gateways"]))
    up.append("  for _ in $(seq 300); do %s -s \"$s\" ping >/dev/null 2>&1 && break; "
              "sleep 0.2; done" % q(a.dpctl))
    up.append("  %s -s \"$s\" ping >/dev/null || { echo \"testbed: no dataplane on $s\" >&2; "
              "exit 1; }" % q(a.dpctl))
    up.append("done")

    def write(name, text, mode=0o644):
        path = os.path.join(d, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)

    for path, text in gw_scripts.items():
        write(os.path.basename(path), text, 0o755)
    write("up.sh", "\n".join(up) + "\n", 0o755)
    if a.delayline:
        write("kernel-wan.sh", kernel_wan(a, d, sites, links, index), 0o755)
    write("down.sh", "\n".join(down) + "\n", 0o755)
    write("topology.json", json.dumps(scaled, indent=2) + "\n")
    write("deployment.json", json.dumps(deploy, indent=2) + "\n")
    write("sites.json", json.dumps(sites, indent=2) + "\n")
    if a.tls:
        pki = os.path.join(d, "pki")
        write("control.json", json.dumps({
            "ns": ctl_ns, "ipv4": CONTROL_IP, "api": "tls://%s:%d" % (CONTROL_IP, API_PORT),
            "pki": pki, "socket": os.path.join(d, "control.sock")}, indent=2) + "\n")
        r = subprocess.run([a.pki, "deployment", pki, os.path.join(d, "deployment.json")])
        # One worker certificate per site too, naming all of its workers: one
        # georeduce-worker process runs them.
        for s in sites:
            if r.returncode == 0 and s["workers"]:
                names = []
                for w in s["workers"]:
                    names += ["--dns", "worker-%d" % w["id"]]
                r = subprocess.run([a.pki, "cert", pki, "workers-site%d" % s["index"],
                                    "worker"] + names)
        if r.returncode != 0:
            fail("the certificates of the run could not be made")
    if a.protect:  # wan_install then installs over the control sockets, keys and all
        write("protected", a.protect + "\n")
    print("testbed: %d sites, %d links, %d workers per site, %s gateways in %s"
          % (len(sites), len(links), a.workers, ",".join(str(g) for g in per), d))
    return 0


def next_hops(sites, links, index):
    """next[i][j]: the WAN port (index into sites[i]["wan"]) of the first hop from site i
    to site j: the fewest hops, then the least latency (a direct link when there is one)."""
    import heapq
    n = len(sites)
    out = []
    for src in range(n):
        best = {src: (0, 0.0, None)}
        heap = [(0, 0.0, src, None)]
        while heap:
            hops, lat, u, first = heapq.heappop(heap)
            if best.get(u, (hops, lat, first))[:2] < (hops, lat):
                continue
            for p, wan in enumerate(sites[u]["wan"]):
                v = wan["peer"]
                cand = (hops + 1, lat + wan["latency_ms"], first if first is not None else p)
                if v not in best or cand[:2] < best[v][:2]:
                    best[v] = cand
                    heapq.heappush(heap, (cand[0], cand[1], v, cand[2]))
        out.append({j: best[j][2] for j in best if j != src})
    return out


def kernel_wan(a, d, sites, links, index):
    """kernel-wan.sh: the dataplanes out, a delay line per site in, kernel routes."""
    q = shlex.quote
    hops = next_hops(sites, links, index)
    sh = ["#!/bin/bash",
          "# Generated by scripts/lib/testbed.py: the kernel's traffic over the emulated WAN.",
          "set -e",
          "# The dataplanes leave the WAN veths (their delay lines go with them).",
          "for f in %s/gw*.pid; do kill -INT \"$(cat \"$f\")\" 2>/dev/null || true; done" % q(d),
          "for f in %s/gw*.pid; do" % q(d),
          "  for _ in $(seq 600); do kill -0 \"$(cat \"$f\")\" 2>/dev/null || break; "
          "sleep 0.1; done",
          "  kill -KILL \"$(cat \"$f\")\" 2>/dev/null || true; rm -f \"$f\"",
          "done"]
    for s in sites:
        ns, i = s["ns"], s["index"]
        # Frames of one MTU each, checksummed in software: the delay line forwards what
        # the kernel hands the veth as it is.
        sh.append("ip netns exec %s ethtool -K wk0 tx off tso off gso off gro off >/dev/null"
                  % ns)
        sh.append("ip netns exec %s ethtool -K lan0 gro off >/dev/null" % ns)
        sh.append("ip -n %s route replace 10.99.0.0/16 via %s dev wk0" % (ns, s["gateway"]["ipv4"]))
        args = [a.delayline, "--lan", "lan0,addr=%s,peer=$(ip netns exec %s cat "
                "/sys/class/net/wk0/address)" % (s["gateway"]["ipv4"], ns)]
        for p, wan in enumerate(s["wan"]):
            routes = ["route=10.99.%d.0/24" % j for j, hp in sorted(hops[i].items()) if hp == p]
            args += ["--wan", ",".join([wan["iface"], "delay_ms=%g" % wan["latency_ms"]] +
                                       routes)]
        log = "%s/dl%d.log" % (d, i)
        sh.append("ip netns exec %s %s > %s 2>&1 &" % (
            ns, " ".join(x if "$(" in x else q(x) for x in args), q(log)))
        sh.append("echo $! > %s" % q("%s/dl%d.pid" % (d, i)))
    sh.append("for i in %s; do" % " ".join(str(s["index"]) for s in sites))
    sh.append("  for _ in $(seq 3000); do grep -q '^ready$' %s/dl$i.log 2>/dev/null && break; "
              "sleep 0.02; done" % q(d))
    sh.append("  grep -q '^ready$' %s/dl$i.log || { echo \"testbed: delay line $i: "
              "$(cat %s/dl$i.log)\" >&2; exit 1; }" % (q(d), q(d)))
    sh.append("done")
    return "\n".join(sh) + "\n"


if __name__ == "__main__":
    sys.exit(main())
