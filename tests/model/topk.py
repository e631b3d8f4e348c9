# SPDX-License-Identifier: MIT
"""topk.py - top-k with error feedback (codec "topk", SparCML) as
include/gradnet/codec.h specifies it, written from that text: selection
per chunk or per block (k = ceil(d m) in exact arithmetic, ties to the
lower index), error feedback, the dynamic switch between the sparse and
the dense form, the exact stream bytes (varints, e0, norms, packed codes)
and the decoder with every check that refuses a slice.

A chunk's message is described by its entries: increasing indices and
the float32 values they carry before any QSGD rounding. stream() turns
entries into the word and the body; the owner's merge is in allreduce.py.
"""
from fractions import Fraction

import numpy as np

import qsgd
import varint
from errors import Edom, Refused

F = np.float32
SPARSE, DENSE = 0, 1


def f32_of_text(text):
    """The float32 nearest to a decimal string, ties to even (strtof)."""
    want = Fraction(text)
    f = F(float(want))
    best = None
    for c in (np.nextafter(f, F(-np.inf)), f, np.nextafter(f, F(np.inf))):
        d = abs(Fraction(float(c)) - want)
        even = (int(np.array([c], dtype=F).view(np.uint32)[0]) & 1) == 0
        if best is None or d < best[0] or (d == best[0] and even):
            best = (d, c)
    return F(best[1])


class Params:
    def __init__(self, density='0.01', block=0, bits=0, bucket=0, norm='l2'):
        self.density = f32_of_text(density) if isinstance(density, str) \
            else F(density)
        if not (self.density > 0 and self.density <= 1):
            raise ValueError('density=%r' % density)
        self.block = block
        self.bits = bits
        if bits:
            self.q = qsgd.Params(bits, bucket, norm)


