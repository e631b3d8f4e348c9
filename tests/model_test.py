#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""model_test.py - tools/allreduce-model.py computes what its docstring
says: the model table of its measurement record (doc/perf/allreduce-model.md)
from the inputs that record names, one core's time whatever --efficiency
says, the fewest cores that beat dense, --json with the same numbers for
any --links and --cores, and a clear refusal of inputs it cannot use. TAP
on stdout.

usage: model_test.py PATH/TO/allreduce-model.py PATH/TO/allreduce-model.md
"""

import argparse
import importlib.util
import json
import random
import re
import subprocess
import sys

MODEL = sys.argv[1]
spec = importlib.util.spec_from_file_location("model", MODEL)
model = importlib.util.module_from_spec(spec)
spec.loader.exec_module(model)


def record(path):
    """The record's inputs (its command line, the first one given) and the
    rows of its first table of links, as the page prints them."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"`tools/allreduce-model\.py ((?:--[a-z0-9-]+ [0-9.]+ ?)+)`",
                  text)
    if not m:
        sys.exit("%s: no `tools/allreduce-model.py --...` command" % path)
    table = re.search(r"^\| link \|.*\n\|[-|]+\|\n((?:\|.*\n)+)", text, re.M)
    if not table:
        sys.exit("%s: no table whose first column is link" % path)
    return m.group(1).split(), table.group(1).splitlines()


# The record's inputs (Zen 4, ec70e36) and the rows it prints for them.
RECORD_ARGS, RECORD_ROWS = record(sys.argv[2])


def job(enc, dec, w3, wd, floats=26214400, ranks=2, eff=1.0):
    return argparse.Namespace(encode_gbps=enc, decode_gbps=dec,
                              wire_3lc=w3, wire_dense=wd, floats=floats,
                              ranks=ranks, efficiency=eff)


def run(args):
    return subprocess.run([sys.executable, MODEL] + args,
                          capture_output=True, text=True)


def record_table():
    r = run(RECORD_ARGS)
    assert r.returncode == 0, r.stderr
    rows = [l for l in r.stdout.splitlines() if l.startswith("| ") and
            "Gbit/s" in l]
    assert rows == RECORD_ROWS, "\n".join(
        ["the script prints:"] + rows + ["the record holds:"] + RECORD_ROWS)


def by_hand():
    # 4N = 104,857,600 bytes: encode 4N at 5.51 GB/s, decode-add
    # 4N * 3/2 at 21.45 GB/s, plus 642,552 bytes at 1 Gbit/s.
    a = job(5.51, 21.45, 642552, 110180940)
    want = 104857600 / 5.51e9 + 157286400 / 21.45e9 + 642552 * 8 / 1e9
    assert abs(model.gradnet_s(a, 1, 1) - want) < 1e-12
    assert abs(model.dense_s(a, 1) - 110180940 * 8 / 1e9) < 1e-12


def efficiency_spares_one_core():
    full, half = (job(6.25, 13.86, 642134, 109944000, eff=e)
                  for e in (1.0, 0.5))
    for g in model.LINKS_GBIT:
        assert model.gradnet_s(half, 1, g) == model.gradnet_s(full, 1, g)
        # two cores at half efficiency do one core's codec work
        assert abs(model.gradnet_s(half, 2, g) -
                   model.gradnet_s(full, 1, g)) < 1e-12


def fewest_cores():
    rng = random.Random(8)
    seen = set()
    for _ in range(3000):
        a = job(rng.uniform(0.5, 40), rng.uniform(0.5, 60),
                rng.uniform(1e4, 5e7), rng.uniform(1e6, 2e8),
                ranks=rng.randint(2, 16), eff=rng.choice((1.0, 0.8, 0.5)))
        for g in model.LINKS_GBIT:
            k = model.cores_to_win(a, g)
            d = model.dense_s(a, g)
            if k is None:
                assert a.wire_3lc >= a.wire_dense, (a, g)
                continue
            assert model.gradnet_s(a, k, g) < d, (a, g, k)
            assert k == 1 or model.gradnet_s(a, k - 1, g) >= d, (a, g, k)
            seen.add(min(k, 3))
    assert seen == {1, 2, 3}, seen


