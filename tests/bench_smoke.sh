#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench_smoke.sh - gradnet-bench runs and reports what it says it reports.
# It checks that the benchmarks work, not how fast anything is.
#
#  codec      gradnet-bench codec, in both modes, on a small tensor and
#             briefly: every field of its JSON present, every speed, ratio
#             and size a finite number above zero, one row per thread
#             count; a row per registered codec (and topk-qsgd) with the
#             benchmark settings, their ratios ordered as their densities
#             say; --codec LABEL=SPEC rows as asked; a bad --codec refused
#             with a message naming it.
#  allreduce  gradnet-bench allreduce on tiny jobs in network namespaces
#             (root): --codec none,3lc,topk,topk-qsgd,qsgd gives one row
#             whose codecs are those jobs with their specs, every number
#             finite and above zero, the old 3LC and dense fields kept;
#             8 ranks work; a bad --codec stops the run before it starts,
#             naming the item; gradnet-rank --codec takes any registered
#             codec with its parameters and refuses an unknown one naming
#             the known ones; no namespace is left behind.
#
# usage: bench_smoke.sh GRADNET_BENCH [codec|allreduce]   (default codec)

set -eu

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/net/lib.sh
. "$here/net/lib.sh"

BENCH=$1
MODE=${2:-codec}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
testno=0
failed=0

echo "TAP version 13"

# run OUT CMD...: CMD's stdout to OUT, its stderr as TAP comments if it
# fails. Return: its status.
run() {
	local out=$1 rc=0

	shift
	"$@" >"$out" 2>"$tmp/err" || rc=$?
	[ "$rc" -eq 0 ] || sed 's/^/# /' "$tmp/err"
	return "$rc"
}

