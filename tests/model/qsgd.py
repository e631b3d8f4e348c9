# SPDX-License-Identifier: MIT
"""qsgd.py - QSGD low-precision values as include/gradnet/codec.h
specifies them ("QSGD"), written from that text: bucket norms (max, or
L2 summed in eight binary64 lanes), stochastic levels drawn from the
generator, codes with a sign bit that a zero level never carries, codes
packed least significant bit first, and the decoder with every check that
refuses a bucket. The dense codec "qsgd" is at the end.

Float work is numpy float32 (binary64 where the text says so), one
operation at a time, so every rounding is the one the specification
names.
"""
import numpy as np

import gnrng
from errors import Edom, Refused

F = np.float32
BITS = (2, 4, 8)


def levels(bits):
    """s = 2^(bits-1) - 1: the largest level."""
    return (1 << (bits - 1)) - 1


def bucket_of(bits, bucket):
    """Values per bucket: 0 means 512, or 128 at 2 bits."""
    return bucket if bucket else (128 if bits == 2 else 512)


def bucket_bounds(m, b):
    """[(start, length)] of the buckets of a sequence of m values."""
    return [(i, min(b, m - i)) for i in range(0, m, b)]


def code_bytes(m, bits):
    """Bytes of m codes packed bits each: ceil(m * bits / 8)."""
    return (m * bits + 7) // 8


def dense_bytes(m, bits, b):
    """Bytes of m values as QSGD buckets: a norm and the packed codes each."""
    return sum(4 + code_bytes(k, bits) for _, k in bucket_bounds(m, b))


