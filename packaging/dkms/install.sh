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
#   packaging/dkms/install.sh --sources DIR
#	only copies the sources and dkms.conf to DIR, and runs no dkms
#	command (debian/rules fills gradnet-dkms's /usr/src/gradnet-VERSION
#	this way)
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
only_to=

while [ $# -gt 0 ]; do
	case $1 in
	--kernel) kernel=$2; shift 2 ;;
	--remove) remove=1; shift ;;
	--sources) only_to=$2; shift 2 ;;
	*) break ;;
	esac
done
# The DKMS options that remain; --sourcetree says where the copy goes.
opts=$*
while [ $# -gt 0 ]; do
	[ "$1" = --sourcetree ] && srctree=$2
	shift
done
# copy_sources DIR: what the module builds from, and its dkms.conf.
copy_sources() {
	rm -rf "$1"
	mkdir -p "$1/tests"
	cp -R "$root/Kbuild" "$root/kmod" "$root/lib" "$root/include" "$root/bpf" "$1/"
	cp -R "$root/tests/golden" "$root/tests/core" "$1/tests/"
	find "$1" \( -name '*.o' -o -name '.*.cmd' -o -name '*.ko' \) -delete
	sed "s/#MODULE_VERSION#/$version/" "$root/packaging/dkms/dkms.conf.in" >"$1/dkms.conf"
}

if [ -n "$only_to" ]; then
	copy_sources "$only_to"
	exit 0
fi
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

copy_sources "$dest"
# shellcheck disable=SC2086
dkms add "gradnet/$version" $opts
# shellcheck disable=SC2086
dkms build "gradnet/$version" -k "$kernel" $opts
# shellcheck disable=SC2086
dkms install "gradnet/$version" -k "$kernel" $opts
echo "gradnet $version installed for $kernel: modprobe gradnet"
