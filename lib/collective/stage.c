// SPDX-License-Identifier: MIT
/*
 * stage.c - the entropy stage's contexts of a core context: what the
 * parts of spread.c pack and unpack coded slices with. Made when the
 * first tensor with the stage registers, grown when one needs a higher
 * level, and never touched per step: zstd runs in these workspaces.
 *
 * Who uses which, so that no two threads share one:
 * - the caller's encoding (no lock held, spread.c's encode parts): a set
 *   of one encoder per part, taken and given back under the lock for a
 *   whole gn_encode_all(); a second caller encoding at the same time
 *   finds it taken and sends its slices as the codec cuts them, which
 *   changes bytes on the wire, never a value;
 * - the owner's work parts (lock held): an encoder and a decoder per work
 *   slot, or one of each when the parts run one after the other;
 * - receiving (lock held, one packet at a time): one decoder checks every
 *   coded body; a packet queued for the workers keeps its decoded slice
 *   in a buffer of its queue slot.
 */
#include "core.h"
#include "codec/entropy/entropy.h"

struct gn_zset {
	bool claimed;
	bool orphan;			/* replaced while claimed: free on release */
	u32 n;
	struct gn_entropy_enc z[ENCODE_BATCH_MAX / ENCODE_BATCH];
	void *mem;
};

struct gn_stage {
	u32 raw_max, level_max;
	u32 slots;			/* the owner's work slots' contexts */
	u32 rxq;			/* queue slots with a decoded slice */
	struct gn_entropy_dec take;
	struct gn_entropy_enc *wenc;
	struct gn_entropy_dec *wdec;
	u8 *rxq_raw;			/* [rxq][raw_max] */
	void *mem;			/* all of the above but the set */
	struct gn_zset *enc;
};

static size_t a64(size_t n)
{
	return (n + 63) & ~(size_t)63;
}

/* 64-byte aligned memory for a workspace, from the env's allocator. */
static u8 *ws_align(void *mem)
{
	return (u8 *)(((unsigned long)mem + 63) & ~63ul);
}

static void zset_free(struct gn_ctx *ctx, struct gn_zset *zs)
{
	if (!zs)
		return;
	gn_free(ctx->env, zs->mem);
	gn_free(ctx->env, zs);
}

static struct gn_zset *zset_new(struct gn_ctx *ctx, u32 raw_max, u32 level)
{
	u32 n = gn_encode_batch(ctx) / ENCODE_BATCH, i;
	size_t each = a64(gn_entropy_enc_size(raw_max, level));
	struct gn_zset *zs = gn_alloc(ctx->env, sizeof(*zs));
	u8 *at;

	if (!zs)
		return NULL;
	zs->n = n ? n : 1;
	zs->mem = gn_alloc_array(ctx->env, zs->n, each + 64);
	if (!zs->mem)
		goto out_free;
	at = ws_align(zs->mem);
	for (i = 0; i < zs->n; i++, at += each)
		if (gn_entropy_enc_init(&zs->z[i], at, each, raw_max, level))
			goto out_free;
	return zs;

out_free:
	zset_free(ctx, zs);
	return NULL;
}

static void stage_mem_free(struct gn_ctx *ctx, struct gn_stage *sg)
{
	gn_free(ctx->env, sg->mem);
	gn_free(ctx->env, sg->wenc);
	gn_free(ctx->env, sg->wdec);
	sg->mem = NULL;
	sg->wenc = NULL;
	sg->wdec = NULL;
}

