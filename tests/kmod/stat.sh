#!/bin/sh
# SPDX-License-Identifier: MIT
#
# stat.sh - gradnet-stat on the kernel module's tracepoints, in QEMU:
# builds the module against Debian's 6.1 headers as selftest.sh does,
# boots Debian's 6.1 kernel (TCG) with a busybox initramfs that holds the
# module, gradnet-stat and its shared libraries, and in the guest:
#  - attach --kmod before the module is loaded fails and says why
#  - insmod (the load-time self-tests run, unobserved), attach --kmod,
#    then a rerun of the core self-test (the rerun_core_selftest module
#    parameter) sends its packets through the tracepoints
#  - dump --json, then rmmod fails while the links hold the module,
#    detach --kmod unpins exactly the tracepoint links, detach the rest,
#    and rmmod succeeds
# On the host, tests/bpf/check_stat.py compares the dump with what the
# rerun logged (fabric packets sent, retransmits, duplicates dropped per
# case) and with the scenario's shape (every step of every rank).
#
# usage: stat.sh SOURCE_ROOT GRADNET_STAT
# Exit: 0 pass, 1 fail. Nothing skips: a missing kernel image, headers,
# qemu or busybox-static fails the test, as a missing capability should.
# GN_QEMU_TIMEOUT bounds the guest run in seconds (default 600).

# shellcheck disable=SC2317 # cleanup is called indirectly
set -eu

root=$(cd "$1" && pwd)
stat_bin=$2
qemu_timeout=${GN_QEMU_TIMEOUT:-600}
tmp=
qemu_pid=
tests=0
failed=0

