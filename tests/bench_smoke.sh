#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench_smoke.sh - gradnet-bench codec runs, in both modes, on a small
# tensor and briefly, and reports what it says it reports: every field of
# its JSON present, every speed, ratio and size a finite number above zero,
# one row per thread count. It checks that the benchmark works, not how
# fast anything is.
#
# usage: bench_smoke.sh GRADNET_BENCH

set -eu

BENCH=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "TAP version 13"
echo "1..2"

# check NAME TESTNO CMD...: run CMD, check its JSON line as NAME, print
# TAP line TESTNO.
check() {
	local name=$1 testno=$2

	shift 2
	if ! "$@" >"$tmp/out" 2>"$tmp/err"; then
		sed 's/^/# /' "$tmp/err"
		echo "not ok $testno - $name: $* failed"
		return 1
	fi
	if python3 - "$name" "$tmp/out" <<'PY'
import json, math, sys

name, path = sys.argv[1], sys.argv[2]
lines = [l for l in open(path) if l.startswith("{")]
assert len(lines) == 1, "one JSON line, got %d" % len(lines)
d = json.loads(lines[0])


def numbers(v, at):
    if isinstance(v, dict):
        for k, x in v.items():
            yield from numbers(x, at + "." + k)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from numbers(x, "%s[%d]" % (at, i))
    elif isinstance(v, (int, float)) and not isinstance(v, bool):
        yield at, v


if name == "codec":
    want = ["encode_gbps", "encode_double_buffered_gbps", "decode_gbps",
            "memcpy_gbps", "stream_encode_gbps", "stream_decode_gbps",
            "zstd1_gbps", "lz4_gbps", "ratio", "chunk_ratio"]
    for k in want:
        assert k in d, "field %s missing" % k
    for k in want[:7]:
        assert set(d[k]) == {"cache", "dram"}, "%s: %s" % (k, d[k])
    assert all(r > 1 for r in d["ratio"].values()), d["ratio"]
else:
    rows = d["rows"]
    assert [r["threads"] for r in rows] == [1, 2], rows
    for r in rows:
        for k in ("encode_gbps", "decode_gbps", "stream_add_gbps",
                  "stream_addk_gbps", "encode_gb_per_cpu_s",
                  "decode_gb_per_cpu_s"):
            assert k in r, "row %d: %s missing" % (r["threads"], k)
    assert rows[0]["encode_x"] == 1 and rows[0]["decode_x"] == 1, rows[0]
    assert d["ratio"] > 1, d["ratio"]
bad = [(at, v) for at, v in numbers(d, "") if not math.isfinite(v) or v <= 0]
assert not bad, "not a finite number above zero: %s" % bad
PY
	then
		echo "ok $testno - $name"
	else
		echo "not ok $testno - $name"
		return 1
	fi
}

failed=0
check codec 1 "$BENCH" codec --seconds 0.01 --dram-mib 8 --json || failed=1
check threads 2 "$BENCH" codec --threads 1,2 --seconds 0.01 --dram-mib 8 \
	--json || failed=1
exit "$failed"
