#!/bin/bash
# SPDX-License-Identifier: MIT
# mixed.sh - one job of kmod ranks (0 and 2) and a UDP-path rank (1,
# libgradnet in userspace) on the same bridge: bit-identical to an all-UDP
# run of the same job, and both to the reference. Then the entropy stage on
# every codec: the module's ranks code and decode packets with the kernel's
# zstd, the UDP rank with libzstd, and every result is the reference's
# (which has no stage: it is lossless).
# ref: mix 3 3 5:3lc:sum,262147:3lc:avg,4:none:sum,65537:none:avg,1:3lc:avg
# ref: mixc 3 3 65537:topk/density=0.01/bits=4:avg,5:qsgd:sum,100003:topk/density=0.05:sum 7002
# ref: mixz 3 3 262147:3lc/entropy=zstd:avg,65537:qsgd/entropy=zstd:sum,100003:topk/density=0.05/bits=4/entropy=zstd/entropy_level=3:sum,4099:none/entropy=zstd:avg 7003
# shellcheck source=tests/kmod/guest_lib.sh
. /gn/lib.sh

gn_net_setup 3
kt_job mix /tmp/m kmod udp kmod
kt_check $? /tmp/m mix "mixed job (kmod, udp, kmod)"
ok $((kt_maxref < 2)) "ranks 0 and 2 ran through /dev/gradnet (up to $kt_maxref files open)"
kt_job mix /tmp/u udp udp udp
rc=$?
ok "$rc" "all-UDP job finished ($rc ranks failed)"
[ "$rc" -eq 0 ] || kt_show /tmp/u.0 /tmp/u.1 /tmp/u.2
for k in 0 1 2; do
	grep '^hash ' "/tmp/m.$k" | sort >/tmp/m.h
	grep '^hash ' "/tmp/u.$k" | sort >/tmp/u.h
	[ -s /tmp/m.h ] && cmp -s /tmp/m.h /tmp/u.h
	ok $? "rank $k: mixed results bit-identical to the all-UDP run"
done
kt_job mixc /tmp/mc kmod udp kmod
kt_check $? /tmp/mc mixc "mixed job of QSGD and top-k"
kt_job mixz /tmp/mz kmod udp kmod
kt_check $? /tmp/mz mixz "mixed job with the entropy stage (kernel zstd and libzstd)"
kt_refcnt_zero
ok $? "every file closed: gradnet's refcnt is 0"
