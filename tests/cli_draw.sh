#!/usr/bin/env bash
# georeduce-plan draw end to end: the DOT text of every plan kind (mTree, CREW, SELMCAST,
# BlueConnect) checked against the plan (edges per tree, distinct colours, roots marked,
# widths ordered by rate, link loads), pictures rendered by Graphviz's dot as SVG (valid
# XML) and PNG (signature and size), and every class of bad input: status 2 and one line
# on stderr, or status 1 and dot's own message when dot is missing or fails.
# Usage: tests/cli_draw.sh PATH/TO/georeduce-plan
set -u
plan=${1:?usage: cli_draw.sh PATH/TO/georeduce-plan}
case $plan in /*) ;; *) plan=$PWD/$plan ;; esac
cd "$(dirname "$0")/.."
ex=examples/topologies
. tests/clilib.sh

if ! command -v dot >/dev/null; then
	echo "1..0 # SKIP Graphviz's dot is not installed (Debian package graphviz)"
	exit 77
fi

# check NAME PYTHON-ARGS...: a Python check (script on stdin) as one test.
check() {
	local desc=$1
	shift
	if python3 - "$@" >"$tmp/py" 2>&1; then ok "$desc"; else not_ok "$desc: $(tail -3 "$tmp/py")"; fi
}

# Parser shared by the checks: the DOT edges and nodes with their attributes.
cat >"$tmp/dotparse.py" <<'PY'
import re

ATTR = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|<<.*>>|[^,\]]+)')

def attrs(s):
    return {k: v[1:-1] if v.startswith('"') else v for k, v in ATTR.findall(s)}

def parse(path):
    edges, nodes = [], {}
    for line in open(path):
        line = line.strip()
        m = re.match(r'^(n\d+(?: -- n\d+)+) \[(.*)\];$', line)
        if m:
            ends = [int(x[1:]) for x in m.group(1).split(' -- ')]
            edges.append((ends, attrs(m.group(2))))
            continue
        m = re.match(r'^n(\d+) \[(.*)\];$', line)
        if m:
            nodes[int(m.group(1))] = attrs(m.group(2))
    return nodes, edges
PY

T4=$ex/aws-4region.json
T10=$ex/aws-10region.json

# ---- tree plans ----
expect 0 "mtree plan for aws-4region" "$plan" mtree -t $T4 -q -o "$tmp/m4.json"
expect 0 "draw --dot" "$plan" draw -t $T4 -p "$tmp/m4.json" --dot
cp "$tmp/out" "$tmp/m4.dot"
check "mtree DOT: one edge per tree edge, distinct colours, roots, widths by rate, loads" \
	"$tmp/m4.dot" $T4 "$tmp/m4.json" <<PY
import json, sys
sys.path.insert(0, "$tmp")
from dotparse import parse
nodes, edges = parse(sys.argv[1])
topo = json.load(open(sys.argv[2])); plan = json.load(open(sys.argv[3]))
ids = [n["id"] for n in topo["nodes"]]
trees = plan["trees"]
assert len(trees) >= 2, "want a plan of several trees"
colours, widths = {}, {}
for k, tr in enumerate(trees):
    mine = [(e, a) for e, a in edges if a.get("class") == "tree-%d" % k]
    want = {(ids.index(c), ids.index(p)) for c, p in tr["parent"].items() if p is not None}
    got = {tuple(e) for e, a in mine}
    assert got == want and len(mine) == len(want), (k, got, want)
    cs = {a["color"] for e, a in mine}; ws = {float(a["penwidth"]) for e, a in mine}
    assert len(cs) == 1 and len(ws) == 1, (k, cs, ws)
    colours[k] = cs.pop(); widths[k] = ws.pop()
    assert all(a.get("dir") == "forward" for e, a in mine), "arrows towards the root"
    root = nodes[ids.index(tr["root"])]
    assert root.get("class") == "root" and root.get("peripheries") == "2", root
    assert ("T%d" % k) in root["label"], root["label"]
    assert colours[k] in root["fillcolor"].split(":"), (colours[k], root["fillcolor"])
assert len(set(colours.values())) == len(trees), colours
# widths in proportion to rate (the thinnest at the floor of 1.5)
wmax = max(widths.values()); rmax = max(t["rate_gbps"] for t in trees)
for k, t in enumerate(trees):
    assert abs(widths[k] - max(1.5, 8 * t["rate_gbps"] / rmax)) < 0.002, (k, widths[k])
for i in range(len(trees)):
    for j in range(len(trees)):
        if trees[i]["rate_gbps"] > trees[j]["rate_gbps"] * 1.01:
            assert widths[i] > widths[j] or widths[i] == widths[j] == 1.5, (i, j, widths)
roots = {ids.index(t["root"]) for t in trees}
for v, a in nodes.items():
    assert (a.get("class") == "root") == (v in roots), (v, a)
# Every topology link once, labelled with the trees' load against its capacity.
links = [(e, a) for e, a in edges if a.get("class") == "link"]
assert len(links) == len(topo["links"]), len(links)
for l in topo["links"]:
    a, b = ids.index(l["a"]), ids.index(l["b"])
    load = sum(t["rate_gbps"] for t in trees for c, p in t["parent"].items()
               if p is not None and {c, p} == {l["a"], l["b"]})
    cap = min(l["gbps"], l.get("gbps_ba", l["gbps"]))
    lab = [x for e, x in links if set(e) == {a, b}][0]["label"]
    got_load, got_cap = (float(x) for x in lab.split()[0].split("/"))
    assert abs(got_load - load) <= 0.006 * max(load, 1e-3), (lab, load)
    assert abs(got_cap - cap) <= 0.006 * cap, (lab, cap)
    assert "OVER" not in lab, lab
PY
has_line() { grep -q -- "$1" "$2" && ok "$3" || not_ok "$3 ('$1' not in $2)"; }
has_line 'label="mtree plan on aws-4region' "$tmp/m4.dot" "title names the algorithm and topology"
has_line '^	legend \[' "$tmp/m4.dot" "a legend"

# A plan whose trees run at twice their rate: drawn with the links over capacity marked.
python3 - "$tmp/m4.json" "$tmp/over.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
for t in p["trees"]:
    t["rate_gbps"] *= 2
json.dump(p, open(sys.argv[2], "w"))
PY
expect 0 "a plan over capacity is drawn" "$plan" draw -t $T4 -p "$tmp/over.json" -o "$tmp/over.dot"
has_line 'warning: .*drawn as it is' "$tmp/err" "with a warning naming the violation"
check "links over capacity are red and say OVER" "$tmp/over.dot" <<PY
import sys
sys.path.insert(0, "$tmp")
from dotparse import parse
nodes, edges = parse(sys.argv[1])
over = [a for e, a in edges if a.get("class") == "link" and "OVER" in a["label"]]
assert over and all(a["color"] == "#d00000" for a in over), over
PY

for fmt in svg png; do
	expect 0 "render .$fmt" "$plan" draw -t $T4 -p "$tmp/m4.json" -o "$tmp/m4.$fmt"
done
# The demo's 10-region mTree plan, 10 trees over 45 links: Graphviz 2.42's neato crashed
# now and then routing its edges as splines around the nodes (splines=true).
expect 0 "mtree plan for aws-10region" "$plan" mtree -t $T10 -q -o "$tmp/m10.json"
for i in 1 2 3 4 5; do
	for fmt in svg png; do
		expect 0 "render the 10-region plan .$fmt ($i of 5)" "$plan" draw -t $T10 \
			-p "$tmp/m10.json" -o "$tmp/m10.$fmt"
	done
done
check "the SVG is valid XML with every tree's edges" "$tmp/m4.svg" "$tmp/m4.json" <<'PY'
import json, sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "{http://www.w3.org/2000/svg}svg", root.tag
classes = [g.get("class", "") for g in root.iter("{http://www.w3.org/2000/svg}g")]
for k, t in enumerate(json.load(open(sys.argv[2]))["trees"]):
    n = sum(1 for c in classes if ("tree-%d" % k) in c.split())
    assert n == len(t["parent"]) - 1, (k, n)
PY
check "the PNG has the PNG signature and a size" "$tmp/m4.png" <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read()
assert b[:8] == b"\x89PNG\r\n\x1a\n", b[:8]
w, h = struct.unpack(">II", b[16:24])
assert b[12:16] == b"IHDR" and w > 100 and h > 100, (w, h)
PY
expect 0 "--format svg overrides the extension" "$plan" draw -t $T4 -p "$tmp/m4.json" \
	-o "$tmp/pic.out" --format svg
check "--format svg wrote SVG" "$tmp/pic.out" <<'PY'
import sys, xml.etree.ElementTree as ET
assert ET.parse(sys.argv[1]).getroot().tag.endswith("svg")
PY
expect 0 ".dot output" "$plan" draw -t $T4 -p "$tmp/m4.json" -o "$tmp/m4-file.dot"
cmp -s "$tmp/m4-file.dot" "$tmp/m4.dot" && ok ".dot output is the --dot text" ||
	not_ok ".dot output is the --dot text"
expect 0 "--layout dot" "$plan" draw -t $T4 -p "$tmp/m4.json" --layout dot -o "$tmp/l.svg"

# ---- CREW ----
expect 0 "crew plan" "$plan" crew -t $T10 --group oregon,tokyo,london -o "$tmp/crew.json"
expect 0 "draw crew --dot" "$plan" draw -t $T10 -p "$tmp/crew.json" --dot --failover
cp "$tmp/out" "$tmp/crew.dot"
check "crew DOT: members scatter to every aggregator, backups, relays, shares by width" \
	"$tmp/crew.dot" $T10 "$tmp/crew.json" <<PY
import json, sys
sys.path.insert(0, "$tmp")
from dotparse import parse
nodes, edges = parse(sys.argv[1])
ids = [n["id"] for n in json.load(open(sys.argv[2]))["nodes"]]
pr = json.load(open(sys.argv[3]))["partial_reduce"]
group = {ids.index(g) for g in pr["group"]}
colours, width = set(), {}
for k, ag in enumerate(pr["aggregators"]):
    v = ids.index(ag["site"])
    assert nodes[v].get("class") == "aggregator", nodes[v]
    mine = [(e, a) for e, a in edges if a.get("class") == "aggregator-%d" % k]
    assert {e[0] for e, a in mine} == group - {v} and all(e[1] == v for e, a in mine), mine
    colours |= {a["color"] for e, a in mine}
    width[k] = float(mine[0][1]["penwidth"])
    relays = [e for e, a in edges if a.get("class") == "relay-%d" % k]
    want = [r for r in pr["relays"] if r["from"] == ag["site"]]
    assert len(relays) == len(want), (relays, want)
assert len(colours) == len(pr["aggregators"]), colours
ags = pr["aggregators"]
for i in range(len(ags)):
    for j in range(len(ags)):
        if ags[i]["bytes"] > ags[j]["bytes"] * 1.01:
            assert width[i] > width[j] or width[i] == width[j] == 1.5, (i, j, width)
backups = [e for e, a in edges if a.get("class") == "backup"]
assert len(backups) == sum(1 for a in ags if "backup" in a), backups
PY
expect 0 "draw crew .svg" "$plan" draw -t $T10 -p "$tmp/crew.json" -o "$tmp/crew.svg"

# ---- SELMCAST ----
expect 0 "selmcast plan" "$plan" selmcast -t $T10 --p 3 --rounds 2 -o "$tmp/sel.json"
for r in 0 1; do
	expect 0 "draw selmcast --round $r" "$plan" draw -t $T10 -p "$tmp/sel.json" --dot --round $r
	cp "$tmp/out" "$tmp/sel$r.dot"
	check "selmcast DOT round $r: every sender to its receivers, one colour each" \
		"$tmp/sel$r.dot" $T10 "$tmp/sel.json" $r <<PY
import json, sys
sys.path.insert(0, "$tmp")
from dotparse import parse
nodes, edges = parse(sys.argv[1])
ids = [n["id"] for n in json.load(open(sys.argv[2]))["nodes"]]
rd = json.load(open(sys.argv[3]))["multicast"]["rounds"][int(sys.argv[4])]
colours = set()
for k, s in enumerate(rd["senders"]):
    mine = [(e, a) for e, a in edges if a.get("class") == "sender-%d" % k]
    assert all(e[0] == ids.index(s["site"]) for e, a in mine), mine
    assert sorted(e[1] for e, a in mine) == sorted(ids.index(r) for r in s["receivers"]), mine
    assert nodes[ids.index(s["site"])].get("class") == "sender"
    colours |= {a["color"] for e, a in mine}
assert len(colours) == len(rd["senders"]), colours
PY
done
expect 2 "--round past the plan's rounds" "$plan" draw -t $T10 -p "$tmp/sel.json" --dot --round 2

# ---- BlueConnect ----
expect 0 "blueconnect plan" "$plan" blueconnect -t $T4 -o "$tmp/bc.json"
expect 0 "draw blueconnect --dot" "$plan" draw -t $T4 -p "$tmp/bc.json" --dot
cp "$tmp/out" "$tmp/bc.dot"
check "blueconnect DOT: the WAN trees, the gateways of each site and the stages" \
	"$tmp/bc.dot" "$tmp/bc.json" <<PY
import json, sys
sys.path.insert(0, "$tmp")
from dotparse import parse
nodes, edges = parse(sys.argv[1])
p = json.load(open(sys.argv[2]))
for k, t in enumerate(p["trees"]):
    assert sum(1 for e, a in edges if a.get("class") == "tree-%d" % k) == len(t["parent"]) - 1
assert all("gateway" in nodes[v]["label"] for v in nodes), nodes
text = open(sys.argv[1]).read()
assert "BlueConnect " + p["hierarchy"]["factorisation"] in text
assert text.count("allreduce over wan") == 1
PY
expect 0 "draw blueconnect .png" "$plan" draw -t $T4 -p "$tmp/bc.json" -o "$tmp/bc.png"

# ---- bad input ----
expect 0 "--help" "$plan" draw --help
expect 2 "unknown extension" "$plan" draw -t $T4 -p "$tmp/m4.json" -o "$tmp/x.jpg"
has_line 'unknown extension' "$tmp/err" "the error names the extension"
expect 2 "no extension" "$plan" draw -t $T4 -p "$tmp/m4.json" -o "$tmp/picture"
expect 2 "unknown --format" "$plan" draw -t $T4 -p "$tmp/m4.json" -o "$tmp/x.svg" --format jpeg
expect 2 "unknown --layout" "$plan" draw -t $T4 -p "$tmp/m4.json" -o "$tmp/x.svg" --layout x
expect 2 "no --output" "$plan" draw -t $T4 -p "$tmp/m4.json"
expect 2 "no --plan" "$plan" draw -t $T4 -o "$tmp/x.svg"
expect 2 "no --topology" "$plan" draw -p "$tmp/m4.json" -o "$tmp/x.svg"
expect 2 "a plan of another topology" "$plan" draw -t $T10 -p "$tmp/m4.json" -o "$tmp/x.svg"
has_line "aws-4region" "$tmp/err" "the error names the plan's topology"
python3 - "$tmp/m4.json" "$tmp/renamed.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); p["topology"] = "elsewhere"
json.dump(p, open(sys.argv[2], "w"))
PY
expect 2 "a plan naming another topology" "$plan" draw -t $T4 -p "$tmp/renamed.json" --dot
expect 0 "b4 mtree plan" "$plan" mtree -t $ex/b4.json -q -o "$tmp/b4.json"
python3 - $ex/b4.json "$tmp/b4.json" "$tmp/nolink.json" <<'PY'
import json, sys
topo = json.load(open(sys.argv[1])); p = json.load(open(sys.argv[2]))
linked = {frozenset((l["a"], l["b"])) for l in topo["links"]}
t = p["trees"][0]
for c in t["parent"]:
    if t["parent"][c] is None:
        continue
    for o in t["parent"]:
        if o != c and frozenset((c, o)) not in linked and t["parent"].get(o) is not None:
            t["parent"][c] = o
            json.dump(p, open(sys.argv[3], "w"))
            sys.exit(0)
sys.exit(1)
PY
expect 2 "a tree edge that is no link of the topology" "$plan" draw -t $ex/b4.json \
	-p "$tmp/nolink.json" --dot
has_line "not linked" "$tmp/err" "the error says which pair is not linked"
python3 - "$tmp/m4.json" "$tmp/empty.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); p["trees"] = []
json.dump(p, open(sys.argv[2], "w"))
PY
expect 2 "a plan without trees or sections" "$plan" draw -t $T4 -p "$tmp/empty.json" --dot
printf '{"format": "georeduce-plan/1", "trees": [' >"$tmp/broken.json"
expect 2 "a broken plan file" "$plan" draw -t $T4 -p "$tmp/broken.json" --dot
expect 2 "a missing plan file" "$plan" draw -t $T4 -p "$tmp/none.json" --dot
expect 2 "unknown option" "$plan" draw -t $T4 -p "$tmp/m4.json" --dot --colour red
expect 2 "a stray argument" "$plan" draw -t $T4 -p "$tmp/m4.json" --dot extra

# dot missing, and dot failing: status 1, with dot's own words.
mkdir "$tmp/nopath"
expect 1 "dot missing from PATH" env PATH="$tmp/nopath" "$plan" draw -t $T4 -p "$tmp/m4.json" \
	-o "$tmp/x.svg"
has_line "graphviz" "$tmp/err" "the error names the package to install"
expect 1 "dot failing (an output folder that does not exist)" "$plan" draw -t $T4 \
	-p "$tmp/m4.json" -o "$tmp/no/such/dir/x.svg"
has_line "dot failed (exit status 1): .*no/such/dir/x.svg" "$tmp/err" "dot's stderr is shown"
[ ! -e "$tmp/x.svg" ] && ok "nothing written when dot is missing" ||
	not_ok "nothing written when dot is missing"
expect 2 "--dot to a folder that does not exist" "$plan" draw -t $T4 -p "$tmp/m4.json" \
	-o "$tmp/no/such/x.dot"

echo "# $((n - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
