#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run.sh - build the libFuzzer targets (the codec's and libgradnet's receive
# path's) with clang (libFuzzer, ASan and UBSan, no recovery from any
# finding), write their seed corpora, and run each target in turn for
# SECONDS. Any crash, sanitizer report, leak,
# failed check or timeout fails the run; the input is kept as
# BUILD_DIR/artifacts/TARGET-crash-* (or -leak-, -timeout-).
#
# usage: run.sh SECONDS [BUILD_DIR]
# BUILD_DIR defaults to build-fuzz/ under the source root (ignored by git).
# The corpus a run finds is kept in BUILD_DIR/corpus/TARGET and reused.
# Env: CLANG (default clang-14, else clang); GN_FUZZ_TARGETS (default
# "fuzz_decode fuzz_roundtrip fuzz_rx"); GN_FUZZ_ARGS, extra libFuzzer options.
# Exit: 0 pass, 1 fail, 77 (GN_SKIP_RC) if clang cannot build a fuzzer.
set -eu

skip_rc=${GN_SKIP_RC:-77}
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 SECONDS [BUILD_DIR]" >&2
	exit 2
fi
secs=$1
case $secs in
'' | *[!0-9]*)
	echo "run.sh: SECONDS must be a whole number, not '$secs'" >&2
	exit 2
	;;
esac
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${2:-$root/build-fuzz}
targets=${GN_FUZZ_TARGETS:-fuzz_decode fuzz_roundtrip fuzz_rx}

if [ -z "${CLANG:-}" ]; then
	CLANG=clang-14
	command -v "$CLANG" >/dev/null 2>&1 || CLANG=clang
fi
if ! command -v "$CLANG" >/dev/null 2>&1; then
	echo "run.sh: SKIP: no clang to build libFuzzer targets"
	exit "$skip_rc"
fi

mkdir -p "$build/obj" "$build/artifacts" "$build/logs"
build=$(cd "$build" && pwd)

san="-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all"
cflags="-std=gnu11 -O1 -g -fno-omit-frame-pointer -ffp-contract=off
	-D_GNU_SOURCE -Wall -Wextra -Werror
	-I$root/include -I$root/lib -I$root/tests"

echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { return d && n; }' \
	>"$build/obj/probe.c"
# shellcheck disable=SC2086 # flags are word lists
if ! "$CLANG" $san "$build/obj/probe.c" -o "$build/obj/probe" \
	>"$build/logs/probe.log" 2>&1; then
	echo "run.sh: SKIP: $CLANG cannot link -fsanitize=fuzzer" \
		"(see $build/logs/probe.log)"
	exit "$skip_rc"
fi

# The codec as lib/meson.build builds it: the same units, the SIMD units
# with their instruction-set flags.
avx2="-mavx2 -mbmi2 -mbmi -mlzcnt -mpopcnt"
avx512="-mavx512f -mavx512bw -mavx512vl -mavx512vbmi -mavx512vbmi2
	-mbmi2 -mbmi -mlzcnt -mpopcnt"
objs=
for unit in zre quantize accumulate tlc avx2 avx512; do
	isa=
	case $unit in
	avx2) isa=$avx2 ;;
	avx512) isa=$avx512 ;;
	esac
	# shellcheck disable=SC2086
	"$CLANG" $cflags $san $isa -c "$root/lib/codec/$unit.c" \
		-o "$build/obj/codec_$unit.o"
	objs="$objs $build/obj/codec_$unit.o"
done
# The rest of libgradnet, for fuzz_rx: the receive path as a whole, with
# the version meson.build gives it.
version=$(sed -n "s/^  version: '\([0-9.]*\)',$/\1/p" "$root/meson.build")
vminor=${version#*.}
vdefs="-DGRADNET_BUILD_MAJOR=${version%%.*} -DGRADNET_BUILD_MINOR=${vminor%%.*}
	-DGRADNET_BUILD_PATCH=${vminor#*.}"
libobjs=
for src in wire/hdr.c wire/siphash.c wire/mac.c wire/nh_avx2.c version.c \
	ctx.c udp.c progress.c reliable.c allreduce.c fault.c; do
	isa=
	case $src in
	wire/nh_avx2.c) isa=-mavx2 ;;
	esac
	obj=$build/obj/lib_$(basename "$src" .c).o
	# shellcheck disable=SC2086
	"$CLANG" $cflags $san $isa $vdefs -DGRADNET_VERSION='"fuzz"' \
		-c "$root/lib/$src" -o "$obj"
	libobjs="$libobjs $obj"
done
for t in $targets; do
	extra=
	case $t in
	fuzz_rx) extra="$libobjs -lpthread" ;;
	esac
	# shellcheck disable=SC2086
	"$CLANG" $cflags $san "$here/$t.c" $objs $extra -lm -o "$build/$t"
done
# shellcheck disable=SC2086
"$CLANG" $cflags "$here/fuzz_seeds.c" -lm -o "$build/fuzz_seeds"
rm -rf "$build/seeds"
GN_DATA_DIR=${GN_DATA_DIR:-$root/data/gradients} \
	"$build/fuzz_seeds" "$build/seeds"

failed=0
for t in $targets; do
	case $t in
	fuzz_decode) max_len=16384 ;;
	fuzz_rx) max_len=65536 ;;
	*) max_len=8192 ;;
	esac
	corpus=$build/corpus/$t
	mkdir -p "$corpus"
	log=$build/logs/$t.log
	echo "run.sh: $t for ${secs}s, corpus $corpus, log $log"
	rc=0
	# shellcheck disable=SC2086
	"$build/$t" -max_total_time="$secs" -max_len="$max_len" -timeout=30 \
		-rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$build/artifacts/$t-" ${GN_FUZZ_ARGS:-} \
		"$corpus" "$build/seeds/${t#fuzz_}" >"$log" 2>&1 || rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "run.sh: FAIL: $t exited with $rc; the end of $log:"
		tail -n 60 "$log"
		failed=1
		continue
	fi
	grep -E '^#[0-9]+[[:space:]]+DONE|^Done|^stat::' "$log" || tail -n 5 "$log"
done
exit "$failed"
