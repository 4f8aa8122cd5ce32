# shellcheck shell=bash
# The emulated multi-datacenter WAN (scripts/lib/testbed.py describes it), for
# scripts/testbed, scripts/demo and the end-to-end tests. Needs root.
#
#   wan_up DIR TOPOLOGY BUILD [testbed.py options...]   build it (DIR/down.sh undoes it)
#   wan_down DIR                                        remove it
#   wan_install DIR JOB [EPOCH]                         plan job JOB, install its tables
#   wan_run DIR JOB ROUNDS [FIRST]                      every site's workers, in parallel
#
# wan_run keeps each site's worker summary in DIR/run-JOB-SITE.json and prints, for each
# round, the time of the slowest worker (ms) on stdout.

wan_up() {
	local dir=$1 topology=$2 build=$3
	shift 3
	mkdir -p "$dir"
	python3 "$GEOREDUCE_ROOT/scripts/lib/testbed.py" "$topology" --dir "$dir" \
		--dataplane "$build/dataplane/georeduce-dataplane" \
		--dpctl "$build/control/georeduce-dpctl" "$@" >/dev/null || return 2
	echo "$build" >"$dir/build"
	bash "$dir/up.sh"
}

wan_down() {
	local dir=$1
	[ -x "$dir/down.sh" ] && bash "$dir/down.sh" >/dev/null 2>&1
	return 0
}

# Sites as "index id namespace" lines.
wan_sites() {
	python3 -c '
import json, sys
for s in json.load(open(sys.argv[1])):
    print(s["index"], s["id"], s["ns"])' "$1/sites.json"
}

wan_install() {
	local dir=$1 job=$2 epoch=${3:-1} build
	build=$(cat "$dir/build")
	"$build/control/georeduce-control" tables "$dir/deployment.json" --out "$dir/tables" \
		--epoch "$epoch" >"$dir/plan.log" 2>&1 || { cat "$dir/plan.log" >&2; return 1; }
	while read -r i id _; do
		# A relay site in none of the job's trees has no table.
		[ -e "$dir/tables/job-$job-$id.json" ] || continue
		"$build/control/georeduce-dpctl" -s "$dir/gw$i.sock" install \
			"$dir/tables/job-$job-$id.json" >/dev/null || return 1
	done < <(wan_sites "$dir")
}

# The predicted AllReduce seconds of a job, from the plan georeduce-control wrote.
wan_predicted() {
	python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
print("%.3f" % p["predicted"]["allreduce_seconds"])' "$1/tables/job-$2-plan.json"
}

wan_run() {
	local dir=$1 job=$2 rounds=$3 first=${4:-0} build pids=() all rc=0
	build=$(cat "$dir/build")
	all=$(python3 -c '
import json, sys
print(",".join(str(w["id"]) for s in json.load(open(sys.argv[1])) for w in s["workers"]))' \
		"$dir/sites.json")
	while read -r i id ns; do
		local ids
		ids=$(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))[int(sys.argv[2])]
print(" ".join("--worker-id %d" % w["id"] for w in s["workers"]))' "$dir/sites.json" "$i")
		[ -n "$ids" ] || continue # a relay site: no workers
		# shellcheck disable=SC2086
		ip netns exec "$ns" "$build/client/georeduce-worker" \
			--table "$dir/tables/job-$job-$id.json" $ids --all-workers "$all" \
			--rounds "$rounds" --first-round "$first" --timeout 120 --json \
			>"$dir/run-$job-$i.json" 2>"$dir/run-$job-$i.err" &
		pids+=($!)
	done < <(wan_sites "$dir")
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	[ $rc -eq 0 ] || { cat "$dir"/run-"$job"-*.err >&2; return 1; }
	python3 - "$dir" "$job" <<'PY'
import glob, json, sys
d, job = sys.argv[1], sys.argv[2]
rounds = {}
for f in sorted(glob.glob("%s/run-%s-*.json" % (d, job))):
    doc = json.load(open(f))
    for w in doc["workers"]:
        for r in w["rounds"]:
            rounds.setdefault(r["round"], []).append(r["ms"])
for r in sorted(rounds):
    print("%.1f" % max(rounds[r]))
PY
}
