#!/bin/bash
# SPDX-License-Identifier: MIT
#
# mixed_bridge.sh - one gradnet job whose ranks use different data paths
# on one L2 segment: ranks 0 and 1 on the DPDK transport (net_af_packet on
# their host's eth0, which has no kernel address), ranks 2 and 3 on UDP
# sockets, each rank in a network namespace on a bridge (tests/net/lib.sh);
# a fifth host is the attacker. No neighbour list is given: the DPDK ranks
# resolve every peer by ARP and answer the kernels' ARP for their address.
#
#  udp    the same job with four UDP ranks: exactly gn-ref's reference
#  mixed  dense and 3LC: every rank's result is the all-UDP run's, bit for
#         bit, and the DPDK ranks did resolve by ARP
#  queues the dense mixed job with the DPDK ranks on two af_packet queue
#         pairs each (a fanout group the kernel spreads by flow hash) and
#         two codec workers: bit-identical to the all-UDP run, both
#         queues sent on (a peer's frames keep to queue peer % 2)
#  loss   gn-loss (tc BPF, TC_ACT_SHOT) on the UDP hosts' egress and on the
#         bridge ports towards the DPDK hosts: still bit-identical, loss
#         seen by gn-loss and repaired by retransmission
#  forge  gn-forge on the fifth host sends forged packets to DPDK rank 0
#         posing as rank 2 (another source, a wrong MAC tag, another job,
#         malformed, another version, a replay of a step that is over):
#         results exact, and rank 0's drops rise by exactly the packets
#         forged of each kind ('replay' by at most the job's retransmits
#         more); the results are a clean run's of the same job (gn-ref
#         computes at most 8 steps); and gn-frame-forge sends malformed
#         frames (truncated, bad lengths, bad checksums, another
#         protocol, port or ether type) from a packet socket: rank 0's
#         filter counts exactly those sent of each reason
#  spoof  the fifth host claims UDP host 2's address by ARP at its own
#         MAC, to both DPDK ranks in the middle of a long job (to them
#         alone: the kernels' ARP is not under test): gratuitous ARP,
#         replies to requests nobody sent, requests. ARP moves no
#         learnt peer: the results are the clean run's, no DPDK rank moved
#         a peer, each counted the ARP it ignored, and not one of the
#         job's datagrams reached the fifth host (gn-loss counts its
#         ingress)
#  moved  a UDP host takes a new MAC address in the middle of a long job;
#         its kernel forgets its neighbours and asks for the DPDK ranks
#         again; its first authenticated datagram from the new address
#         moves it there: the job finishes with the clean run's results,
#         each DPDK rank counted the move
#  quiet  the same, but the host (its rank stopped meanwhile) speaks no
#         ARP at all: every host has permanent neighbour entries for it
#         and it for them, and it answers no request (arp_ignore=8). Only
#         its datagrams, authenticated, say where it is now; the DPDK
#         ranks move it all the same
#  announced  as moved, with arp_notify on the host (its rank stopped
#         meanwhile): its kernel announces the new MAC (gratuitous ARP),
#         which the DPDK ranks ignore; its datagrams move it
#  xdp    the mixed dense job again with the DPDK ranks on net_af_xdp
#         (copy mode, one queue): bit-identical to the all-UDP run, no
#         XDP program left on their interfaces once they exit; and one
#         process opens three contexts on the port in a row (the port
#         stays up between them), is refused a fourth at another MTU
#         (DPDK 22.11 cannot close and make the port again in one
#         process), and leaves no XDP program either
#  jumbo  links at MTU 3500: a DPDK rank on net_af_xdp refuses a job MTU
#         its page-sized UMEM chunks cannot hold, naming the largest they
#         can; at that MTU the mixed dense job is bit-identical to the
#         reference, in packets over 1500 bytes
#
# The UDP hosts send with checksum and segmentation offload off, as a NIC
# on a wire would deliver: on a veth the kernel leaves checksums partial
# and UDP GSO batches whole, and net_af_packet (DPDK 22.11) passes both
# on as they are.
#
# usage: mixed_bridge.sh GN_RANK_TEST GN_REF GN_LOSS GN_FORGE GN_FRAME_FORGE GN_REOPEN
# Nothing skips: a host that cannot run this fails the test.

set -eu

here=$(cd "$(dirname "$0")" && pwd)
GN_NS_PREFIX=dpdk-more-$$
GN_SKIP_RC=1
# shellcheck source=tests/net/lib.sh
. "$here/../net/lib.sh"

