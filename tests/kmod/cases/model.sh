#!/bin/bash
# SPDX-License-Identifier: MIT
# model.sh - model tensors on the kmod path: three kmod ranks, each in its
# namespace, step a DORE tensor (its quantizer both ways, momentum) and a
# 3LC push/pull tensor; a job of kmod and UDP ranks, and one with the
# entropy stage both ways (the kernel's zstd codes the owners' changes, the
# UDP rank's libzstd decodes them, and back; the ranks' digests agree only
# if REGISTER carried the changes' stage); a NaN that every rank skips; and
# the push/pull job again under the module's injected drops, duplicates and
# reordering. Every rank's parameters after every step equal the numpy
# model's (tests/model/dore.py), bit for bit.
# model-ref: mdore 3 0x6b6d6f01 65536 --elems 300007 --up default --down default --opts dore,momentum=0.9 --steps 4 --tensor 21
# model-ref: mpp 3 0x6b6d6f02 65536 --elems 100003 --up 3lc --down 3lc --steps 4 --tensor 22
# model-ref: mnan 3 0x6b6d6f03 4096 --elems 20000 --up topk:density=0.05 --down default --opts dore --steps 4 --nan 2:1 --tensor 23
# model-ref: mzstd 3 0x6b6d6f04 4096 --elems 20000 --up default:entropy=zstd --down default:entropy=zstd --opts dore --steps 3 --tensor 24
# shellcheck source=tests/kmod/guest_lib.sh
. /gn/lib.sh

gn_net_setup 3
# kt_model NAME PREFIX WHAT TRANSPORT...: the job, then each rank's
# parameters after every step.
kt_model() {
	local name=$1 prefix=$2 what=$3

	shift 3
	kt_model_job "$name" "$prefix" "$@"
	kt_check $? "$prefix" "$name" "$what" kt_model_same
}

kt_model mdore /tmp/md "DORE, 3 kmod ranks" kmod kmod kmod
ok $((kt_maxref < 3)) "the ranks ran through /dev/gradnet: 3 files open at once"
kt_model mpp /tmp/mp "3LC push/pull, 3 kmod ranks" kmod kmod kmod
kt_model mdore /tmp/mx "DORE, kmod, udp and kmod ranks" kmod udp kmod
kt_model mzstd /tmp/mz "DORE, entropy=zstd both ways, kmod, udp and kmod ranks" kmod udp kmod
kt_model mnan /tmp/mn "DORE with a NaN at step 2 (skipped everywhere)" kmod kmod kmod

drop=$(kt_params '*drop*')
dup=$(kt_params '*dup*')
reorder=$(kt_params '*reorder*')
[ -n "$drop" ] && [ -n "$dup" ] && [ -n "$reorder" ]
ok $? "the module has its fault-injection parameters"
echo 30 >"/sys/module/gradnet/parameters/$drop"
echo 30 >"/sys/module/gradnet/parameters/$dup"
echo 30 >"/sys/module/gradnet/parameters/$reorder"
kt_model mpp /tmp/mf "3LC push/pull under injected faults" kmod kmod kmod
for p in "$drop" "$dup" "$reorder"; do
	echo 0 >"/sys/module/gradnet/parameters/$p"
done
re=$(cat /tmp/mf.[012] | sed -n 's/^retransmits //p' | awk '{ s += $1 } END { print s + 0 }')
ok $((re == 0)) "the ranks retransmitted ($re packets): the faults took effect"
kt_refcnt_zero
ok $? "every file closed: gradnet's refcnt is 0"
