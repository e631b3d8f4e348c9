#!/bin/bash
# SPDX-License-Identifier: MIT
# pins.sh - what START pins, as uid 1000 on a world-writable /dev/gradnet:
# charged to RLIMIT_MEMLOCK (ENOMEM over it, EPERM at 0) and shown in
# VmPin, released when a step times out before anyone WAITs; anonymous
# memory, shmem and hugetlbfs pinned, a ramfs file's mappings refused
# (kmod_limits pins, mappings). Two huge pages are reserved for the run.
# shellcheck source=tests/kmod/guest_lib.sh
. /gn/lib.sh

ramfs=/tmp/gn-ramfs
huge=$(cat /proc/sys/vm/nr_hugepages)

restore() {
	echo "$huge" >/proc/sys/vm/nr_hugepages
	umount "$ramfs" 2>/dev/null
	chmod 0600 /dev/gradnet
}
trap restore EXIT

chmod 0666 /dev/gradnet
mkdir -p "$ramfs"
mount -t ramfs ramfs "$ramfs" && chmod 1777 "$ramfs"
ok $? "a ramfs at $ramfs, writable by all"
echo 2 >/proc/sys/vm/nr_hugepages
[ "$(cat /proc/sys/vm/nr_hugepages)" -ge 1 ]
ok $? "huge pages reserved: $(cat /proc/sys/vm/nr_hugepages)"

/gn/bin/kmod_limits pins --uid 1000
ok $? "kmod_limits pins passed"
/gn/bin/kmod_limits mappings --uid 1000 --ramfs "$ramfs" --hugetlb
ok $? "kmod_limits mappings passed"
kt_refcnt_zero
ok $? "every file closed: gradnet's refcnt is 0"
