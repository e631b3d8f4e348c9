#!/bin/bash
# SPDX-License-Identifier: MIT
#
# mpirun_test.sh - ranks under Open MPI's mpirun find each other without
# GN_PEERS: through the launcher's PMIx server (gn_ctx_open() with no
# peer list) and over MPI_COMM_WORLD (gn_ctx_open_mpi()), and a 4-rank
# job gives bit for bit what the same job gives with GN_PEERS. The key
# comes from GN_KEY_FILE, as the docs say to run it; none goes through
# the launcher.
#
# usage: mpirun_test.sh MPI_JOB GRADNET_RANK DATA_DIR

set -eu

job=$1
rank_tool=$2
data=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

(umask 077 && head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/key")
mpirun=(mpirun --allow-run-as-root --oversubscribe -np 4
	-x GN_KEY_FILE="$tmp/key" -x GN_TIMEOUT_MS=20000)
# Four ports above the ephemeral range's usual start, per process.
base=$((20000 + ($$ % 2000) * 4))
peers="127.0.0.1:$base,127.0.0.1:$((base + 1)),127.0.0.1:$((base + 2)),127.0.0.1:$((base + 3))"

echo "TAP version 13"
echo "1..5"

# The launcher gives the ranks a PMIx server: what this test relies on.
if "${mpirun[@]}" sh -c 'test -n "$PMIX_NAMESPACE" && env | grep -q "^PMIX_SERVER_URI"' \
	>"$tmp/env.out" 2>&1; then
	echo "ok 1 - mpirun gives every rank a PMIx server (PMIX_NAMESPACE, PMIX_SERVER_URI*)"
else
	echo "not ok 1 - mpirun's ranks see no PMIx server"
	sed 's/^/# /' "$tmp/env.out"
fi

run() {	# NAME OUT ARGS...: one mpirun, its output in OUT
	local name=$1 out=$2
	shift 2
	if "${mpirun[@]}" "$@" >"$out" 2>"$out.err"; then
		return 0
	fi
	echo "# $name failed:"
	sed 's/^/# /' "$out" "$out.err" | tail -20
	return 1
}

ok=0
run "GN_PEERS" "$tmp/peers.out" -x GN_PEERS="$peers" "$job" --open env && ok=1
run "PMIx" "$tmp/pmix.out" "$job" --open env || ok=0
run "gn_ctx_open_mpi" "$tmp/mpi.out" "$job" --open mpi || ok=0
want=$(sed -n 's/^ranks 4 hash \([0-9a-f]*\)$/\1/p' "$tmp/peers.out")
if [ "$ok" = 1 ] && [ -n "$want" ] &&
	grep -qx "ranks 4 hash $want" "$tmp/pmix.out" &&
	grep -qx "ranks 4 hash $want" "$tmp/mpi.out"; then
	echo "ok 2 - 4 ranks: GN_PEERS, PMIx and gn_ctx_open_mpi() end with the same bytes ($want)"
else
	echo "not ok 2 - the three ways of opening differ or failed"
	cat "$tmp/peers.out" "$tmp/pmix.out" "$tmp/mpi.out" 2>/dev/null | sed 's/^/# /'
fi

# gradnet-rank, a program that knows nothing of MPI, under mpirun.
hashes() { sed -n 's/.*"rank": \([0-9]*\),.*"hash": "\([0-9a-f]*\)".*/\1 \2/p' "$1" | sort; }
ok=0
run "gradnet-rank with GN_PEERS" "$tmp/r1.out" -x GN_PEERS="$peers" \
	"$rank_tool" --elems 300000 --steps 4 --data "$data" && ok=1
run "gradnet-rank through PMIx" "$tmp/r2.out" \
	"$rank_tool" --elems 300000 --steps 4 --data "$data" || ok=0
if [ "$ok" = 1 ] && [ "$(hashes "$tmp/r1.out" | wc -l)" = 4 ] &&
	[ "$(hashes "$tmp/r1.out")" = "$(hashes "$tmp/r2.out")" ] &&
	[ "$(hashes "$tmp/r1.out" | awk '{ print $2 }' | sort -u | wc -l)" = 1 ]; then
	echo "ok 3 - gradnet-rank, 4 ranks through PMIx: bit-identical to GN_PEERS"
else
	echo "not ok 3 - gradnet-rank through PMIx differs from GN_PEERS or failed"
	hashes "$tmp/r1.out" | sed 's/^/# peers: /'
	hashes "$tmp/r2.out" | sed 's/^/# pmix: /'
fi

# Outside a launcher there is no exchange: the message says what to set.
if env -u PMIX_NAMESPACE -u PMIX_RANK GN_RANK=0 GN_WORLD_SIZE=2 \
	GN_KEY_FILE="$tmp/key" "$rank_tool" --steps 1 --data "$data" \
	>"$tmp/none.out" 2>&1; then
	echo "not ok 4 - a rank with no peer list and no launcher opened"
elif grep -q 'GN_PEERS' "$tmp/none.out" && grep -q 'PMIx launcher' "$tmp/none.out"; then
	echo "ok 4 - no peer list and no launcher: refused, naming GN_PEERS and the launchers"
else
	echo "not ok 4 - the refusal does not say what to set"
	sed 's/^/# /' "$tmp/none.out"
fi

# A rank whose launcher world differs from gradnet's is refused, not hung.
# A larger world, so that every rank reaches the launcher's check: under
# a smaller one the ranks past its end fail the rank check first, and
# mpirun may kill the others before they print.
if "${mpirun[@]}" -x GN_WORLD_SIZE=5 "$job" --open env >"$tmp/w.out" 2>&1; then
	echo "not ok 5 - ranks given world size 5 by GN_WORLD_SIZE under a 4-rank launcher opened"
elif grep -q 'the launcher says rank' "$tmp/w.out"; then
	echo "ok 5 - a world size other than the launcher's is refused, naming both"
else
	echo "not ok 5 - the refusal does not name the launcher's world"
	sed 's/^/# /' "$tmp/w.out" | tail -5
fi
