#!/bin/sh
# SPDX-License-Identifier: MIT
#
# bench.sh - the kmod path against the UDP path, measured in one QEMU guest
# (tests/kmod/cases/bench.sh through guest.sh, 3 GiB, 2 vCPUs): two ranks,
# 3LC, 1 M and 25 M floats; prints the slowest rank's median seconds per
# allreduce on each path and their ratio. Under TCG only the ratio means
# anything.
#
# usage: tests/kmod/bench.sh [SOURCE_ROOT [BUILD_DIR]]
#	(default: this tree and its build/; run ninja -C BUILD_DIR first)
set -eu

root=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
build=${2:-$root/build}
echo "# command: tests/kmod/bench.sh $root $build; host: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
GN_GUEST_MEM=${GN_GUEST_MEM:-3G} GN_QEMU_TIMEOUT=${GN_QEMU_TIMEOUT:-3600} \
	exec "$root/tests/kmod/guest.sh" "$root" "$build" bench
