#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench_rows.sh - the DPDK rows of `gradnet-bench allreduce`: one tiny run
# (4096 floats, 2 steps, 2 ranks) with --transport udp,dpdk,af_xdp and
# --af-xdp-dpdk 1,2 gives one row each for UDP, net_memif, the af_xdp
# mixed job (rank 0 on net_af_xdp, rank 1 UDP) and both ranks on
# net_af_xdp, every one with its times, pps and CPU seconds; the four
# carry the same chunk streams (the same job on four paths); and the run
# leaves no namespace, no EAL files and no XDP program behind.
# Times are printed, never asserted.
#
# usage: bench_rows.sh GRADNET_BENCH
# Nothing skips: a host that cannot run this fails the test.

set -eu

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/net/lib.sh
. "$here/../net/lib.sh"

BENCH=$1
prefix=gnbrows$$
tmp=$(mktemp -d)
testno=0
failed=0
trap 'rm -rf "$tmp"' EXIT

echo "TAP version 13"
echo "1..4"

# The namespaces get this prefix (tests/net/lib.sh), the EAL files
# /var/run/dpdk/gnbench<pid of the script>.*: gradnet-bench execs it.
ok=1
GN_NS_PREFIX=$prefix "$BENCH" allreduce --ranks 2 --link none --elems 4096 \
	--steps 2 --no-mpi --transport udp,dpdk,af_xdp --af-xdp-dpdk 1,2 \
	--json >"$tmp/rows.json" 2>"$tmp/err" &
pid=$!
wait "$pid" || ok=0
sed 's/^/# /' "$tmp/rows.json"
grep -v '^libbpf: \|^libxdp: ' "$tmp/err" | sed 's/^/# stderr: /'
gn_result "$ok" "gradnet-bench allreduce --transport udp,dpdk,af_xdp --af-xdp-dpdk 1,2 exits 0"

ok=0
python3 - "$tmp/rows.json" >"$tmp/check" 2>&1 <<'PY' && ok=1
import json, sys

# gradnet-bench prints its command first, as a comment.
rows = json.loads("".join(l for l in open(sys.argv[1]) if l[0] != "#"))
want = [("udp", "none", None), ("dpdk", "memif", None),
        ("dpdk", "af_xdp-mixed", 1), ("dpdk", "af_xdp", 2)]
got = [(r["transport"], r["link"], r.get("dpdk_ranks")) for r in rows]
assert got == want, got
for r in rows:
    assert r["ranks"] == 2 and r["elems"] == 4096, r
    for f in ("gradnet_s", "dense_s", "pps", "cpu_s", "dense_pps",
              "dense_cpu_s", "wire_bytes", "stream_bytes", "dense_bytes"):
        assert isinstance(r[f], (int, float)) and r[f] > 0, (f, r)
    for f in ("retransmits", "dense_retransmits"):
        assert isinstance(r[f], int) and r[f] >= 0, (f, r)
PY
sed 's/^/# /' "$tmp/check"
gn_result "$ok" "one row each for UDP, memif, af_xdp-mixed (1 DPDK rank) and af_xdp (2), with times, pps, cpu_s, bytes and retransmits"

ok=0
python3 - "$tmp/rows.json" >"$tmp/check" 2>&1 <<'PY' && ok=1
import json, sys

rows = json.loads("".join(l for l in open(sys.argv[1]) if l[0] != "#"))
s = {(r["link"], r["stream_bytes"]) for r in rows}
assert len({b for _, b in s}) == 1, s
PY
sed 's/^/# /' "$tmp/check"
gn_result "$ok" "every row's 3LC job sent the same chunk streams (stream_bytes)"

ok=1
left=$(ip netns list | grep "^$prefix-" || true)
[ -z "$left" ] || { gn_diag "namespaces left: $left"; ok=0; }
if ls -d /var/run/dpdk/gnbench"$pid".* >/dev/null 2>&1; then
	gn_diag "EAL files left: $(ls -d /var/run/dpdk/gnbench"$pid".*)"
	ok=0
fi
if grep -q 'kept an XDP program' "$tmp/err"; then
	ok=0
fi
gn_result "$ok" "no namespace, EAL file or XDP program left"

[ "$failed" -eq 0 ]
