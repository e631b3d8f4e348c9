// SPDX-License-Identifier: MIT
/*
 * mac.c - packet authentication: NH universal hash, then SipHash-2-4.
 *
 * Why this construction: the tag is computed on every packet sent and
 * checked on every packet received. Measured on one core here
 * (gradnet-bench mac, 1472-byte packets): SipHash-2-4 over the whole
 * packet 1.5 GB/s, this MAC 6-9 GB/s (4-6x; 7x on 9000-byte packets),
 * since SipHash only sees 24 bytes per packet after the NH pass (two
 * 32x32->64 multiplies per 8 bytes, AVX2). A compressed allreduce MACs
 * little (25M floats on 2 ranks: ~7 MB sent and received per rank, about
 * 1 ms), and gradnet-bench allreduce measures its share against the same
 * job run without a key; the dense path, which moves 30-300x more, is what
 * made SipHash alone too slow.
 *
 * Construction (the UMAC pattern). The 16-byte job key J is expanded once,
 * in gn_mac_init(), by SipHash-2-4 under J of the 16 bytes
 * "gradnet " || le64(i):
 *	i = 0, 1	the two halves of P, the key of the final SipHash
 *	i = 2, 3, ...	the NH key words k[0], k[1], k[2], ..., low half first
 * The len bytes to authenticate (the packet before its tag, at most
 * GN_WIRE_MAX_PKT), zero-padded to a multiple of 8, are read as
 * little-endian 32-bit words w; with + on words taken mod 2^32,
 *	NH1 = sum_i (w[2i] + k[2i])   * (w[2i+1] + k[2i+1])	mod 2^64
 *	NH2 = sum_i (w[2i] + k[2i+4]) * (w[2i+1] + k[2i+5])	mod 2^64
 * (the second pass is the first with the key moved by four words, a
 * Toeplitz extension), and the tag is
 *	SipHash-2-4_P(le64(NH1) || le64(NH2) || le64(len)).
 * tests/golden/gnmac.py is this paragraph in Python; the known answers it
 * writes (tests/golden/mac_vectors.h) hold the C code to it.
 *
 * Security argument. Assume J is uniform and secret and SipHash-2-4 is a
 * PRF. Then P and the NH key, its outputs on distinct inputs, are (up to
 * its PRF advantage) independent and uniform, and we argue with them so.
 *
 * One NH pass. For two different inputs of the same length, the chance
 * over the key that NH1 collides is at most 2^-32: NH is 2^-w-almost
 * universal on equal-length strings of w-bit words (Black, Halevi,
 * Krawczyk, Krovetz, Rogaway, "UMAC: fast and secure message
 * authentication", CRYPTO 1999). The argument below needs it pair by pair,
 * as that proof goes: with every key word fixed but the two of a pair j
 * where the inputs differ, the difference of the two products at j equals
 * any given constant (what the other pairs add) with chance at most 2^-32.
 * Counting directly gives nearly as much: if the inputs differ in one word
 * of the pair, then for each value of one key word at most one of the 2^32
 * values of the other reaches the constant (d * x = c mod 2^64 with
 * 0 < |d| < 2^32 has at most one solution x < 2^32); if they differ in
 * both, at most two, as one word sum wraps or not: 2^-31, and
 * 2^-62 for both passes below, which moves no conclusion by more than a
 * factor of four. The same holds for NH2 alone.
 *
 * Both passes. Let j be the last pair where the inputs differ. NH1's
 * difference involves key pairs 0..j only (past j the terms cancel); NH2's
 * term at j uses key pair j+2, which no other term of either difference
 * uses. NH1 collides with chance at most 2^-32 over the key words it
 * uses, none of which is in pair j+2; whatever their values, NH2 then
 * collides with chance at most 2^-32 over pair j+2 alone: both collide
 * with chance at most eps = 2^-64.
 * Inputs of different lengths never collide, as len is hashed with the
 * sums; so the zero padding cannot be exploited, and H(M) = (NH1, NH2,
 * len) is 2^-64-almost universal on everything up to GN_WIRE_MAX_PKT
 * bytes (the NH key has words for that many, hence the cap in
 * gn_mac_tag()).
 *
 * The tag. SipHash_P(H(M)) is hash-then-PRF. With SipHash replaced by a
 * random function, as long as no two hashed inputs collide every tag is a
 * fresh uniform 64-bit value, independent of the NH key, so tags leak
 * nothing about it (which NH alone would). An attacker who sees the tags
 * of q packets, even of its choosing, and tries v forgeries is accepted at
 * least once with chance at most
 *	(q(q - 1)/2 + q v) eps + v 2^-64 + SipHash's PRF advantage,
 * about (q^2/2 + q v + v) / 2^64: a collision among the q, a forgery
 * colliding with one of them, or a guessed tag. With v = q:
 *	q = 2^16: 2^-31	 q = 2^20: 2^-23	 q = 2^24: 2^-15
 *	q = 2^28: 2^-7	 q = 2^32: no bound
 * The q^2 term is a birthday bound in the packets made under one key (a
 * nonce in the tag, as UMAC has, would remove it). q counts every packet
 * of every rank in every run that used the key: with one job key for a
 * long job it can pass 2^28, so keys must change per run (issue 13's
 * session keys), and within a run before about 2^24 packets for a bound
 * under 2^-15.
 *
 * What the tag binds: all len bytes before it, which are the whole common
 * header (magic, version, type, src and dst ranks, job, tensor, step, body
 * length, phase, codec), the type's fixed part and the body, and len
 * itself. It does not bind the IP addresses and ports (checked apart, and
 * spoofable), nor which rank made it: every rank holds J, so any rank can
 * tag a packet with any src. Nor does it bind time: a recorded packet stays
 * valid as long as its key is used. Replays are not the MAC's job: step
 * numbers, sequence numbers and per-packet state are (and per-run keys
 * will be). A job without a key sends tag 0 and authenticates nothing.
 *
 * Key separation: J keys only this expansion; P keys only the final
 * SipHash; the NH words are used only inside NH; K0 and K1, SipHash under
 * J of "gradkdf " || le64(i) (i = 0, 1 for K0, 2, 3 for K1; a label no
 * input of the expansion above has), key only gn_mac_session(). No other
 * part of gradnet uses J, P, K0, K1 or the NH key.
 *
 * Session keys. Every packet but HELLO is tagged under a session key
 * S = SipHash_K0(info) || SipHash_K1(info), info being the job id, world
 * size, protocol version and the 64-bit random instance of every rank, in
 * rank order. Each rank learns the others' instances from HELLOs that
 * echo its own instance (a challenge and response under J), so S is new
 * in every run as long as one rank's instance is, and a packet recorded
 * in one run fails authentication in every other: the q of the bound
 * above counts the packets of one run, not of every run under J. Within
 * a run, replays are the protocol's to refuse (steps, sequence numbers,
 * per-packet state, PONGs that must echo a PING not yet answered).
 */
