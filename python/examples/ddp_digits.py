#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""ddp_digits.py - one DDP training job per gradient exchange, in one run:
a small CNN on scikit-learn's digits, 4 ranks on 127.0.0.1, fixed seeds.

Methods: Gloo's dense allreduce (PyTorch's default hook), PyTorch's fp16
compression hook, PyTorch's PowerSGD hook at rank 1 and 4 (warm start,
error feedback, compression from step 10), gradnet dense, gradnet 3LC at
s = 1 and s = 1.5. Prints, per method, the final test accuracy, bytes sent
per rank per step, the ratio to Gloo dense, and the mean time per step.

Bytes: gradnet's own counters (UDP payload of data packets plus
acknowledgements and control: wire_bytes + ctl_bytes). For the PyTorch
hooks, the bytes of the tensors their allreduces carry (counted by
wrapping torch.distributed.all_reduce), and what a ring allreduce sends per
rank for them, 2 (W - 1) / W times that: the "sent" column.

--json FILE also writes the results there as one JSON object, for
tools/plots.py: the command, the model, and per method the accuracy, the
bytes carried and sent per rank per step, the ratio to Gloo and the time
per step (what the table prints, unrounded).

usage: python3 python/examples/ddp_digits.py [--ranks 4] [--steps 300]
       [--json FILE]
       (it starts its ranks itself; or run it under torchrun --redirects 1
       --tee 1 --nproc_per_node 4)
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

METHODS = ["gloo", "fp16", "powersgd1", "powersgd4", "gradnet-dense",
           "gradnet-3lc", "gradnet-3lc-s1.5"]


def launch(args):
    """The ranks, on this host. As a launcher should, it gives them the job
    key in a file only this user can read (GN_KEY_FILE), unless the caller
    gave one."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
               WORLD_SIZE=str(args.ranks), LOCAL_WORLD_SIZE=str(args.ranks),
               OMP_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as tmp:
        if not any(env.get(v) for v in ("GN_KEY_FILE", "GN_KEY_FD", "GN_KEY",
                                         "GN_INSECURE")):
            path = os.path.join(tmp, "job.key")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.write(fd, os.urandom(16).hex().encode())
            os.close(fd)
            env["GN_KEY_FILE"] = path
        procs = [subprocess.Popen([sys.executable] + sys.argv,
                                  env=dict(env, RANK=str(r), LOCAL_RANK=str(r)))
                 for r in range(args.ranks)]
        return max(p.wait() for p in procs)


def build_model(torch, nn):
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 4 * 4, 256), nn.ReLU(),
        nn.Linear(256, 10))


def worker(args):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    import gradnet.torch as gt

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()

    counted = [0]
    real_all_reduce = dist.all_reduce

    def counting_all_reduce(tensor, *a, **k):
        counted[0] += tensor.numel() * tensor.element_size()
        return real_all_reduce(tensor, *a, **k)
    dist.all_reduce = counting_all_reduce

    digits = load_digits()
    x = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    y = torch.tensor(digits.target)
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=0.2,
                                          random_state=0, stratify=y)
    results = []
    for method in args.methods:
        torch.manual_seed(0)
        net = build_model(torch, nn)
        nparams = sum(p.numel() for p in net.parameters())
        model = DDP(net)
        state = None
        if method == "gloo":
            model.register_comm_hook(None, default_hooks.allreduce_hook)
        elif method == "fp16":
            model.register_comm_hook(None, default_hooks.fp16_compress_hook)
        elif method.startswith("powersgd"):
            ps = powerSGD_hook.PowerSGDState(
                process_group=None,
                matrix_approximation_rank=int(method[len("powersgd"):]),
                start_powerSGD_iter=10, warm_start=True, random_seed=0)
            model.register_comm_hook(ps, powerSGD_hook.powerSGD_hook)
        else:
            codec = "none" if method == "gradnet-dense" else "3lc"
            s = 1.5 if method.endswith("s1.5") else 0.0
            state = gt.init(codec=codec, s=s)
            model.register_comm_hook(state, gt.allreduce_hook)
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        gen = torch.Generator().manual_seed(1000 + rank)
        counted[0] = 0
        skipped = 0
        dist.barrier()
        t0 = time.perf_counter()
        for step in range(args.steps):
            idx = torch.randint(0, len(xtr), (args.batch,), generator=gen)
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(xtr[idx]), ytr[idx])
            loss.backward()
            if not all(torch.isfinite(p.grad).all()
                       for p in model.parameters()):
                skipped += 1
                continue
            opt.step()
        dist.barrier()
        seconds = time.perf_counter() - t0
        if state is not None:
            st = state.stats()
            sent = (st["wire_bytes"] + st["ctl_bytes"]) / args.steps
            carried = nparams * 4.0
            state.close()
        else:
            carried = counted[0] / args.steps
            sent = carried * 2 * (world - 1) / world
        with torch.no_grad():
            acc = (model(xte).argmax(1) == yte).float().mean().item()
        results.append((method, acc, carried, sent, seconds / args.steps,
                        skipped, nparams))
        del model
    dist.all_reduce = real_all_reduce
    if rank == 0:
        command = ("python3 python/examples/ddp_digits.py --ranks %d "
                   "--steps %d --batch %d" % (world, args.steps, args.batch))
        print("command: " + command)
        print("model: CNN, %d parameters (%d bytes of float32 gradient); "
              "digits, %d train / %d test images, batch %d per rank"
              % (results[0][6], results[0][6] * 4, len(xtr), len(xte),
                 args.batch))
        gloo_sent = next((r[3] for r in results if r[0] == "gloo"), None)
        print("%-17s %9s %14s %14s %9s %10s %7s" %
              ("method", "accuracy", "carried B/step", "sent B/step",
               "vs gloo", "ms/step", "skipped"))
        for m, acc, carried, sent, sec, sk, _ in results:
            ratio = gloo_sent / sent if gloo_sent and sent else float("nan")
            print("%-17s %8.2f%% %14.0f %14.0f %8.1fx %10.2f %7d" %
                  (m, acc * 100, carried, sent, ratio, sec * 1e3, sk))
        print("carried: allreduce payload per rank (gradnet: the float32 "
              "gradient); sent: per rank, gradnet's counted UDP "
              "payload incl. acks and control, or 2(W-1)/W x carried for "
              "Gloo's ring")
        if args.json:
            write_json(args.json, command, results, gloo_sent, len(xtr),
                       len(xte), world, args)
    dist.barrier()
    dist.destroy_process_group()


def write_json(path, command, results, gloo_sent, ntrain, ntest, world,
               args):
    """The table's rows, unrounded, and what they were measured on."""
    methods = [{"method": m, "accuracy": acc, "carried_bytes": carried,
                "sent_bytes": sent,
                "vs_gloo": gloo_sent / sent if gloo_sent and sent else None,
                "ms_per_step": sec * 1e3, "skipped": sk}
               for m, acc, carried, sent, sec, sk, _ in results]
    out = {"command": command, "parameters": results[0][6],
           "train_images": ntrain, "test_images": ntest,
           "ranks": world, "steps": args.steps, "batch": args.batch,
           "methods": methods}
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--json", metavar="FILE",
                    help="also write the results to FILE as JSON")
    args = ap.parse_args()
    if args.json:
        args.json = os.path.abspath(args.json)
    args.methods = args.methods.split(",")
    if "RANK" not in os.environ:
        sys.exit(launch(args))
    worker(args)


if __name__ == "__main__":
    main()