/* The lock-held contexts, in one block: take, the slots, the queue. */
static int stage_mem(struct gn_ctx *ctx, struct gn_stage *sg, u32 raw_max,
		     u32 level)
{
	size_t enc = a64(gn_entropy_enc_size(raw_max, level));
	size_t dec = a64(gn_entropy_dec_size(raw_max));
	size_t total = dec + sg->slots * (enc + dec) +
		       (size_t)sg->rxq * a64(raw_max) + 64;
	u8 *at;
	u32 i;

	sg->mem = gn_alloc(ctx->env, total);
	sg->wenc = gn_alloc_array(ctx->env, sg->slots, sizeof(*sg->wenc));
	sg->wdec = gn_alloc_array(ctx->env, sg->slots, sizeof(*sg->wdec));
	if (!sg->mem || !sg->wenc || !sg->wdec)
		return -ENOMEM;
	at = ws_align(sg->mem);
	if (gn_entropy_dec_init(&sg->take, at, dec, raw_max))
		return -EINVAL;
	at += dec;
	for (i = 0; i < sg->slots; i++) {
		if (gn_entropy_enc_init(&sg->wenc[i], at, enc, raw_max, level) ||
		    gn_entropy_dec_init(&sg->wdec[i], at + enc, dec, raw_max))
			return -EINVAL;
		at += enc + dec;
	}
	sg->rxq_raw = at;
	return 0;
}

/*
 * gn_stage_reserve() - contexts for a tensor whose stage compresses at
 * @level (lock held: no part of a batch runs, nothing is queued after a
 * flush); grown, never shrunk.
 * Return: 0 or -ENOMEM.
 */
int gn_stage_reserve(struct gn_ctx *ctx, u32 level)
{
	struct gn_stage *sg = ctx->stage;
	u32 raw_max = gn_entropy_raw_max(ctx->max_pkt - GN_WIRE_WHOLE_OVERHEAD);
	struct gn_zset *zs;
	int r;

	if (sg && level <= sg->level_max)
		return 0;
	if (!sg) {
		sg = gn_alloc(ctx->env, sizeof(*sg));
		if (!sg)
			return -ENOMEM;
		sg->slots = gn_env_workers(ctx->env) > 1 ?
				    gn_spread_work_max(ctx) : 1;
		sg->rxq = gn_spread_rxq_cap(ctx);
		ctx->stage = sg;
	}
	zs = zset_new(ctx, raw_max, level);
	if (!zs)
		return -ENOMEM;
	gn_spread_flush(ctx);
	stage_mem_free(ctx, sg);
	r = stage_mem(ctx, sg, raw_max, level);
	if (r) {
		/* Not a half-made context: the stage is none until one fits. */
		stage_mem_free(ctx, sg);
		zset_free(ctx, zs);
		sg->level_max = 0;
		return -ENOMEM;
	}
	if (sg->enc && sg->enc->claimed)
		sg->enc->orphan = true;
	else
		zset_free(ctx, sg->enc);
	sg->enc = zs;
	sg->raw_max = raw_max;
	sg->level_max = level;
	return 0;
}

void gn_stage_free(struct gn_ctx *ctx)
{
	struct gn_stage *sg = ctx->stage;

	if (!sg)
		return;
	stage_mem_free(ctx, sg);
	zset_free(ctx, sg->enc);
	gn_free(ctx->env, sg);
	ctx->stage = NULL;
}

/* The caller's encoders for a gn_encode_all(), or NULL (lock held). */
struct gn_zset *gn_stage_claim(struct gn_ctx *ctx)
{
	struct gn_zset *zs = ctx->stage ? ctx->stage->enc : NULL;

	if (!zs || zs->claimed)
		return NULL;
	zs->claimed = true;
	return zs;
}

void gn_stage_release(struct gn_ctx *ctx, struct gn_zset *zs)
{
	if (!zs)
		return;
	if (zs->orphan)
		zset_free(ctx, zs);
	else
		zs->claimed = false;
}

/* Part @p's encoder of a claimed set (NULL: none claimed). */
struct gn_entropy_enc *gn_stage_part_enc(struct gn_zset *zs, u32 p)
{
	return zs && p < zs->n ? &zs->z[p] : NULL;
}

