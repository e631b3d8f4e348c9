// SPDX-License-Identifier: MIT
/*
 * bloom.c - Bloom groups (<gradnet/codec.h>, "Bloom groups"): the filter's
 * size from a false-positive rate in fixed point (the same integers in
 * libgradnet, the kernel and the numpy model), the hash functions of a
 * position (double hashing of the seeded generator's number for it), and
 * the positives that carry values under each policy. The receiver holds
 * no memory but its stack, so every policy walks the group's positions
 * again rather than keep a list of them. Integer-only.
 */
#include "bloom.h"
#include "index.h"

/* Hash functions at most: fpr >= 1e-6 gives h <= 20. */
#define BLOOM_H_MAX 20

/*
 * log2(1/eps) in Q16 from eps's float32 bits, 0 < eps <= 0.5, normal:
 * eps = M 2^(E - 150), and log2(M / 2^23) bit by bit, squaring the
 * significand in Q1.30 (truncated), a bit for each time it reaches 2.
 */
void gn_bloom_init(struct gn_bloom *b, u32 fpr_bits)
{
	u32 e, f = 0, i;
	u64 y;

	if (!fpr_bits)
		fpr_bits = GN_BLOOM_FPR_DEFAULT;
	e = fpr_bits >> 23 & 0xff;
	if (!e || e > 126) {
		fpr_bits = GN_BLOOM_FPR_DEFAULT;
		e = fpr_bits >> 23 & 0xff;
	}
	y = ((u64)(fpr_bits & 0x7fffff) | 0x800000) << 7;
	for (i = 16; i--;) {
		y = (y * y) >> 30;
		if (y >= 1ull << 31) {
			y >>= 1;
			f |= 1u << i;
		}
	}
	b->l16 = ((127 - e) << 16) - f;
	b->h = (b->l16 + 0x8000) >> 16;
	if (!b->h)
		b->h = 1;
	if (b->h > BLOOM_H_MAX)
		b->h = BLOOM_H_MAX;
	b->gmax = GN_BLOOM_GROUP_MAX;
	while (b->gmax > 1 && gn_bloom_bytes(b, b->gmax) > GN_BLOOM_FILTER_MAX)
		b->gmax--;
}

/*
 * Probe j of position q in a filter of m bits: z = u64 number q of the
 * key, x_j = lo32(z) + j (hi32(z) | 1) mod 2^32, bit floor(x_j m / 2^32).
 */
struct probe {
	u32 x, step, m;
};

static void probe_start(struct probe *p, u64 key, u32 q, u32 m)
{
	u64 z = gn_draw_u64(key, q);

	p->x = (u32)z;
	p->step = (u32)(z >> 32) | 1;
	p->m = m;
}

static u32 probe_next(struct probe *p)
{
	u32 bit = (u32)(((u64)p->x * p->m) >> 32);

	p->x += p->step;
	return bit;
}

static bool bit_at(const u8 *f, u32 bit)
{
	return f[bit >> 3] >> (bit & 7) & 1;
}

static void bit_set(u8 *f, u32 bit)
{
	f[bit >> 3] |= (u8)(1u << (bit & 7));
}

/* The filter of @r positions (gn_bloom_bytes(r) bytes at @filter). */
void gn_bloom_fill(const struct gn_bloom *b, u64 key, const u32 *pos, u32 r,
		   u8 *filter)
{
	u32 mbytes = gn_bloom_bytes(b, r), i, j;
	struct probe p;

	memset(filter, 0, mbytes);
	for (i = 0; i < r; i++) {
		probe_start(&p, key, pos[i], 8 * mbytes);
		for (j = 0; j < b->h; j++)
			bit_set(filter, probe_next(&p));
	}
}

/*
 * Is @q a positive of the filter of @m bits? A filter is about half ones,
 * so a branch on each probe goes either way alike: the first three are
 * tested together, which mostly says no at once.
 */
static bool has_m(const struct gn_bloom *b, u64 key, const u8 *filter, u32 m,
		  u32 q)
{
	struct probe p;
	u32 j, all = 1;

	probe_start(&p, key, q, m);
	for (j = 0; j < b->h && j < 3; j++)
		all &= bit_at(filter, probe_next(&p));
	if (!all)
		return false;
	for (; j < b->h; j++)
		if (!bit_at(filter, probe_next(&p)))
			return false;
	return true;
}

