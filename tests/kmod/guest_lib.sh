# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# guest_lib.sh - sourced by the cases in tests/kmod/cases/, inside the
# guest (as /gn/lib.sh): tests/net/lib.sh's namespaces on a bridge, and
# jobs of /gn/bin/kmod_job ranks, one per namespace, on the kmod or the
# UDP path, checked against the references guest.sh computed on the host.
#
# Cases print TAP lines without numbers ("ok - what", "not ok - what");
# guest.sh numbers them.

GN_NS_PREFIX=kmod-tests-$$
# KT_* settings guest.sh took from the host's environment.
if [ -r /gn/env ]; then
	# shellcheck disable=SC1091 # written by guest.sh
	. /gn/env
fi
# shellcheck source=tests/net/lib.sh
. /gn/net/lib.sh

KT_KEY=000102030405060708090a0b0c0d0e0f
KT_PORT=7300
kt_job=$((0x6b6d0000 + $$))

# ok COND_STATUS WHAT: one TAP line (0 is ok).
ok() {
	if [ "$1" -eq 0 ]; then
		echo "ok - $2"
	else
		echo "not ok - $2"
	fi
}

# kt_ref NAME: sets $ref_world, $ref_steps, $ref_spec and $ref_job (the
# job id it was computed for, or empty) from the reference.
kt_ref() {
	read -r ref_world ref_steps ref_spec ref_job <"/gn/ref/$1.args"
}

# kt_peers W: every rank's address, host k at 10.77.0.(k+1).
kt_peers() {
	local k p=

	for ((k = 0; k < $1; k++)); do
		p+="${p:+,}$(gn_host_addr "$k"):$KT_PORT"
	done
	echo "$p"
}

# kt_rank K TRANSPORT OUT [ARGS...]: rank K of the reference's job in host
# K's namespace, in the background; its PID is $! (ip execs env, env execs
# kmod_job: one process).
kt_rank() {
	local k=$1 transport=$2 out=$3

	shift 3
	# ip itself, not gn_host_exec: a function would run in a subshell,
	# and $! would be that shell's PID, not the rank's.
	ip netns exec "$(gn_host_ns "$k")" env GN_TRANSPORT="$transport" GN_RANK="$k" \
		GN_WORLD_SIZE="$ref_world" GN_PEERS="$(kt_peers "$ref_world")" \
		GN_KEY="$KT_KEY" GN_JOB="${ref_job:-$kt_job}" GN_TIMEOUT_MS="${KT_TIMEOUT_MS:-10000}" \
		/gn/bin/kmod_job rank --tensors "$ref_spec" --steps "$ref_steps" "$@" \
		>"$out" 2>&1 &
}

# kt_job NAME PREFIX TRANSPORT...: run the reference NAME's job, rank k on
# the k-th TRANSPORT (kmod or udp), outputs PREFIX.k; returns the number
# of ranks that failed.
kt_job() {
	local name=$1 prefix=$2 k pids=() transports

	shift 2
	transports=("$@")
	kt_ref "$name"
	kt_job=$((kt_job + 1))
	for ((k = 0; k < ref_world; k++)); do
		kt_rank "$k" "${transports[$k]}" "$prefix.$k"
		pids+=("$!")
	done
	kt_wait_ranks "${pids[@]}"
}

# kt_wait_ranks PID...: sample the module's files while the ranks run, then
# wait for each (KT_LIMIT seconds at most); returns how many failed.
kt_wait_ranks() {
	local p bad=0

	kt_sample "$@"
	for p in "$@"; do
		kt_wait "$p" "${KT_LIMIT:-300}" || bad=$((bad + 1))
	done
	return "$bad"
}

# kt_refcnt: gradnet's module reference count (its open files).
kt_refcnt() {
	cat /sys/module/gradnet/refcnt 2>/dev/null || echo -1
}

