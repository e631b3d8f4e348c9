#!/bin/bash
# SPDX-License-Identifier: MIT
#
# dpdk-host-check.sh - can this host run gradnet's DPDK path on a NIC?
# Checks libdpdk, hugepages, hugetlbfs, IOMMU and vfio-pci, the NIC's
# driver and the CPU count; prints one "ok" or "FAIL" line per check with
# the fix, and exits 1 if any check failed. --prepare (root) reserves
# hugepages and mounts hugetlbfs first; it never rebinds a NIC, since that
# can take the host's own network away.

set -u

usage() {
	cat <<EOF
usage: $0 [--pci ADDR] [--hugepages N] [--prepare N] [--help]

Checks whether this host can run gradnet's DPDK transport on a NIC
(GN_TRANSPORT=dpdk with a port from a PCI device, not the net_memif /
--no-huge setup of the tests, which needs none of this).

  --pci ADDR      the NIC to use, e.g. 0000:3b:00.0: it must be bound
                  to vfio-pci (without it, any network device bound to
                  vfio-pci will do)
  --hugepages N   hugepages of the default size that must be free
                  (default 1)
  --prepare N     as root, before checking: set nr_hugepages to N for the
                  default hugepage size and mount hugetlbfs on
                  /dev/hugepages if none is mounted; refuses if the kernel
                  does not give all N pages. Does not bind the NIC: do that
                  with dpdk-devbind.py --bind=vfio-pci ADDR.
  --help          this text

Prints "ok" or "FAIL" per check, with what to do for each FAIL.
Exit status: 0 all checks passed, 1 a check failed, 2 usage or --prepare
error.
EOF
}

pci=
want_free=1
prepare=
while [ $# -gt 0 ]; do
	case $1 in
	--pci) [ $# -ge 2 ] || { echo "$0: --pci needs an address" >&2; exit 2; }
		pci=$2; shift ;;
	--hugepages) [ $# -ge 2 ] || { echo "$0: --hugepages needs a count" >&2; exit 2; }
		want_free=$2; shift ;;
	--prepare) [ $# -ge 2 ] || { echo "$0: --prepare needs a hugepage count" >&2; exit 2; }
		prepare=$2; shift ;;
	-h|--help) usage; exit 0 ;;
	*) echo "$0: unknown argument \"$1\" (see --help)" >&2; exit 2 ;;
	esac
	shift
done

is_count() {
	case $1 in ''|*[!0-9]*) return 1 ;; esac
	return 0
}
is_count "$want_free" ||
	{ echo "$0: --hugepages \"$want_free\" is not a count" >&2; exit 2; }
if [ -n "$prepare" ] && { ! is_count "$prepare" || [ "$prepare" -eq 0 ]; }; then
	echo "$0: --prepare \"$prepare\" is not a positive hugepage count" >&2
	exit 2
fi
if [ -n "$pci" ]; then
	# The short form (3b:00.0) means domain 0000, as dpdk-devbind.py has it.
	case $pci in
	[0-9a-fA-F][0-9a-fA-F]:[0-9a-fA-F][0-9a-fA-F].[0-7]) pci=0000:$pci ;;
	esac
fi

meminfo() {
	sed -n "s/^$1: *\([0-9]*\).*/\1/p" /proc/meminfo
}

hugetlbfs_mount() {
	awk '$3 == "hugetlbfs" { print $2; exit }' /proc/mounts
}

prepare_host() {
	local n=$1 size got mnt
	if [ "$(id -u)" -ne 0 ]; then
		echo "$0: --prepare must run as root (it writes /proc/sys/vm/nr_hugepages and mounts hugetlbfs)" >&2
		return 2
	fi
	size=$(meminfo Hugepagesize)
	if [ -z "$size" ]; then
		echo "$0: --prepare: this kernel has no hugepages (no Hugepagesize in /proc/meminfo; CONFIG_HUGETLBFS off)" >&2
		return 2
	fi
	if ! echo "$n" 2>/dev/null > /proc/sys/vm/nr_hugepages; then
		echo "$0: --prepare: cannot write $n to /proc/sys/vm/nr_hugepages (read-only /proc, e.g. in a container?)" >&2
		return 2
	fi
	got=$(cat /proc/sys/vm/nr_hugepages)
	if [ "$got" -lt "$n" ]; then
		echo "$0: --prepare: asked for $n hugepages of ${size} kB, the kernel gave $got (memory is short or fragmented: free memory, or reserve them at boot with hugepages=$n on the kernel command line)" >&2
		return 2
	fi
	echo "prepared: $got hugepages of ${size} kB"
	mnt=$(hugetlbfs_mount)
	if [ -z "$mnt" ]; then
		if ! mkdir -p /dev/hugepages ||
		   ! mount -t hugetlbfs -o pagesize=${size}k nodev /dev/hugepages; then
			echo "$0: --prepare: cannot mount hugetlbfs on /dev/hugepages" >&2
			return 2
		fi
		echo "prepared: hugetlbfs mounted on /dev/hugepages"
	fi
	return 0
}

if [ -n "$prepare" ]; then
	prepare_host "$prepare" || exit $?
fi

fails=0
ok() {
	echo "ok   $*"
}
fail() {
	echo "FAIL $*"
	fails=$((fails + 1))
}

