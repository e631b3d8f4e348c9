# SPDX-License-Identifier: MIT
"""test_bench.py - python/examples/ddp_bench.py, the training harness of
the compressor comparisons: its method and codec spec syntax; a short real
run of the language model (2 ranks, a few steps) whose JSON is the table
it prints, where gradnet dense ends where Gloo does; a codec the library
does not know stops the run before any rank starts, with its message; and
the same jobs with each rank in a network namespace."""
import json
import math
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "python", "examples")
BENCH = os.path.join(EXAMPLES, "ddp_bench.py")
sys.path.insert(0, EXAMPLES)

import ddp_bench  # noqa: E402


def run(args, timeout=600, env=None):
    env = dict(env or os.environ, OMP_NUM_THREADS="1")
    for v in ("GN_PEERS", "GN_RANK", "GN_WORLD_SIZE", "GN_KEY", "GN_CODEC",
              "RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(v, None)
    return subprocess.run([sys.executable, BENCH] + args, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_codec_spec_syntax():
    P = ddp_bench.parse_codec_spec
    assert P("3lc") == ("3lc", {})
    assert P("3lc:s=1.5") == ("3lc", {"s": 1.5})
    assert P("topk:density=0.01,bits=4,norm=l2") == (
        "topk", {"density": 0.01, "bits": 4, "norm": "l2"})
    for bad, why in (("", "no codec name"), (":s=1", "no codec name"),
                     ("3lc:", "nothing after"), ("3lc:s", "not key=value"),
                     ("3lc:s=", "not key=value"), ("3lc:=1", "not key=value"),
                     ("3lc:s=1,s=2", "s given twice"),
                     ("3lc:1s=1", "not a parameter name"),
                     ("a=b", "not a codec name")):
        with pytest.raises(ddp_bench.SpecError, match=why):
            P(bad)


def test_method_list_syntax():
    ms = ddp_bench.split_methods(
        "gloo,fp16,powersgd4,gradnet:none,gradnet:topk:density=0.01,bits=4,"
        "gradnet-3lc-s1.5")
    assert [m.text for m in ms] == [
        "gloo", "fp16", "powersgd4", "gradnet:none",
        "gradnet:topk:density=0.01,bits=4", "gradnet-3lc-s1.5"]
    assert [m.kind for m in ms] == ["gloo", "fp16", "powersgd", "gradnet",
                                    "gradnet", "gradnet"]
    assert ms[2].rank == 4
    assert (ms[4].codec, ms[4].params) == ("topk", {"density": 0.01,
                                                    "bits": 4})
    # the old name is the spec it stands for
    assert (ms[5].codec, ms[5].params) == ("3lc", {"s": 1.5})
    for bad, why in (("gloo,bits=4", "follows no gradnet"),
                     ("gradnet:3lc,s=1.5", "follows no gradnet"),
                     ("powersgd", "rank R >= 1"), ("powersgd0", "rank R"),
                     ("mpi", "not gloo, fp16"), ("", "no method")):
        with pytest.raises(ddp_bench.SpecError, match=why):
            ddp_bench.split_methods(bad)


def test_model_method_syntax():
    P = ddp_bench.parse_model_spec
    assert P("3lc") == (False, "3lc", {}, {})
    assert P("3lc:s=1.5") == (False, "3lc", {"s": 1.5}, {})
    assert P("none") == (False, "none", {}, {})
    assert P("dore") == (True, "default", {}, {})
    assert P("dore:alpha=0.2,eta=0.25") == (True, "default", {},
                                             {"alpha": 0.2, "eta": 0.25})
    assert P("dore:bucket=128,beta=1") == (True, "default", {"bucket": 128},
                                            {"beta": 1})
    assert P("dore:topk:density=0.1,eta=0.5") == (
        True, "topk", {"density": 0.1}, {"eta": 0.5})
    ms = ddp_bench.split_methods("gloo,model:dore,model:3lc:s=1.5,"
                                 "model:dore:qsgd:bits=4,bucket=128,alpha=0.1")
    assert [m.kind for m in ms] == ["gloo", "model", "model", "model"]
    assert (ms[1].dore, ms[1].codec_text()) == (True, "default")
    assert (ms[2].dore, ms[2].codec_text()) == (False, "3lc:s=1.5")
    assert (ms[3].dore, ms[3].codec_text(), ms[3].dore_params) == (
        True, "qsgd:bits=4,bucket=128", {"alpha": 0.1})
    for bad, why in (("model:", "no codec name"), ("model:dore:", "nothing after"),
                     ("model:3lc,s=1.5", "follows no gradnet"),
                     ("model:dore:3lc:", "nothing after")):
        with pytest.raises(ddp_bench.SpecError, match=why):
            ddp_bench.split_methods(bad)


def table_rows(stdout, names):
    """The LM table's rows: method -> (loss, ppl, carried, sent, ratio, ms,
    skipped) as printed."""
    rows = {}
    for line in stdout.splitlines():
        m = re.match(r"^(\S+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)\s+(\d+)\s+"
                     r"([\d.]+)x\s+([\d.]+)\s+(\d+)$", line)
        if m and m.group(1) in names:
            rows[m.group(1)] = m.groups()[1:]
    return rows


def test_lm_json_is_its_table(tmp_path):
    out = tmp_path / "lm.json"
    names = ["gloo", "gradnet:none", "gradnet:3lc:s=1.5"]
    r = run(["--workload", "lm", "--ranks", "2", "--steps", "3",
             "--methods", ",".join(names), "--json", str(out)])
    assert r.returncode == 0, r.stdout + r.stderr
    got = json.loads(out.read_text())
    assert got["command"] in r.stdout
    assert got["workload"] == "lm" and got["model"] in r.stdout
    assert (got["ranks"], got["steps"], got["batch"]) == (2, 3, 16)
    assert got["train_words"] > 500000 and got["validation_words"] > 10000
    assert [m["method"] for m in got["methods"]] == names
    assert [ln["link"] for ln in got["links"]] == ["loopback"]
    assert got["links"][0]["methods"] == got["methods"]
    table = table_rows(r.stdout, names)
    assert set(table) == set(names), r.stdout
    for m in got["methods"]:
        loss, ppl, carried, sent, ratio, ms, skipped = table[m["method"]]
        assert "%.4f" % m["val_loss"] == loss
        assert "%.2f" % m["perplexity"] == ppl
        assert math.isclose(m["perplexity"], math.exp(m["val_loss"]))
        assert "%.0f" % m["carried_bytes"] == carried
        assert "%.0f" % m["sent_bytes"] == sent
        assert "%.1f" % m["vs_gloo"] == ratio
        assert "%.2f" % m["ms_per_step"] == ms
        assert m["skipped"] == int(skipped) == 0
        assert m["carried_bytes"] == got["parameters"] * 4
    by = {m["method"]: m for m in got["methods"]}
    # the model learns something in 3 steps (from ln 2048 = 7.62 nats)
    assert by["gloo"]["val_loss"] < math.log(2048)
    # dense gradnet is the same training as Gloo's, up to float rounding
    assert math.isclose(by["gradnet:none"]["val_loss"],
                        by["gloo"]["val_loss"], rel_tol=1e-4)
    assert by["gradnet:3lc:s=1.5"]["sent_bytes"] < by["gloo"]["sent_bytes"] / 20


def test_unknown_codec_fails_before_any_rank():
    r = run(["--ranks", "2", "--steps", "2", "--methods",
             "gloo,gradnet:nosuchcodec:density=0.01"], timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "gradnet:nosuchcodec" in r.stderr and "nosuchcodec" in r.stderr
    assert "failed: " in r.stderr, r.stderr
    assert "command:" not in r.stdout     # nothing was trained
    assert "Traceback" not in r.stderr
    r = run(["--ranks", "2", "--steps", "2", "--methods",
             "gradnet:3lc:s=7"], timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "gradnet:3lc:s=7" in r.stderr and "EINVAL" in r.stderr, r.stderr


def test_links_in_namespaces(tmp_path):
    """Each rank in a namespace of its own on an unshaped and a 1 Gbit/s
    link: every link's rows, the same training as on loopback, and no
    namespace left behind."""
    out = tmp_path / "links.json"
    names = ["gloo", "gradnet:3lc"]
    prefix = "gnbt%d" % os.getpid()
    env = dict(os.environ, GN_NS_PREFIX=prefix)
    r = run(["--ranks", "2", "--steps", "3", "--methods", ",".join(names),
             "--links", "loopback,none,1gbit", "--json", str(out)], env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    got = json.loads(out.read_text())
    assert [ln["link"] for ln in got["links"]] == ["loopback", "none", "1gbit"]
    acc = [[m["accuracy"] for m in ln["methods"]] for ln in got["links"]]
    assert acc[0] == acc[1] == acc[2]
    for ln in got["links"]:
        assert [m["method"] for m in ln["methods"]] == names
        assert "link: %s" % ln["link"] in r.stdout
    assert "ms/step 1gbit" in r.stdout
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True,
                        text=True, check=True).stdout
    assert prefix not in ns, ns


def test_model_methods(tmp_path):
    """gradnet.torch.SGD in the table: dense both ways trains as Gloo does,
    DORE and 3LC's push/pull send far less, and their bytes are both
    directions' (dense push/pull sends what gradnet's dense allreduce
    sends); a codec a model tensor refuses stops the run first."""
    out = tmp_path / "model.json"
    names = ["gloo", "gradnet:none", "model:none", "model:dore", "model:3lc"]
    r = run(["--workload", "lm", "--ranks", "2", "--steps", "3",
             "--methods", ",".join(names), "--json", str(out)])
    assert r.returncode == 0, r.stdout + r.stderr
    got = json.loads(out.read_text())
    assert [m["method"] for m in got["methods"]] == names
    table = table_rows(r.stdout, names)
    assert set(table) == set(names), r.stdout
    by = {m["method"]: m for m in got["methods"]}
    for m in names:
        assert "%.4f" % by[m]["val_loss"] == table[m][0]
        assert by[m]["skipped"] == 0
        assert by[m]["val_loss"] < math.log(2048)
    assert math.isclose(by["model:none"]["val_loss"], by["gloo"]["val_loss"],
                        rel_tol=1e-4)
    # up and down: a dense allreduce's reduce-scatter and allgather
    assert math.isclose(by["model:none"]["sent_bytes"],
                        by["gradnet:none"]["sent_bytes"], rel_tol=0.02)
    assert by["model:none"]["sent_bytes"] > by["gloo"]["sent_bytes"]
    assert by["model:dore"]["sent_bytes"] < by["gloo"]["sent_bytes"] / 10
    assert by["model:3lc"]["sent_bytes"] < by["gloo"]["sent_bytes"] / 50
    r = run(["--ranks", "2", "--steps", "2", "--methods",
             "gloo,model:cltk"], timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "model:cltk" in r.stderr and "index round" in r.stderr, r.stderr
    assert "command:" not in r.stdout


def test_learning_rate_and_batch_multiplier(tmp_path):
    """--batch-mult M trains on M times the batch at M times the learning
    rate: the same training as --batch and --lr saying so, and another
    than the workload's own learning rate."""
    def loss(args, name):
        out = tmp_path / (name + ".json")
        r = run(["--workload", "lm", "--ranks", "2", "--steps", "2",
                 "--methods", "gloo", "--json", str(out)] + args)
        assert r.returncode == 0, r.stdout + r.stderr
        got = json.loads(out.read_text())
        assert got["command"] in r.stdout
        return got
    mult = loss(["--batch", "8", "--batch-mult", "2"], "mult")
    assert (mult["batch"], mult["lr"]) == (16, 2.0)
    assert "--batch 8 --batch-mult 2" in mult["command"]
    said = loss(["--batch", "16", "--lr", "2"], "said")
    assert (said["batch"], said["lr"]) == (16, 2.0)
    assert "--lr 2" in said["command"]
    plain = loss(["--batch", "16"], "plain")
    assert plain["lr"] == 1.0
    assert mult["methods"][0]["val_loss"] == said["methods"][0]["val_loss"]
    assert plain["methods"][0]["val_loss"] != said["methods"][0]["val_loss"]
    for bad in (["--lr", "0"], ["--lr", "-1"], ["--batch-mult", "0"]):
        r = run(["--steps", "1", "--methods", "gloo"] + bad, timeout=120)
        assert r.returncode == 2 and "must be" in r.stderr, r.stderr
