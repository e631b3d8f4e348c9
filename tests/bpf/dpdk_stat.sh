#!/bin/bash
# SPDX-License-Identifier: MIT
#
# dpdk_stat.sh - gradnet-stat on jobs of the DPDK transport: the probes of
# a DPDK rank name transport dpdk. Each rank is started stopped, before it
# execs gn-rank-test, gradnet-stat attaches to its pid, then it runs; loss,
# duplication and reordering in the senders (GN_TEST_FAULTS) so that
# retransmits and drops are counted too.
#
#  memif  two DPDK ranks over net_memif (no hugepages, no NIC, as
#         tests/dpdk/memif_allreduce.sh runs them): every flow of the job
#         names transport dpdk; every rank pair has its reduce and gather
#         flows; each rank's sums over its dpdk flows equal the library's
#         final counters exactly (GN_TEST_STATS_FILE): packets, bytes,
#         retransmits, drops by reason, rx; each rank's step flow and
#         latency histogram hold its steps
#  mixed  ranks 0 and 1 on DPDK (net_af_packet on a veth) and rank 2 on
#         UDP, one namespace each on a bridge (tests/net/lib.sh, as
#         tests/dpdk/mixed_bridge.sh): every flow names the transport of
#         the rank that counted it, so both appear, as separate flows of
#         one rank pair, and the same sums hold per rank
#  bpftool  the pinned map as bpftool reads it: the keys carry
#         GN_STAT_TRANSPORT_DPDK (bpf/gradnet_stat.h), and _UDP for rank 2
#  detach leaves nothing pinned and no program loaded
#
# usage: dpdk_stat.sh GRADNET_STAT GN_RANK_TEST GRADNET_STAT_H
# Nothing skips: without root, bpftool, bpffs or what the namespaces need
# the test fails; a DPDK rank that cannot start fails its case.

set -eu

here=$(cd "$(dirname "$0")" && pwd)
GN_NS_PREFIX=gnds-$$
GN_SKIP_RC=1
# shellcheck source=tests/net/lib.sh
. "$here/../net/lib.sh"
# shellcheck source=tests/bpf/stat_lib.sh
. "$here/stat_lib.sh"

STAT=$1
RANK_BIN=$2
STAT_H=$3
PORT=7000
ELEMS=1000003
STEPS=8
FAULTS=loss=0.05,dup=0.1,reorder=0.1
RUN_LIMIT=120
MAC0=02:00:00:00:00:01
MAC1=02:00:00:00:00:02
KEY=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
JOB=$((RANDOM * 32768 + RANDOM + 1))
testno=0
failed=0
pids=()

cannot_run() {
	echo "1..0 # cannot run: $*"
	exit 1
}

for b in "$STAT" "$RANK_BIN"; do
	[ -x "$b" ] || cannot_run "$b is not built"
done
[ -r "$STAT_H" ] || cannot_run "no $STAT_H"
[ "$(id -u)" -eq 0 ] || cannot_run "needs root (BPF, uprobes, namespaces)"
command -v bpftool >/dev/null || PATH=$PATH:/usr/sbin
command -v bpftool >/dev/null || cannot_run "bpftool missing (apt-get install bpftool)"
[ "$(stat -f -c %T /sys/fs/bpf 2>/dev/null)" = bpf_fs ] ||
	cannot_run "no bpffs at /sys/fs/bpf (mount -t bpf bpf /sys/fs/bpf)"
gn_require_net

tmp=$(mktemp -d)
# A pin directory of the test's own: an operator's stays untouched.
export GN_STAT_PIN_DIR=/sys/fs/bpf/gradnet-test-$$
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
gn_on_cleanup 'stop_ranks'
gn_on_cleanup "'$STAT' detach >/dev/null 2>&1 || true"
gn_on_cleanup "rm -rf '$tmp' /var/run/dpdk/$GN_NS_PREFIX.* 2>/dev/null"

echo "TAP version 13"
echo "1..18"

stop_ranks() {
	local pid

	for pid in "${pids[@]}"; do
		kill -9 "$pid" 2>/dev/null || true
		{ wait "$pid"; } 2>/dev/null || true
	done
	pids=()
}

