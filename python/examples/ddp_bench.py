#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""ddp_bench.py - one PyTorch DDP training job per gradient exchange, all in
one run, on one of two workloads (workloads.py): the digits CNN or a word
LSTM language model on Debian's fortunes. Prints per method the final test
accuracy (digits) or validation loss and perplexity (lm), the bytes each
rank sends per step, the ratio to Gloo and the time per step.

The methods train side by side, each its own model from the same seed: step
k of every method, then step k + 1, so a change in the machine's load falls
on all of them alike. A step's time runs from a common start on every rank
(a one-float allreduce) to the end of rank 0's optimizer step, which comes
after the step's allreduces have ended everywhere; time per step is its
mean over the steps.

Methods (--methods, comma-separated):
  gloo              Gloo's dense allreduce (PyTorch's default hook)
  fp16              PyTorch's fp16 compression hook
  powersgdR         PyTorch's PowerSGD hook at rank R (warm start, error
                    feedback, compression from step 10)
  gradnet:SPEC      gradnet's hook with codec SPEC, "name" or
                    "name:key=value,key=value": the string GN_CODEC takes.
                    It is handed to gradnet.torch.init() as
                    codec=name, key=value, ... (numbers as int or float);
                    e.g. gradnet:none, gradnet:3lc, gradnet:3lc:s=1.5,
                    gradnet:topk:density=0.01,bits=4
  (gradnet-dense, gradnet-3lc and gradnet-3lc-s1.5 are the old names of
  gradnet:none, gradnet:3lc and gradnet:3lc:s=1.5.)
  model:CODEC[:key=value,...]
                    no DDP: gradnet.torch.SGD, whose shard owners apply
                    the step and send every rank the model's change; the
                    gradients go up and the changes come down with CODEC,
                    each direction with its own error feedback (model:3lc
                    is 3LC's push/pull, model:none dense both ways)
  model:dore        DORE with its ternary quantizer both ways
  model:dore:CODEC[:key=value,...], model:dore:key=value,...
                    DORE with CODEC both ways, or its quantizer with
                    these parameters; alpha, beta and eta are DORE's, the
                    other keys the codec's
In the list a "key=value" item continues the gradnet or model spec before
it, so --methods gloo,gradnet:topk:density=0.01,bits=4 is two methods.
Before any rank starts, every gradnet and model spec is tried on a
one-rank job: a codec or a parameter the library or the binding refuses
stops the run with its message, before anything is measured.

Learning rate: every method trains with SGD, momentum 0.9, at the
workload's learning rate (digits 0.05, lm 1.0) or --lr. --batch-mult M
makes each rank's batch M times --batch and, without --lr, the learning
rate M times the workload's (linear scaling): a large effective batch,
where ScaleCom's low-pass filter (cltk's beta < 1) is meant to matter.

Bytes: gradnet's own counters (UDP payload of data packets plus
acknowledgements and control: wire_bytes + ctl_bytes); for model: methods
they hold both directions, the gradients up and the model's changes down,
as a dense allreduce's reduce-scatter and allgather. For the PyTorch
hooks, the bytes of the tensors their allreduces carry (counted by
wrapping torch.distributed.all_reduce), and what a ring allreduce sends per
rank for them, 2 (W - 1) / W times that: the "sent" column.

Links (--links, comma-separated; each runs every method again):
  loopback          every rank on 127.0.0.1 (the default)
  none, 1gbit, 10gbit
                    each rank in a network namespace of its own on a
                    bridge (tests/net/lib.sh), its link unshaped or shaped
                    to 1 or 10 Gbit/s in both directions with tc tbf, as
                    gradnet-bench allreduce does; MASTER_ADDR is rank 0's
                    address there and Gloo is bound to eth0, so Gloo and
                    PowerSGD cross the same links as gradnet. Needs root;
                    the namespaces go when the ranks end, or on a signal.
With several links a last table puts each method's time per step on every
link side by side, with the speed-up over Gloo on that link.

