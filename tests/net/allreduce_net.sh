#!/bin/bash
# SPDX-License-Identifier: MIT
#
# allreduce_net.sh - gradnet jobs on a real network: three gradnet-rank
# processes, one per network namespace on a bridge (lib.sh), and a fourth
# host for an attacker.
#
#  loss   a clean run gives, on every rank, exactly the single-process
#         reference that gn-ref computes with the codec (tests/job.h), so a
#         deterministic bug cannot pass by agreeing with itself; runs with
#         1% and 10% loss (gn-loss on every host's egress, gradnet's port
#         only) and with duplication, reordering and loss in the sender
#         (GN_TEST_FAULTS) give the clean run's results bit for bit; so
#         does a dense (--codec none) run with 1% loss. Loss is proved by
#         gn-loss's own drop count (the ranks retransmit in clean runs too).
#         tc sees a UDP GSO send as one packet, so gn-loss drops whole
#         batches: the datagram loss is burstier, and for dense tensors
#         larger, than the rate says.
#  kill   SIGKILL rank 1 in the middle of a long run: ranks 0 and 2 fail
#         with -ETIMEDOUT naming rank 1, no sooner than half the timeout
#         (how much later is printed, not asserted: a loaded host delays
#         it); nothing hangs.
#  forge  gn-forge on the fourth host sends forged packets to rank 0 of a
#         live job, posing as rank 1: the results equal a clean run's, and
#         rank 0's drop counters rise by exactly the packets forged of each
#         kind. The job's own drops are 'tensor', 'duplicate' and 'replay'
#         only (the clean run shows the forged kinds at 0), so 'replay' is
#         bounded, not exact: see check_forge_replay.
#         Then a job under two attacks at once: a process on rank 0's own
#         host floods it with UDP GSO super-datagrams of 128 segments
#         (unauthenticated), and an insider holding the key sends DATA
#         with npkts 0xffffffff and 2^31 as rank 1, for every step in
#         turn. Every rank still ends with the clean run's results; each
#         segment is a 'source' drop, each npkts packet that met an open
#         step a 'malformed' one.
#
# usage: allreduce_net.sh GRADNET_RANK GN_FORGE [GN_LOSS]
# Without GN_LOSS (no clang, bpftool or libbpf) the gn-loss cases skip.
# Env: GN_NET_TESTS, a subset of "loss kill forge" (default all); GN_REF,
# the gn-ref binary (tests/net/gn-ref.c): without it the clean cases fail.
# Exit: 0 pass, 1 fail, 4 skip (not root, no netns, tools not built);
# GN_SKIP_RC overrides the skip code (meson wants 77).

set -eu

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/net/lib.sh
. "$here/lib.sh"

GN_RANK_BIN=${1:-}
GN_FORGE=${2:-}
GN_LOSS=${3:-}
GN_REF=${GN_REF:-}
TESTS=${GN_NET_TESTS:-loss kill forge}
WORLD=3
PORT=7000
ELEMS=1048576		# floats per tensor: 4 MiB, a mid-sized layer
LOSS_STEPS=8		# over 100 packets from each rank: spread 1% drops some
KILL_TIMEOUT_MS=2000
FORGE_STEPS=200
FORGE_COUNT=60		# forged packets of each kind
BOUNDS_SECS=15		# the attacked job's length: the attacks take ~3 s from
			# ~1 s in; its steps come from forge-clean's pace
GSO_COUNT=1000		# GSO super-datagrams of 128 segments
NPKTS_COUNT=20000	# DATA packets with a huge npkts
RUN_LIMIT=60		# seconds before a job counts as hung (a clean one takes ~2)
BOUNDS_LIMIT=120	# RUN_LIMIT for the BOUNDS_SECS jobs
forge_clean_secs=	# forge-clean's length, set by test_forge
tmp=
failed=0
testno=0
have_loss=0
pids=()

if [ -z "$GN_RANK_BIN" ] || [ ! -x "$GN_RANK_BIN" ]; then
	gn_skip "gradnet-rank not built"
fi
if [ -z "$GN_FORGE" ] || [ ! -x "$GN_FORGE" ]; then
	gn_skip "gn-forge not built"
fi
gn_require_net

