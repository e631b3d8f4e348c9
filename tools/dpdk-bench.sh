#!/bin/bash
# SPDX-License-Identifier: MIT
#
# dpdk-bench.sh - a rough comparison of the data paths: two gradnet-rank
# processes over the DPDK transport on a net_memif pair (no hugepages) and
# two over UDP sockets on loopback, the same job for each: dense and 3LC,
# for each size given. Prints one line per run: the command's parameters,
# the median seconds per allreduce of rank 0 and its packets sent. Numbers
# only, no verdict; on a shared 2-core host they are noisy.
#
# usage: tools/dpdk-bench.sh BUILD_DIR [ELEMS...]   (default 1048576 26214400)

set -eu

build=$1
shift
sizes=${*:-1048576 26214400}
rank_bin=$build/tools/gradnet-rank
steps=${STEPS:-10}
key=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" /var/run/dpdk/gnbench$$* 2>/dev/null' EXIT

field() {
	sed -n "s/.*\"$1\": *\([0-9.]*\).*/\1/p" "$2"
}

# run PATH CODEC ELEMS: one job; prints its line.
run() {
	local path=$1 codec=$2 n=$3 k sock=$tmp/m.sock pids=()

	rm -f "$sock"
	for k in 0 1; do
		if [ "$path" = dpdk ]; then
			role=server mac=02:00:00:00:00:01
			[ "$k" -eq 1 ] && role=client mac=02:00:00:00:00:02
			if [ "$k" -eq 1 ]; then
				for _ in $(seq 100); do
					[ -S "$sock" ] && break
					sleep 0.1
				done
			fi
			env GN_RANK=$k GN_WORLD_SIZE=2 GN_KEY="$key" GN_TRANSPORT=dpdk \
				GN_PEERS=10.77.0.1:7000,10.77.0.2:7000 \
				GN_DPDK_PEERS=02:00:00:00:00:01,02:00:00:00:00:02 \
				GN_DPDK_EAL="--no-huge -m 1024 --no-pci --no-telemetry -l $k --file-prefix=gnbench$$.$k --vdev=net_memif0,role=$role,socket=$sock,socket-abstract=no,mac=$mac --log-level=*:warning" \
				"$rank_bin" --elems "$n" --steps "$steps" --warmup 2 \
				--codec "$codec" >"$tmp/$k.json" 2>"$tmp/$k.err" &
		else
			env GN_RANK=$k GN_WORLD_SIZE=2 GN_KEY="$key" GN_TRANSPORT=udp \
				GN_PEERS=127.0.0.1:7301,127.0.0.1:7302 \
				taskset -c "$k" "$rank_bin" --elems "$n" --steps "$steps" \
				--warmup 2 --codec "$codec" >"$tmp/$k.json" 2>"$tmp/$k.err" &
		fi
		pids[k]=$!
	done
	wait "${pids[0]}" "${pids[1]}" || { cat "$tmp"/*.err >&2; return 1; }
	printf "%-5s %-5s %9s floats  median %8.2f ms  min %8.2f ms  tx_packets %s\n" \
		"$path" "$codec" "$n" \
		"$(awk -v s="$(field median_s "$tmp/0.json")" 'BEGIN { print s * 1000 }')" \
		"$(awk -v s="$(field min_s "$tmp/0.json")" 'BEGIN { print s * 1000 }')" \
		"$(field tx_packets "$tmp/0.json")"
}

echo "# tools/dpdk-bench.sh $build $sizes (STEPS=$steps, 2 ranks, rank k on CPU k)"
for n in $sizes; do
	for codec in none 3lc; do
		run udp "$codec" "$n"
		run dpdk "$codec" "$n"
	done
done
