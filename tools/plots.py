#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""plots.py - the two pictures of doc/, drawn from the commands' own JSON:

  doc/compressors.png    the compressor comparison: bytes each rank sends
                         per step against test accuracy, one point per
                         method (python/examples/ddp_bench.py --json, the
                         digits CNN, every compressor)
  doc/allreduce-model.png  time per allreduce against link speed, dense
                         ring against gradnet on 1 to 8 codec cores
                         (tools/allreduce-model.py --json, with the inputs
                         of its record, doc/perf/allreduce-model.md)

    tools/plots.py [--build DIR]    run both commands (the training job
                                    with libgradnet of DIR, default build;
                                    it opens sockets on 127.0.0.1, so hold
                                    the test lock), keep their JSON next to
                                    the pictures, then draw
    tools/plots.py --redraw         draw again from the JSON kept in doc/
    --out DIR                       read and write there instead of doc/

Each JSON holds what made it (commit, date, CPU and ISA, the command) and
each picture says it in its last line, as does this script on stdout.
The plotting needs Debian's python3-matplotlib.
"""

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.text  # noqa: E402

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORD = os.path.join(SRC, "doc", "perf", "allreduce-model.md")
DDP_ARGS = ["--workload", "digits", "--ranks", "4", "--steps", "300",
            "--methods", "gloo,fp16,powersgd1,powersgd4,gradnet:none,"
            "gradnet:3lc,gradnet:topk,gradnet:topk:bits=4,gradnet:qsgd,"
            "gradnet:cltk,gradnet:cltk:bits=4,gradnet:cltk:density=0.02,bits=4,"
            "model:3lc,model:dore,model:dore:entropy=zstd"]
# Link speeds of the model's curve, Gbit/s: log-spaced, the table's four
# among them.
LINKS = [1, 1.6, 2.5, 4, 6.3, 10, 16, 25, 40, 63, 100, 160, 250, 400]
CORES = [1, 2, 4, 8]

LABELS = {
    "gloo": "Gloo allreduce (dense)",
    "fp16": "PyTorch fp16 hook",
    "powersgd1": "PyTorch PowerSGD, rank 1",
    "powersgd4": "PyTorch PowerSGD, rank 4",
    "gradnet-dense": "gradnet dense",
    "gradnet-3lc": "gradnet 3LC, s = 1",
    "gradnet-3lc-s1.5": "gradnet 3LC, s = 1.5",
    "gradnet:none": "gradnet dense",
    "gradnet:3lc": "gradnet 3LC, s = 1",
    "gradnet:topk": "gradnet top-k 1%",
    "gradnet:topk:bits=4": "gradnet top-k 1%, 4-bit values",
    "gradnet:cltk": "gradnet CLT-k 1%",
    "gradnet:cltk:bits=4": "gradnet CLT-k 1%, 4-bit values",
    "gradnet:cltk:density=0.02,bits=4": "gradnet CLT-k 2%, 4-bit values",
    "model:3lc": "3LC push/pull (model step)",
    "model:dore": "DORE (model step)",
    "model:dore:entropy=zstd": "DORE, zstd both ways (model step)",
}
CODECS = {"none": "dense", "3lc": "3LC", "topk": "top-k", "qsgd": "QSGD",
          "cltk": "CLT-k"}


def label(method):
    """A method's name in the picture: gradnet:CODEC:key=value,... as
    "gradnet CODEC, key = value, ..."."""
    if method in LABELS:
        return LABELS[method]
    if not method.startswith("gradnet:"):
        return method
    name, _, params = method[len("gradnet:"):].partition(":")
    text = "gradnet " + CODECS.get(name, name)
    for kv in params.split(",") if params else []:
        text += ", " + kv.replace("=", " = ")
    return text


def git(*args):
    return subprocess.run(["git", "-C", SRC] + list(args), check=True,
                          capture_output=True, text=True).stdout.strip()


def provenance(build, command):
    """What made a JSON: the commit (and whether the tree had local
    changes), the day, the CPU and the codec ISA it ran, the command."""
    cpu = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    isa = subprocess.run([os.path.join(build, "tools", "gradnet-codec"), "isa"],
                         check=True, capture_output=True, text=True).stdout.split()
    return {"commit": git("rev-parse", "--short=7", "HEAD"),
            "local_changes": bool(git("status", "--porcelain", "--untracked-files=no")),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
            "cpu": "%s, %d CPUs" % (cpu, os.cpu_count()), "isa": isa[-1],
            "command": command}


def footer(p, machine=True):
    """The picture's last line: when, which commit, where (unless the
    numbers do not depend on the machine), and the command."""
    changed = " with local changes" if p["local_changes"] else ""
    where = " on %s (%s)" % (p["cpu"], p["isa"]) if machine else ""
    return "%s, commit %s%s%s: %s" % (p["date"], p["commit"], changed, where,
                                     p["command"])


def add_footer(fig, text):
    fig.text(0.01, 0.01, textwrap.fill(text, 160), fontsize=7, color="0.3",
             va="bottom")


def record_inputs():
    """The model's inputs as its record gives them (its first command)."""
    with open(RECORD, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"`tools/allreduce-model\.py ((?:--[a-z0-9-]+ [0-9.]+ ?)+)`", text)
    if not m:
        sys.exit("plots.py: %s names no tools/allreduce-model.py command" % RECORD)
    return m.group(1).split()


