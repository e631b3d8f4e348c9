# SPDX-License-Identifier: MIT
"""topk.py - top-k with error feedback (codec "topk", SparCML) as
include/gradnet/codec.h specifies it, written from that text: selection
per chunk or per block (k = ceil(d m) in exact arithmetic, ties to the
lower index), error feedback, the index codec (index.py; the smallest
list codec per chunk for idx=auto, Bloom groups and their policies) and
the value codec (float32, float16, QSGD), the dynamic switch between the
sparse and the dense form, the exact stream bytes and the decoder with
every check that refuses a slice.

A chunk's message is described by its entries: increasing indices and
the float32 values they carry before any rounding. stream() turns
entries into the word and the body; the owner's merge is in allreduce.py.
"""
from fractions import Fraction

import numpy as np

import fit
import gnrng
import index
import qsgd
import varint
from errors import Edom, Refused

F = np.float32
SPARSE, DENSE = 0, 1
VALS = ['f32', 'f16', 'qsgd', 'fit']
F32, F16, QSGD, FIT = range(4)
# A Bloom group's body as a slice of its own, at most.
BLOOM_BYTES = 224


def f32_of_text(text):
    """The float32 nearest to a decimal string, ties to even (strtof)."""
    want = Fraction(text)
    f = F(float(want))
    best = None
    for c in (np.nextafter(f, F(-np.inf)), f, np.nextafter(f, F(np.inf))):
        d = abs(Fraction(float(c)) - want)
        even = (f32_bits(c) & 1) == 0
        if best is None or d < best[0] or (d == best[0] and even):
            best = (d, c)
    return F(best[1])


# A sparse stream's QSGD values: buckets of 128 under the max norm, unless
# the parameters say otherwise.
SPARSE_BUCKET = 128


def f32_bits(value):
    return int(np.array([value], dtype=F).view(np.uint32)[0])


class Params:
    def __init__(self, density='0.01', block=0, bits=0, bucket=0, norm='max',
                 idx='varint', fpr='0', val='f32'):
        self.density = f32_of_text(density) if isinstance(density, str) \
            else F(density)
        if not (self.density > 0 and self.density <= 1):
            raise ValueError('density=%r' % density)
        self.block = block
        self.idx = index.NAMES.index(idx)
        self.fpr_bits = f32_bits(f32_of_text(fpr)) if isinstance(fpr, str) \
            else int(fpr)
        self.val = VALS.index(val)
        if bits:
            self.val = QSGD
        # bits: QSGD's bits when the values are QSGD's, else 0.
        self.bits = (bits or 4) if self.val == QSGD else 0
        if self.bits:
            self.q = qsgd.Params(self.bits, bucket or SPARSE_BUCKET, norm)
        self.fit = bucket or 256
        self.bloom = index.Bloom(self.fpr_bits)


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
    """Error feedback and selection: (a, entries)."""
    x = np.asarray(x, dtype=F)
    with np.errstate(over='ignore', invalid='ignore'):
        a = (x + np.asarray(e, dtype=F)).astype(F)
    if not np.all(np.isfinite(a)):
        raise Edom('x + e is not finite')
    return a, select(a, p.density, p.block)


def _buckets_touched(e0, nnz, b):
    return 0 if not nnz else (e0 + nnz - 1) // b - e0 // b + 1


def bucketed(p):
    """Values in buckets: a slice says its first one's index, e0."""
    return bool(p.bits) or p.val == FIT


def head_bytes(p, e0, nnz):
    return len(varint.encode([nnz])) + (len(varint.encode([e0]))
                                        if bucketed(p) else 0)


def vals_bytes(p, e0, nnz, buckets=None):
    """Bytes of the values e0 .. e0 + nnz - 1 of a sparse slice (fit:
    with its buckets, or without, by the Bloom groups' size rule)."""
    if p.val == FIT:
        return fit.size(buckets, e0, nnz, p.fit)
    if p.val == F16:
        return 2 * nnz
    if not p.bits:
        return 4 * nnz
    return 4 * _buckets_touched(e0, nnz, p.q.bucket) + \
        qsgd.code_bytes(nnz, p.bits)


def dense_bytes(n, p):
    if p.bits:
        return qsgd.dense_bytes(n, p.bits, p.q.bucket)
    return (2 if p.val == F16 else 4) * n


def sent_values(v, p):
    """What a receiver decodes of float32 values sent (not QSGD)."""
    return index.f16_round(v) if p.val == F16 else np.asarray(v, F)


