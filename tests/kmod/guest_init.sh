#!/bin/busybox sh
# SPDX-License-Identifier: MIT
# shellcheck shell=dash disable=SC2013 # the lists hold one plain word a line
#
# guest_init.sh - /init of guest.sh's initramfs: mounts, loads the kernel
# modules and gradnet.ko, runs every case of /gn/cases.list in order, then
# unloads gradnet and prints the kernel log. Every line goes to the serial
# console with a marker guest.sh reads: "GN-OUT CASE: ", "GN-END CASE RC",
# "GN-KLOG: ", "GN-DONE".
/bin/busybox --install -s /bin
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
mkdir -p /var
ln -s /run /var/run
ln -s /proc/self/fd /dev/fd
ip link set lo up

# say CASE LINE...: one line of CASE's output.
say() {
	c=$1
	shift
	echo "GN-OUT $c: $*"
}

boot() {
	rc=0
	for m in $(cat /kmods/order); do
		if ! insmod "/kmods/$m"; then
			say boot "not ok - insmod $m"
			rc=1
		fi
	done
	[ "$rc" -eq 0 ] && say boot "ok - kernel modules loaded: $(tr '\n' ' ' </kmods/order)"
	if insmod /gn/gradnet.ko; then
		say boot "ok - insmod gradnet.ko"
	else
		say boot "not ok - insmod gradnet.ko"
		rc=1
	fi
	if [ -c /dev/gradnet ]; then
		say boot "ok - /dev/gradnet is a character device"
	else
		say boot "not ok - /dev/gradnet is a character device"
		rc=1
	fi
	echo "GN-END boot $rc"
}

run_case() {
	echo "GN-BEGIN $1"
	(cd /tmp && /usr/bin/bash "/gn/cases/$1.sh" 2>&1
	 echo $? >"/tmp/rc.$1") | sed "s/^/GN-OUT $1: /"
	echo "GN-END $1 $(cat "/tmp/rc.$1" 2>/dev/null || echo 99)"
}

boot
for c in $(cat /gn/cases.list); do
	run_case "$c"
done
# A case may have unloaded it (the kill case does, and loads it again).
if rmmod gradnet; then
	say end "ok - rmmod gradnet after the last case"
	echo "GN-END end 0"
else
	say end "not ok - rmmod gradnet after the last case (refcnt $(cat /sys/module/gradnet/refcnt 2>/dev/null))"
	echo "GN-END end 1"
fi
dmesg | sed 's/^/GN-KLOG: /'
echo "GN-DONE"
poweroff -f