RANK_BIN=$1
REF_BIN=$2
LOSS_BIN=$3
FORGE_BIN=$4
FRAME_BIN=$5
REOPEN_BIN=$6
WORLD=4
NDPDK=2			# ranks 0..NDPDK-1 are on DPDK
PORT=7000
ELEMS=1000003
MTU=1500		# the job's (GN_MTU)
STEPS=3
FORGE_STEPS=1500
FORGE_COUNT=40
RUN_LIMIT=120
DPDK_VDEV=net_af_packet0,iface=eth0	# the DPDK ranks' port (xdp: net_af_xdp)
KEY=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
JOB=$((RANDOM * 32768 + RANDOM + 1))
testno=0
failed=0
pids=()

for b in "$RANK_BIN" "$REF_BIN" "$LOSS_BIN" "$FORGE_BIN" "$FRAME_BIN" "$REOPEN_BIN"; do
	if [ ! -x "$b" ]; then
		echo "1..0 # $b is not built"
		exit 1
	fi
done
gn_require_net

tmp=$(mktemp -d)
gn_on_cleanup 'stop_ranks'
gn_on_cleanup "rm -rf '$tmp' /var/run/dpdk/$GN_NS_PREFIX.* 2>/dev/null"
gn_net_setup $((WORLD + 1))

PEERS=
for ((k = 0; k < WORLD; k++)); do
	PEERS="$PEERS${PEERS:+,}$(gn_host_addr "$k"):$PORT"
done
for ((k = NDPDK; k <= WORLD; k++)); do
	gn_host_exec "$k" ethtool -K eth0 tx off >/dev/null 2>&1
done
# br_netfilter (when loaded) checks IP headers and reassembles fragments
# in the bridge, where a switch would not: off, so the malformed frames
# reach the DPDK rank.
gn_bridge_exec sysctl -qw net.bridge.bridge-nf-call-iptables=0 \
	net.bridge.bridge-nf-call-ip6tables=0 \
	net.bridge.bridge-nf-call-arptables=0 2>/dev/null || true

echo "TAP version 13"
echo "1..22"

stop_ranks() {
	local pid

	for pid in "${pids[@]}"; do
		kill -9 "$pid" 2>/dev/null || true
		{ wait "$pid"; } 2>/dev/null || true
	done
	pids=()
}

# The CPUs this process may use, one per rank in turn.
mapfile -t cpus < <(sed -n 's/^Cpus_allowed_list:\s*//p' /proc/self/status |
	tr ',' '\n' | while IFS=- read -r a b; do seq "$a" "${b:-$a}"; done)

# eal PREFIX CPU: the EAL arguments of a DPDK process on $DPDK_VDEV.
eal() {
	echo "--no-huge -m 1024 --no-pci --no-telemetry -l $2 --file-prefix=$GN_NS_PREFIX.$1 --vdev=$DPDK_VDEV --log-level=*:warning"
}

