# SPDX-License-Identifier: MIT
"""fit.py - curve-fitted values of sparse streams as include/gradnet/codec.h
specifies them ("Fit values"), written from that text: a bucket's
magnitudes ranked, knots where the sorted curve lies farthest from its
chord, degree-5 Bernstein control points by least squares in binary64
(Python floats, each operation in the order the text gives), clamped and
rounded to float32, the curve evaluated by de Casteljau in float32, and
the bucket headers and codes with every check that refuses them.
"""
import numpy as np

from errors import Refused

F = np.float32
SEGS, MINSEG, CPS = 4, 16, 6
CP_MAX = np.array([0x7effffff], dtype=np.uint32).view(F)[0]
HDR_MAX = 3 + 2 * (SEGS - 1) + 4 * CPS * SEGS


def rank_bits(m):
    return (m - 1).bit_length() if m > 1 else 0


def hdr_bytes(segs):
    return 3 + 2 * (segs - 1) + 4 * CPS * segs


def _knots(y):
    m = len(y)
    knots, a = [0], 0
    while len(knots) < SEGS and m - a >= 2 * MINSEG:
        ya, ye = float(y[a]), float(y[m - 1])
        best, at = 0.0, None
        for t in range(a + MINSEG, m - MINSEG + 1):
            line = ya + (ye - ya) * ((t - a) / (m - 1 - a))
            d = abs(float(y[t]) - line)
            if d > best:
                best, at = d, t
        if at is None:
            break
        knots.append(at)
        a = at
    return knots + [m]


def _basis(u):
    v = 1.0 - u
    u2 = u * u
    u3 = u2 * u
    u4 = u3 * u
    v2 = v * v
    v3 = v2 * v
    v4 = v3 * v
    return [v4 * v, 5.0 * (u * v4), 10.0 * (u2 * v3), 10.0 * (u3 * v2),
            5.0 * (u4 * v), u4 * u]


