#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench-allreduce.sh - `gradnet-bench allreduce`: gradnet with each codec
# of a list (default 3LC and codec none) and Open MPI's MPI_Allreduce on
# the same topology in the same run: one rank per network namespace on a
# bridge (tests/net/lib.sh), links unshaped or limited by tc tbf, optional
# packet loss on gradnet's UDP ports (tc BPF, tests/net/gn-loss). Tensors
# hold real gradient values (the mlp-small-seq samples step after step,
# tiled), error feedback carried.
#
# usage: bench-allreduce.sh [--ranks 2,4] [--link none,1gbit,10gbit]
#                           [--elems 1048576,26214400] [--loss 0,0.01]
#                           [--codec LIST]... [--steps K] [--mtu M]
#                           [--no-mpi] [--no-dense]
#                           [--workers 1,2] [--transport udp,dpdk,af_xdp]
#                           [--memif-zero-copy] [--af-xdp-dpdk 1,2]
#                           [--json] [--build DIR] [--rank-bin P]
#                           [--mpi-bin P] [--loss-bin P] [--where]
# Each value list is swept; every configuration gets a fresh topology.
# --codec names the gradnet jobs of every configuration, one per item, in
# order (default 3lc,none). An item is a codec spec as GN_CODEC takes it,
# NAME[:KEY=VALUE,...], or LABEL=SPEC; items are separated by commas, and
# the first item with parameters (a colon) takes the rest of its argument
# as its parameter list, so give such an item last or in a --codec of its
# own: --codec none,3lc,topk:density=0.05,bits=8 or --codec none
# --codec t5=topk:density=0.05 --codec 3lc. Labels name the row's entries
# and must be unique; an item without one is labelled by its text. Three
# labels stand for the settings of the compressor benchmarks: topk is
# topk:density=0.01, topk-qsgd topk:density=0.01,bits=4 and qsgd
# qsgd:bits=4 (LABEL=SPEC overrides). The job labelled none is the dense
# baseline of the ratios, and --no-dense drops it. Every spec is tried on
# a one-rank job first, so a bad one stops the run before it starts.
# --workers sets each gradnet rank's GN_CODEC_WORKERS (default 1).
# --transport dpdk adds, for each size, 2 ranks on the DPDK transport over
# a net_memif pair (no hugepages, rank k's poll loop on the k-th CPU this
# script may use; no link, loss or MPI there): rows with "transport":
# "dpdk", "link": "memif".
# --memif-zero-copy runs the memif client (rank 1) with zero-copy=yes (its
# mbufs are the shared memory, so only the server copies): "link":
# "memif-zc".
# --transport af_xdp adds, for each --ranks value, --af-xdp-dpdk value and
# size, the mixed job of tests/dpdk/mixed_bridge.sh's xdp case: one rank
# per namespace on the bridge as for UDP, the first N ranks (--af-xdp-dpdk,
# default 1) on the DPDK transport over net_af_xdp on their host's eth0
# (copy mode, no hugepages, one queue on the veth and its bridge port, no
# kernel address there, poll loops placed as for memif), the others UDP
# ranks whose hosts send with checksum offload off, as in that test
# (ethtool -K eth0 tx off); no link, loss or MPI there, the first
# --workers value: rows with "transport": "dpdk", "dpdk_ranks": N and
# "link": "af_xdp-mixed" ("af_xdp" when N is every rank). Each job gets
# a topology of its own; an XDP program still on a DPDK rank's eth0 once
# the rank has exited is reported on stderr.
# gradnet-bench allreduce runs this with the paths of gradnet-rank,
# mpi-allreduce and gn-loss, in the build tree or where they are installed
# (--build DIR takes them from a build directory); --where prints the
# paths and stops.
#
# A row is one configuration. Its "codecs" array has an entry per job:
# label, spec, time_s (the slowest rank's median seconds per allreduce),
# wire_bytes, stream_bytes and ctl_bytes (UDP payload bytes per rank per
# allreduce, gradnet's own counters: data packets, what they carry as
# bare chunk streams, acknowledgements and control), retransmits (data
# packets sent again, summed over ranks and all steps, warmup included),
# pps (packets sent per second of allreduce) and cpu_s (CPU seconds per
# allreduce, all threads of a rank), both means over the ranks; and the
# ratios of the same run: speedup (the dense job's time over this one's),
# bytes_x (the dense job's sent bytes, wire plus control, over this
# one's), ring_x (ring_bytes over this job's sent bytes) and
# wire_per_stream (wire_bytes over stream_bytes). ring_bytes is what a
# dense ring allreduce's payload takes per rank, 8 (R - 1) / R bytes per
# float. The row keeps the fields of the 3lc and none jobs under their
# old names: gradnet_s, wire_bytes, stream_bytes, ctl_bytes, retransmits,
# pps and cpu_s of the job labelled 3lc; dense_s, dense_bytes (wire),
# dense_pps, dense_cpu_s and dense_retransmits of the one labelled none
# (null without them). gradnet_nomac_s is the 3lc job again without a
# key, so the seal's share shows; mpi_s is MPI_Allreduce's time.
# Without --json each row is printed as it finishes, and a table of every
# job follows at the end.

