#!/bin/bash
# SPDX-License-Identifier: MIT
#
# stat_test.sh - gradnet-stat on a real job: three ranks, one per network
# namespace on a bridge (tests/net/lib.sh), 1% loss on the bridge ports
# (gn-loss, spread: one packet in each 100 to a host, so every run loses
# some), gradnet-stat attached to the ranks' USDT probes and to every
# host's eth0 (tc). Then:
#  - per rank, the flows' sums in the pinned map equal the library's own
#    final counters exactly (GN_TEST_STATS_FILE: after close, when no
#    packet can change them): packets, bytes, retransmits, drops by reason
#  - the probes fired fewer times than packets went (the core
#    coalesces a flow's events within a poll; kernel.bpf_stats_enabled
#    counts the uprobe programs' runs)
#  - each host's egress, as tc parsed it, equals what its rank sent, and
#    the datagrams that never arrived are exactly the ones gn-loss dropped
#  - a job with duplication and reordering in the senders (GN_TEST_FAULTS):
#    the receivers' drops by reason match too
#  - bpftool prints the pinned map with named fields
#  - a second job on libgradnet.so itself (attach --lib) is its own flows
#  - a 2-rank job over IPv6 (a veth pair between two namespaces of its
#    own): tc parses IPv6, its egress equals what each rank sent
#  - detach leaves nothing pinned and no program attached
#
# usage: stat_test.sh GRADNET_STAT GN_RANK_TEST GN_RANK_SO LIBGRADNET_SO GN_LOSS
# Nothing skips: a missing capability fails the test (GN_SKIP_RC=1).

set -eu

here=$(cd "$(dirname "$0")" && pwd)
GN_SKIP_RC=${GN_SKIP_RC:-1}
# shellcheck source=tests/net/lib.sh
. "$here/../net/lib.sh"
# shellcheck source=tests/bpf/stat_lib.sh
. "$here/stat_lib.sh"

STAT=$1
RANK_TEST=$2
RANK_SO=$3
LIBSO=$4
LOSS=$5
WORLD=3
PORT=7000
# Each rank's shard: five chunks of 65536 values, sent as DATA packets,
# and one of 3000, sent as one WHOLE packet: both kinds on the wire.
ELEMS=992040
STEPS=8
PPM=10000
testno=0
failed=0
pids=()

for b in "$STAT" "$RANK_TEST" "$RANK_SO" "$LOSS"; do
	[ -x "$b" ] || gn_skip "$b not built"
done
command -v bpftool >/dev/null || PATH=$PATH:/usr/sbin
command -v bpftool >/dev/null || gn_skip "bpftool missing"
gn_require_net

tmp=$(mktemp -d)
# A pin directory of the test's own: an operator's stays untouched.
export GN_STAT_PIN_DIR=/sys/fs/bpf/gradnet-test-$$
gn_on_cleanup "'$STAT' detach >/dev/null 2>&1 || true"
gn_on_cleanup "rm -rf '$tmp'"
gn_net_setup $WORLD

KEY=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
JOB=$((RANDOM * 32768 + RANDOM + 1))
JOB2=$((JOB + 1))
# The jobs and port the tc programs count from the first datagram on,
# before a probe of the job has fired.
TC_COUNT=(--job "$JOB,$JOB2,$((JOB + 2)),$((JOB + 3))" --port "$PORT")
PEERS=
for ((k = 0; k < WORLD; k++)); do
	PEERS="$PEERS${PEERS:+,}$(gn_host_addr "$k"):$PORT"
done

echo "TAP version 13"
echo "1..28"

# ---- attach -------------------------------------------------------------------

ok=1
# Host 0 has a clsact qdisc already, which detach must leave; the others
# get theirs from gradnet-stat, which detach must remove.
tc -n "$(gn_host_ns 0)" qdisc add dev eth0 clsact || ok=0
"$STAT" attach --lib "$RANK_TEST" >"$tmp/attach" 2>&1 || ok=0
"$STAT" attach --lib "$LIBSO" >>"$tmp/attach" 2>&1 || ok=0
for ((k = 0; k < WORLD; k++)); do
	"$STAT" attach --dev eth0 --netns "$(gn_host_ns "$k")" "${TC_COUNT[@]}" \
		>>"$tmp/attach" 2>&1 || ok=0
	gn_bridge_exec "$LOSS" attach --dev "p$k" --egress --ppm "$PPM" \
		--spread --ports "$PORT" >/dev/null 2>>"$tmp/attach" || ok=0
