#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Write tests/golden/steady_state.tsv: the chunk streams of the
mlp-small-seq gradients fed step after step through 3LC with the error
buffer carried over, computed from the specification in
include/gradnet/codec.h independently of the C code.

For each s in 1.0, 1.5, 1.75, 1.9: every manifest row in order is one
chunk (the whole tensor), with one error buffer per tensor name starting
at zero. A row of the output gives the stream's length and the 64-bit
FNV-1a hash of its bytes; tests/steady_test.c recomputes them with the C
codec and every instruction set.

The numpy model here is vectorized; before use it is checked against the
plain per-element model of gen_vectors.py on a few real tensors.

    /usr/bin/python3 tests/golden/gen_steady.py [DATA_DIR]
"""
import os
import struct
import sys

import numpy as np

sys.dont_write_bytecode = True
import gen_vectors as plain  # noqa: E402 (after the bytecode switch)

F = np.float32
ZERO_GROUP = 121
S_VALUES = ('1.0', '1.5', '1.75', '1.9')
FNV_OFFSET = 0xcbf29ce484222325
FNV_PRIME = 0x100000001b3

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, '..', '..', 'data', 'gradients')


def quantize(x, e, s):
    """Return (q as int8, M, new e); raise on a value that is not finite."""
    with np.errstate(over='ignore'):
        t = x + e
        if not np.all(np.isfinite(t)):
            raise ValueError('not finite')
        maxabs = np.max(np.abs(t)) if t.size else F(0)
        m = F(s) * F(maxabs)
    if not np.isfinite(m):
        raise ValueError('M overflows')
    h = F(0.5) * m
    q = np.where(t > h, 1, np.where(t < -h, -1, 0)).astype(np.int8)
    qm = np.where(q == 1, m, np.where(q == -1, -m, F(0))).astype(F)
    return q, m, (t - qm).astype(F)


def quartic(q):
    """Group j is sum over k of 3^(4-k) (q[k*g + j] + 1), padding q = 0."""
    g = -(-q.size // 5)
    p = np.zeros(5 * g, dtype=np.int64)
    p[:q.size] = q
    d = (p + 1).reshape(5, g)
    w = np.array([81, 27, 9, 3, 1], dtype=np.int64).reshape(5, 1)
    return (d * w).sum(axis=0).astype(np.uint8)


def zero_runs(groups):
    """Zero-run encoding: literals stay; a run of r zero groups becomes
    floor(r/14) bytes 255 and then 121 (r mod 14 = 1) or 241 + r mod 14."""
    if groups.size == 0:
        return np.zeros(0, dtype=np.uint8)
    z = groups == ZERO_GROUP
    edge = np.diff(np.concatenate(([0], z.astype(np.int8), [0])))
    starts = np.flatnonzero(edge == 1)
    r = np.flatnonzero(edge == -1) - starts
    rem = r % 14
    lit = np.flatnonzero(~z)
    # Tokens in position order: each literal, each run.
    pos = np.concatenate((lit, starts))
    size = np.concatenate((np.ones(lit.size, dtype=np.int64),
                           r // 14 + (rem != 0)))
    order = np.argsort(pos, kind='stable')
    end = np.cumsum(size[order])
    first = np.empty(pos.size, dtype=np.int64)
    first[order] = end - size[order]
    # Bytes not set below are the 255s of runs.
    out = np.full(int(end[-1]), 255, dtype=np.uint8)
    out[first[:lit.size]] = groups[lit]
    run_first = first[lit.size:]
    tail = rem != 0
    out[(run_first + r // 14)[tail]] = np.where(
        rem[tail] == 1, ZERO_GROUP, 241 + rem[tail]).astype(np.uint8)
    return out


def stream_of(x, e, s):
    q, m, e_new = quantize(x, e, s)
    body = zero_runs(quartic(q))
    return struct.pack('<f', float(m)) + body.tobytes(), e_new


def fnv1a64_many(streams):
    """FNV-1a 64 of each stream, all streams advanced one byte at a time."""
    lens = np.array([len(b) for b in streams], dtype=np.int64)
    pad = np.zeros((len(streams), int(lens.max())), dtype=np.uint8)
    for i, b in enumerate(streams):
        pad[i, :len(b)] = np.frombuffer(b, dtype=np.uint8)
    h = np.full(len(streams), FNV_OFFSET, dtype=np.uint64)
    prime = np.uint64(FNV_PRIME)
    for k in range(pad.shape[1]):
        live = lens > k
        h[live] = (h[live] ^ pad[live, k].astype(np.uint64)) * prime
    return [int(v) for v in h]


def plain_stream(x, e, s):
    """The same stream from gen_vectors.py's per-element model."""
    q, m, e_new = plain.quantize(list(x), list(e), F(s))
    body = plain.zero_runs(plain.quartic(q))
    return struct.pack('<f', float(m)) + bytes(body), np.array(e_new, F)


