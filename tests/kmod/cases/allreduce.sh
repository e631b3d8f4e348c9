#!/bin/bash
# SPDX-License-Identifier: MIT
# allreduce.sh - three ranks on the kmod path, one per network namespace on
# a bridge: tensors of 1, 4, 5 and 1000003 values, 3LC and dense, sum and
# average, all eight in flight at once, three steps; every rank's every
# result is bit-identical to the userspace reference (kmod_job ref). The
# same for QSGD and top-k (per chunk, per block, with QSGD values, and
# dense enough to switch), under one job id: their draws depend on it.
# And CLT-k: leaders' index sets over chunks and steps, the low-pass
# memory, QSGD values, a warm-up step; and top-k's index and value codecs
# (Bloom groups under each policy, run lengths, the per-chunk choice,
# float16 and fitted values).
# ref: r3 3 3 1:3lc:sum,4:3lc:avg,5:3lc:sum,1000003:3lc:avg,1:none:avg,4:none:sum,5:none:avg,1000003:none:sum
# ref: r3c 3 3 1:topk/density=0.5:sum,5:qsgd:avg,65537:topk/density=0.01/bits=4:avg,262147:qsgd/bits=8/bucket=128:sum,100003:topk/density=0.05/block=512:avg,4099:topk/density=0.7:sum 7001
# ref: r3k 3 3 1:cltk:sum,5:cltk/density=0.5:avg,65537:cltk/density=0.01/beta=0.5:avg,262147:cltk/density=0.02/bits=4:sum,100003:cltk/density=0.05/warmup=1/beta=0.9:avg 7002
# ref: r3d 3 3 65537:topk/density=0.01/bits=4/idx=bloom:avg,100003:topk/density=0.05/idx=bloom-p1/fpr=0.01/val=f16:sum,20011:topk/density=0.2/idx=bloom-p2:avg,70001:topk/density=0.05/idx=auto:sum,4099:topk/density=0.3/idx=rle/val=f16:avg,30011:topk/density=0.05/val=fit/bucket=128:sum 7002
# shellcheck source=tests/kmod/guest_lib.sh
. /gn/lib.sh

gn_net_setup 3
kt_job r3 /tmp/r3 kmod kmod kmod
rc=$?
ok "$rc" "3 kmod ranks ran 3 steps of 8 tensors each in flight ($rc failed; the module held up to $kt_maxref files)"
[ "$rc" -eq 0 ] || kt_show /tmp/r3.0 /tmp/r3.1 /tmp/r3.2
ok $((kt_maxref < 3)) "the ranks ran through /dev/gradnet: 3 files open at once"
for k in 0 1 2; do
	kt_same_as_ref "/tmp/r3.$k" r3
	ok $? "rank $k: all 24 results bit-identical to the userspace reference"
done
# codec_job NAME WHAT: job NAME on three kmod ranks, each result exact.
codec_job() {
	kt_job "$1" "/tmp/$1" kmod kmod kmod
	kt_check $? "/tmp/$1" "$1" "3 kmod ranks, 3 steps of $2"
}
codec_job r3c "QSGD and top-k tensors"
codec_job r3k "CLT-k tensors"
codec_job r3d "top-k with Bloom, run-length and per-chunk index codecs, float16 and fitted values"
kt_refcnt_zero
ok $? "every file closed: gradnet's refcnt is 0"
