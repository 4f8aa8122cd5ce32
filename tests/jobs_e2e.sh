#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Jobs through the control API on the emulated WAN with its management network
# (scripts/lib/testbed.py --tls): a deployment with one static job and two tenants with
# quotas; georeduce-control in a namespace of its own with a state directory. Checked: a
# tenant creates a job (georeduce-control job create over TLS, its certificate naming the
# tenant), the workers join it through the control process and run bit-exact rounds;
# another tenant neither sees nor deletes it; quotas of jobs, slots and weight refuse,
# as does a tenant the deployment does not name; malformed job objects refused with the
# field named; job_update re-plans; the control process killed and restarted keeps the
# job (read from the state directory, its live epoch carried on, nothing installed) and
# rounds go on exact; job_delete removes it from every gateway (each gateway's job memory
# back to its level before the job), its workers are told it was deleted; a static job
# cannot be deleted.
#
#   jobs_e2e.sh BUILD_DIR
set -u
BUILD=$(cd "$1" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
fails=0

if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
	echo "jobs_e2e: needs root and network namespaces; skipped"
	exit 77
fi
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; fails=$((fails + 1)); }

GEOREDUCE_ROOT=$ROOT
# shellcheck source=../scripts/lib/wan.sh
. "$ROOT/scripts/lib/wan.sh"
D=$(mktemp -d /tmp/georeduce-jobs-e2e.XXXXXX)
cleanup() {
	wan_control_stop "$D"
	wan_down "$D"
	rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

CTL=$BUILD/control/daemon/georeduce-control
WK=$BUILD/tools/worker/georeduce-worker
PKI=$ROOT/scripts/georeduce-pki
ROUNDS=10

wan_up_tls3 "$D" "$BUILD" jobs-e2e 0.02 --jobs mtree --elements 65536 --slots-max 1024 \
	--prefix "grj$$" || exit 1
NS=$(wan_ctl "$D" ns)
CERTS=$(wan_ctl "$D" pki)
API=$(wan_ctl "$D" api)
as_ctl() { ip netns exec "$NS" "$@"; }
wait_for() { wan_wait_for "$@"; }

# Two tenants with quotas; the job a tenant creates: job 1's workers on other ports.
jq '.tenants = {"acme": {"jobs": 2, "weight": 1.5}, "beta": {"jobs": 1, "slots": 2048}}' \
	"$D/deployment.json" >"$D/d.json" && mv "$D/d.json" "$D/deployment.json"
jq '.jobs[0] | del(.id) | .workers |= map(.port += 5)' "$D/deployment.json" >"$D/job.json"
for t in acme beta gamma; do
	"$PKI" cert "$CERTS" "$t" control --tenant "$t" || not_ok "pki --tenant $t"
done
# job_as CERT ARGS...: georeduce-control job over TLS from the control namespace.
job_as() {
	local c=$1
	shift
	as_ctl "$CTL" job --socket "$API" --cert "$CERTS/$c.pem" --key "$CERTS/$c.key" \
		--ca "$CERTS/ca.pem" "$@"
}
# gateway_job_bytes: every gateway's job memory, one number a line.
gateway_job_bytes() {
	local i
	for i in 0 1 2; do wan_dpctl "$D" "$i" --json stats | jq -r '.memory.job_bytes'; done
}
exists() { # JOB: in the daemon's status, with a live epoch
	"$CTL" status --socket "$D/control.sock" --json |
		jq -e ".jobs[] | select(.job == $1) | .epoch != null" >/dev/null
}
live() { # JOB: live in the daemon's status
	"$CTL" status --socket "$D/control.sock" --json |
		jq -e ".jobs[] | select(.job == $1) | .state == \"live\"" >/dev/null
}
# workers JOB FIRST ROUNDS: both sites' workers join JOB through the control process.
workers() {
	WPIDS=()
	for s in 0 1; do
		ip netns exec "grj$$-s$s" "$WK" --control "$API" --job "$1" \
			--cert "$CERTS/workers-site$s.pem" --key "$CERTS/workers-site$s.key" \
			--ca "$CERTS/ca.pem" --worker-id $((1000 + 100 * s)) --first-round "$2" \
			--rounds "$3" --timeout 10 >"$D/w-$1-$s.out" 2>&1 &
		WPIDS+=($!)
	done
}
waitall() {
	local rc=0 p
	for p in "${WPIDS[@]}"; do wait "$p" || rc=1; done
	return $rc
}

# ---- 1. a tenant creates a job; its workers run exact rounds --------------------------
wan_control_start "$D" --heartbeat-ms 200 --fail-after 3 --timeout-ms 3000 \
	--state-dir "$D/state"
wan_control_wait "$D" || not_ok "static job 1 not live"
gateway_job_bytes >"$D/mem-before"
out=$(job_as acme create "$D/job.json")
if [ "$out" = "job 2 created: a new epoch is being planned" ] && wait_for 30 live 2; then
	ok "tenant acme created job 2 (the first free id): live"
else
	not_ok "job create: '$out'"
	tail -5 "$D/control.log"
fi
workers 2 0 "$ROUNDS"
waitall && ok "job 2: $ROUNDS rounds joined through the control process, every result exact" ||
	{ not_ok "rounds of job 2"; cat "$D"/w-2-*.out; }
gateway_job_bytes >"$D/mem-with"
paste "$D/mem-before" "$D/mem-with" | awk '$2 <= $1 { bad = 1 } END { exit bad }' &&
	ok "every gateway holds more job memory with job 2 ($(paste -sd' ' "$D/mem-with") bytes)" ||
	not_ok "job memory did not grow: $(paste -sd' ' "$D/mem-before") -> $(paste -sd' ' "$D/mem-with")"

# ---- 2. tenants: another tenant sees nothing of it; quotas -----------------------------
[ "$(job_as beta list --json | jq '[.jobs[].job] | length')" = 0 ] &&
	[ "$(job_as acme list --json | jq -c '[.jobs[].job]')" = "[2]" ] &&
	[ "$(job_as control list --json | jq -c '[.jobs[].job]')" = "[1,2]" ] &&
	[ "$("$CTL" job list --socket "$D/control.sock" --json | jq -c '[.jobs[].job]')" = "[1,2]" ] &&
	[ "$(job_as monitor list --json | jq -c '[.jobs[].job]')" = "[1,2]" ] &&
	[ "$("$CTL" status --socket "$D/control.sock" --json | jq -c '[.jobs[].tenant]')" = \
		'[null,"acme"]' ] &&
	ok "job_list: beta sees no job, acme job 2, the operator (TLS, unix socket, monitor) both" ||
	not_ok "job_list by tenant"
job_as beta delete 2 2>"$D/err"
rc=$?
[ $rc = 1 ] && grep -q "no job 2" "$D/err" && exists 2 &&
	ok "beta cannot delete acme's job: $(cat "$D/err")" ||
	not_ok "beta deleting job 2: exit $rc, $(cat "$D/err")"
job_as beta update 2 '{"algorithm": "ring"}' 2>"$D/err"
[ $? = 1 ] && grep -q "no job 2" "$D/err" && ok "beta cannot update it either" ||
	not_ok "beta updating job 2: $(cat "$D/err")"
refuse() { # WHAT WANT CERT ARGS...: the command fails (exit 1) with WANT in its error
	local what=$1 want=$2
	shift 2
	if job_as "$@" >/dev/null 2>"$D/err"; then
		not_ok "$what: accepted"
	elif grep -q -- "$want" "$D/err"; then
		ok "$what: $(cat "$D/err")"
	else
		not_ok "$what: $(cat "$D/err")"
	fi
}
refuse "acme's weight quota (1.5)" "field 'job.weight': tenant 'acme' would hold a weight of 2" \
	acme create "$D/job.json"
jq '.workers |= map(.port += 1)' "$D/job.json" >"$D/job3.json"
refuse "beta's slot quota (2048)" "field 'job.slots.max': tenant 'beta' would hold 4096" \
	beta create "$(jq -c '.slots.max = 4096' "$D/job3.json")"
job_as beta create "$D/job3.json" >/dev/null && ok "beta created job 3 within its quotas" ||
	not_ok "beta's first job: $(cat "$D/err")"
refuse "beta's job quota (1)" "tenant 'beta' has 1 jobs already, its quota" \
	beta create "$(jq -c '.workers |= map(.port += 1)' "$D/job3.json")"
refuse "a tenant the deployment does not name" "tenant 'gamma' is not in the deployment" \
	gamma create "$D/job.json"
refuse "a static job" "job 1 is in the deployment file" control delete 1
refuse "a monitor certificate" "not for a certificate of role 'monitor'" monitor delete 2
mkdir "$D/state/jobs.json.tmp" # the state file cannot be written: nothing changes
refuse "a state directory that cannot be written" "not created: .*jobs.json: cannot write" \
	control create "$(jq -c '.workers |= map(.port += 3)' "$D/job3.json")"
rmdir "$D/state/jobs.json.tmp"
[ "$(job_as control list --json | jq -c '[.jobs[].job]')" = "[1,2,3]" ] &&
	ok "nothing was created" || not_ok "jobs after a failed write"

# ---- 3. malformed job objects: the field named ----------------------------------------
bad() { # JQ_FILTER FIELD
	refuse "malformed $2" "field '$2'" control create "$(jq -c "$1" "$D/job3.json")"
}
bad '.dtype = "fp64"' job.dtype
bad '.elements = 0' job.elements
bad '.algorithm = "star"' job.algorithm
bad '.workers[0].ipv4 = "10.0.0"' 'job.workers\[0\].ipv4'
bad '.workers[1].node = "z"' 'job.workers\[1\].node'
bad '.workers = []' job.workers
bad '.chunk_bytes = 3' job.chunk_bytes
bad '.slots = {"min": 8, "max": 4}' job.slots.min
bad '.options = {"rho": 2}' job.options.rho
bad '.colour = 1' job.colour
bad '.id = 1' job.id
bad 'del(.dtype)' job.dtype

# ---- 4. job_update: a new epoch --------------------------------------------------------
e=$(job_as acme list --json | jq '.jobs[0].epoch')
job_as acme update 2 '{"options": {"max_trees": 1}}' >/dev/null &&
	wait_for 30 bash -c "'$CTL' status --socket '$D/control.sock' --json |
		jq -e '.jobs[] | select(.job == 2) | .epoch > $e and .state == \"live\" and
			(.trees | length) == 1' >/dev/null" &&
	ok "job_update: job 2 re-planned with one tree (epoch $e, then a newer one)" ||
	{ not_ok "job_update"; tail -5 "$D/control.log"; }
refuse "job_update of the dtype" "field 'changes.dtype'" acme update 2 '{"dtype": "bf16"}'
refuse "a malformed change" "field 'changes.options.max_trees'" \
	acme update 2 '{"options": {"max_trees": -1}}'

# ---- 5. the control process killed and restarted: the job stays -----------------------
e=$(job_as acme list --json | jq '.jobs[0].epoch')
wan_control_stop "$D" KILL
# Each job's epochs are in the state: the live one, its gateways, the next number.
jq -e --argjson e "$e" '[.epochs[] | select(.job == 2)] | length == 1 and .[0].epoch == $e and
	.[0].next > $e and (.[0].gateways | length) == 3' "$D/state/jobs.json" >/dev/null &&
	ok "the state records job 2's live epoch $e on 3 gateways and its next number" ||
	not_ok "epochs in the state: $(jq -c .epochs "$D/state/jobs.json")"
# A number recorded as used (say, prepared at a gateway that is down now) is never used
# again: the next epoch after the restart is the recorded one, far above the gateways'.
far=$((e + 50))
jq --argjson e "$e" --argjson far "$far" '.epochs |= map(if .job == 2 then .next = $far else . end)' \
	"$D/state/jobs.json" >"$D/state/j" && mv "$D/state/j" "$D/state/jobs.json"
wan_control_start "$D" --heartbeat-ms 200 --fail-after 3 --timeout-ms 3000 \
	--state-dir "$D/state"
if wait_for 30 grep -q "job 2: epoch $e found live on" \
	"$D/control.log" && [ "$(job_as acme list --json | jq -c '[.jobs[].job]')" = "[2]" ]; then
	ok "restarted: job 2 read from the state directory, epoch $e carried on"
else
	not_ok "job 2 after the restart"
	tail -10 "$D/control.log"
fi
workers 2 "$ROUNDS" "$ROUNDS"
waitall && ok "job 2 after the restart: $ROUNDS more rounds, every result exact" ||
	{ not_ok "rounds after the restart"; cat "$D"/w-2-*.out; }
job_as acme update 2 '{"options": {"max_trees": 4}}' >/dev/null &&
	wait_for 30 bash -c "'$CTL' status --socket '$D/control.sock' --json |
		jq -e '.jobs[] | select(.job == 2) | .epoch > $e and .state == \"live\"' >/dev/null"
e2=$(job_as acme list --json | jq '.jobs[0].epoch')
[ "$e2" = "$far" ] && ok "the next epoch is the recorded next number, $far" ||
	{ not_ok "epoch after the restart: $e2, not $far"; tail -5 "$D/control.log"; }

# ---- 6. job_delete: removed from every gateway, its memory freed ----------------------
workers 2 $((2 * ROUNDS)) 1000000 # still running when the job is deleted
sleep 2
out=$(job_as acme delete 2)
[ "$out" = "job 2 deleted: removed from 3 gateways, 0 to go" ] && ok "acme deleted job 2" ||
	not_ok "job delete: '$out'"
if waitall; then
	not_ok "the workers of the deleted job went on"
elif grep -q "job 2 was deleted" "$D/w-2-0.out" && grep -q "job 2 was deleted" "$D/w-2-1.out"; then
	ok "its running workers: rounds refused, then told: $(tail -1 "$D/w-2-0.out")"
else
	not_ok "the running workers of job 2: $(cat "$D"/w-2-*.out)"
fi
job_as control delete 3 >/dev/null || not_ok "deleting job 3"
same_mem() { gateway_job_bytes >"$D/mem-after" && cmp -s "$D/mem-before" "$D/mem-after"; }
wait_for 30 same_mem &&
	ok "every gateway's job memory back to its level before ($(paste -sd' ' "$D/mem-after") bytes)" ||
	not_ok "job memory $(paste -sd' ' "$D/mem-before") before, $(paste -sd' ' "$D/mem-after") after"
held=0
for i in 0 1 2; do
	n=$(wan_dpctl "$D" "$i" --json dump 2 | jq '.tables | length')
	[ "$n" = 0 ] || { held=1; not_ok "gateway $i holds $n tables of job 2"; }
done
[ $held = 0 ] && ok "no gateway holds a table of job 2 (georeduce-dpctl dump 2)"
ip netns exec "grj$$-s0" "$WK" --control "$API" --job 2 --cert "$CERTS/workers-site0.pem" \
	--key "$CERTS/workers-site0.key" --ca "$CERTS/ca.pem" --worker-id 1000 --rounds 1 \
	--timeout 5 >"$D/w.out" 2>&1
grep -q "job 2 was deleted" "$D/w.out" && ok "a worker of job 2 is told: $(tail -1 "$D/w.out")" ||
	not_ok "worker of the deleted job: $(cat "$D/w.out")"
jq -e '.jobs == [] and .deleted == [2, 3]' "$D/state/jobs.json" >/dev/null &&
	ok "the state directory holds no job" || not_ok "state: $(cat "$D/state/jobs.json")"

# A damaged state file stops the start rather than forget jobs.
# bad_state DOC FIELD WHAT: a state file DOC stops the start (exit 1), naming FIELD (a
# grep pattern).
bad_state() {
	local rc
	echo "$1" >"$D/bad/jobs.json"
	timeout 20 "$CTL" run "$D/deployment.json" --socket "$D/bad.sock" --state-dir "$D/bad" \
		2>"$D/bad.log"
	rc=$?
	[ $rc = 1 ] && grep -q "cannot start: $D/bad/jobs.json: field '$2'" "$D/bad.log" &&
		ok "$3 stops the start: $(tail -1 "$D/bad.log" | cut -d' ' -f2- | head -c 160)" ||
		not_ok "$3: exit $rc, $(cat "$D/bad.log")"
}
mkdir "$D/bad"
bad_state '{"format": "x"}' format "a damaged state file"
doc='{"format": "georeduce-control-jobs/1", "jobs": [], "epochs": '
for e in '"next": 0, "gateways": []' '"next": 3, "gateways": [1]' '"gateways": []' \
	'"next": 4294967296, "gateways": []'; do
	bad_state "$doc[{\"job\": 1, \"epoch\": 2, $e}]}" 'epochs\[0\]' "a malformed epoch ($e)"
done
bad_state "$doc{}}" epochs "epochs that are not an array"

# ---- 7. a launcher in Python: georeduce.Job.create() and .delete() over TLS -----------
cat >"$D/launch.py" <<'PY'
import json, subprocess, sys, time
import georeduce
api, certs, spec, ctl, sock = sys.argv[1:6]
tls = dict(cert=certs + "/acme.pem", key=certs + "/acme.key", ca=certs + "/ca.pem")
job = georeduce.Job.create(api, json.load(open(spec)), **tls)
def state():
    s = json.loads(subprocess.run([ctl, "status", "--socket", sock, "--json"],
                                  capture_output=True, text=True, check=True).stdout)
    return [j for j in s["jobs"] if j["job"] == job.id]
for _ in range(300):
    if state() and state()[0]["state"] == "live":
        break
    time.sleep(0.1)
try:
    georeduce.Job.create(api, dict(json.load(open(spec)), dtype="fp64"), **tls)
    print("not refused")
except georeduce.JobError as e:
    print("refused", e.errno, e)
job.update(algorithm="ring")
job.delete()
try:
    job.delete()
except georeduce.JobError as e:
    print("again", e.errno, e)
print("job", job.id, "live", "gone" if not state() else "kept")
PY
as_ctl env PYTHONPATH="$ROOT/python" GEOREDUCE_LIBRARY="$BUILD/lib/client/libgeoreduce.so" \
	LD_PRELOAD="${GEOREDUCE_PY_PRELOAD:-}" ASAN_OPTIONS=detect_leaks=0 python3 "$D/launch.py" "$API" "$CERTS" "$D/job.json" "$CTL" "$D/control.sock" \
	>"$D/py.out" 2>&1
if grep -q "^refused 22 .*field 'job.dtype'" "$D/py.out" &&
	grep -q "^again 2 .*no job" "$D/py.out" && grep -q "^job [0-9]* live gone" "$D/py.out"; then
	ok "Python launcher: Job.create, a bad dtype refused (EINVAL), update, delete, a second delete ENOENT"
else
	not_ok "Python launcher: $(cat "$D/py.out")"
fi

echo "jobs_e2e: $fails failed"
[ $fails = 0 ]