# check NAME FILE: the JSON in FILE checked as NAME (python below).
check() {
	python3 - "$1" "$2" <<'PY' 2>&1 | sed 's/^/# /'
import json, math, sys

name, path = sys.argv[1], sys.argv[2]
text = [l for l in open(path) if not l.startswith("#")]


def numbers(v, at):
    if isinstance(v, dict):
        for k, x in v.items():
            yield from numbers(x, at + "." + k)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from numbers(x, "%s[%d]" % (at, i))
    elif isinstance(v, (int, float)) and not isinstance(v, bool):
        yield at, v


def positive(d):
    bad = [(at, v) for at, v in numbers(d, "") if not math.isfinite(v) or v <= 0]
    assert not bad, "not a finite number above zero: %s" % bad


BENCH_SPECS = {"none": "none", "3lc": "3lc", "topk": "topk:density=0.01",
               "topk-qsgd": "topk:density=0.01,bits=4", "qsgd": "qsgd:bits=4"}


def codec_rows(d):
    rows = d["codecs"]
    for r in rows:
        for k in ("encode_gbps", "decode_gbps"):
            assert set(r[k]) == {"cache", "dram"}, (r["label"], k, r[k])
        assert r["params"].startswith(r["spec"].split(":")[0]), r
    return {r["label"]: r for r in rows}


if name.startswith("codec"):
    lines = [l for l in text if l.startswith("{")]
    assert len(lines) == 1, "one JSON line, got %d" % len(lines)
    d = json.loads(lines[0])
if name == "codec":
    want = ["encode_gbps", "encode_double_buffered_gbps", "decode_gbps",
            "memcpy_gbps", "stream_encode_gbps", "stream_decode_gbps",
            "zstd1_gbps", "lz4_gbps", "ratio", "chunk_ratio", "codecs"]
    for k in want:
        assert k in d, "field %s missing" % k
    for k in want[:7]:
        assert set(d[k]) == {"cache", "dram"}, "%s: %s" % (k, d[k])
    assert all(r > 1 for r in d["ratio"].values()), d["ratio"]
    rows = codec_rows(d)
    # Every registered codec by name, then the benchmark label that is none.
    assert set(BENCH_SPECS) <= set(rows), list(rows)
    assert list(rows)[-1] == "topk-qsgd", list(rows)
    for label, spec in BENCH_SPECS.items():
        assert rows[label]["spec"] == spec, rows[label]
    assert "density=0.01" in rows["topk"]["params"], rows["topk"]
    assert "bits=4" in rows["topk-qsgd"]["params"], rows["topk-qsgd"]
    assert d["mtu"] == 1500, d["mtu"]
    # Fewer, smaller values: the parameters reached the codecs.
    r = {k: v["ratio"] for k, v in rows.items()}
    assert r["topk-qsgd"] > r["topk"] > r["qsgd"] > r["none"], r
elif name == "codec-asked":
    rows = codec_rows(d)
    assert list(rows) == ["none", "t5", "z"], list(rows)
    assert d["mtu"] == 9000, d["mtu"]
    assert "entropy=zstd" in rows["z"]["params"], rows["z"]
    assert rows["t5"]["spec"] == "topk:density=0.05,bits=8", rows["t5"]
    assert "density=0.05" in rows["t5"]["params"], rows["t5"]
elif name == "threads":
    lines = [l for l in text if l.startswith("{")]
    d = json.loads(lines[0])
    rows = d["rows"]
    assert [r["threads"] for r in rows] == [1, 2], rows
    for r in rows:
        for k in ("encode_gbps", "decode_gbps", "stream_add_gbps",
                  "stream_addk_gbps", "encode_gb_per_cpu_s",
                  "decode_gb_per_cpu_s"):
            assert k in r, "row %d: %s missing" % (r["threads"], k)
    assert rows[0]["encode_x"] == 1 and rows[0]["decode_x"] == 1, rows[0]
    assert d["ratio"] > 1, d["ratio"]
elif name == "allreduce":
    rows = json.loads("".join(text))
    assert len(rows) == 1, rows
    row = rows[0]
    assert row["ranks"] == 2 and row["elems"] == 65536, row
    cods = {c["label"]: c for c in row["codecs"]}
    assert list(cods) == list(BENCH_SPECS), list(cods)
    for label, spec in BENCH_SPECS.items():
        assert cods[label]["spec"] == spec, cods[label]
    # The old fields are the 3lc and none jobs'.
    assert row["gradnet_s"] == cods["3lc"]["time_s"], row
    assert row["wire_bytes"] == cods["3lc"]["wire_bytes"], row
    assert row["dense_s"] == cods["none"]["time_s"], row
    assert row["dense_bytes"] == cods["none"]["wire_bytes"], row
    assert cods["none"]["speedup"] == 1 and cods["none"]["bytes_x"] == 1, cods
    assert row["ring_bytes"] == 8 * 65536 // 2, row
    w = {k: c["wire_bytes"] for k, c in cods.items()}
    assert w["topk-qsgd"] < w["topk"] < w["none"], w
    assert w["qsgd"] < w["none"], w
    for c in row["codecs"]:
        assert c["retransmits"] >= 0, c
        c = dict(c, retransmits=1)
        positive(c)
    positive({k: row[k] for k in (
        "gradnet_s", "gradnet_nomac_s", "dense_s", "wire_bytes",
        "stream_bytes", "ctl_bytes", "dense_bytes", "pps", "cpu_s",
        "dense_pps", "dense_cpu_s", "ring_bytes")})
elif name == "allreduce-8":
    rows = json.loads("".join(text))
    assert [(r["ranks"], [c["label"] for c in r["codecs"]]) for r in rows] \
        == [(8, ["topk", "none"])], rows
    assert rows[0]["ring_bytes"] == 7 * 4096, rows
    assert rows[0]["gradnet_s"] is None, rows
    for c in rows[0]["codecs"]:
        positive(dict(c, retransmits=1))
if name in ("codec", "threads"):
    positive(d)
PY
	return "${PIPESTATUS[0]}"
}

# refused NAME PATTERN CMD...: CMD fails with status 2 and a message
# matching PATTERN on stderr.
refused() {
	local name=$1 pattern=$2 rc=0

	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	if [ "$rc" -eq 2 ] && grep -q -- "$pattern" "$tmp/err"; then
		gn_result 1 "$name"
	else
		echo "# exit $rc, stderr: $(tr '\n' ' ' <"$tmp/err")"
		gn_result 0 "$name"
	fi
}

