#!/bin/sh
# SPDX-License-Identifier: MIT
#
# codec_cli.sh - gradnet-codec on a real gradient: encode and decode round
# trip to the error-feedback identity (ef_identity), --ef carried across
# runs, and the error paths: each exits non-zero with a message naming the
# culprit and leaves the error-feedback file as it was.
#
# usage: codec_cli.sh GRADNET_CODEC EF_IDENTITY DATA_DIR
# Output is TAP; exit 0 pass, 1 fail.
set -eu

tool=$1
identity=$2
data=$3
seq=$data/mlp-small-seq
x1=$seq/mlp-small-s00200-fc1.weight.f32
x2=$seq/mlp-small-s00201-fc1.weight.f32
small=$seq/mlp-small-s00200-fc1.bias.f32
n=16384

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tests=0
failed=0

ok() {
	tests=$((tests + 1))
	echo "ok $tests - $1"
}

not_ok() {
	tests=$((tests + 1))
	failed=$((failed + 1))
	echo "not ok $tests - $1"
}

check() {
	what=$1
	shift
	if "$@" >"$tmp/out" 2>&1; then
		ok "$what"
	else
		sed 's/^/# /' "$tmp/out"
		not_ok "$what"
	fi
}

# expect_fail WHAT STATUS PATTERN CMD...: CMD exits with STATUS ("nonzero"
# for any failure), says PATTERN on stderr and leaves $tmp/ef unchanged.
expect_fail() {
	what=$1
	want=$2
	pattern=$3
	shift 3
	cp "$tmp/ef" "$tmp/ef-saved"
	rc=0
	"$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	sed 's/^/# stderr: /' "$tmp/err"
	if [ "$rc" -eq 0 ]; then
		not_ok "$what: exit 0"
	elif [ "$want" != nonzero ] && [ "$rc" -ne "$want" ]; then
		not_ok "$what: exit $rc, expected $want"
	elif ! grep -q -- "$pattern" "$tmp/err"; then
		not_ok "$what: no message matching '$pattern'"
	elif ! cmp -s "$tmp/ef" "$tmp/ef-saved"; then
		not_ok "$what: the error-feedback file changed"
	elif [ -n "$(find "$tmp" -name '*.??????')" ]; then
		not_ok "$what: a temporary file was left behind"
	else
		ok "$what"
	fi
}

echo "TAP version 13"
echo "1..18"

# Run 1: no ef file yet, so e starts at zero.
check "encode creates the ef file" \
	"$tool" encode -s 1.5 --ef "$tmp/ef" "$x1" "$tmp/s1"
cp "$tmp/ef" "$tmp/ef1"
check "decode" "$tool" decode -n $n "$tmp/s1" "$tmp/d1"
check "x = decoded + e_new (e_old = 0)" \
	"$identity" "$x1" - "$tmp/d1" "$tmp/ef1"

# Run 2, the same input: the carried error changes the stream and the ef.
check "encode again with the carried ef" \
	"$tool" encode -s 1.5 --ef "$tmp/ef" "$x1" "$tmp/s2"
cp "$tmp/ef" "$tmp/ef2"
check "decode again" "$tool" decode -n $n "$tmp/s2" "$tmp/d2"
check "x + e_old = decoded + e_new" \
	"$identity" "$x1" "$tmp/ef1" "$tmp/d2" "$tmp/ef2"
if cmp -s "$tmp/s1" "$tmp/s2" || cmp -s "$tmp/ef1" "$tmp/ef2"; then
	not_ok "ef carries over: second stream and ef file differ"
else
	ok "ef carries over: second stream and ef file differ"
fi

# Run 3, the next step, then the same step without --ef: streams differ.
"$tool" encode -s 1.5 --ef "$tmp/ef" "$x2" "$tmp/s3"
"$tool" encode -s 1.5 "$x2" "$tmp/s3-noef"
"$tool" decode -n $n "$tmp/s3" "$tmp/d3"
check "next step: x + e_old = decoded + e_new" \
	"$identity" "$x2" "$tmp/ef2" "$tmp/d3" "$tmp/ef"
if cmp -s "$tmp/s3" "$tmp/s3-noef"; then
	not_ok "next step: stream with --ef differs from without"
else
	ok "next step: stream with --ef differs from without"
fi

# Error paths.
expect_fail "-s 2 is refused" 2 "-s 2" \
	"$tool" encode -s 2 --ef "$tmp/ef" "$x1" "$tmp/bad"
expect_fail "-s abc is refused" 2 "-s 'abc'" \
	"$tool" encode -s abc --ef "$tmp/ef" "$x1" "$tmp/bad"
cp "$x1" "$tmp/nan.f32"
# float32 NaN (0x7fc00000, little-endian) as value 100
printf '\000\000\300\177' |
	dd of="$tmp/nan.f32" bs=4 seek=100 conv=notrunc 2>/dev/null
expect_fail "NaN input is refused, naming the value" nonzero "value 100 is nan" \
	"$tool" encode -s 1.5 --ef "$tmp/ef" "$tmp/nan.f32" "$tmp/bad"
expect_fail "ef file of another size is refused" nonzero "holds $n values" \
	"$tool" encode -s 1.5 --ef "$tmp/ef" "$small" "$tmp/bad"
head -c 10 "$x1" >"$tmp/odd.f32"
expect_fail "input not a multiple of 4 bytes is refused" nonzero "odd.f32: 10 bytes" \
	"$tool" encode -s 1.5 --ef "$tmp/ef" "$tmp/odd.f32" "$tmp/bad"
expect_fail "unwritable output leaves the ef file" nonzero "$tmp/nodir/s" \
	"$tool" encode -s 1.5 --ef "$tmp/ef" "$x1" "$tmp/nodir/s"
size=$(wc -c <"$tmp/s1")
head -c $((size - 1)) "$tmp/s1" >"$tmp/short"
expect_fail "truncated stream is refused" nonzero "stream $tmp/short: malformed" \
	"$tool" decode -n $n "$tmp/short" "$tmp/bad"
expect_fail "stream of another length is refused" nonzero "malformed" \
	"$tool" decode -n $((n + 5)) "$tmp/s1" "$tmp/bad"
if [ -e "$tmp/bad" ]; then
	not_ok "no output is written on errors"
else
	ok "no output is written on errors"
fi

if [ "$tests" -ne 18 ]; then
	echo "# ran $tests tests, planned 18"
	exit 1
fi
[ "$failed" -eq 0 ]
