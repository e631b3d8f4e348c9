#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run.sh - build the libFuzzer targets (the codec's, libgradnet's receive
# path's, the DPDK receive filter's and gradnet-stat's ELF note reader's)
# with clang (libFuzzer, ASan and UBSan, no recovery from any
# finding), write their seed corpora, and run each target in turn for
# SECONDS. Any crash, sanitizer report, leak,
# failed check or timeout fails the run; the input is kept as
# BUILD_DIR/artifacts/TARGET-crash-* (or -leak-, -timeout-).
#
# usage: run.sh SECONDS [BUILD_DIR]
# BUILD_DIR defaults to build-fuzz/ under the source root (ignored by git).
# The corpus a run finds is kept in BUILD_DIR/corpus/TARGET and reused.
# Env: CLANG (default clang-14, else clang); GN_FUZZ_TARGETS (default
# "fuzz_decode fuzz_roundtrip fuzz_codec fuzz_rx fuzz_frame fuzz_stapsdt");
# GN_FUZZ_ARGS, extra libFuzzer options. fuzz_stapsdt, a small parser, runs
# a third of SECONDS (at least 10, or SECONDS if fewer).
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
targets=${GN_FUZZ_TARGETS:-fuzz_decode fuzz_roundtrip fuzz_codec fuzz_rx fuzz_frame fuzz_stapsdt}

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

echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { return d && n; }' \
	>"$build/obj/probe.c"
if ! "$CLANG" -fsanitize=fuzzer,address,undefined "$build/obj/probe.c" \
	-o "$build/obj/probe" >"$build/logs/probe.log" 2>&1; then
	echo "run.sh: SKIP: $CLANG cannot link -fsanitize=fuzzer" \
		"(see $build/logs/probe.log)"
	exit "$skip_rc"
fi

# The targets come from meson (-Dfuzz=true): the library's own sources and
# flags, instrumented, with ASan and UBSan that stop at any finding.
if [ ! -f "$build/meson/build.ninja" ]; then
	CC=$CLANG meson setup "$build/meson" "$root" -Dfuzz=true \
		-Dbuildtype=debugoptimized -Db_sanitize=address,undefined \
		-Db_lundef=false >"$build/logs/setup.log" 2>&1 || {
		tail -n 30 "$build/logs/setup.log"
		exit 1
	}
fi
ninja -C "$build/meson" >"$build/logs/build.log" 2>&1 || {
	tail -n 30 "$build/logs/build.log"
	exit 1
}
for t in $targets fuzz_seeds; do
	ln -sf "meson/tests/fuzz/$t" "$build/$t"
done
rm -rf "$build/seeds"
GN_DATA_DIR=${GN_DATA_DIR:-$root/data/gradients} \
	"$build/fuzz_seeds" "$build/seeds"

failed=0
for t in $targets; do
	t_secs=$secs
	case $t in
	fuzz_decode) max_len=16384 ;;
	fuzz_rx) max_len=65536 ;;
	fuzz_frame) max_len=9300 ;;
	fuzz_codec) max_len=16448 ;;
	fuzz_stapsdt)
		max_len=4096
		t_secs=$((secs / 3))
		[ "$t_secs" -ge 10 ] || t_secs=$((secs < 10 ? secs : 10))
		;;
	*) max_len=8192 ;;
	esac
	corpus=$build/corpus/$t
	mkdir -p "$corpus"
	log=$build/logs/$t.log
	echo "run.sh: $t for ${t_secs}s, corpus $corpus, log $log"
	rc=0
	# shellcheck disable=SC2086
	"$build/$t" -max_total_time="$t_secs" -max_len="$max_len" -timeout=30 \
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
