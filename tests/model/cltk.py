# SPDX-License-Identifier: MIT
"""cltk.py - CLT-k (codec "cltk", ScaleCom's cyclic local top-k) as
include/gradnet/codec.h and ../shared/docs/COMPRESSORS.md specify it,
written from that text: the set's size (warm-up, k = ceil(d n)), the
chunk's leader (s + g) mod W, the leader's selection (top-k's, one
block), every rank's values at the set and its memory's low-pass update,
the values' streams (float32 or QSGD buckets of the set's entries), the
index round's stream, and the one-chunk stream gradnet-codec writes with
every check that refuses it. The whole allreduce is in allreduce.py.
"""
import numpy as np

import qsgd
import topk
import varint
from errors import Edom, Refused

F = np.float32


class Params:
    def __init__(self, density='0.01', beta='1', warmup=0, bits=0, bucket=0,
                 norm='l2'):
        self.density = topk.f32_of_text(density)
        self.beta = topk.f32_of_text(beta)
        if not (self.density > 0 and self.density <= 1 and self.beta > 0 and
                self.beta <= 1):
            raise ValueError('density=%r beta=%r' % (density, beta))
        self.warmup = warmup
        self.bits = bits
        if bits:
            self.q = qsgd.Params(bits, bucket, norm)


def set_len(p, s, n):
    """k: n while the warm-up lasts (step s from 0), else ceil(d n)."""
    return n if s < p.warmup else min(n, topk.k_of(p.density, n))


def leader(s, g, world):
    return (s + g) % world


def _p(x, m):
    with np.errstate(over='ignore', invalid='ignore'):
        p = (np.asarray(x, dtype=F) + np.asarray(m, dtype=F)).astype(F)
    if not np.all(np.isfinite(p)):
        raise Edom('x + m is not finite')
    return p


def select(x, m, p):
    """The leader's set: the k largest |x + m|, ties to the lower index,
    increasing (top-k's selection with one block)."""
    return topk.select(_p(x, m), p.density, 0)


def contribute(x, m, p, idx):
    """A rank's values at the set idx (None: the whole chunk) and its new
    memory: m = r for beta 1, else (1 - beta) m + beta r, r = p with +0 at
    the set, each step in float32."""
    pv = _p(x, m)
    idx = np.arange(pv.size) if idx is None else np.asarray(idx)
    v = pv[idx]
    r = pv.copy()
    r[idx] = F(0)
    if p.beta == F(1):
        return v, r
    c = F(F(1) - p.beta)
    with np.errstate(over='ignore', invalid='ignore'):
        m_new = ((c * np.asarray(m, F)).astype(F) +
                 (p.beta * r).astype(F)).astype(F)
    if not np.all(np.isfinite(m_new)):
        raise Edom('the new memory is not finite')
    return v, m_new


def values(v, p, key):
    """A values stream of one slice over every entry: (body, the values
    it stands for, world 1). QSGD: the sequence of the k values."""
    v = np.asarray(v, dtype=F)
    if not p.bits:
        return v.astype('<f4').tobytes(), v.copy()
    return qsgd.encode_buckets(v, key, np.arange(v.size), p.bits, p.q.bucket,
                               p.q.norm)


def parse_values(body, k, p, first=0, count=None):
    """A values slice of entries [first, first + count) of a set of k:
    the values it carries (world 1), or Refused."""
    count = k - first if count is None else count
    if not p.bits:
        if len(body) != 4 * count:
            raise Refused('%d bytes for %d float32 values' % (len(body),
                                                             count))
        v = np.frombuffer(body, dtype='<f4').astype(F)
        if not np.all(np.isfinite(v)):
            raise Refused('a float32 value is not finite')
        return v
    b = p.q.bucket
    if first % b or (count % b and first + count != k):
        raise Refused('a QSGD slice does not start and end on buckets')
    return qsgd.decode_buckets(body, count, p.bits, b)


def index_stream(idx, first=0):
    """The index round's slice of entries idx (from entry first of the
    set): the first position, then the gaps to the next."""
    idx = np.asarray(idx, dtype=np.int64)
    if not idx.size:
        return b''
    return varint.encode(np.concatenate(([idx[0]], np.diff(idx) - 1)))


def parse_index(body, count, n):
    """(positions, bytes used) of count varints at the start of body;
    Refused for a malformed varint or a position at or past n."""
    d, at = varint.decode(body, 0, count)
    pos = np.cumsum(d + np.concatenate(([0], np.ones(count - 1,
                                                     dtype=np.int64))))
    if count and pos[-1] >= n:
        raise Refused('a position reaches the chunk\'s end')
    return pos, at


def encode(x, m, p, key, s=0):
    """The one-chunk stream gradnet-codec writes as the chunk's leader at
    step s: (stream, new memory, the values it stands for)."""
    x = np.asarray(x, dtype=F)
    n = x.size
    k = set_len(p, s, n)
    idx = select(x, m, p) if k < n else None
    v, m_new = contribute(x, m, p, idx)
    body, dec_v = values(v, p, key)
    data = k.to_bytes(4, 'little')
    dec = np.zeros(n, dtype=F)
    if idx is None:
        dec[:] = dec_v
    else:
        data += index_stream(idx)
        dec[idx] = dec_v
    return data + body, m_new, dec


def decode(data, n, p, world=1, average=False):
    """A one-chunk stream: the k values at their positions, 0 elsewhere,
    divided by W for an average; Refused as the specification says."""
    if len(data) < 4:
        raise Refused('no word')
    k = int.from_bytes(data[:4], 'little')
    if k == 0 or k > n:
        raise Refused('a set of %d entries in a chunk of %d' % (k, n))
    body = data[4:]
    idx = np.arange(n)
    if k < n:
        idx, at = parse_index(body, k, n)
        body = body[at:]
    v = parse_values(body, k, p)
    out = np.zeros(n, dtype=F)
    out[idx] = v
    if average:
        out = (out / F(world)).astype(F)
    return out
