#!/bin/bash
# SPDX-License-Identifier: MIT
# limits.sh - uid 1000 (and 1001 beside it) on /dev/gradnet made
# world-writable, as a udev rule would: the kernel memory of its tensors
# is charged to its memory cgroup (cgroup2, memory.max 48M), which refuses
# a REGISTER with ENOMEM instead of an OOM kill; the module's
# max_tensors, max_context_mib and max_contexts_per_user refuse with
# EMFILE, EDQUOT and EMFILE and messages that name them. The checks are
# kmod_limits's; this script sets the stage as root and puts it back.
# shellcheck source=tests/kmod/guest_lib.sh
. /gn/lib.sh

params=/sys/module/gradnet/parameters
cg=/sys/fs/cgroup/gn-limits
saved=()

# kt_set NAME VALUE: a module parameter, its value before kept for restore.
kt_set() {
	saved+=("$1=$(cat "$params/$1")")
	echo "$2" >"$params/$1"
}

restore() {
	local s

	for s in "${saved[@]}"; do
		echo "${s#*=}" >"$params/${s%%=*}"
	done
	chmod 0600 /dev/gradnet
	rmdir "$cg" 2>/dev/null
}
trap restore EXIT

for p in max_tensors max_context_mib max_contexts_per_user rx_queue_bytes; do
	[ -r "$params/$p" ] && [ "$(cat "$params/$p")" -gt 0 ]
	ok $? "module parameter $p is there: $(cat "$params/$p" 2>/dev/null || echo none)"
done
# Half of the guest's memory, which the module filled in at load.
mib=$(cat "$params/max_context_mib" 2>/dev/null || echo 0)
half=$(($(sed -n 's/^MemTotal: *\([0-9]*\) kB/\1/p' /proc/meminfo) / 2048))
[ "$mib" -ge $((half * 9 / 10)) ] && [ "$mib" -le $((half + 1)) ]
ok $? "max_context_mib defaults to half of the host's memory ($mib MiB of $((half * 2)))"

chmod 0666 /dev/gradnet
grep -q '^cgroup2 /sys/fs/cgroup ' /proc/mounts ||
	mount -t cgroup2 cgroup2 /sys/fs/cgroup
echo +memory >/sys/fs/cgroup/cgroup.subtree_control
mkdir -p "$cg"
echo 48M >"$cg/memory.max"
[ "$(cat "$cg/memory.max")" -eq $((48 << 20)) ]
ok $? "memory cgroup $cg with memory.max 48M"
/gn/bin/kmod_limits memcg --uid 1000 --cgroup "$cg" --elems 1048576 --tries 8
ok $? "kmod_limits memcg passed"

kt_set max_tensors 5
/gn/bin/kmod_limits tensors --uid 1000 --max 5
ok $? "kmod_limits tensors passed"

kt_set max_context_mib 8
/gn/bin/kmod_limits bytes --uid 1000 --mib 8
ok $? "kmod_limits bytes passed"

kt_set max_contexts_per_user 3
/gn/bin/kmod_limits contexts --uid 1000 --other 1001 --max 3
ok $? "kmod_limits contexts passed"
kt_refcnt_zero
ok $? "every file closed: gradnet's refcnt is 0"
