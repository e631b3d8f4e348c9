# SPDX-License-Identifier: MIT
"""gnrng.py - the counter-based generator of gradnet's stochastic codecs,
from the specification in include/gradnet/codec.h ("The generator"):

    mix(z)  = splitmix64's finalizer, all modulo 2^64
    seed    = mix(mix(job << 32 | tensor) ^ (step << 32 | rank << 8 | phase))
    key     = mix(seed ^ chunk_off * G)
    u(c)    = mix(key + (c + 1) * G) >> 40, U(c) = u(c) * 2^-24 (float32)

Python integers for single values, numpy uint64 arrays (which wrap modulo
2^64 without a warning) for a run of counters.
"""
import numpy as np

M64 = (1 << 64) - 1
G = 0x9e3779b97f4a7c15
_C1 = 0xbf58476d1ce4e5b9
_C2 = 0x94d049bb133111eb


def mix(z):
    """splitmix64's finalizer of one integer, modulo 2^64."""
    z &= M64
    z = ((z ^ (z >> 30)) * _C1) & M64
    z = ((z ^ (z >> 27)) * _C2) & M64
    return z ^ (z >> 31)


def seed(job, tensor, step, rank, phase):
    """The seed of one message: phase 0 a contribution, 1 a result."""
    return mix(mix(job << 32 | tensor) ^ (step << 32 | rank << 8 | phase))


def key(seed_, chunk_off):
    """A chunk's key: chunk_off is its first element in the tensor."""
    return mix(seed_ ^ (chunk_off * G & M64))


def _mix_array(z):
    z = (z ^ (z >> np.uint64(30))) * np.uint64(_C1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(_C2)
    return z ^ (z >> np.uint64(31))


def u24(key_, counters):
    """u(c) for an array of counters c, as int64 in [0, 2^24)."""
    c = np.asarray(counters, dtype=np.uint64)
    with np.errstate(over='ignore'):
        z = np.uint64(key_) + (c + np.uint64(1)) * np.uint64(G)
        return (_mix_array(z) >> np.uint64(40)).astype(np.int64)


def uniform(key_, counters):
    """U(c) = u(c) * 2^-24, exact in float32."""
    return (u24(key_, counters).astype(np.float32) *
            np.float32(2.0 ** -24)).astype(np.float32)
