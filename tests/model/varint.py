# SPDX-License-Identifier: MIT
"""varint.py - the sparse streams' integers as include/gradnet/codec.h
specifies them: LEB128, 7 bits a byte, least significant first, at most 5
bytes, no superfluous final 0 byte. Vectorized: a stream holds up to a
chunk's worth of them."""
import numpy as np

from errors import Refused

MAX_BYTES = 5


def sizes(v):
    """Bytes each value of the array v takes."""
    v = np.asarray(v, dtype=np.int64)
    return 1 + sum((v >= (1 << (7 * t))).astype(np.int64)
                   for t in range(1, MAX_BYTES))


def encode(v):
    """The values of v (each 0 .. 2^32 - 1) as varints back to back."""
    v = np.asarray(v, dtype=np.int64)
    if not v.size:
        return b''
    if v.min() < 0 or v.max() > 0xffffffff:
        raise ValueError('varint out of range')
    n = sizes(v)
    t = np.arange(MAX_BYTES)
    byte = (v[:, None] >> (7 * t)) & 0x7f
    more = t[None, :] < (n[:, None] - 1)
    byte = byte | (more.astype(np.int64) << 7)
    keep = t[None, :] < n[:, None]
    return byte[keep].astype(np.uint8).tobytes()


def decode(data, at, count):
    """count varints from data[at:]: (values as int64, offset after them).
    Refused if one is cut short, runs past 5 bytes, ends in a superfluous
    0 byte or exceeds 32 bits."""
    if count == 0:
        return np.zeros(0, dtype=np.int64), at
    raw = np.frombuffer(data, dtype=np.uint8)[at:]
    ends = np.flatnonzero(raw < 0x80)
    if ends.size < count:
        raise Refused('a varint runs past the end')
    ends = ends[:count]
    starts = np.concatenate(([0], ends[:-1] + 1))
    length = ends - starts + 1
    if length.max() > MAX_BYTES:
        raise Refused('a varint is longer than %d bytes' % MAX_BYTES)
    if np.any((length > 1) & (raw[ends] == 0)):
        raise Refused('a varint ends in a superfluous 0 byte')
    pos = np.arange(ends[-1] + 1)
    owner = np.repeat(np.arange(count), length)
    shift = 7 * (pos - starts[owner])
    part = (raw[:ends[-1] + 1].astype(np.int64) & 0x7f) << shift
    vals = np.add.reduceat(part, starts)
    if vals.max() > 0xffffffff:
        raise Refused('a varint exceeds 32 bits')
    return vals, at + int(ends[-1]) + 1


def decode_one(data, at):
    v, at = decode(data, at, 1)
    return int(v[0]), at
