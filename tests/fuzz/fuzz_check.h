/* SPDX-License-Identifier: MIT */
/*
 * fuzz_check.h - what the fuzz targets share besides the model: a check
 * that aborts (so libFuzzer saves the input), the caller's floating-point
 * environment around each codec call, and the instruction sets to try.
 */
#ifndef GN_FUZZ_CHECK_H
#define GN_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xmmintrin.h>

#include <gradnet/codec.h>

#define GN_FZ_CHECK(cond, ...)                                                \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "%s:%d: check failed: %s: ",          \
				__FILE__, __LINE__, #cond);                   \
			fprintf(stderr, __VA_ARGS__);                         \
			fputc('\n', stderr);                                  \
			abort();                                              \
		}                                                             \
	} while (0)

/* MXCSR: round to nearest, exceptions masked; FTZ and DAZ bits. */
#define GN_FZ_CSR_DEFAULT 0x1f80u
#define GN_FZ_CSR_FTZ_DAZ 0x8040u
/* Exception status bits, which any arithmetic may set. */
#define GN_FZ_CSR_FLAGS 0x3fu

/* The MXCSR the codec is called with; the targets' own math runs default. */
static unsigned int gn_fz_caller_csr = GN_FZ_CSR_DEFAULT;

static inline void gn_fz_enter(void)
{
	_mm_setcsr(gn_fz_caller_csr);
}

/* The codec must hand the caller's environment back as it found it. */
static inline void gn_fz_leave(void)
{
	unsigned int csr = _mm_getcsr();

	_mm_setcsr(GN_FZ_CSR_DEFAULT);
	GN_FZ_CHECK((csr & ~GN_FZ_CSR_FLAGS) == gn_fz_caller_csr,
		    "MXCSR 0x%x after the call, 0x%x before", csr,
		    gn_fz_caller_csr);
}

/* Evaluate a codec call in the caller's environment. */
#define GN_FZ_CALL(expr)                                                      \
	({                                                                    \
		__typeof__(expr) ret_;                                        \
		gn_fz_enter();                                                \
		ret_ = (expr);                                                \
		gn_fz_leave();                                                \
		ret_;                                                         \
	})

/*
 * The instruction sets to try: GN_ISA_BEST, as the default entry points
 * use it, then every one the CPU supports. The loop ends at GN_FZ_ISA_END.
 */
#define GN_FZ_ISA_END (-2)

static inline int gn_fz_next_isa(int isa)
{
	while (++isa < GN_ISA_COUNT)
		if (isa == GN_ISA_BEST || gn_codec_isa_supported(isa))
			return isa;
	return GN_FZ_ISA_END;
}

#define gn_fz_for_each_isa(isa)                                               \
	for ((isa) = gn_fz_next_isa(GN_FZ_ISA_END); (isa) != GN_FZ_ISA_END;   \
	     (isa) = gn_fz_next_isa(isa))

static inline const char *gn_fz_isa_name(int isa)
{
	return isa == GN_ISA_BEST ? "best" : gn_codec_isa_name(isa);
}

/* Exact-size copy, so ASan sees any access past the end. */
static inline void *gn_fz_dup(const void *p, size_t bytes)
{
	void *d = malloc(bytes);

	GN_FZ_CHECK(d || !bytes, "out of memory");
	if (bytes)
		memcpy(d, p, bytes);
	return d;
}

static inline void *gn_fz_alloc(size_t bytes, int fill)
{
	void *d = malloc(bytes);

	GN_FZ_CHECK(d || !bytes, "out of memory");
	if (bytes)
		memset(d, fill, bytes);
	return d;
}

/* Index of the first differing float, or n. */
static inline size_t gn_fz_first_diff(const float *a, const float *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (memcmp(a + i, b + i, sizeof(float)))
			break;
	return i;
}

#endif /* GN_FUZZ_CHECK_H */
