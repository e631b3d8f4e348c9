#!/bin/bash
# SPDX-License-Identifier: MIT
#
# link_rate.sh - measure what a lib.sh link really carries: iperf3 TCP
# (one stream) and UDP (offered above the rate) from host 0 to host 1 for
# each rate, printing one JSON line per case with the command that made it.
# A benchmark, not a test: it asserts nothing.
#
# usage: link_rate.sh [--seconds S] [--mtu M] [RATE...]   (default: none 1gbit 10gbit)
# Exit: 0 ok, 4 skip (not root, no netns, no iperf3).

set -eu

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/net/lib.sh
. "$here/lib.sh"

secs=4
mtu=1500
rates=()
while [ $# -gt 0 ]; do
	case $1 in
	--seconds)	secs=$2; shift 2 ;;
	--mtu)		mtu=$2; shift 2 ;;
	*)		rates+=("$1"); shift ;;
	esac
done
[ "${#rates[@]}" -gt 0 ] || rates=(none 1gbit 10gbit)

command -v iperf3 >/dev/null || gn_skip "iperf3 missing"
gn_require_net

# iperf_bps JSON KEY: print end.KEY.bits_per_second of an iperf3 -J report.
iperf_bps() {
	tr -d ' \t\n' <"$1" | sed -n "s/.*\"$2\":{[^}]*\"bits_per_second\":\([0-9.e+]*\).*/\1/p"
}

# measure RATE: one topology, a TCP run then a UDP run.
measure() {
	local rate=$1 tmp dst tcp udp offer

	(
	tmp=$(mktemp -d)
	gn_on_cleanup "rm -rf '$tmp'"
	gn_net_setup 2 --rate "$rate" --mtu "$mtu"
	dst=$(gn_host_addr 1)
	gn_host_exec 1 iperf3 -s -D -B "$dst" -I "$tmp/pid" >/dev/null
	sleep 0.5
	gn_host_exec 0 iperf3 -c "$dst" -t "$secs" -O 1 -J >"$tmp/tcp"
	# UDP offered above the rate: tbf, not the sender, should limit it.
	# 8 MB socket buffers keep the receiver from dropping bursts.
	case $rate in
	1gbit)	offer=2G ;;
	*)	offer=20G ;;
	esac
	gn_host_exec 0 iperf3 -c "$dst" -u -b "$offer" -l 1400 -w 8M \
		-t "$secs" -J >"$tmp/udp"
	tcp=$(iperf_bps "$tmp/tcp" sum_received)
	udp=$(iperf_bps "$tmp/udp" sum_received)
	printf '{"link":"%s","mtu":%s,"tcp_rx_gbps":%.3f,"udp_1400B_rx_gbps":%.3f,"tbf":"%s","cmd":"tests/net/link_rate.sh --seconds %s --mtu %s %s"}\n' \
		"$rate" "$mtu" "$(awk -v b="$tcp" 'BEGIN{print b/1e9}')" \
		"$(awk -v b="$udp" 'BEGIN{print b/1e9}')" \
		"$( [ "$rate" = none ] || gn_tbf_args "$rate")" "$secs" "$mtu" "$rate"
	)
}

for r in "${rates[@]}"; do
	measure "$r"
done
