#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""verdict.py - the test command's verdict from meson's test logs.

    verdict.py LABEL=BUILD/meson-logs/testlog.json ... [--isas "scalar avx2"]

A test passes only if it ran all of itself: meson's SKIP (exit 77) and every
TAP line "ok N ... # SKIP" or "1..0 # SKIP" count as skips, and a skip
fails the run unless GN_ALLOW_SKIP names the test (its name without the
build label, e.g. "kmod-qemu,net-loss"; "all" allows any). The last line is
"N passed, N failed, N skipped"; the lines above it name every skip, what
allowed it, and the codec instruction sets whose suites ran, and under each
failed test its failed TAP lines with the comments that came before them,
or the end of its output (a CI log often shows only its last lines).

Exit: 0 if nothing failed and nothing skipped unallowed, else 1.
"""
import json
import os
import re
import sys

SKIP_LINE = re.compile(r'^(?:(?:not )?ok\b.*|1\.\.0\b.*)#\s*skip\b\s*(.*)$',
                       re.IGNORECASE)
BAD = {'FAIL', 'TIMEOUT', 'ERROR', 'UNEXPECTEDPASS'}


def tap_skips(stdout):
    """The TAP lines of @stdout that report a skip."""
    return [line.strip() for line in stdout.splitlines()
            if SKIP_LINE.match(line.strip())]


def why_failed(t, most=12, width=240):
    """What to print under a failed test: its "not ok" lines, each after
    the last six "#" comments printed since the previous result line;
    failing that, the last lines of its output."""
    out, notes = [], []
    for line in (t.get('stdout') or '').splitlines():
        line = line.strip()
        if line.startswith('#'):
            notes = (notes + [line])[-6:]
        elif line.startswith('not ok'):
            out += notes + [line]
            notes = []
        elif line.startswith('ok'):
            notes = []
    if not out:
        text = (t.get('stdout') or '') + (t.get('stderr') or '')
        out = [l.strip() for l in text.splitlines() if l.strip()][-4:]
    return ['    ' + l[:width] for l in out[-most:]]


def short_name(name):
    """'gradnet:isa-avx2 / codec-avx2' -> 'codec-avx2'."""
    return name.split(' / ', 1)[-1]


def main(argv):
    allowed = {a.strip() for a in os.environ.get('GN_ALLOW_SKIP', '').split(',')
               if a.strip()}
    isas = None
    logs = []
    args = iter(argv)
    for a in args:
        if a == '--isas':
            isas = next(args, '').split()
        elif '=' in a:
            logs.append(tuple(a.split('=', 1)))
        else:
            print(f'verdict.py: bad argument {a!r}', file=sys.stderr)
            return 2

    passed = failed = skipped = 0
    lines = []
    for label, path in logs:
        try:
            with open(path) as f:
                tests = [json.loads(line) for line in f if line.strip()]
        except OSError as e:
            lines.append(f'FAIL {label}: no test log ({e})')
            failed += 1
            continue
        if not tests:
            lines.append(f'FAIL {label}: no test ran')
            failed += 1
        for t in tests:
            name = short_name(t['name'])
            where = f'{label}/{name}'
            skips = tap_skips(t.get('stdout') or '')
            if t['result'] == 'SKIP' and not skips:
                skips = ['the whole test (exit 77)']
            if t['result'] in BAD:
                failed += 1
                lines.append(f'FAIL {where}: {t["result"]}')
                lines += why_failed(t)
            elif skips and not (allowed & {name, 'all'}):
                failed += 1
                for s in skips:
                    lines.append(f'FAIL {where}: skipped, not allowed '
                                 f'(GN_ALLOW_SKIP={name} allows it): {s}')
            elif skips:
                skipped += 1
                for s in skips:
                    lines.append(f'SKIP {where}, allowed by GN_ALLOW_SKIP: {s}')
            else:
                passed += 1

    for line in lines:
        print(line)
    if isas is not None:
        every = ['scalar', 'avx2', 'avx512']
        lacks = [i for i in every if i not in isas]
        print('codec instruction sets tested end to end: ' + ' '.join(isas) +
              (f' (this CPU lacks {" ".join(lacks)}: not run here)'
               if lacks else ''))
    print(f'{passed} passed, {failed} failed, {skipped} skipped')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
