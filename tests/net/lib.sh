# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# lib.sh - sourced by the netns tests and benchmarks: builds a star of N
# "hosts", each a network namespace whose eth0 is one end of a veth pair,
# the other end a port of a bridge that lives in a namespace of its own.
# Nothing is created in the root namespace. Names carry the PID and a random
# suffix so concurrent runs never meet.
#
#   host k:  netns $GN_NS_PREFIX-h<k>, eth0 = $GN_NET_PREFIX.<k+1>/24
#   switch:  netns $GN_NS_PREFIX-br, br0 = $GN_NET_PREFIX.254/24, ports p<k>
#
# A link rate (tbf) shapes both directions of a host's link, as a switch
# port would: host eth0 egress and the bridge port's egress towards the host.
#
# Usage:
#   . tests/net/lib.sh
#   gn_net_setup 4 --rate 1gbit --mtu 9000
#   gn_host_exec 0 ip -s link show dev eth0
# gn_net_setup installs `cleanup` as the EXIT trap; a script that wants its
# own teardown registers it with gn_on_cleanup. The gradnet-stat tests
# find the programs behind its pinned links with gn_stat_link_progs, and
# check with gn_progs_gone that detach unloaded them.

GN_NET_PREFIX=${GN_NET_PREFIX:-10.77.0}
GN_NS_PREFIX=${GN_NS_PREFIX:-gn$$-$RANDOM}
GN_SKIP_RC=${GN_SKIP_RC:-4}
GN_NET_HOSTS=0
GN_NET_RATE=none
GN_NET_MTU=1500
GN_NET_UP=
GN_CLEANUP_HOOKS=()

# gn_skip MSG: print a TAP skip plan and exit with the skip code.
gn_skip() {
	echo "1..0 # SKIP $*"
	exit "$GN_SKIP_RC"
}

# gn_result OK NAME: print one TAP line, counting in $testno and $failed.
gn_result() {
	testno=$((testno + 1))
	if [ "$1" -eq 1 ]; then
		echo "ok $testno - $2"
	else
		echo "not ok $testno - $2"
		failed=$((failed + 1))
	fi
}

# gn_diag MSG: a TAP comment.
gn_diag() {
	echo "# $*"
}

# gn_dpdk_queues STATS: the frame counts of a GN_DPDK_STATS file's
# "queues", rx and tx of queue 0, then of queue 1 and on, on one line.
gn_dpdk_queues() {
	{ grep -o '"queues": .*' "$1" 2>/dev/null || true; } |
		grep -o '[0-9][0-9]*' | tr '\n' ' '
}

# gn_require_net: skip unless root with working netns, veth, bridge and tbf.
gn_require_net() {
	local probe="$GN_NS_PREFIX-probe"

	[ "$(id -u)" -eq 0 ] || gn_skip "needs root"
	command -v ip >/dev/null || gn_skip "ip (iproute2) missing"
	command -v tc >/dev/null || gn_skip "tc (iproute2) missing"
	ip netns add "$probe" 2>/dev/null || gn_skip "cannot create netns"
	if ! ip -n "$probe" link add gnbr type bridge 2>/dev/null ||
	   ! ip -n "$probe" link add gnv0 type veth peer name gnv1 2>/dev/null ||
	   ! tc -n "$probe" qdisc add dev gnv0 root tbf rate 1gbit \
		burst 256k limit 1m 2>/dev/null; then
		ip netns del "$probe"
		gn_skip "no bridge, veth or tbf support"
	fi
	ip netns del "$probe"
}

# gn_host_ns K: print the namespace name of host K.
gn_host_ns() {
	echo "$GN_NS_PREFIX-h$1"
}

# gn_bridge_ns: print the namespace name of the bridge.
gn_bridge_ns() {
	echo "$GN_NS_PREFIX-br"
}

# gn_host_addr K: print host K's IPv4 address (no prefix length).
gn_host_addr() {
	echo "$GN_NET_PREFIX.$(($1 + 1))"
}

# gn_bridge_addr: print the bridge's own address (for control traffic).
gn_bridge_addr() {
	echo "$GN_NET_PREFIX.254"
}

