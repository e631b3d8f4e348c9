// SPDX-License-Identifier: MIT
/*
 * siphash.c - SipHash-2-4 (Aumasson and Bernstein), the keyed PRF behind
 * gradnet's packet tags and key expansion. Integer-only, freestanding.
 */
#include "gn_deps.h"
#include <gradnet/wire.h>

static inline u64 rotl64(u64 x, unsigned int b)
{
	return (x << b) | (x >> (64 - b));
}

struct sip {
	u64 v0, v1, v2, v3;
};

static inline void sip_round(struct sip *s)
{
	s->v0 += s->v1;
	s->v1 = rotl64(s->v1, 13) ^ s->v0;
	s->v0 = rotl64(s->v0, 32);
	s->v2 += s->v3;
	s->v3 = rotl64(s->v3, 16) ^ s->v2;
	s->v0 += s->v3;
	s->v3 = rotl64(s->v3, 21) ^ s->v0;
	s->v2 += s->v1;
	s->v1 = rotl64(s->v1, 17) ^ s->v2;
	s->v2 = rotl64(s->v2, 32);
}

static inline void sip_word(struct sip *s, u64 m)
{
	s->v3 ^= m;
	sip_round(s);
	sip_round(s);
	s->v0 ^= m;
}

u64 gn_siphash(const u64 k[2], const void *buf, size_t len)
{
	struct sip s = {
		k[0] ^ 0x736f6d6570736575ull, k[1] ^ 0x646f72616e646f6dull,
		k[0] ^ 0x6c7967656e657261ull, k[1] ^ 0x7465646279746573ull,
	};
	const u8 *p = buf;
	size_t i, words = len / 8;
	u64 last = (u64)len << 56;

	for (i = 0; i < words; i++)
		sip_word(&s, gn_get_le64(p + 8 * i));
	for (i = 0; i < len % 8; i++)
		last |= (u64)p[8 * words + i] << (8 * i);
	sip_word(&s, last);
	s.v2 ^= 0xff;
	for (i = 0; i < 4; i++)
		sip_round(&s);
	return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}
