#!/bin/bash
# SPDX-License-Identifier: MIT
# fuzz.sh - ioctl_fuzz for a fixed time (KT_FUZZ_SECONDS, default 45) on
# /dev/gradnet; then no file is left open and the module unloads and loads
# again. The kernel log's check (no Oops, BUG, WARNING, lockdep, KASAN) is
# guest.sh's, after every case.
# shellcheck source=tests/kmod/guest_lib.sh
. /gn/lib.sh

/gn/bin/ioctl_fuzz --seconds "${KT_FUZZ_SECONDS:-45}" --seed "$RANDOM$RANDOM"
ok $? "ioctl_fuzz passed"
kt_refcnt_zero
ok $? "every file closed: gradnet's refcnt is 0"
rmmod gradnet
ok $? "rmmod gradnet after the fuzzer"
insmod /gn/gradnet.ko
ok $? "gradnet loads again"
