#!/bin/sh
# SPDX-License-Identifier: MIT
#
# selftest.sh - build the gradnet kernel module against Debian's 6.1 headers,
# boot Debian's 6.1 kernel in QEMU (TCG) with a busybox initramfs that loads
# it, and check from the kernel log that the module's self-tests passed:
# the codec's, every golden vector for the scalar code and for each SIMD
# instruction set the guest CPU has; lib/wire's and the cryptography's,
# every known answer of the kernel's ChaCha20-Poly1305 and BLAKE2s and of
# the key schedule, and every golden packet, with the library's SIMD code
# and with its generic code; the protocol core's, a whole
# allreduce job of three cores over a lossy in-memory fabric
# (tests/core/scenario.c) whose every step hashes as libgradnet's did
# (tests/golden/core_hashes.h). The expected counts come from the golden
# headers the module includes.
# Then the kernel data path, /dev/gradnet: gradnet-rank with
# GN_TRANSPORT=kmod fails, saying how to load the module, before it is
# loaded; after, two ranks on loopback run 3LC (1000003 floats, sum) and
# dense (5 floats, average) jobs on the module, a mixed job with one kmod
# rank and one UDP-path rank, a 3LC job over IPv6, and a dense job with the module's fault
# injection (5% each dropped, duplicated, reordered); every rank's result equals gn-ref's
# single-process reference byte for byte; rmmod succeeds once the files
# are closed, and the kernel log has no BUG, WARNING or Oops.
#
# usage: selftest.sh [SOURCE_ROOT [GRADNET_RANK GN_REF]]
# (default: SOURCE_ROOT/build/tools/gradnet-rank and
# SOURCE_ROOT/build/tests/net/gn-ref; missing ones fail the job checks)
# Exit: 0 pass, 1 fail, 4 skip (headers, kernel image, qemu, busybox-static
# or cpio missing); GN_SKIP_RC overrides the skip code (meson wants 77).
# GN_QEMU_TIMEOUT bounds the guest run in seconds (default 300).

# shellcheck disable=SC2317 # cleanup and the checks are called indirectly
set -eu

missing_rc=${GN_SKIP_RC:-4}
qemu_timeout=${GN_QEMU_TIMEOUT:-300}
root=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
rank_bin=${2:-$root/build/tools/gradnet-rank}
ref_bin=${3:-$root/build/tests/net/gn-ref}
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

