/* SPDX-License-Identifier: MIT */
/*
 * gn_deps.h - the only seam between gradnet's freestanding core
 * (lib/codec, lib/wire) and its environment, the Linux kernel or libc.
 *
 * Everything the core needs from outside comes through this header:
 * fixed-width types, errno values, memcpy/memset, little-endian access to
 * wire bytes, snprintf, FPU sections, CPU feature tests, the
 * cryptography and the entropy stage's compressor (zstd). No other file
 * of the core may test __KERNEL__; lib/env/env.h is the run-time half.
 *
 * zstd: the kernel's lib/zstd in the module, libzstd in userspace (the
 * UDP and DPDK paths), behind the same calls. Contexts live in
 * workspaces the caller sized with gn_zstd_cctx_size() and
 * gn_zstd_dctx_size() and allocated up front, so no call allocates. The
 * two libraries may compress the same bytes differently (they are
 * different versions); a frame decompresses to the same bytes in both.
 * Frames carry their content size and no checksum (the AEAD tag covers
 * them). The fast levels look for matches of GN_ZSTD_MIN_MATCH bytes or
 * more: codec streams are mostly literals, which the Huffman stage
 * shrinks, and short matches cost time there without saving bytes.
 * libzstd goes further at the fast levels: it probes for a match only
 * every GN_ZSTD_MATCH_STEP bytes (zstd's targetLength) and keeps Huffman
 * on, which frames of codec streams in a quarter to a half less time and
 * codes them as small or smaller (QSGD's codes 15% smaller: the matches
 * it no longer takes broke up runs of literals). The kernel's zstd cannot
 * do the same: its API has no switch for the literals, which zstd turns
 * off wherever targetLength is set at a fast level, so the module
 * searches every position.
 */
#ifndef GN_DEPS_H
#define GN_DEPS_H

#define GN_ZSTD_MIN_MATCH 7
#define GN_ZSTD_MATCH_STEP 64

#ifdef __KERNEL__

#include <linux/types.h>
#include <linux/errno.h>
#include <linux/stdarg.h>
#include <linux/string.h>
#include <linux/kernel.h>
#include <asm/unaligned.h>
#include <asm/fpu/api.h>
#include <asm/cpufeature.h>
#include <linux/zstd.h>

/*
 * In the kernel even passing a float argument uses SSE registers, so the
 * module brackets every call into the codec with kernel_fpu_begin() and
 * kernel_fpu_end() itself; the codec's own FPU sections are empty here.
 * kernel_fpu_begin() loads the default MXCSR (round to nearest, denormals
 * kept), the environment the codec specification assumes.
 *
 * The cryptography (below) is the other way round: the kernel's library
 * opens its own sections, so it is never called inside one.
 */
struct gn_fpu {
	int unused;
};

static inline void gn_fpu_begin(struct gn_fpu *f)
{
	(void)f;
}

static inline void gn_fpu_end(struct gn_fpu *f)
{
	(void)f;
}

/*
 * The protocol core (lib/delivery, lib/collective) brackets each call into
 * floating-point or SIMD code (the codec, its own FPU units) with
 * these, one section per chunk or packet, never nested: in the kernel they
 * are the FPU sections, in userspace they cost nothing.
 */
static inline void gn_simd_begin(void)
{
	kernel_fpu_begin();
}

static inline void gn_simd_end(void)
{
	kernel_fpu_end();
}

/*
 * The CPU having an instruction set is not enough: kernel_fpu_begin()
 * saves only the register state the kernel enabled in XCR0, so the upper
 * YMM (and ZMM) halves must be among them, as the kernel's own AVX2 and
 * AVX-512 crypto drivers check. The codec's dispatch decides here.
 */
static inline bool gn_cpu_has_avx2(void)
{
	return boot_cpu_has(X86_FEATURE_AVX2) && boot_cpu_has(X86_FEATURE_BMI2) &&
	       cpu_has_xfeatures(XFEATURE_MASK_SSE | XFEATURE_MASK_YMM, NULL);
}

static inline bool gn_cpu_has_avx512(void)
{
	return boot_cpu_has(X86_FEATURE_AVX512F) &&
	       boot_cpu_has(X86_FEATURE_AVX512BW) &&
	       boot_cpu_has(X86_FEATURE_AVX512VL) &&
	       boot_cpu_has(X86_FEATURE_AVX512DQ) &&
	       boot_cpu_has(X86_FEATURE_AVX512VBMI) &&
	       boot_cpu_has(X86_FEATURE_AVX512_VBMI2) &&
	       boot_cpu_has(X86_FEATURE_BMI2) &&
	       cpu_has_xfeatures(XFEATURE_MASK_SSE | XFEATURE_MASK_YMM |
				 XFEATURE_MASK_AVX512, NULL);
}

#define gn_get_le16(p) get_unaligned_le16(p)
#define gn_get_le32(p) get_unaligned_le32(p)
#define gn_get_le64(p) get_unaligned_le64(p)
#define gn_put_le16(v, p) put_unaligned_le16((v), (p))
#define gn_put_le32(v, p) put_unaligned_le32((v), (p))
#define gn_put_le64(v, p) put_unaligned_le64((v), (p))