def _padded(v, b):
    """The sequence as a (buckets, b) matrix, the last bucket padded with
    +0, which changes neither a maximum of |w| nor a sum of squares."""
    nb = -(-v.size // b)
    mat = np.zeros(nb * b, dtype=F)
    mat[:v.size] = v
    return mat.reshape(nb, b)


def _l2(mat):
    """(float)sqrt of each row's sum of squares: lane i sums the j = i
    mod 8 in order of j in binary64, then the lanes fold 4, 2, 1."""
    nb, b = mat.shape
    if not nb:
        return np.zeros(0, dtype=F)
    sq = np.zeros((nb, -(-b // 8) * 8), dtype=np.float64)
    sq[:, :b] = mat.astype(np.float64) * mat.astype(np.float64)
    sq = sq.reshape(nb, -1, 8)
    lanes = np.zeros((nb, 8), dtype=np.float64)
    for t in range(sq.shape[1]):
        lanes = lanes + sq[:, t, :]
    a = lanes[:, 0:4] + lanes[:, 4:8]
    c = a[:, 0:2] + a[:, 2:4]
    total = c[:, 0] + c[:, 1]
    with np.errstate(over='ignore'):
        return np.sqrt(total).astype(F)


def norms_of(v, b, kind):
    """Each bucket's norm as float32; Edom if one is not finite."""
    mat = _padded(np.asarray(v, dtype=F), b)
    if kind == 'max':
        out = np.max(np.abs(mat), axis=1).astype(F) if mat.size else \
            np.zeros(0, dtype=F)
    else:
        out = _l2(mat)
    if not np.all(np.isfinite(out)):
        raise Edom('a bucket norm is not finite')
    return out


def quantize(v, key, counters, bits, b, kind):
    """Quantize the sequence v (float32) in buckets of b values.

    counters[j] is value j's counter for the generator keyed by key.
    Return (norms float32 per bucket, codes int64 per value).
    """
    v = np.asarray(v, dtype=F)
    fs = F(levels(bits))
    norms = norms_of(v, b, kind)
    nv = norms[np.arange(v.size) // b]
    live = nv != F(0)
    with np.errstate(over='ignore', invalid='ignore', divide='ignore'):
        r = ((fs * np.abs(v)).astype(F) / nv).astype(F)
        l = np.minimum(np.floor(r), fs).astype(F)
        p = (r - l).astype(F)
    u = gnrng.uniform(key, counters)
    up = (u < p) & (l < fs) & live
    q = np.where(live, l, F(0)).astype(np.int64) + up.astype(np.int64)
    sign = (v < F(0)) & (q > 0)
    return norms, q | (sign.astype(np.int64) << (bits - 1))


def pack(codes, bits):
    """Codes packed bits each, least significant first, unused bits 0."""
    codes = np.asarray(codes, dtype=np.int64)
    if not codes.size:
        return b''
    bitv = ((codes[:, None] >> np.arange(bits)) & 1).astype(np.uint8).ravel()
    return np.packbits(bitv, bitorder='little').tobytes()


def unpack(data, m, bits):
    """m codes from their packed bytes; also whether the padding is 0."""
    raw = np.frombuffer(data, dtype=np.uint8)
    bitv = np.unpackbits(raw, bitorder='little')
    pad_ok = not bitv[m * bits:].any()
    bitv = bitv[:m * bits].reshape(m, bits).astype(np.int64)
    codes = (bitv << np.arange(bits)).sum(axis=1) if m else \
        np.zeros(0, dtype=np.int64)
    return codes, pad_ok


def values(norms, codes, bucket_index, bits, world=1, average=False):
    """What codes stand for: norm * ((float)q / (float)s), negated when
    the sign is set, then / (float)W for an averaged result.
    bucket_index[j] is the bucket (index into norms) of code j."""
    s = F(levels(bits))
    q = (codes & ((1 << (bits - 1)) - 1)).astype(F)
    neg = (codes >> (bits - 1)) & 1
    nv = np.asarray(norms, dtype=F)[bucket_index]
    v = (nv * (q / s).astype(F)).astype(F)
    v = np.where(neg.astype(bool), -v, v).astype(F)
    if average:
        v = (v / F(world)).astype(F)
    return v


def check_codes(codes, pad_ok, bits, zero_norm=None):
    """zero_norm: per code, whether its bucket's norm is +0 (None: none)."""
    if not pad_ok:
        raise Refused('padding bits are not 0')
    sign = (codes >> (bits - 1)) & 1
    level = codes & ((1 << (bits - 1)) - 1)
    if np.any((sign == 1) & (level == 0)):
        raise Refused('a code has a sign with level 0')
    if zero_norm is not None and np.any(zero_norm & (level != 0)):
        raise Refused('a level under a norm of +0')


def check_norm(nv):
    if not np.isfinite(nv) or nv < 0 or np.signbit(nv):
        raise Refused('norm %r is not finite or is negative' % nv)


def encode_buckets(v, key, counters, bits, b, kind):
    """The sequence v as QSGD buckets back to back (norm, codes) and the
    values a receiver decodes (world 1)."""
    norms, codes = quantize(v, key, counters, bits, b, kind)
    out = bytearray()
    for (start, m), nv in zip(bucket_bounds(len(v), b), norms):
        out += np.array([nv], dtype='<f4').tobytes()
        out += pack(codes[start:start + m], bits)
    idx = np.arange(len(v)) // b
    return bytes(out), values(norms, codes, idx, bits)


def decode_buckets(body, m, bits, b, world=1, average=False):
    """Decode m values of QSGD buckets back to back; Refused if malformed."""
    if len(body) != dense_bytes(m, bits, b):
        raise Refused('%d bytes, %d values of buckets take %d'
                      % (len(body), m, dense_bytes(m, bits, b)))
    norms, allc, at = [], [], 0
    for start, k in bucket_bounds(m, b):
        nv = np.frombuffer(body[at:at + 4], dtype='<f4')[0].astype(F)
        check_norm(nv)
        at += 4
        nb = code_bytes(k, bits)
        codes, pad_ok = unpack(body[at:at + nb], k, bits)
        check_codes(codes, pad_ok, bits, np.full(k, nv == 0))
        at += nb
        norms.append(nv)
        allc.append(codes)
    codes = np.concatenate(allc) if allc else np.zeros(0, dtype=np.int64)
    return values(norms, codes, np.arange(m) // b, bits, world, average)


class Params:
    def __init__(self, bits=4, bucket=0, norm='l2'):
        if bits not in BITS:
            raise ValueError('bits=%r' % bits)
        self.bits = bits
        self.bucket = bucket_of(bits, bucket)
        self.norm = norm


def encode(x, key, p):
    """Codec "qsgd" on a chunk x: (stream, decoded values). The stream is
    the chunk's word (0) then its buckets; counters are value indices."""
    x = np.asarray(x, dtype=F)
    if not np.all(np.isfinite(x)):
        raise Edom('a value is not finite')
    body, dec = encode_buckets(x, key, np.arange(x.size), p.bits, p.bucket,
                               p.norm)
    return b'\0\0\0\0' + body, dec


def decode(stream, n, p, world=1, average=False):
    if len(stream) < 4:
        raise Refused('no word')
    if stream[:4] != b'\0\0\0\0':
        raise Refused('the word of a qsgd chunk is 0')
    return decode_buckets(stream[4:], n, p.bits, p.bucket, world, average)
