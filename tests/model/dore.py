# SPDX-License-Identifier: MIT
"""dore.py - gradnet's model-updating step of one model tensor, modelled
with numpy from include/gradnet/codec.h ("The model-updating step") and
doc's COMPRESSORS.md (DORE): what every rank's parameters are after each
step, with DORE (residuals h_i, h and model error e; alpha, beta, eta) or
without it (each direction's codec with its own error feedback: 3LC's
push/pull), SGD with momentum and weight decay applied by the owner of
each shard.

W ranks; rank j owns shard j, cut into chunks as an allreduce's tensor
(allreduce.chunks()). Q_U and Q_D are the codecs' contribution encodings
and the values their streams stand for; the owner's sum starts with its
own contribution and adds the others' in rank order as the codec's
decoder adds them. Float work is float32, one operation at a time.
"""
import numpy as np

import allreduce
import gnrng
import models
import topk

F = np.float32
DORE_QUANTIZER = "qsgd:bits=2,bucket=256,norm=max"


def quantize(codec, v, e, key):
    """Q(v) of one chunk: (the values its stream stands for, the
    positions an owner's add touches, the codec's new error or None)."""
    v = np.asarray(v, F)
    if codec.name == 'topk':
        data, e_new, dec, pos = topk.contribution(v, e, codec.p, key)
        if data[0] == topk.DENSE:
            touch = np.ones(v.size, dtype=bool)
        else:
            touch = np.zeros(v.size, dtype=bool)
            touch[pos] = True
        return dec, touch, e_new
    _, e_new, dec = codec.encode(v, e, key)
    if codec.name == '3lc':
        # Only the nonzero trits are added.
        return dec, dec != 0, e_new
    return dec, np.ones(v.size, dtype=bool), e_new


class Model:
    """One model tensor on W ranks: its state per rank and owner, and the
    parameters every rank holds (one array: they are equal)."""

    def __init__(self, up, down, n, world, chunk, job, tensor, x0,
                 dore=False, alpha=0.1, beta=1.0, eta=0.5, momentum=0.0,
                 weight_decay=0.0, first_step=1):
        if up is None:
            up = DORE_QUANTIZER if dore else '3lc'
        self.up = models.model(up)
        self.down = models.model(down if down is not None else up)
        self.n, self.world, self.chunk = n, world, chunk
        self.job, self.tensor = job, tensor
        self.dore = dore
        self.alpha = F(alpha) if dore else F(0)
        self.beta = F(beta) if dore else F(1)
        self.eta = F(eta) if dore else F(0)
        self.mu, self.wd = F(momentum), F(weight_decay)
        self.t = first_step - 1
        self.x = np.array(x0, dtype=F)
        z = lambda: np.zeros(n, dtype=F)  # noqa: E731
        # Rank i's residual (DORE) and its gradients' error feedback.
        self.h_i = [z() for _ in range(world)]
        self.eps_up = [z() for _ in range(world)]
        # The owners' state, each on its own shard (one array by offset).
        self.h, self.e, self.m, self.eps_down = z(), z(), z(), z()

    def _key(self, rank, phase, off):
        return gnrng.key(gnrng.seed(self.job, self.tensor, self.t, rank,
                                    phase), off)

    def _q(self, codec, v, ef, sl, key):
        """Q of a chunk with the codec's own error feedback @ef[sl] (and
        its update), or with DORE an error of zeros."""
        if not codec.ef:
            dec, touch, _ = quantize(codec, v, None, key)
            return dec, touch
        if self.dore:
            dec, touch, _ = quantize(codec, v, np.zeros(v.size, F), key)
            return dec, touch
        dec, touch, ef[sl] = quantize(codec, v, ef[sl], key)
        return dec, touch

    def skip(self):
        """A step that failed on every rank: its number is used, nothing
        else changes."""
        self.t += 1

    def step(self, grads, lr):
        """Step t with every rank's gradient: the parameters after it."""
        self.t += 1
        lr = F(lr)
        p = np.zeros(self.n, dtype=F)
        for owner, off, ln in allreduce.chunks(self.n, self.world,
                                               self.chunk):
            sl = slice(off, off + ln)
            q, touch = {}, {}
            for i in range(self.world):
                g = np.asarray(grads[i], F)[sl]
                u = (g - self.h_i[i][sl]).astype(F) if self.dore else g
                q[i], touch[i] = self._q(self.up, u, self.eps_up[i], sl,
                                         self._key(i, 0, off))
                if self.dore:
                    self.h_i[i][sl] = (self.h_i[i][sl] +
                                       (self.alpha * q[i]).astype(F)).astype(F)
            s = q[owner].copy()
            for i in range(self.world):
                if i != owner:
                    s = np.where(touch[i], (s + q[i]).astype(F), s)
            p[sl] = self._owner(owner, off, sl, s, lr)
        self.x = (self.x + (self.beta * p).astype(F)).astype(F)
        return self.x.copy()

    def _owner(self, owner, off, sl, s, lr):
        x = self.x[sl]
        d = (s / F(self.world)).astype(F)
        if self.dore:
            h = self.h[sl].copy()
            self.h[sl] = (h + (self.alpha * d).astype(F)).astype(F)
            d = (h + d).astype(F)
        if self.wd != 0:
            d = (d + (self.wd * x).astype(F)).astype(F)
        if self.mu != 0:
            d = ((self.mu * self.m[sl]).astype(F) + d).astype(F)
            self.m[sl] = d
        v = ((x - (lr * d).astype(F)).astype(F) - x).astype(F)
        if self.dore:
            v = (v + (self.eta * self.e[sl]).astype(F)).astype(F)
        pv, _ = self._q(self.down, v, self.eps_down, sl,
                        self._key(owner, 1, off))
        if self.dore:
            self.e[sl] = (v - pv).astype(F)
        return pv