tmp=$(mktemp -d)
gn_on_cleanup 'stop_ranks'
gn_on_cleanup "rm -rf '$tmp'"
gn_net_setup $((WORLD + 1))

KEY=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
JOB=$((RANDOM * 32768 + RANDOM + 1))
PEERS=
for ((k = 0; k < WORLD; k++)); do
	PEERS="$PEERS${PEERS:+,}$(gn_host_addr "$k"):$PORT"
done

# Loading a BPF program is the last capability to probe.
if [ -n "$GN_LOSS" ] && [ -x "$GN_LOSS" ]; then
	if gn_host_exec 0 "$GN_LOSS" attach --dev eth0 --ppm 0 \
			--ports "$PORT" >/dev/null 2>"$tmp/err"; then
		gn_host_exec 0 "$GN_LOSS" detach --dev eth0 >/dev/null
		have_loss=1
	else
		cat "$tmp/err" >&2
	fi
fi

selected() {
	case " $TESTS " in
	*" $1 "*) return 0 ;;
	*) return 1 ;;
	esac
}

plan=0
selected loss && plan=$((plan + 7))
selected kill && plan=$((plan + 3))
selected forge && plan=$((plan + 11))
echo "TAP version 13"
echo "1..$plan"

# skip NAME REASON: a TAP line for a case that cannot run here.
skip() {
	testno=$((testno + 1))
	echo "ok $testno - $1 # SKIP $2"
}

now() {
	date +%s.%N
}

# elapsed T0 [T1]: seconds from T0 to T1 (or now), three decimals.
elapsed() {
	awk -v a="$1" -v b="${2:-$(now)}" 'BEGIN { printf "%.3f", b - a }'
}

# stop_ranks: SIGKILL the ranks this script started and still runs.
stop_ranks() {
	local pid

	for pid in "${pids[@]}"; do
		if gn_alive "$pid"; then
			kill -9 "$pid" 2>/dev/null || true
		fi
		{ wait "$pid"; } 2>/dev/null || true
	done
	pids=()
}

# start_rank NAME K TIMEOUT_MS FAULTS ARGS...: rank K in host K, in the
# background, pid in pids[K]; JSON to $tmp/NAME.K.json. `ip netns exec`
# and env exec, so the pid is gradnet-rank's own.
start_rank() {
	local name=$1 k=$2 to=$3 faults=$4

	shift 4
	# Rank 0 tells gn-forge what its session key binds, as a rank would.
	local session=
	if [ "$k" -eq 0 ]; then
		session=$tmp/$name.session
		rm -f "$session"
	fi
	ip netns exec "$(gn_host_ns "$k")" env GN_RANK="$k" \
		GN_WORLD_SIZE="$WORLD" GN_PEERS="$PEERS" GN_KEY="$KEY" \
		GN_JOB="$JOB" GN_TIMEOUT_MS="$to" ${faults:+GN_TEST_FAULTS=$faults} \
		${session:+GN_TEST_SESSION_FILE=$session} \
		"$GN_RANK_BIN" --warmup 0 --out "$tmp/$name.$k.out" "$@" \
		>"$tmp/$name.$k.json" 2>"$tmp/$name.$k.err" &
	pids[k]=$!
}

# run_job NAME TIMEOUT_MS FAULTS ARGS...: the whole job, start to end.
run_job() {
	local name=$1 to=$2 faults=$3 k f

	shift 3
	for ((k = 0; k < WORLD; k++)); do
		f=
		[ -z "$faults" ] || f="$faults,seed=$((k + 1))"
		start_rank "$name" "$k" "$to" "$f" "$@"
	done
	gn_wait_ranks "$name"
}

# field NAME FILE: the numeric field NAME of a JSON line.
field() {
	sed -n "s/.*\"$1\": *\([0-9]*\).*/\1/p" "$2"
}

# fieldf NAME FILE: the decimal field NAME of a JSON line.
fieldf() {
	sed -n "s/.*\"$1\": *\([0-9.]*\).*/\1/p" "$2"
}

# drops REASON FILE: a rank's receive drops for REASON.
drops() {
	sed -n "s/.*\"drops\": {[^}]*\"$1\": \([0-9]*\).*/\1/p" "$2"
}