#include "gn_deps.h"
#include <gradnet/wire.h>

#include "nh.h"

/* Key material i, from the job key: SipHash of "gradnet " || le64(i). */
static u64 derive(const u64 k[2], u64 i)
{
	u8 in[16] = "gradnet ";

	gn_put_le64(i, in + 8);
	return gn_siphash(k, in, sizeof(in));
}

/* Key material i of the session KDF: SipHash of "gradkdf " || le64(i). */
static u64 derive_kdf(const u64 k[2], u64 i)
{
	u8 in[16] = "gradkdf ";

	gn_put_le64(i, in + 8);
	return gn_siphash(k, in, sizeof(in));
}

void gn_mac_init(struct gn_mac *m, const u8 *key)
{
	u64 k[2] = { gn_get_le64(key), gn_get_le64(key + 8) };
	size_t i;

	m->prf[0] = derive(k, 0);
	m->prf[1] = derive(k, 1);
	for (i = 0; i < 4; i++)
		m->kdf[i / 2][i % 2] = derive_kdf(k, i);
	for (i = 0; i < sizeof(m->nh) / sizeof(m->nh[0]); i += 2) {
		u64 w = derive(k, 2 + i / 2);

		m->nh[i] = (u32)w;
		m->nh[i + 1] = (u32)(w >> 32);
	}
	m->isa = gn_cpu_has_avx2();
}

