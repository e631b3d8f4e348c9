# SPDX-License-Identifier: MIT
"""index.py - the index codecs of sparse streams and float16 values, as
include/gradnet/codec.h specifies them ("Index codecs", "Bloom groups",
"Float16"), written from that text: position lists as delta varints, a
bitmap or bit-packed run lengths, and Bloom groups with the filter's size
in fixed point, the hash probes of the generator, and the policies P0,
P1 and P2 that the sender and the receiver both run.

A list codec's part is made by put() and read back by parse(), which
refuses what the specification refuses. Bloom groups are made by
Bloom.group_bytes() and friends; Bloom.choose() gives a group's positions.
"""
import numpy as np

import gnrng
import varint
from errors import Refused

VARINT, BITMAP, RLE, BLOOM, BLOOM_P1, BLOOM_P2 = range(6)
AUTO = 6
NAMES = ['varint', 'bitmap', 'rle', 'bloom', 'bloom-p1', 'bloom-p2', 'auto']
LISTS = (VARINT, BITMAP, RLE)
M64 = gnrng.M64
G = gnrng.G

GROUP_MAX = 64
FILTER_MAX = 128
FPR_DEFAULT = 0x3a83126f


def is_bloom(codec):
    return codec in (BLOOM, BLOOM_P1, BLOOM_P2)


def bitlen(v):
    return int(v).bit_length()


# ---- float16 -------------------------------------------------------------

def f16_bits(values):
    """binary16 bits of float32 values: nearest, ties to even, magnitudes
    that would round past 65504 clamped to it."""
    v = np.asarray(values, dtype=np.float32)
    with np.errstate(over='ignore'):
        h = v.astype(np.float16).view(np.uint16).astype(np.int64)
    inf = (h & 0x7fff) == 0x7c00
    h[inf] = (h[inf] & 0x8000) | 0x7bff
    return h


def f16_values(bits):
    """float32 values of binary16 bits (exact)."""
    return np.asarray(bits, dtype=np.uint16).view(np.float16).astype(
        np.float32)


def f16_round(values):
    return f16_values(f16_bits(values))


# ---- position lists ------------------------------------------------------

def _runs(pos):
    """Maximal runs of consecutive positions: [(start, length)]."""
    out = []
    for p in pos:
        if out and p == out[-1][0] + out[-1][1]:
            out[-1] = (out[-1][0], out[-1][1] + 1)
        else:
            out.append((int(p), 1))
    return out


def _rle_fields(pos, first):
    runs = _runs(pos)
    gaps, lens, end = [], [], None
    for j, (s, n) in enumerate(runs):
        gaps.append(s - first if j == 0 else s - end - 2)
        lens.append(n - 1)
        end = s + n - 1
    return gaps, lens


