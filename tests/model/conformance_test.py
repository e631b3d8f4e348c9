#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""conformance_test.py - every codec gradnet-codec lists against its
independent numpy model (tests/model, written from the specification in
include/gradnet/codec.h), bit for bit:

- registry: every listed codec has a model; one without fails the run.
- streams: real gradients (data/gradients/mlp-small-seq) and small
  synthetic chunks (ties, zeros of both signs, denormals, a chunk shorter
  than a block) encoded over several steps and seeds, the error-feedback
  file carried from step to step: the stream bytes, the error-feedback
  file and the decoded values equal the model's, for every parameter set
  of the codec's table below.
- model-made streams (for top-k, results as an owner's exact merge makes
  them: entries of sums, none at all, -0 entries) decode in the C decoder
  to the model's values.
- hostile streams (every truncation, single-bit flips, and crafted ones:
  bad varints, indices out of range, a sign on a zero level, nonzero
  padding, norms and values that are NaN or negative): the decoder refuses
  exactly those the model refuses, exit 1 with the output file untouched,
  and decodes the others to the model's values.
- encoder refusals: a NaN or an overflowing x + e exits 1 and leaves the
  output and the error-feedback file as they were.
- QSGD is unbiased: see unbiased() for the tolerance and why it holds.
- instruction sets: the full table runs on the default (widest) kernels,
  the first four parameter sets of each codec also on every other set
  `gradnet-codec isa` lists (GN_CODEC_ISA).
- gradnet-codec never says a sanitizer found something.

usage: conformance_test.py GRADNET_CODEC DATA_DIR [--sanitized]
--sanitized, for a gradnet-codec built with ASan and UBSan (whose every
start takes far longer): two parameter sets of each codec's streams (and
SANITIZED_SETS), all of its hostile streams and refusals, the default
kernels only, no unbiasedness.
TAP on stdout; exit 0 pass, 1 fail.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import cltk  # noqa: E402
import fit  # noqa: E402
import index  # noqa: E402
import models  # noqa: E402
import qsgd  # noqa: E402
import topk  # noqa: E402
import varint  # noqa: E402
from errors import Edom, Refused  # noqa: E402

F = np.float32
TOOL = sys.argv[1]
DATA = os.path.join(sys.argv[2], 'mlp-small-seq')
SANITIZED = sys.argv[3:] == ['--sanitized']
SEEDS = (0, 1, 0x9e3779b97f4a7c15, 0xffffffffffffffff)
STEPS = (200, 201, 202)
TENSORS = ('fc1.weight', 'fc3.weight', 'fc3.bias', 'fc2.bias')


def qsgd_sets():
    return ['bits=%d%s,norm=%s' % (b, ',bucket=%d' % k if k else '', nm)
            for b in (2, 4, 8) for k in (16, 128, 512, 0)
            for nm in ('l2', 'max')]


def topk_sets():
    out = []
    for d in ('0.001', '0.01', '0.1', '1.0'):
        for blk in (0, 512):
            base = 'density=%s,block=%d' % (d, blk)
            out.append(base)
            out += ['%s,bits=%d,norm=%s' % (base, b, nm)
                    for b in (2, 4, 8) for nm in ('l2', 'max')]
    # The switch between forms at densities where QSGD values make the
    # dense form the smaller, buckets that are not the default, blocks
    # that do not divide the chunk.
    out += ['density=0.3,bits=2', 'density=0.05,bits=4,bucket=16',
            'density=0.5,block=64,bits=8,bucket=32,norm=max',
            'density=0.2,block=100,bits=2,bucket=128',
            'density=0.75', 'density=0.5,block=64']
    # Index and value codecs: every list codec and auto, every Bloom
    # policy at rates from 1e-6 to 0.5, with each value codec; densities
    # that keep them sparse, and ones that switch to dense.
    for idx in ('bitmap', 'rle', 'auto'):
        out += ['density=%s,idx=%s' % (d, idx) for d in ('0.01', '0.2')]
        out.append('density=0.05,block=512,idx=%s,bits=4' % idx)
    for idx in ('bloom', 'bloom-p1', 'bloom-p2'):
        out += ['density=0.01,idx=%s' % idx,
                'density=0.01,idx=%s,bits=4' % idx,
                'density=0.05,idx=%s,fpr=0.05,val=f16' % idx,
                'density=0.1,block=64,idx=%s,fpr=1e-6,bits=2,bucket=16'
                % idx,
                'density=0.02,idx=%s,fpr=0.5' % idx]
    # Fitted values: buckets of 16 to 1024, with each kind of index.
    out += ['density=0.01,val=fit', 'density=0.1,val=fit,bucket=16',
            'density=0.2,val=fit,bucket=1024,idx=rle',
            'density=0.05,idx=bloom,val=fit', 'density=0.7,val=fit',
            'density=0.3,block=64,idx=bloom-p2,val=fit,bucket=64']
    return out + ['density=0.01,val=f16', 'density=0.7,val=f16',
                  'density=0.05,val=qsgd', 'density=0.3,idx=bloom,fpr=0.2',
                  'density=0.6,idx=bloom-p2,val=f16']


def cltk_sets():
    out = []
    for d in ('0.001', '0.01', '0.1', '1.0'):
        for beta in ('1', '0.5', '0.1'):
            base = 'density=%s,beta=%s' % (d, beta)
            out.append(base)
            out += ['%s,bits=%d,norm=%s' % (base, b, nm)
                    for b in (2, 4, 8) for nm in ('l2', 'max')][::3]
    # A warm-up step (dense values, no set), buckets not the default.
    return out + ['density=0.01,warmup=1', 'density=0.05,warmup=3,bits=4',
                  'density=0.3,beta=0.75,bits=8,bucket=16',
                  'density=0.2,beta=0.999,bits=2,bucket=128']


