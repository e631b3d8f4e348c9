#!/bin/bash
# SPDX-License-Identifier: MIT
#
# loss_test.sh - check the tc loss injector (loss.bpf.c via gn-loss) on a
# two-host netns topology: it drops the configured fraction of matching UDP
# datagrams (within a 6-sigma binomial bound, so a pass does not hinge on
# luck: a false failure has probability below 1e-6), drops exactly one in
# each run with --spread, leaves other ports alone, counts exactly what was
# sent and dropped, and detaches cleanly.
#
# usage: loss_test.sh GN_LOSS UDP_COUNT
# Exit: 0 pass, 1 fail, 4 skip (not root, no netns/bpf, tools not built);
# GN_SKIP_RC overrides the skip code (meson wants 77).

set -eu

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/net/lib.sh
. "$here/lib.sh"

GN_LOSS=${1:-}
UDP_COUNT=${2:-}
N=20000			# datagrams per lossy flow
CTL=9999		# receiver's control port, outside every lossy range
tmp=
failed=0
testno=0

if [ -z "$GN_LOSS" ] || [ ! -x "$GN_LOSS" ]; then
	gn_skip "gn-loss not built (clang, bpftool or libbpf missing)"
fi
if [ -z "$UDP_COUNT" ] || [ ! -x "$UDP_COUNT" ]; then
	gn_skip "udp-count not built"
fi
gn_require_net

tmp=$(mktemp -d)
gn_on_cleanup "rm -rf '$tmp'"
gn_net_setup 2
dst=$(gn_host_addr 1)

# Loading a BPF program is the last capability to probe.
if ! gn_host_exec 0 "$GN_LOSS" attach --dev eth0 --ppm 0 --ports 1 \
		>/dev/null 2>"$tmp/err"; then
	cat "$tmp/err" >&2
	gn_skip "cannot attach a tc BPF program"
fi
gn_host_exec 0 "$GN_LOSS" detach --dev eth0 >/dev/null

echo "TAP version 13"
echo "1..9"

# field NAME JSON: print the numeric field NAME of a gn-loss stats line.
field() {
	sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p" <<<"$2"
}

# flow SPORT DPORT COUNT [LOST]: send COUNT datagrams host 0 -> host 1,
# print the number received; with LOST, write the numbers of the datagrams
# that did not arrive there.
flow() {
	local sport=$1 dport=$2 count=$3 lost=${4:-} pid i sent

	rm -f "$tmp/ready"
	gn_host_exec 1 "$UDP_COUNT" recv --port "$dport" --ctl-port "$CTL" \
		--ready "$tmp/ready" ${lost:+--lost "$lost" --count "$count"} \
		>"$tmp/recv" &
	pid=$!
	for ((i = 0; i < 100; i++)); do
		[ -e "$tmp/ready" ] && break
		sleep 0.05
	done
	sent=$(gn_host_exec 0 "$UDP_COUNT" send --to "$dst" --port "$dport" \
		--sport "$sport" --count "$count" --ctl-port "$CTL") || true
	wait "$pid" || true
	if [ "$sent" != "$count" ]; then
		gn_diag "sent $sent of $count"
		echo -1
		return
	fi
	cat "$tmp/recv"
}

# within N PPM DROPPED: true if DROPPED is within 6 sigma of N*PPM/1e6.
within() {
	awk -v n="$1" -v ppm="$2" -v d="$3" 'BEGIN {
		p = ppm / 1e6; mu = n * p; tol = 6 * sqrt(n * p * (1 - p)) + 1
		exit !(d >= mu - tol && d <= mu + tol) }'
}

# lossy HOST DIR PPM SPORT DPORT NAME: attach, run one flow of N, check it.
lossy() {
	local host=$1 dir=$2 ppm=$3 sport=$4 dport=$5 name=$6 got st
	local seen dropped segs ok=1

	gn_host_exec "$host" "$GN_LOSS" attach --dev eth0 "--$dir" \
		--ppm "$ppm" --ports 7000-7099 >/dev/null
	got=$(flow "$sport" "$dport" "$N")
	st=$(gn_host_exec "$host" "$GN_LOSS" stats --dev eth0 "--$dir")
	gn_host_exec "$host" "$GN_LOSS" detach --dev eth0 >/dev/null
	seen=$(field seen "$st")
	dropped=$(field dropped "$st")
	segs=$(field seen_segs "$st")
	gn_diag "$name: sent $N received $got bpf seen $seen dropped $dropped" \
		"expected drops $((N * ppm / 1000000))"
	[ "$seen" = "$N" ] && [ "$segs" = "$N" ] || ok=0
	[ "$((N - got))" = "$dropped" ] || ok=0
	within "$N" "$ppm" "$dropped" || ok=0
	gn_result "$ok" "$name"
}

lossy 0 egress 100000 40000 7000 "10% loss on egress, destination port in range"
lossy 1 ingress 10000 7099 9000 "1% loss on ingress, source port in range"

