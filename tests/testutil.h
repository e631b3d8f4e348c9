/* SPDX-License-Identifier: MIT */
/*
 * testutil.h - deterministic random values and the real gradient samples,
 * for the C tests and fuzz seeds.
 */
#ifndef GN_TESTUTIL_H
#define GN_TESTUTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gradnet/codec.h>

/*
 * The instruction set a codec test runs on: GN_CODEC_ISA (meson runs each
 * suite once per ISA the CPU has), else the widest the CPU has. Return:
 * an enum gn_isa value, or -1 with a message in @why when the name is
 * unknown or the CPU lacks it, which the caller turns into a failure.
 */
static inline int gn_test_isa(char *why, size_t len)
{
	const char *v = getenv("GN_CODEC_ISA");
	int isa;

	if (!v)
		return gn_codec_isa_best();
	isa = gn_codec_isa_parse(v);
	if (isa == GN_ISA_BEST)
		return gn_codec_isa_best();
	if (isa < 0) {
		snprintf(why, len, "GN_CODEC_ISA=%s is no instruction set", v);
		return -1;
	}
	if (!gn_codec_isa_supported(isa)) {
		snprintf(why, len, "GN_CODEC_ISA=%s: this CPU lacks it", v);
		return -1;
	}
	return isa;
}

struct gn_rng {
	uint64_t s;
};

static inline uint64_t gn_rng_u64(struct gn_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in (0, 1). */
static inline double gn_rng_unit(struct gn_rng *r)
{
	return ((gn_rng_u64(r) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static inline float gn_rng_gauss(struct gn_rng *r, float sigma)
{
	double u = gn_rng_unit(r), v = gn_rng_unit(r);

	return (float)(sigma * sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

static inline float gn_rng_laplace(struct gn_rng *r, float b)
{
	double u = gn_rng_unit(r) - 0.5;

	return (float)(u < 0 ? b * log(1 + 2 * u) : -b * log(1 - 2 * u));
}

static inline const char *gn_data_dir(void)
{
	const char *d = getenv("GN_DATA_DIR");

#ifdef GN_DATA_DIR
	if (!d)
		d = GN_DATA_DIR;
#endif
	return d;
}

/*
 * Read a float32 file relative to the gradient data directory.
 * Return: malloc'd values and their count in *n, or NULL.
 */
static inline float *gn_load_f32(const char *rel, size_t *n)
{
	char path[4096];
	float *buf = NULL;
	long size;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", gn_data_dir(), rel);
	f = fopen(path, "rb");
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET))
		goto out;
	buf = malloc(size ? (size_t)size : 1);
	if (buf && fread(buf, 1, (size_t)size, f) != (size_t)size) {
		free(buf);
		buf = NULL;
	}
	*n = (size_t)size / sizeof(float);
out:
	fclose(f);
	return buf;
}

static inline uint32_t gn_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static inline float gn_float(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

#endif /* GN_TESTUTIL_H */