--json FILE also writes the results there as one JSON object, for
tools/plots.py: the command, the workload and model, "methods" (the first
link's rows: the score, the bytes carried and sent per rank per step, the
ratio to Gloo, the time per step and the skipped steps, unrounded, as the
table prints them) and "links" (every link's rows).

usage: python3 python/examples/ddp_bench.py [--workload digits|lm]
       [--ranks 4] [--steps 300] [--batch B] [--batch-mult M] [--lr LR]
       [--methods LIST]
       [--links loopback,1gbit,10gbit] [--json FILE]
       (it starts its ranks itself; or, for one loopback run, run it under
       torchrun --redirects 1 --tee 1 --nproc_per_node 4)
"""
import argparse
import datetime
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

from workloads import WORKLOADS  # noqa: E402

PROG = os.path.basename(sys.argv[0])
METHODS = ["gloo", "fp16", "powersgd1", "powersgd4", "gradnet:none",
           "gradnet:3lc", "gradnet:3lc:s=1.5"]
ALIASES = {"gradnet-dense": "gradnet:none", "gradnet-3lc": "gradnet:3lc",
           "gradnet-3lc-s1.5": "gradnet:3lc:s=1.5"}
LINKS = ("loopback", "none", "1gbit", "10gbit")
NETNS = os.path.join(HERE, "ranks_in_netns.sh")


class SpecError(ValueError):
    """A method or codec spec that does not parse, or that gradnet refuses."""


def _value(text):
    """A parameter's value: an int, else a float, else the string."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_codec_spec(spec):
    """"name" or "name:key=value,..." -> (name, {key: value}); values that
    read as numbers become int or float."""
    name, sep, rest = spec.partition(":")
    name = name.strip()
    if not name:
        raise SpecError("codec spec %r: no codec name before ':'" % spec)
    if not re.match(r"[A-Za-z0-9][A-Za-z0-9_-]*$", name):
        raise SpecError("codec spec %r: %r is not a codec name (letters, "
                        "digits, - and _)" % (spec, name))
    params = {}
    if sep and not rest.strip():
        raise SpecError("codec spec %r: nothing after ':'" % spec)
    for item in rest.split(",") if sep else []:
        key, eq, val = item.partition("=")
        key, val = key.strip(), val.strip()
        if not eq or not key or not val:
            raise SpecError("codec spec %r: %r is not key=value" % (spec, item))
        if not key.isidentifier():
            raise SpecError("codec spec %r: %r is not a parameter name"
                            % (spec, key))
        if key in params:
            raise SpecError("codec spec %r: %s given twice" % (spec, key))
        params[key] = _value(val)
    return name, params


DORE_KEYS = ("alpha", "beta", "eta")


def parse_model_spec(spec):
    """A model: method's spec -> (dore, codec, {codec key: value},
    {DORE key: value}). "CODEC[:k=v,...]" is CODEC both ways, each
    direction with its own error feedback (3lc: 3LC's push/pull); "dore"
    is DORE with its ternary quantizer, "dore:CODEC[:k=v,...]" DORE with
    CODEC both ways, "dore:k=v,..." its quantizer with those parameters.
    Under DORE the keys alpha, beta and eta are DORE's, the others the
    codec's."""
    if spec != "dore" and not spec.startswith("dore:"):
        codec, params = parse_codec_spec(spec)
        return False, codec, params, {}
    rest = spec[len("dore:"):]
    if spec == "dore":
        return True, "default", {}, {}
    if not rest.strip():
        raise SpecError("model spec %r: nothing after ':'" % spec)
    head = re.split("[:,]", rest, 1)[0]
    codec, params = parse_codec_spec("default:" + rest if "=" in head
                                     else rest)
    ours = {k: params.pop(k) for k in DORE_KEYS if k in params}
    return True, codec, params, ours


class Method:
    """One gradient exchange: kind is gloo, fp16, powersgd or gradnet."""

    def __init__(self, text):
        self.text = text
        spec = ALIASES.get(text, text)
        self.rank = None
        self.codec, self.params = None, {}
        if spec in ("gloo", "fp16"):
            self.kind = spec
        elif spec.startswith("powersgd"):
            self.kind = "powersgd"
            r = spec[len("powersgd"):]
            if not r.isdigit() or int(r) < 1:
                raise SpecError("method %r: powersgdR takes a rank R >= 1"
                                % text)
            self.rank = int(r)
        elif spec.startswith("gradnet:"):
            self.kind = "gradnet"
            self.codec, self.params = parse_codec_spec(spec[len("gradnet:"):])
        elif spec.startswith("model:"):
            self.kind = "model"
            self.dore, self.codec, self.params, self.dore_params = \
                parse_model_spec(spec[len("model:"):])
        else:
            raise SpecError("method %r: not gloo, fp16, powersgdR, "
                            "gradnet:CODEC[:key=value,...] or "
                            "model:[dore:]CODEC[:key=value,...]" % text)

    def codec_text(self):
        """The codec as one spec string, its parameters included."""
        return self.codec + "".join(
            (":" if i == 0 else ",") + "%s=%s" % kv
            for i, kv in enumerate(self.params.items()))

    def __repr__(self):
        return self.text


def split_methods(text):
    """The --methods list: comma-separated, where an item "key=value"
    continues the gradnet codec spec before it."""
    out = []
    for item in text.split(","):
        item = item.strip()
        if "=" in item and ":" not in item.split("=", 1)[0]:
            last = out[-1] if out else ""
            kind, _, rest = last.partition(":")
            if kind not in ("gradnet", "model") or ":" not in rest:
                raise SpecError("--methods: %r follows no gradnet:CODEC:"
                                "key=value or model:...:key=value spec"
                                % item)
            out[-1] += "," + item
        elif item:
            out.append(item)
    if not out:
        raise SpecError("--methods: no method given")
    return [Method(m) for m in out]


def attach(method, model):
    """Register the method's communication hook on the DDP model; the
    gradnet state (to read and close) or None."""
    import gradnet.torch as gt
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook
    if method.kind == "gloo":
        model.register_comm_hook(None, default_hooks.allreduce_hook)
    elif method.kind == "fp16":
        model.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif method.kind == "powersgd":
        ps = powerSGD_hook.PowerSGDState(
            process_group=None, matrix_approximation_rank=method.rank,
            start_powerSGD_iter=10, warm_start=True, random_seed=0)
        model.register_comm_hook(ps, powerSGD_hook.powerSGD_hook)
    else:
        try:
            state = gt.init(codec=method.codec, **method.params)
        except (TypeError, ValueError, OSError) as e:
            raise SpecError("method %s: gradnet.torch.init(codec=%r%s) "
                            "failed: %s" % (method, method.codec, "".join(
                                ", %s=%r" % kv for kv in
                                method.params.items()), e)) from e
        model.register_comm_hook(state, gt.allreduce_hook)
        return state
    return None


def model_optimizer(method, params, lr):
    """gradnet.torch.SGD for a model: method (momentum 0.9, as the DDP
    methods' torch.optim.SGD): no DDP, its step is the exchange."""
    import gradnet.torch as gt
    codec = method.codec_text()
    try:
        return gt.SGD(params, lr=lr, momentum=0.9, dore=method.dore,
                      codec=codec, down_codec=codec, **method.dore_params)
    except (TypeError, ValueError, OSError) as e:
        raise SpecError("method %s: gradnet.torch.SGD(codec=%r, dore=%s%s) "
                        "failed: %s" % (method, codec, method.dore, "".join(
                            ", %s=%r" % kv for kv in
                            method.dore_params.items()), e)) from e


def preflight(methods):
    """Try every gradnet method on a one-rank DDP job of a tiny model, one
    step, in this process: what the library or the binding refuses fails
    here, with its message."""
    ours = [m for m in methods if m.kind in ("gradnet", "model")]
    if not ours:
        return
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    # One rank on loopback, whatever job the environment names.
    env = {v: os.environ.pop(v) for v in ("MASTER_ADDR", "MASTER_PORT")
           if v in os.environ}
    with tempfile.TemporaryDirectory() as tmp:
        store = dist.FileStore(os.path.join(tmp, "store"), 1)
        dist.init_process_group("gloo", store=store, rank=0, world_size=1)
        try:
            for m in ours:
                if m.kind == "model":
                    model = torch.nn.Linear(4, 2)
                    opt = model_optimizer(m, model.parameters(), 0.1)
                    state = opt
                else:
                    model = DDP(torch.nn.Linear(4, 2))
                    state = attach(m, model)
                try:
                    model(torch.ones(2, 4)).sum().backward()
                    if m.kind == "model":
                        opt.step()
                except Exception as e:  # noqa: B902 - any refusal counts
                    # The hook's error, without the trace autograd appends.
                    why = str(e).split("\nAt:")[0].strip()
                    raise SpecError("method %s: the first allreduce of codec "
                                    "%r with %r failed: %s"
                                    % (m, m.codec, m.params, why)) from e
                finally:
                    state.close()
        finally:
            dist.destroy_process_group()
            os.environ.update(env)


def command_line(args):
    """The command as a user would type it, defaults left out."""
    words = ["python3", "python/examples/" + PROG]
    if args.fixed_workload is None:
        words += ["--workload", args.workload]
    words += ["--ranks", str(args.ranks), "--steps", str(args.steps),
              "--batch", str(args.base_batch)]
    if args.batch_mult != 1:
        words += ["--batch-mult", str(args.batch_mult)]
    if args.lr_given is not None:
        words += ["--lr", "%g" % args.lr_given]
    if args.methods_text != ",".join(METHODS):
        words += ["--methods", args.methods_text]
    if args.links != ["loopback"]:
        words += ["--links", ",".join(args.links)]
    return " ".join(words)


def worker(args):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=600))
    rank, world = dist.get_rank(), dist.get_world_size()
    wl = WORKLOADS[args.workload](torch)

    # Every method trains its own model, a step of each in turn, so a
    # change in the machine's load falls on all of them alike.
    jobs = []
    for method in args.methods:
        torch.manual_seed(0)
        net = wl.build()
        if method.kind == "model":
            # gradnet.torch.SGD replaces DDP and the optimizer: its step
            # is the exchange, and its context counts both directions.
            model = net
            opt = model_optimizer(method, net.parameters(), args.lr)
            state = opt.ctx
        else:
            model = DDP(net)
            state = attach(method, model)
            opt = torch.optim.SGD(model.parameters(), lr=args.lr,
                                  momentum=0.9)
        jobs.append({
            "method": method, "net": net, "model": model,
            "state": state, "opt": opt,
            "gen": torch.Generator().manual_seed(1000 + rank),
            "counted": 0, "skipped": 0, "seconds": 0.0})
    nparams = sum(p.numel() for p in jobs[0]["net"].parameters())

    current = [None]
    real_all_reduce = dist.all_reduce

    def counting_all_reduce(tensor, *a, **k):
        current[0]["counted"] += tensor.numel() * tensor.element_size()
        return real_all_reduce(tensor, *a, **k)
    dist.all_reduce = counting_all_reduce

    for _ in range(args.steps):
        for j in jobs:
            current[0] = j
            # A step starts on every rank at once and ends when its
            # allreduces have: its time is the job's, not a straggler's
            # from the step before.
            real_all_reduce(torch.zeros(1))
            t0 = time.perf_counter()
            batch = wl.batch(j["gen"], args.batch)
            j["opt"].zero_grad()
            wl.loss(j["model"], batch).backward()
            if j["method"].kind == "model":
                # A NaN on any rank skips the step on every rank.
                before = j["opt"].nonfinite_steps
                j["opt"].step()
                j["skipped"] += j["opt"].nonfinite_steps - before
            elif all(torch.isfinite(p.grad).all()
                     for p in j["model"].parameters()):
                j["opt"].step()
            else:
                j["skipped"] += 1
            j["seconds"] += time.perf_counter() - t0
    dist.all_reduce = real_all_reduce

    rows = []
    for j in jobs:
        if j["state"] is not None:
            st = j["state"].stats()
            sent = (st["wire_bytes"] + st["ctl_bytes"]) / args.steps
            carried = nparams * 4.0
            j["state"].close()
        else:
            carried = j["counted"] / args.steps
            sent = carried * 2 * (world - 1) / world
        row = {"method": j["method"].text}
        if rank == 0:
            row.update(wl.evaluate(j["net"]))
        row.update({"carried_bytes": carried, "sent_bytes": sent,
                    "ms_per_step": j["seconds"] / args.steps * 1e3,
                    "skipped": j["skipped"]})
        rows.append(row)
    dist.barrier()
    if rank == 0:
        add_ratios(rows)
        run = {"command": command_line(args), "workload": wl.name,
               "model": wl.describe(nparams, args.batch),
               "parameters": nparams, "ranks": world, "steps": args.steps,
               "batch": args.batch, "lr": args.lr}
        run.update(wl.sizes())
        print("command: " + run["command"])
        print("model: " + run["model"])
        print("optimizer: SGD, lr %g, momentum 0.9" % args.lr)
        print("link: %s" % args.run_link)
        print("\n".join(table(wl.score, rows)))
        print("carried: allreduce payload per rank (gradnet: the float32 "
              "gradient); sent: per rank, gradnet's counted UDP "
              "payload incl. acks and control, or 2(W-1)/W x carried for "
              "Gloo's ring")
        sys.stdout.flush()
        out = args.rank_json or args.json
        if out:
            run["methods"] = rows
            run["links"] = [{"link": args.run_link, "methods": rows}]
            write_json(out, run)
    dist.barrier()
    dist.destroy_process_group()


