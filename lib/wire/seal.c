// SPDX-License-Identifier: MIT
/*
 * seal.c - what each packet is sealed under and how: the key schedule and
 * the split of a packet into associated data and encrypted body. The
 * cryptography itself is the environment's (gn_deps.h): ChaCha20-Poly1305
 * and keyed BLAKE2s from a vetted library; nothing here computes either.
 *
 * Keys. The job key J (16 bytes, the same on every rank of every run of a
 * job) keys two derivations, and the session key one more, all keyed
 * BLAKE2s-256 with a label no other input starts with:
 *	HELLO key of rank r, instance i:
 *		BLAKE2s_J("gradnet hello" || le16(r) || le64(i))
 *	session key S:	BLAKE2s_J("gradnet session" || info)
 *	sender key of rank r:	BLAKE2s_S("gradnet sender" || le16(r))
 * info is the job id, world size, protocol version and every rank's
 * instance (lib/delivery/peer.c), so S is new whenever one rank's random
 * instance is. A HELLO goes under its sender's hello key (the receiver
 * reads the instance from the HELLO, then opens it); everything else
 * under its sender's key of the run.
 *
 * Nonces. The nonce of a packet is its packet number, which the header
 * carries: a context numbers its packets from 1 and never hands a number
 * out twice (lib/delivery), and every key above belongs to one context of
 * one rank (hello keys by the instance, sender keys by the rank and the
 * session), so under no key do two different packets share a nonce. A
 * retransmission is the same packet: the same bytes, nonce and all.
 *
 * What is associated data: the common header and the type's fixed part,
 * always (that is where the packet number, the flags and the lengths
 * are); the body too when GN_SEAL_CLEAR says it is sent in the clear.
 * doc/security.md states the bounds.
 */
#include "gn_deps.h"
#include <gradnet/wire.h>

GN_STATIC_ASSERT(GN_SEAL_KEY_LEN == 32, "ChaCha20 and BLAKE2s-256 keys");

/* BLAKE2s keyed with @key of the label's bytes, then @ctx, into @out. */
static int derive(u8 *out, const u8 *key, size_t key_len, const char *label,
		  const u8 *ctx, size_t ctx_len)
{
	return gn_kdf(out, key, key_len, (const u8 *)label, strlen(label), ctx,
		      ctx_len);
}

int gn_wire_hello_key(u8 *out, const u8 *job_key, u16 rank, u64 instance)
{
	u8 ctx[10];

	gn_put_le16(rank, ctx);
	gn_put_le64(instance, ctx + 2);
	return derive(out, job_key, GN_MAC_KEY_LEN, "gradnet hello", ctx,
		      sizeof(ctx));
}

int gn_wire_session_key(u8 *out, const u8 *job_key, const u8 *info,
			size_t len)
{
	if (len > GN_WIRE_INFO_MAX)
		return -EINVAL;
	return derive(out, job_key, GN_MAC_KEY_LEN, "gradnet session", info,
		      len);
}

int gn_wire_sender_key(u8 *out, const u8 *session, u16 rank)
{
	u8 ctx[2];

	gn_put_le16(rank, ctx);
	return derive(out, session, GN_SEAL_KEY_LEN, "gradnet sender", ctx,
		      sizeof(ctx));
}

/* Bytes of associated data before the body: the header and fixed part. */
static size_t fixed_end(const u8 *pkt)
{
	int fixed = gn_wire_fixed_len(pkt[3]);

	return fixed < 0 ? 0 : GN_WIRE_HDR_LEN + (size_t)fixed;
}

size_t gn_wire_seal(const u8 *key, u8 *pkt, size_t len, u64 pn, u8 flags)
{
	size_t ad = fixed_end(pkt);

	/* The bound of gn_wire_hdr_get(): no receiver would take more. */
	if (unlikely(len > GN_WIRE_MAX_PKT - GN_WIRE_TAG || !ad || len < ad ||
		     !pn || pn > GN_WIRE_PN_MAX || flags & ~GN_SEAL_CLEAR))
		return 0;
	if (!key)
		flags |= GN_SEAL_CLEAR;
	gn_put_le64(pn << 8 | flags, pkt + 24);
	if (!key) {
		memset(pkt + len, 0, GN_WIRE_TAG);
		return len + GN_WIRE_TAG;
	}
	if (flags & GN_SEAL_CLEAR)
		ad = len;
	if (gn_aead_seal(key, pn, pkt, ad, pkt + ad, len - ad))
		return 0;
	return len + GN_WIRE_TAG;
}

int gn_wire_open(const u8 *key, u8 *pkt, size_t len)
{
	size_t ad = len >= GN_WIRE_HDR_LEN ? fixed_end(pkt) : 0;
	u8 flags, zero = 0;
	u64 pn;
	size_t i;

	if (!ad || len < ad + GN_WIRE_TAG || len > GN_WIRE_MAX_PKT)
		return -EBADMSG;
	flags = pkt[24];
	pn = gn_get_le64(pkt + 24) >> 8;
	len -= GN_WIRE_TAG;
	if (!key) {
		for (i = 0; i < GN_WIRE_TAG; i++)
			zero |= pkt[len + i];
		return zero || !(flags & GN_SEAL_CLEAR) ? -EBADMSG : 0;
	}
	if (flags & GN_SEAL_CLEAR)
		ad = len;
	if (gn_aead_open(key, pn, pkt, ad, pkt + ad, len - ad))
		return -EBADMSG;
	return 0;
}
