#!/bin/bash
# SPDX-License-Identifier: MIT
#
# pin_dir_test.sh - gradnet-stat trusts only a pin directory that no one
# else can change. In a private bpffs, mounted as the kernel mounts one
# without mode= (1777, sticky), another user (uid 65534, through setpriv)
# prepares the pin directory before root runs gradnet-stat:
#  - a directory of its own there: attach, dump and detach refuse and say
#    who owns it and what to do; nothing is pinned in it
#  - a symbolic link to a directory holding root's pins: attach and
#    detach refuse, and root's pins stay
# and root's own mistakes are refused too: a pin directory of mode 0777,
# a links/ directory owned by another user, a mount root that others may
# write to without the sticky bit. Attach under umask 0277 still makes
# the directories 0700, and a second attach and detach work in them.
#
# usage: pin_dir_test.sh GRADNET_STAT GN_RANK_TEST
# Nothing skips: without root, setpriv or bpffs the test fails.

set -u

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/net/lib.sh
. "$here/../net/lib.sh"

STAT=$1
PROBED=$2
OTHER=65534
testno=0
failed=0


diag() {
	sed 's/^/# /' "$@"
}

echo "TAP version 13"
echo "1..8"
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null ||
	[ ! -x "$STAT" ] || [ ! -x "$PROBED" ]; then
	echo "Bail out! needs root, setpriv (util-linux) and $STAT"
	exit 1
fi

# The other user must reach the mount: the temporary directory is 0755.
tmp=$(mktemp -d)
chmod 0755 "$tmp"
fs=$tmp/bpffs
mkdir "$fs"
teardown() {
	GN_STAT_PIN_DIR=$fs/root "$STAT" detach >/dev/null 2>&1
	umount "$fs" 2>/dev/null
	rm -rf "$tmp"
}
trap teardown EXIT
if ! mount -t bpf bpf "$fs"; then
	echo "Bail out! cannot mount a bpffs on $fs"
	exit 1
fi
export GN_STAT_PIN_DIR=$fs/gradnet

as_other() {
	setpriv --reuid=$OTHER --regid=$OTHER --clear-groups "$@"
}

# refused CMD WORDS...: gradnet-stat CMD fails, its message has every
# word of WORDS (a grep pattern each).
refused() {
	local cmd=$1 w rc=0
	local -a args=()

	shift
	[ "$cmd" != attach ] || args=(--lib "$PROBED")
	"$STAT" "$cmd" "${args[@]}" >"$tmp/out" 2>&1 && rc=1
	for w in "$@"; do
		grep -q -- "$w" "$tmp/out" || rc=1
	done
	[ "$rc" -eq 0 ] || diag "$tmp/out"
	[ "$rc" -eq 0 ]
}

# ---- another user's directory --------------------------------------------

r=1
[ "$(stat -c %a "$fs")" = 1777 ] || { echo "# the mount is $(stat -c %a "$fs")"; r=0; }
as_other mkdir -m 0700 "$GN_STAT_PIN_DIR" || r=0
refused attach "owned by uid $OTHER" "rm -r $GN_STAT_PIN_DIR" || r=0
[ -z "$(ls -A "$GN_STAT_PIN_DIR")" ] || { echo "# pinned into it: $(ls -A "$GN_STAT_PIN_DIR")"; r=0; }
gn_result $r "attach refuses a pin directory another user made first, says whose it is and how to fix it, pins nothing in it"

r=1
as_other mkdir "$GN_STAT_PIN_DIR/links" || r=0
refused dump "owned by uid $OTHER" || r=0
refused detach "owned by uid $OTHER" || r=0
[ -d "$GN_STAT_PIN_DIR/links" ] || r=0
gn_result $r "dump and detach refuse it too, and detach deletes nothing in it"
rm -rf "$GN_STAT_PIN_DIR"

# ---- a symbolic link to root's pins ----------------------------------------

r=1
GN_STAT_PIN_DIR=$fs/root "$STAT" attach --lib "$PROBED" >"$tmp/out" 2>&1 || { diag "$tmp/out"; r=0; }
pinned=$(find "$fs/root" | wc -l)
as_other ln -s "$fs/root" "$GN_STAT_PIN_DIR" || r=0
refused attach "is a symbolic link" || r=0
refused detach "is a symbolic link" || r=0
[ "$(find "$fs/root" | wc -l)" -eq "$pinned" ] || r=0
[ -n "$(ls -A "$fs/root/links")" ] || r=0
gn_result $r "attach and detach refuse a symbolic link another user planted, and root's pins it points to stay"
rm -f "$GN_STAT_PIN_DIR"

# ---- root's own mistakes ------------------------------------------------------

r=1
mkdir -m 0777 "$GN_STAT_PIN_DIR"
refused attach "mode 0777, not 0700" "chmod 0700" || r=0
gn_result $r "attach refuses a pin directory of mode 0777 and says chmod 0700"
rmdir "$GN_STAT_PIN_DIR"

r=1
mkdir -m 0700 "$GN_STAT_PIN_DIR" "$GN_STAT_PIN_DIR/links"
chown $OTHER "$GN_STAT_PIN_DIR/links"
refused attach "links is owned by uid $OTHER" || r=0
gn_result $r "attach refuses a links/ directory owned by another user"
rm -rf "$GN_STAT_PIN_DIR"

r=1
chmod 0777 "$fs"
refused attach "$fs, above the pin directory, has mode 0777" "chmod +t" || r=0
[ ! -e "$GN_STAT_PIN_DIR" ] || r=0
chmod 1777 "$fs"
gn_result $r "attach refuses a parent others may write to without the sticky bit, and makes nothing"

# ---- the directories it makes ------------------------------------------------

r=1
(umask 0277 && "$STAT" attach --lib "$PROBED") >"$tmp/out" 2>&1 || { diag "$tmp/out"; r=0; }
for d in "$GN_STAT_PIN_DIR" "$GN_STAT_PIN_DIR/links"; do
	m=$(stat -c '%a %u %F' "$d")
	[ "$m" = "700 0 directory" ] || { echo "# $d: $m"; r=0; }
done
[ -e "$GN_STAT_PIN_DIR/gn_flows" ] || r=0
gn_result $r "attach under umask 0277 makes the pin directory and links/ root's, mode 0700, and pins there"

r=1
"$STAT" attach --lib "$PROBED" >"$tmp/out" 2>&1 || { diag "$tmp/out"; r=0; }
"$STAT" dump --json >"$tmp/out" 2>&1 || { diag "$tmp/out"; r=0; }
"$STAT" detach >"$tmp/out" 2>&1 || { diag "$tmp/out"; r=0; }
[ ! -e "$GN_STAT_PIN_DIR" ] || r=0
gn_result $r "a second attach, dump and detach work in the directory it made; detach removes it"

echo "# $((testno - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
