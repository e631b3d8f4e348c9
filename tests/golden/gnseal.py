# SPDX-License-Identifier: MIT
"""gradnet's packet sealing in Python, written from its description in
include/gradnet/wire.h and lib/wire/seal.c, not from the C code, for the
generators of tests/golden/ only.

The primitives come from libraries independent of the C side's: the
ChaCha20-Poly1305 of python3-cryptography (its own build of OpenSSL's
code, called through another API) checked against PyNaCl's (libsodium's
code), and the BLAKE2s of Python's hashlib (the reference code CPython
bundles). check_published() holds all three to the published test
vectors of RFC 8439 and RFC 7693 and the BLAKE2 reference KAT before any
generator uses them.

    hello key  = BLAKE2s_J("gradnet hello" | le16(rank) | le64(instance))
    session    = BLAKE2s_J("gradnet session" | info)
    sender key = BLAKE2s_S("gradnet sender" | le16(rank))
    nonce      = 0^32 | le64(pn)
    associated data = header and fixed part (the whole packet when the
                      body goes in the clear), the body encrypted, the
                      16-byte tag after it
"""
import hashlib
import struct

from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
import nacl.bindings

HDR_LEN = 32
TAG_LEN = 16
SEAL_CLEAR = 0x01
PN_MAX = (1 << 56) - 1
# Fixed part after the common header, by packet type (wire.h).
FIXED = {1: 32, 2: 32, 3: 4, 4: 52, 5: 4, 6: 8, 7: 8, 8: 16}


def kdf(key, data):
    return hashlib.blake2s(data, key=key, digest_size=32).digest()


def hello_key(job_key, rank, instance):
    return kdf(job_key, b'gradnet hello' + struct.pack('<HQ', rank, instance))


def session_key(job_key, info):
    return kdf(job_key, b'gradnet session' + info)


def sender_key(session, rank):
    return kdf(session, b'gradnet sender' + struct.pack('<H', rank))


def nonce(pn):
    return bytes(4) + struct.pack('<Q', pn)


def aead_seal(key, pn, ad, body):
    """Ciphertext and tag, from both libraries, which must agree."""
    out = ChaCha20Poly1305(key).encrypt(nonce(pn), body, ad)
    other = nacl.bindings.crypto_aead_chacha20poly1305_ietf_encrypt(
        body, ad, nonce(pn), key)
    if out != other:
        raise SystemExit('cryptography and PyNaCl disagree')
    return out


def seal(key, raw, pn, flags):
    """@raw is the packet before its tag with bytes 24..31 left zero: the
    sealed packet, and its tag."""
    assert 0 < pn <= PN_MAX and not flags & ~SEAL_CLEAR
    if key is None:
        flags |= SEAL_CLEAR
    raw = raw[:24] + struct.pack('<Q', pn << 8 | flags) + raw[32:]
    if key is None:
        return raw + bytes(TAG_LEN), bytes(TAG_LEN)
    ad = len(raw) if flags & SEAL_CLEAR else HDR_LEN + FIXED[raw[3]]
    out = raw[:ad] + aead_seal(key, pn, raw[:ad], raw[ad:])
    return out, out[-TAG_LEN:]


# RFC 8439, section 2.8.2: key 80..9f, nonce 07 00 00 00 40..47.
RFC8439_282 = dict(
    key=bytes(range(0x80, 0xa0)),
    nonce=bytes.fromhex('070000004041424344454647'),
    aad=bytes.fromhex('50515253c0c1c2c3c4c5c6c7'),
    text=(b"Ladies and Gentlemen of the class of '99: If I could offer you "
          b"only one tip for the future, sunscreen would be it."),
    out=bytes.fromhex(
        'd31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d6'
        '3dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b36'
        '92ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc'
        '3ff4def08e4b7a9de576d26586cec64b6116'
        '1ae10b594f09e26a7e902ecbd0600691'))

# RFC 8439, appendix A.5 (decryption): its nonce has the layout of ours,
# 0^32 | le64(0x0807060504030201), so the C side checks it too.
RFC8439_A5 = dict(
    key=bytes.fromhex('1c9240a5eb55d38af333888604f6b5f0'
                      '473917c1402b80099dca5cbc207075c0'),
    nonce=bytes.fromhex('000000000102030405060708'),
    aad=bytes.fromhex('f33388860000000000004e91'),
    text=('Internet-Drafts are draft documents valid for a maximum of six '
          'months and may be updated, replaced, or obsoleted by other '
          'documents at any time. It is inappropriate to use '
          'Internet-Drafts as reference material or to cite them other '
          'than as /\u201cwork in progress./\u201d').encode(),
    out=bytes.fromhex(
        '64a0861575861af460f062c79be643bd5e805cfd345cf389f108670ac76c8cb2'
        '4c6cfc18755d43eea09ee94e382d26b0bdb7b73c321b0100d4f03b7f355894cf'
        '332f830e710b97ce98c8a84abd0b948114ad176e008d33bd60f982b1ff37c855'
        '9797a06ef4f0ef61c186324e2b3506383606907b6a7c02b0f9f6157b53c867e4'
        'b9166c767b804d46a59b5216cde7a4e99040c5a40433225ee282a1b0a06c523e'
        'af4534d7f83fa1155b0047718cbc546a0d072b04b3564eea1b422273f548271a'
        '0bb2316053fa76991955ebd63159434ecebb4e466dae5a1073a6727627097a10'
        '49e617d91d361094fa68f0ff77987130305beaba2eda04df997b714d6c6f2c29'
        'a6ad5cb4022b02709b'
        'eead9d67890cbb22392336fea1851f38'))

# RFC 7693, appendix B: BLAKE2s-256("abc"); the BLAKE2 reference KAT:
# BLAKE2s-256 keyed with 00..1f of the empty message.
RFC7693_ABC = bytes.fromhex(
    '508c5e8c327c14e2e1a72ba34eeb452f37458b209ed63a294d999b4c86675982')
BLAKE2S_KAT_KEYED_EMPTY = bytes.fromhex(
    '48a8997da407876b3d79c0d92325ad3b89cbb754d86ab71aee047ad345fd2c49')


def check_published():
    for v in (RFC8439_282, RFC8439_A5):
        got = ChaCha20Poly1305(v['key']).encrypt(v['nonce'], v['text'],
                                                 v['aad'])
        if got != v['out']:
            raise SystemExit('python3-cryptography fails RFC 8439')
        got = nacl.bindings.crypto_aead_chacha20poly1305_ietf_encrypt(
            v['text'], v['aad'], v['nonce'], v['key'])
        if got != v['out']:
            raise SystemExit('PyNaCl fails RFC 8439')
    if hashlib.blake2s(b'abc').digest() != RFC7693_ABC:
        raise SystemExit('hashlib.blake2s fails RFC 7693')
    if kdf(bytes(range(32)), b'') != BLAKE2S_KAT_KEYED_EMPTY:
        raise SystemExit('hashlib.blake2s fails the keyed BLAKE2 KAT')
