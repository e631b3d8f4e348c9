#!/bin/sh
# SPDX-License-Identifier: MIT
#
# dkms_test.sh - packaging/dkms/install.sh builds and installs the module
# with dkms for Debian's 6.1 kernel, in scratch trees (--sourcetree,
# --dkmstree, --installtree: the host's own stay untouched); modinfo of the
# result documents every parameter; --remove takes it all away.
#
# usage: dkms_test.sh [SOURCE_ROOT]
# Without dkms or the kernel's headers the test fails (tools/run.sh
# installs both).
set -eu

missing_rc=1
root=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
tmp=
# shellcheck source=tests/kmod/lib.sh
. "$root/tests/kmod/lib.sh"

# shellcheck disable=SC2317 # called by the trap
cleanup() {
	[ -z "$tmp" ] || rm -rf "$tmp"
}
trap cleanup EXIT

# Every parameter (parmtype) has a description (parm "name:text").
params_documented() {
	modinfo -F parmtype "$ko" | cut -d: -f1 | sort >"$tmp/types"
	modinfo -F parm "$ko" | sed -n 's/^\([^:]*\):[[:space:]]*[^[:space:]].*/\1/p' |
		sort >"$tmp/described"
	echo "# parameters: $(tr '\n' ' ' <"$tmp/types")"
	[ -s "$tmp/types" ] && comm -23 "$tmp/types" "$tmp/described" >"$tmp/bare" &&
		[ ! -s "$tmp/bare" ]
}

main() {
	kver=$(find_kernel)
	[ -n "$kver" ] || missing "no 6.1.*-amd64 kernel with headers"
	command -v dkms >/dev/null || missing "dkms not installed"
	command -v modinfo >/dev/null || missing "modinfo (kmod) not installed"
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/gradnet-dkms.XXXXXX")
	# dkms installs only for a kernel whose module directory exists.
	mkdir -p "$tmp/src" "$tmp/dkms" "$tmp/inst/$kver"
	opts="--sourcetree $tmp/src --dkmstree $tmp/dkms --installtree $tmp/inst"
	echo "TAP version 13"
	# shellcheck disable=SC2086 # the options are words
	if "$root/packaging/dkms/install.sh" --kernel "$kver" $opts >"$tmp/log" 2>&1; then
		result 0 "install.sh: dkms add, build and install for $kver"
	else
		result 1 "install.sh: dkms add, build and install for $kver"
		sed 's/^/# /' "$tmp/log"
		find "$tmp/dkms" -name make.log -exec sed 's/^/#   /' {} \;
	fi
	ko=$(find "$tmp/inst" -name 'gradnet.ko*' | head -n 1)
	check "the module is in the install tree (${ko#"$tmp"/})" test -n "$ko"
	[ -n "$ko" ] || ko=/nonexistent
	check "modinfo: gradnet, for $kver" \
		sh -c "modinfo -F vermagic '$ko' | grep -q '^$kver '"
	check "modinfo: every module parameter has a description" params_documented
	sed 's/^/#   /' "$tmp/bare" 2>/dev/null || true
	# shellcheck disable=SC2086
	"$root/packaging/dkms/install.sh" --remove $opts >"$tmp/log" 2>&1 || true
	check "install.sh --remove: no module, no sources left" \
		sh -c "! find '$tmp/inst' '$tmp/src' -name 'gradnet*' | grep -q ."
	echo "1..$tests"
	[ "$failed" -eq 0 ]
}

main