# libdpdk: what gradnet's meson build links the DPDK transport against.
if ! command -v pkg-config >/dev/null 2>&1; then
	fail "libdpdk: pkg-config is not installed, cannot look for libdpdk (apt install pkg-config)"
elif ver=$(pkg-config --modversion libdpdk 2>/dev/null); then
	ok "libdpdk $ver (pkg-config libdpdk)"
else
	fail "libdpdk: pkg-config finds no libdpdk (apt install libdpdk-dev, then rebuild gradnet: meson setup -Ddpdk=enabled)"
fi

# Hugepages: the EAL allocates its memory (mempool, rings) from them.
total=$(meminfo HugePages_Total)
free=$(meminfo HugePages_Free)
size=$(meminfo Hugepagesize)
if [ -z "$total" ]; then
	fail "hugepages: this kernel has none (no HugePages_Total in /proc/meminfo; CONFIG_HUGETLBFS off)"
elif [ "$total" -eq 0 ]; then
	fail "hugepages: none reserved (HugePages_Total 0 in /proc/meminfo; as root: $0 --prepare 1024, or hugepages=1024 on the kernel command line)"
elif [ "$free" -lt "$want_free" ]; then
	fail "hugepages: $free of $total free, $want_free wanted (other processes hold them, or reserve more: $0 --prepare N)"
else
	ok "hugepages: $free of $total free, ${size} kB each"
fi
mnt=$(hugetlbfs_mount)
if [ -n "$mnt" ]; then
	ok "hugetlbfs mounted on $mnt"
else
	fail "hugetlbfs: not mounted (as root: mount -t hugetlbfs nodev /dev/hugepages, or $0 --prepare N)"
fi

# IOMMU and vfio-pci: DPDK's PCI drivers reach the NIC through vfio.
if [ -n "$(ls -A /sys/kernel/iommu_groups 2>/dev/null)" ]; then
	ok "IOMMU: on ($(ls /sys/kernel/iommu_groups | wc -l) groups)"
elif [ "$(cat /sys/module/vfio/parameters/enable_unsafe_noiommu_mode 2>/dev/null)" = Y ]; then
	ok "IOMMU: off, vfio no-IOMMU mode is on (unsafe: the NIC can DMA anywhere)"
else
	fail "IOMMU: off (no /sys/kernel/iommu_groups; enable VT-d/AMD-Vi in the firmware and boot with intel_iommu=on iommu=pt, or amd_iommu=on)"
fi
kver=$(uname -r)
if [ -d /sys/module/vfio_pci ]; then
	ok "vfio-pci: loaded"
elif grep -qs '/vfio-pci\.ko' "/lib/modules/$kver/modules.builtin"; then
	ok "vfio-pci: built into the kernel"
elif command -v modprobe >/dev/null 2>&1 && modprobe -n vfio-pci >/dev/null 2>&1; then
	ok "vfio-pci: loadable (as root: modprobe vfio-pci)"
else
	fail "vfio-pci: neither loaded nor loadable for kernel $kver (install its modules, e.g. linux-image-$kver, then modprobe vfio-pci)"
fi

# The NIC: bound to vfio-pci, so that the kernel no longer drives it.
driver_of() {
	local l
	l=$(readlink "/sys/bus/pci/devices/$1/driver" 2>/dev/null) || return 1
	basename "$l"
}
devbind=$(command -v dpdk-devbind.py 2>/dev/null || true)
if [ -n "$pci" ]; then
	if [ ! -e "/sys/bus/pci/devices/$pci" ]; then
		fail "NIC $pci: no such PCI device (list them: ${devbind:-dpdk-devbind.py} --status-dev net, or lspci -D)"
	elif drv=$(driver_of "$pci") && [ "$drv" = vfio-pci ]; then
		ok "NIC $pci: bound to vfio-pci"
	else
		fail "NIC $pci: driven by ${drv:-no driver}, not vfio-pci (as root, with the interface down: dpdk-devbind.py --bind=vfio-pci $pci)"
	fi
else
	found=
	for d in /sys/bus/pci/devices/*; do
		[ -e "$d" ] || continue
		# class 0x02xxxx: a network controller
		case $(cat "$d/class" 2>/dev/null) in 0x02*) ;; *) continue ;; esac
		[ "$(driver_of "${d##*/}")" = vfio-pci ] && found="$found ${d##*/}"
	done
	if [ -n "$found" ]; then
		ok "NIC: bound to vfio-pci:$found (name one with --pci)"
	elif [ -n "$devbind" ]; then
		fail "NIC: no network device is bound to vfio-pci (see $devbind --status-dev net; bind one: dpdk-devbind.py --bind=vfio-pci ADDR)"
	else
		fail "NIC: no network device is bound to vfio-pci (dpdk-devbind.py is not installed either: apt install dpdk, then dpdk-devbind.py --bind=vfio-pci ADDR)"
	fi
fi

# CPUs: the poll loop and the trainer each want a core of their own.
cpus=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)
if [ "$cpus" -ge 2 ]; then
	ok "CPUs: $cpus online (keep the poll loop and the trainer on different cores)"
else
	fail "CPUs: $cpus online; the poll loop and the trainer need at least 2 cores"
fi

if [ "$fails" -gt 0 ]; then
	echo "$fails check(s) failed: this host cannot run gradnet's DPDK path on a NIC yet"
	exit 1
fi
echo "all checks passed"
exit 0