# sum_field NAME RUN: NAME summed over the ranks of RUN.
sum_field() {
	local k s=0 v

	for ((k = 0; k < WORLD; k++)); do
		v=$(field "$1" "$tmp/$2.$k.json")
		s=$((s + ${v:-0}))
	done
	echo "$s"
}

# sum_drops REASON RUN: drops for REASON summed over the ranks of RUN.
sum_drops() {
	local k s=0 v

	for ((k = 0; k < WORLD; k++)); do
		v=$(drops "$1" "$tmp/$2.$k.json")
		s=$((s + ${v:-0}))
	done
	echo "$s"
}

# same_out RUN REF: every rank of RUN wrote exactly REF's rank-0 result.
same_out() {
	local k ok=0

	for ((k = 0; k < WORLD; k++)); do
		cmp -s "$tmp/$2.0.out" "$tmp/$1.$k.out" || return 1
		ok=1
	done
	[ "$ok" -eq 1 ]
}

# loss_attach LOSS / loss_detach: gn-loss on every rank's egress, gradnet's
# port only; LOSS is gn-loss's rate options ("--ppm N [--spread]").
loss_attach() {
	local k

	for ((k = 0; k < WORLD; k++)); do
		# shellcheck disable=SC2086 # LOSS is options, split on purpose
		gn_host_exec "$k" "$GN_LOSS" attach --dev eth0 --egress \
			$1 --ports "$PORT" >/dev/null
	done
}

# loss_detach: print the datagrams (GSO segments) and packets dropped on
# all hosts, then detach.
loss_detach() {
	local k segs=0 skbs=0 st v

	for ((k = 0; k < WORLD; k++)); do
		st=$(gn_host_exec "$k" "$GN_LOSS" stats --dev eth0 --egress)
		v=$(sed -n 's/.*"dropped_segs":\([0-9]*\).*/\1/p' <<<"$st")
		segs=$((segs + ${v:-0}))
		v=$(sed -n 's/.*"dropped":\([0-9]*\).*/\1/p' <<<"$st")
		skbs=$((skbs + ${v:-0}))
		gn_host_exec "$k" "$GN_LOSS" detach --dev eth0 >/dev/null
	done
	echo "$segs $skbs"
}

# ---- loss -----------------------------------------------------------------

# lossy_case NAME REF LOSS CODEC [NEED_RTX]: a run under gn-loss (LOSS as
# for loss_attach), checked against REF.
lossy_case() {
	local name=$1 ref=$2 loss=$3 codec=$4 need_rtx=${5:-1} ok=1 dropped skbs rtx

	if [ "$have_loss" -ne 1 ]; then
		skip "$name" "gn-loss not built or no tc BPF"
		return
	fi
	loss_attach "$loss"
	run_job "$name" 10000 "" --elems "$ELEMS" --steps "$LOSS_STEPS" \
		--codec "$codec" || ok=0
	read -r dropped skbs <<<"$(loss_detach)"
	rtx=$(sum_field retransmits "$name")
	gn_diag "$name: gn-loss dropped $dropped datagrams ($skbs packets, GSO" \
		"counts as one), ranks retransmitted $rtx packets, median step" \
		"$(fieldf median_s "$tmp/$name.0.json")s"
	[ "$ok" -eq 1 ] && same_out "$name" "$ref" || ok=0
	# At 1% a small 3LC job may lose only packets that need no repair (a
	# ping, or an ACK that the next ACK of its message covers): there the
	# loss must be seen, and the 10% case shows the retransmissions. The
	# 1% cases spread their drops, one in each 100 packets: with
	# independent draws a 3LC job of some 500 packets drew none in about
	# one run of 150, and tested nothing.
	[ "$dropped" -gt 0 ] && [ "$rtx" -ge "$need_rtx" ] || ok=0
	gn_result "$ok" "$name: results bit-identical to the clean run, loss seen and repaired"
}