def run_ddp(build):
    env = dict(os.environ, GRADNET_LIB=os.path.join(build, "lib", "libgradnet.so.0"),
               OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([os.path.join(SRC, "python"),
                                           os.environ.get("PYTHONPATH", "")]))
    for v in ("GN_PEERS", "GN_RANK", "GN_WORLD_SIZE", "GN_KEY", "RANK"):
        env.pop(v, None)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ddp.json")
        subprocess.run(["/usr/bin/python3", os.path.join(SRC, "python", "examples",
                                                         "ddp_bench.py")]
                       + DDP_ARGS + ["--json", path], env=env, check=True)
        with open(path) as f:
            out = json.load(f)
    out["made_by"] = provenance(build, out["command"])
    return out


def run_model(build):
    args = record_inputs() + ["--links", ",".join("%g" % g for g in LINKS),
                              "--cores", ",".join(map(str, CORES)), "--json"]
    r = subprocess.run([sys.executable, os.path.join(SRC, "tools", "allreduce-model.py")]
                       + args, check=True, capture_output=True, text=True)
    out = json.loads(r.stdout)
    out["made_by"] = provenance(build, "tools/allreduce-model.py " + " ".join(args))
    out["inputs_from"] = os.path.relpath(RECORD, SRC)
    return out


def save(fig, path):
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)


# Where a point's label may go, in points from it: right, left, above,
# below, then further out. Each label takes the first spot that covers no
# label placed before it and no other point, else the one that covers
# least.
SPOTS = [(8, 0, "left", "center"), (-8, 0, "right", "center"),
         (0, 12, "center", "bottom"), (0, -12, "center", "top")] + \
    [(sx * 8, sy * h, "left" if sx > 0 else "right", "bottom" if sy > 0 else "top")
     for h in (18, 34, 50) for sy in (1, -1) for sx in (1, -1)]


def overlap(a, b):
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return w * h if w > 0 and h > 0 else 0.0