# Parameter sets per codec, as gradnet-codec --codec NAME:SETTING takes them.
PARAMS = {
    'none': [''],
    '3lc': ['s=1', 's=1.5'],
    'qsgd': qsgd_sets(),
    'topk': topk_sets(),
    'cltk': cltk_sets(),
}


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, good, what, diag=()):
        self.n += 1
        if not good:
            self.failed += 1
        for line in diag:
            print('# ' + line)
        print('%s %d - %s' % ('ok' if good else 'not ok', self.n, what))
        sys.stdout.flush()

    def done(self):
        print('1..%d' % self.n)
        return 1 if self.failed else 0


class Tool:
    """gradnet-codec on files in a tmpfs directory (it fsyncs outputs)."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.inp = os.path.join(tmp, 'in.f32')
        self.out = os.path.join(tmp, 'out')
        self.ef = os.path.join(tmp, 'ef.f32')
        self.dec = os.path.join(tmp, 'dec.f32')
        self.reports = []
        self.isa = None

    def _run(self, args):
        env = dict(os.environ)
        if self.isa:
            env['GN_CODEC_ISA'] = self.isa
        r = subprocess.run([TOOL] + args, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env=env)
        if 'Sanitizer' in r.stderr or 'runtime error:' in r.stderr:
            self.reports.append('%s: %s' % (' '.join(args[:3]),
                                            r.stderr.strip()[:400]))
        return r.returncode, r.stderr.strip()

    def encode(self, spec, x, seed, ef=None):
        """(rc, stream or None, new ef or None, stderr). ef: the error
        feedback to start from (None: no --ef)."""
        np.asarray(x, dtype='<f4').tofile(self.inp)
        args = ['encode', '--codec', spec, '--seed', str(seed)]
        if ef is not None:
            np.asarray(ef, dtype='<f4').tofile(self.ef)
            args += ['--ef', self.ef]
        if os.path.exists(self.out):
            os.unlink(self.out)
        rc, err = self._run(args + [self.inp, self.out])
        if rc:
            return rc, None, None, err
        with open(self.out, 'rb') as f:
            data = f.read()
        e = np.fromfile(self.ef, dtype='<f4') if ef is not None else None
        return rc, data, e, err

    def decode(self, spec, n, data, sentinel=b'untouched'):
        """(rc, values or None, stderr, output untouched on failure)."""
        with open(self.out, 'wb') as f:
            f.write(data)
        with open(self.dec, 'wb') as f:
            f.write(sentinel)
        rc, err = self._run(['decode', '--codec', spec, '-n', str(n),
                             self.out, self.dec])
        with open(self.dec, 'rb') as f:
            got = f.read()
        if rc:
            return rc, None, err, got == sentinel
        return rc, np.frombuffer(got, dtype='<f4'), err, True

    def listed(self):
        r = subprocess.run([TOOL, 'list'], stdout=subprocess.PIPE, text=True)
        # A codec's line is "NAME (ID) ..."; the entropy stage's heading
        # ("every codec's entropy stage:") names none.
        return [m.group(1) for m in
                (re.match(r'(\S+) \(\d+\)', line)
                 for line in r.stdout.splitlines()) if m]


def first_diff(a, b):
    """Index of the first differing byte of two byte strings, or None."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def same_f32(a, b):
    return a is not None and b is not None and \
        np.asarray(a, '<f4').tobytes() == np.asarray(b, '<f4').tobytes()


def load(step, tensor):
    return np.fromfile(os.path.join(DATA, 'mlp-small-s%05d-%s.f32'
                                    % (step, tensor)), dtype='<f4').astype(F)


def synthetic(rng):
    """Small chunks with what breaks selection and quantization: equal
    magnitudes of both signs, zeros of both signs, denormals, one value."""
    out = [np.array([F(0.5)], dtype=F),
           np.array([1, -1, 1, -1], dtype=F),
           np.array([0.0, -0.0, 0.0, -0.0, 0.0], dtype=F),
           np.array([3e-45, -1e-40, 2.5, -2.5, 2.5, 0.0, -0.0, 1e-38,
                     -2.5, 7.0, -7.0, 1.5, 1.5, -1.5, 0.25, 1e-45, 6.0],
                    dtype=F)]
    v = rng.laplace(scale=1e-3, size=600).astype(F)
    v[::7] = v[3]                      # ties across the chunk
    v[5::11] = -v[5::11]
    v[100:140] = F(0)
    v[200:210] = -F(0)
    out.append(v)
    return out


def stream_case(tap, tool, spec, seq, seeds):
    """Encode a sequence of chunks (one per step, the error feedback
    carried) with C and the model; return the first mismatch, or None."""
    m = models.model(spec)
    e = np.zeros(seq[0].size, dtype=F) if m.ef else None
    for step, x in enumerate(seq):
        seed = seeds[step % len(seeds)]
        key = models.stream_key(seed)
        rc, data, ce, err = tool.encode(spec, x, seed, e)
        try:
            want, we, dec = m.encode(x, e, key)
        except Edom as why:
            return 'step %d: the model refuses (%s), C exits %d' % (
                step, why, rc)
        if rc:
            return 'step %d: C exits %d: %s' % (step, rc, err)
        if data != want:
            return ('step %d seed %#x: stream bytes differ at byte %s '
                    '(C %d bytes, model %d)' % (step, seed,
                                                first_diff(data, want),
                                                len(data), len(want)))
        if m.ef and ce.tobytes() != we.tobytes():
            i = int(np.flatnonzero(ce.view(np.uint32) !=
                                   we.view(np.uint32))[0])
            return ('step %d seed %#x: error feedback differs at value %d '
                    '(C %r, model %r)' % (step, seed, i, ce[i], we[i]))
        rc, got, err, _ = tool.decode(spec, x.size, data)
        if rc:
            return 'step %d: C refuses its own stream: %s' % (step, err)
        if not same_f32(got, dec):
            i = int(np.flatnonzero(got.view(np.uint32) !=
                                   dec.view(np.uint32))[0])
            return ('step %d seed %#x: decoded value %d differs (C %r, '
                    'model %r)' % (step, seed, i, got[i], dec[i]))
        try:
            again = m.decode(data, x.size)
        except Refused as why:
            return 'step %d: the model refuses its own stream: %s' % (step,
                                                                       why)
        if not same_f32(again, dec):
            return 'step %d: the model decodes its stream differently' % step
        if m.ef:
            e = we
    return None