# start_rank NAME K PATH ARGS...: rank K on PATH (udp or dpdk) in host K.
start_rank() {
	local name=$1 k=$2 path=$3 cpu=${cpus[$(($2 % ${#cpus[@]}))]}
	local -a dpdk=()

	shift 3
	if [ "$path" = dpdk ]; then
		dpdk=(GN_DPDK_STATS="$tmp/$name.$k.stats"
		      GN_DPDK_EAL="$(eal "$name.$k" "$cpu")")
	fi
	session=
	[ "$k" -eq 0 ] && session=$tmp/$name.session
	ip netns exec "$(gn_host_ns "$k")" env GN_RANK="$k" \
		GN_WORLD_SIZE="$WORLD" GN_PEERS="$PEERS" GN_KEY="$KEY" \
		GN_JOB="$JOB" GN_MTU="$MTU" GN_TRANSPORT="$path" "${dpdk[@]}" \
		${session:+GN_TEST_SESSION_FILE=$session} \
		"$RANK_BIN" --warmup 0 --out "$tmp/$name.$k.out" "$@" \
		>"$tmp/$name.$k.json" 2>"$tmp/$name.$k.err" &
	pids[k]=$!
}

# net_state: the network as the hosts see it, as TAP comments, for a job
# that failed: each host's neighbours and its UDP and ICMP counters
# (datagrams to a port nobody holds, unreachables sent and taken), and
# the addresses the bridge learnt.
net_state() {
	local k c

	for ((k = 0; k <= WORLD; k++)); do
		c=$(gn_host_exec "$k" nstat -az UdpNoPorts IcmpInDestUnreachs \
			IcmpOutDestUnreachs 2>/dev/null |
			awk '/^[A-Z]/ { printf "%s=%s ", $1, $2 }')
		gn_diag "host $k: $(gn_host_exec "$k" ip neigh show dev eth0 |
			tr '\n' ';') $c"
	done
	gn_diag "bridge: $(gn_bridge_exec bridge fdb show br br0 dynamic |
		tr '\n' ';')"
}

# job_result OK MSG: gn_result, with net_state first if the job failed.
job_result() {
	[ "$1" -eq 1 ] || net_state
	gn_result "$1" "$2"
}

# start_job NAME NDPDK ARGS...: the first NDPDK ranks on DPDK, the rest UDP.
start_job() {
	local name=$1 n=$2 k

	shift 2
	for ((k = 0; k < WORLD; k++)); do
		if [ "$k" -lt "$n" ]; then
			start_rank "$name" "$k" dpdk "$@"
		else
			start_rank "$name" "$k" udp "$@"
		fi
	done
}

field() {
	sed -n "s/.*\"$1\": *\([0-9]*\).*/\1/p" "$2"
}

drops() {
	sed -n "s/.*\"drops\": {[^}]*\"$1\": \([0-9]*\).*/\1/p" "$2"
}

# same_out NAME REF: every rank of NAME wrote exactly the file REF.
same_out() {
	local k

	for ((k = 0; k < WORLD; k++)); do
		cmp -s "$2" "$tmp/$1.$k.out" || return 1
	done
}

sum_field() {
	local k s=0 v

	for ((k = 0; k < WORLD; k++)); do
		v=$(field "$1" "$tmp/$2.$k.json")
		s=$((s + ${v:-0}))
	done
	echo "$s"
}

# ---- all UDP, then mixed ----------------------------------------------------

for codec in 3lc none; do
	name=udp-$codec
	ok=1
	"$REF_BIN" --world "$WORLD" --elems "$ELEMS" --steps "$STEPS" \
		--codec "$codec" --out "$tmp/ref-$codec" >&2 || ok=0
	start_job "$name" 0 --elems "$ELEMS" --steps "$STEPS" --codec "$codec"
	gn_wait_ranks "$name" || ok=0
	[ "$ok" -eq 1 ] && same_out "$name" "$tmp/ref-$codec" || ok=0
	gn_result "$ok" "$name: $WORLD UDP ranks on the bridge give the reference"
done

# The DPDK hosts' kernels give up their address: the DPDK ranks own it.
for ((k = 0; k < NDPDK; k++)); do
	gn_host_exec "$k" ip addr flush dev eth0
done

for codec in 3lc none; do
	name=mixed-$codec
	ok=1
	start_job "$name" "$NDPDK" --elems "$ELEMS" --steps "$STEPS" \
		--codec "$codec"
	gn_wait_ranks "$name" || ok=0
	[ "$ok" -eq 1 ] && same_out "$name" "$tmp/udp-$codec.0.out" || ok=0
	job_result "$ok" "$name: $NDPDK DPDK (af_packet) + $((WORLD - NDPDK)) UDP ranks: bit-identical to the all-UDP run"
	ok=1
	for ((k = 0; k < NDPDK; k++)); do
		gn_diag "$name: rank $k filter $(cat "$tmp/$name.$k.stats" 2>/dev/null)"
		n=$(field arp_asked "$tmp/$name.$k.stats")
		[ "${n:-0}" -gt 0 ] || ok=0
	done
	gn_result "$ok" "$name: the DPDK ranks resolved their peers by ARP"
done

# ---- two queue pairs a DPDK rank -------------------------------------------

# net_af_packet with two queue pairs (two sockets in one fanout group,
# which the kernel spreads by flow hash), GN_DPDK_QUEUES=2 and two codec
# workers a rank: the dense mixed job is bit-identical to the all-UDP
# run; each DPDK rank sent on both queues (a peer's frames keep to queue
# peer % 2, and each has peers of both parities) and resolved its peers
# by ARP (the replies may come in on either socket). Which queue received
# which peer's flow is the kernel's hash: shown, not asserted.
name=queues-none
ok=1
DPDK_VDEV=net_af_packet0,iface=eth0,qpairs=2
export GN_DPDK_QUEUES=2 GN_CODEC_WORKERS=2
start_job "$name" "$NDPDK" --elems "$ELEMS" --steps "$STEPS" --codec none
unset GN_DPDK_QUEUES GN_CODEC_WORKERS
DPDK_VDEV=net_af_packet0,iface=eth0
gn_wait_ranks "$name" || ok=0
[ "$ok" -eq 1 ] && same_out "$name" "$tmp/udp-none.0.out" || ok=0
for ((k = 0; k < NDPDK; k++)); do
	q=$(gn_dpdk_queues "$tmp/$name.$k.stats")
	gn_diag "$name: rank $k queues (rx, tx) $q"
	read -r rx0 tx0 rx1 tx1 rest <<<"$q"
	[ "${tx0:-0}" -gt 0 ] && [ "${tx1:-0}" -gt 0 ] &&
		[ $((${rx0:-0} + ${rx1:-0})) -gt 0 ] && [ -z "${rest:-}" ] || ok=0
	n=$(field arp_asked "$tmp/$name.$k.stats")
	[ "${n:-0}" -gt 0 ] || ok=0
done
job_result "$ok" "$name: DPDK ranks on two af_packet queue pairs each: bit-identical to the all-UDP run, both queues sent on, peers resolved by ARP"

# ---- loss on the kernel side ----------------------------------------------

# loss_attach PPM: gn-loss on the UDP hosts' egress and the bridge ports
# that lead to the DPDK hosts.
loss_attach() {
	local k

	for ((k = NDPDK; k < WORLD; k++)); do
		gn_host_exec "$k" "$LOSS_BIN" attach --dev eth0 --egress \
			--ppm "$1" --ports "$PORT" >/dev/null
	done
	for ((k = 0; k < NDPDK; k++)); do
		gn_bridge_exec "$LOSS_BIN" attach --dev "p$k" --egress \
			--ppm "$1" --ports "$PORT" >/dev/null
	done
}

# loss_detach: print the packets gn-loss dropped everywhere, then detach.
loss_detach() {
	local k n=0 v

	for ((k = NDPDK; k < WORLD; k++)); do
		v=$(gn_host_exec "$k" "$LOSS_BIN" stats --dev eth0 --egress |
			sed -n 's/.*"dropped_segs":\([0-9]*\).*/\1/p')
		n=$((n + ${v:-0}))
		gn_host_exec "$k" "$LOSS_BIN" detach --dev eth0 >/dev/null
	done
	for ((k = 0; k < NDPDK; k++)); do
		v=$(gn_bridge_exec "$LOSS_BIN" stats --dev "p$k" --egress |
			sed -n 's/.*"dropped_segs":\([0-9]*\).*/\1/p')
		n=$((n + ${v:-0}))
		gn_bridge_exec "$LOSS_BIN" detach --dev "p$k" >/dev/null
	done
	echo "$n"
}

for codec in 3lc none; do
	name=loss-$codec
	ok=1
	loss_attach 50000
	start_job "$name" "$NDPDK" --elems "$ELEMS" --steps "$STEPS" \
		--codec "$codec"
	gn_wait_ranks "$name" || ok=0
	lost=$(loss_detach)
	rtx=$(sum_field retransmits "$name")
	gn_diag "$name: gn-loss dropped $lost datagrams, the ranks retransmitted $rtx"
	[ "$ok" -eq 1 ] && same_out "$name" "$tmp/udp-$codec.0.out" || ok=0
	[ "$lost" -gt 0 ] && [ "$rtx" -gt 0 ] || ok=0
	job_result "$ok" "$name: 5% loss on the kernel side (tc BPF): bit-identical to the all-UDP run, loss repaired"
done

# ---- forged packets into a DPDK rank --------------------------------------

# joined NAME SECS: step 1 of job NAME is over (soon after rank 0 wrote its
# session), plus a moment.
joined() {
	for _ in $(seq 100); do
		[ -s "$tmp/$1.session" ] && break
		sleep 0.1
	done
	sleep "$2"
}

# The clean run of the forged job, for its results and drop counts.
ok=1
start_job forge-clean "$NDPDK" --elems "$ELEMS" --steps "$FORGE_STEPS" \
	--codec 3lc
gn_wait_ranks forge-clean || ok=0
gn_diag "forge-clean: rank 0 $(cat "$tmp/forge-clean.0.json")"
name=forge
# The fifth host's kernel knows rank 0's MAC before the burst: packets
# sent while it resolves wait in a queue of about a hundred (unres_qlen)
# and the rest are dropped, so a rank slow to answer ARP (under ASan,
# once) counted 16 of each kind's 40.
mac0=$(gn_host_exec 0 cat /sys/class/net/eth0/address)
gn_host_exec "$WORLD" ip neigh replace "$(gn_host_addr 0)" lladdr "$mac0" \
	dev eth0 nud permanent
start_job "$name" "$NDPDK" --elems "$ELEMS" --steps "$FORGE_STEPS" --codec 3lc
joined "$name" 0.5
seed=$RANDOM
gn_host_exec "$WORLD" "$FORGE_BIN" --to "$(gn_host_addr 0):$PORT" \
	--to-rank 0 --as "$(gn_host_addr 2):$PORT" --as-rank 2 \
	--world "$WORLD" --job "$JOB" --key "$KEY" --elems "$ELEMS" \
	--step 1 --count "$FORGE_COUNT" --seed "$seed" \
	--session "$tmp/$name.session" \
	>"$tmp/forge.sent" 2>"$tmp/forge.err" || cat "$tmp/forge.err" >&2
gn_host_exec "$WORLD" ip neigh del "$(gn_host_addr 0)" dev eth0
gn_host_exec "$WORLD" "$FRAME_BIN" --dev eth0 --to-mac "$mac0" \
	--to "$(gn_host_addr 0):$PORT" --as "$(gn_host_addr 2):$PORT" \
	--count "$FORGE_COUNT" >"$tmp/frames.sent" 2>"$tmp/frames.err" ||
	cat "$tmp/frames.err" >&2
for ((k = 0; k < WORLD; k++)); do
	gn_alive "${pids[k]}" || ok=0
done
[ "$ok" -eq 1 ] || gn_diag "forge: the job ended before the forgers did"
gn_diag "forge: gn-frame-forge sent $(cat "$tmp/frames.sent")"
gn_diag "forge: gn-forge --seed $seed sent $(cat "$tmp/forge.sent")"
gn_wait_ranks "$name" || ok=0
gn_diag "forge: rank 0 $(cat "$tmp/$name.0.json")"
[ "$ok" -eq 1 ] && same_out "$name" "$tmp/forge-clean.0.out" &&
	same_out forge-clean "$tmp/forge-clean.0.out" || ok=0
job_result "$ok" "forge: forged packets into DPDK rank 0 of a live job: every rank's result is the clean run's"

ok=1
for r in source mac job malformed version; do
	sent=$(field "$r" "$tmp/forge.sent")
	got=$(drops "$r" "$tmp/$name.0.json")
	base=$(drops "$r" "$tmp/forge-clean.0.json")
	gn_diag "forge: $r: forged ${sent:-?}, rank 0 counted ${got:-?} (clean run: ${base:-?})"
	[ "${sent:-0}" -eq "$FORGE_COUNT" ] && [ "${base:-1}" -eq 0 ] &&
		[ "${got:--1}" -eq "$sent" ] || ok=0
done
sent=$(field replay "$tmp/forge.sent")
got=$(drops replay "$tmp/$name.0.json")
rtx=$(sum_field retransmits "$name")
gn_diag "forge: replay: forged ${sent:-?}, rank 0 counted ${got:-?}, the job retransmitted $rtx"
[ "${sent:-0}" -eq "$FORGE_COUNT" ] && [ "${got:--1}" -ge "$sent" ] &&
	[ "${got:--1}" -le $((sent + rtx)) ] || ok=0
gn_result "$ok" "forge: DPDK rank 0 dropped and counted every forged packet by its reason"

ok=1
gn_diag "forge: rank 0 filter $(cat "$tmp/forge.0.stats" 2>/dev/null)"
# Not 'fragment': net_af_packet joins a fanout group with the kernel's
# defragmentation flag, so a lone fragment never reaches the rank (the
# filter's own test, dpdk-filter, covers it). ICMP from the UDP hosts'
# kernels (port unreachable once their rank has left) counts apart.
for r in ip_header udp_len ip_csum udp_csum not_udp dst_port ethertype; do
	sent=$(field "$r" "$tmp/frames.sent")
	got=$(drops "$r" "$tmp/forge.0.stats")
	base=$(drops "$r" "$tmp/forge-clean.0.stats")
	[ "${sent:-0}" -eq "$FORGE_COUNT" ] && [ "${base:-1}" -eq 0 ] &&
		[ "${got:--1}" -eq "$sent" ] ||
		{ gn_diag "forge: $r: sent ${sent:-?}, rank 0 filter counted ${got:-?} (clean run: ${base:-?})"; ok=0; }
done
gn_result "$ok" "forge: malformed frames dropped by DPDK rank 0's filter, each counted by its reason"

# ---- a neighbour claims a peer's address by ARP --------------------------

name=spoof
ok=1
att_mac=$(gn_host_exec "$WORLD" cat /sys/class/net/eth0/address)
gn_host_exec "$WORLD" "$LOSS_BIN" attach --dev eth0 --ingress --ppm 0 \
	--ports "$PORT" >/dev/null || ok=0
start_job "$name" "$NDPDK" --elems "$ELEMS" --steps "$FORGE_STEPS" --codec 3lc
joined "$name" 0.5
forgers=()
for ((k = 0; k < NDPDK; k++)); do
	gn_host_exec "$WORLD" "$FRAME_BIN" --arp --from-mac "$att_mac" \
		--dev eth0 --to-mac "$(gn_host_exec "$k" cat /sys/class/net/eth0/address)" \
		--to "$(gn_host_addr "$k"):$PORT" --as "$(gn_host_addr 2):$PORT" \
		--count "$FORGE_COUNT" --gap-us 5000 \
		>"$tmp/$name.arp.$k" 2>"$tmp/$name.arp.$k.err" &
	forgers+=($!)
done
for pid in "${forgers[@]}"; do
	wait "$pid" || ok=0
done
for ((k = 0; k < WORLD; k++)); do
	gn_alive "${pids[k]}" || ok=0
done
[ "$ok" -eq 1 ] || gn_diag "$name: the job ended before the ARP did, or a forger failed"
gn_wait_ranks "$name" || ok=0
[ "$ok" -eq 1 ] && same_out "$name" "$tmp/forge-clean.0.out" || ok=0
job_result "$ok" "$name: ARP claiming a UDP host's address, to the DPDK ranks of a live job: every rank's result is the clean run's"

ok=1
seen=$(gn_host_exec "$WORLD" "$LOSS_BIN" stats --dev eth0 --ingress |
	sed -n 's/.*"seen":\([0-9]*\).*/\1/p')
gn_host_exec "$WORLD" "$LOSS_BIN" detach --dev eth0 >/dev/null
gn_diag "$name: the fifth host took in ${seen:-?} of the job's datagrams"
[ "${seen:--1}" -eq 0 ] || ok=0
for ((k = 0; k < NDPDK; k++)); do
	gn_diag "$name: forger sent to rank $k: $(cat "$tmp/$name.arp.$k")"
	gn_diag "$name: rank $k filter $(cat "$tmp/$name.$k.stats" 2>/dev/null)"
	n=$(field reply "$tmp/$name.arp.$k")
	a=$(field announce "$tmp/$name.arp.$k")
	[ "${n:-0}" -eq "$FORGE_COUNT" ] && [ "${a:-0}" -eq "$FORGE_COUNT" ] ||
		ok=0
	moved=$(field arp_moved "$tmp/$name.$k.stats")
	ignored=$(field arp_ignored "$tmp/$name.$k.stats")
	[ "${moved:--1}" -eq 0 ] &&
		[ "${ignored:-0}" -ge $((${n:-0} + ${a:-0})) ] || ok=0
	grep -h "is now at" "$tmp/$name.$k.err" 2>/dev/null |
		while read -r line; do gn_diag "$name: rank $k: $line"; done
done
gn_result "$ok" "$name: no DPDK rank moved the UDP host, each ignored the ARP, and no datagram of the job reached the fifth host"

# ---- a UDP host moves to another MAC address ---------------------------

# mac_of K: host K's MAC address.
mac_of() {
	gn_host_exec "$1" cat /sys/class/net/eth0/address
}

# move_host NAME K MAC [quiet|announced]: host K takes MAC in the middle
# of job NAME (its rank 0 wrote the session, so step 1 is over), with
# rank K stopped meanwhile for quiet and announced; quiet: every host
# gets permanent neighbour entries for host K and K for every host, and K
# answers no ARP request.
move_host() {
	local name=$1 k=$2 mac=$3 quiet=${4:-} j

	joined "$name" 1
	[ -n "$quiet" ] && kill -STOP "${pids[k]}"
	[ "$quiet" = announced ] &&
		gn_host_exec "$k" sysctl -qw net.ipv4.conf.eth0.arp_notify=1
	gn_host_exec "$k" ip link set dev eth0 address "$mac"
	if [ "$quiet" = quiet ]; then
		for ((j = 0; j < WORLD; j++)); do
			[ "$j" -eq "$k" ] && continue
			gn_host_exec "$k" ip neigh replace "$(gn_host_addr "$j")" \
				lladdr "$(mac_of "$j")" dev eth0 nud permanent
			[ "$j" -lt "$NDPDK" ] && continue
			gn_host_exec "$j" ip neigh replace "$(gn_host_addr "$k")" \
				lladdr "$mac" dev eth0 nud permanent
		done
		gn_host_exec "$k" sysctl -qw net.ipv4.conf.eth0.arp_ignore=8
	fi
	if [ -n "$quiet" ]; then
		kill -CONT "${pids[k]}"
	fi
}

# unquiet K: host K and the UDP hosts back to ARP as usual.
unquiet() {
	local j

	gn_host_exec "$1" sysctl -qw net.ipv4.conf.eth0.arp_ignore=0
	for ((j = NDPDK; j < WORLD; j++)); do
		gn_host_exec "$j" ip neigh flush dev eth0 nud permanent
	done
}

for how in moved quiet announced; do
	name=$how
	ok=1
	case $how in
	moved) k=2 quiet= mac=02:00:00:00:4d:02 ;;
	quiet) k=3 quiet=quiet mac=02:00:00:00:4d:03 ;;
	*) k=2 quiet=announced mac=02:00:00:00:4d:12 ;;
	esac
	start_job "$name" "$NDPDK" --elems "$ELEMS" --steps "$FORGE_STEPS" \
		--codec 3lc
	move_host "$name" "$k" "$mac" "$quiet"
	for ((j = 0; j < WORLD; j++)); do
		gn_alive "${pids[j]}" || ok=0
	done
	[ "$ok" -eq 1 ] || gn_diag "$name: the job ended before host $k moved"
	gn_wait_ranks "$name" || ok=0
	if [ "$quiet" = quiet ]; then
		unquiet "$k"
	fi
	[ "$ok" -eq 1 ] && same_out "$name" "$tmp/forge-clean.0.out" || ok=0
	for ((j = 0; j < NDPDK; j++)); do
		gn_diag "$name: rank $j filter $(cat "$tmp/$name.$j.stats" 2>/dev/null)"
		n=$(field arp_moved "$tmp/$name.$j.stats")
		[ "${n:-0}" -ge 1 ] || ok=0
		n=$(field arp_ignored "$tmp/$name.$j.stats")
		[ "$how" != announced ] || [ "${n:-0}" -ge 1 ] || ok=0
	done
	grep -h "is now at" "$tmp/$name".[0-9].err 2>/dev/null |
		while read -r line; do gn_diag "$name: $line"; done
	job_result "$ok" "$name: host $k takes a new MAC address mid-job ($how): its authenticated datagrams move it, results are the clean run's"
