#!/bin/bash
# SPDX-License-Identifier: MIT
#
# dpdk-cost.sh - user-space instructions per packet on the DPDK path: two
# gradnet-rank processes over a net_memif pair (no hugepages), rank 0 (the
# memif server) under valgrind --tool=callgrind, which counts instructions
# (repeatable on a busy host, unlike time). Prints, per packet sent, the
# inclusive count of the core's pump (gn_dl_pump) and of the transport's
# send (dtp_send: headers, checksum, the PMD's tx burst); per frame
# received, the transport's receive (dtp_recv: the PMD's rx burst and
# the filter) and the filter (gn_dpdk_classify, with the checksum). The
# kernel's share is not counted. Needs a build with libdpdk and valgrind.
#
# usage: tools/dpdk-cost.sh BUILD_DIR [ELEMS [CODEC [STEPS]]]
#        (defaults 1048576 none 4); RANK=1 profiles the memif client
#        instead, ZC=1 makes the client zero-copy (and profiles it).

set -eu

build=$1
elems=${2:-1048576}
codec=${3:-none}
steps=${4:-4}
prof=${RANK:-0}
[ -n "${ZC:-}" ] && prof=1
out=$(mktemp -d)
prefix=gncost$$
trap 'rm -rf "$out" /var/run/dpdk/$prefix.*' EXIT
key=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
pids=()
for k in 0 1; do
	role=server mac=02:00:00:00:00:01 zc= eal= pre=()
	if [ "$k" -eq 1 ]; then
		role=client mac=02:00:00:00:00:02
		[ -n "${ZC:-}" ] && zc=,zero-copy=yes eal=--single-file-segments
		for _ in $(seq 600); do
			[ -S "$out/m.sock" ] && break
			sleep 0.1
		done
	fi
	[ "$k" -eq "$prof" ] && pre=(valgrind --tool=callgrind
		--callgrind-out-file="$out/cg.out" --separate-threads=no)
	env GN_RANK=$k GN_WORLD_SIZE=2 GN_KEY="$key" GN_TRANSPORT=dpdk \
		GN_TIMEOUT_MS=120000 GN_CODEC_ISA=avx2 \
		GN_PEERS=10.77.0.1:7000,10.77.0.2:7000 \
		GN_DPDK_PEERS=02:00:00:00:00:01,02:00:00:00:00:02 \
		GN_DPDK_EAL="--no-huge -m 1024 --no-pci --no-telemetry -l $k $eal --file-prefix=$prefix.$k --vdev=net_memif0,role=$role,socket=$out/m.sock,socket-abstract=no,mac=$mac$zc --log-level=*:warning" \
		"${pre[@]}" "$build/tools/gradnet-rank" --elems "$elems" \
		--codec "$codec" --steps "$steps" --warmup 0 \
		>"$out/$k.json" 2>"$out/$k.err" &
	pids[k]=$!
done
wait "${pids[0]}" "${pids[1]}" || { cat "$out"/*.err >&2; exit 1; }

tx=$(sed -n 's/.*"tx_packets": \([0-9]*\).*/\1/p' "$out/$prof.json")
incl=$(callgrind_annotate --inclusive=yes --threshold=100 "$out/cg.out" 2>/dev/null)
# gn_dpdk_classify runs once per frame received.
rx=$(callgrind_annotate --tree=calling --threshold=100 "$out/cg.out" 2>/dev/null |
	grep -E '>   .*:gn_dpdk_classify \(' | sed 's/.*(\([0-9,]*\)x).*/\1/' |
	tr -d , | awk '{ s += $1 } END { print s + 0 }')
ir() {
	echo "$incl" | grep -E "[:]$1 " | head -1 | awk '{ gsub(",", "", $1); print $1 + 0 }'
}
echo "# tools/dpdk-cost.sh $build $elems $codec $steps${ZC:+ (ZC=1)}: rank $prof, $tx packets sent, $rx frames received"
for f in gn_dl_pump dtp_send; do
	awk -v f="$f" -v v="$(ir $f)" -v n="$tx" 'BEGIN { printf "%-18s %7.0f instructions per packet sent\n", f, v / n }'
done
for f in dtp_recv gn_dpdk_classify; do
	awk -v f="$f" -v v="$(ir $f)" -v n="$rx" 'BEGIN { printf "%-18s %7.0f instructions per frame received\n", f, v / n }'
done
