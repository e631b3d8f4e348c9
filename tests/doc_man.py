#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""doc_man.py - every man page of doc/man is clean and whole: mandoc -Tlint
reports nothing at warning level or above, groff -ww warns of nothing,
`man -l` renders it at 80 columns without a warning, and it has the
sections its kind of page needs (RETURN VALUE and ERRORS for functions and
ioctls, EXIT STATUS for programs). TAP on stdout, one test point per page.
A missing mandoc, groff or man fails the run: tools/run.sh installs them.

usage: doc_man.py MAN_DIR
"""

import os
import re
import shutil
import subprocess
import sys

MAN_DIR = sys.argv[1]

# Sections every page has, and those of each manual section; a tuple is
# a choice (a program with subcommands documents its options under them).
ALWAYS = ['NAME', 'DESCRIPTION', 'SEE ALSO']
NEEDS = {
    '1': ['SYNOPSIS', ('OPTIONS', 'COMMANDS'), 'EXIT STATUS'],
    '3': ['LIBRARY', 'SYNOPSIS', 'RETURN VALUE', 'ERRORS'],
    '4': ['SYNOPSIS', 'RETURN VALUE', 'ERRORS'],
    '7': ['ENVIRONMENT'],
    '8': ['SYNOPSIS', 'EXIT STATUS'],
}


def run(cmd, env=None):
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


def check(page):
    """What is wrong with @page, as messages."""
    path = os.path.join(MAN_DIR, page)
    bad = []
    sec = page.rsplit('.', 1)[1]
    with open(path, encoding='utf-8') as f:
        text = f.read()
    m = re.search(r'^\.TH (\S+) (\S+) ', text, re.M)
    if not m:
        bad.append('no .TH line')
    elif (m.group(1), m.group(2)) != (page.rsplit('.', 1)[0].upper(), sec):
        bad.append('.TH says %s(%s), the file is %s' % (m.group(1), m.group(2), page))
    have = re.findall(r'^\.SH "?([^"\n]+?)"?\s*$', text, re.M)
    for s in ALWAYS + NEEDS.get(sec, []):
        choice = s if isinstance(s, tuple) else (s,)
        if not any(c in have for c in choice):
            bad.append('no %s section' % ' or '.join(choice))
    r = run(['mandoc', '-Tlint', '-W', 'warning', path])
    for line in (r.stdout + r.stderr).splitlines():
        bad.append(line)
    if r.returncode and not (r.stdout + r.stderr).strip():
        bad.append('mandoc -Tlint exited %d' % r.returncode)
    r = run(['groff', '-man', '-ww', '-z', path])
    for line in r.stderr.splitlines():
        bad.append('groff: ' + line)
    env = dict(os.environ, MANWIDTH='80', MAN_KEEP_FORMATTING='')
    r = run(['man', '--warnings', '-l', path], env=env)
    for line in r.stderr.splitlines():
        bad.append('man -l: ' + line)
    if r.returncode or 'NAME' not in r.stdout:
        bad.append('man -l %s rendered nothing (exit %d)' % (page, r.returncode))
    return bad


def main():
    print('TAP version 13')
    missing = [t for t in ('mandoc', 'groff', 'man') if not shutil.which(t)]
    if missing:
        print('Bail out! %s not installed (Debian packages mandoc, groff-base, '
              'man-db; tools/run.sh installs them)' % ', '.join(missing))
        return 1
    pages = sorted(p for p in os.listdir(MAN_DIR) if re.search(r'\.[1-8]$', p))
    if not pages:
        print('Bail out! no man page in %s' % MAN_DIR)
        return 1
    print('1..%d' % len(pages))
    failed = 0
    for i, page in enumerate(pages, 1):
        bad = check(page)
        for b in bad:
            print('# %s: %s' % (page, b))
        if bad:
            failed += 1
            print('not ok %d - %s' % (i, page))
        else:
            print('ok %d - %s lints clean and renders' % (i, page))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