def fnv1a64(data):
    h = FNV_OFFSET
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & 0xffffffffffffffff
    return h


def read_manifest(data):
    rows = []
    with open(os.path.join(data, 'mlp-small-seq', 'manifest.tsv')) as f:
        for line in f:
            c = line.split()
            if len(c) == 5 and c[3].isdigit():
                rows.append((int(c[1]), c[2], int(c[3]), c[4]))
    return rows


def load(data, row):
    x = np.fromfile(os.path.join(data, 'mlp-small-seq', row[3]), dtype='<f4')
    if x.size != row[2]:
        sys.exit('%s: %d values, the manifest says %d' % (row[3], x.size,
                                                          row[2]))
    return x.astype(F)


def self_check(data, rows):
    """Vectorized and plain models agree on small tensors, e carried."""
    rng = np.random.default_rng(1)
    for row in [r for r in rows if r[2] <= 2560][:8]:
        x = load(data, row)
        e = (rng.standard_normal(x.size) * float(np.abs(x).max())).astype(F)
        for s in S_VALUES:
            a, ea = stream_of(x, e, F(s))
            b, eb = plain_stream(x, e, s)
            if a != b or ea.tobytes() != eb.tobytes():
                sys.exit('vectorized model differs on %s s=%s' % (row[3], s))
    for b in (b'', b'\x00', bytes(range(256)) * 3):
        if fnv1a64_many([b, b'x'])[0] != fnv1a64(b):
            sys.exit('vectorized FNV-1a differs')
    # Runs of every length up to 60, alone and between literals.
    for r in range(1, 61):
        for g in ([ZERO_GROUP] * r, [7] + [ZERO_GROUP] * r + [0, 5]):
            want = plain.zero_runs(g)
            got = zero_runs(np.array(g, dtype=np.uint8)).tolist()
            if got != want:
                sys.exit('vectorized zero-run encoding differs, r=%d' % r)


def main():
    data = sys.argv[1] if len(sys.argv) > 1 else DATA
    rows = read_manifest(data)
    self_check(data, rows)
    xs = [load(data, row) for row in rows]
    out = os.path.join(HERE, 'steady_state.tsv')
    lines = ['# tests/golden/gen_steady.py: mlp-small-seq, manifest order, '
             'one chunk per tensor,\n',
             '# one error buffer per tensor name carried over; '
             'fnv1a64 of the chunk stream bytes\n',
             's\tstep\ttensor\telems\tstream_bytes\tfnv1a64\n']
    for s in S_VALUES:
        e = {}
        streams = []
        for row, x in zip(rows, xs):
            b, e[row[1]] = stream_of(x, e.get(row[1], np.zeros_like(x)),
                                     F(s))
            streams.append(b)
        hashes = fnv1a64_many(streams)
        raw = sum(x.size * 4 for x in xs)
        total = sum(len(b) for b in streams)
        for row, b, h in zip(rows, streams, hashes):
            lines.append('%s\t%d\t%s\t%d\t%d\t%016x\n'
                         % (s, row[0], row[1], row[2], len(b), h))
        print('s %-4s  %9d raw bytes  %8d stream bytes  ratio %.3f'
              % (s, raw, total, raw / total))
    with open(out, 'w') as f:
        f.writelines(lines)
    print('wrote %s (%d rows)' % (out, len(lines) - 3))


if __name__ == '__main__':
    main()