def json_output():
    r = run(RECORD_ARGS + ["--json", "--links", "1,2.5,100", "--cores", "1,3"])
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    a = job(5.51, 21.45, 642552, 110180940)
    assert [row["link_gbit"] for row in out["rows"]] == [1, 2.5, 100], out
    assert out["cores"] == [1, 3] and out["wire_3lc"] == 642552, out
    for row in out["rows"]:
        g = row["link_gbit"]
        assert abs(row["dense_s"] - model.dense_s(a, g)) < 1e-12, row
        for c in (1, 3):
            assert abs(row["gradnet_s"][str(c)] - model.gradnet_s(a, c, g)) < 1e-12, row
        assert row["cores_to_win"] == model.cores_to_win(a, g), row
    # the JSON says what the table says, for the record's inputs
    table = run(RECORD_ARGS + ["--json"])
    rows = json.loads(table.stdout)["rows"]
    assert [f"{x['dense_s'] * 1e3:.1f} ms" for x in rows] == \
        [l.split(" | ")[1] for l in RECORD_ROWS], rows


def sealing():
    # One core seals 2 GB/s and opens 4 GB/s: 3LC's wire bytes cost
    # w/2e9 + w/4e9 on the codec cores; a 100 Gbit/s link both ways
    # takes 12.5e9 / 2e9 + 12.5e9 / 4e9 = 9.375 cores.
    a = job(5.51, 21.45, 642552, 110180940)
    s = argparse.Namespace(**vars(a), seal_gbps=2.0, open_gbps=4.0)
    extra = 642552 / 2e9 + 642552 / 4e9
    for c, g in ((1, 1), (2, 100)):
        assert abs(model.gradnet_s(s, c, g) - model.gradnet_s(a, c, g) -
                   extra / c) < 1e-12
    assert abs(model.seal_cores(s, 100) - 9.375) < 1e-12
    r = run(RECORD_ARGS + ["--seal-gbps", "2", "--open-gbps", "4"])
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1].endswith(" 9.4 cores |"), r.stdout
    for bad in (["--seal-gbps", "2"], ["--seal-gbps", "2", "--open-gbps", "0"]):
        r = run(RECORD_ARGS + bad)
        assert r.returncode == 2 and "error" in r.stderr, (bad, r.stderr)


def refusals():
    for bad in (["--efficiency", "0"], ["--efficiency", "1.5"],
                ["--ranks", "1"], ["--encode-gbps", "-1"],
                ["--links", "1,x"], ["--links", "0"], ["--cores", "1.5"]):
        r = run(RECORD_ARGS + bad)
        assert r.returncode == 2 and "error" in r.stderr, (bad, r.stderr)
    r = run(["--encode-gbps", "5"])
    assert r.returncode == 2 and "--measure" in r.stderr, r.stderr


CHECKS = [("the record's model table from the record's inputs", record_table),
          ("one core's time by hand", by_hand),
          ("--efficiency leaves one core's time alone", efficiency_spares_one_core),
          ("the fewest cores that beat dense", fewest_cores),
          ("--json holds the model's times for --links and --cores", json_output),
          ("sealing's cores, with --seal-gbps and --open-gbps", sealing),
          ("bad inputs refused with exit 2", refusals)]

print("TAP version 13")
print(f"1..{len(CHECKS)}")
failed = 0
for i, (name, fn) in enumerate(CHECKS, 1):
    try:
        fn()
        print(f"ok {i} - {name}")
    except AssertionError as e:
        failed += 1
        for line in str(e).splitlines() or ["assertion failed"]:
            print(f"# {line}")
        print(f"not ok {i} - {name}")
sys.exit(1 if failed else 0)