#define GN_STATIC_ASSERT(c, msg) _Static_assert(c, msg)

/* Clear key material so the compiler cannot drop the stores. */
#define gn_memzero_explicit(p, n) memzero_explicit((p), (n))

static inline zstd_parameters gn_zstd_params(int level, size_t src_max)
{
	zstd_parameters p = zstd_get_params(level, src_max);

	if (p.cParams.strategy <= ZSTD_dfast)
		p.cParams.minMatch = GN_ZSTD_MIN_MATCH;
	p.fParams.contentSizeFlag = 1;
	p.fParams.checksumFlag = 0;
	p.fParams.noDictIDFlag = 1;
	return p;
}

static inline size_t gn_zstd_cctx_size(int level, size_t src_max)
{
	zstd_parameters p = gn_zstd_params(level, src_max);

	return zstd_cctx_workspace_bound(&p.cParams);
}

static inline void *gn_zstd_cctx_init(void *ws, size_t size)
{
	return zstd_init_cctx(ws, size);
}

/* The kernel's context takes its parameters with every call. */
static inline int gn_zstd_cctx_level(void *cctx, int level, size_t src_max)
{
	return 0;
}

static inline size_t gn_zstd_compress_bound(size_t len)
{
	return zstd_compress_bound(len);
}

/*
 * At the level gn_zstd_cctx_level() last set, @len <= @src_max, the size
 * the context was made for. Return: bytes, or -ENOSPC.
 */
static inline long gn_zstd_compress(void *cctx, void *dst, size_t cap,
				    const void *src, size_t len, int level,
				    size_t src_max)
{
	zstd_parameters p = gn_zstd_params(level, src_max);
	size_t r = zstd_compress_cctx(cctx, dst, cap, src, len, &p);

	return zstd_is_error(r) ? -ENOSPC : (long)r;
}

static inline size_t gn_zstd_dctx_size(void)
{
	return zstd_dctx_workspace_bound();
}

static inline void *gn_zstd_dctx_init(void *ws, size_t size)
{
	return zstd_init_dctx(ws, size);
}

/* Never writes past @cap, whatever @src holds. Return: bytes, -EBADMSG. */
static inline long gn_zstd_decompress(void *dctx, void *dst, size_t cap,
				      const void *src, size_t len)
{
	size_t r = zstd_decompress_dctx(dctx, dst, cap, src, len);

	return zstd_is_error(r) ? -EBADMSG : (long)r;
}

#else /* userspace */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>		/* snprintf, vsnprintf */
#include <string.h>
#include <errno.h>
#include <xmmintrin.h>
#define ZSTD_STATIC_LINKING_ONLY	/* contexts in caller-sized workspaces */
#include <zstd.h>

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define gn_memzero_explicit(p, n) explicit_bzero((p), (n))
#define READ_ONCE(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define WRITE_ONCE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

#ifndef __BYTE_ORDER__
#error "gradnet needs __BYTE_ORDER__"
#endif

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int32_t s32;
typedef int64_t s64;

/*
 * A trainer may run with flush-to-zero or denormals-are-zero set (some
 * frameworks do this for speed). The codec's results are specified for
 * IEEE round-to-nearest with denormals, so every floating-point entry point
 * switches to that environment and restores the caller's afterwards.
 */
#define GN_MXCSR_DEFAULT 0x1f80u

struct gn_fpu {
	unsigned int csr;
};

static inline void gn_fpu_begin(struct gn_fpu *f)
{
	f->csr = _mm_getcsr();
	if (f->csr != GN_MXCSR_DEFAULT)
		_mm_setcsr(GN_MXCSR_DEFAULT);
}

static inline void gn_fpu_end(struct gn_fpu *f)
{
	if (f->csr != GN_MXCSR_DEFAULT)
		_mm_setcsr(f->csr);
}

/*
 * In a process the sections cost nothing (the registers are the
 * process's own) but a call: they stay real calls, defined in libc.c, so
 * that a test (tests/simd_sections_test.c) can see them and hold the core
 * to the kernel's rule, that every codec call which may run SIMD kernels
 * is inside one.
 */
void gn_simd_begin(void);
void gn_simd_end(void);

static inline bool gn_cpu_has_avx2(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2");
}

static inline bool gn_cpu_has_avx512(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") &&
	       __builtin_cpu_supports("avx512bw") &&
	       __builtin_cpu_supports("avx512vl") &&
	       __builtin_cpu_supports("avx512dq") &&
	       __builtin_cpu_supports("avx512vbmi") &&
	       __builtin_cpu_supports("avx512vbmi2") &&
	       __builtin_cpu_supports("bmi2");
}

static inline u16 gn_get_le16(const void *p)
{
	u16 v;

	memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap16(v);
#endif
	return v;
}

