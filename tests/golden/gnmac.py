# SPDX-License-Identifier: MIT
"""gradnet's packet MAC in plain Python, written from its description in
lib/wire/mac.c and lib/wire/siphash.c (and the SipHash paper), not from the
C code: slow and obvious, for the generators of tests/golden/ only.

    tag(key, msg) = SipHash-2-4_P(le64(NH1) | le64(NH2) | le64(len(msg)))

where P and the NH key words k come from the 16-byte job key J by
SipHash-2-4_J(b"gradnet " | le64(i)): i = 0, 1 give P, i = 2, 3, ... give
k[0..1], k[2..3], ... (low half first). NH1 and NH2 are NH over the message
zero-padded to 8-byte pairs, read as little-endian 32-bit words, with key
words k[0..] and k[4..] respectively.
"""
import struct

MASK32 = (1 << 32) - 1
MASK64 = (1 << 64) - 1

MAX_PKT = 9000                  # GN_WIRE_MAX_PKT
NH_WORDS = MAX_PKT // 4 + 8 + 4  # struct gn_mac's nh[]: GN_MAC_NH_WORDS + 4


def _rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & MASK64


def _sipround(v):
    v0, v1, v2, v3 = v
    v0 = (v0 + v1) & MASK64
    v1 = _rotl(v1, 13) ^ v0
    v0 = _rotl(v0, 32)
    v2 = (v2 + v3) & MASK64
    v3 = _rotl(v3, 16) ^ v2
    v0 = (v0 + v3) & MASK64
    v3 = _rotl(v3, 21) ^ v0
    v2 = (v2 + v1) & MASK64
    v1 = _rotl(v1, 17) ^ v2
    v2 = _rotl(v2, 32)
    return [v0, v1, v2, v3]


def siphash24(k0, k1, msg):
    """SipHash-2-4 of bytes msg under the key (k0, k1), as in the paper."""
    v = [k0 ^ 0x736f6d6570736575, k1 ^ 0x646f72616e646f6d,
         k0 ^ 0x6c7967656e657261, k1 ^ 0x7465646279746573]
    tail = len(msg) % 8
    body = len(msg) - tail
    blocks = [struct.unpack_from('<Q', msg, i)[0] for i in range(0, body, 8)]
    last = bytes(msg[body:]) + bytes(7 - tail) + bytes([len(msg) & 0xff])
    blocks.append(struct.unpack('<Q', last)[0])
    for m in blocks:
        v[3] ^= m
        v = _sipround(_sipround(v))
        v[0] ^= m
    v[2] ^= 0xff
    for _ in range(4):
        v = _sipround(v)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


# Anchors from the SipHash paper (Aumasson and Bernstein, appendix A) and
# the first entries of its reference implementation's table: key 00..0f,
# message 00 01 .. (n - 1).
SIP_KEY = (0x0706050403020100, 0x0f0e0d0c0b0a0908)
SIP_ANCHORS = {15: 0xa129ca6149be45e5, 0: 0x726fdb47dd0e0e31,
               1: 0x74f839c593dc67fd}


def check_anchors():
    for n, want in SIP_ANCHORS.items():
        got = siphash24(*SIP_KEY, bytes(range(n)))
        if got != want:
            raise SystemExit('siphash24 of %d bytes: %016x, published %016x'
                             % (n, got, want))


class Mac:
    """A job key expanded: prf (two u64) and nh (NH_WORDS u32)."""

    def __init__(self, key):
        assert len(key) == 16
        j = struct.unpack('<QQ', key)

        def derive(i):
            return siphash24(j[0], j[1], b'gradnet ' + struct.pack('<Q', i))
        def derive_kdf(i):
            return siphash24(j[0], j[1], b'gradkdf ' + struct.pack('<Q', i))
        self.prf = (derive(0), derive(1))
        self.kdf = ((derive_kdf(0), derive_kdf(1)),
                    (derive_kdf(2), derive_kdf(3)))
        self.nh = []
        for i in range(NH_WORDS // 2):
            w = derive(2 + i)
            self.nh += [w & MASK32, w >> 32]

    def nh_passes(self, msg):
        """(NH1, NH2) of msg: key offset 0 and 4 words."""
        padded = bytes(msg) + bytes(-len(msg) % 8)
        w = struct.unpack('<%dI' % (len(padded) // 4), padded)
        k = self.nh
        h1 = h2 = 0
        for i in range(len(w) // 2):
            h1 += ((w[2 * i] + k[2 * i]) & MASK32) * \
                  ((w[2 * i + 1] + k[2 * i + 1]) & MASK32)
            h2 += ((w[2 * i] + k[2 * i + 4]) & MASK32) * \
                  ((w[2 * i + 1] + k[2 * i + 5]) & MASK32)
        return h1 & MASK64, h2 & MASK64

    def tag(self, msg):
        assert len(msg) <= MAX_PKT
        h1, h2 = self.nh_passes(msg)
        return siphash24(self.prf[0], self.prf[1],
                         struct.pack('<QQQ', h1, h2, len(msg)))

    def session_key(self, info):
        """The 16-byte session key of a run: SipHash under K0 and K1."""
        return struct.pack('<QQ', siphash24(*self.kdf[0], info),
                           siphash24(*self.kdf[1], info))


def session_info(job, world, version, instances):
    """What a session key is bound to, as lib/delivery/peer.c lays it out."""
    assert len(instances) == world
    return (struct.pack('<IHBB', job, world, version, 0) +
            b''.join(struct.pack('<Q', i) for i in instances))
