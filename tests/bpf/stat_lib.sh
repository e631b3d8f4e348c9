# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# stat_lib.sh - sourced by the gradnet-stat tests on network namespaces,
# after tests/net/lib.sh: a job of gn-rank ranks, one per host, and the
# verdicts of check_stat.py as TAP lines numbered on from the script's.
# The caller's here, tmp, testno and failed are used; run_job also uses
# WORLD, PEERS, KEY, ELEMS, STEPS and fills pids.
# shellcheck disable=SC2154 # the caller's variables

# check ARGS...: check_stat.py ARGS..., its TAP lines numbered on from
# ours; a run that gave no verdict at all is one failure.
check() {
	TAP_FIRST=$((testno + 1)) python3 "$here/check_stat.py" "$@" \
		>"$tmp/tap" || true
	grep -q '^ok\|^not ok' "$tmp/tap" ||
		echo "not ok $((testno + 1)) - check_stat.py $1: no verdict" >"$tmp/tap"
	cat "$tmp/tap"
	testno=$((testno + $(grep -c '^\(not \)\?ok ' "$tmp/tap" || true)))
	failed=$((failed + $(grep -c '^not ok' "$tmp/tap" || true)))
}

# run_job NAME BIN JOB [FAULTS]: rank k of WORLD in host k, its output in
# $tmp/NAME.k.*; false if one fails.
run_job() {
	local name=$1 bin=$2 job=$3 faults=${4:-} k ok=1

	for ((k = 0; k < WORLD; k++)); do
		ip netns exec "$(gn_host_ns "$k")" env GN_RANK="$k" \
			${faults:+GN_TEST_FAULTS=$faults,seed=$((k + 1))} \
			GN_WORLD_SIZE="$WORLD" GN_PEERS="$PEERS" GN_KEY="$KEY" \
			GN_JOB="$job" GN_TIMEOUT_MS=10000 \
			GN_TEST_STATS_FILE="$tmp/$name.$k.stats" \
			"$bin" --warmup 0 --elems "$ELEMS" --steps "$STEPS" \
			>"$tmp/$name.$k.json" 2>"$tmp/$name.$k.err" &
		pids[k]=$!
	done
	for ((k = 0; k < WORLD; k++)); do
		if ! wait "${pids[k]}"; then
			gn_diag "$name: rank $k failed: $(cat "$tmp/$name.$k.json" "$tmp/$name.$k.err")"
			ok=0
		fi
	done
	[ "$ok" -eq 1 ]
}