def bloom_groups(idx, vals, rest, p, hkey):
    """The sender's Bloom groups of the entries (idx, vals) and the values
    their policy gives: ([(start, span, r, filter)], positions, values)."""
    b = p.bloom
    groups, pos, out = [], [], []
    idx = [int(i) for i in idx]
    at = dict(zip(idx, np.asarray(vals, F)))
    t0 = 0
    while t0 < len(idx):
        r = min(b.gmax, len(idx) - t0)
        while True:
            ent = idx[t0:t0 + r]
            start, span = ent[0], ent[-1] - ent[0] + 1
            filt = b.fill(hkey, ent)
            nv = len(b.positives(hkey, filt, start, span)) \
                if p.idx == index.BLOOM else r
            lone = head_bytes(p, len(pos), nv) + 1 + \
                len(varint.encode([0, r, span])) + len(filt) + \
                vals_bytes(p, len(pos), nv)
            if r == 1 or lone <= BLOOM_BYTES:
                break
            r = (r + 1) // 2
        chosen = b.choose(p.idx, hkey, filt, start, span, r)
        groups.append((start, span, r, filt))
        pos += chosen
        out += [at[q] if q in at else rest[q] for q in chosen]
        t0 += r
    return groups, np.array(pos, dtype=np.int64), np.array(out, dtype=F)


def index_part(codec, pos, groups, first=0):
    if not index.is_bloom(codec):
        return index.put(codec, pos, first)
    out, end = varint.encode([len(groups)]), first
    for start, span, r, filt in groups:
        out += varint.encode([start - end, r, span]) + filt
        end = start + span
    return out


def stream(idx, vals, n, p, key, rest=None):
    """A whole chunk's stream of entries (idx, vals): its word and body,
    the n values it stands for (world 1, no average), and the positions
    that carry values with the error feedback at each. key keys QSGD's
    rounding and the Bloom salt; rest gives the values at positions that
    are not entries (a Bloom policy's false positives; 0 by default)."""
    idx = np.asarray(idx, dtype=np.int64)
    vals = np.asarray(vals, dtype=F)
    rest = np.zeros(n, dtype=F) if rest is None else np.asarray(rest, F)
    dense_b = dense_bytes(n, p)
    salt, groups = 0, None
    if index.is_bloom(p.idx):
        salt = index.salt_of(key)
        groups, pos, pv = bloom_groups(idx, vals, rest, p,
                                       gnrng.mix(salt + gnrng.G))
        codec = p.idx
    else:
        pos, pv = idx, vals
        codecs = list(index.LISTS) if p.idx == index.AUTO else [p.idx]
        sizes = [len(index.put(c, pos, 0)) for c in codecs]
        codec = codecs[sizes.index(min(sizes))]
    buckets = fit.fit(pv, p.fit) if p.val == FIT else None
    sparse_b = head_bytes(p, 0, len(pos)) + \
        len(index_part(codec, pos, groups)) + \
        vals_bytes(p, 0, len(pos), buckets)
    if sparse_b >= dense_b:
        dense = np.zeros(n, dtype=F)
        dense[idx] = vals
        if p.bits:
            body, dec = qsgd.encode_buckets(dense, key, np.arange(n), p.bits,
                                            p.q.bucket, p.q.norm)
        elif p.val == F16:
            bits = index.f16_bits(dense)
            body, dec = bits.astype('<u2').tobytes(), index.f16_values(bits)
        else:
            body, dec = dense.astype('<f4').tobytes(), dense
        err = (vals - sent_values(vals, p)).astype(F) if p.val == F16 \
            else np.zeros(len(idx), F)
        return DENSE.to_bytes(4, 'little') + body, dec, idx, err
    body = varint.encode([len(pos)])
    if bucketed(p):
        body += varint.encode([0])
    body += index_part(codec, pos, groups)
    if p.val == FIT:
        body += fit.put(buckets, 0, len(pos), p.fit)
        ev = np.concatenate([b.values for b in buckets]) if buckets else \
            np.zeros(0, F)
        err = (pv - ev).astype(F)
    elif p.bits:
        norms, codes = qsgd.quantize(pv, key, np.arange(len(pos)), p.bits,
                                     p.q.bucket, p.q.norm)
        body += norms.astype('<f4').tobytes() + qsgd.pack(codes, p.bits)
        ev = qsgd.values(norms, codes, np.arange(len(pos)) // p.q.bucket,
                         p.bits)
        err = np.zeros(len(pos), F)
    elif p.val == F16:
        bits = index.f16_bits(pv)
        body += bits.astype('<u2').tobytes()
        ev = index.f16_values(bits)
        err = (pv - ev).astype(F)
    else:
        body += pv.astype('<f4').tobytes()
        ev, err = pv, np.zeros(len(pos), F)
    dec = np.zeros(n, dtype=F)
    dec[pos] = ev
    aux = SPARSE | codec << 8 | salt << 16
    return aux.to_bytes(4, 'little') + body, dec, pos, err


