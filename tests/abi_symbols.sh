#!/bin/bash
# SPDX-License-Identifier: MIT
#
# abi_symbols.sh - libgradnet.so exports exactly the functions gradnet.h
# declares, each in a GRADNET_0 version node (GRADNET_0, GRADNET_0.2, ...):
# no codec or wire internals, and holds no test code.
#
# usage: abi_symbols.sh LIBGRADNET_SO GRADNET_H

set -eu

so=$1
hdr=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

sed -n 's/^GN_EXPORT .*[ *]\(gn_[a-z0-9_]*\)(.*/\1/p' "$hdr" | sort -u >"$tmp/api"
nm -D --defined-only "$so" | awk '$2 == "T" { print $3 }' | sort -u >"$tmp/exported"

echo "TAP version 13"
echo "1..5"
if [ "$(wc -l <"$tmp/api")" -ge 15 ]; then
	echo "ok 1 - gradnet.h declares $(wc -l <"$tmp/api") functions"
else
	echo "not ok 1 - gradnet.h declares too few functions: $(cat "$tmp/api")"
fi
# Every exported symbol carries a GRADNET_0 version node; strip it to compare.
node='@@GRADNET_0\(\.[0-9]*\)\?$'
if sed "s/$node//" "$tmp/exported" | cmp -s - "$tmp/api" &&
	! grep -qv "$node" "$tmp/exported"; then
	echo "ok 2 - exported symbols are gradnet.h's API, versioned GRADNET_0*"
else
	echo "not ok 2 - exported symbols differ from gradnet.h's API"
	diff <(sed "s/$node//" "$tmp/exported") "$tmp/api" | sed 's/^/# /'
fi
# gn_codec_id() and gn_codec_name() are the API's; the rest of that prefix
# is the registry's, internal like the codec's and the wire's.
internal() {
	sed 's/@@.*//' "$tmp/exported" | grep -vxE 'gn_codec_(id|name)' |
		grep -E '^gn_(wire|mac|siphash|tlc|zre|codec)_?'
}
if internal >/dev/null; then
	echo "not ok 3 - codec or wire internals are exported"
	internal | sed 's/^/# /'
else
	echo "ok 3 - no codec or wire symbol is exported"
fi
# Test hooks live in the test library (tests/lib): the shipped library has
# the NULL hook pointer and no code of theirs.
nm "$so" | awk '{ print $NF }' | sort -u >"$tmp/all"
if grep -qE '^gn_(test_ctx|test_packet|fault)|^(fault_|null_ops)' "$tmp/all"; then
	echo "not ok 4 - test code is in the shipped library"
	grep -E '^gn_(test_ctx|test_packet|fault)|^(fault_|null_ops)' "$tmp/all" | sed 's/^/# /'
elif ! grep -qx gn_test_hooks "$tmp/all"; then
	echo "not ok 4 - no gn_test_hooks in the library: is this libgradnet?"
else
	echo "ok 4 - no test code in the shipped library, only its NULL hook pointer"
fi
# Functions new in 0.2 sit in its node, so a program linked against
# them asks for 0.2 and an older library refuses it at load time.
v02="gn_codec_id gn_codec_name gn_ctx_bind gn_ctx_local_addr gn_ctx_join
gn_model_register gn_model_step gn_model_step_start gn_model_step_wait"
bad=""
for f in $v02; do
	grep -qx "$f@@GRADNET_0.2" "$tmp/exported" || bad="$bad $f"
done
if [ -z "$bad" ]; then
	echo "ok 5 - 0.2's functions are versioned GRADNET_0.2"
else
	echo "not ok 5 - not in GRADNET_0.2:$bad"
fi
