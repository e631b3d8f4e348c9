# SPDX-License-Identifier: MIT
"""ddp_worker.py - one rank of a DDP job under torchrun for test_ddp.py.

usage: torchrun --standalone --nproc_per_node N ddp_worker.py SCENARIO OUTDIR
(or any launcher that sets torchrun's RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT, as test_ddp.py does)

Scenarios (each trains a few steps on 127.0.0.1 with a Gloo process group
and gradnet's hook, recording every bucket the hook saw, in and out):
  3lc      the hook's results, replayed through a second context with the
           plain binding (gn_allreduce), must match bit for bit
  dense    codec none; compared with Gloo's allreduce of the same inputs
  unused   a model with a parameter no step uses (find_unused_parameters)
  members  as 3lc, with member_scales: each DDP bucket a gradnet bucket of
           its gradients, replayed through gn_bucket_register()
  cltk     as 3lc, with codec="cltk", density=0.1, beta=0.5 (ScaleCom's
           CLT-k: leaders' index sets, a low-pass memory)
  nan      a loss scaler (GradScaler's algorithm); rank 1's loss is NaN
           at step 2
  float16, bfloat16
           as 3lc, with the parameters (so the gradients and DDP's
           buckets) in that dtype: the hook stages them through float32;
           replayed in float32 and rounded back; the staging buffers of
           every step are recorded
Writes OUTDIR/rank<R>.pt with what the test checks.
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import gradnet
import gradnet.torch as gt

STEPS = 4
LOW_PRECISION = {"float16": torch.float16, "bfloat16": torch.bfloat16}


class Net(nn.Module):
    """Layers declared in another order than used, and odd sizes, so the
    rebuilt buckets differ from the first ones and the last one is uneven."""

    def __init__(self, unused=False):
        super().__init__()
        self.c = nn.Linear(37, 5)
        self.a = nn.Linear(13, 101)
        self.b = nn.Linear(101, 37)
        if unused:
            self.spare = nn.Linear(29, 7)

    def forward(self, x):
        return self.c(torch.relu(self.b(torch.relu(self.a(x)))))


class LowPrecisionNet(Net):
    """Net with its parameters kept in a 16-bit dtype and its arithmetic
    in float32 (1.13 has no float16 matmul on the CPU): the gradients, and
    so DDP's buckets, come out in the parameters' dtype, as under mixed
    precision."""

    def forward(self, x):
        def linear(layer, v):
            return nn.functional.linear(v, layer.weight.float(),
                                        layer.bias.float())
        return linear(self.c, torch.relu(linear(self.b, torch.relu(
            linear(self.a, x)))))


def skip_initial_broadcast():
    """Gloo cannot broadcast bfloat16 ("Invalid scalar type"), which DDP's
    constructor does so that every rank starts from rank 0's weights.
    Every rank here builds the same weights from one seed, so the
    bfloat16 job leaves that broadcast out; the test still checks that
    the weights stay equal on every rank."""
    import torch.nn.parallel.distributed as ddp_module
    ddp_module._sync_module_states = lambda **kwargs: None


class CpuScaler:
    """torch.cuda.amp.GradScaler's algorithm (1.13's asserts CUDA tensors):
    scale the loss, skip the step and halve the scale if any gradient is
    not finite, else unscale, step, and grow the scale every few steps."""

    def __init__(self, scale=2.0 ** 10, interval=2):
        self.s, self.interval, self.good = scale, interval, 0
        self.found_inf = False

    def scale(self, loss):
        return loss * self.s

    def step(self, opt):
        grads = [p.grad for g in opt.param_groups for p in g["params"]
                 if p.grad is not None]
        self.found_inf = not all(torch.isfinite(g).all() for g in grads)
        if self.found_inf:
            return
        for g in grads:
            g.div_(self.s)
        opt.step()

    def update(self):
        if self.found_inf:
            self.s, self.good = self.s / 2, 0
            return
        self.good += 1
        if self.good == self.interval:
            self.s, self.good = self.s * 2, 0

    def get_scale(self):
        return self.s


def recording(log):
    """gradnet's hook, recording each bucket's input and result."""
    def hook(state, bucket):
        entry = {"index": bucket.index(), "in": bucket.buffer().clone(),
                 "sizes": tuple(g.numel() for g in bucket.gradients())}
        log.append(entry)
        fut = gt.allreduce_hook(state, bucket)

        def done(f):
            entry["out"] = f.value().clone()
            return f.value()
        return fut.then(done)
    return hook


def main():
    scenario, outdir = sys.argv[1], sys.argv[2]
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(1)
    dtype = LOW_PRECISION.get(scenario)
    if dtype is None:
        net = Net(unused=scenario == "unused")
    else:
        net = LowPrecisionNet().to(dtype)
        if dtype == torch.bfloat16:
            skip_initial_broadcast()
    # Small buckets (DDP's own knob, as its comments suggest) so that this
    # small model has several and the rebuilt ones differ from the first.
    dist._DEFAULT_FIRST_BUCKET_BYTES = 4096
    model = DDP(net, bucket_cap_mb=0.01,
                find_unused_parameters=scenario == "unused")
    codec = {"dense": "none", "cltk": "cltk"}.get(scenario, "3lc")
    params = {"density": 0.1, "beta": 0.5} if scenario == "cltk" else {}
    state = gt.init(codec=codec, member_scales=scenario == "members",
                    **params)
    log = []
    model.register_comm_hook(state, recording(log))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = CpuScaler() if scenario == "nan" else None
    out = {"rank": rank, "world": world, "skipped": [], "scale": [],
           "params": [], "staging": [], "allocations": []}
    gen = torch.Generator().manual_seed(100 + rank)
    for step in range(STEPS):
        x = torch.randn(16, 13, generator=gen)
        y = torch.randn(16, 5, generator=gen)
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        if scenario == "nan" and rank == 1 and step == 2:
            loss = loss * float("nan")
        if scaler is None:
            loss.backward()
            opt.step()
        else:
            before = [p.detach().clone() for p in model.parameters()]
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            out["skipped"].append(all(torch.equal(a, p.detach())
                                      for a, p in zip(before,
                                                      model.parameters())))
            out["scale"].append(scaler.get_scale())
        out["params"].append(torch.cat([p.detach().flatten()
                                        for p in model.parameters()]))
        # Which host buffers the staged buckets went through this step.
        out["staging"].append({i: (id(b), b.data_ptr(), b.numel())
                               for i, b in state.staging.buffers.items()})
        out["allocations"].append(state.staging.allocations)
    out["grads"] = [p.grad.clone() if p.grad is not None else None
                    for p in model.parameters()]
    out["log"] = [(e["index"], e["in"], e["out"]) for e in log]
    out["sizes"] = [e["sizes"] for e in log]
    out["rebuilds"] = state.rebuilds
    out["nonfinite_steps"] = state.nonfinite_steps
    out["stats"] = state.stats()

    # The same inputs through the plain binding, on a second context.
    if scenario in ("3lc", "unused", "members", "cltk") or dtype is not None:
        ref = gt.init(codec=codec, **params)
        ctx, sizes, res = ref.ctx, {}, []
        for (idx, x_in, _), members in zip(out["log"], out["sizes"]):
            n = members if scenario == "members" else x_in.numel()
            if sizes.get(idx) != n:
                if idx in sizes:
                    ctx.unregister(idx)
                if scenario == "members":
                    ctx.register_bucket(idx, n, codec=codec, average=True)
                else:
                    ctx.register(idx, n, codec=codec, average=True,
                                 **params)
                sizes[idx] = n
            # In float32, rounded back to the bucket's dtype.
            x = x_in.to(torch.float32)
            ctx.allreduce(idx, x)
            res.append(x.to(x_in.dtype))
        out["replay"] = res
        ref.close()
    if scenario == "dense":
        res = []
        for _, x_in, _ in out["log"]:
            x = x_in.clone()
            dist.all_reduce(x)
            res.append(x / world)
        out["gloo"] = res
    state.close()
    torch.save(out, os.path.join(outdir, "rank%d.pt" % rank))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
