// SPDX-License-Identifier: MIT
/*
 * csum.c - the Internet checksum (csum.h): the scalar kernel, which is the
 * specification, the fold, and the choice of kernel by instruction set.
 *
 * The ones' complement sum does not depend on byte order (RFC 1071 2.B):
 * words are summed as they lie in memory, 64 bits at a time with the
 * carries counted apart and added back at the end (2^64 = 1 mod 0xffff),
 * folded to 16 bits and swapped once. A 1472-byte datagram costs some 200
 * additions, not one per byte pair.
 */
#include "csum.h"

static u64 load64(const u8 *p)
{
	u64 w;

	memcpy(&w, p, 8);
	return w;
}

/* The native-order sum of @len bytes, modulo 0xffff, not folded. */
static u64 csum_scalar(const u8 *p, u32 len)
{
	u64 s = 0, c = 0, w;
	u16 h;

	for (; len >= 32; p += 32, len -= 32) {
		w = load64(p);
		s += w;
		c += s < w;
		w = load64(p + 8);
		s += w;
		c += s < w;
		w = load64(p + 16);
		s += w;
		c += s < w;
		w = load64(p + 24);
		s += w;
		c += s < w;
	}
	for (; len >= 8; p += 8, len -= 8) {
		w = load64(p);
		s += w;
		c += s < w;
	}
	/* The last whole 16-bit words, then an odd high byte. */
	for (; len >= 2; p += 2, len -= 2) {
		memcpy(&h, p, 2);
		s += h;
		c += s < h;
	}
	if (len) {
		s += *p;
		c += s < *p;
	}
	s += c;
	return s + (s < c);
}

static u16 fold_add(u32 sum, u16 h)
{
	u64 s = (u64)sum + h;

	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (u16)((s & 0xffff) + (s >> 16));
}

bool gn_dpdk_csum_isa_ok(int isa)
{
	switch (isa) {
	case GN_DCSUM_SCALAR:
		return true;
#if defined(__x86_64__)
	case GN_DCSUM_AVX2:
		return gn_cpu_has_avx2();
#endif
	default:
		return false;
	}
}

static u64 kernel_run(int isa, const u8 *p, u32 len)
{
#if defined(__x86_64__)
	if (isa == GN_DCSUM_AVX2)
		return gn_dpdk_csum_avx2(p, len);
#endif
	return csum_scalar(p, len);
}

u16 gn_dpdk_csum_isa(int isa, u32 sum, const void *p, u32 len)
{
	return fold_add(sum, gn_dpdk_csum_fold(kernel_run(isa, p, len)));
}

/* GN_DCSUM_* + 1 once chosen; 0 before the first call. */
static int best_isa;

static int best(void)
{
	int isa = READ_ONCE(best_isa);

	if (unlikely(!isa)) {
		isa = 1 + (gn_dpdk_csum_isa_ok(GN_DCSUM_AVX2) ? GN_DCSUM_AVX2 :
							       GN_DCSUM_SCALAR);
		WRITE_ONCE(best_isa, isa);
	}
	return isa - 1;
}

u16 gn_dpdk_csum(u32 sum, const void *p, u32 len)
{
	/* Headers (20 bytes, 12 of pseudo-header) are not worth a vector. */
	if (len < 64)
		return fold_add(sum, gn_dpdk_csum_fold(csum_scalar(p, len)));
	return gn_dpdk_csum_isa(best(), sum, p, len);
}