def add_ratios(rows):
    """Each row's vs_gloo: Gloo's sent bytes over its own (None without a
    Gloo row)."""
    gloo = next((r["sent_bytes"] for r in rows if r["method"] == "gloo"),
                None)
    for r in rows:
        r["vs_gloo"] = gloo / r["sent_bytes"] if gloo and r["sent_bytes"] \
            else None


def table(score, rows):
    """The table's lines: one row per method, as the JSON holds it."""
    w = max([17] + [len(r["method"]) for r in rows])
    if score == "accuracy":
        head = ("%-*s %9s" % (w, "method", "accuracy"),)
    else:
        head = ("%-*s %9s %10s" % (w, "method", "val loss", "perplexity"),)
    lines = [head[0] + " %14s %14s %9s %10s %7s" % (
        "carried B/step", "sent B/step", "vs gloo", "ms/step", "skipped")]
    for r in rows:
        if score == "accuracy":
            s = "%-*s %8.2f%%" % (w, r["method"], r["accuracy"] * 100)
        else:
            s = "%-*s %9.4f %10.2f" % (w, r["method"], r["val_loss"],
                                       r["perplexity"])
        ratio = r["vs_gloo"] if r["vs_gloo"] is not None else float("nan")
        lines.append(s + " %14.0f %14.0f %8.1fx %10.2f %7d" % (
            r["carried_bytes"], r["sent_bytes"], ratio, r["ms_per_step"],
            r["skipped"]))
    return lines


