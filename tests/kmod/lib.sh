# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# shellcheck disable=SC2154,SC2034 # $root, $tmp are the caller's; it reads
# $qemu_rc, $elapsed
#
# lib.sh - sourced by the QEMU tests (selftest.sh, guest.sh, stat.sh): TAP
# results, the Debian 6.1 kernel to boot, the module built from a copy of
# the sources, an initramfs put together from host binaries (with the shared
# libraries ldd names) and kernel modules (with what modules.dep says they
# need), and one TCG boot whose serial console is the test's output.
#
# The caller sets $root (the source tree) and $tmp (a scratch directory it
# removes), and $missing_rc: the exit code when the host lacks a part
# (selftest.sh skips with it; guest.sh and stat.sh fail).

tests=0
failed=0
qemu_pid=

# result STATUS DESCRIPTION: one TAP line for a check that gave STATUS.
result() {
	tests=$((tests + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $tests $2"
	else
		echo "not ok $tests $2"
		failed=$((failed + 1))
	fi
}

# check DESCRIPTION COMMAND...: one TAP line, ok if COMMAND succeeds.
check() {
	desc=$1
	shift
	if "$@"; then
		result 0 "$desc"
	else
		result 1 "$desc"
	fi
}

# missing WHAT: the host lacks a part the test needs; a TAP plan that says
# so and $missing_rc (4 or meson's 77 to skip, 1 to fail).
missing() {
	if [ "${missing_rc:-1}" -eq 1 ]; then
		echo "1..1"
		echo "not ok 1 $* (tools/run.sh installs it)"
	else
		echo "1..0 # SKIP $*"
	fi
	exit "${missing_rc:-1}"
}

kill_guest() {
	if [ -n "$qemu_pid" ]; then
		kill "$qemu_pid" 2>/dev/null || true
	fi
}

# The newest 6.1 Debian kernel that has both headers and an image.
find_kernel() {
	for d in /lib/modules/6.1.*-amd64; do
		v=${d##*/}
		if [ -e "$d/build/Makefile" ] && [ -r "/boot/vmlinuz-$v" ]; then
			echo "$v"
		fi
	done | sort -V | tail -n 1
}

# Sets $kver and $busybox, or stops with missing().
check_tools() {
	kver=$(find_kernel)
	[ -n "$kver" ] ||
		missing "no 6.1.*-amd64 kernel with headers and /boot/vmlinuz"
	for t in make qemu-system-x86_64 cpio timeout readelf "$@"; do
		command -v "$t" >/dev/null || missing "$t not installed"
	done
	busybox=/bin/busybox
	[ -x "$busybox" ] || missing "busybox-static not installed"
	# A dynamic busybox would need its libraries in the initramfs.
	if readelf -l "$busybox" | grep -q 'Requesting program interpreter'; then
		missing "$busybox is not static (install busybox-static)"
	fi
}

# Builds in a copy of the sources, so the tree stays clean and runs in
# parallel do not share objects; the command is the one doc/kmod.md gives.
# The module is $tmp/src/gradnet.ko, the log $tmp/build.log.
build_module() {
	mkdir -p "$tmp/src/tests"
	cp -R "$root/Kbuild" "$root/kmod" "$root/lib" "$root/include" "$root/bpf" \
		"$tmp/src/"
	cp -R "$root/tests/golden" "$root/tests/core" "$tmp/src/tests/"
	# Leftovers of an in-tree build would be taken as up to date.
	find "$tmp/src" \( -name '*.o' -o -name '.*.cmd' -o -name '*.ko' \) \
		-delete
	(cd "$tmp/src" &&
	 make -C "/lib/modules/$kver/build" M="$PWD" modules) \
		>"$tmp/build.log" 2>&1
}

# ir_new DIR: start an initramfs tree at DIR with busybox ($ir is DIR).
ir_new() {
	ir=$1
	mkdir -p "$ir/bin" "$ir/proc" "$ir/sys" "$ir/dev" "$ir/run" "$ir/tmp"
	cp "$busybox" "$ir/bin/busybox"
}

# ir_add_binary FILE [DEST]: FILE at DEST (default: its own path) in the
# initramfs, with every shared library ldd finds for it, at their paths.
ir_add_binary() {
	dest=${2:-$1}
	mkdir -p "$ir${dest%/*}"
	cp -L "$1" "$ir$dest"
	# "lib => /path (addr)" and "/lib64/ld-linux-x86-64.so.2 (addr)".
	ldd "$1" 2>/dev/null | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p' |
	while read -r lib; do
		[ -e "$ir$lib" ] && continue
		mkdir -p "$ir${lib%/*}"
		cp -L "$lib" "$ir$lib"
	done
	if ldd "$1" 2>&1 | grep -q 'not found'; then
		echo "ir_add_binary: $1 needs a library ldd cannot find" >&2
		return 1
	fi
}

# kmod_deps NAME: the kernel's module NAME and every module it needs,
# dependencies first, as paths relative to /lib/modules/$kver. A subshell:
# sh has no local variables, and it recurses.
kmod_deps() (
	dep=/lib/modules/$kver/modules.dep
	line=$(grep -E "(^|/)$1\\.ko(\\.xz)?:" "$dep") || {
		echo "kmod_deps: $kver has no module $1 in modules.dep" >&2
		return 1
	}
	for d in ${line#*:}; do
		kmod_deps "$(basename "${d%.xz}" .ko)" || return 1
	done
	echo "${line%%:*}"
)

# ir_add_kmods NAME...: those kernel modules and their dependencies into
# /kmods of the initramfs, decompressed, with /kmods/order: the insmod
# order. Built-in modules are not in modules.dep: a module that is neither
# built in nor there is an error.
ir_add_kmods() {
	mkdir -p "$ir/kmods"
	for m in "$@"; do
		if grep -qE "/$m\\.ko\$" "/lib/modules/$kver/modules.builtin" 2>/dev/null; then
			continue
		fi
		kmod_deps "$m" >"$tmp/deps" || return 1
		while read -r rel; do
			name=$(basename "${rel%.xz}")
			grep -qx "$name" "$ir/kmods/order" 2>/dev/null && continue
			case $rel in
			*.xz) xz -dc "/lib/modules/$kver/$rel" >"$ir/kmods/$name" ;;
			*) cp "/lib/modules/$kver/$rel" "$ir/kmods/$name" ;;
			esac
			echo "$name" >>"$ir/kmods/order"
		done <"$tmp/deps"
	done
}

# ir_pack: the tree at $ir as $tmp/initramfs.cpio.
ir_pack() {
	(cd "$ir" && find . | cpio -o -H newc --quiet) >"$tmp/initramfs.cpio"
}

# boot_guest [MEMORY [CPUS]]: boot $kver with $tmp/initramfs.cpio; the
# console, without carriage returns, is $tmp/console.log; $elapsed and
# $qemu_rc say how it went. TCG only: -enable-kvm is not used. "-cpu max"
# gives the guest AVX2. The guest has no NIC: the tests build their
# networks from veth pairs and a bridge inside it.
boot_guest() {
	start=$(date +%s)
	timeout "${qemu_timeout:-300}" qemu-system-x86_64 \
		-accel tcg -cpu max -m "${1:-512M}" -smp "${2:-1}" \
		-nographic -no-reboot -nic none \
		-kernel "/boot/vmlinuz-$kver" -initrd "$tmp/initramfs.cpio" \
		-append "console=ttyS0 quiet loglevel=1 panic=-1 ${boot_args:-}" \
		</dev/null >"$tmp/console.raw" 2>&1 &
	qemu_pid=$!
	qemu_rc=0
	wait "$qemu_pid" || qemu_rc=$?
	qemu_pid=
	elapsed=$(($(date +%s) - start))
	tr -d '\r' <"$tmp/console.raw" >"$tmp/console.log"
}
