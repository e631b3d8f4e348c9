#!/bin/bash
# SPDX-License-Identifier: MIT
#
# demo_codec.sh - gradnet-demo --codec SPEC: the spec ("name" or
# "name:key=value,...") reaches the ranks' contexts as GN_CODEC; one the
# demo cannot parse, or that libgradnet refuses, ends it before any
# training with a message naming the spec (and, for a refusal, the
# library's own words).
#
# usage: demo_codec.sh GRADNET_DEMO

set -u

demo=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gradnet-demo.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0
unset GN_CODEC GN_S GN_PEERS GN_RANK GN_WORLD_SIZE GN_KEY GN_KEY_FILE GN_KEY_FD

check() {
	local what=$1

	shift
	n=$((n + 1))
	if "$@"; then
		echo "ok $n - $what"
	else
		failed=$((failed + 1))
		echo "not ok $n - $what"
		sed 's/^/# /' "$tmp/out" "$tmp/err"
	fi
}

# run SPEC: a short 2-rank demo with --codec SPEC; its exit code in $rc.
run() {
	rc=0
	"$demo" --ranks 2 --steps 20 --batch 8 --quiet --codec "$1" \
		>"$tmp/out" 2>"$tmp/err" || rc=$?
}

echo "1..6"
for spec in '3lc:' '3lc:s' ':s=1' '3lc:s=1.5,,bits=4'; do
	run "$spec"
	check "--codec '$spec' does not parse: refused before training" \
		sh -c "[ $rc -eq 1 ] && grep -q -- '^gradnet-demo: --codec $spec: .*\(not key=value\|not \"name\"\)' '$tmp/err' && ! grep -q 'test accuracy' '$tmp/out'"
done

run nosuchcodec
check "a codec libgradnet does not know: its message, before training" \
	sh -c "[ $rc -eq 1 ] && grep -q '^gradnet-demo: --codec nosuchcodec: .*nosuchcodec' '$tmp/err' && ! grep -q 'test accuracy' '$tmp/out'"

# The spec reaches the ranks: codec none sends what dense sends, and
# trains the same model to the same accuracy.
run none
dense=$(sed -n 's/^\[dense\] test accuracy \([0-9.]*%\).*/\1/p' "$tmp/out")
none=$(sed -n 's/^\[none\] test accuracy \([0-9.]*%\).*bit-identical$/\1/p' "$tmp/out")
steady() {
	sed -n "s/^\[$1\] steady state, steps [0-9.]*: \([0-9.]*\) MB of data packets.*/\1/p" "$tmp/out"
}
dense_mb=$(steady dense)
none_mb=$(steady none)
check "--codec none: the second run is dense too ($dense, $none; $dense_mb, $none_mb MB)" \
	sh -c "[ $rc -eq 0 ] && [ -n '$dense' ] && [ '$dense' = '$none' ] && [ -n '$dense_mb' ] && [ '$dense_mb' = '$none_mb' ]"
[ "$failed" -eq 0 ]