# Under sanitizers, besides the first two sets: the code paths those miss.
SANITIZED_SETS = {
    'topk': ['density=0.1,idx=rle,val=f16',
             'density=0.05,idx=bloom-p2,fpr=0.05,bits=4',
             'density=0.1,idx=bloom-p1,val=fit,bucket=64'],
}


def streams(tap, tool, name, rng, sets=None):
    """Real and synthetic chunks through every parameter set (the first
    @sets of them if given, and under sanitizers SANITIZED_SETS)."""
    syn = synthetic(rng)
    isa = ' with GN_CODEC_ISA=%s' % tool.isa if tool.isa else ''
    chosen = PARAMS[name][:sets]
    if SANITIZED:
        chosen += SANITIZED_SETS.get(name, [])
    for setting in chosen:
        spec = name + (':' + setting if setting else '')
        bad = []
        for t in TENSORS:
            seq = [load(s, t) for s in STEPS]
            why = stream_case(tap, tool, spec, seq, SEEDS)
            if why:
                bad.append('%s: %s' % (t, why))
        for i, x in enumerate(syn):
            # Two steps of the same chunk, the second one with the error
            # feedback of the first.
            why = stream_case(tap, tool, spec, [x, x[::-1].copy()],
                              (SEEDS[(i + 1) % len(SEEDS)], 7))
            if why:
                bad.append('synthetic chunk %d (%d values): %s'
                           % (i, x.size, why))
        tap.ok(not bad, '%s%s: stream bytes, error feedback and decoded '
               'values equal the model (%d real tensors x %d steps, %d '
               'synthetic chunks)' % (spec, isa, len(TENSORS), len(STEPS),
                                      len(syn)), bad[:4])


def topk_results(tap, tool, rng):
    """Streams only an owner makes: entries of an exact merge of several
    contributions, a result with no entry, -0 entries; decoded by C."""
    for setting in ('density=0.01', 'density=0.1,bits=4',
                    'density=0.01,block=512,bits=2,norm=max',
                    'density=0.3,bits=8,bucket=16', 'density=0.4',
                    'density=0.01,idx=auto', 'density=0.05,idx=rle,val=f16',
                    'density=0.01,idx=bloom', 'density=0.02,idx=bloom-p1',
                    'density=0.02,idx=bloom-p2,fpr=0.1,bits=4',
                    'density=0.05,val=fit,bucket=64',
                    'density=0.02,idx=bloom-p1,val=fit'):
        spec = 'topk:' + setting
        p = models.model(spec).p
        bad = []
        cases = []
        for t in ('fc1.weight', 'fc3.weight', 'fc2.bias'):
            total = np.zeros(load(200, t).size, dtype=F)
            for r, s in enumerate(STEPS):
                x = load(s, t)
                a, idx = topk.contribute(x, np.zeros_like(x), p)
                part = np.zeros_like(x)
                part[idx] = a[idx]
                total = (total + part).astype(F)
            cases.append(('merge of 3 on %s' % t, total))
        cases.append(('no entry', np.zeros(300, dtype=F)))
        z = np.zeros(70, dtype=F)
        z[[3, 9, 40]] = [-0.0, 2.0, -0.0]
        cases.append(('-0 entries', z))
        for what, total in cases:
            idx = np.flatnonzero(total.view(np.uint32) != 0)
            for seed in (5, 0xfeedface):
                data, dec, _, _ = topk.stream(idx, total[idx], total.size,
                                              p, models.stream_key(seed),
                                              rest=total)
                rc, got, err, _ = tool.decode(spec, total.size, data)
                if rc or not same_f32(got, dec):
                    bad.append('%s seed %d (%s form, %d entries): %s' % (
                        what, seed, 'dense' if data[0] == 1 else 'sparse',
                        idx.size, err if rc else 'values differ at %d' %
                        int(np.flatnonzero(got.view(np.uint32) !=
                                           dec.view(np.uint32))[0])))
        tap.ok(not bad, '%s: result streams the model makes (merged '
               'entries, none, -0) decode in C to the model\'s values'
               % spec, bad[:4])


def flips(data, rng, limit):
    """Single-bit flips: all of them for a short stream, else a sample
    that always includes every bit of the first 8 bytes."""
    bits = [(i, b) for i in range(len(data)) for b in range(8)]
    if len(bits) > limit:
        head = [x for x in bits if x[0] < 8]
        rest = [x for x in bits if x[0] >= 8]
        pick = rng.choice(len(rest), size=limit - len(head), replace=False)
        bits = head + [rest[i] for i in sorted(pick)]
    for i, b in bits:
        m = bytearray(data)
        m[i] ^= 1 << b
        yield 'bit %d of byte %d flipped' % (b, i), bytes(m)


def mutations(data, rng, limit=160):
    for k in range(len(data)):
        yield 'cut to %d bytes' % k, data[:k]
    yield 'one byte appended', data + b'\0'
    yield 'a 0x80 byte appended', data + b'\x80'
    yield from flips(data, rng, limit)


def le32(v):
    return int(v).to_bytes(4, 'little')


def f32(v):
    return np.array([v], dtype='<f4').tobytes()


