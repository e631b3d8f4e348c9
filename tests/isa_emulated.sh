#!/bin/bash
# SPDX-License-Identifier: MIT
#
# isa_emulated.sh - the codec suites on CPUs this machine is not: an
# AVX2-only CPU (Haswell) and a baseline x86-64 CPU (qemu64), emulated by
# qemu-user. Whatever CPU runs the test command, this proves that the
# run-time choice of kernels, GN_CODEC_ISA's refusal and the codec and
# steady-state suites hold where AVX-512 (or AVX2) is missing.
#
#   isa_emulated.sh BUILD_DIR
#
# TAP output. Exit: 0 pass, 1 fail (qemu-x86_64 missing is a failure).

build=${1:?usage: isa_emulated.sh BUILD_DIR}
qemu=$(command -v qemu-x86_64)
testno=0
fail=0

result() {
	testno=$((testno + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $testno - $2"
	else
		echo "not ok $testno - $2"
		fail=1
	fi
}

echo "TAP version 13"
echo "1..8"
if [ -z "$qemu" ]; then
	echo "# qemu-x86_64 not installed (Debian package qemu-user)"
	for i in 1 2 3 4 5 6 7 8; do result 1 "qemu-x86_64 missing"; done
	exit 1
fi

# emu CPU CMD...: run CMD on an emulated CPU, quietly.
emu() {
	local cpu=$1

	shift
	"$qemu" -cpu "$cpu" "$@" 2>&1 | grep -v "TCG doesn't support"
	return "${PIPESTATUS[0]}"
}

# check_cpu CPU ISAS: the codec sees exactly ISAS and its suites pass on
# the widest of them.
check_cpu() {
	local cpu=$1 want=$2 seen widest log

	seen=$(emu "$cpu" "$build/tools/gradnet-codec" isa)
	[ "$seen" = "$want" ]
	result $? "$cpu: the codec finds '$want' (saw '$seen')"
	widest=${want##* }
	for t in codec_test steady_test; do
		log=$(GN_CODEC_ISA=$widest emu "$cpu" "$build/tests/$t")
		echo "$log" | grep -q '^# PASSED' && ! echo "$log" | grep -q 'SKIP'
		result $? "$cpu: $t with GN_CODEC_ISA=$widest passes, nothing skipped"
		echo "$log" | grep -E '^# (FAILED|PASSED|.*codec kernels)' | head -2
	done
}

check_cpu qemu64 "scalar"
check_cpu Haswell "scalar avx2"

# A CPU without AVX-512 refuses it by name, and so does the library.
out=$(echo | GN_CODEC_ISA=avx512 emu Haswell "$build/tools/gradnet-codec" \
	encode -s 1 /dev/stdin /dev/null)
rc=$?
[ "$rc" -eq 1 ] && echo "$out" | grep -q 'GN_CODEC_ISA=avx512: this CPU lacks'
result $? "Haswell: GN_CODEC_ISA=avx512 is refused with a message (rc $rc)"
out=$(GN_CODEC_ISA=avx2 emu qemu64 "$build/tools/gradnet-codec" \
	encode -s 1 /dev/null /dev/null)
rc=$?
[ "$rc" -eq 1 ] && echo "$out" | grep -q 'GN_CODEC_ISA=avx2: this CPU lacks'
result $? "qemu64: GN_CODEC_ISA=avx2 is refused with a message (rc $rc)"
exit $fail
