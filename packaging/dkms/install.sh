#!/bin/sh
# SPDX-License-Identifier: MIT
#
# install.sh - install or remove the gradnet kernel module with DKMS, so it
# is rebuilt for every kernel the host installs.
#
#   packaging/dkms/install.sh [--kernel VERSION] [DKMS-OPTION...]
#	copies the sources the module is built from (Kbuild, kmod/, lib/,
#	include/, bpf/, tests/golden/, tests/core/) and dkms.conf to
#	/usr/src/gradnet-VERSION, then dkms add, build, install
#	(for the running kernel, or VERSION); then `modprobe gradnet`
#   packaging/dkms/install.sh --remove [DKMS-OPTION...]
#	dkms remove gradnet/VERSION --all, and deletes /usr/src/gradnet-VERSION
#
# DKMS-OPTIONs go to every dkms command; with --sourcetree DIR the sources
# go to DIR instead of /usr/src (tests/kmod/dkms_test.sh builds in scratch
# trees this way: --sourcetree, --dkmstree, --installtree).
# Needs dkms (Debian's package) and the kernel's headers.
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
version=$(sed -n "s/^  version: '\([^']*\)',\$/\1/p" "$root/meson.build")
[ -n "$version" ] || { echo "install.sh: no version in meson.build" >&2; exit 1; }
kernel=$(uname -r)
remove=
srctree=/usr/src

while [ $# -gt 0 ]; do
	case $1 in
	--kernel) kernel=$2; shift 2 ;;
	--remove) remove=1; shift ;;
	*) break ;;
	esac
done
# The DKMS options that remain; --sourcetree says where the copy goes.
opts=$*
while [ $# -gt 0 ]; do
	[ "$1" = --sourcetree ] && srctree=$2
	shift
done
command -v dkms >/dev/null ||
	{ echo "install.sh: dkms is not installed (apt-get install dkms)" >&2; exit 1; }
dest=$srctree/gradnet-$version

if [ -n "$remove" ]; then
	# shellcheck disable=SC2086 # the options are words
	dkms remove "gradnet/$version" --all $opts || true
	rm -rf "$dest"
	echo "gradnet $version removed"
	exit 0
fi

rm -rf "$dest"
mkdir -p "$dest/tests"
cp -R "$root/Kbuild" "$root/kmod" "$root/lib" "$root/include" "$root/bpf" "$dest/"
cp -R "$root/tests/golden" "$root/tests/core" "$dest/tests/"
find "$dest" \( -name '*.o' -o -name '.*.cmd' -o -name '*.ko' \) -delete
sed "s/@VERSION@/$version/" "$root/packaging/dkms/dkms.conf.in" >"$dest/dkms.conf"
# shellcheck disable=SC2086
dkms add "gradnet/$version" $opts
# shellcheck disable=SC2086
dkms build "gradnet/$version" -k "$kernel" $opts
# shellcheck disable=SC2086
dkms install "gradnet/$version" -k "$kernel" $opts
echo "gradnet $version installed for $kernel: modprobe gradnet"