write_init() {
	cat >"$1" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs dev /dev
echo "GN-FLAGS: $(grep -m1 '^flags' /proc/cpuinfo)"
# gradnet-rank NAME TRANSPORT1 ARGS...: rank 0 on the module, rank 1 on
# TRANSPORT1, both on loopback; each rank's result's md5.
gn_job() {
	name=$1 t1=$2
	shift 2
	GN_TRANSPORT=kmod GN_RANK=0 gradnet-rank --data /data \
		--out "/tmp/$name.0" "$@" >"/tmp/$name.log0" 2>&1 &
	p0=$!
	GN_TRANSPORT=$t1 GN_RANK=1 gradnet-rank --data /data \
		--out "/tmp/$name.1" "$@" >"/tmp/$name.log1" 2>&1
	r1=$?
	wait "$p0"
	r0=$?
	m0=$(md5sum <"/tmp/$name.0" 2>/dev/null | cut -d' ' -f1)
	m1=$(md5sum <"/tmp/$name.1" 2>/dev/null | cut -d' ' -f1)
	echo "GN-JOB: $name rc $r0 $r1 md5 ${m0:-none} ${m1:-none}"
	sed "s/^/GN-JOBLOG: $name /" "/tmp/$name.log0" "/tmp/$name.log1"
}
# The modules gradnet needs (the tunnel socket's, the kernel's
# ChaCha20-Poly1305 library), which modprobe would load first.
deps=ok
for m in $(cat /kmods/order); do
	insmod "/kmods/$m" || deps=failed
done
[ -d /sys/module/libchacha20poly1305 ] || deps=failed
echo "GN-DEPS: $deps"
if [ -x /bin/gradnet-rank ]; then
	export LD_LIBRARY_PATH=/lib GN_INSECURE=1 GN_WORLD_SIZE=2 \
		GN_PEERS=127.0.0.1:7000,127.0.0.1:7001 GN_TIMEOUT_MS=30000
	ip link set lo up
	GN_TRANSPORT=kmod GN_RANK=0 gradnet-rank --data /data --elems 5 \
		--steps 1 --warmup 0 >/tmp/nomod 2>&1
	echo "GN-NOMOD: rc $? $(cat /tmp/nomod)"
fi
if insmod /gradnet.ko; then
	echo "GN-INSMOD: ok"
else
	echo "GN-INSMOD: failed"
fi
[ -d /sys/module/gradnet ] && echo "GN-LOADED: yes"
if [ -x /bin/gradnet-rank ] && [ -c /dev/gradnet ]; then
	gn_job 3lc kmod --elems 1000003 --steps 2 --warmup 0
	gn_job dense kmod --elems 5 --steps 2 --warmup 0 --codec none --average
	gn_job mixed udp --elems 1000003 --steps 2 --warmup 0
	export GN_PEERS='[::1]:7000,[::1]:7001'
	gn_job ipv6 kmod --elems 100003 --steps 3 --warmup 0
	export GN_PEERS=127.0.0.1:7000,127.0.0.1:7001
	# The module's fault injection: 5% of received packets each dropped,
	# duplicated and reordered; the result is the same. Dense, so that
	# some 800 packets make a run without a drop unlikely.
	for f in drop dup reorder; do
		echo 50 >"/sys/module/gradnet/parameters/fault_$f"
	done
	gn_job faults kmod --elems 100003 --steps 3 --warmup 0 --codec none
	for f in drop dup reorder; do
		echo 0 >"/sys/module/gradnet/parameters/fault_$f"
	done
fi
rmmod gradnet && echo "GN-RMMOD: ok"
dmesg | grep 'gradnet' | sed 's/^/GN-LOG: /'
dmesg | grep -E 'BUG|WARNING|Oops|lockdep|circular locking' |
	sed 's/^/GN-KBAD: /'
echo "GN-DONE"
poweroff -f
EOF
	chmod 755 "$1"
}

build_initramfs() {
	ir_new "$tmp/initramfs"
	cp "$tmp/src/gradnet.ko" "$ir/gradnet.ko"
	# shellcheck disable=SC2046 # one module name per word
	ir_add_kmods udp_tunnel ip6_udp_tunnel \
		$(modinfo -F depends "$tmp/src/gradnet.ko" | tr ',' ' ') || return 1
	if [ -x "$rank_bin" ]; then
		ir_add_binary "$rank_bin" /bin/gradnet-rank
		mkdir -p "$ir/data"
		cp -R "$root/data/gradients/mlp-small-seq" "$ir/data/"
	fi
	write_init "$ir/init"
	ir_pack
}

has_flags() {
	for f in "$@"; do
		case " $flags " in
		*" $f "*) ;;
		*) return 1 ;;
		esac
	done
}

# The flags gn_codec_isa_supported() tests for, as /proc/cpuinfo names them.
guest_has() {
	case $1 in
	scalar) return 0 ;;
	avx2) has_flags avx2 bmi2 ;;
	avx512) has_flags avx512f avx512bw avx512vl avx512vbmi avx512_vbmi2 bmi2 ;;
	esac
}

in_log() {
	grep -qx "$1" "$tmp/log"
}

# Prints the wire self-test's expected counts, "<known answers> <packets>",
# as the C compiler reads them from the golden headers: RFC 8439's A.5,
# the keyed BLAKE2s KAT, the AEAD tags and the HELLO and session keys of
# seal_vectors.h, and packets.h's packets. No compiler is no skip: the
# module build needs one too, and a failed count fails the checks that
# use it.
count_wire_golden() {
	cat >"$tmp/count.c" <<'EOF'
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "golden/seal_vectors.h"
#include "golden/packets.h"
#define N(a) (sizeof(a) / sizeof((a)[0]))
int main(void)
{
	printf("%zu %zu\n", 2 + N(gn_seal_kat) + N(gn_seal_kat_hello) +
	       N(gn_seal_kat_session), N(gn_golden_pkt));
	return 0;
}
EOF
	cc -I "$root/tests" -o "$tmp/count" "$tmp/count.c" && "$tmp/count"
}

