# SPDX-License-Identifier: MIT
"""launch_worker.py - one rank of a small job for test_launcher.py: how
gradnet.torch.init() gets the key and the peers' addresses.

usage: launch_worker.py SCENARIO OUTDIR   (torchrun's variables set)

Scenarios:
  nokey     no key variable: init() must refuse, naming them
  insecure  init(insecure=True) without a key: the job runs
  storekey  init(key_via_store=True): a warning, then the job runs
  keyfile   GN_KEY_FILE: the job runs; every rank's address in the store
            is the one its context's socket holds
  squat     a store client writes rank 1's address before rank 1 does:
            rank 1 refuses, rank 0 cannot join the stranger
  thief     rank 1 tries to take rank 0's published port before joining:
            the port is rank 0's socket's, so it cannot
Writes OUTDIR/rank<R>.json with what the rank saw.
"""
import errno
import json
import os
import socket
import sys
import warnings

import torch
import torch.distributed as dist

import gradnet
import gradnet.torch as gt


def allreduce(state):
    x = torch.full((1000,), float(dist.get_rank() + 1))
    state.ctx.register(1, x.numel(), codec="none")
    state.ctx.allreduce(1, x)
    return float(x[0])


def main():
    scenario, outdir = sys.argv[1], sys.argv[2]
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    store = dist.distributed_c10d._get_default_store()
    out = {"rank": rank}
    try:
        if scenario == "nokey":
            try:
                gt.init(timeout_ms=3000)
                out["error"] = None
            except RuntimeError as e:
                out["error"] = str(e)
        elif scenario == "insecure":
            state = gt.init(insecure=True, timeout_ms=5000)
            out["sum"] = allreduce(state)
            state.close()
        elif scenario == "storekey":
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                state = gt.init(key_via_store=True, timeout_ms=5000)
            out["warnings"] = [str(x.message) for x in w]
            out["sum"] = allreduce(state)
            state.close()
        elif scenario == "keyfile":
            state = gt.init(timeout_ms=5000)
            out["address"] = state.ctx.address
            out["published"] = store.get("gradnet/0/addr/%d" % rank).decode()
            out["sum"] = allreduce(state)
            state.close()
        elif scenario == "squat":
            if rank == 1:
                store.set("gradnet/0/addr/1", "127.0.0.1:9")
            dist.barrier()
            try:
                state = gt.init(timeout_ms=2000)
                out["error"] = None
                state.close()
            except (RuntimeError, gradnet.GradnetError) as e:
                out["error"] = str(e)
        elif scenario == "thief":
            if rank == 1:
                host, port = store.get("gradnet/0/addr/0").decode().rsplit(":", 1)
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                try:
                    s.bind((host, int(port)))
                    out["stolen"] = True    # rank 0's open would now fail
                except OSError as e:
                    out["stolen"] = False
                    out["errno"] = e.errno == errno.EADDRINUSE
            state = gt.init(timeout_ms=5000)
            out["sum"] = allreduce(state)
            state.close()
    finally:
        with open(os.path.join(outdir, "rank%d.json" % rank), "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