def k_of(d, m):
    """ceil(d * m) of d's float32 value, exactly; at least 1."""
    prod = Fraction(float(d)) * m
    return max(1, -(-prod.numerator // prod.denominator))


def select(a, d, block):
    """Indices of the entries, increasing: in each block of m values the
    k = ceil(d m) largest |a_i|, ties to the lower index."""
    n = a.size
    blk = block if block else n
    mag = np.abs(a.astype(np.float64))
    out = []
    for lo in range(0, n, blk):
        m = min(blk, n - lo)
        k = k_of(d, m)
        order = np.lexsort((np.arange(m), -mag[lo:lo + m]))
        out.append(lo + np.sort(order[:k]))
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def contribute(x, e, p):
    """Error feedback and selection: (entries, their values, new e)."""
    x = np.asarray(x, dtype=F)
    with np.errstate(over='ignore', invalid='ignore'):
        a = (x + np.asarray(e, dtype=F)).astype(F)
    if not np.all(np.isfinite(a)):
        raise Edom('x + e is not finite')
    idx = select(a, p.density, p.block)
    e_new = a.copy()
    e_new[idx] = F(0)
    return idx, a[idx], e_new


def _deltas(idx, first):
    idx = np.asarray(idx, dtype=np.int64)
    if not idx.size:
        return idx
    return np.concatenate(([idx[0] - first], np.diff(idx) - 1))


def sparse_bytes(idx, p, first=0, e0=0):
    """Bytes of the sparse body of entries idx (a slice from first)."""
    nnz = len(idx)
    b = 0 if not p.bits else (len(varint.encode([e0])))
    b += len(varint.encode([nnz])) + int(varint.sizes(_deltas(idx, first)).sum())
    if not p.bits:
        return b + 4 * nnz
    return b + 4 * _buckets_touched(e0, nnz, p.q.bucket) + \
        qsgd.code_bytes(nnz, p.bits)


def dense_bytes(n, p):
    return 4 * n if not p.bits else qsgd.dense_bytes(n, p.bits, p.q.bucket)


def _buckets_touched(e0, nnz, b):
    return 0 if not nnz else (e0 + nnz - 1) // b - e0 // b + 1


def form(idx, n, p):
    """SPARSE when the sparse form is smaller than the dense one."""
    return SPARSE if sparse_bytes(idx, p) < dense_bytes(n, p) else DENSE


def stream(idx, vals, n, p, key):
    """A whole chunk's stream of entries (idx, vals): its word and body,
    and the n values it stands for (world 1, no average). key keys QSGD's
    rounding: contributions and results alike."""
    idx = np.asarray(idx, dtype=np.int64)
    vals = np.asarray(vals, dtype=F)
    aux = form(idx, n, p)
    if aux == DENSE:
        dense = np.zeros(n, dtype=F)
        dense[idx] = vals
        if not p.bits:
            body, dec = dense.astype('<f4').tobytes(), dense
        else:
            body, dec = qsgd.encode_buckets(dense, key, np.arange(n), p.bits,
                                            p.q.bucket, p.q.norm)
        return aux.to_bytes(4, 'little') + body, dec
    body = varint.encode([len(idx)])
    if p.bits:
        body += varint.encode([0])
    body += varint.encode(_deltas(idx, 0))
    if not p.bits:
        ev = vals
        body += vals.astype('<f4').tobytes()
    else:
        norms, codes = qsgd.quantize(vals, key, np.arange(len(idx)), p.bits,
                                     p.q.bucket, p.q.norm)
        body += norms.astype('<f4').tobytes() + qsgd.pack(codes, p.bits)
        ev = qsgd.values(norms, codes, np.arange(len(idx)) // p.q.bucket,
                         p.bits)
    dec = np.zeros(n, dtype=F)
    dec[idx] = ev
    return aux.to_bytes(4, 'little') + body, dec


def encode(x, e, p, key):
    """A contribution as gradnet-codec writes it: (stream, new e, what it
    stands for)."""
    idx, vals, e_new = contribute(x, e, p)
    data, dec = stream(idx, vals, len(x), p, key)
    return data, e_new, dec


def parse_slice(aux, body, n, p, first=0, count=None):
    """Check a slice's word and body: ('dense', values) or ('sparse',
    indices, values, e0), values as coded (QSGD already decoded to
    float32, world 1). Refused for anything the specification refuses."""
    count = n - first if count is None else count
    if aux == DENSE:
        if not p.bits:
            if len(body) != 4 * count:
                raise Refused('a dense slice of %d values has %d bytes'
                              % (count, len(body)))
            v = np.frombuffer(body, dtype='<f4').astype(F)
            if not np.all(np.isfinite(v)):
                raise Refused('a float32 value is not finite')
            return ('dense', v)
        return ('dense', qsgd.decode_buckets(body, count, p.bits,
                                             p.q.bucket))
    if aux != SPARSE:
        raise Refused('word %d is neither sparse (0) nor dense (1)' % aux)
    nnz, at = varint.decode_one(body, 0)
    if nnz > count:
        raise Refused('nnz %d exceeds the %d positions' % (nnz, count))
    e0 = 0
    if p.bits:
        e0, at = varint.decode_one(body, at)
        if e0 + nnz > n:
            raise Refused('e0 %d + nnz %d exceed the chunk of %d' % (e0, nnz, n))
    d, at = varint.decode(body, at, nnz)
    idx = first + np.cumsum(d + 1) - 1
    if nnz and idx[-1] >= first + count:
        raise Refused('an index falls outside the slice')
    rest = body[at:]
    if not p.bits:
        if len(rest) != 4 * nnz:
            raise Refused('%d value bytes for %d entries' % (len(rest), nnz))
        v = np.frombuffer(rest, dtype='<f4').astype(F)
        if not np.all(np.isfinite(v)):
            raise Refused('a float32 value is not finite')
        return ('sparse', idx, v, e0)
    b = p.q.bucket
    nb = _buckets_touched(e0, nnz, b)
    if len(rest) != 4 * nb + qsgd.code_bytes(nnz, p.bits):
        raise Refused('%d value bytes for %d entries' % (len(rest), nnz))
    norms = np.frombuffer(rest[:4 * nb], dtype='<f4').astype(F)
    for nv in norms:
        qsgd.check_norm(nv)
    codes, pad_ok = qsgd.unpack(rest[4 * nb:], nnz, p.bits)
    bi = (e0 + np.arange(nnz)) // b - e0 // b
    qsgd.check_codes(codes, pad_ok, p.bits, norms[bi] == 0 if nnz else None)
    return ('sparse', idx, qsgd.values(norms, codes, bi, p.bits), e0)


def decode(data, n, p, world=1, average=False):
    """A whole chunk stream decoded: 0 where there is no entry, else the
    entry's value, divided by the world size for an average."""
    if len(data) < 4:
        raise Refused('no word')
    got = parse_slice(int.from_bytes(data[:4], 'little'), data[4:], n, p)
    if got[0] == 'dense':
        out = got[1].astype(F)
    else:
        out = np.zeros(n, dtype=F)
        out[got[1]] = got[2]
    if average:
        out = (out / F(world)).astype(F)
    return out
