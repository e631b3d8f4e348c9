#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""doc_coverage.py - the manual covers what the code offers, found in the
code, not in a list kept by hand:

  - every function gradnet.h exports (GN_EXPORT) is named on the NAME line
    of a section-3 page of doc/man, and every name there is such a function;
  - every GN_* (and GRADNET_*) environment variable the library, the tools
    and the Python package read has its entry in gradnet(7)'s ENVIRONMENT
    and its row in doc/configuration.md, and every entry there is read
    somewhere. A variable is read where C calls getenv() on its name or
    lists it in a NULL-terminated table of names (lib/options.c's *_vars[]),
    where Python calls os.environ.get() or indexes os.environ with it (in
    python/gradnet a string that is exactly a GN_ name is one too), or
    where a shell script expands it;
  - every program meson installs into bindir or sbindir has its section 1
    or 8 page, every page of doc/man is installed, and so is every other
    name of a NAME line, as a link (meson's install plan);
  - every parameter of the kernel module has its entry in gradnet(4)'s
    PARAMETERS, and every ioctl of include/uapi/linux/gradnet.h its entry
    in IOCTLS.

A failure names each missing name, where the code has it and where its
entry belongs. TAP on stdout.

usage: doc_coverage.py SOURCE_ROOT BUILD_ROOT
"""

import glob
import json
import os
import re
import sys

SRC = os.path.abspath(sys.argv[1])
BUILD = os.path.abspath(sys.argv[2])
MAN = os.path.join(SRC, 'doc', 'man')
ENV_NAME = r'(?:GN|GRADNET)_[A-Z0-9_]+'


def read(path):
    with open(path, encoding='utf-8') as f:
        return f.read()


def rel(path):
    return os.path.relpath(path, SRC)


def line_of(text, pos):
    return text.count('\n', 0, pos) + 1


def strip_c_comments(text):
    """@text with C comments blanked (newlines kept, so lines still count)."""
    return re.sub(r'/\*.*?\*/|//[^\n]*',
                  lambda m: re.sub(r'[^\n]', ' ', m.group(0)), text, flags=re.S)


def sources(*patterns):
    out = []
    for p in patterns:
        out += glob.glob(os.path.join(SRC, p), recursive=True)
    return sorted(set(out))


# ---- what the code offers -------------------------------------------------

def exported_functions():
    """{name: 'include/gradnet/gradnet.h:LINE'} of every GN_EXPORT function."""
    path = os.path.join(SRC, 'include', 'gradnet', 'gradnet.h')
    text = strip_c_comments(read(path))
    out = {}
    for m in re.finditer(r'^GN_EXPORT\b[^;(]*?\b(gn_\w+)\s*\(', text, re.M):
        out[m.group(1)] = '%s:%d' % (rel(path), line_of(text, m.start(1)))
    return out


def env_reads():
    """{variable: first 'file:line' that reads it}."""
    found = {}

    def add(name, path, text, pos):
        if re.fullmatch(ENV_NAME, name):
            found.setdefault(name, '%s:%d' % (rel(path), line_of(text, pos)))

    c_files = sources('lib/**/*.c', 'lib/**/*.h', 'dpdk/**/*.c', 'dpdk/**/*.h',
                      'tools/**/*.c', 'tools/**/*.h', 'kmod/**/*.c')
    for path in c_files:
        text = strip_c_comments(read(path))
        for m in re.finditer(r'\b(?:secure_)?getenv\s*\(\s*"([A-Za-z0-9_]+)"\s*\)', text):
            add(m.group(1), path, text, m.start(1))
        # A NULL-terminated table of variable names: { "GN_A", "B", NULL }
        for m in re.finditer(r'\{((?:\s*"[A-Za-z0-9_]+"\s*,)+)\s*NULL\s*\}', text):
            for n in re.finditer(r'"([A-Za-z0-9_]+)"', m.group(1)):
                add(n.group(1), path, text, m.start(1) + n.start(1))
    py_files = sources('python/gradnet/**/*.py', 'tools/**/*.py', 'tests/verdict.py')
    for path in py_files:
        text = read(path)
        for m in re.finditer(r'environ(?:\.get\(\s*|\[\s*)["\']([A-Za-z0-9_]+)["\']', text):
            add(m.group(1), path, text, m.start(1))
        for m in re.finditer(r'\bgetenv\(\s*["\']([A-Za-z0-9_]+)["\']', text):
            add(m.group(1), path, text, m.start(1))
        if '/python/gradnet/' in path:
            for m in re.finditer(r'["\'](GN_[A-Z0-9_]+)["\']', text):
                add(m.group(1), path, text, m.start(1))
    for path in sources('tools/**/*.sh'):
        text = read(path)
        for m in re.finditer(r'(?m)^[^#\n]*?\$\{?(' + ENV_NAME + r')\b', text):
            add(m.group(1), path, text, m.start(1))
    return found


def module_params():
    """{parameter: 'file:line'} of the kernel module."""
    out = {}
    for path in sources('kmod/**/*.c'):
        text = strip_c_comments(read(path))
        for m in re.finditer(r'\bmodule_param(?:_named|_cb|_array|_string)?\s*\(\s*(\w+)', text):
            out.setdefault(m.group(1), '%s:%d' % (rel(path), line_of(text, m.start(1))))
    return out


def ioctls():
    path = os.path.join(SRC, 'include', 'uapi', 'linux', 'gradnet.h')
    text = strip_c_comments(read(path))
    return {m.group(1): '%s:%d' % (rel(path), line_of(text, m.start(1)))
            for m in re.finditer(r'#define\s+(GRADNET_IOC_\w+)\s+_IO', text)}


def installed():
    """Install paths meson's plan holds (files and links)."""
    path = os.path.join(BUILD, 'meson-info', 'intro-installed.json')
    return set(json.loads(read(path)).values())


# ---- what the manual says ---------------------------------------------------

def pages():
    return sorted(p for p in os.listdir(MAN) if re.search(r'\.[1-8]$', p))


def name_line(page):
    """The names of a page's NAME section: 'a, b, c \\- what they do'."""
    text = read(os.path.join(MAN, page))
    m = re.search(r'^\.SH NAME\n(.*?)\\-', text, re.S | re.M)
    if not m:
        return []
    return [n.strip() for n in m.group(1).replace('\n', ' ').split(',') if n.strip()]


def section(page, title):
    """The text of section @title of @page, up to the next .SH."""
    text = read(os.path.join(MAN, page))
    m = re.search(r'^\.SH "?%s"?\n(.*?)(?=^\.SH |\Z)' % re.escape(title), text,
                  re.S | re.M)
    return m.group(1) if m else ''


def tagged_entries(text):
    """The names that head .TP entries: '.TP' then '.B X', '.BR X ", " Y'."""
    out = set()
    for m in re.finditer(r'^\.TP\n\.B[IR]?\s+(.+)$', text, re.M):
        tag = re.sub(r'\\f[BIRP]', '', m.group(1))
        tag = tag.replace('\\-', '-').replace('"', ' ')
        out.update(re.findall(r'[A-Za-z_][A-Za-z0-9_]*', tag))
    return out


# ---- the checks -------------------------------------------------------------

def check_functions():
    funcs = exported_functions()
    named = {}
    for p in pages():
        if p.endswith('.3'):
            for n in name_line(p):
                named[n] = p
    bad = ['%s (%s) has no man page: add it to the NAME line of a section-3 page '
           'in doc/man/ and its own paragraph there' % (f, where)
           for f, where in sorted(funcs.items()) if f not in named]
    if len(funcs) < 15:
        bad.append('found only %d GN_EXPORT functions in gradnet.h: is the scan broken?'
                   % len(funcs))
    return bad, '%d functions of gradnet.h, each on a page\'s NAME line' % len(funcs)


def check_names_are_functions():
    funcs = exported_functions()
    bad = []
    for p in pages():
        if p.endswith('.3'):
            bad += ['doc/man/%s names %s, which gradnet.h does not export' % (p, n)
                    for n in name_line(p) if n not in funcs]
    return bad, 'every name on a section-3 NAME line is a function of gradnet.h'


def check_env_man():
    reads = env_reads()
    have = tagged_entries(section('gradnet.7', 'ENVIRONMENT'))
    bad = ['%s (read at %s) has no entry in gradnet(7): add a .TP entry with its '
           'default to ENVIRONMENT in doc/man/gradnet.7' % (v, where)
           for v, where in sorted(reads.items()) if v not in have]
    if len(reads) < 20:
        bad.append('found only %d variables read: is the scan broken?' % len(reads))
    return bad, '%d variables read, each in gradnet(7) ENVIRONMENT' % len(reads)


def check_env_table():
    reads = env_reads()
    table = read(os.path.join(SRC, 'doc', 'configuration.md'))
    rows = set(re.findall(r'^\| `(' + ENV_NAME + r')` \|', table, re.M))
    bad = ['%s (read at %s) has no row in doc/configuration.md: add one, with its '
           'default, to the table of its part' % (v, where)
           for v, where in sorted(reads.items()) if v not in rows]
    return bad, 'every variable read has its row in doc/configuration.md'


def check_env_stale():
    reads = env_reads()
    have = {v for v in tagged_entries(section('gradnet.7', 'ENVIRONMENT'))
            if re.fullmatch(ENV_NAME, v)}
    bad = ['gradnet(7) documents %s, which nothing in lib/, dpdk/, tools/ or '
           'python/ reads' % v for v in sorted(have - set(reads))]
    return bad, 'every variable gradnet(7) documents is read somewhere'


def check_programs():
    plan = installed()
    bad = []
    progs = sorted(os.path.basename(p) for p in plan
                   if re.search(r'/s?bin/[^/]+$', p))
    for prog in progs:
        page = [p for p in (prog + '.1', prog + '.8') if os.path.exists(os.path.join(MAN, p))]
        if not page:
            bad.append('%s is installed but has no page: add doc/man/%s.1 (or .8) and '
                       'list it in doc/meson.build' % (prog, prog))
    if not progs:
        bad.append('meson installs no program: is the install plan unreadable?')
    return bad, '%d installed programs, each with its page' % len(progs)


def check_installed():
    plan = installed()
    bad = []
    for p in pages():
        sec = p.rsplit('.', 1)[1]
        for n in dict.fromkeys([p.rsplit('.', 1)[0]] + name_line(p)):
            if not any(i.endswith('/man%s/%s.%s' % (sec, n, sec)) for i in plan):
                bad.append('%s.%s (doc/man/%s) is not installed: list the page in '
                           'doc/meson.build' % (n, sec, p))
    return bad, 'every page and every name on its NAME line is installed'


def check_params():
    params = module_params()
    have = tagged_entries(section('gradnet.4', 'PARAMETERS'))
    bad = ['module parameter %s (%s) has no entry in gradnet(4) PARAMETERS '
           '(doc/man/gradnet.4)' % (p, where) for p, where in sorted(params.items())
           if p not in have]
    if not params:
        bad.append('found no module parameter in kmod/: is the scan broken?')
    return bad, '%d module parameters, each in gradnet(4)' % len(params)


def check_ioctls():
    ios = ioctls()
    have = tagged_entries(section('gradnet.4', 'IOCTLS'))
    bad = ['%s (%s) has no entry in gradnet(4) IOCTLS (doc/man/gradnet.4)' % (i, where)
           for i, where in sorted(ios.items()) if i not in have]
    if not ios:
        bad.append('found no GRADNET_IOC_* ioctl: is the scan broken?')
    return bad, '%d ioctls, each in gradnet(4)' % len(ios)


CHECKS = [check_functions, check_names_are_functions, check_env_man,
          check_env_table, check_env_stale, check_programs, check_installed,
          check_params, check_ioctls]


def main():
    print('TAP version 13')
    print('1..%d' % len(CHECKS))
    failed = 0
    for i, fn in enumerate(CHECKS, 1):
        bad, what = fn()
        for b in bad:
            print('# ' + b)
        if bad:
            failed += 1
            print('not ok %d - %s' % (i, what))
        else:
            print('ok %d - %s' % (i, what))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
