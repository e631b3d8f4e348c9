# SPDX-License-Identifier: MIT
"""tlc.py - 3LC and the dense codec "none" for the conformance suite.
3LC's encoder is tests/golden/gen_steady.py's numpy model (itself checked
against gen_vectors.py's per-element one); the decoder and its checks
are written here from include/gradnet/codec.h ("3LC")."""
import os
import struct
import sys

import numpy as np

from errors import Edom, Refused

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'golden'))
sys.dont_write_bytecode = True
import gen_steady  # noqa: E402

F = np.float32
ZERO = 121
_POW = np.array([81, 27, 9, 3, 1], dtype=np.int64)


def quantize(x, e, s):
    """(trits int8, M, new e); Edom as gn_tlc_quantize()."""
    try:
        return gen_steady.quantize(np.asarray(x, F), np.asarray(e, F), F(s))
    except ValueError as err:
        raise Edom(str(err))


def encode(x, e, s):
    """The chunk stream (M, zero-run encoded groups), the new e and what
    the stream stands for."""
    q, m, e_new = quantize(x, e, s)
    body = gen_steady.zero_runs(gen_steady.quartic(q)).tobytes()
    return struct.pack('<f', float(m)) + body, e_new, trit_values(q, m)


def trit_values(q, m, world=1, average=False):
    """0 + M or 0 - M for the nonzero trits (M / W for an average)."""
    mm = F(m) / F(world) if average else F(m)
    z = np.zeros(q.size, dtype=F)
    return np.where(q > 0, z + mm, np.where(q < 0, z - mm, z)).astype(F)


def trits(body, n):
    """The n trits of zero-run encoded groups; Refused if their count is
    not ceil(n/5) or a nonzero trit lands at an index >= n."""
    g = -(-n // 5)
    raw = np.frombuffer(body, dtype=np.uint8).astype(np.int64)
    reps = np.where(raw >= 243, raw - 241, 1)
    if int(reps.sum()) != g:
        raise Refused('%d groups, a chunk of %d values has %d'
                      % (int(reps.sum()), n, g))
    groups = np.repeat(np.where(raw >= 243, ZERO, raw), reps)
    digits = (groups[None, :] // _POW[:, None]) % 3 - 1
    q = digits.reshape(-1)
    if np.any(q[n:] != 0):
        raise Refused('a nonzero trit at an index >= n')
    return q[:n].astype(np.int8)


def decode(data, n, world=1, average=False):
    if len(data) < 4:
        raise Refused('no scale')
    m = np.frombuffer(data[:4], dtype='<f4')[0]
    if not np.isfinite(m) or np.signbit(m):
        raise Refused('M is not finite or has its sign bit set')
    return trit_values(trits(data[4:], n), m, world, average)


def dense_encode(x):
    """Codec "none": the word 0 and the values."""
    x = np.asarray(x, dtype=F)
    if not np.all(np.isfinite(x)):
        raise Edom('a value is not finite')
    return b'\0\0\0\0' + x.astype('<f4').tobytes()


def dense_decode(data, n, world=1, average=False):
    if len(data) != 4 + 4 * n or data[:4] != b'\0\0\0\0':
        raise Refused('not a dense chunk of %d values' % n)
    v = np.frombuffer(data[4:], dtype='<f4').astype(F)
    if not np.all(np.isfinite(v)):
        raise Refused('a value is not finite')
    return (v / F(world)).astype(F) if average else v
