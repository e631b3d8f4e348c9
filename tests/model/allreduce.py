# SPDX-License-Identifier: MIT
"""allreduce.py - gradnet's sharded allreduce of one tensor, modelled
with numpy for every codec: what every rank ends each step with.

A tensor of n values on W ranks: rank j owns shard j, [lo_j, lo_{j+1})
with lo_j = floor(n j / W), cut into chunks of the job's chunk size from
the shard's start. For each chunk, every other rank encodes its values
(with its error feedback where the codec keeps it; stochastic codecs with
the key of (job, tensor, step, rank, phase 0) at the chunk's offset); the
owner starts the sum with its own share (its raw values for none, 3lc and
qsgd; for topk what its own encoding stands for) and adds the others'
contributions in rank order. The owner then turns the sum into the result
(dense: the sum; 3lc: quantized with the owner's result error feedback;
qsgd: quantized with the owner's key, phase 1; topk: the sum's nonzero
values as entries, with the tensor's index and value codecs, in the
smaller form, QSGD values and Bloom salts drawn with the owner's key) and every rank, the owner included, decodes that result,
divided by W for an average. Steps are numbered from 1.

cltk differs in who selects: chunk g (the tensor's chunks numbered in
order) has a leader at step s (s = the step - 1), rank (s + g) mod W,
which selects the set from its own x + m; every rank, the owner too,
contributes its values at that set and updates its memory; the owner's
sum at the set is the result (QSGD values drawn anew with its key).
"""
import numpy as np

import cltk
import gnrng
import models
import qsgd
import tlc
import topk

F = np.float32


def shards(n, world):
    return [n * j // world for j in range(world + 1)]


def chunks(n, world, chunk):
    """(owner, offset, length) of every chunk of the tensor."""
    lo = shards(n, world)
    return [(j, off, min(chunk, lo[j + 1] - off))
            for j in range(world) for off in range(lo[j], lo[j + 1], chunk)]


class Tensor:
    """One registered tensor: its codec and the state it keeps per rank."""

    def __init__(self, spec, n, world, chunk, job, tensor, average):
        self.codec = models.model(spec)
        self.n, self.world, self.chunk = n, world, chunk
        self.job, self.tensor, self.average = job, tensor, average
        self.step = 0
        ef = self.codec.ef
        self.e = [np.zeros(n, dtype=F) for _ in range(world)] if ef else None
        # 3LC's owner keeps an error buffer of its results (its shard).
        self.e_result = np.zeros(n, dtype=F)

    def _key(self, rank, phase, off):
        return gnrng.key(gnrng.seed(self.job, self.tensor, self.step, rank,
                                    phase), off)

    def allreduce(self, grads):
        """One step: grads[r] is rank r's gradient; return the result
        every rank ends with."""
        self.step += 1
        out = np.zeros(self.n, dtype=F)
        reduce = getattr(self, '_' + self.codec.name.replace('3lc', 'tlc'))
        for g, (owner, off, ln) in enumerate(chunks(self.n, self.world,
                                                     self.chunk)):
            sl = slice(off, off + ln)
            self.g = g
            out[sl] = reduce(owner, off, sl, [np.asarray(g, F)[sl]
                                              for g in grads])
        return out

    def _others(self, owner):
        return [r for r in range(self.world) if r != owner]

    def _none(self, owner, off, sl, g):
        acc = g[owner].copy()
        for r in self._others(owner):
            acc = (acc + g[r]).astype(F)
        return (acc / F(self.world)).astype(F) if self.average else acc

    def _tlc(self, owner, off, sl, g):
        s = self.codec.s
        acc = g[owner].copy()
        for r in self._others(owner):
            q, m, self.e[r][sl] = tlc.quantize(g[r], self.e[r][sl], s)
            acc = np.where(q > 0, acc + m, np.where(q < 0, acc - m, acc))
            acc = acc.astype(F)
        q, m, self.e_result[sl] = tlc.quantize(acc, self.e_result[sl], s)
        return tlc.trit_values(q, m, self.world, self.average)

    def _qsgd(self, owner, off, sl, g):
        p = self.codec.p
        acc = g[owner].copy()
        for r in self._others(owner):
            _, dec = qsgd.encode(g[r], self._key(r, 0, off), p)
            acc = (acc + dec).astype(F)
        norms, codes = qsgd.quantize(acc, self._key(owner, 1, off),
                                     np.arange(acc.size), p.bits, p.bucket,
                                     p.norm)
        return qsgd.values(norms, codes, np.arange(acc.size) // p.bucket,
                           p.bits, self.world, self.average)

    def _topk(self, owner, off, sl, g):
        p = self.codec.p
        ln = g[owner].size
        acc = None
        for r in [owner] + self._others(owner):
            data, self.e[r][sl], dec, pos = topk.contribution(
                g[r], self.e[r][sl], p, self._key(r, 0, off))
            if acc is None:
                acc = dec.copy()
            elif data[0] == topk.DENSE:
                acc = (acc + dec).astype(F)
            else:
                acc[pos] = (acc[pos] + dec[pos]).astype(F)
        idx = np.flatnonzero(acc.view(np.uint32) != 0)
        _, res, _, _ = topk.stream(idx, acc[idx], ln, p,
                                   self._key(owner, 1, off), rest=acc)
        return (res / F(self.world)).astype(F) if self.average else res

    def _cltk(self, owner, off, sl, g):
        p = self.codec.p
        s, ln = self.step - 1, g[owner].size
        idx = None
        if cltk.set_len(p, s, ln) < ln:
            lead = cltk.leader(s, self.g, self.world)
            idx = cltk.select(g[lead], self.e[lead][sl], p)
        at = np.arange(ln) if idx is None else idx
        acc = np.zeros(ln, dtype=F)
        for r in [owner] + self._others(owner):
            v, self.e[r][sl] = cltk.contribute(g[r], self.e[r][sl], p, idx)
            _, dec = cltk.values(v, p, self._key(r, 0, off))
            # The owner's share is its values as they stand; others add.
            acc[at] = dec if r == owner else (acc[at] + dec).astype(F)
        _, res = cltk.values(acc[at], p, self._key(owner, 1, off))
        out = np.zeros(ln, dtype=F)
        out[at] = (res / F(self.world)).astype(F) if self.average else res
        return out