# clean_case NAME CODEC: the reference run of CODEC: every rank's result
# equals gn-ref's single-process reference of the same job.
clean_case() {
	local name=$1 codec=$2 ok=1

	run_job "$name" 10000 "" --elems "$ELEMS" --steps "$LOSS_STEPS" \
		--codec "$codec" || ok=0
	gn_diag "$name: retransmits $(sum_field retransmits "$name")," \
		"drops tensor $(sum_drops tensor "$name") duplicate" \
		"$(sum_drops duplicate "$name") replay $(sum_drops replay "$name")"
	if [ -z "$GN_REF" ] || [ ! -x "$GN_REF" ]; then
		gn_diag "$name: no gn-ref (GN_REF=$GN_REF) to compute the reference"
		ok=0
	elif ! "$GN_REF" --world "$WORLD" --elems "$ELEMS" \
			--steps "$LOSS_STEPS" --codec "$codec" \
			--out "$tmp/$name-ref.0.out" >&2; then
		ok=0
	fi
	[ "$ok" -eq 1 ] && same_out "$name" "$name-ref" || ok=0
	gn_result "$ok" "$name: $WORLD ranks, $ELEMS floats, $LOSS_STEPS steps: every rank's result equals the single-process reference"
}

test_loss() {
	local ok=1 dups rtx name=3lc-faults

	clean_case 3lc-clean 3lc
	lossy_case 3lc-loss1 3lc-clean "--ppm 10000 --spread" 3lc 0
	lossy_case 3lc-loss10 3lc-clean "--ppm 100000" 3lc

	# Duplication and reordering (and some loss) in the senders.
	run_job "$name" 10000 "loss=0.02,dup=0.05,reorder=0.1" \
		--elems "$ELEMS" --steps "$LOSS_STEPS" || ok=0
	dups=$(( $(sum_drops duplicate "$name") + $(sum_drops replay "$name") ))
	rtx=$(sum_field retransmits "$name")
	gn_diag "$name: duplicate+replay drops $dups, retransmits $rtx"
	[ "$ok" -eq 1 ] && same_out "$name" 3lc-clean || ok=0
	[ "$dups" -gt 0 ] && [ "$rtx" -gt 0 ] || ok=0
	gn_result "$ok" "$name: duplicated, reordered, lost packets: results bit-identical to the clean run"

	clean_case none-clean none
	lossy_case none-loss1 none-clean "--ppm 10000 --spread" none
	# Dense and 3LC results differ: the codecs really ran.
	ok=0
	cmp -s "$tmp/3lc-clean.0.out" "$tmp/none-clean.0.out" || ok=1
	gn_result "$ok" "3LC and dense results differ (both codecs ran)"
}

# ---- kill -----------------------------------------------------------------

# kill_and_watch NAME TIMEOUT_MS: SIGKILL rank 1, then note when the
# survivors print their error (t_line[]) and exit (t_exit[]), in seconds
# after the kill; give up 20 s after the timeout.
kill_and_watch() {
	local name=$1 to=$2 tk k st

	kill -9 "${pids[1]}" 2>/dev/null || true
	tk=$(now)
	# Poll the survivors: when their error line appears, when they exit.
	while :; do
		st=0
		for k in 0 2; do
			# Exit first: a rank that is gone has flushed its line.
			if [ -z "${t_exit[k]:-}" ] && ! gn_alive "${pids[k]}"; then
				t_exit[k]=$(elapsed "$tk")
			fi
			if [ -z "${t_line[k]:-}" ] &&
			   grep -q '"error"' "$tmp/$name.$k.json"; then
				t_line[k]=${t_exit[k]:-$(elapsed "$tk")}
			fi
			[ -n "${t_exit[k]:-}" ] || st=1
		done
		[ "$st" -eq 1 ] || break
		if [ "$(elapsed "$tk" | cut -d. -f1)" -ge $((to / 1000 + 20)) ]; then
			gn_diag "$name: survivors still running $((to / 1000 + 20))s after the kill"
			break
		fi
		sleep 0.02
	done
	wait "${pids[1]}" || true
}

