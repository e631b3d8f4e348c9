#!/bin/sh
# SPDX-License-Identifier: MIT
#
# guest.sh - run test cases of the kernel-module data path inside one boot
# of Debian's 6.1 kernel in QEMU (TCG).
#
# usage: guest.sh SOURCE_ROOT BUILD_DIR CASE...
#
# Builds the module from SOURCE_ROOT (as selftest.sh does) and an
# initramfs holding busybox, bash, iproute2's ip and bridge (with their
# shared libraries), the kernel modules the cases and gradnet.ko need
# (veth, bridge, udp_tunnel, ip6_udp_tunnel and their dependencies), the
# test programs of BUILD_DIR (tests/kmod/kmod_job, tests/kmod/ioctl_fuzz,
# tests/kmod/kmod_limits, tests/kmod/kmod_flood, tools/gradnet-rank, with
# their libraries), tests/net/lib.sh and each
# tests/kmod/cases/CASE.sh. The reference results a case names on a
# "# ref: NAME WORLD STEPS TENSORS [JOB]" line (JOB: the job id its ranks
# run with, which stochastic codecs draw by) are computed here, on the host,
# by kmod_job ref: TCG is too slow for them. The guest (guest_init.sh)
# loads the modules, runs the cases one after the other and powers off;
# every line a case prints comes back on the serial console, and its
# "ok"/"not ok" lines become this script's TAP lines. Whatever the cases
# say, the test fails if the guest did not finish every case, if gradnet
# did not load or unload, or if the kernel log shows an Oops, BUG,
# WARNING, lockdep, KASAN or UBSAN report.
#
# A missing part (kernel, qemu, a program, a kernel module) fails the
# test: nothing here skips. GN_QEMU_TIMEOUT bounds the boot in seconds
# (default 900); GN_GUEST_MEM (default 1G) and GN_GUEST_CPUS (default 2)
# size the guest; KT_FUZZ_SECONDS, KT_BENCH_ROUNDS and KT_CHURN_JOBS reach
# the cases.

# shellcheck disable=SC2317 # cleanup is called by the trap
set -eu

missing_rc=1
qemu_timeout=${GN_QEMU_TIMEOUT:-900}
[ $# -ge 3 ] || { echo "usage: guest.sh SOURCE_ROOT BUILD_DIR CASE..." >&2; exit 2; }
root=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
shift 2
cases=$*
here=$root/tests/kmod
tmp=
# shellcheck source=tests/kmod/lib.sh
. "$here/lib.sh"

cleanup() {
	kill_guest
	if [ -n "$tmp" ]; then
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# The binaries the guest runs, from BUILD_DIR.
programs="$build/tests/kmod/kmod_job $build/tests/kmod/ioctl_fuzz
	$build/tests/kmod/kmod_limits $build/tests/kmod/kmod_flood
	$build/tools/gradnet-rank"

check_parts() {
	check_tools xz ldd bash ip bridge modinfo
	for c in $cases; do
		[ -r "$here/cases/$c.sh" ] || missing "no case tests/kmod/cases/$c.sh"
	done
	for p in $programs; do
		[ -x "$p" ] || missing "$p not built (ninja -C $build)"
	done
}

# The references the cases ask for, as "hash STEP TENSOR HEX" lines.
build_refs() {
	mkdir -p "$ir/gn/ref"
	for c in $cases; do
		sed -n 's/^# ref: //p' "$here/cases/$c.sh" |
		while read -r name world steps spec job; do
			echo "$world $steps $spec $job" >"$ir/gn/ref/$name.args"
			"$build/tests/kmod/kmod_job" ref --world "$world" \
				--steps "$steps" --tensors "$spec" ${job:+--job "$job"} |
				sort >"$ir/gn/ref/$name.hash" || return 1
		done
	done
}

build_initramfs() {
	ir_new "$tmp/initramfs"
	mkdir -p "$ir/gn/cases" "$ir/gn/net" "$ir/gn/bin"
	cp "$tmp/src/gradnet.ko" "$ir/gn/gradnet.ko"
	cp "$here/guest_init.sh" "$ir/init"
	chmod 755 "$ir/init"
	cp "$here/guest_lib.sh" "$ir/gn/lib.sh"
	cp "$root/tests/net/lib.sh" "$ir/gn/net/lib.sh"
	for c in $cases; do
		cp "$here/cases/$c.sh" "$ir/gn/cases/"
		echo "$c" >>"$ir/gn/cases.list"
	done
	ir_add_binary "$(command -v bash)" /usr/bin/bash
	ir_add_binary "$(command -v ip)" /usr/sbin/ip
	ir_add_binary "$(command -v bridge)" /usr/sbin/bridge
	for p in $programs; do
		ir_add_binary "$p" "/gn/bin/${p##*/}"
	done
	# gradnet-rank's gradients (tools/gradnet-rank.c), for the benchmark.
	cp -R "$root/data/gradients" "$ir/gn/data"
	# What gradnet.ko needs (udp_tunnel, ...) and the test networks use.
	# shellcheck disable=SC2046 # one module name per word
	ir_add_kmods veth bridge udp_tunnel ip6_udp_tunnel \
		$(modinfo -F depends "$tmp/src/gradnet.ko" | tr ',' ' ')
	# The cases' knobs, from this host's environment.
	for v in KT_FUZZ_SECONDS KT_BENCH_ROUNDS KT_CHURN_JOBS; do
		eval "val=\${$v:-}"
		[ -z "$val" ] || echo "$v=$val" >>"$ir/gn/env"
	done
	build_refs
	ir_pack
}

# tap_line CASE LINE: one line a case printed, as TAP or a comment.
tap_line() {
	case $2 in
	"ok"*)
		result 0 "$1: $(echo "$2" | sed 's/^ok \{0,1\}[0-9]* \{0,1\}-\{0,1\} *//')"
		echo ok >>"$tmp/seen.$1" ;;
	"not ok"*)
		result 1 "$1: $(echo "$2" | sed 's/^not ok \{0,1\}[0-9]* \{0,1\}-\{0,1\} *//')"
		echo "not ok" >>"$tmp/seen.$1" ;;
	"#"*)	echo "# $1: ${2#\#}" ;;
	*)	echo "#   $1| $2" ;;
	esac
}

