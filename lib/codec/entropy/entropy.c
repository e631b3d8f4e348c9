// SPDX-License-Identifier: MIT
/*
 * entropy.c - the entropy stage: its parameters, its workspaces, and a
 * codec's slice coded with zstd on the way out (compress-then-cut) and
 * decoded on the way in, under the bound the codec gives. Integer-only.
 *
 * Why per packet: a packet decodes alone, in any order (ARCHITECTURE), so
 * a frame never spans packets. Why compress-then-cut: a frame of one
 * packet's worth of a 3LC stream wastes the room coding frees; the slicer
 * fills a packet with as many units as fit once coded, which keeps most
 * of what coding the whole chunk at once would save (doc/perf/entropy.md).
 */
#include "entropy.h"

static const char *const coders[] = { "none", "zstd" };

const struct gn_codec_param gn_stage_params[] = {
	{ .name = "entropy", .word = GN_CODEC_PARAM_WORDS + GN_STAGE_CODER,
	  .type = GN_PARAM_ENUM, .def = GN_ENTROPY_NONE, .hi = GN_ENTROPY_ZSTD,
	  .choices = coders,
	  .what = "entropy stage after the codec: none, or zstd on every packet it makes smaller" },
	{ .name = "entropy_level", .word = GN_CODEC_PARAM_WORDS + GN_STAGE_LEVEL,
	  .type = GN_PARAM_U32, .def = GN_ENTROPY_LEVEL_DEF, .lo = 1,
	  .hi = GN_ENTROPY_LEVEL_MAX,
	  .what = "zstd's compression level, with entropy=zstd" },
};

const u32 gn_stage_nparams = sizeof(gn_stage_params) / sizeof(gn_stage_params[0]);

/* A level without a coder is a slip: say so rather than ignore it. */
int gn_entropy_check(const struct gn_codec_params *p, char *msg, size_t len)
{
	if (!gn_entropy_on(p) &&
	    p->stage[GN_STAGE_LEVEL] != GN_ENTROPY_LEVEL_DEF) {
		if (msg)
			snprintf(msg, len, "entropy_level=%u needs entropy=zstd",
				 p->stage[GN_STAGE_LEVEL]);
		return -EINVAL;
	}
	return 0;
}

#define WS_ALIGN 64

static size_t ws_round(size_t n)
{
	return (n + WS_ALIGN - 1) & ~(size_t)(WS_ALIGN - 1);
}

/* Levels' needs grow with the level, but not strictly: take the largest. */
static size_t cctx_size(u32 raw_max, u32 level_max)
{
	size_t most = 0, n;
	u32 l;

	for (l = 1; l <= level_max; l++) {
		n = gn_zstd_cctx_size((int)l, raw_max);
		most = n > most ? n : most;
	}
	return ws_round(most);
}

/**
 * gn_entropy_enc_size() - bytes gn_entropy_enc_init() needs
 * @raw_max: the longest raw slice, gn_entropy_raw_max()
 * @level_max: the highest level it will compress at
 *
 * Return: bytes, for memory aligned to 64 bytes.
 */
size_t gn_entropy_enc_size(u32 raw_max, u32 level_max)
{
	return cctx_size(raw_max, level_max) + ws_round(raw_max) +
	       ws_round(gn_zstd_compress_bound(raw_max));
}

/**
 * gn_entropy_enc_init() - an encoder in @mem
 * @z: the encoder
 * @mem: gn_entropy_enc_size() bytes, 64-byte aligned, owned by the caller
 * @len: bytes at @mem
 * @raw_max: as given to gn_entropy_enc_size()
 * @level_max: as given to gn_entropy_enc_size()
 *
 * Return: 0, or -EINVAL if @len is short or zstd refuses the workspace.
 */
int gn_entropy_enc_init(struct gn_entropy_enc *z, void *mem, size_t len,
			u32 raw_max, u32 level_max)
{
	size_t ws = cctx_size(raw_max, level_max);
	size_t out = gn_zstd_compress_bound(raw_max);

	if (len < gn_entropy_enc_size(raw_max, level_max) || out > 0xffffffffu)
		return -EINVAL;
	z->cctx = gn_zstd_cctx_init(mem, ws);
	z->raw = (u8 *)mem + ws;
	z->out = z->raw + ws_round(raw_max);
	z->raw_max = raw_max;
	z->out_cap = (u32)out;
	z->level_max = level_max;
	z->level = 0;
	return z->cctx ? 0 : -EINVAL;
}

/* Return: bytes gn_entropy_dec_init() needs, for 64-byte aligned memory. */
size_t gn_entropy_dec_size(u32 raw_max)
{
	return ws_round(gn_zstd_dctx_size()) + ws_round(raw_max);
}

/**
 * gn_entropy_dec_init() - a decoder in @mem
 * @z: the decoder
 * @mem: gn_entropy_dec_size() bytes, 64-byte aligned, owned by the caller
 * @len: bytes at @mem
 * @raw_max: the longest raw slice it decodes
 *
 * Return: 0, or -EINVAL.
 */
