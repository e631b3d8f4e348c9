/* SPDX-License-Identifier: MIT */
/*
 * csum.h - the Internet checksum (RFC 1071) of the DPDK path, for the
 * receive filter's checks and the UDP checksum of frames sent on a port
 * that does not offload it. Plain C on raw bytes, no DPDK type and no EAL
 * (the fuzzer and filter_test link it alone); the AVX2 kernel is chosen at
 * run time when the CPU has it, as the codec chooses its kernels.
 */
#ifndef GN_DPDK_CSUM_H
#define GN_DPDK_CSUM_H

#include "gn_deps.h"

enum gn_dpdk_csum_isa {
	GN_DCSUM_SCALAR,		/* the specification, any CPU */
	GN_DCSUM_AVX2,
	GN_DCSUM_ISA_N
};

/**
 * gn_dpdk_csum() - the ones' complement sum of bytes, RFC 1071
 * @sum: a sum to add to (an earlier return, a pseudo-header's words)
 * @p: the bytes, at any alignment
 * @len: how many (an odd last byte is the high byte of a zero-padded word)
 *
 * The bytes are read as big-endian 16-bit words, as on the wire.
 *
 * Return: @sum plus the words, folded to 16 bits with end-around carries:
 * 0xffff for a correct checksummed span; its complement is the checksum
 * to write. 0 only when @sum and every word are 0.
 */
u16 gn_dpdk_csum(u32 sum, const void *p, u32 len);

/**
 * gn_dpdk_csum_isa() - gn_dpdk_csum() with the kernel of one instruction set
 * @isa: GN_DCSUM_*; the CPU must have it (gn_dpdk_csum_isa_ok())
 * @sum: as gn_dpdk_csum()
 * @p: as gn_dpdk_csum()
 * @len: as gn_dpdk_csum()
 *
 * For tests, which compare every kernel with the specification.
 *
 * Return: what gn_dpdk_csum() returns, identical for every @isa.
 */
u16 gn_dpdk_csum_isa(int isa, u32 sum, const void *p, u32 len);

/**
 * gn_dpdk_csum_isa_ok() - whether this CPU runs @isa's kernel
 * @isa: GN_DCSUM_*
 *
 * Return: true if it does.
 */
bool gn_dpdk_csum_isa_ok(int isa);

/*
 * Headers inline: @n 32-bit words at @p summed as they lie in memory (RFC
 * 1071's byte-order independence), and such a sum folded to 16 bits in
 * wire order. A 20-byte IPv4 header or the 8 address bytes of the UDP
 * pseudo-header cost a dozen instructions, not a call.
 */
static inline u64 gn_dpdk_csum_words32(const void *p, u32 n)
{
	const u8 *b = p;
	u64 s = 0;
	u32 w, i;

	for (i = 0; i < n; i++) {
		memcpy(&w, b + 4 * i, 4);
		s += w;
	}
	return s;
}

/* @v, a 16-bit value, as the bytes of its big-endian form read natively. */
static inline u64 gn_dpdk_csum_be16(u16 v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return __builtin_bswap16(v);
#else
	return v;
#endif
}

static inline u16 gn_dpdk_csum_fold(u64 s)
{
	u16 h;

	s = (s & 0xffffffffu) + (s >> 32);
	s = (s & 0xffffffffu) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	h = (u16)s;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	h = __builtin_bswap16(h);
#endif
	return h;
}

/* The AVX2 kernel (csum_avx2.c): the native-order sum, unfolded. */
u64 gn_dpdk_csum_avx2(const u8 *p, u32 len);

#endif /* GN_DPDK_CSUM_H */
