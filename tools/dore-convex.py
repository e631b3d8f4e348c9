#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""dore-convex.py - DORE's claim on a strongly convex problem, in a real
gradnet job: least squares split over the ranks, full gradients, every
method a model tensor of the same job stepped by the same ranks over UDP
on 127.0.0.1 (one thread and one gradnet.Context per rank):

  dore   DORE, its ternary quantizer both ways (qsgd:bits=2,bucket=256,
         norm=max): gradient residuals up, model residuals down
  qsgd   the same quantizer on the gradients only, no error feedback,
         the model's change sent dense: stalls in a neighbourhood
  topk   top-k (5%) with error feedback on the gradients only, the
         change dense: converges, slower
  sgd    no compression at all: the float32 floor of the others

Rank i holds A_i (rows x dim, Gaussian) and b_i = A_i x_true + its own
offset, so the ranks' gradients at the optimum differ and compressing
them is never free (--spread scales the offsets; 0 leaves the noise).
The objective is the mean of 1/(2 rows)
||A_i x - b_i||^2; every method steps with gamma = 0.5 / L from x = 0.
The script prints the distance to the optimum, ||x_t - x*|| / ||x_0 - x*||
(x* from the normal equations in binary64), every --every steps, then
where each method got, and keeps it all as JSON with what made it.

    tools/dore-convex.py [--ranks 4] [--dim 200] [--rows 200]
                         [--steps 1500] [--json FILE] [--plot FILE]
    tools/dore-convex.py --redraw FILE.json --plot FILE.png
    --check: exit 1 unless DORE ends below 1e-6 of the start and the
    gradient-only methods never get below 1e-4 (what the test runs)