int gn_entropy_dec_init(struct gn_entropy_dec *z, void *mem, size_t len,
			u32 raw_max)
{
	size_t ws = ws_round(gn_zstd_dctx_size());

	if (len < gn_entropy_dec_size(raw_max))
		return -EINVAL;
	z->dctx = gn_zstd_dctx_init(mem, ws);
	z->raw = (u8 *)mem + ws;
	z->raw_max = raw_max;
	return z->dctx ? 0 : -EINVAL;
}

/* Attempts at a packet before it is cut as the codec alone would cut it. */
#define TRIES 4

/*
 * The raw bytes that coded at @raw / @q would fill @cap, a thirty-second
 * short so that the next attempt usually fits.
 */
static u32 fill(long raw, long q, u32 cap)
{
	u64 n = (u64)raw * cap / (u64)q;

	return (u32)(n - n / 32 < 0xffffffffu ? n - n / 32 : 0xffffffffu);
}

/**
 * gn_entropy_slice() - from unit @at of a chunk, the slice that fills a
 * packet once coded, or the codec's own slice where coding does not pay
 * @c, @p, @scratch, @aux, @x, @len, @at: as the codec's @slice takes them
 * @z: this thread's encoder
 * @dst: the packet's body
 * @cap: bytes at @dst
 * @units: out, the slice's units (> 0)
 * @coded: out, @dst holds a zstd frame of the slice (else the slice)
 * @next: in, raw bytes to try first (a message starts with what its
 *	first packet filled last time, or @z->raw_max); out, what the next
 *	packet should try
 *
 * Every packet carries at least the units the codec's slice at @cap would
 * from @at, so a message never has more packets than the codec's
 * @pkts_max allows. A slice under GN_ENTROPY_MIN bytes is not coded. The result does not depend on anything but the
 * arguments and the zstd library.
 *
 * Return: bytes at @dst; the codec's error (-ENOSPC, -EINVAL); -EINVAL if
 * zstd fails where it cannot.
 */
long gn_entropy_slice(const struct gn_codec_ops *c,
		      const struct gn_codec_params *p, const void *scratch,
		      u32 aux, const float *x, u32 len, u32 at,
		      struct gn_entropy_enc *z, u8 *dst, u32 cap, u32 *units,
		      bool *coded, u32 *next)
{
	u32 level = p->stage[GN_STAGE_LEVEL];
	u32 budget = *next, used = 0, k;
	long raw, q;

	if (level != z->level) {
		if (level > z->level_max ||
		    gn_zstd_cctx_level(z->cctx, (int)level, z->raw_max))
			return -EINVAL;
		z->level = level;
	}
	budget = budget < z->raw_max ? budget : z->raw_max;
	budget = budget > cap ? budget : cap;
	for (k = 1;; k++) {
		raw = c->slice(p, scratch, aux, x, len, at, z->raw, budget, &used);
		if (raw < 0)
			return raw;
		if (raw < GN_ENTROPY_MIN && raw <= (long)cap) {
			memcpy(dst, z->raw, (size_t)raw);
			*coded = false;
			*units = used;
			return raw;
		}
		q = gn_zstd_compress(z->cctx, z->out, z->out_cap, z->raw,
				     (size_t)raw, (int)level, z->raw_max);
		if (q <= 0)
			return -EINVAL;
		if (q <= (long)cap && q < raw) {
			memcpy(dst, z->out, (size_t)q);
			*coded = true;
			*units = used;
			*next = fill(raw, q, cap);
			return q;
		}
		if (raw <= (long)cap) {
			memcpy(dst, z->raw, (size_t)raw);
			*coded = false;
			*units = used;
			*next = q < raw ? fill(raw, q, cap) : cap;
			return raw;
		}
		/* Too long coded: aim at what this ratio fills, at least at
		 * what the codec alone puts in a packet. */
		budget = k < TRIES && q < raw ? fill(raw, q, cap) : cap;
		budget = budget > cap ? budget : cap;
	}
}

/**
 * gn_entropy_open() - a coded body's slice, decompressed into @z->raw
 * @z: this thread's decoder
 * @c: the tensor's codec
 * @p: the tensor's parameters
 * @len: values of the chunk the slice belongs to
 * @body: the zstd frame
 * @blen: its bytes
 *
 * zstd writes no more than the capacity it is given: the smaller of what
 * one packet may stand for and the codec's bound of a whole chunk, so a
 * hostile frame can neither write out of bounds nor make a slice longer
 * than any honest one. The caller still checks the result with the
 * codec's @check_slice, as any received slice.
 *
 * Return: the slice's bytes at @z->raw; -EBADMSG for a body that is not
 * a frame within the bounds, or that codes a slice no shorter than
 * itself (no rank codes what coding does not make smaller).
 */
long gn_entropy_open(struct gn_entropy_dec *z, const struct gn_codec_ops *c,
		     const struct gn_codec_params *p, u32 len,
		     const u8 *body, u32 blen)
{
	u64 bound = c->bound(p, len);
	u32 cap = bound < z->raw_max ? (u32)bound : z->raw_max;
	long n = gn_zstd_decompress(z->dctx, z->raw, cap, body, blen);

	if (n <= (long)blen)
		return -EBADMSG;
	return n;
}