# gn_net_subnet: print the hosts' subnet in CIDR form.
gn_net_subnet() {
	echo "$GN_NET_PREFIX.0/24"
}

# gn_host_exec K CMD...: run CMD inside host K's namespace.
gn_host_exec() {
	local k=$1

	shift
	ip netns exec "$(gn_host_ns "$k")" "$@"
}

# gn_bridge_exec CMD...: run CMD inside the bridge's namespace.
gn_bridge_exec() {
	ip netns exec "$(gn_bridge_ns)" "$@"
}

# gn_link_bytes K [DEV]: print "rx_bytes tx_bytes" of host K's DEV (eth0).
gn_link_bytes() {
	local s=/sys/class/net/${2:-eth0}/statistics

	gn_host_exec "$1" cat "$s/rx_bytes" "$s/tx_bytes" | tr '\n' ' ' |
		sed 's/ $/\n/'
}

# gn_tbf_args RATE: print the tbf parameters used for RATE (1gbit, 10gbit).
gn_tbf_args() {
	# burst covers one 64 KiB GSO packet and ~1 ms of timer slack at the
	# rate; limit is the queue, ~4 ms at the rate, enough for TCP to fill it.
	case $1 in
	1gbit)	echo "rate 1gbit burst 256kb limit 1mb" ;;
	10gbit)	echo "rate 10gbit burst 2mb limit 5mb" ;;
	*)	echo "gn_tbf_args: unknown rate $1" >&2; return 1 ;;
	esac
}

# gn_ns_quiet NS: loopback up, IPv6 off so no autoconf chatter on counters.
gn_ns_quiet() {
	ip -n "$1" link set lo up
	ip netns exec "$1" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
		net.ipv6.conf.default.disable_ipv6=1 2>/dev/null || true
}

# gn_net_setup N [--rate none|1gbit|10gbit] [--mtu 1500|9000]: build the star.
gn_net_setup() {
	local n=$1 k br host tbf

	shift
	while [ $# -gt 0 ]; do
		case $1 in
		--rate)	GN_NET_RATE=$2; shift 2 ;;
		--mtu)	GN_NET_MTU=$2; shift 2 ;;
		*)	echo "gn_net_setup: unknown option $1" >&2; return 1 ;;
		esac
	done
	if [ "$GN_NET_RATE" != none ]; then
		tbf=$(gn_tbf_args "$GN_NET_RATE") || return 1
	fi
	trap cleanup EXIT
	trap 'exit 1' INT TERM HUP
	GN_NET_UP=1

	br=$(gn_bridge_ns)
	ip netns add "$br"
	gn_ns_quiet "$br"
	ip -n "$br" link add br0 mtu "$GN_NET_MTU" type bridge
	ip -n "$br" addr add "$(gn_bridge_addr)/24" dev br0
	ip -n "$br" link set br0 up
	for ((k = 0; k < n; k++)); do
		host=$(gn_host_ns "$k")
		ip netns add "$host"
		GN_NET_HOSTS=$((k + 1))
		gn_ns_quiet "$host"
		ip -n "$br" link add "p$k" mtu "$GN_NET_MTU" type veth \
			peer name eth0 netns "$host" mtu "$GN_NET_MTU"
		ip -n "$br" link set "p$k" master br0 up
		ip -n "$host" addr add "$(gn_host_addr "$k")/24" dev eth0
		ip -n "$host" link set eth0 up
		if [ -n "${tbf:-}" ]; then
			# shellcheck disable=SC2086 # tbf holds several words
			tc -n "$host" qdisc add dev eth0 root tbf $tbf
			# shellcheck disable=SC2086
			tc -n "$br" qdisc add dev "p$k" root tbf $tbf
		fi
	done
	gn_net_wait
}

# gn_net_wait: wait until every bridge port forwards and every eth0 is up.
gn_net_wait() {
	local k i br

	br=$(gn_bridge_ns)
	for ((k = 0; k < GN_NET_HOSTS; k++)); do
		for ((i = 0; i < 50; i++)); do
			if bridge -n "$br" link show dev "p$k" |
				grep -q 'state forwarding' &&
			   ip -n "$(gn_host_ns "$k")" link show dev eth0 |
				grep -q 'state UP'; then
				break
			fi
			sleep 0.1
		done
		[ "$i" -lt 50 ] || { echo "host $k: link not up" >&2; return 1; }
	done
}

