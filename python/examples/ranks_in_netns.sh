#!/bin/bash
# SPDX-License-Identifier: MIT
#
# ranks_in_netns.sh - run the N ranks of a torch.distributed job each in a
# network namespace of its own, on the bridge of tests/net/lib.sh, their
# links unshaped (none) or shaped with tc tbf to 1gbit or 10gbit in both
# directions. Rank k runs CMD... with RANK=k, LOCAL_RANK=k, WORLD_SIZE=N,
# MASTER_ADDR the address of rank 0's host, and GLOO_SOCKET_IFNAME=eth0,
# so Gloo's traffic crosses the shaped links as gradnet's does.
#
# usage: ranks_in_netns.sh N none|1gbit|10gbit CMD...
# Needs root. Exits with the first failing rank's code (the others are
# ended then), or 0; the namespaces are deleted on exit and on a signal.

set -eu

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/net/lib.sh
. "$here/../../tests/net/lib.sh"

[ $# -ge 3 ] || { echo "usage: ranks_in_netns.sh N none|1gbit|10gbit CMD..." >&2; exit 2; }
ranks=$1 rate=$2
shift 2

gn_require_net
gn_net_setup "$ranks" --rate "$rate"

pids=()
for ((k = 0; k < ranks; k++)); do
	gn_host_exec "$k" env RANK="$k" LOCAL_RANK="$k" WORLD_SIZE="$ranks" \
		MASTER_ADDR="$(gn_host_addr 0)" MASTER_PORT=29500 \
		GLOO_SOCKET_IFNAME=eth0 "$@" &
	pids+=($!)
done
rc=0
while [ ${#pids[@]} -gt 0 ]; do
	# The first rank to fail ends the job: the others would wait for it.
	wait -n -p ended "${pids[@]}" || rc=$?
	mapfile -t pids < <(printf '%s\n' "${pids[@]}" | grep -vx "$ended")
	if [ "$rc" -ne 0 ]; then
		[ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true
		break
	fi
done
exit "$rc"
