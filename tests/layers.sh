#!/bin/bash
# SPDX-License-Identifier: MIT
#
# layers.sh - the layering of lib/ holds in the built library: every call
# goes to the same layer or one below it (env, codec and wire at the
# bottom, then transport, delivery, collective, and the API and driver on
# top), so no two files of different layers call each other in a circle;
# upcalls go through tables the upper layer registers, which this cannot
# see and does not need to. And the protocol core (lib/delivery,
# lib/collective, lib/codec, lib/wire, lib/transport/mem.c) includes no
# system header: only gn_deps.h and env.h reach the environment; and the
# kernel module (Kbuild) links all of it.
#
# usage: layers.sh LIBGRADNET_A SOURCE_ROOT

set -eu

lib=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# An archive member's layer, from the path meson names it by.
rank_of() {
	case $1 in
	env_* | codec_* | wire_*) echo 0 ;;
	# dpdk/'s objects: the DPDK transport (its ARP neighbours, its
	# receive filter and checksum), or its stand-in without DPDK.
	transport_* | transport.c.o | tx.c.o | rx.c.o | poll.c.o | port.c.o | \
	eal.c.o | absent.c.o | neigh.c.o | filter.c.o | csum.c.o | \
	csum_avx2.c.o) echo 1 ;;
	delivery_*) echo 2 ;;
	collective_*) echo 3 ;;
	api.c.o | open.c.o | options.c.o | keys.c.o | dpdk_open.c.o | launcher.c.o | \
	pmix.c.o | pmix_absent.c.o | bucket.c.o | spec.c.o | \
	driver.c.o | version.c.o | probes.c.o | kmod.c.o) echo 4 ;;
	*) echo 9 ;;
	esac
}

# An object's part of its layer: lib/<part>/ by meson's prefix, or dpdk/.
part_of() {
	case $1 in
	transport.c.o | tx.c.o | rx.c.o | poll.c.o | port.c.o | eal.c.o | \
	absent.c.o | neigh.c.o | filter.c.o | csum.c.o | csum_avx2.c.o) echo dpdk ;;
	*) echo "${1%%_*}" ;;
	esac
}

nm -A --defined-only "$lib" 2>/dev/null |
	awk '$2 ~ /^[TtDdBbRr]$/ { split($1, a, ":"); print $3, a[2] }' |
	sort -u >"$tmp/defs"
nm -A --undefined-only "$lib" 2>/dev/null |
	awk '{ split($1, a, ":"); print $NF, a[2] }' | sort -u >"$tmp/uses"

echo "TAP version 13"
echo "1..4"

members=$(ar t "$lib")
unknown=""
for m in $members; do
	[ "$(rank_of "$m")" = 9 ] && unknown="$unknown $m"
done
if [ -z "$unknown" ] && [ "$(echo "$members" | wc -w)" -ge 20 ]; then
	echo "ok 1 - every object of libgradnet belongs to a layer ($(echo "$members" | wc -w) objects)"
else
	echo "not ok 1 - objects outside the layers:$unknown"
fi

bad=0
while read -r sym user; do
	def=$(awk -v s="$sym" '$1 == s { print $2; exit }' "$tmp/defs")
	[ -n "$def" ] || continue	# libc, or an inline
	[ "$def" = "$user" ] && continue
	ru=$(rank_of "$user")
	rd=$(rank_of "$def")
	if [ "$rd" -gt "$ru" ]; then
		echo "# $user calls $sym in $def, a layer above it"
		bad=$((bad + 1))
	elif [ "$rd" = "$ru" ] && [ "$(part_of "$def")" != "$(part_of "$user")" ] &&
		[ "$ru" != 0 ] && [ "$ru" != 4 ]; then
		echo "# $user calls $sym in $def, another part of its layer"
		bad=$((bad + 1))
	fi
done <"$tmp/uses"
if [ "$bad" = 0 ]; then
	echo "ok 2 - every call goes to the caller's layer or one below"
else
	echo "not ok 2 - $bad calls go up or across the layers"
fi

core="$src/lib/delivery $src/lib/collective $src/lib/codec $src/lib/wire $src/lib/transport/mem.c"
sys=$(grep -rn '^#include <' $core | grep -v '<gradnet/' |
	grep -v 'immintrin.h' || true)
if [ -z "$sys" ]; then
	echo "ok 3 - the core includes no libc, pthread or socket header"
else
	echo "not ok 3 - system headers in the core"
	echo "$sys" | sed 's/^/# /'
fi

# The module links the same core: Kbuild lists every source of it.
missing=""
for f in "$src"/lib/delivery/*.c "$src"/lib/collective/*.c "$src"/lib/codec/*.c \
	"$src"/lib/codec/*/*.c \
	"$src"/lib/wire/*.c "$src/lib/transport/mem.c"; do
	o=${f#"$src"/}
	o=${o%.c}.o
	grep -q "$o" "$src/Kbuild" || missing="$missing $o"
done
if [ -z "$missing" ]; then
	echo "ok 4 - Kbuild links every file of the core"
else
	echo "not ok 4 - Kbuild lacks:$missing"
fi