# gn_stat_link_progs: print the ids of the BPF programs that gradnet-stat's
# links pinned under $GN_STAT_PIN_DIR hold, one a line, each once.
gn_stat_link_progs() {
	local f

	for f in "$GN_STAT_PIN_DIR"/links/*; do
		bpftool link show pinned "$f" -j
	done | grep -o '"prog_id":[0-9]*' | cut -d: -f2 | sort -u
}

# gn_progs_gone IDS...: none of the BPF programs IDS is loaded any more; a
# TAP comment names each that still is. It looks after half a second: the
# kernel may let go of a detached program a little later.
gn_progs_gone() {
	local id gone=1

	sleep 0.5
	for id in "$@"; do
		if bpftool prog show id "$id" >/dev/null 2>&1; then
			gn_diag "program $id is still loaded"
			gone=0
		fi
	done
	[ "$gone" -eq 1 ]
}

# gn_alive PID: the process runs (a zombie no longer does).
gn_alive() {
	local st

	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) ||
		return 1
	[ -n "$st" ] && [ "$st" != Z ]
}

# gn_wait_ranks NAME [LIMIT]: wait for the job's ranks, pids[0..WORLD-1],
# at most LIMIT seconds (default RUN_LIMIT) from now; exit codes in rcs[].
# A rank still running then is killed; a rank that fails has its output
# ($tmp/NAME.K.json and .err) in the log. False if any hung or failed.
# pids, rcs, WORLD, RUN_LIMIT and tmp are the calling script's.
# shellcheck disable=SC2154
gn_wait_ranks() {
	local name=$1 limit=${2:-$RUN_LIMIT} end k ok=1

	end=$((SECONDS + limit))
	for ((k = 0; k < WORLD; k++)); do
		while gn_alive "${pids[k]}"; do
			if [ "$SECONDS" -ge "$end" ]; then
				gn_diag "$name: rank $k still running after ${limit}s, killed"
				kill -9 "${pids[k]}" 2>/dev/null || true
				ok=0
			fi
			sleep 0.05
		done
		rcs[k]=0
		wait "${pids[k]}" || rcs[k]=$?
		if [ "${rcs[k]}" -ne 0 ]; then
			gn_diag "$name: rank $k exited ${rcs[k]}: $(cat "$tmp/$name.$k.json" \
				"$tmp/$name.$k.err" | tr '\n' ' ')"
			ok=0
		fi
	done
	pids=()
	[ "$ok" -eq 1 ]
}

# gn_on_cleanup CMD: eval CMD first when cleanup runs (expand values now).
gn_on_cleanup() {
	GN_CLEANUP_HOOKS+=("$1")
}

# gn_ns_kill NS: end the processes left inside namespace NS, by PID.
gn_ns_kill() {
	local pids

	pids=$(ip netns pids "$1" 2>/dev/null) || return 0
	[ -n "$pids" ] || return 0
	# shellcheck disable=SC2086 # one PID per word
	kill $pids 2>/dev/null || true
	sleep 0.2
	pids=$(ip netns pids "$1" 2>/dev/null) || return 0
	# shellcheck disable=SC2086
	[ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
}

# cleanup: run hooks, end leftover processes, delete every namespace; idempotent.
cleanup() {
	local hook ns k

	for hook in "${GN_CLEANUP_HOOKS[@]}"; do
		eval "$hook" || true
	done
	GN_CLEANUP_HOOKS=()
	[ -n "$GN_NET_UP" ] || return 0
	for ((k = 0; k < GN_NET_HOSTS; k++)); do
		ns=$(gn_host_ns "$k")
		gn_ns_kill "$ns"
		ip netns del "$ns" 2>/dev/null || true
	done
	ns=$(gn_bridge_ns)
	gn_ns_kill "$ns"
	ip netns del "$ns" 2>/dev/null || true
	GN_NET_HOSTS=0
	GN_NET_UP=
}