done

# ---- net_af_xdp -------------------------------------------------------------

# The DPDK ranks on net_af_xdp (copy mode) instead of net_af_packet, dense
# so that thousands of frames pass through the rx pool, which DPDK 22.11
# registers as the AF_XDP socket's UMEM: a pool laid out wider than that
# UMEM lost every frame whose buffer lay beyond it, and the job stalled.
# One queue on the DPDK hosts' veths and their bridge ports: a frame
# hashed to a queue without an AF_XDP socket would reach a kernel that
# does not own the address.
name=xdp-none
ok=1
for ((k = 0; k < NDPDK; k++)); do
	if ! gn_host_exec "$k" ethtool -L eth0 rx 1 tx 1 ||
	   ! gn_bridge_exec ethtool -L "p$k" rx 1 tx 1; then
		gn_diag "$name: cannot give host $k's veth one queue"
		ok=0
	fi
done
DPDK_VDEV=net_af_xdp0,iface=eth0,start_queue=0,queue_count=1
start_job "$name" "$NDPDK" --elems "$ELEMS" --steps "$STEPS" --codec none
gn_wait_ranks "$name" || ok=0
[ "$ok" -eq 1 ] && same_out "$name" "$tmp/udp-none.0.out" || ok=0
for ((k = 0; k < NDPDK; k++)); do
	gn_diag "$name: rank $k filter $(cat "$tmp/$name.$k.stats" 2>/dev/null)"
