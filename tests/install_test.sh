#!/bin/bash
# SPDX-License-Identifier: MIT
#
# install_test.sh - the installed package works without the source tree:
# `meson install` into a temporary DESTDIR, then, with the source and
# build trees hidden (a private mount namespace with tmpfs over them),
# gradnet-bench finds bench-allreduce.sh, lib.sh and gradnet-rank, and
# gradnet-rank finds the gradient samples, all under the DESTDIR; (as
# root) the installed gradnet-bench allreduce runs a tiny job; and man
# finds the installed pages by their names.
#
# usage: install_test.sh BUILD_DIR SOURCE_DIR
# Hiding the trees needs root (unshare -m); without it the same checks run
# with the trees visible, and the paths must still lie under the DESTDIR.

set -eu

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "TAP version 13"
echo "1..9"

if ! meson install -C "$build" --no-rebuild --destdir "$tmp" >"$tmp/install.log" 2>&1; then
	sed 's/^/# /' "$tmp/install.log"
	echo "Bail out! meson install failed"
	exit 1
fi
bench=$(find "$tmp" -path '*/bin/gradnet-bench' -type f | head -1)
if [ -z "$bench" ]; then
	echo "Bail out! no bin/gradnet-bench under the DESTDIR"
	exit 1
fi
bindir=$(dirname "$bench")

