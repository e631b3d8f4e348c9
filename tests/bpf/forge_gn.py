#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""forge_gn.py - a stranger's UDP datagrams that look like gradnet's, for
tests/bpf/tc_refuse_test.sh. Headers are packed from the layout of
include/gradnet/wire.h (struct.pack), never sealed: no key.

usage: forge_gn.py KIND ADDR PORT COUNT [JOB]
  junk       "GN" and random bytes, 2 to 200 of them
  version    well-formed headers of protocol version 2 (refused: 4 is ours)
  header     magic and version right, lengths that do not add up
  job        well-formed DATA headers of job JOB (random if none)
  flood      well-formed DATA headers of job JOB, each of another flow
             (source, destination, tensor)
Sends COUNT datagrams, paced so the receiver's backlog never drops one,
and prints how many and their payload bytes.
"""
import os
import random
import socket
import struct
import sys
import time

MAGIC = 0x4E47
VERSION = 4
TAG = 16
DATA = 2


def header(version, typ, src, dst, job, tensor, body_len, pn, phase=0,
           codec=1):
    # The seal's byte (0: the body encrypted) and the packet number share
    # the last 8 bytes; tc reads both but cannot check the tag.
    return struct.pack("<HBBHHIIIHBBQ", MAGIC, version, typ, src, dst, job,
                       tensor, 1, body_len, phase, codec, pn << 8)


def data_packet(version, job, src, dst, tensor, pn):
    body = random.randrange(0, 64) * 4
    part = struct.pack("<QIIIIII", 0, 1 << 16, 0, body // 4, 0, 0, 1)
    return (header(version, DATA, src, dst, job, tensor, body, pn) + part +
            os.urandom(body) + bytes(TAG))


def forge(kind, i, job):
    if kind == "junk":
        return b"GN" + os.urandom(random.randrange(0, 199))
    if kind == "version":
        return data_packet(2, job, 0, 1, 7, i + 1)
    if kind == "header":
        p = data_packet(VERSION, job, 0, 1, 7, i + 1)
        return p + os.urandom(random.randrange(1, 16))
    if kind == "job":
        return data_packet(VERSION, job, random.randrange(4),
                           random.randrange(4), random.randrange(8), i + 1)
    if kind == "flood":
        return data_packet(VERSION, job, i % 1000, (i // 1000) % 64,
                           1000 + i, i + 1)
    raise SystemExit("forge_gn.py: unknown kind " + kind)


def main():
    if len(sys.argv) not in (5, 6):
        raise SystemExit(__doc__)
    kind, addr, port, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
        int(sys.argv[4])
    job = int(sys.argv[5]) if len(sys.argv) == 6 else \
        random.randrange(1, 1 << 32)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sent = nbytes = 0
    for i in range(count):
        p = forge(kind, i, job)
        s.sendto(p, (addr, port))
        sent += 1
        nbytes += len(p)
        if i % 50 == 49:
            time.sleep(0.005)
    print(sent, nbytes)


main()