/* Work slot @i's encoder and decoder; NULL without the stage. */
struct gn_entropy_enc *gn_stage_work_enc(struct gn_ctx *ctx, u32 i)
{
	struct gn_stage *sg = ctx->stage;

	return sg && sg->level_max ? &sg->wenc[i % sg->slots] : NULL;
}

struct gn_entropy_dec *gn_stage_work_dec(struct gn_ctx *ctx, u32 i)
{
	struct gn_stage *sg = ctx->stage;

	return sg && sg->level_max ? &sg->wdec[i % sg->slots] : NULL;
}

/*
 * Packets of @h's phase may be coded: they carry a codec's values (not an
 * index set) and the parameters of that codec (gn_phase_codec(): a model
 * tensor's results are its changes' codec's) have the stage. Return: that
 * codec, its parameters in *@p; NULL if they may not be coded.
 */
static const struct gn_codec_ops *stage_phase(const struct gn_tensor *t,
					      const struct gn_wire_hdr *h,
					      const struct gn_codec_params **p)
{
	const struct gn_codec_ops *cd = gn_phase_codec(t, h->phase, p);

	return h->phase != GN_PHASE_INDEX && gn_entropy_on(*p) ? cd : NULL;
}

/*
 * A received body as the codec's slice, decoded by @z when the packet says
 * it is coded. Return: 0, or -EBADMSG (coded where there is no decoder
 * @z or its phase's codec has no stage, or not a frame within the bounds).
 */
static int open_by(struct gn_entropy_dec *z, const struct gn_tensor *t,
		   const struct gn_wire_hdr *h, const struct gn_wire_data *d,
		   const u8 *body, struct gn_slice *v)
{
	const struct gn_codec_params *p;
	const struct gn_codec_ops *cd;
	long n;

	v->body = body;
	v->len = h->body_len;
	if (!h->entropy)
		return 0;
	cd = stage_phase(t, h, &p);
	if (!z || !cd)
		return -EBADMSG;
	n = gn_entropy_open(z, cd, p, d->chunk_len, body, h->body_len);
	if (n < 0)
		return -EBADMSG;
	v->body = z->raw;
	v->len = (u16)n;
	return 0;
}

/*
 * gn_stage_open() - a received body as the codec's slice: as it is, or
 * decoded by the receiving decoder when the packet says it is coded (lock
 * held; the slice stays there until the next packet)
 * @v: out, the slice
 * Return: 0, or -EBADMSG (coded where its phase's codec has no stage, or
 * not a frame within the bounds).
 */
int gn_stage_open(struct gn_ctx *ctx, const struct gn_tensor *t,
		  const struct gn_wire_hdr *h, const struct gn_wire_data *d,
		  const u8 *body, struct gn_slice *v)
{
	struct gn_stage *sg = ctx->stage;

	return open_by(sg && sg->level_max ? &sg->take : NULL, t, h, d, body,
		       v);
}

/*
 * Queue slot @i keeps a decoded slice @v that gn_stage_open() left in the
 * receiving decoder: copied to the slot's own buffer.
 */
void gn_stage_keep(struct gn_ctx *ctx, u32 i, struct gn_slice *v)
{
	struct gn_stage *sg = ctx->stage;
	u8 *to;

	if (!sg || v->body != sg->take.raw)
		return;
	to = sg->rxq_raw + (size_t)i * a64(sg->raw_max);
	memcpy(to, v->body, v->len);
	v->body = to;
}

/*
 * A held packet's slice, decoded again in a work part by slot @i's
 * decoder (it was checked when it came; zstd decodes the same bytes to
 * the same slice). Return: 0, or -EBADMSG.
 */
int gn_stage_reopen(struct gn_ctx *ctx, u32 i, const struct gn_tensor *t,
		    const struct gn_wire_hdr *h, const struct gn_wire_data *d,
		    const u8 *body, struct gn_slice *v)
{
	return open_by(gn_stage_work_dec(ctx, i), t, h, d, body, v);
}