def crafted_topk(p, n):
    """Hand-made slices of a topk chunk of n values: (what, stream)."""
    v = varint.encode
    qs = p.bits != 0
    e0 = v([0]) if qs else b''
    if not qs:
        vals2 = f32(1.5) + f32(-2.0)
    else:
        # One bucket (two entries): norm 1, codes q=1 and q=1 with sign.
        s1 = 1 << (p.bits - 1)
        vals2 = f32(1.0) + qsgd.pack([1, 1 | s1], p.bits)
    good = le32(0) + v([2]) + e0 + v([3, 4]) + vals2
    out = [('a well-formed sparse stream', good),
           ('varint nnz of 6 bytes', le32(0) + b'\x82\x80\x80\x80\x80\x00' +
            e0 + v([3, 4]) + vals2),
           ('varint with a superfluous final 0 byte',
            le32(0) + v([2]) + e0 + b'\x83\x00' + v([4]) + vals2),
           ('varint of 5 bytes above 32 bits',
            le32(0) + v([2]) + e0 + b'\x83\x80\x80\x80\x10' + v([4]) + vals2),
           ('index at n', le32(0) + v([2]) + e0 + v([3, n - 5]) + vals2),
           ('index far past n', le32(0) + v([2]) + e0 + v([3, 0xffffffff]) +
            vals2),
           ('nnz above n', le32(0) + v([n + 1]) + e0 + v([0] * 2) + vals2),
           ('one byte left over', good + b'\0'),
           ('one value byte short', good[:-1]),
           ('word 2', le32(2) + good[4:]),
           ('word 0xffffffff', le32(0xffffffff) + good[4:]),
           ('no entry', le32(0) + v([0]) + e0),
           ('dense, one value short', le32(1) + b'\0' * (4 * n - 4)
            if not qs else le32(1) + b'\0' * 4)]
    if not qs:
        for bad in (np.nan, np.inf, -np.inf):
            out.append(('sparse value %r' % bad, le32(0) + v([2]) +
                        v([3, 4]) + f32(1.5) + f32(bad)))
        d = np.zeros(n, dtype=F)
        d[7] = np.nan
        out.append(('dense value NaN', le32(1) + d.astype('<f4').tobytes()))
        return out
    s1 = 1 << (p.bits - 1)
    for what, nv in (('NaN', np.nan), ('inf', np.inf), ('-1', -1.0),
                     ('-0', -0.0)):
        out.append(('norm %s' % what, le32(0) + v([2]) + e0 + v([3, 4]) +
                    f32(nv) + qsgd.pack([1, 1 | s1], p.bits)))
    out.append(('sign on a zero level', le32(0) + v([2]) + e0 + v([3, 4]) +
                f32(1.0) + qsgd.pack([1, s1], p.bits)))
    if (2 * p.bits) % 8:
        codes = bytearray(qsgd.pack([1, 1], p.bits))
        codes[-1] |= 0x80
        out.append(('nonzero padding bits', le32(0) + v([2]) + e0 +
                    v([3, 4]) + f32(1.0) + bytes(codes)))
    out.append(('e0 of 1 (entries of a later slice)', le32(0) + v([2]) +
                v([1]) + v([3, 4]) + vals2))
    out.append(('a nonzero level under a zero norm', le32(0) + v([2]) + e0 +
                v([3, 4]) + f32(0.0) + qsgd.pack([1, 0], p.bits)))
    out.append(('e0 + nnz above 2^32 - 1', le32(0) + v([2]) +
                v([0xffffffff]) + v([3, 4]) + f32(1.0) + f32(1.0) +
                qsgd.pack([1, 1 | s1], p.bits)))
    out.append(('e0 crossing a bucket', le32(0) + v([2]) +
                v([p.q.bucket - 1]) + v([3, 4]) + f32(1.0) + f32(1.0) +
                qsgd.pack([1, 1 | s1], p.bits)))
    return out


def crafted_cltk(p, n):
    """Hand-made one-chunk streams of a cltk chunk of n values (a set of
    two entries at 3 and 4 unless the warm-up sends it whole)."""
    v = varint.encode
    if not p.bits:
        vals2 = f32(1.5) + f32(-2.0)
    else:
        s1 = 1 << (p.bits - 1)
        vals2 = f32(1.0) + qsgd.pack([1, 1 | s1], p.bits)
    good = le32(2) + v([3, 0]) + vals2
    out = [('a well-formed stream of two entries', good),
           ('word 0', le32(0) + vals2),
           ('word n + 1', le32(n + 1) + v([3, 0]) + vals2),
           ('word 0xffffffff', le32(0xffffffff) + v([3, 0]) + vals2),
           ('a position at n', le32(2) + v([3, n - 4]) + vals2),
           ('a first position at n', le32(2) + v([n, 0]) + vals2),
           ('a gap far past n', le32(2) + v([3, 0xffffffff]) + vals2),
           ('varint of 6 bytes', le32(2) + b'\x83\x80\x80\x80\x80\x00' +
            v([0]) + vals2),
           ('varint with a superfluous final 0 byte',
            le32(2) + b'\x83\x00' + v([0]) + vals2),
           ('varint of 5 bytes above 32 bits',
            le32(2) + b'\x83\x80\x80\x80\x10' + v([0]) + vals2),
           ('one byte left over', good + b'\0'),
           ('one value byte short', good[:-1]),
           ('the set cut short', le32(2) + v([3])),
           ('whole, one value short', le32(n) + b'\0' * (4 * n - 4)
            if not p.bits else le32(n) + b'\0' * 4)]
    if not p.bits:
        for bad in (np.nan, np.inf, -np.inf):
            out.append(('value %r' % bad, le32(2) + v([3, 0]) + f32(1.5) +
                        f32(bad)))
        return out
    s1 = 1 << (p.bits - 1)
    for what, nv in (('NaN', np.nan), ('inf', np.inf), ('-1', -1.0),
                     ('-0', -0.0)):
        out.append(('norm %s' % what, le32(2) + v([3, 0]) + f32(nv) +
                    qsgd.pack([1, 1 | s1], p.bits)))
    out.append(('sign on a zero level', le32(2) + v([3, 0]) + f32(1.0) +
                qsgd.pack([1, s1], p.bits)))
    out.append(('a nonzero level under a zero norm', le32(2) + v([3, 0]) +
                f32(0.0) + qsgd.pack([1, 0], p.bits)))
    if (2 * p.bits) % 8:
        codes = bytearray(qsgd.pack([1, 1], p.bits))
        codes[-1] |= 0x80
        out.append(('nonzero padding bits', le32(2) + v([3, 0]) + f32(1.0) +
                    bytes(codes)))
    return out