# kt_sample PID...: until they have all exited, the most files gradnet
# held open at once, in $kt_maxref (every 50 ms).
kt_sample() {
	local p alive n

	kt_maxref=0
	while :; do
		alive=0
		for p in "$@"; do
			kill -0 "$p" 2>/dev/null && alive=1
		done
		n=$(kt_refcnt)
		[ "$n" -gt "$kt_maxref" ] && kt_maxref=$n
		[ "$alive" -eq 1 ] || break
		sleep 0.05
	done
}

# kt_refcnt_zero: wait up to 10 s for gradnet's reference count to be 0.
kt_refcnt_zero() {
	local i

	for ((i = 0; i < 100; i++)); do
		[ "$(kt_refcnt)" -eq 0 ] && return 0
		sleep 0.1
	done
	echo "# gradnet's refcnt is still $(kt_refcnt)"
	return 1
}

# kt_wait PID SECONDS: wait for PID, killing it after SECONDS; its status,
# or 124 if it had to be killed.
kt_wait() {
	local i

	for ((i = 0; i < $2 * 10; i++)); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$1" 2>/dev/null; then
		kill -9 "$1"
		wait "$1"
		return 124
	fi
	wait "$1"
}

# kt_model_job NAME PREFIX TRANSPORT...: the model tensor job of the
# "model-ref" NAME, gn-model-rank as rank k on the k-th TRANSPORT, outputs
# PREFIX.k; returns the number of ranks that failed.
kt_model_job() {
	local name=$1 prefix=$2 k pids=() transports world job chunk args

	shift 2
	transports=("$@")
	read -r world job chunk args <"/gn/ref/$name.margs"
	for ((k = 0; k < world; k++)); do
		# shellcheck disable=SC2086 # ARGS are words
		ip netns exec "$(gn_host_ns "$k")" env GN_TRANSPORT="${transports[$k]}" \
			GN_RANK="$k" GN_WORLD_SIZE="$world" GN_PEERS="$(kt_peers "$world")" \
			GN_KEY="$KT_KEY" GN_JOB="$job" GN_CHUNK="$chunk" \
			GN_TIMEOUT_MS="${KT_TIMEOUT_MS:-10000}" \
			/gn/bin/gn-model-rank $args >"$prefix.$k" 2>&1 &
		pids+=("$!")
	done
	kt_wait_ranks "${pids[@]}"
}

# kt_model_same OUT NAME: OUT's step lines are the model's (a failed
# step's errno, not its message), all of them.
kt_model_same() {
	awk '$1 == "step" { if ($3 == 0) print $1, $2, $3, $4; else print $1, $2, $3 }' \
		"$1" >"$1.steps"
	[ -s "$1.steps" ] && cmp -s "$1.steps" "/gn/ref/$2.lines"
}

# kt_same_as_ref OUT NAME: OUT's hash lines are the reference's, all of them.
kt_same_as_ref() {
	grep '^hash ' "$1" | sort >"$1.sorted"
	cmp -s "$1.sorted" "/gn/ref/$2.hash"
}

# kt_check RC PREFIX NAME WHAT [SAME]: a three-rank job's outcome (RC:
# ranks that failed; their logs PREFIX.k shown if any) and each rank's
# results against reference NAME, compared by SAME (kt_same_as_ref, or
# kt_model_same for a model job's parameters after every step).
kt_check() {
	local k same=${5:-kt_same_as_ref}

	ok "$1" "$4: the job finished ($1 ranks failed)"
	[ "$1" -eq 0 ] || kt_show "$2.0" "$2.1" "$2.2"
	for k in 0 1 2; do
		"$same" "$2.$k" "$3"
		ok $? "$4: rank $k's results bit-identical to the reference"
	done
}

# kt_show FILE...: the files as comments, for a failing check.
kt_show() {
	local f

	for f in "$@"; do
		sed "s|^|# $f: |" "$f" | head -n 40
	done
}

# kt_params PATTERN: the gradnet module parameters whose name matches.
kt_params() {
	local p

	for p in /sys/module/gradnet/parameters/*; do
		# shellcheck disable=SC2254 # $1 is a glob on purpose
		case ${p##*/} in
		$1) echo "${p##*/}" ;;
		esac
	done
}