# What case $1 printed; it fails if it never said ok, did not end, or
# exited nonzero without a "not ok" line to say why.
report_case() {
	: >"$tmp/seen.$1"
	sed -n "s/.*GN-OUT $1: //p" "$tmp/console.log" >"$tmp/out.$1"
	while IFS= read -r line; do
		tap_line "$1" "$line"
	done <"$tmp/out.$1"
	end=$(sed -n "s/.*GN-END $1 \\([0-9]*\\)\$/\\1/p" "$tmp/console.log")
	if [ -z "$end" ]; then
		result 1 "$1: the case ran to its end (the guest crashed, hung or timed out)"
	elif [ "$end" -ne 0 ] && ! grep -qx "not ok" "$tmp/seen.$1"; then
		result 1 "$1: the case exited with status $end"
	fi
	grep -qx ok "$tmp/seen.$1" ||
		result 1 "$1: the case reported at least one passing check"
}

# The kernel's complaints: in the log the guest printed at its end, and
# on the console itself (an Oops or a panic is printed there at once, and
# a guest that dies never prints its log); cases' own lines are not read.
kernel_complaints() {
	{
		sed -n 's/.*GN-KLOG: //p' "$tmp/console.log"
		grep -v -e 'GN-KLOG: ' -e 'GN-OUT ' "$tmp/console.log"
	} | complaints
}

# The lines of stdin that report a kernel bug.
complaints() {
	grep -E 'Oops|BUG:|kernel BUG|WARNING:|lockdep|possible (circular|recursive) locking|KASAN|UBSAN|general protection fault|Call Trace:|refcount_t:|list_(add|del) corruption|INFO: task .* blocked|scheduling while atomic|sleeping function called from invalid context|inconsistent lock state|stack-protector|double fault'
}

# The check must be able to fail: three complaints as the 6.1 kernel
# words them, and a line that is none.
sample_caught() {
	n=$(printf '%s\n' \
		'[ 9.1] WARNING: CPU: 1 PID: 7 at kmod/dev.c:9 gk_ioctl+0x1/0x2 [gradnet]' \
		'[ 9.2] BUG: kernel NULL pointer dereference, address: 0000000000000008' \
		'[ 9.3] WARNING: possible circular locking dependency detected' \
		'[ 9.4] gradnet: selftest summary: PASS' | complaints | wc -l)
	[ "$n" -eq 3 ]
}

check_guest() {
	check "guest booted, ran every case and powered off in ${elapsed}s (qemu rc $qemu_rc)" \
		grep -q 'GN-DONE' "$tmp/console.log"
	report_case boot
	for c in $cases; do
		report_case "$c"
	done
	report_case end
	check "kernel-log check: catches a WARNING, a BUG and a lockdep splat in a sample" \
		sample_caught
	if kernel_complaints >"$tmp/complaints"; then
		result 1 "kernel log: no Oops, BUG, WARNING, lockdep, KASAN or UBSAN report"
		sed 's/^/#   /' "$tmp/complaints"
	else
		check "kernel log: no Oops, BUG, WARNING, lockdep, KASAN or UBSAN report (read: $(grep -c 'GN-KLOG: ' "$tmp/console.log") lines)" \
			grep -q 'GN-KLOG: ' "$tmp/console.log"
	fi
}

main() {
	check_parts
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/gradnet-guest.XXXXXX")
	echo "TAP version 13"
	echo "# kernel $kver, sources $root, build $build, cases: $cases"
	if ! build_module; then
		sed 's/^/# /' "$tmp/build.log"
		echo "1..1"
		echo "not ok 1 module builds against $kver headers"
		exit 1
	fi
	result 0 "module builds against $kver headers"
	if ! build_initramfs 2>"$tmp/ir.log"; then
		sed 's/^/# /' "$tmp/ir.log"
		result 1 "initramfs: programs, libraries, kernel modules, references"
		echo "1..$tests"
		exit 1
	fi
	boot_guest "${GN_GUEST_MEM:-1G}" "${GN_GUEST_CPUS:-2}"
	check_guest
	echo "1..$tests"
	if [ "$failed" -ne 0 ]; then
		echo "# guest console (kernel log lines are above the checks):"
		grep -v 'GN-KLOG: ' "$tmp/console.log" | sed 's/^/#   /' | tail -n 200
		sed -n 's/.*GN-KLOG: /#   klog| /p' "$tmp/console.log" | tail -n 120
		exit 1
	fi
	exit 0
}

main