def crafted_index(p, n):
    """Hand-made slices for the index codecs and float16 values: (what,
    stream). Values are float32 pairs (QSGD: a bucket of norm 1)."""
    v = varint.encode
    qs = p.bits != 0
    e0 = v([0]) if qs else b''

    def vals(k, bad=None):
        if qs:
            s1 = 1 << (p.bits - 1)
            return f32(1.0) + qsgd.pack([1 | (s1 if j % 2 else 0)
                                         for j in range(k)], p.bits)
        if p.val == topk.F16:
            h = [0x3e00, 0xc000] * k
            if bad is not None:
                h[k - 1] = bad
            return b''.join(int(x).to_bytes(2, 'little') for x in h[:k])
        return b''.join(f32(x) for x in ([1.5, -2.0] * k)[:k])

    out = []
    if p.val == topk.F16:
        for what, h in (('inf', 0x7c00), ('-inf', 0xfc00), ('NaN', 0x7e01)):
            out.append(('float16 value %s' % what, le32(0) + v([2]) +
                        v([3, 4]) + vals(2, h)))
        out.append(('dense float16, one value short',
                    le32(1) + b'\0' * (2 * n - 2)))
        out.append(('dense float16 inf', le32(1) + b'\0' * (2 * n - 2) +
                    b'\x00\x7c'))
    bm = le32(1 << 8)
    out += [('bitmap: positions 3 and 4', bm + v([2]) + e0 + v([1]) +
             bytes([0x18]) + vals(2)),
            ('bitmap: trailing zero bytes', bm + v([2]) + e0 + v([3]) +
             bytes([0x18, 0, 0]) + vals(2)),
            ('bitmap: more bytes than the slice', bm + v([2]) + e0 +
             v([(n + 7) // 8 + 1]) + bytes([0x18]) +
             bytes((n + 7) // 8) + vals(2)),
            ('bitmap: a bit past the slice', bm + v([2]) + e0 +
             v([(n + 7) // 8]) + bytes((n + 7) // 8 - 1) +
             bytes([0x80 | 1]) + vals(2)),
            ('bitmap: three bits for two values', bm + v([2]) + e0 +
             v([1]) + bytes([0x19]) + vals(2)),
            ('bitmap: cut short', bm + v([2]) + e0 + v([4]) +
             bytes([0x18]))]
    rl = le32(2 << 8)
    out += [('rle: one run of 2 at 3', rl + v([2]) + e0 + v([1]) +
             bytes([2, 1, 0b111]) + vals(2)),
            ('rle: two runs', rl + v([2]) + e0 + v([2]) +
             bytes([3, 0, 0b011011]) + vals(2)),
            ('rle: width 33', rl + v([2]) + e0 + v([1]) +
             bytes([33, 0]) + bytes(5) + vals(2)),
            ('rle: more runs than values', rl + v([2]) + e0 + v([3]) +
             bytes([1, 0, 0]) + vals(2)),
            ('rle: no run for values', rl + v([2]) + e0 + v([0]) + vals(2)),
            ('rle: a run past the slice', rl + v([2]) + e0 + v([1]) +
             bytes([6, 1, 36 | 1 << 6]) + vals(2)),
            ('rle: runs short of the values', rl + v([2]) + e0 + v([1]) +
             bytes([2, 1, 0b011]) + vals(2)),
            ('rle: nonzero padding', rl + v([2]) + e0 + v([1]) +
             bytes([2, 1, 0b111 | 0x80]) + vals(2)),
            ('rle: widths cut short', rl + v([2]) + e0 + v([1]) +
             bytes([2]))]
    b = p.bloom
    for codec in (index.BLOOM, index.BLOOM_P1, index.BLOOM_P2):
        w = le32(codec << 8 | 0x1234 << 16)
        name = index.NAMES[codec]
        mb1 = b.mbytes(1)
        ones = bytes([0xff]) * mb1
        # A filter of all ones answers every position of its span.
        span = 4
        k = span if codec == index.BLOOM else 1
        out += [('%s: a full filter, r 1, span %d' % (name, span), w +
                 v([k]) + e0 + v([1, 3, 1, span]) + ones + vals(k)),
                ('%s: r 0' % name, w + v([1]) + e0 + v([1, 0, 0, 1]) +
                 vals(1)),
                ('%s: r above gmax' % name, w + v([1]) + e0 +
                 v([1, 0, b.gmax + 1, 70]) + bytes(b.mbytes(b.gmax + 1)) +
                 vals(1)),
                ('%s: span below r' % name, w + v([2]) + e0 +
                 v([1, 0, 2, 1]) + bytes([0xff]) * b.mbytes(2) + vals(2)),
                ('%s: a span past the slice' % name, w + v([k]) + e0 +
                 v([1, n - 2, 1, span]) + ones + vals(k)),
                ('%s: a filter cut short' % name, w + v([1]) + e0 +
                 v([1, 0, 1, 1]) + ones[:-1]),
                ('%s: too many groups' % name, w + v([1]) + e0 +
                 v([200]) + v([0, 1, 1]) + ones + vals(1)),
                ('%s: an empty filter, r 1' % name, w + v([0]) + e0 +
                 v([1, 0, 1, 1]) + bytes(mb1)),
                ('%s: values for more than the groups give' % name, w +
                 v([k + 1]) + e0 + v([1, 3, 1, span]) + ones + vals(k + 1)),
                ('%s: two groups' % name, w + v([2 * k]) + e0 +
                 v([2, 0, 1, span]) + ones + v([2, 1, span]) + ones +
                 vals(2 * k))]
    out.append(('bloom salt on a varint stream', le32(0x10000) + v([0]) + e0))
    return out


def crafted_fit(p, n):
    """Hand-made fitted values: two values at positions 3 and 4 of a
    varint slice, under one header (what, stream)."""
    v = varint.encode
    f = p.fit

    def hdr(m, segs, knots=(), cps=None):
        cps = [0.5] * (6 * segs) if cps is None else cps
        return (m - 1).to_bytes(2, 'little') + bytes([segs]) + \
            b''.join(k.to_bytes(2, 'little') for k in knots) + \
            np.array(cps, dtype='<f4').tobytes()

    def codes(ranks, m, signs=(0, 1)):
        w = fit.rank_bits(m)
        acc, bit = 0, 0
        for r, sg in zip(ranks, signs):
            acc |= (r | sg << w) << bit
            bit += w + 1
        return acc.to_bytes((bit + 7) // 8, 'little')

    def slice_(h, c, nnz=2, e0=0):
        return le32(0) + v([nnz]) + v([e0]) + v([3, 0][:nnz]) + h + c

    cps2 = [0.0, 0.1, 0.2, 0.3, 0.4, 1.0, 2.0, 1.5, 1.0, 0.5, 0.2, 0.0]
    out = [('fit: one segment', slice_(hdr(2, 1), codes([0, 1], 2))),
           ('fit: two segments', slice_(hdr(20, 2, (10,), cps2) if f >= 20
                                        else hdr(2, 1), codes([3, 15], 20)
                                        if f >= 20 else codes([0, 1], 2))),
           ('fit: no segment', slice_(hdr(2, 0), codes([0, 1], 2))),
           ('fit: five segments', slice_(hdr(8, 5, (1, 2, 3, 4)),
                                         codes([0, 1], 8))),
           ('fit: knots equal', slice_(hdr(8, 3, (2, 2)), codes([0, 1], 8))),
           ('fit: knot at m', slice_(hdr(8, 2, (8,)), codes([0, 1], 8))),
           ('fit: m above the bucket', slice_(hdr(f + 1, 1),
                                              codes([0, 1], f + 1))),
           ('fit: a rank at m', slice_(hdr(3, 1), codes([0, 3], 3))),
           ('fit: a value past m', slice_(hdr(1, 1), codes([0, 0], 1))),
           ('fit: padding bits', slice_(hdr(2, 1), bytes([
               codes([0, 1], 2)[0] | 0x80]))),
           ('fit: a code byte short', slice_(hdr(200, 1),
                                             codes([0, 1], 200)[:-1])),
           ('fit: header cut short', slice_(hdr(2, 1)[:-1], b''))]
    for what, cp in (('NaN', np.nan), ('inf', np.inf), ('-0', -0.0),
                     ('-1', -1.0), ('2^127', 2.0 ** 127),
                     ('the largest below 2^127', float(fit.CP_MAX))):
        out.append(('fit: control point %s' % what,
                    slice_(hdr(2, 1, cps=[0.5] * 5 + [cp]), codes([0, 1], 2))))
    return out


def crafted_qsgd(p, n):
    b = p.bucket
    s1 = 1 << (p.bits - 1)
    good, _ = qsgd.encode_buckets(np.linspace(-1, 1, n).astype(F), 99,
                                  np.arange(n), p.bits, b, p.norm)
    out = [('a well-formed stream', le32(0) + good),
           ('word 1', le32(1) + good)]
    for what, nv in (('NaN', np.nan), ('inf', np.inf), ('-1', -1.0),
                     ('-0', -0.0)):
        out.append(('first norm %s' % what, le32(0) + f32(nv) + good[4:]))
    zero_sign = bytearray(good)
    zero_sign[4:4 + qsgd.code_bytes(1, p.bits)] = qsgd.pack([s1], p.bits)
    out.append(('sign on a zero level', le32(0) + bytes(zero_sign)))
    zero_norm = bytearray(good)
    zero_norm[0:4] = f32(0.0)
    zero_norm[4:4 + qsgd.code_bytes(1, p.bits)] = qsgd.pack([1], p.bits)
    out.append(('a nonzero level under a zero norm', le32(0) +
                bytes(zero_norm)))
    m_last = n % b or b
    if (m_last * p.bits) % 8:
        pad = bytearray(good)
        pad[-1] |= 0x80
        out.append(('nonzero padding bits', le32(0) + bytes(pad)))
    return out


def crafted_tlc(n):
    g = -(-n // 5)
    ok = f32(1.0) + bytes([121] * g)
    out = [('a well-formed stream', ok)]
    for what, m in (('NaN', np.nan), ('inf', np.inf), ('-1', -1.0),
                    ('-0', -0.0)):
        out.append(('M %s' % what, f32(m) + bytes([121] * g)))
    out.append(('one group short', f32(1.0) + bytes([121] * (g - 1))))
    out.append(('a run past the last group', f32(1.0) + bytes([121] * (g - 1)) +
                bytes([243])))
    if n % 5:
        # The last group's last digit is element 4g + g - 1 >= n.
        out.append(('a nonzero trit past n', f32(1.0) + bytes([121] * (g - 1))
                    + bytes([122])))
    return out


def crafted_dense(n):
    x = np.linspace(-1, 1, n).astype('<f4')
    nan = x.copy()
    nan[n // 2] = np.nan
    return [('a well-formed stream', le32(0) + x.tobytes()),
            ('word 1', le32(1) + x.tobytes()),
            ('value NaN', le32(0) + nan.tobytes()),
            ('one value short', le32(0) + x[:-1].tobytes())]


def hostile(tap, tool, name, rng):
    """Damaged and crafted streams: C refuses exactly what the model
    refuses (exit 1, output untouched) and decodes the rest as it does."""
    sets = {'none': [''], '3lc': ['s=1'],
            'qsgd': ['bits=2', 'bits=4,bucket=16', 'bits=8,norm=max'],
            'topk': ['density=0.1', 'density=0.1,bits=4',
                     'density=0.3,bits=2,bucket=16', 'density=1.0',
                     'density=1.0,bits=8', 'density=0.1,idx=bitmap',
                     'density=0.2,idx=rle,bits=4', 'density=0.1,idx=auto',
                     'density=0.1,val=f16', 'density=0.1,idx=bloom',
                     'density=0.1,idx=bloom-p1,fpr=0.3',
                     'density=0.2,idx=bloom-p2,fpr=0.2,bits=2,bucket=16',
                     'density=0.2,val=fit,bucket=16',
                     'density=0.1,idx=bloom,val=fit'],
            'cltk': ['density=0.1', 'density=0.1,beta=0.5,bits=4',
                     'density=0.3,bits=2,bucket=16', 'density=1.0',
                     'density=0.1,warmup=1,bits=8']}[name]
    for setting in sets:
        spec = name + (':' + setting if setting else '')
        m = models.model(spec)
        n = 37
        x = np.array(synthetic(rng)[4][:n])
        e = np.zeros(n, dtype=F) if m.ef else None
        base, _, _ = m.encode(x, e, models.stream_key(3))
        cases = list(mutations(base, rng))
        if name == 'topk':
            cases += crafted_topk(m.p, n) + crafted_index(m.p, n)
            if m.p.val == topk.FIT:
                cases += crafted_fit(m.p, n)
        elif name == 'cltk':
            cases += crafted_cltk(m.p, n)
        elif name == 'qsgd':
            cases += crafted_qsgd(m.p, n)
        elif name == '3lc':
            cases += crafted_tlc(n)
        else:
            cases += crafted_dense(n)
        bad, refused = [], 0
        for what, data in cases:
            try:
                want = m.decode(data, n)
            except Refused as why:
                want, whynot = None, str(why)
            rc, got, err, untouched = tool.decode(spec, n, data)
            if want is None:
                refused += 1
                if rc != 1 or not untouched:
                    bad.append('%s: the model refuses (%s); C exits %d%s'
                               % (what, whynot, rc, '' if untouched else
                                  ' and changed the output'))
            elif rc:
                bad.append('%s: the model decodes it; C refuses: %s'
                           % (what, err))
            elif not same_f32(got, want):
                bad.append('%s: C decodes other values than the model'
                           % what)
        tap.ok(not bad, '%s: %d hostile streams, %d refused by both (exit '
               '1, output untouched), the rest decoded alike'
               % (spec, len(cases), refused), bad[:6])


def encode_refusals(tap, tool, name):
    """Values that are not finite, or a sum or scale that overflows: exit
    1, output and error feedback as they were."""
    x = np.linspace(-1, 1, 40).astype(F)
    big = np.full(40, F(3e38))
    zero = np.zeros(40, dtype=F)
    cases = [(name, 'NaN input', np.where(np.arange(40) == 9, F(np.nan), x),
              zero),
             (name, 'infinite input', np.where(np.arange(40) == 3,
                                               F(np.inf), x), zero)]
    if name == '3lc':
        cases += [(name, 'x + e overflows', big, big),
                  ('3lc:s=1.5', 'M = s max|t| overflows', big, zero)]
    elif name == 'cltk':
        cases += [(name, 'x + m overflows', big, big),
                  ('cltk:density=0.5,beta=0.5', 'x + m overflows under the '
                   'filter', big, big),
                  ('cltk:density=0.5,bits=4,norm=l2',
                   'the L2 norm of the values overflows', big, zero)]
    elif name == 'topk':
        cases += [(name, 'x + e overflows', big, big),
                  ('topk:density=0.5,bits=4,norm=l2', 'the L2 norm of the '
                   'entries overflows', big, zero)]
    elif name == 'qsgd':
        cases.append((name, 'an L2 norm that overflows', big, None))
    bad = []
    for spec, what, xv, e in cases:
        m = models.model(spec)
        e = e if m.ef else None
        with open(tool.out, 'wb') as f:
            f.write(b'previous')
        np.asarray(xv, '<f4').tofile(tool.inp)
        args = ['encode', '--codec', spec, '--seed', '1']
        if m.ef:
            e.astype('<f4').tofile(tool.ef)
            args += ['--ef', tool.ef]
        rc, err = tool._run(args + [tool.inp, tool.out])
        try:
            m.encode(xv, e, 0)
            bad.append('%s: the model encodes it' % what)
        except Edom:
            pass
        with open(tool.out, 'rb') as f:
            kept = f.read() == b'previous'
        if m.ef:
            kept = kept and np.fromfile(tool.ef, '<f4').tobytes() == \
                e.astype('<f4').tobytes()
        if rc != 1 or not kept:
            bad.append('%s (%s): exit %d, outputs %s: %s' % (
                what, spec, rc, 'kept' if kept else 'changed', err))
    tap.ok(not bad, '%s: %s refused (exit 1), output and error feedback '
           'kept' % (name, ', '.join(c[1] for c in cases)), bad)


def lane_bucket():
    """A bucket whose L2 norm depends on the specified order of the sum:
    A^2 + B^2 = (2^24 + 1)^2 exactly, a float32 midpoint, and four t^2
    that only the specified lanes (t^2 in lanes 2..5, folded 4, 2, 1)
    keep, so its norm rounds up; a sequential or pairwise sum loses them
    and the tie rounds to even, down. Scaled by 2^-40 to a gradient's
    size, which keeps every square exact."""
    sc = 2.0 ** -40
    return np.array([16777215 * sc, 8192 * sc] + [11 / 64 * sc] * 4,
                    dtype=F)


def u_ties(seed, bits, n=16):
    """A max-norm bucket (norm 1) whose values have p = U(c) exactly for
    the key of --seed seed: the rule is q = l + 1 only if U(c) < p, so
    every such value must stay at level 0."""
    s = F(qsgd.levels(bits))
    u = np.asarray(models.gnrng.uniform(models.stream_key(seed),
                                        np.arange(n)), dtype=F)
    x = np.zeros(n, dtype=F)
    x[0] = F(1)
    hits = 0
    for c in range(1, n):
        w = F(u[c] / s)
        for cand in (w, np.nextafter(w, F(0)), np.nextafter(w, F(1))):
            if F(s * cand) == u[c] and u[c] > 0:
                x[c] = -cand if c % 2 else cand
                hits += 1
                break
    return x, hits


def edges(tap, tool):
    """Crafted chunks where a wrong reading of the specification changes
    the bytes: the order of the L2 lanes, U(c) equal to p, a max norm so
    large that s |w| overflows float32."""
    w = lane_bucket()
    sums = (float(np.sqrt(np.sum(w.astype(np.float64) ** 2))),
            float(np.sqrt(sum(float(v) * float(v) for v in w))))
    lane_norm = float(qsgd.norms_of(w, 16, 'l2')[0])
    cases = [('qsgd:bits=4,bucket=16', np.concatenate((w, np.zeros(10, F))),
              'L2 lanes (norm %r; pairwise or sequential sums give %r, %r)'
              % (lane_norm, F(sums[0]), F(sums[1])))]
    tail = np.full(58, F(w[-1] * F(1e-3)))
    cases.append(('topk:density=0.09375,bits=4,bucket=16',
                  np.concatenate((w, tail)), 'L2 lanes of sparse values'))
    for bits in (2, 4, 8):
        x, hits = u_ties(41, bits)
        cases.append(('qsgd:bits=%d,bucket=16,norm=max' % bits, x,
                      'U(c) = p at %d values' % hits))
    cases.append(('qsgd:bits=8,norm=max', np.array([3e38, -2e38, 1e37, 5.0,
                                                    -0.0, 0.0], dtype=F),
                  's |w| overflows float32'))
    for spec, x, what in cases:
        m = models.model(spec)
        e = np.zeros(x.size, dtype=F) if m.ef else None
        want, _, dec = m.encode(x, e, models.stream_key(41))
        rc, data, _, err = tool.encode(spec, x, 41, e)
        diag = []
        if rc:
            diag.append('C exits %d: %s' % (rc, err))
        elif data != want:
            diag.append('stream bytes differ at byte %s (C %s, model %s)'
                        % (first_diff(data, want), data.hex(), want.hex()))
        else:
            rc, got, err, _ = tool.decode(spec, x.size, data)
            if rc or not same_f32(got, dec):
                diag.append('decoded values differ: %s' % err)
        tap.ok(not diag, '%s: %s: the bytes the specification gives'
               % (spec, what), diag)


def unbiased(tap, tool):
    """E[Q(v)] = v: the mean of the decoded values over many independent
    draws approaches the input.

    The input is one bucket v of real gradient values (B of them),
    repeated R times in one chunk: every copy is a bucket of its own with
    the same norm N, and draws its rounding from its own counters; K
    seeds give R * K = 2000 draws of each value. For a fixed norm a value
    decodes to N/s * l or N/s * (l + 1), so its variance is at most
    (N/s)^2 / 4 and the mean of D draws has a standard deviation of at
    most N / (2 s sqrt(D)). Every value's mean must lie within 5 of those
    of v (float rounding of the levels is below 1e-6 of N/s, far under
    it). Rounding down instead (the biased quantizer) misses by up to
    N/s, many times the tolerance: the test says by how much.
    """
    R, K = 50, 40
    v = load(200, 'fc1.weight')
    for bits, norm in ((2, 'l2'), (4, 'l2'), (8, 'l2'), (4, 'max')):
        b = qsgd.bucket_of(bits, 0)
        w = v[:b]
        x = np.tile(w, R)
        spec = 'qsgd:bits=%d,norm=%s' % (bits, norm)
        total = np.zeros(b, dtype=np.float64)
        bad = []
        for k in range(K):
            rc, data, _, err = tool.encode(spec, x, 1000 + k)
            if rc:
                bad.append('encode: %s' % err)
                break
            rc, got, err, _ = tool.decode(spec, x.size, data)
            if rc:
                bad.append('decode: %s' % err)
                break
            total += got.astype(np.float64).reshape(R, b).sum(axis=0)
        s = qsgd.levels(bits)
        nv = float(qsgd.norms_of(w, b, norm)[0])
        draws = R * K
        tol = 5 * nv / (2 * s * np.sqrt(draws))
        dev = np.abs(total / draws - w.astype(np.float64))
        floor = np.abs(nv / s * np.floor(s * np.abs(w.astype(np.float64)) /
                                         nv) - np.abs(w.astype(np.float64)))
        if not bad and dev.max() > tol:
            j = int(dev.argmax())
            bad.append('value %d: mean %r, input %r, off by %.3g > %.3g'
                       % (j, total[j] / draws, float(w[j]), dev[j], tol))
        tap.ok(not bad, '%s: the mean of %d draws of each of %d values is '
               'within %.3g (5 sigma, sigma <= N/(2s sqrt(D)), N = %.4g) '
               'of the input: worst %.3g; rounding down would miss by %.3g'
               % (spec, draws, b, tol, nv, dev.max(), floor.max()),
               bad)


def main():
    tap = Tap()
    rng = np.random.default_rng(29)
    base = '/dev/shm' if os.path.isdir('/dev/shm') else None
    tmp = tempfile.mkdtemp(prefix='gn-conformance.', dir=base)
    try:
        tool = Tool(tmp)
        listed = tool.listed()
        isas = subprocess.run([TOOL, 'isa'], stdout=subprocess.PIPE,
                              text=True).stdout.split()
        unknown = [c for c in listed if c not in models.MODELS]
        missing = [c for c in models.MODELS if c not in listed]
        tap.ok(listed and not unknown and not missing, 'every codec '
               'gradnet-codec lists (%s) has a model, and every model its '
               'codec' % ', '.join(listed),
               ['%s has no model in tests/model: write one from its '
                'specification' % c for c in unknown] +
               ['gradnet-codec does not list %s, which has a model' % c
                for c in missing])
        for name in listed:
            if name not in models.MODELS:
                continue
            streams(tap, tool, name, rng, 2 if SANITIZED else None)
            # The other instruction sets' kernels on the first sets.
            for isa in [] if SANITIZED else isas[:-1]:
                tool.isa = isa
                streams(tap, tool, name, rng, 4)
                tool.isa = None
            hostile(tap, tool, name, rng)
            encode_refusals(tap, tool, name)
            if name == 'topk':
                topk_results(tap, tool, rng)
            if name == 'qsgd' and not SANITIZED:
                unbiased(tap, tool)
        if 'qsgd' in listed and 'topk' in listed:
            edges(tap, tool)
        tap.ok(not tool.reports, 'gradnet-codec reported no sanitizer '
               'finding', tool.reports[:4])
    finally:
        shutil.rmtree(tmp)
    return tap.done()


if __name__ == '__main__':
    sys.exit(main())
