# SPDX-License-Identifier: MIT
"""models.py - the models by codec name, behind one interface, and spec
strings ("topk:density=0.01,bits=4") parsed as gradnet-codec and
GN_CODEC take them. A codec the registry has and this table lacks has
no model: the conformance suite fails on it rather than skip it."""
import numpy as np

import cltk
import gnrng
import qsgd
import tlc
import topk

F = np.float32


def parse_spec(text):
    """(name, {key: text}) of NAME[:KEY=VALUE,...]."""
    name, _, rest = text.partition(':')
    kv = {}
    for item in filter(None, rest.split(',')):
        k, _, v = item.partition('=')
        kv[k.strip()] = v.strip()
    return name.strip(), kv


class Codec:
    """One codec's model. encode() returns (stream, new error feedback or
    None, the values the stream stands for); decode() raises Refused."""
    name = None
    ef = False

    def __init__(self, kv):
        self.kv = kv


class Dense(Codec):
    name = 'none'

    def encode(self, x, e, key):
        data = tlc.dense_encode(x)
        return data, None, np.asarray(x, F)

    def decode(self, data, n, world=1, average=False):
        return tlc.dense_decode(data, n, world, average)


class Tlc(Codec):
    name = '3lc'
    ef = True

    def __init__(self, kv):
        super().__init__(kv)
        self.s = topk.f32_of_text(kv.get('s', '1'))

    def encode(self, x, e, key):
        return tlc.encode(x, e, self.s)

    def decode(self, data, n, world=1, average=False):
        return tlc.decode(data, n, world, average)


class Qsgd(Codec):
    name = 'qsgd'

    def __init__(self, kv):
        super().__init__(kv)
        self.p = qsgd.Params(int(kv.get('bits', 4)), int(kv.get('bucket', 0)),
                             kv.get('norm', 'l2'))

    def encode(self, x, e, key):
        data, dec = qsgd.encode(x, key, self.p)
        return data, None, dec

    def decode(self, data, n, world=1, average=False):
        return qsgd.decode(data, n, self.p, world, average)


class Topk(Codec):
    name = 'topk'
    ef = True

    def __init__(self, kv):
        super().__init__(kv)
        self.p = topk.Params(kv.get('density', '0.01'),
                             int(kv.get('block', 0)), int(kv.get('bits', 0)),
                             int(kv.get('bucket', 0)), kv.get('norm', 'max'),
                             kv.get('idx', 'varint'), kv.get('fpr', '0'),
                             kv.get('val', 'f32'))

    def encode(self, x, e, key):
        return topk.encode(x, e, self.p, key)

    def decode(self, data, n, world=1, average=False):
        return topk.decode(data, n, self.p, world, average)


class Cltk(Codec):
    """A one-chunk stream is the chunk's leader's, at step 0 (gradnet-codec
    without --step)."""
    name = 'cltk'
    ef = True

    def __init__(self, kv):
        super().__init__(kv)
        self.p = cltk.Params(kv.get('density', '0.01'), kv.get('beta', '1'),
                             int(kv.get('warmup', 0)), int(kv.get('bits', 0)),
                             int(kv.get('bucket', 0)), kv.get('norm', 'max'))

    def encode(self, x, e, key):
        return cltk.encode(x, e, self.p, key)

    def decode(self, data, n, world=1, average=False):
        return cltk.decode(data, n, self.p, world, average)


MODELS = {c.name: c for c in (Dense, Tlc, Qsgd, Topk, Cltk)}


def model(spec):
    """The model of a spec string; KeyError for a codec without one."""
    name, kv = parse_spec(spec)
    return MODELS[name](kv)


def stream_key(k):
    """The key of a gradnet-codec stream encoded with --seed K."""
    return gnrng.key(k, 0)