set -eu

here=$(cd "$(dirname "$0")" && pwd)
# Installed, lib.sh sits next to this script (libexecdir/gradnet).
if [ -f "$here/lib.sh" ]; then
	# shellcheck source=tests/net/lib.sh
	. "$here/lib.sh"
else
	# shellcheck source=tests/net/lib.sh
	. "$here/../tests/net/lib.sh"
fi

build=$here/../build
rank_bin=
mpi_bin=
loss_bin=
where=
ranks_list=2,4
link_list=none,1gbit,10gbit
elems_list=1048576,26214400
loss_list=0
workers_list=1
steps=
mtu=1500
json=
mpi=1
dense=1
transport_list=udp
memif_zc=
xdp_dpdk_list=1
codec_args=()

while [ $# -gt 0 ]; do
	case $1 in
	--ranks)	ranks_list=$2; shift 2 ;;
	--link)		link_list=$2; shift 2 ;;
	--elems)	elems_list=$2; shift 2 ;;
	--loss)		loss_list=$2; shift 2 ;;
	--workers)	workers_list=$2; shift 2 ;;
	--steps)	steps=$2; shift 2 ;;
	--mtu)		mtu=$2; shift 2 ;;
	--build)	build=$2; shift 2 ;;
	--rank-bin)	rank_bin=$2; shift 2 ;;
	--mpi-bin)	mpi_bin=$2; shift 2 ;;
	--loss-bin)	loss_bin=$2; shift 2 ;;
	--where)	where=1; shift ;;
	--json)		json=1; shift ;;
	--no-mpi)	mpi=; shift ;;
	--no-dense)	dense=; shift ;;
	--codec)	codec_args+=("$2"); shift 2 ;;
	--transport)	transport_list=$2; shift 2 ;;
	--memif-zero-copy) memif_zc=1; shift ;;
	--af-xdp-dpdk)	xdp_dpdk_list=$2; shift 2 ;;
	*)		echo "bench-allreduce.sh: unknown option $1" >&2; exit 2 ;;
	esac
done

rank_bin=${rank_bin:-$build/tools/gradnet-rank}
mpi_bin=${mpi_bin:-$build/tools/mpi-allreduce}
loss_bin=${loss_bin:-$build/tests/net/gn-loss}
[ -x "$rank_bin" ] || { echo "no $rank_bin: build first" >&2; exit 1; }
if [ -n "$where" ]; then
	echo "rank_bin=$rank_bin"
	echo "mpi_bin=$mpi_bin"
	echo "loss_bin=$loss_bin"
	echo "lib=$(declare -F gn_net_setup >/dev/null && echo loaded)"
	exit 0
