#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Control replicas on etcd (docs/DEPLOYMENT.md, "Replicas on etcd"): a real etcd cluster
# of three members started here on free local ports, three dataplanes on net_null ports (nulldp.sh) and
# three georeduce-control replicas of the 3-site example deployment. Checked: one leader,
# the others follow and name it in `status`; a follower refuses a job_create naming the
# leader; a job created on the leader is installed; the leader killed (SIGKILL): another
# takes over, its status names it and a higher term, the job of the API is still there and
# its live epoch carried on (nothing installed); the gateways saw the new term and refuse
# an activate carrying the old one, counted; the leader frozen (SIGSTOP) past its lease,
# as if cut off from etcd: another leads, and thawed it says it was deposed and changes no
# gateway; one etcd member (not etcd's raft leader)
# lost: the same leader and term; etcd stopped: no replica leads (the leader
# deposed within its lease), each says why, the gateways keep their epochs; etcd back: a
# leader again, the job still live. Replicas whose gateway calls may block for longer
# than their lease: a gateway frozen, the leader's loop blocked in calls to it for three
# leases each, and it is not deposed (its keepalives have a thread of their own). Then etcd over mutual TLS (https, a client
# certificate): a replica leads; one without a client certificate cannot and says why.
# Then clients given all replicas' endpoints (docs/CONTROL.md, "Several control
# endpoints"), on the emulated WAN with TLS (root and network namespaces; skipped
# otherwise): two georeduce-worker processes whose list starts with a dead endpoint and a
# follower run a job's rounds; the leader SIGKILLed mid-run, their next rounds complete,
# bit-exact, and they follow the new leader (their connections are there, and an epoch
# it installs reaches them); `georeduce-control status` given a dead endpoint first
# answers and names the leader and term.
#
#   replicas_e2e.sh CONTROL DATAPLANE DPCTL WORKER
set -u
CONTROL=$1
DP=$2
DPCTL=$3
WK=$4
source "$(dirname "$0")/clilib.sh"
P=grr$$
source "$(dirname "$0")/nulldp.sh"

