# SPDX-License-Identifier: MIT
"""test_examples.py - python/examples/ddp_digits.py's --json, which
tools/plots.py draws: a short real run (2 ranks, a few steps, Gloo and
gradnet 3LC) writes one object whose rows are the table it prints."""
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "..", "python", "examples", "ddp_digits.py")


def test_ddp_digits_json_is_its_table(tmp_path):
    out = tmp_path / "ddp.json"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    for v in ("GN_PEERS", "GN_RANK", "GN_WORLD_SIZE", "GN_KEY", "RANK"):
        env.pop(v, None)
    r = subprocess.run([sys.executable, EXAMPLE, "--ranks", "2", "--steps",
                        "4", "--methods", "gloo,gradnet-3lc", "--json",
                        str(out)], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    got = json.loads(out.read_text())
    assert got["command"] in r.stdout
    assert (got["ranks"], got["steps"], got["batch"]) == (2, 4, 32)
    assert [m["method"] for m in got["methods"]] == ["gloo", "gradnet-3lc"]
    table = {}
    for line in r.stdout.splitlines():
        m = re.match(r"^(gloo|gradnet-3lc)\s+([\d.]+)%\s+(\d+)\s+(\d+)\s+"
                     r"([\d.]+)x\s+([\d.]+)\s+(\d+)$", line)
        if m:
            table[m.group(1)] = m.groups()[1:]
    assert set(table) == {"gloo", "gradnet-3lc"}, r.stdout
    for m in got["methods"]:
        acc, carried, sent, ratio, ms, skipped = table[m["method"]]
        assert 0 <= m["accuracy"] <= 1
        assert "%.2f" % (m["accuracy"] * 100) == acc
        assert "%.0f" % m["carried_bytes"] == carried
        assert "%.0f" % m["sent_bytes"] == sent
        assert "%.1f" % m["vs_gloo"] == ratio
        assert "%.2f" % m["ms_per_step"] == ms
        assert m["skipped"] == int(skipped)
        assert m["sent_bytes"] > 0
    # 3LC sends fewer bytes than Gloo's ring even in a few steps
    by = {m["method"]: m for m in got["methods"]}
    assert by["gradnet-3lc"]["sent_bytes"] < by["gloo"]["sent_bytes"]