static inline u32 gn_get_le32(const void *p)
{
	u32 v;

	memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	return v;
}

static inline u64 gn_get_le64(const void *p)
{
	u64 v;

	memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

static inline void gn_put_le16(u16 v, void *p)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap16(v);
#endif
	memcpy(p, &v, sizeof(v));
}

static inline void gn_put_le32(u32 v, void *p)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	memcpy(p, &v, sizeof(v));
}

static inline void gn_put_le64(u64 v, void *p)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	memcpy(p, &v, sizeof(v));
}

#define GN_STATIC_ASSERT(c, msg) _Static_assert(c, msg)

static inline ZSTD_parameters gn_zstd_params(int level, size_t src_max)
{
	ZSTD_parameters p = ZSTD_getParams(level, src_max, 0);

	if (p.cParams.strategy <= ZSTD_dfast)
		p.cParams.minMatch = GN_ZSTD_MIN_MATCH;
	if (p.cParams.strategy == ZSTD_fast)
		p.cParams.targetLength = GN_ZSTD_MATCH_STEP;
	p.fParams.contentSizeFlag = 1;
	p.fParams.checksumFlag = 0;
	p.fParams.noDictIDFlag = 1;
	return p;
}

static inline size_t gn_zstd_cctx_size(int level, size_t src_max)
{
	return ZSTD_estimateCCtxSize_usingCParams(
		gn_zstd_params(level, src_max).cParams);
}

static inline void *gn_zstd_cctx_init(void *ws, size_t size)
{
	return ZSTD_initStaticCCtx(ws, size);
}

/*
 * libzstd's context keeps its parameters from frame to frame: set once
 * per level, not per frame (which costs a quarter of a small frame's
 * time). Return: 0, or -EINVAL.
 */
static inline int gn_zstd_cctx_level(void *cctx, int level, size_t src_max)
{
	ZSTD_parameters p = gn_zstd_params(level, src_max);
	size_t r = ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);

	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setCParams(cctx, p.cParams);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 0);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cctx, ZSTD_c_dictIDFlag, 0);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cctx, ZSTD_c_literalCompressionMode,
					   ZSTD_ps_enable);
	return ZSTD_isError(r) ? -EINVAL : 0;
}

static inline size_t gn_zstd_compress_bound(size_t len)
{
	return ZSTD_compressBound(len);
}

static inline long gn_zstd_compress(void *cctx, void *dst, size_t cap,
				    const void *src, size_t len, int level,
				    size_t src_max)
{
	size_t r = ZSTD_compress2(cctx, dst, cap, src, len);

	(void)level;
	(void)src_max;
	return ZSTD_isError(r) ? -ENOSPC : (long)r;
}

static inline size_t gn_zstd_dctx_size(void)
{
	return ZSTD_estimateDCtxSize();
}

static inline void *gn_zstd_dctx_init(void *ws, size_t size)
{
	return ZSTD_initStaticDCtx(ws, size);
}

static inline long gn_zstd_decompress(void *dctx, void *dst, size_t cap,
				      const void *src, size_t len)
{
	size_t r = ZSTD_decompressDCtx(dctx, dst, cap, src, len);

	return ZSTD_isError(r) ? -EBADMSG : (long)r;
}

#endif /* __KERNEL__ */

/*
 * Cryptography comes from a vetted library of the environment, never from
 * the core: ChaCha20-Poly1305 (RFC 8439) and keyed BLAKE2s-256 (RFC 7693),
 * libcrypto's in a process (lib/env/crypto.c: libgradnet and the DPDK
 * path) and lib/crypto's in the kernel (lib/env/kernel_crypto.c).
 * lib/wire/seal.c is their one caller. Any thread may call them at any
 * time (the kernel: process context), outside FPU sections: each library
 * uses SIMD on its own terms.
 *
 * gn_aead_seal() encrypts @len bytes at @body in place and writes the
 * 16-byte tag right after them, authenticating @ad_len bytes at @ad too,
 * with the key @key (32 bytes) and the 96-bit nonce 0^32 || le64(@nonce).
 * Return: 0 or -errno.
 *
 * gn_aead_open() checks the tag at @body + @len and, if it is right,
 * decrypts the body in place. Return: 0, -EBADMSG for a wrong tag (the
 * body is then undefined), or -errno.
 *
 * gn_kdf() writes BLAKE2s-256 of @a_len bytes at @a followed by @b_len
 * bytes at @b, keyed with @key_len (1..32) bytes at @key, to the 32 bytes
 * at @out. Return: 0 or -errno.
 */
int gn_aead_seal(const u8 *key, u64 nonce, const u8 *ad, size_t ad_len,
		 u8 *body, size_t len);
int gn_aead_open(const u8 *key, u64 nonce, const u8 *ad, size_t ad_len,
		 u8 *body, size_t len);
int gn_kdf(u8 *out, const u8 *key, size_t key_len, const u8 *a, size_t a_len,
	   const u8 *b, size_t b_len);

#endif /* GN_DEPS_H */