fi
if [ -n "$mpi" ] && { [ ! -x "$mpi_bin" ] || ! command -v mpirun >/dev/null; }; then
	echo "# no Open MPI (mpirun, $mpi_bin): MPI columns left empty" >&2
	mpi=
fi

IFS=, read -r -a T <<<"$transport_list"
[ ${#T[@]} -gt 0 ] || T=(none)
for t in "${T[@]}"; do
	case $t in
	udp | dpdk | af_xdp) ;;
	*) echo "bench-allreduce.sh: --transport takes udp, dpdk and af_xdp, not $t" >&2; exit 2 ;;
	esac
done
has_transport() {
	case ",$transport_list," in
	*",$1,"*) return 0 ;;
	*) return 1 ;;
	esac
}
if has_transport af_xdp && ! command -v ethtool >/dev/null; then
	echo "bench-allreduce.sh: --transport af_xdp needs ethtool (one queue on the veths)" >&2
	exit 1
fi
IFS=, read -r -a R <<<"$ranks_list"
IFS=, read -r -a X <<<"$xdp_dpdk_list"
for ranks in "${R[@]}"; do
	for n in "${X[@]}"; do
		case $n in
		'' | *[!0-9]*) ;;
		*) [ "$n" -lt 1 ] || [ "$n" -gt "$ranks" ] || continue ;;
		esac
		echo "bench-allreduce.sh: --af-xdp-dpdk $n: not 1..$ranks (--ranks $ranks)" >&2
		exit 2
	done
done

# The spec a label stands for: the compressor benchmarks' settings.
builtin_spec() {
	case $1 in
	topk)		echo "topk:density=0.01" ;;
	topk-qsgd)	echo "topk:density=0.01,bits=4" ;;
	qsgd)		echo "qsgd:bits=4" ;;
	*)		echo "$1" ;;
	esac
}

