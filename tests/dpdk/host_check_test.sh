#!/bin/bash
# SPDX-License-Identifier: MIT
#
# host_check_test.sh - tools/dpdk-host-check.sh in check mode on this host:
# whatever /proc/meminfo and sysfs say is missing (hugepages, a NIC bound to
# vfio-pci) it reports as FAIL with the fix, and exits 1; --help works; bad
# arguments exit 2 before anything is touched. TAP output.
#
# usage: host_check_test.sh PATH/TO/dpdk-host-check.sh

set -u
check=$1
n=0 failed=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT

t() {
	n=$((n + 1))
	if "$@"; then
		echo "ok $n - $desc"
	else
		echo "not ok $n - $desc"
		failed=$((failed + 1))
	fi
}

echo "1..9"

"$check" --help > "$out" 2>&1
rc=$?
desc="--help exits 0 and prints the usage"
t eval '[ $rc -eq 0 ] && grep -q "^usage: .*\[--prepare N\]" "$out"'

"$check" > "$out" 2>&1
rc=$?
sed 's/^/# /' "$out"

total=$(sed -n 's/^HugePages_Total: *//p' /proc/meminfo)
desc="hugepages: verdict agrees with /proc/meminfo (HugePages_Total ${total:-absent})"
if [ "${total:-0}" -eq 0 ]; then
	t grep -q "^FAIL hugepages: .*--prepare" "$out"
else
	t grep -q "^\(ok\|FAIL\)   *hugepages: .* of $total" "$out"
fi

vfio_nics=
for d in /sys/bus/pci/devices/*; do
	case $(cat "$d/class" 2>/dev/null) in 0x02*) ;; *) continue ;; esac
	[ "$(basename "$(readlink "$d/driver" 2>/dev/null)")" = vfio-pci ] &&
		vfio_nics="$vfio_nics ${d##*/}"
done
desc="NIC: verdict agrees with sysfs (bound to vfio-pci:${vfio_nics:- none})"
if [ -z "$vfio_nics" ]; then
	t grep -q "^FAIL NIC: no network device is bound to vfio-pci .*--bind=vfio-pci" "$out"
else
	t grep -q "^ok   NIC: bound to vfio-pci" "$out"
fi

desc="exit status 1 and a count line when a check failed"
if grep -q "^FAIL" "$out"; then
	t eval '[ $rc -eq 1 ] && grep -q "^[0-9]* check(s) failed" "$out"'
else
	t eval '[ $rc -eq 0 ] && grep -q "^all checks passed" "$out"'
fi

desc="every line is ok, FAIL or the summary"
t eval '! grep -v "^ok   \|^FAIL \|check(s) failed\|^all checks passed" "$out"'

"$check" --pci 0000:ff:1f.7 > "$out" 2>&1
rc=$?
desc="--pci of an absent device: FAIL naming it, exit 1"
t eval '[ $rc -eq 1 ] && grep -q "^FAIL NIC 0000:ff:1f.7: no such PCI device" "$out"'

"$check" --frobnicate > "$out" 2>&1
rc=$?
desc="an unknown argument: exit 2 with its name"
t eval '[ $rc -eq 2 ] && grep -q "unknown argument \"--frobnicate\"" "$out"'

nr=$(cat /proc/sys/vm/nr_hugepages)
"$check" --prepare many > "$out" 2>&1
rc=$?
desc="--prepare with a bad count: exit 2, nr_hugepages untouched"
t eval '[ $rc -eq 2 ] && grep -q "is not a positive hugepage count" "$out" && [ "$(cat /proc/sys/vm/nr_hugepages)" = "$nr" ]'

"$check" --hugepages -3 > "$out" 2>&1
rc=$?
desc="--hugepages with a bad count: exit 2"
t eval '[ $rc -eq 2 ] && grep -q "is not a count" "$out"'

[ $failed -eq 0 ]