done
job_result "$ok" "$name: $NDPDK DPDK (af_xdp) + $((WORLD - NDPDK)) UDP ranks, dense: bit-identical to the all-UDP run"

# A rank that ends closes its port, which takes the XDP program off the
# interface; a port only stopped would leave it attached.
ok=1
for ((k = 0; k < NDPDK; k++)); do
	if gn_host_exec "$k" ip link show dev eth0 | grep -q 'prog/xdp'; then
		gn_diag "$name: host $k's eth0 still has an XDP program: $(gn_host_exec "$k" ip link show dev eth0 | tr '\n' ' ')"
		ok=0
	fi
done
gn_result "$ok" "$name: the ranks' exit took the XDP program off their interfaces"

# Three contexts in a row in one process: the port stays up between
# them. A fourth at MTU 1400 would need the port made anew, which DPDK
# 22.11's net_af_xdp cannot do in one process (a closed port's socket
# stays bound): refused, naming the shape the port has. No XDP program
# is left attached once the process exits.
# The key from a file: gradnet takes GN_KEY out of the environment.
ok=0
(umask 077 && echo "$KEY" >"$tmp/key")
ip netns exec "$(gn_host_ns 0)" env GN_RANK=0 GN_WORLD_SIZE=1 \
	GN_PEERS="$(gn_host_addr 0):$PORT" GN_KEY_FILE="$tmp/key" GN_TRANSPORT=dpdk \
	GN_DPDK_EAL="$(eal reopen "${cpus[0]}")" \
	"$REOPEN_BIN" --contexts 4 --mtus 1500,1500,1500,1400 \
	>"$tmp/reopen.out" 2>"$tmp/reopen.err" || true
