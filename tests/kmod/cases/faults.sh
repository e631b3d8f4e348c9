#!/bin/bash
# SPDX-License-Identifier: MIT
# faults.sh - the module's fault injection (its drop, duplicate and reorder
# parameters) on three kmod ranks: results bit-identical to the reference,
# and the ranks retransmitted; CLT-k's index sets too.
# ref: r3f 3 2 1:3lc:sum,5:3lc:avg,1000003:3lc:sum,4:none:avg,1000003:none:avg
# ref: r3fk 3 2 1000003:cltk/density=0.02/beta=0.5:sum,70001:cltk/density=0.1/bits=8:avg 7003
# shellcheck source=tests/kmod/guest_lib.sh
. /gn/lib.sh

# The parameters, however the module names them; their names are printed.
drop=$(kt_params '*drop*')
dup=$(kt_params '*dup*')
reorder=$(kt_params '*reorder*')
echo "# fault parameters: drop=$drop dup=$dup reorder=$reorder"
for p in drop dup reorder; do
	[ -n "${!p}" ] && [ "$(echo "${!p}" | wc -w)" -eq 1 ]
	ok $? "gradnet has one $p fault-injection parameter (${!p:-none})"
done
[ -n "$drop" ] && [ -n "$dup" ] && [ -n "$reorder" ] || exit 1

# kt_faults DROP DUP REORDER: the three parameters' values.
kt_faults() {
	echo "$1" >"/sys/module/gradnet/parameters/$drop" &&
	echo "$2" >"/sys/module/gradnet/parameters/$dup" &&
	echo "$3" >"/sys/module/gradnet/parameters/$reorder"
}
kt_faults 30 30 30 || { ok 1 "fault parameters written"; exit 1; }
echo "# set: $(for p in $drop $dup $reorder; do
	printf '%s=%s ' "$p" "$(cat "/sys/module/gradnet/parameters/$p")"; done)"

gn_net_setup 3
kt_job r3f /tmp/f kmod kmod kmod
rc=$?
kt_job r3fk /tmp/fk kmod kmod kmod
rck=$?
kt_faults 0 0 0
kt_check "$rc" /tmp/f r3f "3 kmod ranks of 3LC and dense under injected drops, duplicates and reordering"
kt_check "$rck" /tmp/fk r3fk "3 kmod ranks of CLT-k under injected drops, duplicates and reordering"
re=$(cat /tmp/f.[012] | sed -n 's/^retransmits //p' | awk '{ s += $1 } END { print s + 0 }')
ok $((re == 0)) "the ranks retransmitted ($re packets): the faults took effect"
kt_refcnt_zero
ok $? "every file closed: gradnet's refcnt is 0"
