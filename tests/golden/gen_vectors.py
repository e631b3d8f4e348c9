#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Write tests/golden/vectors.h: 3LC golden vectors computed from the
specification in include/gradnet/codec.h, independently of the C code.

Run with Debian's python3 (numpy float32 arithmetic is IEEE single precision
with denormals, which is what the specification assumes):
    /usr/bin/python3 tests/golden/gen_vectors.py > tests/golden/vectors.h
"""
import struct
import sys

import numpy as np

F = np.float32
ZERO_GROUP = 121


def bits(v):
    return struct.unpack('<I', struct.pack('<f', float(v)))[0]


def from_bits(b):
    return F(struct.unpack('<f', struct.pack('<I', b))[0])


def quantize(x, e, s):
    """Return (q, m, e_new) or the errno name of the failure."""
    s = F(s)
    if not (s >= F(1) and s < F(2)):
        return 'EINVAL'
    n = len(x)
    with np.errstate(over='ignore'):
        t = [F(x[i]) + F(e[i]) for i in range(n)]
    if any(not np.isfinite(v) for v in t):
        return 'EDOM'
    maxabs = max([abs(v) for v in t], default=F(0))
    with np.errstate(over='ignore'):
        m = F(s * maxabs)
    if not np.isfinite(m):
        return 'EDOM'
    h = F(F(0.5) * m)
    q, e_new = [], []
    for v in t:
        qi = 1 if v > h else (-1 if v < -h else 0)
        qm = m if qi == 1 else (-m if qi == -1 else F(0))
        q.append(qi)
        e_new.append(F(v - qm))
    return q, m, e_new


def quartic(q):
    n = len(q)
    g = -(-n // 5)
    out = []
    for j in range(g):
        b = 0
        for k in range(5):
            i = k * g + j
            b = b * 3 + ((q[i] if i < n else 0) + 1)
        out.append(b)
    return out


def zero_runs(groups):
    out, i = [], 0
    while i < len(groups):
        if groups[i] != ZERO_GROUP:
            out.append(groups[i])
            i += 1
            continue
        r = 0
        while i < len(groups) and groups[i] == ZERO_GROUP:
            r += 1
            i += 1
        if r == 1:
            out.append(ZERO_GROUP)
            continue
        out += [255] * (r // 14)
        rem = r % 14
        if rem == 1:
            out.append(ZERO_GROUP)
        elif rem >= 2:
            out.append(241 + rem)
    return out


def accumulate(acc, q, m):
    out = list(acc)
    for i, qi in enumerate(q):
        if qi == 1:
            out[i] = F(out[i] + m)
        elif qi == -1:
            out[i] = F(out[i] - m)
    return out


VECTORS = []


def add(name, x, s, e=None, acc=None):
    x = [F(v) for v in x]
    n = len(x)
    e = [F(0)] * n if e is None else [F(v) for v in e]
    if acc is None:
        acc = [F((i % 7) - 3) * F(0.25) for i in range(n)]
    VECTORS.append((name, x, F(s), e, [F(v) for v in acc]))


def groups_to_x(pattern):
    """x whose trits give the quartic bytes in pattern (q from 5 digits)."""
    g = len(pattern)
    x = [F(0)] * (5 * g)
    for j, b in enumerate(pattern):
        for k in range(5):
            d = (b // 3 ** (4 - k)) % 3
            x[k * g + j] = F(d - 1)
    return x


rng = np.random.default_rng(20261129)
lap = lambda n: [F(v) for v in rng.laplace(0, 0.01, n)]

add('n0', [], 1.0)
add('n1 positive', [0.5], 1.0)
add('n1 negative s1.5', [-2.0], 1.5)
add('n4', [1.0, -0.25, 0.75, -1.0], 1.0)
add('n5', [0.1, -0.9, 0.4, 0.0, 1.0], 1.0)
add('n6', [0.3, -0.3, 0.2, -0.1, 0.05, -0.6], 1.25)
for r in (1, 2, 13, 14, 15, 27, 28, 29):
    pat = [242] + [ZERO_GROUP] * r + [0]
    add('zero run %d' % r, groups_to_x(pat), 1.0)
add('zero runs 1,2,3 mixed', groups_to_x([5, ZERO_GROUP, 7, ZERO_GROUP,
                                          ZERO_GROUP, 200] + [ZERO_GROUP] * 3
                                         + [100]), 1.0)
add('trailing run 40', groups_to_x([33] + [ZERO_GROUP] * 40), 1.0)
add('all zero n70', [0.0] * 70, 1.0)
add('all zero n211', [0.0] * 211, 1.5)
add('all nonzero', [(-1.0) ** i * (1.0 + i / 64) for i in range(40)], 1.0)
add('maxabs 0 with signed zeros', [0.0, -0.0] * 6, 1.0,
    e=[-0.0] * 12, acc=[-0.0, 0.0] * 6)
add('negative zero inputs', [-0.0, -0.0, 1.0, -0.0, -1.0, -0.0, 0.5], 1.0,
    e=[-0.0, 0.0, 0.0, -0.0, 0.0, 0.0, -0.0])
den = float(from_bits(1))
add('denormals only', [den, -den, 3 * den, -7 * den, 0.0, 5 * den], 1.0)
add('denormal scale s1.9', [den * 100, -den * 60, den * 20, -den * 99,
                            den * 50], 1.9)
add('smallest denormal', [den, 0.0, -den], 1.5)
add('denormals with normals', [den, 1e-38, -1e-39, 2e-38, -den], 1.0)
add('s 1.0 exact halves', [1.0, 0.5, -0.5, 0.50000006, -0.50000006, 0.25],
    1.0)
s_max = float(np.nextafter(F(2), F(0)))
add('s just below 2', [1.0, -1.0, 0.99999994, 0.5, -0.75, 0.1], s_max)
add('s just below 2 laplace', lap(23), s_max)
add('laplace n37 with feedback', lap(37), 1.0, e=lap(37))
add('laplace n64 s1.75 with feedback', lap(64), 1.75, e=lap(64))
add('laplace n101 s1.5', lap(101), 1.5, e=[v * F(0.1) for v in lap(101)])
add('x plus e cancels', [0.5, -0.25, 1.0], 1.0, e=[-0.5, 0.25, -1.0])
add('error case NaN input', [1.0, float('nan'), 0.5], 1.0)
add('error case Inf input', [1.0, float('-inf'), 0.5], 1.0)
add('error case t overflows', [3e38, 0.0], 1.0, e=[3e38, 0.0])
add('error case M overflows', [3e38, -1.0], 1.5)
add('error case s 2', [1.0, 0.5], 2.0)
add('error case s below 1', [1.0, 0.5], 0.999)
add('error case s NaN', [1.0, 0.5], float('nan'))


def c_u32(vals):
    return '{ ' + ', '.join('0x%08x' % bits(v) for v in vals) + ' }' \
        if vals else '{ 0 }'


def c_u8(vals):
    return '{ ' + ', '.join(str(v) for v in vals) + ' }' if vals else '{ 0 }'


def emit():
    w = sys.stdout.write
    w('/* SPDX-License-Identifier: MIT */\n')
    w('/*\n * vectors.h - 3LC golden vectors, generated from the codec '
      'specification by\n * tests/golden/gen_vectors.py; do not edit. '
      'Shared by the userspace tests\n * and the kernel self-test. The '
      'includer provides uint8_t, uint32_t, size_t\n * and the errno '
      'values.\n */\n')
    w('#ifndef GN_GOLDEN_VECTORS_H\n#define GN_GOLDEN_VECTORS_H\n\n')
    w('struct gn_golden {\n\tconst char *name;\n\tsize_t n;\n'
      '\tuint32_t s;\t\t/* float bits */\n'
      '\tint ret;\t\t/* 0 or -errno expected from encode */\n'
      '\tconst uint32_t *x, *e_in, *e_out, *acc_in, *acc_out;\n'
      '\tconst uint8_t *stream;\n\tsize_t stream_len;\n};\n\n')
    entries = []
    for idx, (name, x, s, e, acc) in enumerate(VECTORS):
        res = quantize(x, e, s)
        p = 'gv%d_' % idx
        w('static const uint32_t %sx[] = %s;\n' % (p, c_u32(x)))
        w('static const uint32_t %se_in[] = %s;\n' % (p, c_u32(e)))
        w('static const uint32_t %sacc_in[] = %s;\n' % (p, c_u32(acc)))
        if isinstance(res, str):
            w('static const uint32_t *const %se_out = %se_in;\n' % (p, p))
            w('static const uint32_t *const %sacc_out = %sacc_in;\n'
              % (p, p))
            w('static const uint8_t %sstream[] = { 0 };\n' % p)
            entries.append('\t{ "%s", %d, 0x%08x, -%s, %sx, %se_in, '
                           '%se_out, %sacc_in, %sacc_out, %sstream, 0 },\n'
                           % (name, len(x), bits(s), res, p, p, p, p, p, p))
            continue
        q, m, e_new = res
        stream = list(struct.pack('<f', float(m))) + zero_runs(quartic(q))
        w('static const uint32_t %se_out[] = %s;\n' % (p, c_u32(e_new)))
        w('static const uint32_t %sacc_out[] = %s;\n'
          % (p, c_u32(accumulate(acc, q, m))))
        w('static const uint8_t %sstream[] = %s;\n' % (p, c_u8(stream)))
        entries.append('\t{ "%s", %d, 0x%08x, 0, %sx, %se_in, %se_out, '
                       '%sacc_in, %sacc_out, %sstream, %d },\n'
                       % (name, len(x), bits(s), p, p, p, p, p, p,
                          len(stream)))
    w('\nstatic const struct gn_golden gn_golden[] = {\n')
    w(''.join(entries))
    w('};\n\n')
    emit_bad(w)
    w('#endif /* GN_GOLDEN_VECTORS_H */\n')


def emit_bad(w):
    """Malformed chunk streams: every one must give -EBADMSG."""
    one = list(struct.pack('<f', 1.0))
    bad = [
        ('empty stream', 5, []),
        ('scale cut short', 5, one[:3]),
        ('no groups', 5, one),
        ('too few groups', 15, one + [242, 121]),
        ('trailing byte', 5, one + [242, 121]),
        ('run too long', 10, one + [243, 0]),
        ('run past end', 70, one + [255, 255, 255, 255, 255, 255]),
        ('NaN scale', 5, list(struct.pack('<I', 0x7fc00000)) + [242]),
        ('infinite scale', 5, list(struct.pack('<I', 0x7f800000)) + [242]),
        ('negative scale', 5, list(struct.pack('<f', -1.0)) + [242]),
        ('negative zero scale', 5, list(struct.pack('<I', 0x80000000))
         + [121]),
        ('nonzero padding n4', 4, one + [122]),
        ('nonzero padding n1', 1, one + [162]),
        ('nonzero padding n6', 6, one + [121, 124]),
        ('n0 with a group', 0, one + [121]),
    ]
    w('struct gn_golden_bad {\n\tconst char *name;\n\tsize_t n;\n'
      '\tconst uint8_t *stream;\n\tsize_t stream_len;\n};\n\n')
    for idx, (name, n, stream) in enumerate(bad):
        w('static const uint8_t gb%d[] = %s;\n' % (idx, c_u8(stream)))
    w('\nstatic const struct gn_golden_bad gn_golden_bad[] = {\n')
    for idx, (name, n, stream) in enumerate(bad):
        w('\t{ "%s", %d, gb%d, %d },\n' % (name, n, idx, len(stream)))
    w('};\n\n')


if __name__ == '__main__':
    emit()
