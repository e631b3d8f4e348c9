#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Why a bucket cuts its 3LC chunks at member bounds: the mlp-small-seq
gradients (steps 200-247, one worker) fed step after step through the
specification's quantizer (include/gradnet/codec.h, s = 1) with the error
buffer carried over, once per tensor (each tensor sharded alone, as
separate gradnet tensors are), once as one bucket sharded as a whole with
chunks cut at member bounds (gn_bucket_register()), once as a bucket whose
chunks span members (GN_BUCKET_SHARED_SCALE). Per tensor it prints the
nonzero values sent per step and the share of the gradients' sum still
unsent at the end (|e| / |sum of x|): a small tensor chunked with large
neighbours is quantized against their largest value and mostly waits.

    /usr/bin/python3 tools/bucket-scales.py [--shards 4] [DATA_DIR]
"""
import argparse
import os

import numpy as np

F = np.float32
NAMES = ('fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias', 'fc3.weight',
         'fc3.bias')
CHUNK = 65536
HERE = os.path.dirname(os.path.abspath(__file__))


def load(data):
    """[step] -> list of the step's tensors, in NAMES order."""
    return [[np.fromfile(os.path.join(data, 'mlp-small-s%05d-%s.f32' % (k, n)),
                         dtype=F) for n in NAMES] for k in range(200, 248)]


def quantized(t):
    """q * M for one chunk, as the specification quantizes it."""
    m = F(1.0) * F(np.max(np.abs(t)))
    h = F(0.5) * m
    q = np.where(t > h, 1, np.where(t < -h, -1, 0)).astype(F)
    return (q * m).astype(F)


def cut(lo, hi):
    return [(a, min(a + CHUNK, hi)) for a in range(lo, hi, CHUNK)]


def layouts(off, shards):
    n = int(off[-1])
    tensor, member, shared = [], [], []
    for i in range(len(NAMES)):
        size = int(off[i + 1] - off[i])
        for j in range(shards):
            tensor += cut(int(off[i]) + size * j // shards,
                          int(off[i]) + size * (j + 1) // shards)
    for j in range(shards):
        lo, hi = n * j // shards, n * (j + 1) // shards
        shared += cut(lo, hi)
        for i in range(len(NAMES)):
            a, b = max(lo, int(off[i])), min(hi, int(off[i + 1]))
            if a < b:
                member += cut(a, b)
    return (('each tensor alone', tensor),
            ('bucket, chunks cut at member bounds', member),
            ('bucket, GN_BUCKET_SHARED_SCALE', shared))


def run(steps, off, chunks):
    n = int(off[-1])
    e = np.zeros(n, F)
    total = np.zeros(n, np.float64)
    nonzero = np.zeros(n)
    for x in steps:
        x = np.concatenate(x)
        t = (x + e).astype(F)
        d = np.zeros(n, F)
        for a, b in chunks:
            d[a:b] = quantized(t[a:b])
        e = (t - d).astype(F)
        total += x
        nonzero += d != 0
    for i, name in enumerate(NAMES):
        a, b = int(off[i]), int(off[i + 1])
        print('  %-11s %6d values: %7.1f nonzero per step, %3.0f%% of the sum unsent'
              % (name, b - a, nonzero[a:b].sum() / len(steps),
                 100 * np.linalg.norm(e[a:b]) / np.linalg.norm(total[a:b])))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--shards', type=int, default=4)
    ap.add_argument('data', nargs='?', default=os.path.join(
        HERE, '..', 'data', 'gradients', 'mlp-small-seq'))
    a = ap.parse_args()
    steps = load(a.data)
    off = np.concatenate(([0], np.cumsum([x.size for x in steps[0]])))
    for label, chunks in layouts(off, a.shards):
        print('%s (%d shards, %d chunks):' % (label, a.shards, len(chunks)))
        run(steps, off, chunks)


if __name__ == '__main__':
    main()