test_kill() {
	local name=kill to=$KILL_TIMEOUT_MS t0 k ok bytes0 bytes going=1
	local -a t_line t_exit

	for ((k = 0; k < WORLD; k++)); do
		start_rank "$name" "$k" "$to" "" --elems "$ELEMS" --steps 100000
	done
	# Rank 1 is in the job's steady state once it has sent ~1 MB.
	bytes0=$(gn_link_bytes 1 | cut -d' ' -f2)
	t0=$(now)
	while :; do
		bytes=$(gn_link_bytes 1 | cut -d' ' -f2)
		[ $((bytes - bytes0)) -lt 1000000 ] || break
		if ! gn_alive "${pids[1]}" ||
		   [ "$(elapsed "$t0" | cut -d. -f1)" -ge 60 ]; then
			gn_diag "$name: rank 1 never got going: $(cat "$tmp/$name.1.err")"
			going=0
			break
		fi
		sleep 0.05
	done
	gn_diag "$name: SIGKILL to rank 1 after it sent $((bytes - bytes0)) bytes"
	# The shell's "Killed" notice for rank 1 is no news.
	kill_and_watch "$name" "$to" 2>/dev/null
	ok=1
	for k in 0 2; do
		rcs[k]=0
		if gn_alive "${pids[k]}"; then
			kill -9 "${pids[k]}"
			ok=0
		fi
		wait "${pids[k]}" || rcs[k]=$?
		gn_diag "$name: rank $k: exit ${rcs[k]}, error line after" \
			"${t_line[k]:-never}s, exit after ${t_exit[k]:-never}s:" \
			"$(cat "$tmp/$name.$k.json")"
		[ "${rcs[k]}" -eq 3 ] || ok=0
		grep -q '"error": "a peer went silent".*rank 1 (' \
			"$tmp/$name.$k.json" || ok=0
	done
	pids=()
	[ "$going" -eq 1 ] || ok=0
	gn_result "$ok" "$name: ranks 0 and 2 fail with -ETIMEDOUT naming rank 1"

	# Detection is the liveness timeout: rank 1 spoke within the last
	# quarter timeout (probes), so no survivor may give up on it sooner
	# than half the timeout. How much later is printed, not asserted: the
	# progress thread looks every 20 ms, but a loaded host delays it.
	ok=1
	for k in 0 2; do
		awk -v t="${t_line[k]:-0}" -v to="$to" \
			'BEGIN { exit !(t >= to / 2000) }' || ok=0
	done
	gn_diag "$name: error lines ${t_line[0]:-never}s and ${t_line[2]:-never}s," \
		"exits ${t_exit[0]:-never}s and ${t_exit[2]:-never}s after the kill" \
		"(GN_TIMEOUT_MS=$to; closing waits at most 2 s for peers)"
	gn_result "$ok" "$name: no survivor gave up on rank 1 sooner than $((to / 2)) ms"

	# A survivor still running 20 s after the timeout counts as hung.
	ok=1
	for k in 0 2; do
		[ -n "${t_exit[k]:-}" ] || ok=0
	done
	for ((k = 0; k < WORLD; k++)); do
		[ -z "$(ip netns pids "$(gn_host_ns "$k")")" ] || ok=0
	done
	gn_result "$ok" "$name: survivors exit on their own, nothing left running"
}

# ---- forge ----------------------------------------------------------------

# check_forge_replay SENT GOT RTX: forged replays are each counted; the
# job's own replay drops can only come from packets its ranks sent more
# than once (a first copy of a packet of a step that is over cannot exist:
# a step ends only when every packet of it has arrived), so at most RTX.
check_forge_replay() {
	[ "$2" -ge "$1" ] && [ "$2" -le $(($1 + $3)) ]
}