done
[ "$ok" -eq 1 ] || sed 's/^/# /' "$tmp/attach"
gn_result "$ok" "attach: USDT on gn-rank-test and libgradnet.so, tc on $WORLD hosts, 1% loss on the bridge"

# ---- a job under loss ---------------------------------------------------------

# Runs of the programs behind the pinned uprobe links, summed.
usdt_runs() {
	local id

	for id in $(gn_stat_link_progs); do
		bpftool prog show id "$id" -j
	done | grep -o '"run_cnt":[0-9]*' | awk -F: '{ s += $2 } END { print s + 0 }'
}

stats_was=$(cat /proc/sys/kernel/bpf_stats_enabled)
echo 1 >/proc/sys/kernel/bpf_stats_enabled
gn_on_cleanup "echo $stats_was >/proc/sys/kernel/bpf_stats_enabled"
runs0=$(usdt_runs)
ok=1
run_job loss "$RANK_TEST" "$JOB" || ok=0
hits=$(($(usdt_runs) - runs0))
echo "$stats_was" >/proc/sys/kernel/bpf_stats_enabled
dropped=0
for ((k = 0; k < WORLD; k++)); do
	st=$(gn_bridge_exec "$LOSS" stats --dev "p$k" --egress)
	v=$(sed -n 's/.*"dropped_segs":\([0-9]*\).*/\1/p' <<<"$st")
	dropped=$((dropped + ${v:-0}))
	gn_bridge_exec "$LOSS" detach --dev "p$k" >/dev/null
done
gn_result "$ok" "a $WORLD-rank job, $ELEMS floats, $STEPS steps, under loss ($dropped datagrams dropped)"

"$STAT" dump --json >"$tmp/dump.json" || true
check usdt "$tmp/dump.json" "$JOB" "$tmp"/loss.*.stats
check wire "$tmp/dump.json" "$JOB" "$dropped" "$tmp"/loss.*.stats
check hits "$tmp/dump.json" "$JOB" "$hits"

# ---- OpenMetrics: the same counters, as a textfile collector reads them --------

"$STAT" dump --openmetrics >"$tmp/dump.om" || gn_diag "dump --openmetrics failed"
check openmetrics "$tmp/dump.om" "$tmp/dump.json" "$JOB"

# ---- duplicates and reordering: drops by reason -------------------------------------

JOB3=$((JOB + 2))
ok=1
run_job dup "$RANK_TEST" "$JOB3" "dup=0.05,reorder=0.1" || ok=0
"$STAT" dump --json >"$tmp/dump3.json" || ok=0
[ "$ok" -eq 1 ] || gn_diag "the job with duplicates or the dump failed"
check usdt "$tmp/dump3.json" "$JOB3" "$tmp"/dup.*.stats
# Duplicates were really dropped, or the drop counts proved nothing.
grep -q '"drops": \[0, 0, 0, 0, 0, [0-9]*, [1-9]' "$tmp"/dup.*.stats || {
	gn_diag "no rank dropped a duplicate: $(cat "$tmp"/dup.*.stats)"
	failed=$((failed + 1))
}

# ---- bpftool reads the map by itself -----------------------------------------------

bpftool map dump pinned "$GN_STAT_PIN_DIR/gn_flows" -j >"$tmp/bpftool.json" 2>&1 || true
check bpftool "$tmp/bpftool.json"

# ---- a second job, on libgradnet.so -------------------------------------------------

ok=1
run_job so "$RANK_SO" "$JOB2" || ok=0
"$STAT" dump --json >"$tmp/dump2.json" || ok=0
[ "$ok" -eq 1 ] || gn_diag "the libgradnet.so job or the dump failed"
check raw "$tmp/dump2.json" "$JOB2" "$tmp"/so.*.json
[ "$ok" -eq 1 ] || failed=$((failed + 1))

# ---- IPv6: two hosts on a veth pair ----------------------------------------------

# v6_job JOB: ranks 0 and 1 in namespaces $V6NS-0 and -1, peers by IPv6
# address, at the default MTU of 1500 on a 1500-byte link: datagrams must
# leave room for IPv6's 48 header bytes (a library that sized them for
# IPv4's 28 hit EMSGSIZE and retried without end; the timeout catches
# such a hang).
v6_job() {
	local peers="[fd77::1]:$PORT,[fd77::2]:$PORT" k ok=1

	for ((k = 0; k < 2; k++)); do
		timeout 120 ip netns exec "$V6NS-$k" env GN_RANK="$k" \
			GN_WORLD_SIZE=2 \
			GN_PEERS="$peers" GN_KEY="$KEY" GN_JOB="$1" \
			GN_TIMEOUT_MS=10000 GN_TEST_STATS_FILE="$tmp/v6.$k.stats" \
			"$RANK_TEST" --warmup 0 --elems "$ELEMS" --steps 4 \
			>"$tmp/v6.$k.json" 2>"$tmp/v6.$k.err" &
		pids[k]=$!
	done
	for ((k = 0; k < 2; k++)); do
		if ! wait "${pids[k]}"; then
			gn_diag "v6: rank $k failed: $(cat "$tmp/v6.$k.err")"
			ok=0
		fi
	done
	[ "$ok" -eq 1 ]
}

