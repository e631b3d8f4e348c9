#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""doc_links.py - every relative link of README.md and doc/**/*.md points at
something: a file or directory of the tree, and for a #anchor a heading of
the page it names, spelt as GitHub spells heading anchors. Every page and
picture under doc/ is reachable from README.md. TAP on stdout, one test
point per page and one for reachability.

usage: doc_links.py SOURCE_ROOT
"""

import collections
import os
import re
import sys
import urllib.parse

ROOT = os.path.abspath(sys.argv[1])

FENCE = re.compile(r'^ {0,3}(```|~~~)')
# [text](target) and ![alt](target); the text may hold `code` and brackets
# one level deep. Reference-style links are not used in this tree.
LINK = re.compile(r'!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)')
CODE_SPAN = re.compile(r'(`+)(?:.+?)\1')
HEADING = re.compile(r'^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$')


def prose_lines(text):
    """(line number, line) of @text outside fenced code blocks, with code
    spans blanked so a link shown as code is not taken for one."""
    fence = None
    for n, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif line.strip().startswith(fence):
                fence = None
            continue
        if fence is None:
            yield n, CODE_SPAN.sub(lambda s: ' ' * len(s.group(0)), line)


def slug(title):
    """GitHub's anchor for a heading: the text as rendered (links by their
    text, no emphasis or code marks), lower case, every character that is
    not a letter, digit, space, hyphen or underscore dropped, spaces made
    hyphens."""
    t = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', title)
    t = re.sub(r'<[^>]+>', '', t)
    t = t.replace('`', '').replace('*', '')
    t = re.sub(r'(?<!\w)_+|_+(?!\w)', '', t)
    t = t.strip().lower()
    t = ''.join(c for c in t if c.isalnum() or c in ' -_')
    return t.replace(' ', '-')


_anchors = {}


def anchors(path):
    """The anchors of the Markdown page @path, with GitHub's -1, -2 ... for
    repeated headings."""
    if path not in _anchors:
        seen = collections.Counter()
        out = set()
        with open(path, encoding='utf-8') as f:
            text = f.read()
        fence = None
        for line in text.splitlines():
            m = FENCE.match(line)
            if m:
                if fence is None:
                    fence = m.group(1)
                elif line.strip().startswith(fence):
                    fence = None
                continue
            h = HEADING.match(line) if fence is None else None
            if not h:
                continue
            s = slug(h.group(2))
            out.add(s if not seen[s] else '%s-%d' % (s, seen[s]))
            seen[s] += 1
        _anchors[path] = out
    return _anchors[path]


def check_page(page):
    """The broken links of @page, as messages, the files it links, and how
    many links it has."""
    bad, linked, count = [], set(), 0
    with open(page, encoding='utf-8') as f:
        text = f.read()
    rel = os.path.relpath(page, ROOT)
    for n, line in prose_lines(text):
        for m in LINK.finditer(line):
            target = m.group(1)
            if not target or re.match(r'^[a-zA-Z][a-zA-Z0-9+.-]*:', target):
                continue        # a URL (https:, mailto:): not ours to check
            count += 1
            path, _, frag = target.partition('#')
            path = urllib.parse.unquote(path)
            dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) \
                if path else page
            where = '%s:%d: %s' % (rel, n, target)
            if not dest.startswith(ROOT + os.sep) and dest != ROOT:
                bad.append('%s: points outside the tree' % where)
                continue
            if not os.path.exists(dest):
                bad.append('%s: no such file %s' % (where, os.path.relpath(dest, ROOT)))
                continue
            linked.add(dest)
            if frag:
                if not dest.endswith('.md') or os.path.isdir(dest):
                    bad.append('%s: an anchor into a file that is not Markdown' % where)
                elif urllib.parse.unquote(frag) not in anchors(dest):
                    bad.append('%s: %s has no heading whose anchor is #%s' %
                               (where, os.path.relpath(dest, ROOT), frag))
    return bad, linked, count


def main():
    readme = os.path.join(ROOT, 'README.md')
    docs = os.path.join(ROOT, 'doc')
    pages = [readme]
    extras = []
    for d, _, files in sorted(os.walk(docs)):
        for f in sorted(files):
            p = os.path.join(d, f)
            if f.endswith('.md'):
                pages.append(p)
            elif f.endswith(('.png', '.svg')):
                extras.append(p)
    print('TAP version 13')
    print('1..%d' % (len(pages) + 1))
    failed = 0
    graph = {}
    for i, page in enumerate(pages, 1):
        bad, linked, count = check_page(page)
        graph[page] = linked
        rel = os.path.relpath(page, ROOT)
        if page == readme and not count:
            bad.append('README.md: no relative link found (is the link pattern broken?)')
        for b in bad:
            print('# ' + b)
        if bad:
            failed += 1
            print('not ok %d - %s: %d broken link(s)' % (i, rel, len(bad)))
        else:
            print('ok %d - %s: %d link(s) resolve' % (i, rel, count))
    # What README.md reaches, following links between the pages.
    seen, todo = {readme}, [readme]
    while todo:
        for dest in graph.get(todo.pop(), ()):
            if dest not in seen:
                seen.add(dest)
                if dest in graph:
                    todo.append(dest)
    orphans = [p for p in pages + extras
               if p not in seen and os.path.basename(p) != 'README.md']
    for p in orphans:
        print('# %s: no link from README.md leads here' % os.path.relpath(p, ROOT))
    n = len(pages) + 1
    if orphans:
        failed += 1
        print('not ok %d - every page and picture under doc/ is reachable from README.md' % n)
    else:
        print('ok %d - every page and picture under doc/ is reachable from README.md' % n)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
