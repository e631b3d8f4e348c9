# SPDX-License-Identifier: MIT
"""test_conformance_allreduce.py - real jobs of 2, 3 and 4 ranks on
127.0.0.1 (one thread and one gradnet.Context each) against the numpy
model of the whole sharded allreduce (tests/model/allreduce.py, written
from include/gradnet/codec.h): for none, 3lc, qsgd, topk and topk with
QSGD, float16 or fitted values and each index codec, and CLT-k (its
leaders' index sets, the filtered memory, a warm-up), summed and averaged,
over several steps of real gradients
(data/gradients/mlp-small-seq), every rank's result equals the model's
value for value, bit for bit. The model keeps each rank's error feedback
across steps and keys the generator with the job id, the tensor id, the
step (from 1), the rank and the phase, as the library must."""
import os
import sys
import threading

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "model"))
sys.dont_write_bytecode = True
import gradnet  # noqa: E402
import allreduce  # noqa: E402
from test_transport import free_udp_ports  # noqa: E402

DATA = os.path.join(HERE, "..", "..", "data", "gradients", "mlp-small-seq")
STEPS = 6
CHUNK = 2000

# Tensor id, codec spec, the sample it carries, averaged? The chunk size
# cuts fc1.weight's shards into several chunks, the last one shorter;
# fc2.bias is shorter than one chunk on every rank.
TENSORS = [
    (1, "none", "fc1.weight", True),
    (2, "3lc:s=1.5", "fc1.weight", False),
    (3, "3lc", "fc3.weight", True),
    (4, "qsgd:bits=4", "fc1.weight", True),
    (5, "qsgd:bits=2,bucket=16,norm=max", "fc3.weight", False),
    (6, "qsgd:bits=8", "fc2.bias", True),
    (7, "topk:density=0.01", "fc1.weight", True),
    (8, "topk:density=0.01,bits=4", "fc1.weight", True),
    (9, "topk:density=0.05,block=512,bits=2,norm=max", "fc1.weight", False),
    (10, "topk:density=0.3,bits=8,bucket=16", "fc3.weight", False),
    (11, "topk:density=0.1", "fc2.bias", False),
    # Contributions and results in the dense form (QSGD and float32), on
    # gradients with many zeros of both signs.
    (12, "topk:density=0.5,bits=2", "zeros", False),
    (13, "topk:density=0.9", "zeros", True),
    (14, "topk:density=1.0", "fc3.weight", False),
    # Sparse messages of several packets: slices that start past the
    # chunk's first entry (e0 > 0), QSGD buckets cut between slices.
    (15, "topk:density=0.45,bits=8,bucket=16", "fc1.weight", True),
    (16, "topk:density=0.3", "fc1.weight", False),
    # CLT-k: the leader's set rotating over chunks and steps, the memory
    # filtered (beta < 1), QSGD values, a dense warm-up, a set of several
    # packets, a tensor shorter than a chunk.
    (17, "cltk:density=0.01", "fc1.weight", True),
    (18, "cltk:density=0.05,beta=0.5", "fc1.weight", False),
    (19, "cltk:density=0.02,beta=0.9,bits=4", "fc1.weight", True),
    (20, "cltk:density=0.1,warmup=2,bits=2,bucket=16,norm=max", "fc3.weight",
     False),
    (21, "cltk:density=0.3,beta=0.75", "fc1.weight", True),
    (22, "cltk:density=0.2", "fc2.bias", False),
    (23, "cltk:density=0.5,bits=8", "zeros", True),
    # Top-k's index and value codecs: Bloom groups (a chunk's many, in
    # several packets), each policy, float16 values, the per-chunk choice.
    (24, "topk:density=0.01,idx=bloom,bits=4", "fc1.weight", True),
    (25, "topk:density=0.2,idx=bloom,fpr=0.01", "fc1.weight", False),
    (26, "topk:density=0.1,idx=bloom-p1,fpr=0.05,val=f16", "fc1.weight",
     True),
    (27, "topk:density=0.2,idx=bloom-p2,fpr=0.1,bits=8,bucket=16",
     "fc1.weight", False),
    (28, "topk:density=0.05,idx=auto", "fc3.weight", True),
    (29, "topk:density=0.3,idx=rle,val=f16", "fc1.weight", False),
    (30, "topk:density=0.1,idx=bitmap,bits=2", "fc1.weight", True),
    (31, "topk:density=0.2,val=fit,bucket=128", "fc1.weight", True),
    (32, "topk:density=0.05,idx=bloom-p2,val=fit", "fc3.weight", False),
]


