#!/bin/bash
# SPDX-License-Identifier: MIT
#
# run.sh - set up a fresh Debian 12 machine for gradnet and run it.
#
#   tools/run.sh demo   install what is missing, build, run the main job:
#                       data-parallel training, dense and 3LC, then the
#                       codec benchmark on the real gradient samples; then
#                       install gradnet under /usr/local (C library, tools,
#                       Python package) and train a PyTorch DDP model with
#                       gradnet's hook against PyTorch's own hooks
#   tools/run.sh test   install what is missing, build (plain and with
#                       ASan+UBSan) and run every test: unit, golden,
#                       SIMD-vs-scalar, loopback and network-namespace
#                       allreduce, fuzz smoke, kernel self-test in QEMU;
#                       the codec, steady and allreduce suites once per
#                       instruction set the CPU has (GN_CODEC_ISA); any
#                       skipped test fails the run unless GN_ALLOW_SKIP
#                       names it (comma-separated test names, or "all")
#
# Needs root for apt-get, network namespaces, tc and BPF. Exits non-zero
# on any failure.

set -euo pipefail

cd "$(dirname "$0")/.."

PACKAGES=(
	meson ninja-build pkg-config gcc clang llvm lld libclang-rt-14-dev
	libzstd-dev liblz4-dev zlib1g-dev python3-sklearn python3-numpy
	python3-torch python3-pytest
	python3-venv python3-pip python3-setuptools python3-wheel python3-wheel-whl
	dpkg-dev debhelper dh-dkms dh-python pybuild-plugin-pyproject python3-all
	fakeroot lintian debootstrap
	linux-headers-amd64 linux-image-amd64 linux-source-6.1
	qemu-system-x86 qemu-user busybox-static cpio xz-utils kmod dkms
	iproute2 libbpf-dev libelf-dev bpftool systemtap-sdt-dev
	openmpi-bin libopenmpi-dev libpmix-dev libdpdk-dev libssl-dev
	mandoc groff-base man-db python3-matplotlib fortunes
)

install_missing() {
	local missing=() p

	for p in "${PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q "install ok installed" || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "== installing: ${missing[*]}"
	if [ "$(id -u)" -ne 0 ]; then
		echo "run.sh: need root to install packages" >&2
		exit 1
	fi
	apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
}

build() {
	local dir=$1

	shift
	[ -f "$dir/build.ninja" ] || meson setup "$dir" "$@"
	ninja -C "$dir"
}

mount_bpffs() {
	mountpoint -q /sys/fs/bpf 2>/dev/null ||
		mount -t bpf bpf /sys/fs/bpf 2>/dev/null || true
}

cmd_demo() {
	install_missing
	build build
	echo "== training demo: 4 ranks on loopback, dense then 3LC"
	build/tools/gradnet-demo --ranks 4
	echo "== codec benchmark on real gradients"
	build/tools/gradnet-bench codec
	echo "== install under /usr/local: libgradnet, gradnet.h, the tools, the Python package"
	ninja -C build install >/dev/null
	ldconfig
	echo "== PyTorch DDP on digits, 4 ranks: Gloo, fp16, PowerSGD, gradnet dense and 3LC"
	/usr/bin/python3 python/examples/ddp_digits.py --ranks 4 --steps 300
}

# The meson suites of the codec instruction sets this CPU lacks, as
# --no-suite arguments; the ISA names it has go to $isas.
isa_args() {
	local i

	isas=$(build/tools/gradnet-codec isa)
	no_isa=()
	for i in scalar avx2 avx512; do
		case " $isas " in
		*" $i "*) ;;
		*) no_isa+=(--no-suite "isa-$i") ;;
		esac
	done
}

cmd_test() {
	local rc=0

	install_missing
	mount_bpffs
	build build
	build build-asan -Db_sanitize=address,undefined -Db_lundef=false
	isa_args
	echo "== every test (codec, steady and allreduce once per ISA: $isas)"
	meson test -C build --print-errorlogs --num-processes 1 \
		"${no_isa[@]}" || rc=1
	echo "== the same tests under ASan+UBSan (kernel, fuzz and emulated suites excepted)"
	meson test -C build-asan --print-errorlogs --num-processes 1 \
		--no-suite kernel --no-suite fuzz --no-suite emulated \
		"${no_isa[@]}" || rc=1
	echo "== verdict (a skip fails unless GN_ALLOW_SKIP names the test)"
	python3 tests/verdict.py --isas "$isas" \
		plain=build/meson-logs/testlog.json \
		asan=build-asan/meson-logs/testlog.json || rc=1
	return $rc
}

case ${1:-} in
demo)	cmd_demo ;;
test)	cmd_test ;;
*)	echo "usage: tools/run.sh demo|test" >&2; exit 2 ;;
esac