def link_table(score, links):
    """Time per step of every method on every link, and its speed-up over
    Gloo on the same link."""
    first = links[0]["methods"]
    w = max([17] + [len(r["method"]) for r in first])
    head = "%-*s %10s %14s" % (w, "method", "accuracy" if score ==
                               "accuracy" else "val loss", "sent B/step")
    for ln in links:
        head += " %21s" % ("ms/step %s" % ln["link"])
    lines = [head]
    for i, r in enumerate(first):
        s = "%-*s " % (w, r["method"])
        s += ("%9.2f%%" % (r["accuracy"] * 100) if score == "accuracy"
              else "%10.4f" % r["val_loss"])
        s += " %14.0f" % r["sent_bytes"]
        for ln in links:
            m = ln["methods"][i]
            g = next((x["ms_per_step"] for x in ln["methods"]
                      if x["method"] == "gloo"), None)
            s += " %10.2f (%6.2fx)" % (m["ms_per_step"], g / m["ms_per_step"]) \
                if g else " %21.2f" % m["ms_per_step"]
        lines.append(s)
    lines.append("(Nx): Gloo's time per step on that link over the method's")
    return lines


def write_json(path, out):
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


def provide_key(tmp):
    """As a launcher should, give the ranks the job key in a file only this
    user can read (GN_KEY_FILE), unless the caller gave a key."""
    if any(os.environ.get(v) for v in ("GN_KEY_FILE", "GN_KEY_FD", "GN_KEY",
                                        "GN_INSECURE")):
        return
    path = os.path.join(tmp, "job.key")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, os.urandom(16).hex().encode())
    os.close(fd)
    os.environ["GN_KEY_FILE"] = path