[ "$(grep -c '^open [0-2] 0 ' "$tmp/reopen.out")" -eq 3 ] &&
	grep -q "^open 3 -22 .*set up for MTU 1500, 1 queue pairs.*in a new process" \
		"$tmp/reopen.out" && ok=1
gn_diag "$name: reopen: $(tr '\n' ' ' <"$tmp/reopen.out")"
[ "$ok" -eq 1 ] || gn_diag "$name: reopen: $(grep -v '^EAL' "$tmp/reopen.err" | tail -3 | tr '\n' ' ')"
if gn_host_exec 0 ip link show dev eth0 | grep -q 'prog/xdp'; then
	gn_diag "$name: host 0's eth0 still has an XDP program after the reopens"
	ok=0
fi
gn_result "$ok" "$name: one process opens three contexts in a row on the af_xdp port, is refused another MTU with -EINVAL saying why, and leaves no XDP program"

# ---- jumbo frames over net_af_xdp -------------------------------------------

# The links (and so the kernels' UDP ranks) take frames of 3500 bytes;
# net_af_xdp holds a received frame in one page with its headroom, so a
# DPDK rank asked for MTU 3500 must refuse and name the largest it can
# take; at that MTU every packet of a dense job is over 1500 bytes.
name=xdp-jumbo
ok=1
for ((k = 0; k <= WORLD; k++)); do
	gn_bridge_exec ip link set dev "p$k" mtu 3500 &&
		gn_host_exec "$k" ip link set dev eth0 mtu 3500 || ok=0