# add_codecs ARG: the items of one --codec argument appended to LBL[] and
# SPEC[]; a malformed item is a usage error.
add_codecs() {
	local rest=$1 head item label spec k

	while :; do
		head=${rest%%[,:]*}
		case ${rest:${#head}:1} in
		,)	item=$head rest=${rest:$((${#head} + 1))}
			if [ -z "$rest" ]; then
				echo "bench-allreduce.sh: --codec $1: the list ends in a comma" >&2
				exit 2
			fi ;;
		*)	item=$rest rest= ;;
		esac
		head=${item%%:*}
		if [[ $head == *=* ]]; then
			label=${item%%=*} spec=${item#*=}
		else
			label=$item spec=$(builtin_spec "$item")
		fi
		if [ -z "$label" ] || [ -z "$spec" ]; then
			echo "bench-allreduce.sh: --codec $1: an empty label or spec" >&2
			exit 2
		fi
		if [[ $label$spec == *[!A-Za-z0-9._:=,+-]* ]]; then
			echo "bench-allreduce.sh: --codec $1: \"$item\" has a character other than letters, digits and ._:=,+-" >&2
			exit 2
		fi
		for k in "${!LBL[@]}"; do
			if [ "${LBL[k]}" = "$label" ]; then
				echo "bench-allreduce.sh: --codec: label $label is given twice" >&2
				exit 2
			fi
		done
		LBL+=("$label")
		SPEC+=("$spec")
		[ -n "$rest" ] || return 0
	done
}

LBL=() SPEC=()
[ ${#codec_args[@]} -gt 0 ] || codec_args=("3lc,none")
for a in "${codec_args[@]}"; do
	add_codecs "$a"
done
if [ -z "$dense" ]; then
	for k in "${!LBL[@]}"; do
		[ "${LBL[k]}" != none ] || unset 'LBL[k]' 'SPEC[k]'
	done
	LBL=("${LBL[@]}") SPEC=("${SPEC[@]}")
fi
if [ ${#LBL[@]} -eq 0 ]; then
	echo "bench-allreduce.sh: no gradnet job left (--codec none with --no-dense)" >&2
	exit 2
fi
# Each spec on a one-rank job of its own first: the library checks it as
# it will in the sweep (the MTU bounds some parameters), and a bad one is
# refused now, with the library's message, rather than halfway through.
for k in "${!LBL[@]}"; do
	if ! err=$(env GN_INSECURE=1 GN_RANK=0 GN_WORLD_SIZE=1 \
		GN_PEERS=127.0.0.1:0 GN_MTU="$mtu" "$rank_bin" --elems 4096 \
		--steps 1 --warmup 0 --codec "${SPEC[k]}" 2>&1 >/dev/null); then
		a=${LBL[k]}
		[ "$a" = "${SPEC[k]}" ] || a+="=${SPEC[k]}"
		echo "bench-allreduce.sh: --codec $a: $err" >&2
		exit 2
	fi
done

gn_require_net
port=7100
job=$$
key=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')

# The CPUs this process may use: a DPDK rank k's poll loop runs on the
# k-th of them (modulo their count).
mapfile -t cpus < <(sed -n 's/^Cpus_allowed_list:\s*//p' /proc/self/status |
	tr ',' '\n' | while IFS=- read -r a b; do seq "$a" "${b:-$a}"; done)

# The median of several JSON lines' "median_s", taking the slowest rank.
slowest() {
	grep -o '"median_s": [0-9.]*' | awk '{ if ($2 > m) m = $2 } END { print m + 0 }'
}

# Mean over ranks of a numeric JSON field, divided by the step count.
per_step() {
	local field=$1 n=$2

	grep -o "\"$field\": [0-9]*" |
		awk -v n="$n" '{ s += $2; k++ } END { printf "%.0f\n", s / k / n }'
}

# Mean over ranks of a decimal JSON field.
mean() {
	grep -o "\"$1\": [0-9.]*" | awk '{ s += $2; k++ } END { printf "%.6g\n", k ? s / k : 0 }'
}

# Sum over ranks of a numeric JSON field.
total() {
	grep -o "\"$1\": [0-9]*" | awk '{ s += $2 } END { print s + 0 }'
}

# pick_steps ELEMS: the timed steps (st, and it for MPI) and warmup steps
# (wu) of a job of ELEMS floats.
pick_steps() {
	if [ "$1" -ge 8388608 ]; then
		st=${steps:-6} wu=2 it=${steps:-6}
	else
		st=${steps:-20} wu=3 it=${steps:-20}
	fi
}

# eal NAME K VDEV [ARG]: the EAL arguments of DPDK rank K on port VDEV,
# its files under /var/run/dpdk/gnbench<pid>.NAME.
eal() {
	echo "--no-huge -m 1024 --no-pci --no-telemetry -l ${cpus[$(($2 % ${#cpus[@]}))]} ${4:-} --file-prefix=gnbench$$.$1 --vdev=$3 --log-level=*:warning"
}

# wait_ranks DIR PID...: wait for the ranks, print the JSON lines they
# wrote to DIR/<rank>.json, remove DIR.
wait_ranks() {
	local out=$1 pid

	shift
	for pid in "$@"; do
		wait "$pid" || true
	done
	cat "$out"/*.json
	rm -rf "$out"
}

# run_dpdk ELEMS CODEC STEPS WARMUP: two ranks on the DPDK transport over
# net_memif (rank 0 the server), JSON lines out.
run_dpdk() {
	local elems=$1 codec=$2 st=$3 wu=$4 out k role mac zc arg pids=()

	out=$(mktemp -d)
	for k in 0 1; do
		role=server mac=02:00:00:00:00:01 zc= arg=
		if [ "$k" -eq 1 ]; then
			role=client mac=02:00:00:00:00:02
			# Zero copy maps the client's memory: one file per segment list.
			if [ -n "$memif_zc" ]; then
				zc=,zero-copy=yes arg=--single-file-segments
			fi
			for _ in $(seq 100); do
				[ -S "$out/memif.sock" ] && break
				sleep 0.1
			done
		fi
		env GN_KEY="$key" GN_RANK=$k GN_WORLD_SIZE=2 GN_TRANSPORT=dpdk \
			GN_PEERS=10.77.0.1:$port,10.77.0.2:$port \
			GN_DPDK_PEERS=02:00:00:00:00:01,02:00:00:00:00:02 \
			GN_DPDK_EAL="$(eal "$k" "$k" "net_memif0,role=$role,socket=$out/memif.sock,socket-abstract=no,mac=$mac$zc" "$arg")" \
			GN_MTU=$mtu GN_TIMEOUT_MS=30000 \
			"$rank_bin" --elems "$elems" --codec "$codec" \
			--steps "$st" --warmup "$wu" >"$out/$k.json" &
		pids+=($!)
	done
	wait_ranks "$out" "${pids[@]}"
	rm -rf /var/run/dpdk/gnbench$$.*
}

# run_gradnet RANKS ELEMS CODEC STEPS WARMUP JOB [MODE]: one job, one rank
# per host of the bridge, JSON lines out. MODE "insecure" runs it without
# a key (no seal), for the seal's cost; "af_xdp:N" puts ranks 0..N-1 on the
# DPDK transport over net_af_xdp on their host's eth0.
run_gradnet() {
	local ranks=$1 elems=$2 codec=$3 st=$4 wu=$5 job=$6 mode=${7:-} peers= k
	local out pids=() auth=(GN_KEY="$key") ndpdk=0 dpdk

	out=$(mktemp -d)
	case $mode in
	insecure) auth=(GN_INSECURE=1) ;;
	af_xdp:*) ndpdk=${mode#af_xdp:} ;;
	esac
	for ((k = 0; k < ranks; k++)); do
		peers+="${peers:+,}$(gn_host_addr "$k"):$port"
	done
	for ((k = 0; k < ranks; k++)); do
		dpdk=()
		if [ "$k" -lt "$ndpdk" ]; then
			dpdk=(GN_TRANSPORT=dpdk GN_DPDK_EAL="$(eal "xdp$k" "$k" net_af_xdp0,iface=eth0,start_queue=0,queue_count=1)")
		fi
		gn_host_exec "$k" env "${auth[@]}" "${dpdk[@]}" GN_RANK=$k \
			GN_WORLD_SIZE=$ranks GN_PEERS=$peers GN_JOB=$job \
			GN_MTU=$mtu GN_TIMEOUT_MS=30000 GN_CODEC_WORKERS=$workers \
			"$rank_bin" --elems "$elems" \
			--codec "$codec" --steps "$st" --warmup "$wu" \
			>"$out/$k.json" &
		pids+=($!)
	done
	wait_ranks "$out" "${pids[@]}"
}

# run_af_xdp RANKS N ELEMS CODEC STEPS WARMUP: one job on a bridge of its
# own, ranks 0..N-1 on DPDK over net_af_xdp and the others on UDP, as in
# tests/dpdk/mixed_bridge.sh's xdp case; JSON lines out. Run it in a
# subshell: the topology's EXIT trap is the subshell's.
run_af_xdp() {
	local ranks=$1 n=$2 k

	shift 2
	gn_net_setup "$ranks" --mtu "$mtu" >&2 || exit 1
	for ((k = 0; k < ranks; k++)); do
		if [ "$k" -ge "$n" ]; then
			# A veth leaves checksums partial and UDP GSO batches whole,
			# which no NIC on a wire delivers to the DPDK rank.
			gn_host_exec "$k" ethtool -K eth0 tx off >/dev/null 2>&1
			continue
		fi
		# A frame hashed to a queue without the AF_XDP socket would go
		# to a kernel that does not own the address: one queue.
		if ! gn_host_exec "$k" ethtool -L eth0 rx 1 tx 1 ||
		   ! gn_bridge_exec ethtool -L "p$k" rx 1 tx 1; then
			echo "af_xdp: cannot give host $k's veth one queue" >&2
			exit 1
		fi
		gn_host_exec "$k" ip addr flush dev eth0
	done
	run_gradnet "$ranks" "$@" "$job" "af_xdp:$n"
	for ((k = 0; k < n; k++)); do
		if gn_host_exec "$k" ip link show dev eth0 | grep -q 'prog/xdp'; then
			echo "af_xdp: host $k's eth0 kept an XDP program after its rank exited" >&2
		fi
	done
	cleanup
	trap - EXIT
	rm -rf /var/run/dpdk/gnbench$$.*
}

# ratio A B: A / B to four significant digits, null if either is.
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a == "null" || b == "null" || b + 0 == 0) print "null"
		else printf "%.4g\n", a / b }'
}

# add_row HEAD TRANSPORT LINK RANKS ELEMS STEPS WARMUP NOMAC_S MPI_S:
# append the row of the jobs whose JSON lines are OUT[k], one per codec of
# LBL[]/SPEC[] (empty: that job did not run), HEAD the fields before
# "steps"; print it unless --json, and add its jobs to the table.
add_row() {
	local head=$1 tr=$2 lk=$3 ranks=$4 elems=$5 st=$6 n=$(($6 + $7))
	local is=$8 ms=$9
	local k o t wb sb cb rt pp cs sent ring cod='' g=() d=()
	local ds=null dsent=null

	ring=$(awk -v r="$ranks" -v n="$elems" 'BEGIN { printf "%.0f", 8 * (r - 1) / r * n }')
	for k in "${!LBL[@]}"; do
		if [ "${LBL[k]}" = none ] && [ -n "${OUT[k]}" ]; then
			ds=$(echo "${OUT[k]}" | slowest)
			dsent=$(($(echo "${OUT[k]}" | per_step wire_bytes "$n") +
				 $(echo "${OUT[k]}" | per_step ctl_bytes "$n")))
		fi
	done
	for k in "${!LBL[@]}"; do
		o=${OUT[k]}
		[ -n "$o" ] || continue
		t=$(echo "$o" | slowest)
		wb=$(echo "$o" | per_step wire_bytes "$n")
		sb=$(echo "$o" | per_step stream_bytes "$n")
		cb=$(echo "$o" | per_step ctl_bytes "$n")
		rt=$(echo "$o" | total retransmits)
		pp=$(echo "$o" | mean pps)
		cs=$(echo "$o" | mean cpu_s)
		sent=$((wb + cb))
		cod+="${cod:+, }{\"label\": \"${LBL[k]}\", \"spec\": \"${SPEC[k]}\", \"time_s\": $t, \"wire_bytes\": $wb, \"stream_bytes\": $sb, \"ctl_bytes\": $cb, \"retransmits\": $rt, \"pps\": $pp, \"cpu_s\": $cs, \"speedup\": $(ratio "$ds" "$t"), \"bytes_x\": $(ratio "$dsent" "$sent"), \"ring_x\": $(ratio "$ring" "$sent"), \"wire_per_stream\": $(ratio "$wb" "$sb")}"
		table+=("$(printf '%-6s %-5s %-13s %10s %-12s %10.2f %8s %12.3f %8s %8s %8s %7.3f' \
			"$tr" "$ranks" "$lk" "$elems" "${LBL[k]}" \
			"$(awk -v t="$t" 'BEGIN { print t * 1000 }')" "$(ratio "$ds" "$t")" \
			"$(awk -v b="$sent" 'BEGIN { print b / 1e6 }')" \
			"$(ratio "$dsent" "$sent")" "$(ratio "$ring" "$sent")" \
			"$(ratio "$wb" "$sb")" "$cs")")
		case ${LBL[k]} in
		3lc)	g=("$t" "$wb" "$sb" "$cb" "$rt" "$pp" "$cs") ;;
		none)	d=("$t" "$wb" "$pp" "$cs" "$rt") ;;
		esac
	done
	[ ${#g[@]} -gt 0 ] || g=(null null null null null null null)
	[ ${#d[@]} -gt 0 ] || d=(null null null null null)
	if [ "$ms" != null ]; then
		table+=("$(printf '%-6s %-5s %-13s %10s %-12s %10.2f %8s' \
			"$tr" "$ranks" "$lk" "$elems" mpi \
			"$(awk -v t="$ms" 'BEGIN { print t * 1000 }')" "$(ratio "$ds" "$ms")")")
	fi
	rows+=("{$head, \"steps\": $st, \"gradnet_s\": ${g[0]}, \"gradnet_nomac_s\": $is, \"mpi_s\": $ms, \"dense_s\": ${d[0]}, \"wire_bytes\": ${g[1]}, \"stream_bytes\": ${g[2]}, \"ctl_bytes\": ${g[3]}, \"dense_bytes\": ${d[1]}, \"retransmits\": ${g[4]}, \"pps\": ${g[5]}, \"cpu_s\": ${g[6]}, \"dense_pps\": ${d[2]}, \"dense_cpu_s\": ${d[3]}, \"dense_retransmits\": ${d[4]}, \"ring_bytes\": $ring, \"codecs\": [$cod]}")
	if [ -z "$json" ]; then
		echo "${rows[-1]}"
	fi
}

# finished NAME RANKS LINES: every one of RANKS ranks reported a median;
# else say so, with their output, and fail.
finished() {
	local n

	n=$(echo "$3" | grep -c '"median_s"') || true
	[ "$n" -eq "$2" ] && return 0
	echo "$1 failed ($n of $2 ranks finished): $3" >&2
	return 1
}

# dpdk_rows HEAD LINK RANKS RUN [ARG...]: for each size, a job of `RUN
# ARG... ELEMS SPEC STEPS WARMUP` with RANKS ranks per codec, and their
# row; HEAD the row's fields before "elems", LINK its link.
dpdk_rows() {
	local head=$1 lk=$2 ranks=$3 elems k

	shift 3
	for elems in "${E[@]}"; do
		pick_steps "$elems"
		OUT=()
		for k in "${!LBL[@]}"; do
			OUT[k]=$("$@" "$elems" "${SPEC[k]}" "$st" "$wu")
			finished "gradnet ${LBL[k]} ($lk)" "$ranks" "${OUT[k]}" || exit 1
		done
		add_row "$head, \"elems\": $elems, \"loss\": 0, \"mtu\": $mtu" \
			dpdk "$lk" "$ranks" "$elems" "$st" "$wu" null null
	done
}

# run_mpi RANKS ELEMS ITERS WARMUP: MPI_Allreduce, slowest rank's median.
run_mpi() {
	local ranks=$1 elems=$2 it=$3 wu=$4 sub app=() k

	sub=$(gn_net_subnet)
	for ((k = 0; k < ranks; k++)); do
		[ "$k" -eq 0 ] || app+=(:)
		app+=(-np 1 ip netns exec "$(gn_host_ns "$k")" "$mpi_bin"
		      --elems "$elems" --iters "$it" --warmup "$wu" --iface eth0)
	done
	PMIX_MCA_ptl_tcp_remote_connections=1 PMIX_MCA_ptl_tcp_if_include=$sub \
	timeout 1800 ip netns exec "$(gn_bridge_ns)" mpirun --allow-run-as-root \
		--oversubscribe --bind-to none --mca pml ob1 --mca btl tcp,self \
		--mca btl_tcp_if_include "$sub" --mca oob_tcp_if_include "$sub" \
		"${app[@]}" 2>/dev/null | grep '^{' |
		grep -o '"mpi_s": *[0-9.]*' | awk -F: '{ print $2 + 0 }'
}

# attach_loss RANKS PPM: drop PPM per million of gradnet's packets on egress.
attach_loss() {
	local ranks=$1 ppm=$2 k

	[ "$ppm" -gt 0 ] || return 0
	[ -x "$loss_bin" ] || { echo "no $loss_bin for --loss" >&2; exit 1; }
	for ((k = 0; k < ranks; k++)); do
		gn_host_exec "$k" "$loss_bin" attach --dev eth0 --egress \
			--ppm "$ppm" --ports 7100-7999 >/dev/null
	done
}

rows=() table=()
IFS=, read -r -a L <<<"$link_list"
IFS=, read -r -a E <<<"$elems_list"
IFS=, read -r -a P <<<"$loss_list"
IFS=, read -r -a W <<<"$workers_list"
U=("${R[@]}")
has_transport udp || U=()
for ranks in "${U[@]}"; do
for link in "${L[@]}"; do
for elems in "${E[@]}"; do
for loss in "${P[@]}"; do
for workers in "${W[@]}"; do
	ppm=$(awk -v l="$loss" 'BEGIN { printf "%d", l * 1000000 + 0.5 }')
	pick_steps "$elems"
	gn_net_setup "$ranks" --rate "$link" --mtu "$mtu"
	attach_loss "$ranks" "$ppm"
	OUT=() ms=null is=null
	for k in "${!LBL[@]}"; do
		OUT[k]=$(run_gradnet "$ranks" "$elems" "${SPEC[k]}" "$st" "$wu" $((job + k)))
		finished "gradnet ${LBL[k]}" "$ranks" "${OUT[k]}" || exit 1
		if [ "${LBL[k]}" = 3lc ]; then
			is=$(run_gradnet "$ranks" "$elems" "${SPEC[k]}" "$st" "$wu" \
				$((job + 100000)) insecure | slowest)
		fi
	done
	job=$((job + ${#LBL[@]}))
	if [ -n "$mpi" ] && [ "$ppm" -eq 0 ] && [ "$workers" = "${W[0]}" ]; then
		ms=$(run_mpi "$ranks" "$elems" "$it" "$wu")
		[ -n "$ms" ] || ms=null
	fi
	cleanup
	trap - EXIT
	add_row "\"transport\": \"udp\", \"ranks\": $ranks, \"link\": \"$link\", \"elems\": $elems, \"loss\": $loss, \"workers\": $workers, \"mtu\": $mtu" \
		udp "$link" "$ranks" "$elems" "$st" "$wu" "$is" "$ms"
done
done
done
done
done

if has_transport dpdk; then
	dpdk_rows "\"transport\": \"dpdk\", \"ranks\": 2, \"link\": \"memif${memif_zc:+-zc}\"" \
		"memif${memif_zc:+-zc}" 2 run_dpdk
fi

# The af_xdp jobs' ranks take the first --workers value.
workers=${W[0]}
has_transport af_xdp || X=()
for ranks in "${R[@]}"; do
for n in "${X[@]}"; do
	link=af_xdp-mixed
	[ "$n" -lt "$ranks" ] || link=af_xdp
	dpdk_rows "\"transport\": \"dpdk\", \"ranks\": $ranks, \"dpdk_ranks\": $n, \"link\": \"$link\", \"workers\": $workers" \
		"$link" "$ranks" run_af_xdp "$ranks" "$n"
done
done

if [ -n "$json" ]; then
	printf '[\n'
	for ((k = 0; k < ${#rows[@]}; k++)); do
		printf '  %s%s\n' "${rows[k]}" "$([ $k -lt $((${#rows[@]} - 1)) ] && echo ,)"
	done
	printf ']\n'
fi
if [ -z "$json" ] && [ ${#table[@]} -gt 0 ]; then
	echo "# Every job: ms per allreduce (slowest rank's median), speedup over"
	echo "# dense, MB sent per rank per allreduce (wire + control), bytes_x"
	echo "# (dense's sent bytes over these), ring_x (a dense ring's payload"
	echo "# over these), wire/stream, CPU seconds per allreduce (mean of ranks)"
	printf '%-6s %-5s %-13s %10s %-12s %10s %8s %12s %8s %8s %8s %7s\n' \
		transport ranks link elems codec ms speedup MB/rank bytes_x \
		ring_x w/stream cpu_s
	printf '%s\n' "${table[@]}"
fi