/* A group's filter bits, m. */
static u32 bits_of(const struct gn_bloom *b, const struct gn_bloom_group *g)
{
	return 8 * gn_bloom_bytes(b, g->r);
}

static bool has(const struct gn_bloom *b, u64 key,
		const struct gn_bloom_group *g, u32 m, u32 q)
{
	return has_m(b, key, g->filter, m, q);
}

/* Positives of group @g: the positions of its span its filter answers. */
u32 gn_bloom_positives(const struct gn_bloom *b, u64 key,
		       const struct gn_bloom_group *g)
{
	u32 q, n = 0, m = bits_of(b, g);

	for (q = g->start; q - g->start < g->span; q++)
		n += has(b, key, g, m, q);
	return n;
}

/*
 * Selection sampling: of @left candidates still to visit, take this one
 * when a 32-bit draw w has floor(w left / 2^32) < @need. It takes exactly
 * @need of them, each set alike (but for the draws' 2^-32 granularity).
 */
static bool take(u64 dkey, u64 counter, u32 left, u32 need)
{
	u64 w = gn_draw_u64(dkey, counter) >> 32;

	return need && (w * left) >> 32 < need;
}

static u32 choose_p1(const struct gn_bloom *b, u64 key, u64 dkey,
		     const struct gn_bloom_group *g, gn_bloom_emit_fn *emit,
		     void *arg)
{
	u32 left = gn_bloom_positives(b, key, g), need = g->r, t = 0, q;
	u32 m = bits_of(b, g);

	for (q = g->start; need && q - g->start < g->span; q++) {
		if (!has(b, key, g, m, q))
			continue;
		if (take(dkey, t++, left--, need)) {
			emit(arg, q);
			need--;
		}
	}
	return g->r;
}

/*
 * P2's state, on the stack: which filter bits one positive hits and which
 * several (the conflict sets of one member, and the larger ones), which
 * the positives taken so far explain, and the positives the visit took.
 */
struct p2 {
	u8 once[GN_BLOOM_FILTER_MAX];
	u8 many[GN_BLOOM_FILTER_MAX];
	u8 expl[GN_BLOOM_FILTER_MAX];
	u32 took[GN_BLOOM_GROUP_MAX];
	u32 bits[BLOOM_H_MAX];
	u32 ntook;
};

/* The distinct bits position @q hits, into s->bits. Return: how many. */
static u32 hits(const struct gn_bloom *b, u64 key, u32 m, u32 q,
		struct p2 *s)
{
	struct probe p;
	u32 n = 0, j, k;

	probe_start(&p, key, q, m);
	for (j = 0; j < b->h; j++) {
		u32 bit = probe_next(&p);

		for (k = 0; k < n && s->bits[k] != bit; k++)
			;
		if (k == n)
			s->bits[n++] = bit;
	}
	return n;
}

/* A sure hit: alone in one of its conflict sets (s->bits filled). */
static bool sure(const struct p2 *s, u32 nb)
{
	u32 k;

	for (k = 0; k < nb; k++)
		if (bit_at(s->once, s->bits[k]) && !bit_at(s->many, s->bits[k]))
			return true;
	return false;
}

/* Does @q explain a bit nothing taken explains yet? Then mark its bits. */
static bool explains(struct p2 *s, u32 nb, bool mark)
{
	bool fresh = false;
	u32 k;

	for (k = 0; k < nb; k++)
		fresh |= !bit_at(s->expl, s->bits[k]);
	if (fresh && mark)
		for (k = 0; k < nb; k++)
			bit_set(s->expl, s->bits[k]);
	return fresh;
}

static bool was_taken(const struct p2 *s, u32 *k, u32 q)
{
	if (*k < s->ntook && s->took[*k] == q) {
		(*k)++;
		return true;
	}
	return false;
}

/*
 * The visit that takes one member of each conflict set not yet explained:
 * the positives from index @t0 on, then from the first, in turn.
 */