def launch(args, link, rank_json):
    """Run every rank of one job on @link; its exit code."""
    argv = [sys.executable] + sys.argv + ["--rank-json", rank_json,
                                          "--run-link", link]
    env = dict(os.environ, WORLD_SIZE=str(args.ranks), OMP_NUM_THREADS="1")
    if link != "loopback":
        # A namespace a rank: hosts of their own.
        env["LOCAL_WORLD_SIZE"] = "1"
        return subprocess.run(["bash", NETNS, str(args.ranks), link] + argv,
                              env=env).returncode
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
               LOCAL_WORLD_SIZE=str(args.ranks))
    procs = [subprocess.Popen(argv, env=dict(env, RANK=str(r),
                                              LOCAL_RANK=str(r)))
             for r in range(args.ranks)]
    # A rank that fails ends the job: the others would wait for it.
    rc = 0
    while procs:
        for p in list(procs):
            if p.poll() is None:
                continue
            procs.remove(p)
            if p.returncode and not rc:
                rc = p.returncode
                for q in procs:
                    q.terminate()
        time.sleep(0.1)
    return rc


def run_links(args):
    with tempfile.TemporaryDirectory() as tmp:
        runs = []
        for link in args.links:
            path = os.path.join(tmp, link + ".json")
            rc = launch(args, link, path)
            if rc:
                print("%s: the job on link %s failed (exit %d)"
                      % (PROG, link, rc), file=sys.stderr)
                return 1
            with open(path) as f:
                runs.append(json.load(f))
    out = runs[0]
    out["links"] = [r["links"][0] for r in runs]
    if len(runs) > 1:
        wl = WORKLOADS[args.workload]
        print("every link (%s):" % out["command"])
        print("\n".join(link_table(wl.score, out["links"])))
    if args.json:
        write_json(args.json, out)
    return 0


