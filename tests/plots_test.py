#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""plots_test.py - doc/'s two pictures come back from the JSON kept next to
them: tools/plots.py --redraw draws both PNGs of the committed size from
doc/compressors.json and doc/allreduce-model.json, each JSON says what made
it (commit, date, CPU and ISA, command), the pictures say it too, and the
kept model JSON is what tools/allreduce-model.py computes from its record's
inputs. TAP on stdout.

usage: plots_test.py SOURCE_ROOT
"""

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

SRC = os.path.abspath(sys.argv[1])
DOC = os.path.join(SRC, "doc")
NAMES = ("compressors", "allreduce-model")


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "%s is not a PNG" % path
    return struct.unpack(">II", head[16:24])


def redraw(tmp):
    for n in NAMES:
        shutil.copy(os.path.join(DOC, n + ".json"), tmp)
    r = subprocess.run(["/usr/bin/python3", os.path.join(SRC, "tools", "plots.py"),
                        "--redraw", "--out", tmp], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def pictures_come_back(tmp, out):
    for n in NAMES:
        new = os.path.join(tmp, n + ".png")
        assert png_size(new) == png_size(os.path.join(DOC, n + ".png")), n
        assert os.path.join(tmp, n) + ".png: " in out, out


def json_says_what_made_it(tmp, out):
    for n in NAMES:
        with open(os.path.join(DOC, n + ".json")) as f:
            made = json.load(f)["made_by"]
        for k in ("commit", "date", "cpu", "isa", "command"):
            assert made.get(k), "%s.json: no %s in made_by" % (n, k)
        assert "commit %s" % made["commit"] in out and made["command"] in out, out
        # the commit is one of this repository's
        r = subprocess.run(["git", "-C", SRC, "cat-file", "-e",
                            made["commit"] + "^{commit}"], capture_output=True)
        assert r.returncode == 0, "%s.json: commit %s is not in the repository" % (
            n, made["commit"])


def model_json_is_the_model(tmp, out):
    with open(os.path.join(DOC, "allreduce-model.json")) as f:
        kept = json.load(f)
    args = kept["made_by"]["command"].split()[1:]
    r = subprocess.run([sys.executable, os.path.join(SRC, "tools", "allreduce-model.py")]
                       + args, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    now = json.loads(r.stdout)
    assert now["rows"] == kept["rows"], "the kept model JSON is stale: run tools/plots.py"


CHECKS = [("tools/plots.py --redraw draws both pictures again", pictures_come_back),
          ("each JSON and picture says what made it", json_says_what_made_it),
          ("the kept model JSON is what the model computes", model_json_is_the_model)]


def main():
    print("TAP version 13")
    print("1..%d" % len(CHECKS))
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        try:
            out = redraw(tmp)
        except AssertionError as e:
            out = None
            err = e
        for i, (name, fn) in enumerate(CHECKS, 1):
            try:
                if out is None:
                    raise err
                fn(tmp, out)
                print("ok %d - %s" % (i, name))
            except (AssertionError, OSError) as e:
                failed += 1
                for line in str(e).splitlines() or ["assertion failed"]:
                    print("# " + line)
                print("not ok %d - %s" % (i, name))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