no_fail_line() {
	! grep -q '^gradnet: selftest FAIL' "$tmp/log"
}

module_loaded() {
	grep -q 'GN-INSMOD: ok' "$tmp/console.log" &&
		grep -q 'GN-LOADED: yes' "$tmp/console.log"
}

module_removed() {
	grep -q 'GN-RMMOD: ok' "$tmp/console.log"
}

check_isa() {
	isa=$1
	if guest_has "$isa"; then
		check "$isa: $nvec/$nvec golden vectors passed in the kernel" \
			in_log "gradnet: selftest $isa: $nvec/$nvec golden vectors passed"
	elif in_log "gradnet: selftest $isa: skipped, CPU lacks it"; then
		# What is tested is the module's CPU check; the kernels of this
		# ISA did not run in a kernel (doc/limitations.md).
		result 0 "$isa: the guest lacks it and the module's check agrees"
	else
		result 1 "$isa: guest lacks it, the module did not log a skip"
	fi
}

# The known answers and golden packets in pass $1: simd (the library's
# own choice, as the worker calls it) or generic (inside an FPU section).
check_wire() {
	pass=$1
	check "seal $pass: $nkat/$nkat known answers passed in the kernel" \
		in_log "gradnet: selftest seal $pass: $nkat/$nkat known answers"
	check "wire $pass: $npkt/$npkt golden packets built, sealed, opened and parsed in the kernel" \
		in_log "gradnet: selftest wire $pass: $npkt/$npkt golden packets"
}

