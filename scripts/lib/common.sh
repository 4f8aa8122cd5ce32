# shellcheck shell=bash
# Shared by scripts/demo and scripts/test: dependency installation and the build.

GEOREDUCE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# Debian 12 packages the build, the tests and the demo need.
GEOREDUCE_PACKAGES=(
	build-essential
	dpkg-dev
	pkg-config
	meson
	ninja-build
	libdpdk-dev
	librte-crypto-ipsec-mb23
	dpdk
	dpdk-dev
	libnuma-dev
	libjansson-dev
	libssl-dev openssl
	libcunit1-dev
	libglpk-dev
	# The metrics endpoints (libmicrohttpd) and their tests (promtool, a Prometheus server).
	libmicrohttpd-dev prometheus
	python3
	iproute2 iputils-ping ethtool
	gnuplot-nox
	# Reading captures with the Wireshark dissector (tools/wireshark) and its test.
	tshark
	# georeduce-plan draw renders plans with Graphviz's dot program.
	graphviz
	# The C format check (tests/style.sh, .clang-format).
	clang-format
	# The fuzz harnesses (tests/fuzz/run.sh): clang and its libFuzzer runtime.
	clang libclang-rt-14-dev
	# The Python package's tests and the training demo, through /usr/bin/python3 (a
	# python3 earlier on PATH may be another interpreter, without Debian's packages).
	python3-torch python3-numpy python3-pytest python3-pip python3-setuptools
	# pip install ./python into a fresh venv (tests/python/install.sh): pip builds a wheel
	# offline with Debian's setuptools and wheel.
	python3-venv python3-wheel
	# Control replicas on etcd (docs/DEPLOYMENT.md, "Replicas on etcd"): the client speaks
	# etcd's v3 HTTP/JSON gateway with libcurl; the tests start real etcd servers.
	libcurl4-openssl-dev etcd-server etcd-client
	# The scripts' and tests' tools beside Python: jq (the control process's JSON status,
	# scripts/lib/wan.sh's replicas), curl (the metrics endpoints), bc (timings).
	jq curl bc
)

log() { printf '== %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# size_bytes SIZE: the bytes of N with an optional suffix K M G KiB MiB GiB, on stdout;
# fails on anything else.
size_bytes() {
	python3 - "$1" <<'PY'
import re, sys
m = re.fullmatch(r"(\d+)\s*(K|M|G|KiB|MiB|GiB)?", sys.argv[1])
if not m:
    sys.exit(1)
mult = {None: 1, "K": 1e3, "M": 1e6, "G": 1e9, "KiB": 1024, "MiB": 1 << 20, "GiB": 1 << 30}
print(int(int(m.group(1)) * mult[m.group(2)]))
PY
}

# Install whatever is missing (needs root the first time; a no-op afterwards).
ensure_packages() {
	local missing=() p
	for p in "${GEOREDUCE_PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	log "installing: ${missing[*]}"
	[ "$(id -u)" -eq 0 ] || die "missing packages (${missing[*]}): run as root or install them"
	export DEBIAN_FRONTEND=noninteractive
	# wireshark-common (with tshark) asks whether non-root users may capture: no.
	echo "wireshark-common wireshark-common/install-setuid boolean false" |
		debconf-set-selections
	apt-get update -q >/dev/null || die "apt-get update failed"
	apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null ||
		die "apt-get install failed for: ${missing[*]}"
}

# build_tree DIR [meson options...]: configure once, then build incrementally.
build_tree() {
	local dir=$1
	shift
	if [ ! -f "$GEOREDUCE_ROOT/$dir/build.ninja" ]; then
		log "configuring $dir"
		meson setup "$GEOREDUCE_ROOT/$dir" "$GEOREDUCE_ROOT" "$@" >/dev/null ||
			die "meson setup $dir failed"
	fi
	log "building $dir"
	ninja -C "$GEOREDUCE_ROOT/$dir" >/dev/null || {
		ninja -C "$GEOREDUCE_ROOT/$dir" 2>&1 | tail -40 >&2
		die "build $dir failed"
	}
}