def contribution(x, e, p, key):
    """A contribution: (stream, new e, what it stands for, the positions
    that carry values)."""
    a, idx = contribute(x, e, p)
    data, dec, pos, err = stream(idx, a[idx], len(a), p, key, rest=a)
    e_new = a.copy()
    e_new[pos] = err
    return data, e_new, dec, pos


def encode(x, e, p, key):
    """A contribution as gradnet-codec writes it: (stream, new e, what it
    stands for)."""
    return contribution(x, e, p, key)[:3]


def parse_slice(aux, body, n, p, first=0, count=None):
    """Check a slice's word and body: ('dense', values) or ('sparse',
    positions, values, e0), values as coded (QSGD and float16 already
    decoded to float32, world 1). Refused for anything the specification
    refuses."""
    count = n - first if count is None else count
    if aux == DENSE:
        if p.bits:
            return ('dense', qsgd.decode_buckets(body, count, p.bits,
                                                 p.q.bucket))
        return ('dense', _plain_values(body, count, p))
    codec, salt = aux >> 8 & 0xff, aux >> 16
    allowed = index.LISTS if p.idx == index.AUTO else (p.idx,)
    if aux & 0xff != SPARSE or codec not in allowed or \
            (salt and not index.is_bloom(codec)):
        raise Refused('word %#x: not a form and codec the parameters allow'
                      % aux)
    nnz, at = varint.decode_one(body, 0)
    if nnz > count:
        raise Refused('nnz %d exceeds the %d positions' % (nnz, count))
    e0 = 0
    if bucketed(p):
        e0, at = varint.decode_one(body, at)
        if e0 + nnz > n:
            raise Refused('e0 %d + nnz %d exceed the chunk of %d' % (e0, nnz, n))
    if index.is_bloom(codec):
        pos, at = _parse_groups(codec, body, at, first, count, nnz, p,
                                gnrng.mix(salt + gnrng.G))
    else:
        pos, at = index.parse(codec, body, at, first, count, nnz)
    pos = np.array(pos, dtype=np.int64)
    rest = body[at:]
    if p.val == FIT:
        return ('sparse', pos, fit.parse(rest, e0, nnz, p.fit), e0)
    if not p.bits:
        return ('sparse', pos, _plain_values(rest, nnz, p), e0)
    b = p.q.bucket
    nb = _buckets_touched(e0, nnz, b)
    if len(rest) != 4 * nb + qsgd.code_bytes(nnz, p.bits):
        raise Refused('%d value bytes for %d values' % (len(rest), nnz))
    norms = np.frombuffer(rest[:4 * nb], dtype='<f4').astype(F)
    for nv in norms:
        qsgd.check_norm(nv)
    codes, pad_ok = qsgd.unpack(rest[4 * nb:], nnz, p.bits)
    bi = (e0 + np.arange(nnz)) // b - e0 // b
    qsgd.check_codes(codes, pad_ok, p.bits, norms[bi] == 0 if nnz else None)
    return ('sparse', pos, qsgd.values(norms, codes, bi, p.bits), e0)


def _plain_values(data, m, p):
    """m float32 or float16 values, exactly the bytes, all finite."""
    width = 2 if p.val == F16 else 4
    if len(data) != width * m:
        raise Refused('%d value bytes for %d values' % (len(data), m))
    if p.val == F16:
        h = np.frombuffer(data, dtype='<u2').astype(np.int64)
        if np.any((h & 0x7c00) == 0x7c00):
            raise Refused('a float16 value is not finite')
        return index.f16_values(h)
    v = np.frombuffer(data, dtype='<f4').astype(F)
    if not np.all(np.isfinite(v)):
        raise Refused('a float32 value is not finite')
    return v


def _parse_groups(codec, body, at, first, count, nnz, p, hkey):
    b = p.bloom
    ng, at = varint.decode_one(body, at)
    if ng > (len(body) - at) // 4:
        raise Refused('%d groups in %d bytes' % (ng, len(body) - at))
    pos, end = [], first
    for _ in range(ng):
        (skip, r, span), at = _three(body, at)
        if r == 0 or r > b.gmax or span < r or \
                end + skip + span > first + count:
            raise Refused('a group of r %d, span %d, skip %d' % (r, span, skip))
        mb = b.mbytes(r)
        if mb > len(body) - at:
            raise Refused('a filter past the end')
        filt = body[at:at + mb]
        at += mb
        start = end + skip
        pos += b.choose(codec, hkey, filt, start, span, r)
        end = start + span
    if len(pos) != nnz:
        raise Refused('groups of %d values for %d' % (len(pos), nnz))
    return pos, at


def _three(body, at):
    out = []
    for _ in range(3):
        v, at = varint.decode_one(body, at)
        out.append(v)
    return out, at


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