static u32 visit(const struct gn_bloom *b, u64 key,
		 const struct gn_bloom_group *g, struct p2 *s, u32 t0,
		 u32 taken)
{
	u32 m = bits_of(b, g), round, q, t, nb;

	for (round = 0; round < 2; round++) {
		for (q = g->start, t = 0; q - g->start < g->span; q++) {
			if (taken == g->r || (round && t == t0))
				return taken;
			if (!has(b, key, g, m, q))
				continue;
			if ((t++ < t0) != (bool)round)
				continue;
			nb = hits(b, key, m, q, s);
			if (sure(s, nb) || !explains(s, nb, true))
				continue;
			s->took[s->ntook++] = q;
			taken++;
		}
	}
	return taken;
}

static u32 choose_p2(const struct gn_bloom *b, u64 key, u64 dkey,
		     const struct gn_bloom_group *g, gn_bloom_emit_fn *emit,
		     void *arg)
{
	u32 m = bits_of(b, g), q, k, nb, npos = 0, nsure = 0;
	u32 t = 0, need, left, taken, t0;
	struct p2 s;

	memset(&s, 0, sizeof(s));
	for (q = g->start; q - g->start < g->span; q++) {
		if (!has(b, key, g, m, q))
			continue;
		npos++;
		nb = hits(b, key, m, q, &s);
		for (k = 0; k < nb; k++) {
			if (bit_at(s.once, s.bits[k]))
				bit_set(s.many, s.bits[k]);
			bit_set(s.once, s.bits[k]);
		}
	}
	for (q = g->start; q - g->start < g->span; q++)
		if (has(b, key, g, m, q) && sure(&s, hits(b, key, m, q, &s)))
			nsure++;
	if (nsure >= g->r) {
		/* More sure hits than entries: r of them, drawn as P1. */
		need = g->r;
		left = nsure;
		for (q = g->start; need && q - g->start < g->span; q++) {
			if (!has(b, key, g, m, q) || !sure(&s, hits(b, key, m, q, &s)))
				continue;
			if (take(dkey, t++, left--, need)) {
				emit(arg, q);
				need--;
			}
		}
		return g->r;
	}
	for (q = g->start; q - g->start < g->span; q++) {
		if (!has(b, key, g, m, q))
			continue;
		nb = hits(b, key, m, q, &s);
		if (sure(&s, nb))
			explains(&s, nb, true);
	}
	t0 = (u32)(((gn_draw_u64(dkey, 1ull << 32) >> 32) * npos) >> 32);
	taken = visit(b, key, g, &s, t0, nsure);
	/* The visit's order wraps: sort what it took by position. */
	for (k = 1; k < s.ntook; k++) {
		u32 v = s.took[k], i = k;

		for (; i && s.took[i - 1] > v; i--)
			s.took[i] = s.took[i - 1];
		s.took[i] = v;
	}
	need = g->r - taken;
	left = npos - taken;
	for (q = g->start, k = 0, t = 0; q - g->start < g->span; q++) {
		if (!has(b, key, g, m, q))
			continue;
		if (sure(&s, hits(b, key, m, q, &s)) || was_taken(&s, &k, q)) {
			emit(arg, q);
			continue;
		}
		if (take(dkey, (2ull << 32) + t++, left--, need)) {
			emit(arg, q);
			need--;
		}
	}
	return g->r;
}

/**
 * gn_bloom_choose() - the positions of a group that carry values
 * @b: the filter's shape
 * @policy: GN_IDX_BLOOM (P0), GN_IDX_BLOOM_P1 or GN_IDX_BLOOM_P2
 * @key: the chunk's key (gn_bloom_key())
 * @g: the group; for P1 and P2 it has at least @g->r positives
 *	(gn_bloom_positives()) and @g->r <= @b->gmax
 * @emit: called with each position, in increasing order
 * @arg: its argument
 *
 * Return: how many positions were emitted.
 */
u32 gn_bloom_choose(const struct gn_bloom *b, u32 policy, u64 key,
		    const struct gn_bloom_group *g, gn_bloom_emit_fn *emit,
		    void *arg)
{
	u64 dkey = gn_draw_key(key, g->start);
	u32 q, n = 0, m = bits_of(b, g);

	if (policy == GN_IDX_BLOOM_P1)
		return choose_p1(b, key, dkey, g, emit, arg);
	if (policy == GN_IDX_BLOOM_P2)
		return choose_p2(b, key, dkey, g, emit, arg);
	for (q = g->start; q - g->start < g->span; q++) {
		if (has(b, key, g, m, q)) {
			emit(arg, q);
			n++;
		}
	}
	return n;
}