codec_mode() {
	local ok

	echo "1..5"
	ok=0
	run "$tmp/out" "$BENCH" codec --seconds 0.01 --dram-mib 8 --json &&
		check codec "$tmp/out" && ok=1
	gn_result "$ok" "codec: every field, a row per registered codec and topk-qsgd"
	ok=0
	run "$tmp/out" "$BENCH" codec --seconds 0.01 --dram-mib 8 --json \
		--codec none --codec t5=topk:density=0.05,bits=8 \
		--codec z=3lc:entropy=zstd --mtu 9000 &&
		check codec-asked "$tmp/out" && ok=1
	gn_result "$ok" "codec --codec none --codec t5=topk:... --codec z=3lc:entropy=zstd --mtu 9000: those rows"
	ok=0
	run "$tmp/out" "$BENCH" codec --threads 1,2 --seconds 0.01 \
		--dram-mib 8 --json && check threads "$tmp/out" && ok=1
	gn_result "$ok" "threads"
	# bench_die exits 1; the message names the item.
	ok=0
	if ! "$BENCH" codec --dram-mib 8 --codec topk:density=2 >/dev/null \
		2>"$tmp/err" && grep -q 'topk:density=2.*density' "$tmp/err"; then
		ok=1
	fi
	gn_result "$ok" "codec --codec topk:density=2 refused, naming it"
	ok=0
	if ! "$BENCH" codec --dram-mib 8 --codec none, >/dev/null 2>"$tmp/err" &&
		grep -q 'ends in a comma' "$tmp/err"; then
		ok=1
	fi
	gn_result "$ok" "codec --codec none, refused"
}

allreduce_mode() {
	local ok rank prefix=gnbsmoke$$

	echo "1..7"
	# gradnet-bench's namespaces get this prefix (tests/net/lib.sh).
	export GN_NS_PREFIX=$prefix
	ok=0
	run "$tmp/rows" "$BENCH" allreduce --ranks 2 --link none --elems 65536 \
		--steps 2 --no-mpi --codec none,3lc,topk,topk-qsgd,qsgd --json &&
		check allreduce "$tmp/rows" && ok=1
	gn_result "$ok" "allreduce --codec none,3lc,topk,topk-qsgd,qsgd: a job each, their specs and ratios, the old fields"
	ok=0
	run "$tmp/rows8" "$BENCH" allreduce --ranks 8 --link none --elems 4096 \
		--steps 2 --no-mpi --codec topk,none --json &&
		check allreduce-8 "$tmp/rows8" && ok=1
	gn_result "$ok" "allreduce --ranks 8 --codec topk,none"
	refused "allreduce --codec topk:density=2 refused before the run" \
		'topk:density=2.*density' \
		"$BENCH" allreduce --ranks 2 --link none --elems 4096 --no-mpi \
		--codec none,topk:density=2
	refused "allreduce --codec a=none,a=3lc: a label given twice" \
		'label a is given twice' \
		"$BENCH" allreduce --ranks 2 --link none --elems 4096 --no-mpi \
		--codec a=none,a=3lc
	rank=$("$BENCH" allreduce --where | sed -n 's/^rank_bin=//p')
	ok=0
	if env GN_INSECURE=1 GN_RANK=0 GN_WORLD_SIZE=1 GN_PEERS=127.0.0.1:0 \
		"$rank" --elems 4096 --steps 1 --warmup 0 \
		--codec topk:density=0.02,bits=8 >"$tmp/out" 2>"$tmp/err" &&
		grep -q '"codec": "topk:density=0.02,bits=8"' "$tmp/out"; then
		ok=1
	fi
	gn_result "$ok" "gradnet-rank --codec topk:density=0.02,bits=8 runs and says so"
	refused "gradnet-rank --codec zip names the known codecs" \
		'no codec "zip" (known: none, 3lc, topk, qsgd' \
		"$rank" --codec zip
	ok=1
	if ip netns list | grep -q "^$prefix-"; then
		echo "# namespaces left: $(ip netns list | grep "^$prefix-" | tr '\n' ' ')"
		ok=0
	fi
	gn_result "$ok" "no namespace left"
}

case $MODE in
codec)		codec_mode ;;
allreduce)	allreduce_mode ;;
*)		echo "usage: bench_smoke.sh GRADNET_BENCH [codec|allreduce]" >&2; exit 2 ;;
esac
[ "$failed" -eq 0 ]