def place_labels(fig, ax, points):
    """Label each (x, y, text) of @points where it hides the least."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    taken = []
    dots = [ax.transData.transform((x, y)) for x, y, _ in points]
    for i, (x, y, text) in enumerate(points):
        best = None
        for dx, dy, ha, va in SPOTS:
            arrow = None if not dy else dict(arrowstyle="-", lw=0.5, color="0.5")
            t = ax.annotate(text, (x, y), textcoords="offset points",
                            xytext=(dx, dy), ha=ha, va=va, fontsize=8,
                            arrowprops=arrow)
            # the text alone: an annotation's own extent takes in its line
            t.update_positions(r)
            box = matplotlib.text.Text.get_window_extent(t, r).expanded(1.04, 1.1)
            pad = box.padded(5)     # a marker's radius
            cost = sum(overlap(box, b) for b in taken) + 1e6 * sum(
                pad.contains(px, py) for j, (px, py) in enumerate(dots) if j != i)
            if best is None or cost < best[0]:
                if best:
                    best[1].remove()
                best = (cost, t, box)
            else:
                t.remove()
            if not cost:
                break
        taken.append(best[2])


def vs_gloo(sent, gloo):
    if abs(sent / gloo - 1) < 0.06:
        return "about Gloo's bytes"
    if sent < gloo:
        return "%.1fx fewer bytes than Gloo" % (gloo / sent)
    return "%.1fx Gloo's bytes" % (sent / gloo)


def draw_compressors(d, path):
    fig, ax = plt.subplots(figsize=(9, 5.6))
    gloo = next(m["sent_bytes"] for m in d["methods"] if m["method"] == "gloo")
    points = []
    for m in d["methods"]:
        ours = m["method"].startswith(("gradnet", "model:"))
        x, y = m["sent_bytes"], m["accuracy"] * 100
        ax.scatter([x], [y], s=60, zorder=3, marker="o" if ours else "s",
                   color="tab:red" if ours else "tab:blue")
        text = label(m["method"])
        if m["method"] != "gloo":
            text += "\n" + vs_gloo(x, gloo)
        points.append((x, y, text))
    ax.set_xscale("log")
    ax.set_xlabel("bytes each rank sends per step (log scale)")
    ax.set_ylabel("test accuracy, %")
    lo = min(m["sent_bytes"] for m in d["methods"])
    hi = max(m["sent_bytes"] for m in d["methods"])
    ax.set_xlim(lo / 8, hi * 6)
    accs = [m["accuracy"] * 100 for m in d["methods"]]
    ax.set_ylim(min(accs) - 1.5, max(accs) + 1)
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title("PyTorch DDP on digits: %d ranks, %d steps of batch %d, a CNN of "
                 "%s parameters\n(one test image is %.2f points of accuracy; "
                 "red: gradnet, blue: Gloo and PyTorch's hooks)"
                 % (d["ranks"], d["steps"], d["batch"],
                    format(d["parameters"], ","), 100.0 / d["test_images"]),
                 fontsize=10)
    add_footer(fig, footer(d["made_by"]))
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    place_labels(fig, ax, points)
    save(fig, path)


def draw_model(d, path):
    fig, ax = plt.subplots(figsize=(9, 5.6))
    links = [r["link_gbit"] for r in d["rows"]]
    ax.plot(links, [r["dense_s"] * 1e3 for r in d["rows"]], color="black",
            lw=2, label="dense ring allreduce at line rate")
    for i, c in enumerate(d["cores"]):
        ax.plot(links, [r["gradnet_s"][str(c)] * 1e3 for r in d["rows"]],
                color=plt.cm.Reds(0.4 + 0.6 * i / max(1, len(d["cores"]) - 1)),
                lw=2, label="gradnet 3LC, %d codec core%s" % (c, "s" if c > 1 else ""))
    for g in (1, 10, 25, 100):
        ax.axvline(g, color="0.85", lw=0.8, zorder=0)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks([1, 10, 25, 100, 400])
    ax.set_xticklabels(["1", "10", "25", "100", "400"])
    ax.set_xlabel("link speed, Gbit/s (log scale)")
    ax.set_ylabel("time per allreduce, ms (log scale)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=9)
    ax.set_title("The allreduce model: %s floats on %d ranks; one core encodes "
                 "%.2f GB/s and decode-adds %.2f GB/s,\n3LC sends %s bytes per rank "
                 "and allreduce, dense %s (inputs: %s)"
                 % (format(d["floats"], ","), d["ranks"], d["encode_gbps"],
                    d["decode_gbps"], format(int(d["wire_3lc"]), ","),
                    format(int(d["wire_dense"]), ","), d["inputs_from"]),
                 fontsize=9)
    add_footer(fig, footer(d["made_by"], machine=False))
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    save(fig, path)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(SRC, "build"),
                   help="the build directory whose libgradnet the training uses")
    p.add_argument("--redraw", action="store_true",
                   help="draw from the JSON kept in the output directory, run nothing")
    p.add_argument("--out", default=os.path.join(SRC, "doc"),
                   help="where the pictures (and new JSON) go (default doc/)")
    a = p.parse_args()
    kept = {name: os.path.join(a.out, name + ".json")
            for name in ("compressors", "allreduce-model")}
    data = {}
    if a.redraw:
        for name, path in kept.items():
            with open(path) as f:
                data[name] = json.load(f)
    else:
        build = os.path.abspath(a.build)
        data["allreduce-model"] = run_model(build)
        data["compressors"] = run_ddp(build)
        os.makedirs(a.out, exist_ok=True)
        for name, d in data.items():
            with open(os.path.join(a.out, name + ".json"), "w") as f:
                json.dump(d, f, indent=1)
                f.write("\n")
    os.makedirs(a.out, exist_ok=True)
    draw_compressors(data["compressors"], os.path.join(a.out, "compressors.png"))
    draw_model(data["allreduce-model"], os.path.join(a.out, "allreduce-model.png"))
    for name, d in data.items():
        print("%s.png: %s" % (os.path.join(a.out, name),
                              footer(d["made_by"], name == "compressors")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