def main(workload=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    if workload is None:
        ap.add_argument("--workload", choices=sorted(WORKLOADS),
                        default="digits")
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=None,
                    help="per rank (digits: 32 images, lm: 16 windows)")
    ap.add_argument("--batch-mult", type=int, default=1, metavar="M",
                    help="a large effective batch: M times --batch per "
                    "rank, and M times the learning rate unless --lr")
    ap.add_argument("--lr", type=float, default=None,
                    help="every method's learning rate (digits: 0.05, "
                    "lm: 1.0; times --batch-mult)")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--links", default="loopback",
                    help="comma-separated: loopback, none, 1gbit, 10gbit")
    ap.add_argument("--json", metavar="FILE",
                    help="also write the results to FILE as JSON")
    ap.add_argument("--rank-json", help=argparse.SUPPRESS)
    ap.add_argument("--run-link", default="loopback", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.fixed_workload = workload
    if workload is not None:
        args.workload = workload
    if args.batch is None:
        args.batch = WORKLOADS[args.workload].default_batch
    if args.batch_mult < 1 or args.batch < 1:
        print("%s: --batch and --batch-mult must be at least 1" % PROG,
              file=sys.stderr)
        return 2
    if args.lr is not None and not args.lr > 0:
        print("%s: --lr must be a positive number" % PROG, file=sys.stderr)
        return 2
    args.lr_given = args.lr
    args.base_batch = args.batch
    args.batch *= args.batch_mult
    if args.lr is None:
        # Linear scaling: M times the batch, M times the step.
        args.lr = WORKLOADS[args.workload].lr * args.batch_mult
    if args.json:
        args.json = os.path.abspath(args.json)
    args.methods_text = args.methods
    args.links = [ln.strip() for ln in args.links.split(",") if ln.strip()]
    try:
        args.methods = split_methods(args.methods)
        for ln in args.links:
            if ln not in LINKS:
                raise SpecError("--links: %r is not one of %s"
                                % (ln, ", ".join(LINKS)))
        if "RANK" in os.environ:
            worker(args)
            return 0
    except SpecError as e:
        print("%s: %s" % (PROG, e), file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        provide_key(tmp)
        try:
            preflight(args.methods)
        except SpecError as e:
            print("%s: %s" % (PROG, e), file=sys.stderr)
            return 2
        return run_links(args)


if __name__ == "__main__":
    sys.exit(main())