def _pack(fields):
    """(value, width) pairs packed least significant first, padded."""
    acc, bits = 0, 0
    for v, w in fields:
        acc |= (int(v) & ((1 << w) - 1)) << bits
        bits += w
    return acc.to_bytes((bits + 7) // 8, 'little')


def put(codec, pos, first):
    """The index part of increasing positions pos from first."""
    pos = [int(p) for p in pos]
    if codec == VARINT:
        d = [p - first if j == 0 else p - pos[j - 1] - 1
             for j, p in enumerate(pos)]
        return varint.encode(d)
    if codec == BITMAP:
        b = (pos[-1] - first) // 8 + 1 if pos else 0
        bm = bytearray(b)
        for p in pos:
            bm[(p - first) // 8] |= 1 << ((p - first) % 8)
        return varint.encode([b]) + bytes(bm)
    gaps, lens = _rle_fields(pos, first)
    out = varint.encode([len(gaps)])
    if not gaps:
        return out
    wg, wo = bitlen(max(gaps)), bitlen(max(lens))
    fields = []
    for g, n in zip(gaps, lens):
        fields += [(g, wg), (n, wo)]
    return out + bytes([wg, wo]) + _pack(fields)


def parse(codec, data, at, first, count, n):
    """n positions of an index part at data[at:]: (positions, offset
    after the part). Refused as the specification says."""
    end = first + count
    if codec == VARINT:
        d, at = varint.decode(data, at, n)
        pos = first + np.cumsum(d + 1) - 1 if n else np.zeros(0, np.int64)
        if n and pos[-1] >= end:
            raise Refused('an index falls outside the slice')
        return [int(p) for p in pos], at
    if codec == BITMAP:
        b, at = varint.decode_one(data, at)
        if b > len(data) - at or 8 * b > count + 7:
            raise Refused('a bitmap of %d bytes for %d positions'
                          % (b, count))
        bits = np.unpackbits(np.frombuffer(data[at:at + b], np.uint8),
                             bitorder='little')
        pos = np.flatnonzero(bits)
        if pos.size != n:
            raise Refused('%d set bits for %d values' % (pos.size, n))
        if pos.size and pos[-1] >= count:
            raise Refused('a set bit at or past the slice\'s end')
        return [first + int(p) for p in pos], at + b
    k, at = varint.decode_one(data, at)
    if k > n or (k == 0 and n):
        raise Refused('%d runs for %d values' % (k, n))
    if k == 0:
        return [], at
    if len(data) - at < 2:
        raise Refused('rle widths cut short')
    wg, wo = data[at], data[at + 1]
    at += 2
    nbytes = (k * (wg + wo) + 7) // 8
    if wg > 32 or wo > 32 or nbytes > len(data) - at:
        raise Refused('rle widths %d, %d or runs past the end' % (wg, wo))
    acc = int.from_bytes(data[at:at + nbytes], 'little')
    pos, p, bit = [], first, 0
    for j in range(k):
        gap = (acc >> bit) & ((1 << wg) - 1)
        run = ((acc >> (bit + wg)) & ((1 << wo) - 1)) + 1
        bit += wg + wo
        p += gap + (1 if j else 0)
        if p + run > end:
            raise Refused('a run past the slice')
        pos += range(p, p + run)
        p += run
    if len(pos) != n:
        raise Refused('runs of %d values for %d' % (len(pos), n))
    if acc >> bit:
        raise Refused('nonzero padding bits')
    return pos, at + nbytes


# ---- Bloom groups --------------------------------------------------------

def draws(key, counters):
    """64-bit numbers mix(key + (c + 1) G) of the generator."""
    c = np.asarray(counters, dtype=np.uint64)
    with np.errstate(over='ignore'):
        z = np.uint64(key) + (c + np.uint64(1)) * np.uint64(G)
        return gnrng._mix_array(z)


def salt_of(key):
    """A Bloom stream's salt from the chunk's key."""
    return gnrng.mix(key + ((1 << 32) + 1) * G) >> 48


class Bloom:
    """A filter's shape from fpr's float32 bits."""

    def __init__(self, fpr_bits):
        b = fpr_bits or FPR_DEFAULT
        e = b >> 23 & 0xff
        y = ((b & 0x7fffff) | 0x800000) << 7
        f = 0
        for i in range(15, -1, -1):
            y = (y * y) >> 30
            if y >= 1 << 31:
                y >>= 1
                f += 1 << i
        self.l16 = (127 - e) * 65536 - f
        self.h = min(20, max(1, (self.l16 + 32768) >> 16))
        self.gmax = max([r for r in range(1, GROUP_MAX + 1)
                         if self.mbytes(r) <= FILTER_MAX] or [1])

    def mbytes(self, r):
        return -(-(r * self.l16 * 94548) // (1 << 35))

    def probes(self, hkey, pos, m):
        """The h probed bits of every position (array n x h)."""
        z = draws(hkey, np.asarray(pos, dtype=np.uint64))
        lo = (z & np.uint64(0xffffffff)).astype(np.uint64)
        st = ((z >> np.uint64(32)) | np.uint64(1)).astype(np.uint64)
        j = np.arange(self.h, dtype=np.uint64)
        x = (lo[:, None] + j[None, :] * st[:, None]) & np.uint64(0xffffffff)
        return ((x * np.uint64(m)) >> np.uint64(32)).astype(np.int64)

    def fill(self, hkey, entries):
        r = len(entries)
        m = 8 * self.mbytes(r)
        bits = np.zeros(m, dtype=np.uint8)
        if r:
            bits[self.probes(hkey, entries, m).ravel()] = 1
        return np.packbits(bits, bitorder='little').tobytes()

    def positives(self, hkey, filt, start, span):
        m = 8 * len(filt)
        bits = np.unpackbits(np.frombuffer(filt, np.uint8), bitorder='little')
        q = np.arange(start, start + span, dtype=np.int64)
        if not m:
            return []
        ok = bits[self.probes(hkey, q, m)].all(axis=1)
        return [int(v) for v in q[ok]]

    def choose(self, policy, hkey, filt, start, span, r):
        """The positions of a group that carry values, increasing."""
        pos = self.positives(hkey, filt, start, span)
        if policy == BLOOM:
            return pos
        dkey = gnrng.mix(hkey ^ (start * G & M64))
        w = lambda c: int(draws(dkey, [c])[0]) >> 32  # noqa: E731
        if len(pos) < r:
            raise Refused('%d positives for %d entries' % (len(pos), r))

        def sample(cands, need, base):
            out, left = [], len(cands)
            for t, q in enumerate(cands):
                if need and (w(base + t) * left) >> 32 < need:
                    out.append(q)
                    need -= 1
                left -= 1
            return out

        if policy == BLOOM_P1:
            return sample(pos, r, 0)
        m = 8 * len(filt)
        bits = {}
        if pos:
            pr = self.probes(hkey, pos, m)
            bits = {q: set(int(b) for b in pr[i]) for i, q in enumerate(pos)}
        members = {}
        for q in pos:
            for b in bits[q]:
                members.setdefault(b, []).append(q)
        sure = [q for q in pos if any(len(members[b]) == 1 for b in bits[q])]
        if len(sure) >= r:
            return sample(sure, r, 0)
        taken = set(sure)
        expl = set()
        for q in sure:
            expl |= bits[q]
        t0 = (w(1 << 32) * len(pos)) >> 32
        for q in pos[t0:] + pos[:t0]:
            if len(taken) == r:
                break
            if q in taken:
                continue
            if bits[q] - expl:
                taken.add(q)
                expl |= bits[q]
        rest = [q for q in pos if q not in taken]
        taken |= set(sample(rest, r - len(taken), 2 << 32))
        return sorted(taken)