# The namespaces carry the test's prefix, so cleanup knows them by name.
V6NS=$GN_NS_PREFIX-v6
gn_on_cleanup "ip netns del '$V6NS-0' 2>/dev/null; ip netns del '$V6NS-1' 2>/dev/null"
JOB6=$((JOB + 3))
ok=1
for ((k = 0; k < 2; k++)); do
	ip netns add "$V6NS-$k" || ok=0
	ip netns exec "$V6NS-$k" sysctl -qw net.ipv6.conf.all.disable_ipv6=0 \
		net.ipv6.conf.default.disable_ipv6=0 || ok=0
	ip -n "$V6NS-$k" link set lo up || ok=0
done
ip -n "$V6NS-0" link add eth0 type veth peer name eth0 netns "$V6NS-1" || ok=0
for ((k = 0; k < 2; k++)); do
	ip -n "$V6NS-$k" addr add "fd77::$((k + 1))/64" dev eth0 nodad || ok=0
	ip -n "$V6NS-$k" link set eth0 up || ok=0
	"$STAT" attach --dev eth0 --netns "$V6NS-$k" "${TC_COUNT[@]}" \
		>/dev/null || ok=0
done
[ "$ok" -eq 1 ] && v6_job "$JOB6" || ok=0
"$STAT" dump --json >"$tmp/dump6.json" || ok=0
gn_result "$ok" "a 2-rank job over IPv6 (fd77::1, fd77::2 on a veth pair), tc attached to both ends"
check usdt "$tmp/dump6.json" "$JOB6" "$tmp"/v6.*.stats
check wire "$tmp/dump6.json" "$JOB6" clean "$tmp"/v6.*.stats
for ((k = 0; k < 2; k++)); do
	"$STAT" detach --dev eth0 --netns "$V6NS-$k" >/dev/null ||
		gn_diag "detach from $V6NS-$k failed"
done

# ---- top and detach ----------------------------------------------------------------

ok=1
"$STAT" top --count 1 --job "$JOB" >"$tmp/top" 2>&1 || ok=0
grep -q "^$JOB " "$tmp/top" || ok=0
# The job is over: its step histogram is the one dump.json holds.
check top "$tmp/top" "$tmp/dump.json" "$JOB"
# The programs that the pins and the tc filters hold, by id.
ids=$(gn_stat_link_progs)
for ((k = 0; k < WORLD; k++)); do
	ids="$ids $(tc -n "$(gn_host_ns "$k")" filter show dev eth0 ingress;
		tc -n "$(gn_host_ns "$k")" filter show dev eth0 egress)"
done
ids=$(echo "$ids" | grep -o '^[0-9]*$\| id [0-9]*' | grep -o '[0-9]*' | sort -u)
[ "$(echo "$ids" | wc -w)" -ge 8 ] || { gn_diag "programs found: $ids"; ok=0; }
for ((k = 0; k < WORLD; k++)); do
	"$STAT" detach --dev eth0 --netns "$(gn_host_ns "$k")" >/dev/null || ok=0
	tc -n "$(gn_host_ns "$k")" filter show dev eth0 ingress | grep -q gn_tc && ok=0
	tc -n "$(gn_host_ns "$k")" filter show dev eth0 egress | grep -q gn_tc && ok=0
	if tc -n "$(gn_host_ns "$k")" qdisc show dev eth0 | grep -q clsact; then
		[ "$k" -eq 0 ] || { gn_diag "host $k: the clsact qdisc gradnet-stat created is left"; ok=0; }
	else
		[ "$k" -ne 0 ] || { gn_diag "host 0: the clsact qdisc that was there before is gone"; ok=0; }
	fi
done
"$STAT" detach >/dev/null || ok=0
[ ! -e "$GN_STAT_PIN_DIR" ] || ok=0
# No program of ours is left loaded: nothing holds one any more.
# shellcheck disable=SC2086 # one id per word
gn_progs_gone $ids || ok=0
gn_result "$ok" "top shows the job; detach leaves nothing pinned, attached or loaded, and removes only the clsact qdiscs it created"

echo "# $((testno - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