test_forge() {
	local ok k r sent got base bytes0 bytes total t0 rtx r1 r2 seed
	local -a reasons=(source mac job malformed version)

	bytes0=$(gn_link_bytes 0 | cut -d' ' -f2)
	t0=$(now)
	run_job forge-clean 10000 "" --elems "$ELEMS" --steps "$FORGE_STEPS" ||
		gn_diag "forge-clean failed"
	bytes=$(gn_link_bytes 0 | cut -d' ' -f2)
	total=$((bytes - bytes0))
	forge_clean_secs=$(elapsed "$t0")
	gn_diag "forge-clean: ${forge_clean_secs}s, rank 0 sent $total bytes, its" \
		"$(sed 's/.*"drops": \(.*\)}$/drops \1/' "$tmp/forge-clean.0.json")"

	bytes0=$bytes
	for ((k = 0; k < WORLD; k++)); do
		start_rank forge "$k" 10000 "" --elems "$ELEMS" --steps "$FORGE_STEPS"
	done
	# Step 1 is long over once rank 0 has sent a quarter of a whole run.
	t0=$(now)
	while :; do
		bytes=$(gn_link_bytes 0 | cut -d' ' -f2)
		[ $((bytes - bytes0)) -lt $((${total:-0} / 4)) ] || break
		if ! gn_alive "${pids[0]}" ||
		   [ "$(elapsed "$t0" | cut -d. -f1)" -ge 60 ]; then
			break
		fi
		sleep 0.01
	done
	seed=$RANDOM
	gn_host_exec "$WORLD" "$GN_FORGE" --to "$(gn_host_addr 0):$PORT" \
		--to-rank 0 --as "$(gn_host_addr 1):$PORT" --as-rank 1 \
		--world "$WORLD" --job "$JOB" --key "$KEY" --elems "$ELEMS" \
		--step 1 --count "$FORGE_COUNT" --seed "$seed" \
		--session "$tmp/forge.session" \
		>"$tmp/forge.sent" 2>"$tmp/forge.err" || cat "$tmp/forge.err" >&2
	ok=1
	for ((k = 0; k < WORLD; k++)); do
		gn_alive "${pids[k]}" || ok=0
	done
	gn_diag "forge: gn-forge --seed $seed sent $(cat "$tmp/forge.sent") after rank 0 sent" \
		"$((bytes - bytes0)) of ~$total bytes"
	[ "$ok" -eq 1 ] || gn_diag "forge: the job ended before the forger did"
	gn_wait_ranks forge || ok=0
	gn_result "$ok" "forge: every forged packet reached a live job"

	ok=1
	same_out forge forge-clean && same_out forge-clean forge-clean || ok=0
	gn_result "$ok" "forge: results bit-identical to the clean run on every rank"

	for r in "${reasons[@]}"; do
		sent=$(field "$r" "$tmp/forge.sent")
		got=$(drops "$r" "$tmp/forge.0.json")
		base=$(drops "$r" "$tmp/forge-clean.0.json")
		gn_diag "forge: $r: forged ${sent:-?}, rank 0 counted ${got:-?}" \
			"(clean run: ${base:-?})"
		ok=0
		[ "${sent:-0}" -eq "$FORGE_COUNT" ] && [ "${base:-1}" -eq 0 ] &&
			[ "${got:--1}" -eq "$sent" ] && ok=1
		gn_result "$ok" "forge: '$r' drops rise by exactly the $FORGE_COUNT forged"
	done

	sent=$(field replay "$tmp/forge.sent")
	got=$(drops replay "$tmp/forge.0.json")
	base=$(drops replay "$tmp/forge-clean.0.json")
	r1=$(field retransmits "$tmp/forge.1.json")
	r2=$(field retransmits "$tmp/forge.2.json")
	rtx=$((${r1:-0} + ${r2:-0}))
	gn_diag "forge: replay: forged ${sent:-?}, rank 0 counted ${got:-?}" \
		"(clean run: ${base:-?}; ranks 1 and 2 retransmitted $rtx)"
	ok=0
	[ "${sent:-0}" -eq "$FORGE_COUNT" ] &&
		check_forge_replay "$sent" "${got:--1}" "$rtx" && ok=1
	gn_result "$ok" "forge: 'replay' drops rise by the $FORGE_COUNT forged, plus at most the job's retransmits"
}

# ---- forge: receive-path bounds ---------------------------------------------

