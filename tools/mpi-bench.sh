#!/bin/bash
# SPDX-License-Identifier: MIT
#
# mpi-bench.sh - time Open MPI's MPI_Allreduce (tools/mpi-allreduce.c) with
# one rank per network namespace, so every byte crosses a veth, the bridge
# and the link's tbf (tests/net/lib.sh). Prints one JSON line per run: the
# program's own line plus the link, the command, and the byte counters of
# every host's eth0 (and loopback) over the whole run, warm-up included,
# which prove the path the data took.
#
# usage: mpi-bench.sh [--bin PATH] [--ranks N] [--link none|1gbit|10gbit]
#                     [--elems N] [--iters K] [--warmup W] [--mtu M]
#        mpi-bench.sh [--bin PATH] --sweep
# --sweep runs ranks 2 and 4, links none, 1gbit and 10gbit, 1M and 25M
# floats, each on a fresh topology.
# Exit: 0 ok, 1 fail, 4 skip (not root, no netns, no mpirun).
#
# How the runtime crosses namespaces: mpirun runs inside the bridge's
# namespace, where br0 has an address on the hosts' subnet, and starts each
# rank through `ip netns exec`. Its PMIx server listens on that subnet
# (PMIX_MCA_ptl_tcp_remote_connections, ..._if_include) instead of loopback,
# which the ranks cannot reach from their namespaces. The ranks talk to each
# other with the tcp BTL only (no shared memory), on the hosts' subnet.

set -eu

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/net/lib.sh
. "$here/../tests/net/lib.sh"

bin=$here/../build/tools/mpi-allreduce
ranks=2
link=none
elems=1048576
iters=
warmup=
mtu=1500
sweep=

while [ $# -gt 0 ]; do
	case $1 in
	--bin)		bin=$2; shift 2 ;;
	--ranks)	ranks=$2; shift 2 ;;
	--link)		link=$2; shift 2 ;;
	--elems)	elems=$2; shift 2 ;;
	--iters)	iters=$2; shift 2 ;;
	--warmup)	warmup=$2; shift 2 ;;
	--mtu)		mtu=$2; shift 2 ;;
	--sweep)	sweep=1; shift ;;
	*)		echo "mpi-bench.sh: unknown option $1" >&2; exit 2 ;;
	esac
done

[ -x "$bin" ] || gn_skip "no mpi-allreduce at $bin (build with MPI)"
command -v mpirun >/dev/null || gn_skip "mpirun missing (openmpi-bin)"

if [ -n "$sweep" ]; then
	for r in 2 4; do
		for l in none 1gbit 10gbit; do
			for n in 1048576 26214400; do
				"$0" --bin "$bin" --ranks "$r" --link "$l" \
					--elems "$n" --mtu "$mtu"
			done
		done
	done
	exit 0
fi

# A 25M-float allreduce takes seconds at 1 Gbit/s: fewer calls for big ones.
if [ "$elems" -ge 8388608 ]; then
	: "${iters:=10}" "${warmup:=2}"
else
	: "${iters:=30}" "${warmup:=3}"
fi

gn_require_net
gn_net_setup "$ranks" --rate "$link" --mtu "$mtu"
sub=$(gn_net_subnet)

# mpirun's PMIx server takes its settings from the environment only.
export PMIX_MCA_ptl_tcp_remote_connections=1
export PMIX_MCA_ptl_tcp_if_include=$sub

app=()
for ((k = 0; k < ranks; k++)); do
	[ "$k" -eq 0 ] || app+=(:)
	app+=(-np 1 ip netns exec "$(gn_host_ns "$k")" "$bin" --elems "$elems"
	      --iters "$iters" --warmup "$warmup" --iface eth0)
done

declare -a rx0 tx0 lo0
for ((k = 0; k < ranks; k++)); do
	read -r rx tx < <(gn_link_bytes "$k")
	read -r _ lo < <(gn_link_bytes "$k" lo)
	rx0[k]=$rx tx0[k]=$tx lo0[k]=$lo
done

out=$(mktemp)
gn_on_cleanup "rm -f '$out'"
timeout 900 ip netns exec "$(gn_bridge_ns)" mpirun --allow-run-as-root \
	--oversubscribe --bind-to none --mca pml ob1 --mca btl tcp,self \
	--mca btl_tcp_if_include "$sub" --mca oob_tcp_if_include "$sub" \
	"${app[@]}" >"$out"
line=$(grep '^{' "$out")

hosts=
for ((k = 0; k < ranks; k++)); do
	read -r rx tx < <(gn_link_bytes "$k")
	read -r _ lo < <(gn_link_bytes "$k" lo)
	hosts+="${hosts:+,}{\"tx\":$((tx - tx0[k])),\"rx\":$((rx - rx0[k])),\"lo_tx\":$((lo - lo0[k]))}"
done
cmd="tools/mpi-bench.sh --ranks $ranks --link $link --elems $elems --iters $iters --warmup $warmup --mtu $mtu"
echo "${line%\}},\"link\":\"$link\",\"mtu\":$mtu,\"eth0_run_bytes\":[$hosts],\"cmd\":\"$cmd\"}"