# ---- etcd ----------------------------------------------------------------------------
# As root, a network namespace for a replica that a link cut separates from etcd (the
# partition below): a veth pair, 10.96.X.1 here (etcd answers there too) and 10.96.X.2 there.
CUT=
cut_down() {
	[ -n "$CUT" ] || return 0
	ip netns del "$CUT" 2>/dev/null
	ip link del "${P}c0" 2>/dev/null
}
if [ "$(id -u)" = 0 ] && ip netns list >/dev/null 2>&1; then
	x=$(($$ % 16384))
	CUT_NET=10.96.$((x / 64)).$((x % 64 * 4))
	CUT=$P-cut
	trap 'cut_down; nulldp_cleanup' EXIT
	if ip netns add "$CUT" && ip link add "${P}c0" type veth peer name "${P}c1" &&
		ip link set "${P}c1" netns "$CUT" &&
		ip addr add "${CUT_NET%.*}.$((${CUT_NET##*.} + 1))/30" dev "${P}c0" &&
		ip link set "${P}c0" up &&
		ip -n "$CUT" addr add "${CUT_NET%.*}.$((${CUT_NET##*.} + 2))/30" dev "${P}c1" &&
		ip -n "$CUT" link set "${P}c1" up && ip -n "$CUT" link set lo up; then
		ETCD_LISTEN_EXTRA=${CUT_NET%.*}.$((${CUT_NET##*.} + 1))
	else
		not_ok "the namespace for the partition could not be made"
		cut_down
		CUT=
	fi
fi
MEMBERS=3
source "$(dirname "$0")/etcdlib.sh"
etcd_first || exit 1

# ---- bad options ------------------------------------------------------------------------
expect 2 "run: --lease-ms without --etcd" "$CONTROL" run "$EXAMPLE" --lease-ms 3000
expect 2 "run: --lease-ms below 1000" "$CONTROL" run "$EXAMPLE" --etcd "$ETCD" --lease-ms 10
expect 1 "run: an etcd endpoint that is not a URL" "$CONTROL" run "$tmp/deploy.json" \
	--socket "$tmp/x.sock" --etcd 127.0.0.1:1

# ---- three dataplanes, three replicas ----------------------------------------------------
# One static job (the dataplanes' packet pools hold it, a job of the API and the next
# epochs of both).
jq '.jobs |= [.[0]]' "$tmp/deploy.json" >"$tmp/d1.json" && mv "$tmp/d1.json" "$tmp/deploy.json"
start_dps
# Calls to a dataplane may take 3 s (an activation waits for an RCU grace period, which
# on a loaded machine can take over a second: control_e2e.sh), so a lease of 5 s.
REPLICA=(--heartbeat-ms 200 --fail-after 3 --timeout-ms 3000 --lease-ms 5000)
for r in r1 r2 r3; do start_replica $r "${REPLICA[@]}"; done

# must_lead WHAT R...: one of R... leads within 60 s (ok: WHAT, with $leader), else stop.
must_lead() {
	local what=$1
	shift
	if wait_leader 60 "$@"; then
		ok "$what: $leader"
	else
		not_ok "$what: none of $*: $(for r in "$@"; do st "$r" '.election | tojson'; done)"
		cat "$tmp"/r?.log
		exit 1
	fi
}
must_lead "one leader among three replicas" r1 r2 r3
term1=$(st "$leader" .election.term)
followers=$(echo r1 r2 r3 | tr ' ' '\n' | grep -v "^$leader$" | tr '\n' ' ')
f1=${followers%% *}
# A follower learns the leader within a few polls (lease/3 each).
for _ in $(seq 100); do
	[ "$(st "$f1" .election.leader.name)" = "$leader" ] && break
	sleep 0.2
done
if [ "$(st "$f1" .election.role)" = follower ] &&
	[ "$(st "$f1" .election.leader.name)" = "$leader" ] &&
	[ "$(st "$f1" .election.term)" = "$term1" ]; then
	ok "follower $f1's status names the leader $leader and term $term1"
	"$CONTROL" status --socket "$tmp/$f1.sock" | grep -q "replica $f1, follower; leader $leader, term $term1" &&
		ok "... in its text too" || not_ok "status text: $("$CONTROL" status --socket "$tmp/$f1.sock" | head -3)"
else
	not_ok "follower status: $(st "$f1" '.election | tojson')"
fi

# A job of the API, created through a follower (refused, naming the leader) and the leader.
jq -c '.jobs[0] | .id = 9 | .elements = 65536 | .slots.max = 256 | .workers |= map(.port += 5)' \
	"$EXAMPLE" >"$tmp/job.json"
expect 1 "a follower refuses job_create" "$CONTROL" job create "$tmp/job.json" \
	--socket "$tmp/$f1.sock"
grep -q "goes to the leader, $leader" "$tmp/err" &&
	ok "the refusal names the leader" || not_ok "refusal: $(cat "$tmp/err")"
expect 0 "the leader creates job 9" "$CONTROL" job create "$tmp/job.json" \
	--socket "$tmp/$leader.sock"

live_epoch() { # GATEWAY JOB: its live epoch, or none
	"$DPCTL" -s "$tmp/$1.sock" --json dump "$2" 2>/dev/null |
		jq -r '[.tables[] | select(.state == "live") | (.table.epoch // .epoch)]
			| max // "none"'
}
same_live() { # JOB: every gateway runs one epoch: echo it
	local a b c
	a=$(live_epoch a "$1") b=$(live_epoch b "$1") c=$(live_epoch c "$1")
	[ "$a" != none ] && [ "$a" = "$b" ] && [ "$b" = "$c" ] && echo "$a"
}
# replan_by REPLICA TERM: REPLICA re-plans job 9; wait until gateway a has seen TERM and
# every gateway runs one epoch of job 9 (then in e9).
replan_by() {
	"$CONTROL" replan --socket "$tmp/$1.sock" 9 >/dev/null 2>&1
	for _ in $(seq 300); do
		[ "$("$DPCTL" -s "$tmp/a.sock" --json stats | jq -r .control_term)" = "$2" ] &&
			e9=$(same_live 9) && return 0
		sleep 0.2
	done
	return 1
}
for _ in $(seq 600); do e9=$(same_live 9) && e1=$(same_live 1) && break; sleep 0.1; done
if [ -n "${e9:-}" ] && [ -n "${e1:-}" ]; then
	ok "job 9 live on every gateway (epoch $e9), job 1 too (epoch $e1)"
else
	not_ok "job 9 never live everywhere: $(live_epoch a 9) $(live_epoch b 9) $(live_epoch c 9)"
	cat "$tmp/$leader.log"
	exit 1
fi
for g in a b; do
	t=$("$DPCTL" -s "$tmp/$g.sock" --json stats | jq -r .control_term)
	[ "$t" = "$term1" ] && ok "gateway $g saw term $term1" ||
		not_ok "gateway $g's control_term: $t, want $term1"
done

# ---- the leader killed ------------------------------------------------------------------
kill -KILL "${rpid[$leader]}"
old=$leader
# shellcheck disable=SC2086 # the names, split
must_lead "after SIGKILL of $old, a new leader" $followers
term2=$(st "$leader" .election.term)
[ "$term2" -gt "$term1" ] && ok "its term $term2 is above $term1" ||
	not_ok "term after failover: $term2, before $term1"
for _ in $(seq 300); do
	[ "$(st "$leader" '.jobs[] | select(.job == 9) | .state')" = live ] && break
	sleep 0.2
done
if [ "$(st "$leader" '.jobs[] | select(.job == 9) | .source')" = api ] &&
	[ "$(st "$leader" '.jobs[] | select(.job == 9) | .epoch')" = "$e9" ] &&
	grep -q "job 9: epoch $e9 found live on 3 gateways" "$tmp/$leader.log"; then
	ok "job 9 survives the failover, epoch $e9 carried on, nothing installed"
else
	not_ok "job 9 after failover: $(st "$leader" '.jobs[] | select(.job == 9) | {source, epoch, state} | tojson')"
fi
# The state in etcd has each job's epochs: job 9's live one, its gateways, a next number
# above it (written by the new leader when it took the epoch over).
ETCDCTL_API=3 etcdctl --endpoints "$ETCD" get "/$P/state" --print-value-only 2>/dev/null |
	jq -e --argjson e "$e9" '[.epochs[] | select(.job == 9)] | length == 1 and
		.[0].epoch == $e and .[0].next > $e and (.[0].gateways | sort) == ["a", "b", "c"]' \
		>/dev/null && ok "etcd's state records job 9's live epoch $e9 on a, b and c" ||
	not_ok "epochs in etcd: $(ETCDCTL_API=3 etcdctl --endpoints "$ETCD" get "/$P/state" \
		--print-value-only 2>&1 | jq -c .epochs 2>&1)"
f1=$(echo $followers | tr ' ' '\n' | grep -v "^$leader$")
start_replica "$old" "${REPLICA[@]}" # back, as a follower

# The gateways have seen the new term once the new leader changed one of their tables.
"$CONTROL" replan --socket "$tmp/$leader.sock" 9 >/dev/null 2>&1
for _ in $(seq 300); do
	[ "$("$DPCTL" -s "$tmp/a.sock" --json stats | jq -r .control_term)" = "$term2" ] && break
	sleep 0.2
done
e9=$(live_epoch a 9)
expect 1 "an activate of the old term is refused" "$DPCTL" -s "$tmp/a.sock" raw \
	"{\"version\": 1, \"op\": \"activate\", \"id\": 1, \"job\": 9, \"epoch\": $e9, \"term\": $term1}"
grep -q "older than term $term2" "$tmp/out" "$tmp/err" &&
	ok "the refusal names the newer term" || not_ok "refusal: $(cat "$tmp/out" "$tmp/err")"
[ "$("$DPCTL" -s "$tmp/a.sock" --json stats | jq -r .stale_terms_refused)" -ge 1 ] &&
	ok "gateway a counts it (stale_terms_refused)" || not_ok "stale_terms_refused not counted"
expect 1 "a bad term is refused" "$DPCTL" -s "$tmp/a.sock" raw \
	'{"version": 1, "op": "remove", "id": 1, "job": 9, "term": "x"}'

# ---- the leader frozen past its lease (as if cut off from etcd) -------------------------
# SIGSTOP: it neither renews its lease nor changes anything; another replica leads and
# installs an epoch of a newer term. SIGCONT: the thawed one finds its lease gone, says it
# was deposed and changes no gateway: job 9 stays on the new leader's epoch.
frozen=$leader
kill -STOP "${rpid[$frozen]}"
# shellcheck disable=SC2046 # the names, split
must_lead "$frozen frozen past its lease: a new leader" $(printf '%s\n' r1 r2 r3 | grep -v "^$frozen$")
term3=$(st "$leader" .election.term)
replan_by "$leader" "$term3"
kill -CONT "${rpid[$frozen]}"
for _ in $(seq 150); do
	grep -q "deposed as leader of term $term2" "$tmp/$frozen.log" && break
	sleep 0.2
done
sleep 3 # three heartbeats of the thawed replica, had it gone on leading
if grep -q "deposed as leader of term $term2" "$tmp/$frozen.log" &&
	[ "$(st "$frozen" .election.role)" = follower ] && [ "$(same_live 9)" = "$e9" ] &&
	[ "$(st "$leader" .election.term)" = "$term3" ]; then
	ok "thawed, $frozen says it was deposed (term $term2) and follows; job 9 stays on epoch $e9 of term $term3"
else
	not_ok "the thawed leader: $(grep -c deposed "$tmp/$frozen.log") depositions logged, role $(st "$frozen" .election.role), job 9 on $(same_live 9) (want $e9)"
fi
term2=$term3

# ---- one etcd member lost: nothing changes ----------------------------------------------
# A member that is not etcd's raft leader: losing the raft leader stalls etcd for an
# election (about its election timeout, 1 s by default), which a lease must outlast.
lost=$(ETCDCTL_API=3 etcdctl --endpoints "$ETCD" endpoint status -w json 2>/dev/null |
	jq -r '[.[] | select(.Status.leader != .Status.header.member_id) | .Endpoint][0]')
for i in 0 1 2; do [ "$lost" = "http://127.0.0.1:${EC[i]}" ] && kill -TERM "${etcd_pids[i]}"; done
same=0
# Ten polls of every replica, 3 s and more apart in all: the leader and its term
# stay.
for _ in $(seq 10); do
	[ "$(leader_of r1 r2 r3)" = "$leader" ] && [ "$(st "$leader" .election.term)" = "$term2" ] &&
		same=$((same + 1))
	sleep 0.3
done
[ $same = 10 ] && ok "one etcd member of three lost ($lost): $leader still leads, term $term2" ||
	not_ok "one etcd member lost: the leader or term changed ($same of 10 polls the same)"

# ---- etcd stopped, then back -------------------------------------------------------------
stop_etcd
e9=$(same_live 9)
none=no
for _ in $(seq 300); do
	if [ -z "$(leader_of r1 r2 r3)" ]; then none=yes; break; fi
	sleep 0.2
done
[ $none = yes ] && ok "etcd stopped: no replica leads" ||
	not_ok "etcd stopped: still a leader: $(leader_of r1 r2 r3)"
# (Its status says follower as soon as its lease may have run out; the log line comes at
# its next keepalive.)
wait_for_line "$tmp/$leader.log" "deposed as leader of term $term2" 30 &&
	ok "the leader says it was deposed" || not_ok "no deposition in $leader's log"
sleep 3
why=$(st "$f1" .election.etcd_error)
case $why in
*127.0.0.1:$EC*) ok "a follower's status says why: $why" ;;
*) not_ok "follower's etcd_error: '$why'" ;;
esac
expect 1 "job_create refused while etcd is down" "$CONTROL" job create "$tmp/job.json" \
	--socket "$tmp/$f1.sock"
grep -q "there is none now" "$tmp/err" && ok "... saying there is no leader" ||
	not_ok "refusal without etcd: $(cat "$tmp/err")"
[ "$(same_live 9)" = "$e9" ] && ok "the gateways keep job 9's epoch $e9" ||
	not_ok "job 9's epochs changed without etcd"
# Gateway c restarted while no replica leads: it comes back without tables, and only a
# leader can give it them; it remembers the newest term it saw (its term file, beside its
# socket), so a deposed leader still cannot change it.
tc=$("$DPCTL" -s "$tmp/c.sock" --json stats | jq .control_term)
kill -KILL "$dp_c" 2>/dev/null
for _ in $(seq 100); do kill -0 "$dp_c" 2>/dev/null || break; sleep 0.1; done
start_dp c 3
wait_dp c
[ "$(live_epoch c 9)" = none ] && ok "gateway c restarted while no replica leads: no tables" ||
	not_ok "gateway c after its restart: job 9 on epoch $(live_epoch c 9)"
t=$("$DPCTL" -s "$tmp/c.sock" --json stats | jq .control_term)
[ "$tc" != null ] && [ "$t" = "$tc" ] && ok "... and term $tc, as before its restart" ||
	not_ok "gateway c's term across its restart: $t, before $tc"
expect 1 "the restarted gateway refuses a remove of term $((tc - 1))" "$DPCTL" -s "$tmp/c.sock" raw \
	"{\"version\": 1, \"op\": \"remove\", \"id\": 1, \"job\": 9, \"term\": $((tc - 1))}"
grep -q "older than term $tc" "$tmp/out" "$tmp/err" && ok "... naming term $tc" ||
	not_ok "refusal: $(cat "$tmp/out" "$tmp/err")"
start_etcd || not_ok "etcd did not start again"
if wait_leader 60 r1 r2 r3; then
	ok "etcd back: $leader leads, term $(st "$leader" .election.term)"
else
	not_ok "etcd back, no leader: $(for r in r1 r2 r3; do st $r '.election | tojson'; done)"
fi
for _ in $(seq 300); do
	[ "$(st "$leader" '.jobs[] | select(.job == 9) | .state')" = live ] && break
	sleep 0.2
done
[ "$(st "$leader" '.jobs[] | select(.job == 9) | .state')" = live ] &&
	ok "job 9 live under the new leader" ||
	not_ok "job 9 after etcd came back: $(st "$leader" '.jobs[] | select(.job == 9) | tojson')"
for _ in $(seq 600); do e9c=$(same_live 9) && break; sleep 0.2; done
[ -n "${e9c:-}" ] && ok "gateway c has job 9's tables from the new leader: every gateway on epoch $e9c" ||
	not_ok "gateway c never got job 9's tables: a $(live_epoch a 9), b $(live_epoch b 9), c $(live_epoch c 9)"

# ---- the leader cut off from etcd by the network -------------------------------------------
# Replica r4 runs in the namespace CUT, reaching etcd over its veth and the gateways over
# their unix sockets. With r1, r2 and r3 stopped (SIGSTOP) it leads and changes job 9; thawed,
# they follow. Then the veth goes down: r4 can no longer renew its lease, so within it it
# stops changing gateways and says so, a replica of the three leads with a newer term and
# changes job 9, which stays as that one made it; a request of r4's term is refused by the
# gateways and counted. The link back: r4 follows the new leader.
if [ -n "$CUT" ]; then
	ETCD_CUT=$(echo "$ETCD" | sed "s/127\.0\.0\.1/$ETCD_LISTEN_EXTRA/g")
	IN_NS=$CUT ETCD=$ETCD_CUT start_replica r4 "${REPLICA[@]}"
	for r in r1 r2 r3; do kill -STOP "${rpid[$r]}"; done
	if wait_leader 60 r4; then
		t4=$(st r4 .election.term)
		ok "r4, in its own network namespace, leads (term $t4)"
	else
		not_ok "r4 never led: $(st r4 '.election | tojson')"
	fi
	for r in r1 r2 r3; do kill -CONT "${rpid[$r]}"; done
	replan_by r4 "${t4:-x}" && ok "r4 changed job 9 under term $t4" ||
		not_ok "gateway a never saw r4's term ${t4:-}"
	ip link set "${P}c0" down
	cut_at=$SECONDS
	if wait_for_line "$tmp/r4.log" "deposed as leader of term ${t4:-x}" 30; then
		ok "the veth down, r4 says it was deposed within $((SECONDS - cut_at)) s (lease 5 s)"
	else
		not_ok "r4 never said it was deposed: $(st r4 '.election | tojson')"
	fi
	# Deposed, it starts again as a follower (the same pid, its socket made again). Each of
	# its etcd calls, cut off, takes up to a third of its lease before it answers.
	for _ in $(seq 300); do [ "$(st r4 .election.role)" = follower ] && break; sleep 0.2; done
	expect 1 "r4 refuses a replan, cut off" "$CONTROL" replan --socket "$tmp/r4.sock" \
		--timeout-ms 20000 9
	grep -q "leader" "$tmp/err" && ok "... saying it does not lead" || not_ok "r4's refusal: $(cat "$tmp/err")"
	if wait_leader 60 r1 r2 r3; then
		t5=$(st "$leader" .election.term)
		[ "$t5" -gt "${t4:-0}" ] && ok "$leader leads with term $t5, after $t4" ||
			not_ok "the new leader's term $t5 is not above $t4"
	else
		not_ok "no replica of the three leads after the cut"
	fi
	replan_by "$leader" "${t5:-x}"
	refused=$("$DPCTL" -s "$tmp/a.sock" --json stats | jq -r .stale_terms_refused)
	sleep 3
	[ -n "${e9:-}" ] && [ "$(same_live 9)" = "$e9" ] &&
		ok "job 9 stays on epoch $e9 of term $t5 at every gateway" ||
		not_ok "job 9 after the cut: $(same_live 9), want ${e9:-}"
	expect 1 "an activate of r4's term $t4 refused by gateway a" "$DPCTL" -s "$tmp/a.sock" raw \
		"{\"version\": 1, \"op\": \"activate\", \"id\": 1, \"job\": 9, \"epoch\": $e9, \"term\": ${t4:-1}}"
	[ "$("$DPCTL" -s "$tmp/a.sock" --json stats | jq -r .stale_terms_refused)" = $((refused + 1)) ] &&
		ok "... and counted" || not_ok "stale_terms_refused: not counted"
	ip link set "${P}c0" up
	for _ in $(seq 300); do
		[ "$(st r4 .election.leader.name)" = "$leader" ] && [ "$(st r4 .election.role)" = follower ] && break
		sleep 0.2
	done
	[ "$(st r4 .election.role)" = follower ] && [ "$(st r4 .election.leader.name)" = "$leader" ] &&
		ok "the link back, r4 follows $leader" ||
		not_ok "r4 after the link came back: $(st r4 '.election | tojson')"
	kill -TERM "${rpid[r4]}" 2>/dev/null
	unset ETCD_LISTEN_EXTRA
fi

# ---- the leader's loop blocked for longer than its lease: its keepalives go on -----------
# Two replicas with a lease of 2 s whose gateway calls may each block for 6 s. Gateway c
# frozen (SIGSTOP) accepts the leader's connections and answers nothing, so each of its
# heartbeats holds the leader's loop for 6 s, three leases. The lease is kept alive by a
# thread of its own meanwhile: after two heartbeats of c missed, the same replica leads
# with the same term, the other follows it, nobody was deposed, and keepalives were
# counted.
for r in r1 r2 r3; do kill -TERM "${rpid[$r]}" 2>/dev/null; done
for r in r1 r2 r3; do
	for _ in $(seq 100); do kill -0 "${rpid[$r]}" 2>/dev/null || break; sleep 0.1; done
done
BLOCK=(--heartbeat-ms 200 --fail-after 3 --timeout-ms 6000 --lease-ms 2000)
for r in k1 k2; do start_replica $r "${BLOCK[@]}"; done
must_lead "lease 2 s, gateway calls up to 6 s: one leader of two replicas" k1 k2
kl=$leader
kf=$(echo k1 k2 | tr ' ' '\n' | grep -v "^$kl$")
kt=$(st "$kl" .election.term)
for _ in $(seq 300); do
	[ "$(st "$kl" '.jobs[] | select(.job == 9) | .state')" = live ] && break
	sleep 0.2
done
ka0=$(st "$kl" .election.keepalives)
kill -STOP "$dp_c"
if wait_for_line "$tmp/$kl.log" "heartbeat missed \(2 of 3\)" 120; then
	ok "gateway c frozen: two of $kl's heartbeats of it blocked for 6 s each"
else
	not_ok "gateway c frozen: $kl never missed two heartbeats: $(grep -c "heartbeat missed" "$tmp/$kl.log")"
fi
kill -CONT "$dp_c"
for _ in $(seq 100); do
	ka1=$(st "$kl" .election.keepalives)
	[ -n "$ka1" ] && break
	sleep 0.2
done
if [ "$(st "$kl" .election.role)" = leader ] && [ "$(st "$kl" .election.term)" = "$kt" ] &&
	[ "$(st "$kf" .election.leader.name)" = "$kl" ] && [ "$(st "$kf" .election.term)" = "$kt" ] &&
	! grep -q deposed "$tmp/$kl.log" "$tmp/$kf.log"; then
	ok "$kl still leads with term $kt, $kf follows it, nobody deposed"
else
	not_ok "after the blocked calls: $kl $(st "$kl" '.election | tojson'), $kf $(st "$kf" '.election | tojson'), $(cat "$tmp/$kl.log" "$tmp/$kf.log" | grep -c deposed) depositions logged"
fi
[ -n "$ka0" ] && [ -n "$ka1" ] && [ "$ka1" -gt "$ka0" ] &&
	ok "its keepalives went on: $ka0 before, $ka1 after" ||
	not_ok "keepalives: '$ka0' before, '$ka1' after"

stop_etcd
for r in k1 k2; do kill -TERM "${rpid[$r]}" 2>/dev/null; done

# ---- etcd over mutual TLS -----------------------------------------------------------------
# A CA, etcd's server certificate for 127.0.0.1 and a client certificate (openssl). The
# server's is for client authentication too: etcd's HTTP gateway calls etcd with it.
(
	cd "$tmp" &&
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
			-subj /CN=etcd-ca -keyout ca.key -out ca.pem &&
		for n in server client; do
			openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
				-subj "/CN=$n" -keyout $n.key -out $n.csr &&
				printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=%s\n' \
					"$([ $n = server ] && echo serverAuth,)clientAuth" >$n.ext &&
				openssl x509 -req -in $n.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
					-days 2 -extfile $n.ext -out $n.pem || exit 1
		done
) >"$tmp/pki.log" 2>&1 || not_ok "test certificates: $(tail -3 "$tmp/pki.log")"
TC=${EC[0]}
etcd --name t --data-dir "$tmp/etcd-tls" --listen-client-urls "https://127.0.0.1:$TC" \
	--advertise-client-urls "https://127.0.0.1:$TC" --listen-peer-urls "http://127.0.0.1:${EP[0]}" \
	--initial-advertise-peer-urls "http://127.0.0.1:${EP[0]}" \
	--initial-cluster "t=http://127.0.0.1:${EP[0]}" --cert-file "$tmp/server.pem" \
	--key-file "$tmp/server.key" --trusted-ca-file "$tmp/ca.pem" --client-cert-auth \
	>"$tmp/etcd-tls.log" 2>&1 &
pids+=($!)
disown $!
ETCD=https://127.0.0.1:$TC
for r in t1 t2; do
	start_replica $r --heartbeat-ms 200 --etcd-ca "$tmp/ca.pem" --etcd-cert "$tmp/client.pem" \
		--etcd-key "$tmp/client.key"
done
must_lead "etcd over mutual TLS: one leader of two replicas" t1 t2
start_replica t3 --heartbeat-ms 200 --etcd-ca "$tmp/ca.pem"
for _ in $(seq 100); do
	why=$(st t3 .election.etcd_error)
	[ -n "$why" ] && [ "$why" != null ] && break
	sleep 0.2
done
[ "$(st t3 .election.role)" = follower ] && [ "$why" != null ] &&
	ok "a replica without a client certificate does not lead, and says: $why" ||
	not_ok "replica without a client certificate: $(st t3 '.election | tojson')"
for r in t1 t2 t3; do kill -TERM "${rpid[$r]}" 2>/dev/null; done
stop_etcd

# ---- workers and tools given every replica's endpoint, on the emulated WAN ----------------
wan_part() {
	local ns api host ports=() lst status_out old new e0 e1 k job ep1 ep2 done2
	D=$tmp/wan
	mkdir -p "$D"
	GEOREDUCE_ROOT=$(pwd)
	# shellcheck source=../scripts/lib/wan.sh
	. scripts/lib/wan.sh
	trap 'wan_down "$tmp/wan"; cut_down; nulldp_cleanup' EXIT
	wan_up_tls3 "$D" "$(cd "$(dirname "$CONTROL")/../.." && pwd)" replicas-e2e 0.05 \
		--jobs mtree --elements 16384 --slots-max 1024 --prefix "grw$$" ||
		{ not_ok "the emulated WAN did not come up"; return 1; }
	ns=$(wan_ctl "$D" ns)
	api=$(wan_ctl "$D" api)
	host=${api#tls://}
	host=${host%:*}
	K=$(wan_ctl "$D" pki)
	IN_NS=$ns DEPLOY=$D/deployment.json MEMBERS=1
	etcd_first || { not_ok "etcd in the control namespace"; return 1; }
	# Three replicas on the control host, each its own API port; 7319 is nobody's.
	for k in 1 2 3; do
		ports[k]=$((7310 + k))
		start_replica "w$k" --listen "$host:${ports[k]}" "${REPLICA[@]}"
	done
	must_lead "on the WAN: one leader among three replicas" w1 w2 w3
	old=$leader
	term1=$(st "$old" .election.term)
	# The list: a dead endpoint, the followers, the leader last.
	lst=tls://$host:7319
	for k in 1 2 3; do [ "w$k" = "$old" ] || lst=$lst,tls://$host:${ports[k]}; done
	lst=$lst,tls://$host:${ports[${old#w}]}
	jq -c '.jobs[0] | del(.id) | .workers |= map(.port += 5)' "$D/deployment.json" \
		>"$D/job.json"
	ctl() { ip netns exec "$ns" "$CONTROL" "$@" --cert "$K/control.pem" \
		--key "$K/control.key" --ca "$K/ca.pem"; }
	job=$(ctl job --socket "$lst" create "$D/job.json" | sed -n 's/^job \([0-9]*\) created.*/\1/p')
	[ -n "$job" ] && ok "job $job created through the list $lst" ||
		{ not_ok "job create through $lst"; return 1; }
	for _ in $(seq 300); do
		[ "$(st "$old" ".jobs[] | select(.job == $job) | .state")" = live ] && break
		sleep 0.2
	done
	for s in 0 1; do
		ip netns exec "grw$$-s$s" "$WK" --control "$lst" --job "$job" \
			--cert "$K/workers-site$s.pem" --key "$K/workers-site$s.key" --ca "$K/ca.pem" \
			--worker-id $((1000 + 100 * s)) --rounds 1000000 --timeout 20 \
			>"$D/w$s.out" 2>&1 &
		pids+=($!)
		eval "w$s=\$!"
	done
	verified() { grep -c "contributors, verified" "$1" 2>/dev/null || echo 0; }
	for _ in $(seq 600); do
		[ "$(verified "$D/w0.out")" -ge 20 ] && [ "$(verified "$D/w1.out")" -ge 20 ] && break
		sleep 0.1
	done
	[ "$(verified "$D/w0.out")" -ge 20 ] && [ "$(verified "$D/w1.out")" -ge 20 ] &&
		ok "two workers given $lst run rounds of job $job, exact" ||
		{ not_ok "workers' rounds: $(tail -n 2 "$D"/w?.out)"; return 1; }
	[ "$(st "$old" .api.connections.worker)" = 2 ] &&
		ok "their connections are at the leader $old" ||
		not_ok "the leader's worker connections: $(st "$old" .api.connections)"

	kill -KILL "${rpid[$old]}"
	e0=$(verified "$D/w0.out") e1=$(verified "$D/w1.out")
	followers=$(echo w1 w2 w3 | tr ' ' '\n' | grep -v "^$old$" | tr '\n' ' ')
	# shellcheck disable=SC2086 # the names, split
	must_lead "on the WAN: after SIGKILL of $old, a new leader" $followers
	new=$leader
	# The workers' next calls find the new leader (a follower names it, or it is next).
	for _ in $(seq 300); do
		[ "$(st "$new" .api.connections.worker)" = 2 ] && break
		sleep 0.2
	done
	[ "$(st "$new" .api.connections.worker)" = 2 ] &&
		ok "both workers' connections moved to the new leader $new" ||
		not_ok "the new leader's worker connections: $(st "$new" .api.connections)"
	# An epoch the new leader installs reaches them through it (one tree instead of
	# two): the gateways complete rounds of it, which only workers that have it run.
	for _ in $(seq 300); do
		[ "$(st "$new" ".jobs[] | select(.job == $job) | .state")" = live ] && break
		sleep 0.2
	done
	ep1=$(st "$new" ".jobs[] | select(.job == $job) | .epoch")
	ctl job --socket "$lst" update "$job" '{"options": {"max_trees": 1}}' >/dev/null &&
		ok "job $job updated through the list (its first endpoint dead, the old leader dead)" ||
		not_ok "job update through $lst"
	for _ in $(seq 600); do
		ep2=$(st "$new" ".jobs[] | select(.job == $job) | .epoch")
		done2=$(st "$new" ".jobs[] | select(.job == $job) | .rounds.completed // 0 | floor")
		[ "$ep2" != "$ep1" ] && [ "${done2:-0}" -ge 5 ] && break
		sleep 0.1
	done
	[ "$ep2" != "$ep1" ] && [ "${done2:-0}" -ge 5 ] &&
		ok "the new leader's epoch $ep2 (after $ep1) reached the workers: $done2 rounds of it done" ||
		not_ok "the new leader's epoch: $ep1 -> $ep2, rounds of it $done2: $(tail -n 3 "$D"/w?.out)"
	for _ in $(seq 600); do
		[ "$(verified "$D/w0.out")" -ge $((e0 + 40)) ] &&
			[ "$(verified "$D/w1.out")" -ge $((e1 + 40)) ] && break
		sleep 0.1
	done
	kill -TERM "$w0" "$w1" 2>/dev/null
	if [ "$(verified "$D/w0.out")" -ge $((e0 + 40)) ] &&
		[ "$(verified "$D/w1.out")" -ge $((e1 + 40)) ] &&
		! grep -qE "round [0-9]+: .*(not verified|wrong|mismatch)" "$D"/w?.out; then
		ok "rounds after the failover: $(($(verified "$D/w0.out") - e0)) and $(($(verified "$D/w1.out") - e1)) more, every one exact"
	else
		not_ok "rounds after the failover: $(tail -n 3 "$D"/w?.out)"
	fi

	# status given a dead endpoint first answers, and names the leader and term.
	status_out=$(ctl status --socket "tls://$host:7319,tls://$host:${ports[${new#w}]}" 2>&1)
	term2=$(st "$new" .election.term)
	echo "$status_out" | grep -q "replica $new, leader; leader $new at $host:${ports[${new#w}]}, term $term2" &&
		ok "status --socket tls://dead,tls://alive answers: $(echo "$status_out" | sed -n 2p)" ||
		not_ok "status through a dead endpoint: $(echo "$status_out" | head -3)"
	expect 2 "status with an empty element in the list" "$CONTROL" status \
		--socket "tls://$host:7319,,tls://$host:7311"
	grep -q "control endpoint 2 of the list is empty" "$tmp/err" && ok "... naming it" ||
		not_ok "empty element: $(cat "$tmp/err")"
	stop_etcd
}
if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
	echo "# the part on the emulated WAN needs root and network namespaces; skipped"
else
	wan_part
fi

[ "$fails" -eq 0 ] || { tail -n 30 "$tmp"/r?.log "$tmp"/w?.log 2>/dev/null; }
echo "1..$n"
[ "$fails" -eq 0 ]