test_forge_bounds() {
	local ok=1 k bytes0 bytes t0 ta gso_pid segs got sent mal rep bounds_steps

	# As many steps as take BOUNDS_SECS at forge-clean's pace.
	bounds_steps=$(awk -v n="$FORGE_STEPS" -v t="${forge_clean_secs:-1}" \
		-v s="$BOUNDS_SECS" 'BEGIN { k = int(n * s / (t > 0 ? t : 1));
			print (k > n ? k : n) }')
	t0=$(now)
	for ((k = 0; k < WORLD; k++)); do
		start_rank bounds-clean "$k" 10000 "" --elems "$ELEMS" \
			--steps "$bounds_steps"
	done
	gn_wait_ranks bounds-clean "$BOUNDS_LIMIT" || gn_diag "bounds-clean failed"
	gn_diag "bounds-clean: $bounds_steps steps in $(elapsed "$t0")s"
	bytes0=$(gn_link_bytes 0 | cut -d' ' -f2)
	for ((k = 0; k < WORLD; k++)); do
		start_rank bounds "$k" 10000 "" --elems "$ELEMS" --steps "$bounds_steps"
	done
	# Attack once the job is in its steady state.
	t0=$(now)
	while :; do
		bytes=$(gn_link_bytes 0 | cut -d' ' -f2)
		[ $((bytes - bytes0)) -lt 1000000 ] || break
		if ! gn_alive "${pids[0]}" ||
		   [ "$(elapsed "$t0" | cut -d. -f1)" -ge 60 ]; then
			break
		fi
		sleep 0.01
	done
	gn_host_exec 0 "$GN_FORGE" --to "$(gn_host_addr 0):$PORT" \
		--to-rank 0 --as "$(gn_host_addr 1):$PORT" --as-rank 1 \
		--world "$WORLD" --job "$JOB" --key "$KEY" --elems "$ELEMS" \
		--kinds gso --count "$GSO_COUNT" --gap-us 200 \
		>"$tmp/bounds.gso" 2>"$tmp/bounds.gso.err" &
	gso_pid=$!
	ta=$(now)
	gn_host_exec "$WORLD" "$GN_FORGE" --to "$(gn_host_addr 0):$PORT" \
		--to-rank 0 --as "$(gn_host_addr 1):$PORT" --as-rank 1 \
		--world "$WORLD" --job "$JOB" --key "$KEY" --elems "$ELEMS" \
		--kinds npkts --step 1 --steps "$bounds_steps" \
		--session "$tmp/bounds.session" \
		--count "$NPKTS_COUNT" --gap-us 0 \
		>"$tmp/bounds.npkts" 2>"$tmp/bounds.npkts.err" ||
		cat "$tmp/bounds.npkts.err" >&2
	wait "$gso_pid" || cat "$tmp/bounds.gso.err" >&2
	for ((k = 0; k < WORLD; k++)); do
		gn_alive "${pids[k]}" || ok=0
	done
	gn_diag "forge-bounds: the attacks took $(elapsed "$ta")s, from $(elapsed "$t0" "$ta")s into the job"
	[ "$ok" -eq 1 ] || gn_diag "forge-bounds: the job ended before the attackers did"
	gn_wait_ranks bounds "$BOUNDS_LIMIT" || ok=0
	same_out bounds bounds-clean && same_out bounds-clean bounds-clean || ok=0
	gn_diag "forge-bounds: rank 0's $(sed 's/.*"drops": \(.*\)}$/drops \1/' \
		"$tmp/bounds.0.json")"
	gn_result "$ok" "forge-bounds: GSO flood and huge npkts: every rank finished with the clean run's results"

	segs=$(field gso_segs "$tmp/bounds.gso")
	sent=$(field gso "$tmp/bounds.gso")
	got=$(drops source "$tmp/bounds.0.json")
	gn_diag "forge-bounds: gso: $sent super-datagrams of $((${segs:-0} / ${sent:-1}))" \
		"segments sent, rank 0 counted ${got:-?} 'source' drops"
	ok=0
	[ "${sent:-0}" -eq "$GSO_COUNT" ] && [ "${got:-0}" -gt 0 ] &&
		[ "$got" -le "$segs" ] && ok=1
	gn_result "$ok" "forge-bounds: GSO segments reached rank 0 and were dropped as 'source'"

	sent=$(field npkts "$tmp/bounds.npkts")
	mal=$(drops malformed "$tmp/bounds.0.json")
	rep=$(drops replay "$tmp/bounds.0.json")
	gn_diag "forge-bounds: npkts: $sent sent, rank 0 counted ${mal:-?} 'malformed'" \
		"and ${rep:-?} 'replay' drops"
	ok=0
	[ "${sent:-0}" -eq "$NPKTS_COUNT" ] && [ "${mal:-0}" -gt 0 ] &&
		[ "$mal" -le "$sent" ] && ok=1
	gn_result "$ok" "forge-bounds: huge npkts in open steps were dropped as 'malformed'"
}

selected loss && test_loss
selected kill && test_kill
selected forge && test_forge
selected forge && test_forge_bounds

echo "# $((testno - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
