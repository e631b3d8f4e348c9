#!/bin/bash
# SPDX-License-Identifier: MIT
#
# gradnet-stat-bench.sh - what gradnet-stat costs: the allreduce job of
# `gradnet-bench allreduce` (gradnet-rank, 3LC, one rank per network
# namespace on a bridge, tests/net/lib.sh) run with gradnet-stat attached
# (USDT on every rank, tc on every host's eth0) and without, in one run,
# alternating rounds (off-on, then on-off) on the same topology so that
# drift in the machine's load falls on both alike. Each job's time is its
# slowest rank's median seconds per allreduce, as gradnet-bench reports.
#
# usage: gradnet-stat-bench.sh [--elems 26214400,1048576] [--rounds 5]
#                              [--ranks 2] [--steps K] [--mtu 1500]
#                              [--build DIR]
# Prints, per size, every round's pair, the medians, the median of the
# per-round ratios (attached / not attached), and how busy the machine
# was meanwhile (load average, share of CPU time not idle, steal); then
# the command line, so the figure can be measured again elsewhere.
# With kernel.bpf_stats_enabled on for the run (restored after), it also
# gives what the programs themselves took, a figure the machine's noise
# moves much less: nanoseconds per run, runs per allreduce and rank (and
# how many of them were probe hits, the rest tc's), and their share of
# the allreduce's time. The uprobe's trap into the kernel is not in it; a
# probe loop measures that first: a program compiled here fires a
# gradnet:tx probe (as lib/probes.c builds it) in a loop, with the probe
# attached and not, and the difference per hit, times the probe hits per
# allreduce, estimates the whole cost.

set -eu

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/net/lib.sh
. "$here/../tests/net/lib.sh"

build=$here/../build
elems_list=26214400,1048576
rounds=5
ranks=2
steps=
mtu=1500
cmdline="$0 $*"

while [ $# -gt 0 ]; do
	case $1 in
	--elems)	elems_list=$2; shift 2 ;;
	--rounds)	rounds=$2; shift 2 ;;
	--ranks)	ranks=$2; shift 2 ;;
	--steps)	steps=$2; shift 2 ;;
	--mtu)		mtu=$2; shift 2 ;;
	--build)	build=$2; shift 2 ;;
	*)	echo "gradnet-stat-bench.sh: unknown option $1" >&2; exit 2 ;;
	esac
done

rank_bin=$build/tools/gradnet-rank
stat_bin=$build/tools/gradnet-stat
for b in "$rank_bin" "$stat_bin"; do
	[ -x "$b" ] || { echo "gradnet-stat-bench.sh: no $b: build first" >&2; exit 1; }
done
gn_require_net
command -v bpftool >/dev/null || PATH=$PATH:/usr/sbin
command -v bpftool >/dev/null || { echo "gradnet-stat-bench.sh: bpftool missing" >&2; exit 1; }
stats_was=$(cat /proc/sys/kernel/bpf_stats_enabled)
echo 1 >/proc/sys/kernel/bpf_stats_enabled
gn_on_cleanup "echo $stats_was >/proc/sys/kernel/bpf_stats_enabled"
# Pins of its own: an operator's /sys/fs/bpf/gradnet stays untouched.
export GN_STAT_PIN_DIR=/sys/fs/bpf/gradnet-bench-$$
gn_on_cleanup "'$stat_bin' detach >/dev/null 2>&1 || true"
port=7300
job=$$
key=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')

# The probes are where libgradnet is: in gradnet-rank, or the .so it loads.
probed=$rank_bin
if ! readelf -n "$rank_bin" | grep -q stapsdt; then
	probed=$(ldd "$rank_bin" | sed -n 's/.*=> \(\/[^ ]*libgradnet[^ ]*\) .*/\1/p')
fi

# "busy idle steal" jiffies over all CPUs, from /proc/stat.
cpu_times() {
	awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $5 + $6, $9 }' /proc/stat
}