# The checks, run with the trees hidden if we can.
cat >"$tmp/checks.sh" <<'CHECKS'
set -u
tmp=$1 bindir=$2 n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
fail() { n=$((n + 1)); echo "not ok $n - $1"; sed 's/^/# /' "$tmp/out"; }
under() { case "$1" in "$tmp"/*) return 0 ;; *) return 1 ;; esac; }

cd /
if "$bindir/gradnet-bench" allreduce --where >"$tmp/out" 2>&1 &&
	rb=$(sed -n 's/^rank_bin=//p' "$tmp/out") && under "$rb" && [ -x "$rb" ] &&
	grep -q '^lib=loaded$' "$tmp/out"; then
	ok "gradnet-bench allreduce finds bench-allreduce.sh, lib.sh and gradnet-rank installed"
else
	fail "gradnet-bench allreduce finds its installed helpers"
fi
mb=$(sed -n 's/^mpi_bin=//p' "$tmp/out")
lb=$(sed -n 's/^loss_bin=//p' "$tmp/out")
if under "$mb" && under "$lb"; then
	ok "mpi-allreduce and gn-loss are looked for in the installed libexecdir"
else
	fail "mpi-allreduce and gn-loss paths lie outside the DESTDIR"
fi
if env -u GN_DATA_DIR GN_WORLD_SIZE=1 GN_PEERS=127.0.0.1:29097 GN_INSECURE=1 \
	"$bindir/gradnet-rank" --elems 4096 --steps 2 --warmup 0 >"$tmp/out" 2>&1 &&
	grep -q '"hash"' "$tmp/out"; then
	ok "installed gradnet-rank loads the installed gradient samples and runs"
else
	fail "installed gradnet-rank runs on the installed samples"
fi
# A whole (tiny) benchmark: namespaces from the installed lib.sh, ranks
# from the installed gradnet-rank. Needs root for the namespaces.
if [ "$(id -u)" -ne 0 ]; then
	n=$((n + 1)); echo "ok $n - installed gradnet-bench allreduce runs # SKIP not root"
elif "$bindir/gradnet-bench" allreduce --ranks 2 --link none --elems 4096 \
		--steps 2 --no-mpi --no-dense >"$tmp/out" 2>&1 &&
	grep -q '"gradnet_s": [0-9]' "$tmp/out"; then
	ok "installed gradnet-bench allreduce runs a 2-rank job in namespaces"
else
	fail "installed gradnet-bench allreduce runs a 2-rank job"
fi
# A trainer built against the installed header and shared library only.
inc=$(find "$tmp" -path '*/include/gradnet/gradnet.h' | head -1)
so=$(find "$tmp" -name 'libgradnet.so' | head -1)
cat >"$tmp/trainer.c" <<'C'
#include <stdio.h>
#include <gradnet/gradnet.h>

int main(void)
{
	GN_OPTS(gn_ctx_opts, o, .world_size = 1, .peers = "127.0.0.1:29098",
		.flags = GN_CTX_INSECURE);
	GN_OPTS(gn_tensor_opts, t, .id = 1, .elems = 4, .codec = GN_CODEC_NONE);
	float x[4] = { 1, 2, 3, 4 };
	struct gn_ctx *ctx;

	if (gn_version_number() != GN_VERSION_NUMBER || gn_ctx_open(&o, &ctx))
		return 1;
	if (gn_tensor_register(ctx, &t) || gn_allreduce(ctx, 1, x) || x[3] != 4)
		return 1;
	gn_ctx_close(ctx);
	printf("gradnet %s\n", gn_version());
	return 0;
}
C
# A sanitizer build's library needs its runtime linked into the program.
san=
if [ -n "$so" ] && ldd "$so" | grep -q libasan; then
	san=-fsanitize=address,undefined
fi
if [ -n "$inc" ] && [ -n "$so" ] &&
	cc -Wall -Werror $san -I"$(dirname "$(dirname "$inc")")" "$tmp/trainer.c" \
		-L"$(dirname "$so")" -lgradnet -o "$tmp/trainer" >"$tmp/out" 2>&1 &&
	LD_LIBRARY_PATH=$(dirname "$so") "$tmp/trainer" >"$tmp/out" 2>&1; then
	ok "a trainer builds and runs on the installed gradnet.h and libgradnet.so alone"
else
	fail "a trainer builds and runs on the installed gradnet.h and libgradnet.so"
fi
# The Python package, installed, on the installed library, trees hidden.
pkg=$(find "$tmp" -path '*/gradnet/__init__.py' | head -1)
if [ -n "$pkg" ] && [ -z "$san" ] &&
	env -u GRADNET_LIB PYTHONPATH="$(dirname "$(dirname "$pkg")")" \
		LD_LIBRARY_PATH="$(dirname "$so")" /usr/bin/python3 -c '
import gradnet, array
assert gradnet.__file__.startswith("'"$tmp"'"), gradnet.__file__
with gradnet.Context(world_size=1, peers="127.0.0.1:29097", insecure=True) as c:
    c.register(1, 4, codec="none")
    x = array.array("f", [1, 2, 3, 4])
    c.allreduce(1, x)
    assert list(x) == [1, 2, 3, 4], list(x)
print("gradnet", gradnet.version())
' >"$tmp/out" 2>&1; then
	ok "the installed Python package imports and allreduces on the installed library"
elif [ -n "$pkg" ] && [ -n "$san" ]; then
	ok "the Python package is installed (a sanitizer build's library cannot load into python3)"
else
	fail "the installed Python package imports and allreduces on the installed library"
fi
# The man pages: `man 7 gradnet` and a function's own name find their page
# under the installed mandir, and it renders.
mandir=$(find "$tmp" -path '*/man/man7/gradnet.7' | head -1)
mandir=${mandir%/man7/gradnet.7}
if [ -n "$mandir" ] &&
	MANWIDTH=80 man -M "$mandir" 7 gradnet >"$tmp/out" 2>&1 &&
	grep -q 'GN_WORLD_SIZE' "$tmp/out" &&
	MANWIDTH=80 man -M "$mandir" 3 gn_allreduce_wait >"$tmp/out" 2>&1 &&
	grep -q 'gn_allreduce_wait' "$tmp/out" &&
	under "$(man -M "$mandir" -w gradnet-stat)"; then
	ok "man 7 gradnet, man gn_allreduce_wait and man gradnet-stat find the installed pages"
else
	fail "the installed man pages are found by man -M MANDIR"
fi
ls "$(dirname "$inc")" >"$tmp/out"
if [ "$(tr '\n' ' ' <"$tmp/out")" = "gradnet.h mpi.h " ]; then
	ok "only gradnet.h and mpi.h are installed (codec.h and wire.h are internal)"
else
	fail "headers besides gradnet.h and mpi.h are installed: $(tr '\n' ' ' <"$tmp/out")"
fi
CHECKS

hidden=0
if [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null; then
	hide="mount -t tmpfs gn-hidden '$src'"
	case "$build/" in "$src"/*) ;; *) hide="$hide && mount -t tmpfs gn-hidden '$build'" ;; esac
	unshare -m bash -c "$hide && bash '$tmp/checks.sh' '$tmp' '$bindir'"
	hidden=1
else
	bash "$tmp/checks.sh" "$tmp" "$bindir"
fi
if [ -f "$(dirname "$bindir")/share/gradnet/gradients/mlp-small-seq/manifest.tsv" ]; then
	echo "ok 9 - gradient samples installed in datadir (source and build trees hidden: $hidden)"
else
	echo "not ok 9 - no share/gradnet/gradients/mlp-small-seq/manifest.tsv"
fi
