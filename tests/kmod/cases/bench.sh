#!/bin/bash
# SPDX-License-Identifier: MIT
# bench.sh - the kmod path against the UDP path in this guest: two ranks
# (two namespaces on a bridge) of gradnet-rank, 3LC, real gradients, for
# 1 M and 25 M floats, the UDP job then the kmod job for each size, in
# KT_BENCH_ROUNDS rounds (3); the slowest rank's median seconds per
# allreduce. Under TCG only the ratio means anything. Prints "# " lines;
# asserts only that every job ran.
# shellcheck source=tests/kmod/guest_lib.sh
. /gn/lib.sh

gn_net_setup 2
peers=$(kt_peers 2)

# bench_job TRANSPORT ELEMS STEPS: the slowest rank's median, or "fail".
bench_job() {
	local k pids=() worst=0 m

	kt_job=$((kt_job + 1))
	for k in 0 1; do
		gn_host_exec "$k" env GN_TRANSPORT="$1" GN_RANK="$k" GN_WORLD_SIZE=2 \
			GN_PEERS="$peers" GN_KEY="$KT_KEY" GN_JOB="$kt_job" \
			GN_TIMEOUT_MS=60000 /gn/bin/gradnet-rank --elems "$2" \
			--steps "$3" --warmup 1 --codec 3lc --data /gn/data \
			>"/tmp/b.$k" 2>&1 &
		pids+=("$!")
	done
	for k in 0 1; do
		kt_wait "${pids[$k]}" 1200 || { echo fail; kt_show /tmp/b.0 /tmp/b.1 >&2; return 1; }
		m=$(sed -n 's/.*"median_s": \([0-9.]*\).*/\1/p' "/tmp/b.$k")
		[ -n "$m" ] || { echo fail; return 1; }
		worst=$(awk -v a="$worst" -v b="$m" 'BEGIN { print (b > a) ? b : a }')
	done
	echo "$worst"
}

echo "# guest: $(nproc) vCPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), TCG"
echo "# round  floats  steps  udp s/allreduce  kmod s/allreduce  kmod/udp"
for round in $(seq "${KT_BENCH_ROUNDS:-3}"); do
	for size in 1048576:8 26214400:4; do
		n=${size%:*}
		steps=${size#*:}
		udp=$(bench_job udp "$n" "$steps")
		ok $? "round $round: UDP path, $n floats, $steps steps: $udp s"
		kmod=$(bench_job kmod "$n" "$steps")
		ok $? "round $round: kmod path, $n floats, $steps steps: $kmod s"
		ratio=$(awk -v k="$kmod" -v u="$udp" 'BEGIN { if (u > 0 && k > 0) printf "%.2f", k / u; else print "-" }')
		echo "# $round  $n  $steps  $udp  $kmod  $ratio"
	done
done