done
gn_bridge_exec ip link set dev br0 mtu 3500 || ok=0
ip netns exec "$(gn_host_ns 0)" env GN_RANK=0 GN_WORLD_SIZE=1 \
	GN_PEERS="$(gn_host_addr 0):$PORT" GN_KEY="$KEY" GN_MTU=3500 \
	GN_TRANSPORT=dpdk GN_DPDK_EAL="$(eal jumbo "${cpus[0]}")" \
	"$RANK_BIN" --warmup 0 --elems 1 --steps 1 >/dev/null 2>"$tmp/jumbo.err" && ok=0
top=$(sed -n "s/.*invalid argument: .*net_af_xdp.* an MTU of at most \([0-9]*\), the job's is 3500.*/\1/p" \
	"$tmp/jumbo.err" | head -1)
gn_diag "$name: MTU 3500: $(tr '\n' ' ' <"$tmp/jumbo.err")"
[ -n "$top" ] && [ "$top" -gt 1500 ] && [ "$top" -lt 3500 ] || ok=0
gn_result "$ok" "$name: MTU 3500 over net_af_xdp is refused with -EINVAL, naming the largest it holds (${top:-none})"

ok=0
if [ -n "$top" ]; then
	ok=1
	MTU=$top
	start_job "$name" "$NDPDK" --elems "$ELEMS" --steps "$STEPS" --codec none
	gn_wait_ranks "$name" || ok=0
	[ "$ok" -eq 1 ] && same_out "$name" "$tmp/ref-none" || ok=0
	for ((k = 0; k < WORLD; k++)); do
		bytes=$(field wire_bytes "$tmp/$name.$k.json")
		n=$(field tx_packets "$tmp/$name.$k.json")
		gn_diag "$name: rank $k sent ${n:-?} packets, ${bytes:-?} bytes"
		[ "${n:-0}" -gt 0 ] && [ $((${bytes:-0} / n)) -gt 1500 ] || ok=0
	done
fi
gn_result "$ok" "$name: MTU ${top:-?}: $NDPDK DPDK (af_xdp) + $((WORLD - NDPDK)) UDP ranks, dense: bit-identical to the reference, packets over 1500 bytes"

[ "$failed" -eq 0 ]