# --spread: one drop in each run of 100, so exactly N / 100 of N, each
# run losing one datagram at its own place, and other places after a new
# attach (a fresh seed). The datagrams go in order, one by one.
# spread_run LOST: one attached flow of N; LOST gets the missing numbers.
spread_run() {
	local st

	gn_host_exec 0 "$GN_LOSS" attach --dev eth0 --egress --ppm 10000 \
		--spread --ports 7000-7099 >/dev/null
	got=$(flow 40004 7001 "$N" "$1")
	st=$(gn_host_exec 0 "$GN_LOSS" stats --dev eth0 --egress)
	gn_host_exec 0 "$GN_LOSS" detach --dev eth0 >/dev/null
	gn_diag "spread 100: sent $N received $got bpf seen $(field seen "$st")" \
		"dropped $(field dropped "$st"), $(sort -u "$1" | wc -l) numbers lost," \
		"$(awk '{ print $1 % 100 }' "$1" | sort -u | wc -l) places in a run"
	[ "$(field spread "$st")" = 100 ] && [ "$(field seen "$st")" = "$N" ] &&
		[ "$(field dropped "$st")" = $((N / 100)) ] &&
		[ "$got" = $((N - N / 100)) ] &&
		# one number lost in each run of 100
		[ "$(awk '{ print int($1 / 100) }' "$1" | sort -un | wc -l)" = $((N / 100)) ] &&
		[ "$(wc -l <"$1")" = $((N / 100)) ] &&
		# not the same place in every run: 200 runs of 100 places
		[ "$(awk '{ print $1 % 100 }' "$1" | sort -u | wc -l)" -gt 10 ]
}
ok=1
spread_run "$tmp/lost1" || ok=0
spread_run "$tmp/lost2" || ok=0
cmp -s "$tmp/lost1" "$tmp/lost2" && ok=0
gn_result "$ok" "--spread at 1% drops exactly one datagram in each run of 100, at random places"

ok=1
# A rate that is not one in a whole number of packets is refused.
if gn_host_exec 0 "$GN_LOSS" attach --dev eth0 --ppm 3000 --spread \
		--ports 7000 2>"$tmp/err"; then
	ok=0
fi
grep -q 'divides 1000000' "$tmp/err" || ok=0
gn_host_exec 0 "$GN_LOSS" stats --dev eth0 >/dev/null 2>&1 && ok=0
gn_result "$ok" "--spread with a ppm that does not divide 10^6 is refused, nothing attached"

# Everything in range goes, everything outside stays, on one attachment.
gn_host_exec 0 "$GN_LOSS" attach --dev eth0 --egress --ppm 1000000 \
	--ports 7000-7099 >/dev/null
got=$(flow 40001 7100 2000)
st=$(gn_host_exec 0 "$GN_LOSS" stats --dev eth0)
gn_diag "ports 40001->7100 at ppm 1000000: received $got of 2000," \
	"bpf seen $(field seen "$st")"
ok=0
[ "$got" = 2000 ] && [ "$(field seen "$st")" = 0 ] && ok=1
gn_result "$ok" "ports outside the range pass and are not counted"

got=$(flow 40002 7050 2000)
st=$(gn_host_exec 0 "$GN_LOSS" stats --dev eth0)
gn_diag "ports 40002->7050 at ppm 1000000: received $got of 2000," \
	"bpf seen $(field seen "$st") dropped $(field dropped "$st")"
ok=0
[ "$got" = 0 ] && [ "$(field seen "$st")" = 2000 ] &&
	[ "$(field dropped "$st")" = 2000 ] && ok=1
gn_result "$ok" "ppm 1000000 drops every matching datagram"

# Attaching again replaces the filter, with fresh counters and settings.
gn_host_exec 0 "$GN_LOSS" attach --dev eth0 --egress --ppm 0 \
	--ports 7000-7099 >/dev/null
got=$(flow 40003 7050 2000)
st=$(gn_host_exec 0 "$GN_LOSS" stats --dev eth0)
filters=$(tc -n "$(gn_host_ns 0)" filter show dev eth0 egress |
	grep -c 'name gn_loss' || true)
gn_diag "after re-attach at ppm 0: received $got of 2000, $filters bpf filter(s)"
ok=0
[ "$got" = 2000 ] && [ "$(field seen "$st")" = 2000 ] &&
	[ "$(field dropped "$st")" = 0 ] && [ "$filters" = 1 ] && ok=1
gn_result "$ok" "re-attach replaces the filter and its counters"

# Both directions on one clsact: it goes with the last of our filters.
gn_host_exec 0 "$GN_LOSS" attach --dev eth0 --ingress --ppm 0 \
	--ports 7000-7099 >/dev/null
gn_host_exec 0 "$GN_LOSS" detach --dev eth0 --egress >/dev/null
ok=1
tc -n "$(gn_host_ns 0)" qdisc show dev eth0 | grep -q clsact || ok=0
gn_host_exec 0 "$GN_LOSS" stats --dev eth0 --ingress >/dev/null || ok=0
gn_host_exec 0 "$GN_LOSS" detach --dev eth0 >/dev/null
if tc -n "$(gn_host_ns 0)" qdisc show dev eth0 | grep -q clsact ||
   gn_host_exec 0 "$GN_LOSS" stats --dev eth0 >/dev/null 2>&1; then
	ok=0
fi
gn_result "$ok" "detach removes the filters and the clsact qdisc it created"

# A clsact someone else made outlives our detach.
# (A test above that failed may have left one behind already.)
tc -n "$(gn_host_ns 1)" qdisc show dev eth0 | grep -q clsact ||
	tc -n "$(gn_host_ns 1)" qdisc add dev eth0 clsact
gn_host_exec 1 "$GN_LOSS" attach --dev eth0 --ingress --ppm 0 \
	--ports 7000-7099 >/dev/null
gn_host_exec 1 "$GN_LOSS" detach --dev eth0 >/dev/null
ok=0
tc -n "$(gn_host_ns 1)" qdisc show dev eth0 | grep -q clsact &&
	[ -z "$(tc -n "$(gn_host_ns 1)" filter show dev eth0 ingress)" ] && ok=1
tc -n "$(gn_host_ns 1)" qdisc del dev eth0 clsact
gn_result "$ok" "detach keeps a clsact qdisc it did not create"

echo "# $((testno - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