cleanup() {
	if [ -n "$qemu_pid" ]; then
		kill "$qemu_pid" 2>/dev/null || true
	fi
	if [ -n "$tmp" ]; then
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

cannot_run() {
	echo "1..1"
	echo "not ok 1 the test cannot run: $*"
	exit 1
}

result() {
	tests=$((tests + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $tests $2"
	else
		echo "not ok $tests $2"
		failed=$((failed + 1))
	fi
}

check() {
	desc=$1
	shift
	if "$@"; then
		result 0 "$desc"
	else
		result 1 "$desc"
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

check_tools() {
	kver=$(find_kernel)
	[ -n "$kver" ] ||
		cannot_run "no 6.1.*-amd64 kernel with headers and /boot/vmlinuz (linux-image-amd64, linux-headers-amd64)"
	for t in make qemu-system-x86_64 cpio timeout readelf ldd python3; do
		command -v "$t" >/dev/null || cannot_run "$t not installed"
	done
	[ -x "$stat_bin" ] || cannot_run "$stat_bin not built"
	busybox=/bin/busybox
	[ -x "$busybox" ] || cannot_run "busybox-static not installed"
	if readelf -l "$busybox" | grep -q 'Requesting program interpreter'; then
		cannot_run "$busybox is not static (install busybox-static)"
	fi
}

# In a copy of the sources, with the command the README gives.
build_module() {
	mkdir -p "$tmp/src/tests"
	cp -R "$root/Kbuild" "$root/kmod" "$root/lib" "$root/include" "$root/bpf" \
		"$tmp/src/"
	cp -R "$root/tests/golden" "$root/tests/core" "$tmp/src/tests/"
	find "$tmp/src" \( -name '*.o' -o -name '.*.cmd' -o -name '*.ko' \) \
		-delete
	(cd "$tmp/src" &&
	 make -C "/lib/modules/$kver/build" M="$PWD" modules) \
		>"$tmp/build.log" 2>&1
}

# The guest's steps; each marker line is matched on the host.
write_init() {
	cat >"$1" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t bpf bpf /sys/fs/bpf
mount -t tracefs tracefs /sys/kernel/tracing
export LD_LIBRARY_PATH=/lib/gn
st=/bin/gradnet-stat
marker() { echo "GN-$1: $2"; }
$st attach --kmod >/early.out 2>&1; marker EARLY-RC $?
sed 's/^/GN-EARLY: /' /early.out
insmod /gradnet.ko; marker INSMOD $?
marker EVENTS "$(ls /sys/kernel/tracing/events/gradnet | tr '\n' ' ')"
$st attach --kmod 2>&1 | sed 's/^/GN-ATTACH: /'
marker LINKS "$(ls /sys/fs/bpf/gradnet/links 2>&1 | tr '\n' ' ')"
dmesg -c >/dev/null
echo 1 >/sys/module/gradnet/parameters/rerun_core_selftest; marker RERUN $?
marker RERUN-RESULT "$(cat /sys/module/gradnet/parameters/rerun_core_selftest)"
$st dump --json >/dump.json 2>&1; marker DUMP $?
sed 's/^/GN-JSON: /' /dump.json
dmesg | grep 'gradnet' | sed 's/^/GN-LOG: /'
rmmod gradnet 2>/dev/null; marker RMMOD-HELD $?
$st detach --kmod 2>&1 | sed 's/^/GN-DETACH-KMOD: /'
marker LEFT "$(ls -A /sys/fs/bpf/gradnet/links 2>&1 | tr '\n' ' ')"
marker MAPS "$(ls /sys/fs/bpf/gradnet 2>&1 | tr '\n' ' ')"
$st detach >/dev/null 2>&1; marker DETACH $?
marker BPFFS "$(ls -A /sys/fs/bpf 2>&1 | tr '\n' ' ')"
rmmod gradnet; marker RMMOD $?
echo "GN-DONE"
poweroff -f
EOF
	chmod 755 "$1"
}

# gradnet-stat and every shared library it loads, with the loader.
build_initramfs() {
	ir=$tmp/initramfs
	mkdir -p "$ir/bin" "$ir/proc" "$ir/sys" "$ir/dev" "$ir/lib/gn" \
		"$ir/lib64"
	cp "$busybox" "$ir/bin/busybox"
	cp "$stat_bin" "$ir/bin/gradnet-stat"
	cp "$tmp/src/gradnet.ko" "$ir/gradnet.ko"
	ldd "$stat_bin" | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p' >"$tmp/libs"
	while read -r lib; do
		cp -L "$lib" "$ir/lib/gn/"
	done <"$tmp/libs"
	interp=$(readelf -l "$stat_bin" |
		sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
	mkdir -p "$ir$(dirname "$interp")"
	cp -L "$interp" "$ir$interp"
	write_init "$ir/init"
	(cd "$ir" && find . | cpio -o -H newc --quiet) >"$tmp/initramfs.cpio"
}

boot_guest() {
	start=$(date +%s)
	timeout "$qemu_timeout" qemu-system-x86_64 \
		-accel tcg -cpu max -m 512M -smp 1 \
		-nographic -no-reboot -nic none \
		-kernel "/boot/vmlinuz-$kver" -initrd "$tmp/initramfs.cpio" \
		-append "console=ttyS0 quiet panic=-1" \
		</dev/null >"$tmp/console.raw" 2>&1 &
	qemu_pid=$!
	qemu_rc=0
	wait "$qemu_pid" || qemu_rc=$?
	qemu_pid=
	elapsed=$(($(date +%s) - start))
	tr -d '\r' <"$tmp/console.raw" >"$tmp/console.log"
}

# The value of marker $1 (the firmware may leave escapes before a line).
marker() {
	sed -n "s/.*GN-$1: //p" "$tmp/console.log" | head -n 1
}

is() {
	[ "$(marker "$1")" = "$2" ]
}

early_error_says_why() {
	[ "$(marker EARLY-RC)" != 0 ] &&
		grep -q 'GN-EARLY: .*module is not loaded' "$tmp/console.log"
}

# The six tracepoints of kmod/trace.h, each with its pinned link.
all_links() {
	for tp in gn_msg gn_tx gn_tx_ctl gn_rx gn_drop gn_step; do
		case " $(marker LINKS) " in
		*" kmod-$tp "*) ;;
		*) return 1 ;;
		esac
	done
}

all_events() {
	for tp in gn_msg gn_tx gn_tx_ctl gn_rx gn_drop gn_step; do
		case " $(marker EVENTS) " in
		*" $tp "*) ;;
		*) return 1 ;;
		esac
	done
}

check_guest() {
	sed -n 's/.*GN-JSON: //p' "$tmp/console.log" >"$tmp/dump.json"
	sed -n 's/.*GN-LOG: \(\[[^]]*\] \)\{0,1\}//p' "$tmp/console.log" \
		>"$tmp/log"
	check "guest booted, ran init and powered off in ${elapsed}s (qemu rc $qemu_rc)" \
		grep -q 'GN-DONE' "$tmp/console.log"
	check "attach --kmod without the module fails and says it is not loaded" \
		early_error_says_why
	check "insmod gradnet.ko succeeded" is INSMOD 0
	check "tracefs lists the module's six events" all_events
	check "attach --kmod pinned a link per tracepoint" all_links
	check "the rerun of the core self-test passed (write and read back 0)" \
		sh -c "[ '$(marker RERUN)' = 0 ] && [ '$(marker RERUN-RESULT)' = 0 ]"
	check "the rerun logged its summary: PASS" \
		grep -q '^gradnet: selftest core summary: PASS,' "$tmp/log"
	check "dump --json succeeded" is DUMP 0
	python3 "$root/tests/bpf/check_stat.py" kmod "$tmp/dump.json" \
		"$tmp/log" "$root/tests/core/scenario.h" >"$tmp/tap" 2>&1 || true
	while read -r line; do
		case $line in
		"ok "*) result 0 "${line#ok * - }" ;;
		"not ok "*) result 1 "${line#not ok * - }" ;;
		*) echo "$line" ;;
		esac
	done <"$tmp/tap"
	check "rmmod fails while the pinned links hold the module" \
		sh -c "[ '$(marker RMMOD-HELD)' != 0 ]"
	check "detach --kmod unpinned the tracepoint links and left the maps" \
		sh -c "[ -z '$(marker LEFT)' ] && echo ' $(marker MAPS) ' | grep -q ' gn_flows '"
	check "detach then leaves nothing pinned in bpffs" \
		sh -c "[ '$(marker DETACH)' = 0 ] && [ -z '$(marker BPFFS)' ]"
	check "rmmod gradnet succeeds after detach" is RMMOD 0
}

main() {
	check_tools
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/gradnet-kstat.XXXXXX")
	echo "TAP version 13"
	echo "# kernel $kver, sources $root, $stat_bin"
	if ! build_module; then
		sed 's/^/# /' "$tmp/build.log"
		echo "1..1"
		echo "not ok 1 module builds against $kver headers"
		exit 1
	fi
	build_initramfs
	boot_guest
	result 0 "module builds against $kver headers"
	check_guest
	echo "1..$tests"
	if [ "$failed" -ne 0 ]; then
		echo "# guest console:"
		sed 's/^/#   /' "$tmp/console.log"
		exit 1
	fi
	sed -n 's/^gradnet: selftest core .*: sent/# &/p' "$tmp/log"
	exit 0
}

main
