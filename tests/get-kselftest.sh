#!/bin/sh
# SPDX-License-Identifier: MIT
# Extract the kselftest harness headers from Debian's linux-source package
# (they are not copied into this repository).
# usage: get-kselftest.sh LINUX_SOURCE_TARBALL OUTDIR
set -eu
tarball=$1
out=$2
dir=$(tar -tJf "$tarball" 2>/dev/null | head -n 1 | cut -d/ -f1)
sub=tools/testing/selftests
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -xJf "$tarball" -C "$tmp" --occurrence=1 \
	"$dir/$sub/kselftest_harness.h" "$dir/$sub/kselftest.h"
cp "$tmp/$dir/$sub/kselftest_harness.h" "$tmp/$dir/$sub/kselftest.h" "$out/"
