#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""bench_staging.py - what the DDP hook's staging of a half-precision CPU
bucket costs per step (gradnet/_staging.py), next to the allreduce itself.

For float16 and bfloat16 buckets of several sizes, times the copy into the
float32 host buffer and the copy back (rounding to the bucket's dtype), and
a one-rank dense gn_allreduce() of the same float32 buffer (no network:
the cheapest allreduce there is), all in one run; prints milliseconds per
step, the staging's milliseconds per MB of the bucket (its own bytes, so
2 bytes a value), the staging against that allreduce, the CPU, and the
command. The CUDA path (pinned buffers, DMA on the bucket's stream) needs
a GPU and is not measured by this script's CPU run.

usage: GRADNET_LIB=build/lib/libgradnet.so.0 python3 python/bench_staging.py
       [--reps N] [--sizes MB,MB,...]
"""
import argparse
import os
import platform
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import gradnet  # noqa: E402
from gradnet._staging import BucketStaging  # noqa: E402


def cpu():
    model, isa = platform.processor() or "?", []
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = line.split()
                isa = [i for i in ("avx512f", "avx512bw", "avx2", "f16c")
                       if i in flags]
                break
    return model, isa


def best(fn, reps):
    """Fastest of reps runs, in seconds: the machine is shared."""
    t = []
    for _ in range(reps):
        a = time.perf_counter()
        fn()
        t.append(time.perf_counter() - a)
    return min(t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--sizes", default="1,25,100",
                    help="bucket sizes in MB of 16-bit values")
    a = ap.parse_args()
    torch.set_num_threads(1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = gradnet.Context(rank=0, world_size=1, insecure=True,
                          peers="127.0.0.1:%d" % port)
    model, isa = cpu()
    print("# cpu: %s (%s), torch %s, 1 thread, best of %d" %
          (model, " ".join(isa), torch.__version__, a.reps))
    print("# command: GRADNET_LIB=... python3 python/bench_staging.py "
          "--reps %d --sizes %s" % (a.reps, a.sizes))
    print("| dtype | bucket MB | copy in ms | copy back ms | staging ms/MB "
          "| dense allreduce ms | staging / allreduce |")
    print("|---|---|---|---|---|---|---|")
    tid = 0
    for mb in [float(x) for x in a.sizes.split(",")]:
        n = int(mb * 1e6) // 2
        tid += 1
        ctx.register(tid, n, codec="none", average=True)
        for dtype in (torch.float16, torch.bfloat16):
            st = BucketStaging()
            buf = torch.randn(n).to(dtype)
            host = st.copy_in(tid, buf)      # the first step allocates
            t_in = best(lambda: st.copy_in(tid, buf), a.reps)
            t_out = best(lambda: st.copy_out(tid, host, buf), a.reps)
            t_ar = best(lambda: ctx.allreduce(tid, host), a.reps)
            assert st.allocations == 1
            stage = t_in + t_out
            print("| %s | %g | %.3f | %.3f | %.3f | %.3f | %.2f |" %
                  (str(dtype).replace("torch.", ""), mb, t_in * 1e3,
                   t_out * 1e3, stage * 1e3 / mb, t_ar * 1e3, stage / t_ar))
    ctx.close()


if __name__ == "__main__":
    main()