check_log() {
	# Markers are matched anywhere in a line: the firmware leaves terminal
	# escapes in front of the first one.
	sed -n 's/.*GN-LOG: \(\[[^]]*\] \)\{0,1\}//p' "$tmp/console.log" \
		>"$tmp/log"
	flags=$(sed -n 's/.*GN-FLAGS: flags[[:space:]]*:[[:space:]]*//p' \
		"$tmp/console.log")
	nvec=$(grep -c '^	{ "' "$root/tests/golden/vectors.h")
	# "?" matches no log line, so a failed count fails the checks.
	counts=$(count_wire_golden) || counts="? ?"
	nkat=${counts% *}
	npkt=${counts#* }

	check "guest booted, ran init and powered off in ${elapsed}s (qemu rc $qemu_rc)" \
		grep -q 'GN-DONE' "$tmp/console.log"
	check "insmod gradnet.ko succeeded and the module is loaded" \
		module_loaded
	check "rmmod gradnet succeeded" module_removed
	check "no FAIL line in the kernel log" no_fail_line
	for isa in scalar avx2 avx512; do
		check_isa "$isa"
	done
	check "self-test summary says PASS" \
		grep -q '^gradnet: selftest summary: PASS,' "$tmp/log"
	for pass in simd generic; do
		check_wire "$pass"
	done
	check "wire self-test summary says PASS" \
		grep -q '^gradnet: selftest wire summary: PASS,' "$tmp/log"
	check_core
	check_kmod_path
}

# gn-ref's result of a 2-rank job: the md5 of its output, or "?".
ref_md5() {
	"$ref_bin" --world 2 --data "$root/data/gradients" --out "$tmp/ref" \
		"$@" >/dev/null 2>&1 && md5sum <"$tmp/ref" | cut -d' ' -f1 ||
		echo "?"
}

# GN-JOB: NAME rc R0 R1 md5 M0 M1 equals "NAME rc 0 0 md5 REF REF".
job_ok() {
	grep -q "GN-JOB: $1 rc 0 0 md5 $2 $2\$" "$tmp/console.log"
}

check_kmod_path() {
	check "gradnet-rank and gn-ref are built ($rank_bin, $ref_bin)" \
		test -x "$rank_bin" -a -x "$ref_bin"
	ref3=$(ref_md5 --elems 1000003 --steps 2)
	refd=$(ref_md5 --elems 5 --steps 2 --codec none --average)
	check "modules gradnet needs (udp_tunnel, ip6_udp_tunnel, libchacha20poly1305) loaded" \
		grep -q 'GN-DEPS: ok' "$tmp/console.log"
	check "GN_TRANSPORT=kmod without the module fails, saying how to load it" \
		grep -q 'GN-NOMOD: rc 1 .*modprobe gradnet' "$tmp/console.log"
	check "/dev/gradnet, 2 kmod ranks, 3LC 1000003 floats: gn-ref's result" \
		job_ok 3lc "$ref3"
	check "/dev/gradnet, 2 kmod ranks, dense 5 floats averaged: gn-ref's result" \
		job_ok dense "$refd"
	check "mixed job, a kmod rank and a UDP-path rank, 3LC: gn-ref's result" \
		job_ok mixed "$ref3"
	check "IPv6 (::1), 2 kmod ranks, 3LC 100003 floats: gn-ref's result" \
		job_ok ipv6 "$(ref_md5 --elems 100003 --steps 3)"
	check "dense 100003 floats, 5% drop, duplication, reordering (fault_*): gn-ref's result, with retransmissions" \
		faults_ok "$(ref_md5 --elems 100003 --steps 3 --codec none)"
	check "no BUG, WARNING or Oops in the kernel log" \
		not_in_console 'GN-KBAD:'
}

# The faults job gave the reference, and its ranks retransmitted.
faults_ok() {
	job_ok faults "$1" &&
		grep 'GN-JOBLOG: faults ' "$tmp/console.log" |
		grep -q '"retransmits": [1-9]'
}

not_in_console() {
	! grep -q "$1" "$tmp/console.log"
}

# The scenario's cases, as the golden header lists them, one per line.
core_cases() {
	sed -n 's/^	{ "\([^"]*\)", {.*/\1/p' "$root/tests/golden/core_hashes.h"
}

# The core's scenario: every step of every case hashed as in userspace.
check_core() {
	nsteps=$(sed -n 's/^#define GN_CORE_GOLDEN_STEPS \([0-9]*\)$/\1/p' \
		"$root/tests/golden/core_hashes.h")
	for c in $(core_cases); do
		check "core $c: $nsteps/$nsteps steps hash as libgradnet's in the kernel" \
			in_log "gradnet: selftest core $c: $nsteps/$nsteps steps match the golden hashes"
	done
	check "core self-test summary says PASS" \
		grep -q '^gradnet: selftest core summary: PASS,' "$tmp/log"
}

main() {
	check_tools ldd md5sum modinfo
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/gradnet-kmod.XXXXXX")
	echo "TAP version 13"
	echo "# kernel $kver, sources $root"

	if ! build_module; then
		sed 's/^/# /' "$tmp/build.log"
		echo "1..1"
		echo "not ok 1 module builds against $kver headers"
		exit 1
	fi
	build_initramfs
	boot_guest 512M 1
	# 14 checks of the codec and the wire, one per core case, a summary,
	# 9 of the data path.
	echo "1..$((14 + $(core_cases | wc -l) + 1 + 9))"
	result 0 "module builds against $kver headers"
	check_log

	echo "# guest SIMD flags:$(for f in avx2 bmi2 avx512f avx512bw \
		avx512vl avx512_vbmi2; do has_flags "$f" && printf ' %s' "$f"; done)"
	echo "# guest ISAs:$(for i in scalar avx2 avx512; do
		guest_has "$i" && printf ' %s' "$i"; done)"
	sed 's/^/# /' "$tmp/log"
	sed -n 's/.*\(GN-\(JOB\|NOMOD\|KBAD\)\)/\1/p' "$tmp/console.log" |
		cut -c1-400 | sed 's/^/# /'
	if [ "$failed" -ne 0 ]; then
		echo "# guest console:"
		sed 's/^/#   /' "$tmp/console.log"
		exit 1
	fi
	exit 0
}

main
