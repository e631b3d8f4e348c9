# SPDX-License-Identifier: MIT
"""optim_worker.py - one rank of a training job with gradnet.torch.SGD
(no DDP: the optimizer is the collective) for test_optim.py, launched as
test_ddp.py launches ddp_worker.py (torchrun's variables, a Gloo group).

usage: optim_worker.py SCENARIO OUTDIR
  dore      DORE with its quantizer both ways, momentum 0.9, weight decay
  pushpull  3LC both ways, each with its error feedback
  nan       as dore; rank 1's loss is NaN at step 2
Every rank builds its model from its own seed: the optimizer's broadcast
from rank 0 must make them equal. The learning rate halves every two
steps (a torch scheduler). Writes OUTDIR/rank<R>.pt: the parameters at
the start and after each step, the flat gradients and learning rate of
each step, and the optimizer's numbers.
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn

import gradnet
import gradnet.torch as gt

STEPS = 5
OPTIONS = {
    "dore": dict(dore=True, momentum=0.9, weight_decay=1e-3),
    "pushpull": dict(codec="3lc", down_codec="3lc"),
    "nan": dict(dore=True, momentum=0.9),
}


def main():
    scenario, outdir = sys.argv[1], sys.argv[2]
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(1 + rank)
    net = nn.Sequential(nn.Linear(13, 101), nn.ReLU(), nn.Linear(101, 37),
                        nn.ReLU(), nn.Linear(37, 5))
    own = torch.cat([p.detach().reshape(-1) for p in net.parameters()])
    opt = gt.SGD(net.parameters(), lr=0.05, **OPTIONS[scenario])
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    out = {"own": own, "start": opt.flat.clone(), "params": [], "grads": [],
           "lr": []}
    gen = torch.Generator().manual_seed(100 + rank)
    for step in range(STEPS):
        x = torch.randn(16, 13, generator=gen)
        y = torch.randn(16, 5, generator=gen)
        opt.zero_grad()
        loss = ((net(x) - y) ** 2).mean()
        if scenario == "nan" and rank == 1 and step == 2:
            loss = loss * float("nan")
        loss.backward()
        out["grads"].append(torch.cat([p.grad.reshape(-1)
                                       for p in net.parameters()]))
        out["lr"].append(opt.param_groups[0]["lr"])
        opt.step()
        out["params"].append(torch.cat([p.detach().reshape(-1)
                                        for p in net.parameters()]))
        sched.step()
    out["nonfinite_steps"] = opt.nonfinite_steps
    out["views"] = all(p.data_ptr() >= opt.flat.data_ptr() and
                       p.data_ptr() < opt.flat.data_ptr() + 4 * opt.flat.numel()
                       for p in net.parameters())
    out["tensor_id"] = opt.tensor_id
    out["stats"] = opt.ctx.stats()
    opt.close()
    torch.save(out, os.path.join(outdir, "rank%d.pt" % rank))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
