#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# A real Prometheus server (Debian's prometheus, a config written here, scraping every
# second, its own data directory and port) scrapes a gateway of the emulated WAN
# (scripts/lib/testbed.py, two sites, --metrics-port) while a job runs; the increase of
# the gateway's received bytes over the run, asked of Prometheus's HTTP API with
# increase(), must agree with the gateway's own counters (georeduce-dpctl stats) within
# 10%: the window is flat before and after the traffic, so the sampled increase is the
# counters' difference exactly, and increase() extrapolates it to the window's ends by
# at most one scrape interval of the 25 s or more the window spans.
#
#   metrics_prometheus_e2e.sh BUILD_DIR
set -u
BUILD=$(cd "$1" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
fails=0

if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
	echo "metrics_prometheus_e2e: needs root and network namespaces; skipped"
	exit 77
fi
if ! command -v prometheus >/dev/null; then
	echo "metrics_prometheus_e2e: no prometheus (Debian package prometheus); skipped"
	exit 77
fi
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; fails=$((fails + 1)); }

GEOREDUCE_ROOT=$ROOT
# shellcheck source=../scripts/lib/wan.sh
. "$ROOT/scripts/lib/wan.sh"
D=$(mktemp -d /tmp/georeduce-metrics-prom.XXXXXX)
P=grmp$$
MPORT=9464
PPORT=19090
prom=
cleanup() {
	[ -n "$prom" ] && kill -TERM "$prom" 2>/dev/null && wait "$prom" 2>/dev/null
	wan_down "$D"
	rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cat >"$D/topo.json" <<'JSON'
{"format": "georeduce-topology/1", "name": "metrics-e2e",
 "nodes": [{"id": "a", "workers": 1}, {"id": "b", "workers": 1}],
 "links": [{"a": "a", "b": "b", "gbps": 0.05, "latency_ms": 2}]}
JSON
if wan_up "$D" "$D/topo.json" "$BUILD" --scale 1 --workers-from-topology --jobs mtree \
	--elements 262144 --prefix "$P" --metrics-port "$MPORT" && wan_install "$D" 1; then
	ok "2 sites up, the job installed, every gateway serving metrics"
else
	not_ok "emulated WAN"
	cat "$D"/gw*.log
	exit 1
fi
NS=$P-s0
SOCK=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["gateway"]["socket"])' \
	"$D/sites.json")

# Prometheus in site a's namespace, where the gateway's metrics are on its loopback.
cat >"$D/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: georeduce-dataplane
    static_configs:
      - targets: ['127.0.0.1:$MPORT']
YAML
ip netns exec "$NS" prometheus --config.file="$D/prometheus.yml" \
	--storage.tsdb.path="$D/data" --web.listen-address="127.0.0.1:$PPORT" \
	--log.level=warn >"$D/prometheus.log" 2>&1 &
prom=$!

# query PROMQL [TIME]: the API's first value, or "" (no result yet).
query() {
	ip netns exec "$NS" curl -sf --max-time 10 "http://127.0.0.1:$PPORT/api/v1/query" \
		--data-urlencode "query=$1" ${2:+--data-urlencode "time=$2"} 2>/dev/null |
		python3 -c '
import json, sys
try:
    r = json.load(sys.stdin)["data"]["result"]
    print(r[0]["value"][1] if r else "")
except Exception:
    print("")'
}
# wait_query PROMQL PYTHON-CONDITION-ON-v SECONDS: poll until the condition holds.
wait_query() {
	local end=$((SECONDS + $3)) v
	while [ "$SECONDS" -lt "$end" ]; do
		v=$(query "$1")
		[ -n "$v" ] && python3 -c "import sys; v = float(sys.argv[1]); sys.exit(0 if ($2) else 1)" "$v" &&
			return 0
		kill -0 "$prom" 2>/dev/null || return 1
		sleep 0.5
	done
	return 1
}
rx() { # the gateway's received bytes, summed over its lcores, from its own counters
	"$BUILD/tools/dpctl/georeduce-dpctl" -s "$SOCK" --json stats |
		python3 -c 'import json,sys; print(sum(l["rx_bytes"] for l in json.load(sys.stdin)["lcores"]))'
}
last_ts() { query 'max(timestamp(georeduce_dataplane_rx_bytes_total))'; }

# Scraped for 20 s at least before the job starts: the window begins in a flat stretch.
if wait_query 'count_over_time(georeduce_dataplane_lcores[30s])' 'v >= 20' 120; then
	ok "prometheus scrapes the gateway every second"
else
	not_ok "prometheus has no samples of the gateway: $(tail -5 "$D/prometheus.log")"
	exit 1
fi
c0=$(rx)
t0=$(date +%s.%N)
wait_query 'max(timestamp(georeduce_dataplane_rx_bytes_total))' "v > $t0" 60 ||
	not_ok "no scrape after the start"
if wan_run "$D" 1 20 "$(($(date +%s) % 100000000 * 16))" >"$D/run.out" 2>&1; then
	ok "20 rounds of the job, every result verified"
else
	not_ok "the job's rounds: $(tail -3 "$D/run.out")"
fi
c1=$(rx)
t1=$(date +%s.%N)
wait_query 'max(timestamp(georeduce_dataplane_rx_bytes_total))' "v > $t1" 60 ||
	not_ok "no scrape after the run"
te=$(last_ts)
w=$(python3 -c "import math; print(math.ceil($te - $t0) + 20)")
inc=$(query "sum(increase(georeduce_dataplane_rx_bytes_total[${w}s]))" "$te")
rate=$(query "sum(rate(georeduce_dataplane_rx_bytes_total[${w}s]))" "$te")
echo "# dpctl: $c0 -> $c1 bytes ($((c1 - c0))); prometheus increase over ${w} s: $inc, rate $rate B/s"
if [ -n "$inc" ] && python3 -c "
import sys
d = $c1 - $c0; inc = float('$inc')
sys.exit(0 if d > 1e6 and 0.98 * d <= inc <= 1.10 * d else 1)"; then
	ok "increase() of the received bytes agrees with dpctl stats within 10%"
else
	not_ok "increase() $inc against dpctl's difference $((c1 - c0))"
fi
last=$(query 'sum(georeduce_dataplane_rx_bytes_total)' "$te")
if [ -n "$last" ] && python3 -c "
import sys
v = float('$last'); sys.exit(0 if $c1 <= v <= $c1 * 1.01 + 4096 else 1)"; then
	ok "the last scraped value is dpctl's after the run"
else
	not_ok "last scraped value $last, dpctl $c1"
fi

echo "metrics_prometheus_e2e: $fails failed"
[ "$fails" = 0 ]
