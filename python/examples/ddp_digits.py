#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""ddp_digits.py - ddp_bench.py on the digits CNN: one DDP training job per
gradient exchange, in one run, 4 ranks on 127.0.0.1, fixed seeds.

Methods: Gloo's dense allreduce (PyTorch's default hook), PyTorch's fp16
compression hook, PyTorch's PowerSGD hook at rank 1 and 4, gradnet dense,
gradnet 3LC at s = 1 and s = 1.5 (--methods takes any of ddp_bench.py's,
gradnet codec specs included). Prints, per method, the final test
accuracy, bytes sent per rank per step, the ratio to Gloo dense, and the
mean time per step; ddp_bench.py's docstring says how each is counted,
and what --links and --json do.

usage: python3 python/examples/ddp_digits.py [--ranks 4] [--steps 300]
       [--batch 32] [--methods LIST] [--links LIST] [--json FILE]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ddp_bench  # noqa: E402

if __name__ == "__main__":
    sys.exit(ddp_bench.main(workload="digits"))