def _segment(y, k, n):
    top = min(F(y[k]), CP_MAX)
    if n < CPS:
        c = [F(y[k + i * (n - 1) // 5]) for i in range(CPS)]
    else:
        a = [[0.0] * CPS for _ in range(CPS)]
        r = [0.0] * CPS
        for t in range(n):
            b = _basis(t / (n - 1))
            yt = float(y[k + t])
            for i in range(CPS):
                for j in range(i, CPS):
                    a[i][j] = a[i][j] + b[i] * b[j]
                r[i] = r[i] + b[i] * yt
        for i in range(CPS):
            for j in range(i):
                a[i][j] = a[j][i]
        for p in range(CPS):
            for i in range(p + 1, CPS):
                f = a[i][p] / a[p][p]
                for j in range(p, CPS):
                    a[i][j] = a[i][j] - f * a[p][j]
                r[i] = r[i] - f * r[p]
        x = [0.0] * CPS
        for i in range(CPS - 1, -1, -1):
            s = r[i]
            for j in range(i + 1, CPS):
                s = s - a[i][j] * x[j]
            x[i] = s / a[i][i]
        with np.errstate(over='ignore'):
            c = [F(v) for v in x]
    return [F(0) if not v >= 0 else (top if v > top else F(v)) for v in c]


def curve(c, r, k, n):
    """The curve of control points c at rank r of a segment [k, k + n)."""
    u = F(F(r - k) / F(n - 1)) if n > 1 else F(0)
    omu = F(F(1) - u)
    b = [F(v) for v in c]
    for lvl in range(1, CPS):
        for i in range(CPS - lvl):
            b[i] = F(F(omu * b[i]) + F(u * b[i + 1]))
    return b[0]


class Bucket:
    """A fitted bucket: its count, knots, control points, and per value
    its rank and what it decodes to."""

    def __init__(self, w):
        w = np.asarray(w, dtype=F)
        self.m = m = w.size
        mag = np.abs(w)
        order = sorted(range(m), key=lambda j: (-float(mag[j]), j))
        self.rank = np.empty(m, dtype=np.int64)
        self.rank[order] = np.arange(m)
        y = mag[order]
        self.knots = _knots(y)
        self.c = [_segment(y, self.knots[s], self.knots[s + 1] -
                           self.knots[s]) for s in range(len(self.knots) - 1)]
        sign = (w.view(np.uint32) >> 31).astype(np.int64)
        self.sign = sign
        self.values = np.array([self.value(int(self.rank[j]), int(sign[j]))
                                for j in range(m)], dtype=F)

    def value(self, r, sign):
        s = max(i for i in range(len(self.knots) - 1) if self.knots[i] <= r)
        k, n = self.knots[s], self.knots[s + 1] - self.knots[s]
        y = curve(self.c[s], r, k, n)
        return F(-y) if sign else y

    def header(self):
        segs = len(self.knots) - 1
        out = (self.m - 1).to_bytes(2, 'little') + bytes([segs])
        out += b''.join(k.to_bytes(2, 'little') for k in self.knots[1:-1])
        return out + np.array(self.c, dtype='<f4').tobytes()


def fit(values, bucket):
    """Buckets of a value sequence."""
    v = np.asarray(values, dtype=F)
    return [Bucket(v[i:i + bucket]) for i in range(0, v.size, bucket)]


def touched(e0, n, bucket):
    return range(e0 // bucket, (e0 + n - 1) // bucket + 1) if n else range(0)


def size(buckets, e0, n, bucket):
    """Bytes of the values e0 .. e0 + n - 1 of a slice; buckets None for
    the sender's size rule (headers at their largest, full widths)."""
    nbytes, bits = 0, 0
    for b in touched(e0, n, bucket):
        lo, hi = max(b * bucket, e0), min((b + 1) * bucket, e0 + n)
        m = buckets[b].m if buckets else bucket
        nbytes += hdr_bytes(len(buckets[b].knots) - 1) if buckets else HDR_MAX
        bits += (hi - lo) * (rank_bits(m) + 1)
    return nbytes + (bits + 7) // 8


def put(buckets, e0, n, bucket):
    out = b''.join(buckets[b].header() for b in touched(e0, n, bucket))
    acc, bit = 0, 0
    for j in range(e0, e0 + n):
        bk = buckets[j // bucket]
        w = rank_bits(bk.m)
        i = j - (j // bucket) * bucket
        acc |= (int(bk.rank[i]) | int(bk.sign[i]) << w) << bit
        bit += w + 1
    return out + acc.to_bytes((bit + 7) // 8, 'little')


def parse(data, e0, n, bucket):
    """The n values of a fitted slice part (all of data), decoded."""
    heads, at = [], 0
    for b in touched(e0, n, bucket):
        if len(data) - at < 3:
            raise Refused('a fit header cut short')
        m = int.from_bytes(data[at:at + 2], 'little') + 1
        segs = data[at + 2]
        if m > bucket or segs == 0 or segs > SEGS or \
                hdr_bytes(segs) > len(data) - at:
            raise Refused('a fit header of m %d, %d segments' % (m, segs))
        knots = [int.from_bytes(data[at + 3 + 2 * i:at + 5 + 2 * i],
                                'little') for i in range(segs - 1)]
        if any(k <= p for k, p in zip(knots, [0] + knots)) or \
                any(k >= m for k in knots):
            raise Refused('fit knots %r for %d values' % (knots, m))
        o = at + 3 + 2 * (segs - 1)
        bits = np.frombuffer(data[o:o + 24 * segs], dtype='<u4')
        if np.any(bits > 0x7effffff):
            raise Refused('a control point is negative, huge or not finite')
        c = bits.astype(np.uint32).view(F).reshape(segs, CPS)
        last = (e0 + n - 1) // bucket == b
        if last and (e0 + n - 1) % bucket >= m:
            raise Refused('a value past its bucket\'s %d' % m)
        if not last and m != bucket:
            raise Refused('a bucket of %d values before the last' % m)
        heads.append((m, [0] + knots + [m], c))
        at += hdr_bytes(segs)
    widths = [rank_bits(heads[j // bucket - e0 // bucket][0]) + 1
              for j in range(e0, e0 + n)]
    if len(data) - at != (sum(widths) + 7) // 8:
        raise Refused('%d code bytes for %d bits' % (len(data) - at,
                                                     sum(widths)))
    acc = int.from_bytes(data[at:], 'little')
    out, bit = [], 0
    for j, wd in zip(range(e0, e0 + n), widths):
        m, knots, c = heads[j // bucket - e0 // bucket]
        code = (acc >> bit) & ((1 << wd) - 1)
        bit += wd
        r, sign = code & ((1 << (wd - 1)) - 1), code >> (wd - 1)
        if r >= m:
            raise Refused('rank %d of %d' % (r, m))
        s = max(i for i in range(len(knots) - 1) if knots[i] <= r)
        y = curve(c[s], r, knots[s], knots[s + 1] - knots[s])
        out.append(F(-y) if sign else y)
    if acc >> bit:
        raise Refused('nonzero padding bits')
    return np.array(out, dtype=F)
