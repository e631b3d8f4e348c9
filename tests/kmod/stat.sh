#!/bin/sh
# SPDX-License-Identifier: MIT
#
# stat.sh - gradnet-stat on the kernel module's tracepoints, in QEMU:
# with lib.sh, the harness selftest.sh and guest.sh share, builds the
# module against Debian's 6.1 headers, boots Debian's 6.1 kernel (TCG)
# with a busybox initramfs that holds the module, the tunnel socket's
# modules it needs, gradnet-stat and its shared libraries, and in the guest:
#  - attach --kmod before the module is loaded fails and says why
#  - insmod of the tunnel modules, then of gradnet.ko (the load-time
#    self-tests run, unobserved), attach --kmod,
#    then a rerun of the core self-test (the rerun_core_selftest module
#    parameter) sends its packets through the tracepoints, with
#    kernel.bpf_stats_enabled on, so bpftool counts the programs' runs
#  - dump --json, then rmmod fails while the links hold the module,
#    detach --kmod unpins exactly the tracepoint links, detach the rest,
#    and rmmod succeeds
# On the host, tests/bpf/check_stat.py compares the dump with what the
# rerun logged (fabric packets sent, retransmits, duplicates dropped per
# case) and with the scenario's shape (every step of every rank), and
# checks that the tracepoints fired fewer times than there were events
# (the core coalesces a flow's events within a poll).
#
# usage: stat.sh SOURCE_ROOT GRADNET_STAT
# Exit: 0 pass, 1 fail. Nothing skips: a missing kernel image, headers,
# qemu or busybox-static fails the test, as a missing capability should.
# GN_QEMU_TIMEOUT bounds the guest run in seconds (default 600).

# shellcheck disable=SC2317 # cleanup is called indirectly
set -eu

missing_rc=1
root=$(cd "$1" && pwd)
stat_bin=$2
qemu_timeout=${GN_QEMU_TIMEOUT:-600}
tmp=
# shellcheck source=tests/kmod/lib.sh
. "$(dirname "$0")/lib.sh"

cleanup() {
	kill_guest
	if [ -n "$tmp" ]; then
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

check_parts() {
	check_tools ldd python3 modinfo
	[ -x "$stat_bin" ] || missing "$stat_bin not built"
	bpftool_bin=$(PATH=$PATH:/usr/sbin command -v bpftool) ||
		missing "bpftool not installed"
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
st=/bin/gradnet-stat
marker() { echo "GN-$1: $2"; }
$st attach --kmod >/early.out 2>&1; marker EARLY-RC $?
sed 's/^/GN-EARLY: /' /early.out
for m in $(cat /kmods/order 2>/dev/null); do
	insmod "/kmods/$m"
done
insmod /gradnet.ko; marker INSMOD $?
marker EVENTS "$(ls /sys/kernel/tracing/events/gradnet | tr '\n' ' ')"
$st attach --kmod 2>&1 | sed 's/^/GN-ATTACH: /'
marker LINKS "$(ls /sys/fs/bpf/gradnet/links 2>&1 | tr '\n' ' ')"
dmesg -c >/dev/null
echo 1 >/proc/sys/kernel/bpf_stats_enabled
echo 1 >/sys/module/gradnet/parameters/rerun_core_selftest; marker RERUN $?
marker RERUN-RESULT "$(cat /sys/module/gradnet/parameters/rerun_core_selftest)"
$st dump --json >/dump.json 2>&1; marker DUMP $?
# Runs of the tracepoint programs: one record per '}', name before run_cnt.
marker HITS "$(bpftool prog show -j | awk -v RS='}' '/"name":"gn_kmod_/ {
	if (match($0, /"run_cnt":[0-9]+/)) s += substr($0, RSTART + 10, RLENGTH - 10) }
	END { print s + 0 }')"
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

# gradnet-stat with its shared libraries, the module, and the tunnel
# socket's modules it needs (insmod, unlike modprobe, does not load them).
build_initramfs() {
	ir_new "$tmp/initramfs"
	cp "$tmp/src/gradnet.ko" "$ir/gradnet.ko"
	# shellcheck disable=SC2046 # one module name per word
	ir_add_kmods udp_tunnel ip6_udp_tunnel \
		$(modinfo -F depends "$tmp/src/gradnet.ko" | tr ',' ' ') || return 1
	ir_add_binary "$stat_bin" /bin/gradnet-stat || return 1
	ir_add_binary "$bpftool_bin" /bin/bpftool || return 1
	write_init "$ir/init"
	ir_pack
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
		"$tmp/log" "$root/tests/core/scenario.h" "$(marker HITS)" \
		>"$tmp/tap" 2>&1 || true
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
	check_parts
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/gradnet-kstat.XXXXXX")
	echo "TAP version 13"
	echo "# kernel $kver, sources $root, $stat_bin"
	if ! build_module; then
		sed 's/^/# /' "$tmp/build.log"
		echo "1..1"
		echo "not ok 1 module builds against $kver headers"
		exit 1
	fi
	result 0 "module builds against $kver headers"
	if ! build_initramfs 2>"$tmp/ir.log"; then
		sed 's/^/# /' "$tmp/ir.log"
		result 1 "initramfs: gradnet-stat, its libraries, kernel modules"
		echo "1..$tests"
		exit 1
	fi
	boot_guest 512M 1
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