# One job: the slowest rank's median seconds per allreduce.
run_job() {
	local elems=$1 st=$2 wu=$3 job=$4 peers='' k out pids=()

	out=$(mktemp -d)
	for ((k = 0; k < ranks; k++)); do
		peers+="${peers:+,}$(gn_host_addr "$k"):$port"
	done
	for ((k = 0; k < ranks; k++)); do
		gn_host_exec "$k" env GN_KEY="$key" GN_RANK=$k \
			GN_WORLD_SIZE="$ranks" GN_PEERS="$peers" GN_JOB="$job" \
			GN_MTU="$mtu" GN_TIMEOUT_MS=30000 \
			"$rank_bin" --elems "$elems" --codec 3lc --steps "$st" \
			--warmup "$wu" >"$out/$k.json" &
		pids+=($!)
	done
	for k in "${pids[@]}"; do
		wait "$k" || { echo "a rank failed: $(cat "$out"/*.json)" >&2; exit 1; }
	done
	grep -ho '"median_s": [0-9.]*' "$out"/*.json |
		awk '{ if ($2 > m) m = $2 } END { print m + 0 }'
	rm -rf "$out"
}

attach() {
	local k

	"$stat_bin" attach --lib "$probed" >/dev/null
	for ((k = 0; k < ranks; k++)); do
		"$stat_bin" attach --dev eth0 --netns "$(gn_host_ns "$k")" >/dev/null
	done
}

# "run_time_ns run_cnt" of programs by id, summed.
prog_runtime() {
	local id

	for id in $(tr ' ' '\n' | sort -u); do
		bpftool prog show id "$id" -j
	done | awk '{ match($0, /"run_time_ns":[0-9]+/); t += substr($0, RSTART + 14, RLENGTH - 14)
		      match($0, /"run_cnt":[0-9]+/); c += substr($0, RSTART + 10, RLENGTH - 10) }
		    END { print t + 0, c + 0 }'
}

# "run_time_ns run_cnt usdt_run_cnt" of the programs the pinned links
# and the tc filters of gradnet-stat hold: all of them, then the runs of
# the uprobe programs alone (the probe hits, each a trap; tc runs take
# none).
bpf_runtime() {
	local k usdt tc=

	usdt=$(gn_stat_link_progs)
	for ((k = 0; k < ranks; k++)); do
		tc="$tc $(for d in ingress egress; do
			tc -n "$(gn_host_ns "$k")" filter show dev eth0 "$d"
		done | grep -o ' id [0-9]*' | grep -o '[0-9]*' | tr '\n' ' ')"
	done
	echo "$(echo "$usdt $tc" | prog_runtime) $(echo "$usdt" | prog_runtime | cut -d' ' -f2)"
}

# Detach, first checking that the attached job $1 was really counted.
detach() {
	local job=$1 k pkts

	pkts=$("$stat_bin" dump --json | grep -o "\"job\": $job, [^}]*" |
		grep -o '"tx_packets": [0-9]*' | awk '{ s += $2 } END { print s + 0 }')
	[ "$pkts" -gt 0 ] || { echo "gradnet-stat counted nothing of job $job" >&2; exit 1; }
	for ((k = 0; k < ranks; k++)); do
		"$stat_bin" detach --dev eth0 --netns "$(gn_host_ns "$k")" >/dev/null
	done
	"$stat_bin" detach >/dev/null
}

# timed on|off ELEMS STEPS WARMUP JOB: one job, gradnet-stat attached or
# not: "seconds" or, attached, "seconds run_time_ns run_cnt usdt_run_cnt".
timed() {
	local t

	if [ "$1" = on ]; then
		attach
		t=$(run_job "$2" "$3" "$4" "$5")
		echo "$t $(bpf_runtime)"
		detach "$5"
	else
		run_job "$2" "$3" "$4" "$5"
	fi
}

# The cost of one probe hit, trap and program: "ns_not_attached ns_attached".
probe_cost() {
	local dir hon=() hoff=() k

	dir=$(mktemp -d)
	cat >"$dir/loop.c" <<'LOOP'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/sdt.h>

int main(int argc, char **argv)
{
	volatile unsigned long v[9] = { 1, 0, 1, 7, 0, 1, 1400, 0, 1 };
	long i, n = argc > 1 ? atol(argv[1]) : 1000000;
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < n; i++) {
		unsigned long j = v[0], r = v[1], p = v[2], t = v[3];
		unsigned long ph = v[4], tp = v[5], w = v[6], ag = v[7];
		unsigned long c = v[8];

		STAP_PROBE9(gradnet, tx, j, r, p, t, ph, tp, w, ag, c);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.1f\n", ((double)(b.tv_sec - a.tv_sec) * 1e9 +
			  (double)(b.tv_nsec - a.tv_nsec)) / (double)n);
	return 0;
}
LOOP
	cc -O2 -DSTAP_SDT_ARG_CONSTRAINT=nr -o "$dir/loop" "$dir/loop.c" ||
		{ echo "gradnet-stat-bench.sh: cannot build the probe loop (systemtap-sdt-dev?)" >&2; exit 1; }
	for ((k = 0; k < 5; k++)); do
		hoff+=("$("$dir/loop" 2000000)")
		"$stat_bin" attach --lib "$dir/loop" >/dev/null
		hon+=("$("$dir/loop" 2000000)")
		"$stat_bin" detach >/dev/null
	done
	rm -rf "$dir"
	echo "$(printf '%s\n' "${hoff[@]}" | median) $(printf '%s\n' "${hon[@]}" | median)"
}

median() {
	sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, ISA flags:$(grep -m1 '^flags' /proc/cpuinfo | grep -o ' avx2\| avx512f' | tr -d '\n'), kernel $(uname -r)"
read -r hit_off hit_on <<<"$(probe_cost)"
hit_ns=$(awk -v a="$hit_on" -v b="$hit_off" 'BEGIN { printf "%.0f", a - b }')
echo "# probe loop: $hit_off ns per iteration not attached, $hit_on ns attached: $hit_ns ns per probe hit"
gn_net_setup "$ranks" --mtu "$mtu"
IFS=, read -r -a E <<<"$elems_list"
for elems in "${E[@]}"; do
	if [ "$elems" -ge 8388608 ]; then
		st=${steps:-6} wu=2
	else
		st=${steps:-20} wu=3
	fi
	read -r b0 i0 s0 <<<"$(cpu_times)"
	l0=$(cut -d' ' -f1 /proc/loadavg)
	offs=() ons=() ratios=() shares=() nsper=() runs=() hits=()
	for ((r = 0; r < rounds; r++)); do
		job=$((job + 2))
		if ((r % 2 == 0)); then
			off=$(timed off "$elems" "$st" "$wu" "$job")
			read -r on bns bcnt ucnt <<<"$(timed on "$elems" "$st" "$wu" $((job + 1)))"
		else
			read -r on bns bcnt ucnt <<<"$(timed on "$elems" "$st" "$wu" $((job + 1)))"
			off=$(timed off "$elems" "$st" "$wu" "$job")
		fi
		# Per rank and allreduce (warm-up steps included, as in the count).
		read -r nsr runr sharer hitr <<<"$(awk -v t="$bns" -v c="$bcnt" \
			-v u="$ucnt" -v n=$((ranks * (st + wu))) -v s="$on" \
			'BEGIN { printf "%.0f %.0f %.5f %.0f", c ? t / c : 0, c / n, t / n / 1e9 / s, u / n }')"
		nsper+=("$nsr")
		runs+=("$runr")
		hits+=("$hitr")
		shares+=("$sharer")
		offs+=("$off")
		ons+=("$on")
		ratios+=("$(awk -v a="$on" -v b="$off" 'BEGIN { printf "%.4f", a / b }')")
		echo "# $elems floats, round $((r + 1)): not attached $off s, attached $on s, ratio ${ratios[-1]}; BPF $nsr ns per run, $runr runs per allreduce and rank ($hitr of them probe hits), ${sharer} of the allreduce"
	done
	read -r b1 i1 s1 <<<"$(cpu_times)"
	l1=$(cut -d' ' -f1 /proc/loadavg)
	moff=$(printf '%s\n' "${offs[@]}" | median)
	mon=$(printf '%s\n' "${ons[@]}" | median)
	mratio=$(printf '%s\n' "${ratios[@]}" | median)
	mns=$(printf '%s\n' "${nsper[@]}" | median)
	mruns=$(printf '%s\n' "${runs[@]}" | median)
	mhits=$(printf '%s\n' "${hits[@]}" | median)
	mshare=$(printf '%s\n' "${shares[@]}" | median)
	busy=$(awk -v b=$((b1 - b0)) -v i=$((i1 - i0)) -v s=$((s1 - s0)) \
		'BEGIN { printf "%.2f %.2f", b / (b + i + s), s / (b + i + s) }')
	echo "{\"ranks\": $ranks, \"elems\": $elems, \"steps\": $st, \"rounds\": $rounds, \"off_median_s\": $moff, \"on_median_s\": $mon, \"ratio_median\": $mratio, \"ratios\": [$(IFS=,; echo "${ratios[*]}")], \"bpf_ns_per_run_median\": $mns, \"bpf_runs_per_allreduce_rank\": $mruns, \"probe_hits_per_allreduce_rank\": $mhits, \"bpf_share_median\": $mshare, \"probe_hit_ns\": $hit_ns, \"est_share\": $(awk -v h="$hit_ns" -v r="$mhits" -v t="$moff" 'BEGIN { printf "%.4f", h * r / 1e9 / t }'), \"load1_start\": $l0, \"load1_end\": $l1, \"cpu_busy_share\": ${busy% *}, \"cpu_steal_share\": ${busy#* }}"
done
echo "# command: $cmdline"
