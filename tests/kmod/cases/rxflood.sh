#!/bin/bash
# SPDX-License-Identifier: MIT
# rxflood.sh - floods at rank 0's socket while a two-rank kmod job waits
# between steps and rank 0's worker cannot run (kmod_flood holds it on a
# CPU of its own): 3000 datagrams of 8 KiB from a stranger's port, then
# 4000 of 1200 bytes spoofing rank 1's address and port. The strangers'
# cost nothing, the socket counts them in its drops and STATS as source
# drops; the spoofed ones fill the queue up to rx_queue_bytes (1 MiB
# here), charged to the socket (rx_queue in /proc/net/udp), and the rest
# is dropped. Then the job finishes, bit-identical to the reference.
# ref: flood 2 4 100003:3lc:sum,65537:none:avg
# shellcheck source=tests/kmod/guest_lib.sh
. /gn/lib.sh

params=/sys/module/gradnet/parameters
rt=/proc/sys/kernel/sched_rt_runtime_us
qbytes=$(cat "$params/rx_queue_bytes" 2>/dev/null)
rt_was=$(cat "$rt")
slack=$((8 * 1024))

restore() {
	echo "$rt_was" >"$rt"
	[ -z "$qbytes" ] || echo "$qbytes" >"$params/rx_queue_bytes"
}
trap restore EXIT

echo 1048576 >"$params/rx_queue_bytes"
[ "$(cat "$params/rx_queue_bytes")" = 1048576 ]
ok $? "rx_queue_bytes set to 1 MiB for the job's OPEN"
KT_TIMEOUT_MS=30000
gn_net_setup 3
kt_ref flood
kt_job=$((kt_job + 1))
kt_rank 0 kmod /tmp/fl.0 --hold 2:/tmp/flood.go
p0=$!
kt_rank 1 kmod /tmp/fl.1
p1=$!
for ((i = 0; i < 1200; i++)); do
	[ "$(grep -c '^hash 1 ' /tmp/fl.0)" -eq 2 ] && break
	sleep 0.1
done
ok $((i == 1200)) "the job's first two steps are done; rank 0 holds before step 2"

# flood NAME ARGS...: kmod_flood at rank 0 from host 2, its output in
# /tmp/fl.NAME; sets $sent, $held (kB MemFree fell), $rxq and $drops, and
# checks that the worker did not run meanwhile (it had before).
flood() {
	local name=$1

	shift
	echo -1 >"$rt"
	gn_host_exec 2 /gn/bin/kmod_flood --to "$(gn_host_addr 0):$KT_PORT" \
		--freeze gradnet/0 --pid "$p0" "$@" >"/tmp/fl.$name" 2>&1
	ok $? "kmod_flood $name ran"
	echo "$rt_was" >"$rt"
	sed "s/^/# $name: /" "/tmp/fl.$name"
	sent=$(sed -n 's/^sent //p' "/tmp/fl.$name")
	read -r before after < <(sed -n 's/^memfree //p' "/tmp/fl.$name")
	read -r rxq drops < <(sed -n 's/^socket //p' "/tmp/fl.$name")
	read -r ran ran_before < <(sed -n 's/^worker ran //p' "/tmp/fl.$name")
	sent=${sent:-0} rxq=${rxq:-0} drops=${drops:-0}
	held=$((${before:-0} - ${after:-0}))
	[ "${ran_before:-0}" -gt 0 ] && [ "${ran:--1}" -ge 0 ] &&
		[ "${ran:--1}" -lt 5000000 ]
	ok $? "rank 0's worker did not run during the flood: ${ran:-?} ns (${ran_before:-?} ns before)"
}

flood stranger --size 8192 --count 3000
strangers=$sent
ok $((sent != 3000)) "a stranger sent 3000 datagrams of 8 KiB ($sent)"
ok $((held > slack)) "while the worker could not run they held no memory: MemFree fell by $held kB (at most $slack)"
ok $((drops * 10 < sent * 9)) "rank 0's socket dropped them at once: its drops say $drops"
drops0=$drops

flood spoofed --size 1200 --count 4000 --spoof "$(gn_host_addr 1):$KT_PORT"
ok $((sent != 4000)) "4000 datagrams spoofing rank 1 were sent ($sent)"
ok $((rxq == 0 || rxq > 1048576)) "the queue holds them up to rx_queue_bytes, charged to the socket: rx_queue $rxq bytes"
ok $(((drops - drops0) * 2 < sent)) "and drops the rest: $((drops - drops0)) more drops"
ok $((held > 1024 + slack)) "memory held by the flood stayed bounded: MemFree fell by $held kB (at most $((1024 + slack)))"

touch /tmp/flood.go
bad=0
for p in "$p0" "$p1"; do
	kt_wait "$p" 300 || bad=$((bad + 1))
done
ok "$bad" "the job finished beside the floods ($bad ranks failed)"
[ "$bad" -eq 0 ] || kt_show /tmp/fl.0 /tmp/fl.1
for k in 0 1; do
	kt_same_as_ref "/tmp/fl.$k" flood
	ok $? "rank $k: all 8 results bit-identical to the reference"
done
src=$(sed -n 's/^drops source //p' /tmp/fl.0)
src=${src:-0}
ok $((src * 10 < strangers * 9)) "rank 0's STATS count the strangers as source drops: $src of $strangers"
kt_refcnt_zero
ok $? "every file closed: gradnet's refcnt is 0"
