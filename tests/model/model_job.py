#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""model_job.py - gn-model-rank's jobs (tests/model_rank.c) against the
numpy model of the model-updating step (dore.py), bit for bit.

    model_job.py expect --world W --job J --elems N --up SPEC --down SPEC
                 [--opts OPTS] [--steps K] [--lr LR] [--tensor ID]
                 [--chunk C] [--nan STEP:RANK]
prints the lines every rank of that job must print ("step T 0 HASH", and
"step T -33" for the step a NaN fails), for the jobs that run where numpy
does not (the kernel module's guest) or on another path (DPDK).

    model_job.py run GN_MODEL_RANK [--sanitized]
runs jobs of 2 to 4 gn-model-rank processes on 127.0.0.1 (UDP): DORE and
3LC's push/pull, loss, duplicates and reordering (GN_TEST_FAULTS), every
instruction set the CPU has (GN_CODEC_ISA), several codec workers
(GN_CODEC_WORKERS), a NaN, and compares every rank's every step with the
model; first it checks the model cases of the core scenario's golden
hashes (tests/golden/core_hashes.h, which the kernel module's self-test
expects) against the model. TAP on stdout; exit 0 pass, 1 fail.

The parameters and gradients are the generator's numbers, as
gn-model-rank makes them (gnrng.py, from include/gradnet/codec.h).
"""
import argparse
import os
import socket
import subprocess
import sys

import numpy as np

import dore
import gnrng
import topk

F = np.float32
GEN_JOB = 0x6d6f6465
EDOM = 33


def gen(n, tensor, step, rank, phase, shift):
    """(u(key(seed(GEN_JOB, tensor, step, rank, phase), 0), k) - 2^23) *
    2^-shift, k < n, as float32: exact, a 24-bit integer times a power of
    two."""
    key = gnrng.key(gnrng.seed(GEN_JOB, tensor, step, rank, phase), 0)
    u = gnrng.u24(key, np.arange(n)) - (1 << 23)
    return (u.astype(F) * F(2.0 ** -shift)).astype(F)


def fnv(x):
    h = 0xcbf29ce484222325
    for b in np.asarray(x, '<f4').tobytes():
        h = ((h ^ b) * 0x100000001b3) & ((1 << 64) - 1)
    return h


def parse_opts(text):
    """OPTS as gn-model-rank reads them, floats as strtof() rounds them."""
    kw = {}
    for item in filter(None, (text or '').split(',')):
        k, _, v = item.partition('=')
        if k == 'dore':
            kw['dore'] = True
        elif k in ('momentum', 'weight_decay', 'alpha', 'beta', 'eta'):
            kw[k] = topk.f32_of_text(v)
        else:
            raise ValueError('unknown option %r' % k)
    if kw.get('dore'):
        for k, v in (('alpha', 0.1), ('beta', 1.0), ('eta', 0.5)):
            if not kw.get(k):
                kw[k] = topk.f32_of_text(repr(v))
    return kw


STAGE_KEYS = ('entropy', 'entropy_level')


def lossless(text):
    """A codec spec without the entropy stage's keys: the stage is
    lossless, so the values are the codec's alone."""
    name, _, rest = text.partition(':')
    keep = [kv for kv in rest.split(',')
            if kv and kv.partition('=')[0].strip() not in STAGE_KEYS]
    return name + (':' + ','.join(keep) if keep else '')


def spec_of(text, dore_on):
    """A codec spec as the model takes it: "default" is DORE's quantizer
    with DORE (the only default these jobs use)."""
    text = lossless(text)
    if text == 'default':
        if not dore_on:
            raise ValueError('"default" needs dore here')
        return dore.DORE_QUANTIZER
    if text.startswith('default:'):
        raise ValueError('"default:" takes only the entropy stage here')
    return text


def down_spec(a, up, dore_on):
    """The changes' codec: "default" is the gradients' (@up); with
    parameters, the gradients' codec with only those (under DORE without
    a codec, its quantizer with them on top)."""
    if a.down == 'default':
        return up
    if a.down.partition(':')[0] != 'default':
        return spec_of(a.down, dore_on)
    if lossless(a.up) == 'default':
        return spec_of(a.down, dore_on)
    if lossless(a.down) != 'default':
        raise ValueError('"default:" takes only the entropy stage here')
    return lossless(a.up).partition(':')[0]


def expect(a):
    """Every step's line, as every rank must print it."""
    kw = parse_opts(a.opts)
    up = spec_of(a.up, kw.get('dore'))
    down = down_spec(a, up, kw.get('dore'))
    x0 = gen(a.elems, a.tensor, 0, 0, 3, 23)
    m = dore.Model(up, down, a.elems, a.world, a.chunk, a.job, a.tensor, x0,
                   **kw)
    nan_step, _ = a.nan
    lines = []
    lr = topk.f32_of_text(a.lr)
    for t in range(1, a.steps + 1):
        if t == nan_step:
            m.skip()
            lines.append('step %d -%d' % (t, EDOM))
            continue
        grads = [gen(a.elems, a.tensor, t, r, 2, 26) for r in range(a.world)]
        x = m.step(grads, (lr / F(t)).astype(F))
        lines.append('step %d 0 %016x' % (t, fnv(x)))
    return lines


def job_args(p, words):
    a = p.parse_args(words)
    a.nan = tuple(int(v) for v in a.nan.split(':')) if a.nan else (-1, -1)
    return a


def expect_parser():
    p = argparse.ArgumentParser(prog='model_job.py expect')
    p.add_argument('--world', type=int, required=True)
    p.add_argument('--job', type=lambda v: int(v, 0), required=True)
    p.add_argument('--elems', type=int, required=True)
    p.add_argument('--up', required=True)
    p.add_argument('--down', required=True)
    p.add_argument('--opts', default='')
    p.add_argument('--steps', type=int, default=5)
    p.add_argument('--lr', default='0.05')
    p.add_argument('--tensor', type=lambda v: int(v, 0), default=1)
    p.add_argument('--chunk', type=int, default=65536)
    p.add_argument('--nan', default='')
    return p


def free_ports(n):
    socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
             for _ in range(n)]
    try:
        for s in socks:
            s.bind(('127.0.0.1', 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def run_job(rank_bin, a, env_extra):
    """Every rank's output lines of one job over UDP on 127.0.0.1."""
    peers = ','.join('127.0.0.1:%d' % p for p in free_ports(a.world))
    args = [rank_bin, '--elems', str(a.elems), '--up', a.up, '--down',
            a.down, '--steps', str(a.steps), '--lr', a.lr, '--tensor',
            str(a.tensor)]
    if a.opts:
        args += ['--opts', a.opts]
    if a.nan[0] > 0:
        args += ['--nan', '%d:%d' % a.nan]
    procs = []
    for r in range(a.world):
        env = dict(os.environ, GN_RANK=str(r), GN_WORLD_SIZE=str(a.world),
                   GN_PEERS=peers, GN_JOB=str(a.job), GN_INSECURE='1',
                   GN_TIMEOUT_MS='20000', GN_CHUNK=str(a.chunk),
                   **env_extra)
        procs.append(subprocess.Popen(args, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    outs = []
    for pr in procs:
        try:
            out, _ = pr.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            pr.kill()
            out, _ = pr.communicate()
            out += '\n(killed: no end in 300 s)'
        outs.append((pr.returncode, out))
    return outs


def sent(outs):
    """Chunk-stream bytes the ranks sent, summed (gn-model-rank's "sent")."""
    total = 0
    for _, out in outs:
        for ln in out.splitlines():
            if ln.startswith('sent '):
                total += int(ln.split()[1])
    return total


def compare(want, outs, faults):
    """None if every rank printed the lines wanted, else why not; with
    @faults, the ranks must have resent something (the faults were on)."""
    resent = 0
    for r, (rc, out) in enumerate(outs):
        for ln in out.splitlines():
            if ln.startswith('retransmits '):
                resent += int(ln.split()[1])
        got = [ln for ln in out.splitlines() if ln.startswith('step ')]
        for i, w in enumerate(want):
            g = got[i] if i < len(got) else '(nothing)'
            # A failed step's line goes on with the library's message.
            if g != w and not (w.endswith(' -%d' % EDOM) and
                               g.startswith(w + ' ')):
                return 'rank %d: %r, the model %r (rc %s)\n%s' % (
                    r, g, w, rc, out[-2000:])
        if rc != 0:
            return 'rank %d exit %s\n%s' % (r, rc, out[-2000:])
    if faults and not resent:
        return 'faults were asked for, yet no rank resent a packet'
    return None


# The jobs of `run`: (name, job arguments, environment). 9000 values and
# chunks of 2000: shards of several chunks, the last one shorter.
Q = 'qsgd:bits=2,bucket=256,norm=max'
COMMON = ['--elems', '9000', '--chunk', '2000', '--steps', '5']
JOBS = [
    ('dore, its quantizer both ways, 4 ranks',
     ['--world', '4', '--up', 'default', '--down', 'default',
      '--opts', 'dore'], {}),
    ('dore, 3lc both ways, momentum, 3 ranks',
     ['--world', '3', '--up', '3lc', '--down', '3lc:s=1.5',
      '--opts', 'dore,momentum=0.9'], {}),
    ('dore, top-k up, its quantizer down, weight decay, 2 ranks',
     ['--world', '2', '--up', 'topk:density=0.05', '--down', Q,
      '--opts', 'dore,weight_decay=0.01,alpha=0.2,eta=1'], {}),
    ("3lc's push/pull, 4 ranks",
     ['--world', '4', '--up', '3lc', '--down', '3lc'], {}),
    ('sharded SGD with momentum, no compression, 3 ranks',
     ['--world', '3', '--up', 'none', '--down', 'none',
      '--opts', 'momentum=0.9,weight_decay=0.001'], {}),
    ('dore under loss, duplicates and reordering, 3 ranks',
     ['--world', '3', '--up', 'default', '--down', 'default',
      '--opts', 'dore,momentum=0.5'],
     {'GN_TEST_FAULTS': 'loss=0.05,dup=0.05,reorder=0.1,seed=31'}),
    ("3lc's push/pull under loss, 4 ranks",
     ['--world', '4', '--up', '3lc', '--down', '3lc', '--elems', '60000'],
     {'GN_TEST_FAULTS': 'loss=0.1,dup=0.05,reorder=0.05,seed=7'}),
    ('dore, a NaN in rank 1 at step 3: skipped on every rank',
     ['--world', '3', '--up', 'topk:density=0.05', '--down', Q,
      '--opts', 'dore,momentum=0.9', '--nan', '3:1'], {}),
    ('dore with 3 codec workers, 2 ranks',
     ['--world', '2', '--up', '3lc', '--down', Q, '--opts', 'dore',
      '--elems', '40000'], {'GN_CODEC_WORKERS': '3'}),
    # The entropy stage on the changes: the owners' results go coded.
    ('dore, its quantizer both ways, entropy=zstd on the changes only, '
     '3 ranks',
     ['--world', '3', '--up', 'default', '--down', 'default:entropy=zstd',
      '--opts', 'dore'], {}),
    ('dore, entropy=zstd both ways, the changes at level 3, 4 ranks',
     ['--world', '4', '--up', 'default:entropy=zstd',
      '--down', Q + ',entropy=zstd,entropy_level=3', '--opts', 'dore'], {}),
    ('dore, entropy=zstd both ways, under loss, duplicates and reordering, '
     '3 ranks',
     ['--world', '3', '--up', 'default:entropy=zstd',
      '--down', 'default:entropy=zstd', '--opts', 'dore,momentum=0.5'],
     {'GN_TEST_FAULTS': 'loss=0.05,dup=0.05,reorder=0.1,seed=41'}),
    ('dore, entropy=zstd on the changes, a NaN in rank 2 at step 2',
     ['--world', '3', '--up', 'default', '--down', 'default:entropy=zstd',
      '--opts', 'dore', '--nan', '2:2'], {}),
    ('dore, entropy=zstd on the changes, 3 codec workers, 2 ranks',
     ['--world', '2', '--up', '3lc', '--down', Q + ',entropy=zstd',
      '--opts', 'dore', '--elems', '40000'], {'GN_CODEC_WORKERS': '3'}),
]
ISAS = ('scalar', 'avx2', 'avx512')


def cpu_isas():
    """The instruction sets this CPU runs (as the codec decides)."""
    flags = open('/proc/cpuinfo').read()
    have = ['scalar']
    if ' avx2' in flags and ' bmi2' in flags:
        have.append('avx2')
    if all(' ' + f in flags for f in ('avx512f', 'avx512bw', 'avx512vl',
                                      'avx512vbmi', 'avx512_vbmi2')):
        have.append('avx512')
    return have


# tests/core/scenario.c's model cases, as its header describes them.
SCN_WORLD, SCN_ELEMS, SCN_CHUNK, SCN_JOB, SCN_TENSOR = 3, 10000, 4096, \
    0x5c3e0001, 7
SCN_CASES = {
    'model-dore': (10, dict(up=Q, down=Q, dore=True, momentum=0.5)),
    'model-3lc-push-pull': (11, dict(up='3lc:s=1.5', down='3lc:s=1.5')),
    # model-dore's inputs, its changes through the (lossless) stage.
    'model-dore-zstd': (10, dict(up=Q, down=Q, dore=True, momentum=0.5)),
}


def scn_input(n, kase, rank, step):
    """gn_scn_input(): xorshift64 from the case, rank and step, each value
    a random sign and mantissa with an exponent in 115..130."""
    m64 = (1 << 64) - 1
    s = 0x9e3779b97f4a7c15 ^ ((kase + 1) << 40) ^ ((rank + 1) << 20) ^ \
        (step + 1)
    out = np.zeros(n, dtype=np.uint32)
    for i in range(8 + n):
        s ^= (s << 13) & m64
        s ^= s >> 7
        s ^= (s << 17) & m64
        if i >= 8:
            out[i - 8] = (s >> 63) << 31 | (115 + (s >> 32 & 15)) << 23 | \
                (s & 0x7fffff)
    return out.view(F)


def scenario_golden():
    """tests/golden/core_hashes.h's model rows (the kernel's self-test
    expects them) against the model: None, or why not."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..',
                        'golden', 'core_hashes.h')
    rows = {}
    for ln in open(path):
        ln = ln.strip()
        if ln.startswith('{ "model-'):
            name = ln.split('"')[1]
            rows[name] = [int(h.strip().rstrip('ul'), 16) for h in
                          ln.split('{')[2].split('}')[0].split(',')]
    if set(rows) != set(SCN_CASES):
        return 'the header has model rows %s, the model %s' % (
            sorted(rows), sorted(SCN_CASES))
    for name, (kase, kw) in SCN_CASES.items():
        kw = dict(kw)
        up, down = kw.pop('up'), kw.pop('down')
        x0 = scn_input(SCN_ELEMS, kase, SCN_WORLD, 0)
        m = dore.Model(up, down, SCN_ELEMS, SCN_WORLD, SCN_CHUNK, SCN_JOB,
                       SCN_TENSOR, x0, **kw)
        for step in range(3):
            x = m.step([scn_input(SCN_ELEMS, kase, r, step)
                        for r in range(SCN_WORLD)], F(2.0 ** -(3 + step)))
            if fnv(x) != rows[name][step]:
                return '%s step %d: the header 0x%016x, the model 0x%016x' % (
                    name, step, rows[name][step], fnv(x))
    return None


def coded(a, env):
    """Job @a must send fewer stream bytes than its twin, the same job
    with the stage's keys taken out: it has the stage, and no injected
    faults (whose resends would blur the count)."""
    return ((lossless(a.up) != a.up or lossless(a.down) != a.down) and
            'GN_TEST_FAULTS' not in env)


def fewer_bytes(rank_bin, a, env, outs):
    """None if the job @a (its ranks' output @outs) sent fewer stream
    bytes than its twin without the entropy stage, which must end with
    the same parameters; else why not."""
    twin = argparse.Namespace(**dict(vars(a), up=lossless(a.up),
                                     down=lossless(a.down)))
    twin_outs = run_job(rank_bin, twin, env)
    why = compare(expect(twin), twin_outs, False)
    if why:
        return 'the job without the stage: ' + why
    if sent(outs) >= sent(twin_outs):
        return 'coded: %d stream bytes, uncoded: %d (not fewer)' % (
            sent(outs), sent(twin_outs))
    print('# %d stream bytes, %d without the entropy stage' % (
        sent(outs), sent(twin_outs)))
    return None


def run(rank_bin, sanitized):
    jobs = list(JOBS)
    if not sanitized:
        for isa in cpu_isas():
            jobs.append(('dore, 3 ranks, the %s kernels' % isa,
                         ['--world', '3', '--up', '3lc', '--down', Q,
                          '--opts', 'dore'], {'GN_CODEC_ISA': isa}))
    print('TAP version 13')
    print('1..%d' % (len(jobs) + 1))
    bad = 0
    why = scenario_golden()
    print('%s 1 - the core scenario\'s model cases (golden hashes, the '
          'kernel\'s too) equal the model' % ('not ok' if why else 'ok'))
    if why:
        bad += 1
        print('# ' + why)
    for i, (name, words, env) in enumerate(jobs, 2):
        words = COMMON + ['--job', hex(0x6d6f0000 + i)] + words
        a = job_args(expect_parser(), words)
        outs = run_job(rank_bin, a, env)
        why = compare(expect(a), outs, 'GN_TEST_FAULTS' in env)
        if not why and coded(a, env):
            why = fewer_bytes(rank_bin, a, env, outs)
        if why:
            bad += 1
            print('not ok %d - %s' % (i, name))
            print('\n'.join('# ' + ln for ln in why.splitlines()))
        else:
            print('ok %d - %s' % (i, name))
        sys.stdout.flush()
    return 1 if bad else 0


def main(argv):
    if len(argv) >= 2 and argv[1] == 'expect':
        print('\n'.join(expect(job_args(expect_parser(), argv[2:]))))
        return 0
    if len(argv) >= 3 and argv[1] == 'run':
        return run(argv[2], '--sanitized' in argv[3:])
    sys.stderr.write(__doc__)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