GRADNET_LIB (or the source tree's build/) says which libgradnet runs;
the ranks open UDP sockets on 127.0.0.1. The plot needs matplotlib.
"""
import argparse
import json
import os
import socket
import sys
import threading

import numpy as np

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "python"))

DORE_Q = "qsgd:bits=2,bucket=256,norm=max"
# name: (tensor id, model options)
METHODS = {
    "dore": (1, dict(codec=DORE_Q, down_codec=DORE_Q, dore=True)),
    "qsgd": (2, dict(codec=DORE_Q, down_codec="none")),
    "topk": (3, dict(codec="topk:density=0.05", down_codec="none")),
    "sgd": (4, dict(codec="none", down_codec="none")),
}
LABELS = {
    "dore": "DORE, ternary both ways",
    "qsgd": "ternary QSGD on the gradients only",
    "topk": "top-k 5% + error feedback, gradients only",
    "sgd": "no compression (float32)",
}


def problem(ranks, dim, rows, seed, spread):
    """(A_i, b_i) per rank, x*, and L, all binary64."""
    rng = np.random.default_rng(seed)
    x_true = rng.standard_normal(dim)
    a = [rng.standard_normal((rows, dim)) for _ in range(ranks)]
    b = [ai @ x_true + 0.5 * rng.standard_normal(rows) + spread * (i - ranks / 2)
         for i, ai in enumerate(a)]
    h = sum(ai.T @ ai for ai in a) / (rows * ranks)
    g = sum(ai.T @ bi for ai, bi in zip(a, b)) / (rows * ranks)
    x_star = np.linalg.solve(h, g)
    eig = np.linalg.eigvalsh(h)
    return a, b, x_star, float(eig[-1]), float(eig[0])


def free_ports(n):
    socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
             for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def run(args):
    import gradnet
    a, b, x_star, lip, mu = problem(args.ranks, args.dim, args.rows,
                                    args.seed, args.spread)
    lr = np.float32(0.5 / lip)
    d0 = float(np.linalg.norm(x_star))
    dist = {m: [] for m in METHODS}
    peers = ",".join("127.0.0.1:%d" % p for p in free_ports(args.ranks))
    errs = []

    def rank(r):
        try:
            with gradnet.Context(rank=r, world_size=args.ranks, peers=peers,
                                 insecure=True, timeout_ms=30000,
                                 job_id=0xd0e5c0de) as c:
                xs = {}
                for m, (tid, opts) in METHODS.items():
                    c.register_model(tid, args.dim, **opts)
                    xs[m] = np.zeros(args.dim, dtype=np.float32)
                for _ in range(args.steps):
                    gs = {}
                    for m, (tid, _) in METHODS.items():
                        x = xs[m].astype(np.float64)
                        g = a[r].T @ (a[r] @ x - b[r]) / args.rows
                        gs[m] = g.astype(np.float32)
                        c.step_start(tid, gs[m], xs[m], lr)
                    for m, (tid, _) in METHODS.items():
                        c.step_wait(tid)
                        if r == 0:
                            dist[m].append(float(np.linalg.norm(
                                xs[m].astype(np.float64) - x_star)) / d0)
        except Exception as e:  # reported below
            errs.append((r, e))

    ts = [threading.Thread(target=rank, args=(r,))
          for r in range(args.ranks)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errs:
        raise SystemExit("dore-convex: %r" % errs)
    return {"distance": dist, "L": lip, "mu": mu, "lr": float(lr)}


def first_below(d, level):
    for i, v in enumerate(d):
        if v < level:
            return i + 1
    return None


def rate(d, lo, hi):
    """Mean contraction per step over steps [lo, hi) (1-based), from the
    distances' logs: < 1 is linear convergence."""
    if hi - lo < 2 or d[hi - 1] <= 0 or d[lo - 1] <= 0:
        return None
    return float(np.exp((np.log(d[hi - 1]) - np.log(d[lo - 1])) /
                        (hi - lo)))


def report(res, every):
    dist = res["distance"]
    steps = len(dist["dore"])
    print("# distance to the optimum over the start's, per step")
    print("%6s" % "step" + "".join("%12s" % m for m in METHODS))
    for t in list(range(every, steps + 1, every)) or [steps]:
        print("%6d" % t + "".join("%12.3e" % dist[m][t - 1]
                                  for m in METHODS))
    print("# L %.4g, mu %.4g (kappa %.1f), gamma = 0.5 / L = %.4g" %
          (res["L"], res["mu"], res["L"] / res["mu"], res["lr"]))
    for m in METHODS:
        d = dist[m]
        hit = first_below(d, 1e-6)
        r = rate(d, 1, max(2, steps // 10))
        print("# %-5s final %.3e, lowest %.3e, below 1e-6 %s; contraction "
              "per step over steps 1-%d: %s" %
              (m, d[-1], min(d), "at step %d" % hit if hit else "never",
               max(2, steps // 10), "%.4f" % r if r else "-"))


def plot(res, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 5))
    for m in METHODS:
        d = res["distance"][m]
        ax.semilogy(range(1, len(d) + 1), d, label=LABELS[m])
    ax.axhline(1e-6, color="grey", lw=0.8, ls=":")
    ax.set_xlabel("step")
    ax.set_ylabel("||x - x*|| / ||x0 - x*||")
    ax.set_title("Least squares, %d ranks, full gradients, gamma = 0.5/L"
                 % res["args"]["ranks"])
    ax.legend()
    p = res["provenance"]
    fig.text(0.01, 0.01, "%s, commit %s%s, %s, %s: %s" %
             (p["date"], p["commit"], "+" if p["local_changes"] else "",
              p["cpu"], p.get("isa", "?"), p["command"]), fontsize=6,
             color="grey")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=110)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--dim", type=int, default=200)
    p.add_argument("--rows", type=int, default=200)
    p.add_argument("--steps", type=int, default=1500)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--spread", type=float, default=1.0)
    p.add_argument("--every", type=int, default=100)
    p.add_argument("--json")
    p.add_argument("--plot")
    p.add_argument("--redraw")
    p.add_argument("--build", default=os.path.join(SRC, "build"),
                   help="the build whose gradnet-codec names the codec ISA")
    p.add_argument("--check", action="store_true",
                   help="exit 1 unless DORE ends below 1e-6 of the start "
                   "and the gradient-only methods stay above 1e-4")
    args = p.parse_args()
    if args.redraw:
        with open(args.redraw) as f:
            res = json.load(f)
    else:
        res = run(args)
        res["args"] = {k: getattr(args, k) for k in
                       ("ranks", "dim", "rows", "steps", "seed",
                        "spread")}
        # What made it, as tools/plots.py records its pictures' JSON.
        sys.path.insert(0, os.path.join(SRC, "tools"))
        import plots
        res["provenance"] = plots.provenance(
            args.build, " ".join(["tools/dore-convex.py"] + sys.argv[1:]))
    report(res, args.every)
    p = res["provenance"]
    print("# %s, commit %s%s, %s, codec ISA %s: %s" % (
        p["date"], p["commit"], "+" if p["local_changes"] else "", p["cpu"],
        p.get("isa", "?"), p["command"]))
    if args.json and not args.redraw:
        with open(args.json, "w") as f:
            json.dump(res, f)
    if args.plot:
        plot(res, args.plot)
    if args.check:
        d = res["distance"]
        ok = d["dore"][-1] < 1e-6 and min(d["qsgd"]) > 1e-4 and \
            min(d["topk"]) > 1e-4
        print("# check: %s" % ("DORE below 1e-6, the gradient-only methods "
                               "stalled above 1e-4" if ok else "FAILED"))
        sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
