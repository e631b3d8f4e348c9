#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Write tests/golden/packets.h: one golden packet of every type, laid out
byte by byte with struct.pack from the format documented in
include/gradnet/wire.h, and sealed by the independent Python of gnseal.py
(held to RFC 8439 and RFC 7693 first):
    /usr/bin/python3 tests/golden/gen_packets.py > tests/golden/packets.h

Nothing here comes from the C builders. The field values are what
libgradnet sends (see the comments), and pass every parser check; where
the format allows, they are multi-byte values with distinct bytes (job,
step, stamps, instances, offsets past 4 GiB), so that a field written at
the wrong offset, width or byte order shows.
"""
import struct
import sys

import gnseal

MAGIC = 0x4e47
VERSION = 4
HELLO, DATA, ACK, CTRL, CTRL_ACK, PING, PONG, WHOLE = range(1, 9)
TYPE_NAMES = {HELLO: 'GN_PKT_HELLO', DATA: 'GN_PKT_DATA', ACK: 'GN_PKT_ACK',
              CTRL: 'GN_PKT_CTRL', CTRL_ACK: 'GN_PKT_CTRL_ACK',
              PING: 'GN_PKT_PING', PONG: 'GN_PKT_PONG',
              WHOLE: 'GN_PKT_WHOLE'}
REDUCE, GATHER = 0, 1
CODEC_NONE, CODEC_3LC = 1, 2
HELLO_REPLY, HELLO_INSECURE, HELLO_ANSWER = 1, 2, 4
CTRL_TENSOR, CTRL_ABORT = 1, 2
TENSOR_AVERAGE = 1
RANK_ALL = 0xffff
EDOM = 33

KEY = bytes(range(0x40, 0x50))
JOB = 0x6a6f6221
TAG_LEN = gnseal.TAG_LEN
SEAL_CLEAR = gnseal.SEAL_CLEAR
# The run the golden packets belong to: every rank's instance (the HELLOs
# below carry them), whose session key seals everything but HELLOs.
INSTANCES = [0x8877665544332211, 0xfedcba9876543210, 0x0123456789abcdef]
# The digest of the peer list every rank was given, in every HELLO.
PEERS_DIGEST = bytes(range(0xa0, 0xb0))
INFO = (struct.pack('<IHBB', JOB, len(INSTANCES), VERSION, 0) +
        b''.join(struct.pack('<Q', i) for i in INSTANCES) + PEERS_DIGEST)
SESSION = gnseal.session_key(KEY, INFO)

# Common header, 32 bytes: magic, version, type, src, dst, job, tensor,
# step, body length, phase, codec, then seal flags and packet number as
# one u64 (flags in its low byte), which gnseal.seal() writes.
HDR = struct.Struct('<HBBHHIIIHBBQ')
# HELLO: world, flags, reserved u8 and u32, chunk, mtu, reserved, instance,
# echo.
HELLO_PART = struct.Struct('<HBBIIHHQQ')
# DATA: chunk_off, chunk_len, first, count, aux, pkt, npkts.
DATA_PART = struct.Struct('<QIIIIII')
# WHOLE: chunk_off, chunk_len, aux; the rest of DATA's fields implied.
WHOLE_PART = struct.Struct('<QII')
# ACK: entries, reserved; an entry: tensor, step, chunk_off, npkts, base,
# phase, reserved, bitmap bytes.
ACK_PART = struct.Struct('<HH')
ACK_ENTRY = struct.Struct('<IIQIIBBH')
# CTRL: seq, kind, flags, reserved, value, extra, eight parameter words.
CTRL_PART = struct.Struct('<IBBHQI8I')
CTRL_ACK_PART = struct.Struct('<I')
PING_PART = struct.Struct('<Q')

assert (HDR.size, HELLO_PART.size, DATA_PART.size, ACK_PART.size,
        ACK_ENTRY.size, CTRL_PART.size, CTRL_ACK_PART.size,
        PING_PART.size, WHOLE_PART.size) == (32, 32, 32, 4, 28, 52, 4, 8, 16)


def f32(x):
    return struct.unpack('<I', struct.pack('<f', x))[0]


# Packet numbers: one a packet, with distinct bytes, up to 56 bits.
PNS = iter([0x00f1e2d3c4b5a697 - 97 * i for i in range(64)])


def hdr(typ, src, dst, tensor=0, step=0, phase=0, codec=0, seal=0):
    return dict(type=typ, src=src, dst=dst, job=JOB, tensor=tensor,
                step=step, phase=phase, codec=codec, seal=seal,
                pn=next(PNS))


def packet(name, h, part_fields, part, body=b'', keyed=True, ack=None,
           instance=0):
    """Sealed under the HELLO key of @instance (a HELLO) or its sender's
    key of the golden run; unkeyed: as a job without a key sends it."""
    raw = HDR.pack(MAGIC, VERSION, h['type'], h['src'], h['dst'], h['job'],
                   h['tensor'], h['step'], len(body), h['phase'],
                   h['codec'], 0) + part + body
    if not keyed:
        key = None
        h = dict(h, seal=h['seal'] | SEAL_CLEAR)
    elif h['type'] == HELLO:
        key = gnseal.hello_key(KEY, h['src'], instance)
    else:
        key = gnseal.sender_key(SESSION, h['src'])
    sealed, tag = gnseal.seal(key, raw, h['pn'], h['seal'])
    return dict(name=name, hdr=h, fields=part_fields, body=body, keyed=keyed,
                ack=ack or [], tag=tag, bytes=sealed)


def hello(name, src, dst, flags, instance, echo, keyed=True):
    # What every rank must agree on: 3 ranks, 65536 elements a chunk,
    # MTU 1500 (codecs are the tensors', in their descriptors).
    f = dict(world=3, flags=flags, chunk=65536, mtu=1500, instance=instance,
             echo=echo)
    part = HELLO_PART.pack(f['world'], f['flags'], 0, 0, f['chunk'],
                           f['mtu'], 0, f['instance'], f['echo'])
    # The body: the 16-byte digest of the peer list the sender was given.
    return packet(name, hdr(HELLO, src, dst), f, part, PEERS_DIGEST,
                  keyed=keyed, instance=instance)


def data(name, h, f, body):
    part = DATA_PART.pack(f['chunk_off'], f['chunk_len'], f['first'],
                          f['count'], f['aux'], f['pkt'], f['npkts'])
    return packet(name, h, f, part, body)


def whole(name, h, f, body):
    # What a parser fills in: the whole chunk in the codec's units (groups
    # of five values for 3LC, values else), one packet.
    groups = (f['chunk_len'] + 4) // 5
    f = dict(f, first=0, pkt=0, npkts=1,
             count=groups if h['codec'] == CODEC_3LC else f['chunk_len'])
    part = WHOLE_PART.pack(f['chunk_off'], f['chunk_len'], f['aux'])
    return packet(name, h, f, part, body)


def ack(name, src, dst, entries):
    body = b''
    for e in entries:
        body += ACK_ENTRY.pack(e['tensor'], e['step'], e['chunk_off'],
                               e['npkts'], e['base'], e['phase'], 0,
                               len(e['bitmap'])) + bytes(e['bitmap'])
    part = ACK_PART.pack(len(entries), 0)
    return packet(name, hdr(ACK, src, dst), dict(entries=len(entries)),
                  part, body, ack=entries)


def ctrl(name, h, f):
    part = CTRL_PART.pack(f['seq'], f['kind'], f['flags'], 0, f['value'],
                          f['extra'], *f['params'])
    return packet(name, h, f, part)


def packets():
    out = [
        # A rank's first HELLO: it has heard nothing yet.
        hello('hello', 2, 1, 0, INSTANCES[2], 0),
        # The answer of a rank that has the HELLO and agrees.
        hello('hello answer', 1, 2, HELLO_REPLY | HELLO_ANSWER,
              INSTANCES[1], INSTANCES[2]),
        # A job without a key: the flag says so, the body is in the clear
        # and the tag is 16 zero bytes.
        hello('hello insecure', 0, 2, HELLO_INSECURE, INSTANCES[0],
              0x00f0e0d0c0b0a090, keyed=False),
        # A 3LC contribution: the second of four packets of a chunk past
        # 4 GiB elements, six bytes of zero-run code for 40 groups.
        data('data 3lc', hdr(DATA, 2, 0, 7, 0x102, REDUCE, CODEC_3LC),
             dict(chunk_off=(1 << 32) + 65536, chunk_len=65536, first=100,
                  count=40, aux=f32(0.25), pkt=1, npkts=4),
             bytes([242, 121, 255, 250, 0, 130])),
        # A dense result from the owner: four float32 values.
        data('data none', hdr(DATA, 0, 2, 9, 0x0301, GATHER, CODEC_NONE),
             dict(chunk_off=4096, chunk_len=1000, first=996, count=4,
                  aux=0, pkt=3, npkts=4),
             struct.pack('<4f', 1.0, -2.5, 0.0, 3.0e-3)),
        # The same from a rank that sends bodies in the clear
        # (GN_ENCRYPT=0): authenticated only.
        data('data none clear', hdr(DATA, 0, 2, 9, 0x0301, GATHER,
                                    CODEC_NONE, SEAL_CLEAR),
             dict(chunk_off=4096, chunk_len=1000, first=996, count=4,
                  aux=0, pkt=3, npkts=4),
             struct.pack('<4f', 1.0, -2.5, 0.0, 3.0e-3)),
        # A bias of 130 values past 4 GiB elements, 3LC: 26 groups, the
        # whole chunk in one packet, five bytes of zero-run code.
        whole('whole 3lc', hdr(WHOLE, 1, 0, 11, 0x203, REDUCE, CODEC_3LC),
              dict(chunk_off=(1 << 32) + 0x1234, chunk_len=130,
                   aux=f32(0.125)),
              bytes([254, 40, 121, 202, 251])),
        # A dense result of three values, every rank's.
        whole('whole none', hdr(WHOLE, 2, RANK_ALL, 12, 0x0302, GATHER,
                                CODEC_NONE),
              dict(chunk_off=96, chunk_len=3, aux=0),
              struct.pack('<3f', -1.0, 0.5, 2.0e-2)),
        # Two entries: a bitmap window over packets 8..23 of 20, and a
        # whole message ("all of it": base == npkts, no bitmap).
        ack('ack', 0, 2, [
            dict(tensor=7, step=0x102, chunk_off=(1 << 32) + 65536,
                 npkts=20, base=8, phase=REDUCE, bitmap=[0xfd, 0x0b]),
            dict(tensor=9, step=0x101, chunk_off=0, npkts=4, base=4,
                 phase=GATHER, bitmap=[])]),
        # Rank 1 registered tensor 7: 25M elements, 3LC s = 1.5 (its one
        # parameter, word 0), averaged.
        ctrl('ctrl tensor', hdr(CTRL, 1, 0, 7, 0, 0, CODEC_3LC),
             dict(seq=1, kind=CTRL_TENSOR, flags=TENSOR_AVERAGE,
                  value=25000000, extra=0,
                  params=[f32(1.5), 0, 0, 0, 0, 0, 0, 0])),
        # Step 0x102 of tensor 7 failed with EDOM, blaming rank 2.
        ctrl('ctrl abort', hdr(CTRL, 0, 1, 7, 0x102, 0, CODEC_3LC),
             dict(seq=0x01020304, kind=CTRL_ABORT, flags=0, value=EDOM,
                  extra=2, params=[0] * 8)),
        packet('ctrl ack', hdr(CTRL_ACK, 0, 1), dict(seq=0x01020304),
               CTRL_ACK_PART.pack(0x01020304)),
        packet('ping', hdr(PING, 1, 2), dict(stamp=0x0000123456789abc),
               PING_PART.pack(0x0000123456789abc)),
        packet('pong', hdr(PONG, 2, 1), dict(stamp=0x0000123456789abc),
               PING_PART.pack(0x0000123456789abc)),
    ]
    assert {p['hdr']['type'] for p in out} == set(TYPE_NAMES)
    return out


def c_bytes(b, indent='\t'):
    lines = []
    for i in range(0, len(b), 12):
        lines.append(indent + ', '.join('0x%02x' % x for x in b[i:i + 12]))
    return '{\n' + ',\n'.join(lines) + ',\n}' if b else '{ 0 }'


def c_value(v):
    if isinstance(v, list):
        return '{ %s }' % ', '.join('0x%x' % x for x in v)
    return '0x%x' % v


PART_FIELDS = {
    HELLO: ('hello', ['world', 'flags', 'chunk', 'mtu', 'instance', 'echo']),
    DATA: ('data', ['chunk_off', 'chunk_len', 'first', 'count', 'aux', 'pkt',
                    'npkts']),
    WHOLE: ('data', ['chunk_off', 'chunk_len', 'first', 'count', 'aux', 'pkt',
                     'npkts']),
    ACK: ('ack_entries', None),
    CTRL: ('ctrl', ['seq', 'kind', 'flags', 'value', 'extra', 'params']),
    CTRL_ACK: ('ctrl_ack', ['seq']),
    PING: ('ping', ['stamp']),
    PONG: ('ping', ['stamp']),
}

PREAMBLE = '''/* SPDX-License-Identifier: MIT */
/*
 * packets.h - one golden packet of every gradnet packet type, generated by
 * tests/golden/gen_packets.py from the layout documented in
 * include/gradnet/wire.h (struct.pack, not the C builders); do not edit.
 * For the parsers and builders of every data path: libgradnet, the tc
 * program, DPDK and the kernel module. The includer provides uint8_t,
 * uint16_t, uint32_t, uint64_t, size_t and NULL.
 *
 * Each entry holds the field values, then the packet's bytes: the builder
 * and gn_wire_seal() must produce exactly these from those values, and
 * gn_wire_open() and the parser must read exactly those values back.
 * Keyed packets are sealed with ChaCha20-Poly1305 (tests/golden/gnseal.py):
 * a HELLO under gn_wire_hello_key() of gn_golden_pkt_key, its sender and
 * the instance it carries, the others under gn_wire_sender_key() of their
 * sender and the session key of gn_golden_pkt_key and gn_golden_pkt_info.
 * The others are from a job without a key and carry a zero tag.
 */
#ifndef GN_GOLDEN_PACKETS_H
#define GN_GOLDEN_PACKETS_H

struct gn_golden_pkt_hdr {		/* struct gn_wire_hdr, magic aside */
	uint8_t version, type;
	uint16_t src, dst;
	uint32_t job, tensor, step;
	uint16_t body_len;
	uint8_t phase, codec, seal;
	uint64_t pn;
};

struct gn_golden_pkt_hello {
	uint16_t world;
	uint8_t flags;
	uint32_t chunk;
	uint16_t mtu;
	uint64_t instance, echo;
};

struct gn_golden_pkt_data {
	uint64_t chunk_off;
	uint32_t chunk_len, first, count, aux, pkt, npkts;
};

struct gn_golden_pkt_ack_entry {
	uint32_t tensor, step;
	uint64_t chunk_off;
	uint32_t npkts, base;
	uint8_t phase;
	uint16_t bytes;			/* of bitmap, right after the entry */
	const uint8_t *bitmap;
};

struct gn_golden_pkt_ctrl {
	uint32_t seq;
	uint8_t kind, flags;
	uint64_t value;
	uint32_t extra;
	uint32_t params[8];
};

struct gn_golden_pkt_ctrl_ack {
	uint32_t seq;
};

struct gn_golden_pkt_ping {		/* PING and PONG */
	uint64_t stamp;
};

struct gn_golden_pkt {
	const char *name;
	struct gn_golden_pkt_hdr hdr;
	/* The part of hdr.type; the others are zero (WHOLE: data, the
	 * implied fields as a parser fills them in). */
	struct gn_golden_pkt_hello hello;
	struct gn_golden_pkt_data data;
	unsigned int ack_entries;
	const struct gn_golden_pkt_ack_entry *ack;
	struct gn_golden_pkt_ctrl ctrl;
	struct gn_golden_pkt_ctrl_ack ctrl_ack;
	struct gn_golden_pkt_ping ping;
	const uint8_t *body;		/* hdr.body_len bytes after the part,
					   before sealing */
	int keyed;			/* sealed: not a job without a key */
	uint8_t tag[16];		/* the last 16 bytes */
	const uint8_t *bytes;		/* the whole packet, sealed, tag included */
	size_t len;
};

'''


def emit():
    gnseal.check_published()
    w = sys.stdout.write
    pkts = packets()
    w(PREAMBLE)
    w('static const uint8_t gn_golden_pkt_key[16] = %s;\n\n'
      % c_bytes(KEY))
    w('/* The golden run: job, world, version and every rank\'s instance. */\n')
    w('static const uint8_t gn_golden_pkt_info[%d] = %s;\n\n'
      % (len(INFO), c_bytes(INFO)))
    for i, p in enumerate(pkts):
        w('/* %s */\n' % p['name'])
        w('static const uint8_t gp%d_bytes[] = %s;\n' % (i, c_bytes(p['bytes'])))
        if p['body'] and p['hdr']['type'] != ACK:
            w('static const uint8_t gp%d_body[] = %s;\n' % (i, c_bytes(p['body'])))
        for j, e in enumerate(p['ack']):
            if e['bitmap']:
                w('static const uint8_t gp%d_bitmap%d[] = %s;\n'
                  % (i, j, c_bytes(bytes(e['bitmap']))))
        if p['ack']:
            w('static const struct gn_golden_pkt_ack_entry gp%d_ack[] = {\n' % i)
            for j, e in enumerate(p['ack']):
                w('\t{ .tensor = %d, .step = 0x%x, .chunk_off = 0x%x, '
                  '.npkts = %d, .base = %d,\n\t  .phase = %d, .bytes = %d, '
                  '.bitmap = %s },\n'
                  % (e['tensor'], e['step'], e['chunk_off'], e['npkts'],
                     e['base'], e['phase'], len(e['bitmap']),
                     'gp%d_bitmap%d' % (i, j) if e['bitmap'] else 'NULL'))
            w('};\n')
        w('\n')
    w('static const struct gn_golden_pkt gn_golden_pkt[] = {\n')
    for i, p in enumerate(pkts):
        h = p['hdr']
        w('\t{\n\t\t.name = "%s",\n' % p['name'])
        w('\t\t.hdr = { .version = %d, .type = %d /* %s */, .src = %d, '
          '.dst = %d,\n\t\t\t .job = 0x%x, .tensor = %d, .step = 0x%x, '
          '.body_len = %d,\n\t\t\t .phase = %d, .codec = %d, '
          '.seal = %d, .pn = 0x%xull },\n'
          % (VERSION, h['type'], TYPE_NAMES[h['type']], h['src'], h['dst'],
             h['job'], h['tensor'], h['step'], len(p['body']), h['phase'],
             h['codec'], h['seal'], h['pn']))
        member, names = PART_FIELDS[h['type']]
        if names:
            vals = ['.%s = %s' % (n, c_value(p['fields'][n])) for n in names]
            w('\t\t.%s = { %s },\n' % (member, ',\n\t\t\t'.join(
                ', '.join(vals[k:k + 4]) for k in range(0, len(vals), 4))))
        else:
            w('\t\t.ack_entries = %d, .ack = gp%d_ack,\n' % (len(p['ack']), i))
        if p['body'] and h['type'] != ACK:
            w('\t\t.body = gp%d_body,\n' % i)
        tag = ['0x%02x' % x for x in p['tag']]
        w('\t\t.keyed = %d,\n\t\t.tag = { %s,\n\t\t\t  %s },\n'
          % (p['keyed'], ', '.join(tag[:8]), ', '.join(tag[8:])))
        w('\t\t.bytes = gp%d_bytes, .len = %d,\n\t},\n' % (i, len(p['bytes'])))
    w('};\n\n#endif /* GN_GOLDEN_PACKETS_H */\n')


if __name__ == '__main__':
    emit()