# state PID: the process's state letter (T: stopped, Z: a zombie).
state() {
	sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1
}

# The CPUs this process may use, one per DPDK rank in turn.
mapfile -t cpus < <(sed -n 's/^Cpus_allowed_list:\s*//p' /proc/self/status |
	tr ',' '\n' | while IFS=- read -r a b; do seq "$a" "${b:-$a}"; done)

# start_rank NAME K NS TRANSPORT [VDEV]: rank K of job NAME (the case's
# WORLD, PEERS, CASE_JOB and, if set, NEIGH as GN_DPDK_PEERS) in namespace
# NS (none: this one), on UDP or on DPDK with port VDEV. Started stopped,
# so that gradnet-stat attaches to its pid before it execs (a task's
# uprobes stay through exec) and counts it from its first packet on.
start_rank() {
	local name=$1 k=$2 ns=$3 path=$4 vdev=${5:-} pid rc=0
	local cpu=${cpus[$((k % ${#cpus[@]}))]}
	local -a in=() dpdk=()

	[ "$ns" = none ] || in=(ip netns exec "$ns")
	[ "$path" = udp ] || dpdk=(GN_DPDK_EAL="--no-huge -m 1024 --no-pci --no-telemetry -l $cpu --file-prefix=$GN_NS_PREFIX.$name.$k --vdev=$vdev --log-level=*:warning"
		${NEIGH:+GN_DPDK_PEERS=$NEIGH})
	"${in[@]}" bash -c 'kill -STOP $$ && exec "$@"' "gn-rank-$k" \
		env GN_RANK="$k" GN_WORLD_SIZE="$WORLD" GN_PEERS="$PEERS" \
		GN_KEY="$KEY" GN_JOB="$CASE_JOB" GN_TRANSPORT="$path" \
		GN_TIMEOUT_MS=10000 "${dpdk[@]}" \
		GN_TEST_FAULTS="$FAULTS,seed=$((k + 1))" \
		GN_TEST_STATS_FILE="$tmp/$name.$k.stats" \
		"$RANK_BIN" --warmup 0 --elems "$ELEMS" --steps "$STEPS" \
		>"$tmp/$name.$k.json" 2>"$tmp/$name.$k.err" &
	pid=$!
	pids[k]=$pid
	for _ in $(seq 500); do
		[ "$(state "$pid")" = T ] && break
		sleep 0.01
	done
	"$STAT" attach --pid "$pid" --lib "$RANK_BIN" >>"$tmp/attach" 2>&1 || rc=1
	kill -CONT "$pid"
	return $rc
}

# faulted NAME: the faults did bite: the ranks retransmitted and dropped
# duplicates, so the sums compared for them are not all zeros.
faulted() {
	local rtx=0 dup=0 k v

	for ((k = 0; k < WORLD; k++)); do
		v=$(sed -n 's/.*"retransmits": \([0-9]*\).*/\1/p' "$tmp/$1.$k.stats")
		rtx=$((rtx + ${v:-0}))
		v=$(sed -n 's/.*"drops": \[\([0-9]*, \)\{6\}\([0-9]*\).*/\2/p' "$tmp/$1.$k.stats")
		dup=$((dup + ${v:-0}))
	done
	gn_diag "$1: the ranks retransmitted $rtx packets and dropped $dup duplicates"
	[ "$rtx" -gt 0 ] && [ "$dup" -gt 0 ]
}

# case_end OK DESC TRANSPORTS: the end of case $name, whose ranks run on
# TRANSPORTS (one per rank, in order): the job (its ranks started OK),
# the faults, then the flows' transports, pairs, sums and steps.
case_end() {
	local ok=$1

	gn_wait_ranks "$name" || ok=0
	[ "$ok" -eq 1 ] || sed 's/^/# /' "$tmp/attach"
	gn_result "$ok" "$name: $2"
	ok=1
	faulted "$name" || ok=0
	gn_result "$ok" "$name: the faults made the ranks retransmit and drop duplicates"
	"$STAT" dump --json >"$tmp/$name.dump" || gn_diag "dump --json failed"
	check transport "$tmp/$name.dump" "$CASE_JOB" "$STEPS" "$3" \
		"$tmp/$name".*.stats
}

# ---- memif: two DPDK ranks ------------------------------------------------

name=memif
WORLD=2
PEERS=10.77.0.1:$PORT,10.77.0.2:$PORT
CASE_JOB=$JOB
NEIGH=$MAC0,$MAC1
sock=$tmp/memif.sock
ok=1
start_rank "$name" 0 none dpdk \
	"net_memif0,role=server,socket=$sock,socket-abstract=no,mac=$MAC0" || ok=0
# The client connects to a socket the server made.
for _ in $(seq 100); do
	[ -S "$sock" ] && break
	sleep 0.1
done
start_rank "$name" 1 none dpdk \
	"net_memif0,role=client,socket=$sock,socket-abstract=no,mac=$MAC1" || ok=0
case_end "$ok" "two DPDK ranks, each attached by pid before it ran, $STEPS steps of $ELEMS floats with $FAULTS" dpdk,dpdk

# ---- mixed: two DPDK ranks and a UDP rank on a bridge ----------------------

name=mixed
WORLD=3
PEERS=
CASE_JOB=$((JOB + 1))
NEIGH=
gn_net_setup $WORLD
for ((k = 0; k < WORLD; k++)); do
	PEERS="$PEERS${PEERS:+,}$(gn_host_addr "$k"):$PORT"
done
# As in mixed_bridge.sh: the DPDK ranks own their hosts' addresses and
# resolve their peers by ARP; the UDP host sends whole, checksummed
# datagrams, as a NIC would deliver them (net_af_packet passes on what the
# veth gives); br_netfilter, if loaded, keeps out of the bridge.
for k in 0 1; do
	gn_host_exec "$k" ip addr flush dev eth0
done
gn_host_exec 2 ethtool -K eth0 tx off >/dev/null 2>&1 || true
gn_bridge_exec sysctl -qw net.bridge.bridge-nf-call-iptables=0 \
	net.bridge.bridge-nf-call-ip6tables=0 \
	net.bridge.bridge-nf-call-arptables=0 2>/dev/null || true
ok=1
for k in 0 1; do
	start_rank "$name" "$k" "$(gn_host_ns "$k")" dpdk \
		net_af_packet0,iface=eth0 || ok=0
done
start_rank "$name" 2 "$(gn_host_ns 2)" udp || ok=0
case_end "$ok" "ranks 0 and 1 on DPDK (net_af_packet), rank 2 on UDP, attached by pid, $STEPS steps with $FAULTS" dpdk,dpdk,udp

# ---- bpftool reads the transports itself -----------------------------------

bpftool map dump pinned "$GN_STAT_PIN_DIR/gn_flows" -j >"$tmp/bpftool.json" 2>&1 || true
check keys "$tmp/bpftool.json" "$STAT_H" "$JOB" dpdk,dpdk
check keys "$tmp/bpftool.json" "$STAT_H" "$((JOB + 1))" dpdk,dpdk,udp

# ---- detach -----------------------------------------------------------------

ok=1
# One link per probe site of each of the 5 ranks, the programs they hold.
nlinks=$(find "$GN_STAT_PIN_DIR/links" -type f 2>/dev/null | wc -l)
sites=$(sed -n 's/^attached \([0-9]*\) probe sites .* in process .*/\1/p' \
	"$tmp/attach" | awk '{ s += $1; n++ } END { if (n == 5) print s + 0 }')
ids=$(gn_stat_link_progs)
if [ "$nlinks" -ne "${sites:-0}" ] || [ "$nlinks" -eq 0 ] || [ -z "$ids" ]; then
	gn_diag "$nlinks links pinned, ${sites:-?} probe sites attached in 5 processes, programs $ids"
	ok=0
fi
"$STAT" detach >/dev/null || ok=0
[ ! -e "$GN_STAT_PIN_DIR" ] || { gn_diag "$GN_STAT_PIN_DIR is left"; ok=0; }
# shellcheck disable=SC2086 # one id per word
gn_progs_gone $ids || ok=0
gn_result "$ok" "detach: the $nlinks links and the maps unpinned, none of the $(echo "$ids" | wc -w) programs left loaded"

echo "# $((testno - failed)) passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$testno" -eq 18 ]
