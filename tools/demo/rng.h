/* SPDX-License-Identifier: MIT */
/*
 * rng.h - the demo's one source of randomness: splitmix64, so a seed fixes
 * the data split, the initial weights and the minibatch order on every rank.
 */
#ifndef GN_DEMO_RNG_H
#define GN_DEMO_RNG_H

#include <math.h>
#include <stdint.h>

struct demo_rng {
	uint64_t s;
};

static inline uint64_t demo_rng_u64(struct demo_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [0, n); the modulo bias is irrelevant for n far below 2^64. */
static inline uint32_t demo_rng_below(struct demo_rng *r, uint32_t n)
{
	return (uint32_t)(demo_rng_u64(r) % n);
}

/* Uniform in (0, 1). */
static inline double demo_rng_unit(struct demo_rng *r)
{
	return ((demo_rng_u64(r) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* Normal with mean 0 and standard deviation @sigma (Box-Muller). */
static inline double demo_rng_gauss(struct demo_rng *r, double sigma)
{
	double u = demo_rng_unit(r), v = demo_rng_unit(r);

	return sigma * sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* Fisher-Yates shuffle of @n indices. */
static inline void demo_rng_shuffle(struct demo_rng *r, uint32_t *idx,
				    uint32_t n)
{
	uint32_t i, j, t;

	for (i = n; i > 1; i--) {
		j = demo_rng_below(r, i);
		t = idx[i - 1];
		idx[i - 1] = idx[j];
		idx[j] = t;
	}
}

#endif /* GN_DEMO_RNG_H */