def gradient(name, rank, step):
    """Rank r's gradient at step t (from 1): sample 200 + (t - 1 + 7 r)
    mod 48 of the sequence, so every rank and step differs. "zeros" is
    fc2.bias's with 60% of its values +0 or -0."""
    if name == "zeros":
        g = gradient("fc2.bias", rank, step)
        rng = np.random.default_rng(100 * rank + step)
        z = rng.random(g.size) < 0.6
        g[z] = np.where(rng.random(g.size) < 0.5, -0.0, 0.0)[z]
        return g
    k = 200 + (step - 1 + 7 * rank) % 48
    return np.fromfile(os.path.join(DATA, "mlp-small-s%05d-%s.f32"
                                    % (k, name)), dtype="<f4")


def run_ranks(world, job_id, body, timeout=180):
    """body(rank, ctx) on every rank of a job on 127.0.0.1, each in its
    thread; their results."""
    peers = ",".join("127.0.0.1:%d" % p for p in free_udp_ports(world))
    out = [None] * world
    errs = []

    def rank(r):
        try:
            with gradnet.Context(rank=r, world_size=world, peers=peers,
                                 insecure=True, timeout_ms=30000,
                                 job_id=job_id, chunk=CHUNK) as c:
                out[r] = body(r, c)
        except Exception as e:      # reported by the main thread
            errs.append((r, e))

    ts = [threading.Thread(target=rank, args=(r,)) for r in range(world)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout)
    assert not any(t.is_alive() for t in ts), "a rank hangs"
    assert not errs, errs
    return out


def run_job(world, job_id):
    """Every rank's results: out[rank][step][tensor id]."""
    def body(r, c):
        res = [{} for _ in range(STEPS)]
        bufs = {}
        for tid, spec, name, avg in TENSORS:
            n = gradient(name, 0, 1).size
            c.register(tid, n, codec=spec, average=avg)
        for step in range(1, STEPS + 1):
            for tid, spec, name, avg in TENSORS:
                bufs[tid] = gradient(name, r, step).copy()
                c.start(tid, bufs[tid])
            for tid, _, _, _ in TENSORS:
                c.wait(tid)
                res[step - 1][tid] = bufs[tid].copy()
        return res

    return run_ranks(world, job_id, body, 120)


def first_difference(got, want):
    bad = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
    if not bad.size:
        return None
    i = int(bad[0])
    return "%d of %d values differ; first at %d: %r, the model %r" % (
        bad.size, got.size, i, got[i], want[i])


@pytest.mark.parametrize("world", [2, 3, 4])
def test_job_equals_model(world):
    job_id = 0xc0de2900 + world      # the top bit set: job << 32 in u64
    out = run_job(world, job_id)
    wrong = []
    for tid, spec, name, avg in TENSORS:
        n = gradient(name, 0, 1).size
        model = allreduce.Tensor(spec, n, world, CHUNK, job_id, tid, avg)
        for step in range(1, STEPS + 1):
            want = model.allreduce([gradient(name, r, step)
                                    for r in range(world)])
            for r in range(world):
                why = first_difference(out[r][step - 1][tid], want)
                if why:
                    wrong.append("tensor %d (%s, %s%s) step %d rank %d: %s"
                                 % (tid, spec, name, ", average" if avg
                                    else "", step, r, why))
    assert not wrong, "\n".join(wrong[:12])