/* Both NH passes over whole 8-byte pairs, words read little-endian. */
int gn_mac_session(struct gn_mac *s, const struct gn_mac *job,
		   const u8 *info, size_t len)
{
	u8 key[GN_MAC_KEY_LEN];

	if (len > GN_MAC_INFO_MAX)
		return -EINVAL;
	gn_put_le64(gn_siphash(job->kdf[0], info, len), key);
	gn_put_le64(gn_siphash(job->kdf[1], info, len), key + 8);
	gn_mac_init(s, key);
	/* The session key lives on only expanded, in @s. */
	gn_memzero_explicit(key, sizeof(key));
	return 0;
}

static void nh2(const struct gn_mac *m, const u32 *k, const u8 *p,
		size_t pairs, u64 *h1, u64 *h2)
{
	u64 a = 0, b = 0;
	size_t i = 0;

	if (m->isa)
		i = gn_nh2_avx2(k, p, pairs, &a, &b);
	for (; i < pairs; i++) {
		u32 w0 = gn_get_le32(p + 8 * i), w1 = gn_get_le32(p + 8 * i + 4);

		a += (u64)(u32)(w0 + k[2 * i]) * (u32)(w1 + k[2 * i + 1]);
		b += (u64)(u32)(w0 + k[2 * i + 4]) * (u32)(w1 + k[2 * i + 5]);
	}
	*h1 = a;
	*h2 = b;
}

u64 gn_mac_tag(const struct gn_mac *m, const u8 *buf, size_t len)
{
	size_t pairs = len / 8, rest = len % 8;
	u64 h1, h2, t1, t2;
	u8 in[24], pad[8] = { 0 };

	/* The NH key has words for GN_WIRE_MAX_PKT bytes, not one more. */
	if (unlikely(len > GN_WIRE_MAX_PKT))
		return 0;
	nh2(m, m->nh, buf, pairs, &h1, &h2);
	if (rest) {
		memcpy(pad, buf + 8 * pairs, rest);
		nh2(m, m->nh + 2 * pairs, pad, 1, &t1, &t2);
		h1 += t1;
		h2 += t2;
	}
	gn_put_le64(h1, in);
	gn_put_le64(h2, in + 8);
	gn_put_le64(len, in + 16);
	return gn_siphash(m->prf, in, sizeof(in));
}

size_t gn_mac_seal(const struct gn_mac *m, u8 *pkt, size_t len)
{
	/* The same bound as gn_mac_check(): no receiver would take it. */
	if (unlikely(len > GN_WIRE_MAX_PKT - GN_WIRE_TAG))
		return 0;
	gn_put_le64(m ? gn_mac_tag(m, pkt, len) : 0, pkt + len);
	return len + GN_WIRE_TAG;
}

int gn_mac_check(const struct gn_mac *m, const u8 *pkt, size_t len)
{
	u64 want, got;

	if (len < GN_WIRE_TAG || len > GN_WIRE_MAX_PKT)
		return -EBADMSG;
	len -= GN_WIRE_TAG;
	want = m ? gn_mac_tag(m, pkt, len) : 0;
	got = gn_get_le64(pkt + len);
	/* No early exit: the time taken says nothing about the tag. */
	return (want ^ got) ? -EBADMSG : 0;
}
