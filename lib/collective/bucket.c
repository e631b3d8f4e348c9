// SPDX-License-Identifier: MIT
/*
 * bucket.c - buckets: many small tensors (members) allreduced as one, so
 * that their shards travel in a few packets instead of one message per
 * member and shard. A bucket is sharded as one tensor of the members'
 * total size; within a shard, chunks are cut at member bounds (and every
 * ctx->chunk values), so each member keeps its own 3LC scale: a bias
 * next to a weight matrix is not quantized against the weights' largest
 * value. Error feedback is per element, so every member keeps its own.
 * A shared-scale bucket, and a dense one, skip the cut and are laid out
 * as a tensor.
 */
#include "core.h"

/* FNV-1a over the sizes, folded to 24 bits; never 0 (a tensor's). */
static u32 layout_hash(const struct gn_layout *lay)
{
	u64 h = 0xcbf29ce484222325ull, v;
	u32 i, k;

	for (i = 0; i <= lay->members; i++) {
		v = i < lay->members ? (u64)lay->elems[i] :
				       (u64)lay->members << 1 | lay->shared;
		for (k = 0; k < 8; k++) {
			h = (h ^ (u8)(v >> (8 * k))) * 0x100000001b3ull;
		}
	}
	h = (h ^ (h >> 24) ^ (h >> 48)) & 0xffffff;
	return h ? (u32)h : 1;
}

/*
 * Walk shard @j's chunks: member pieces of the shard, each cut every
 * ctx->chunk values. With @off and @len NULL only count them.
 */
static u32 shard_chunks(const struct gn_ctx *ctx, const struct gn_tensor *t,
			const struct gn_layout *lay, int j, size_t *off,
			u32 *len)
{
	size_t lo = t->lo[j], hi = t->lo[j + 1], m0 = 0, a, b;
	u32 i, n = 0;

	for (i = 0; i < lay->members && m0 < hi; m0 += lay->elems[i++]) {
		a = m0 > lo ? m0 : lo;
		b = m0 + lay->elems[i] < hi ? m0 + lay->elems[i] : hi;
		for (; a < b; a += ctx->chunk, n++) {
			if (!off)
				continue;
			off[n] = a;
			len[n] = (u32)(b - a < ctx->chunk ? b - a : ctx->chunk);
		}
	}
	return n;
}

/* Lay out @t's chunks by @lay (before tensor_alloc()): 0 or -ENOMEM. */
int gn_bucket_layout(struct gn_ctx *ctx, struct gn_tensor *t,
		     const struct gn_layout *lay)
{
	u32 total = 0;
	int j;

	t->layout = layout_hash(lay);
	t->members = lay->members;
	/* Values coded one by one: chunk bounds change nothing. */
	if (lay->shared || t->cd->flags & GN_CODEC_ELEMENTWISE)
		return 0;
	for (j = 0; j < ctx->world; j++) {
		t->chunks[j] = shard_chunks(ctx, t, lay, j, NULL, NULL);
		t->gat_off[j] = total;
		total += t->chunks[j];
	}
	t->ck_off = gn_alloc_array(ctx->env, (size_t)total + 1, sizeof(size_t));
	t->ck_len = gn_alloc_array(ctx->env, (size_t)total + 1, sizeof(u32));
	if (!t->ck_off || !t->ck_len)
		return -ENOMEM;
	for (j = 0; j < ctx->world; j++)
		shard_chunks(ctx, t, lay, j, t->ck_off + t->gat_off[j],
			     t->ck_len + t->gat_off[j]);
	t->chunks_total = total;
	return 0;
}

/* The chunk of shard @j that starts at element @off, or -1. */
long gn_bucket_chunk_of(const struct gn_tensor *t, int j, u64 off)
{
	u32 lo = t->gat_off[j], hi = lo + t->chunks[j];

	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;

		if (t->ck_off[mid] == off)
			return (long)(mid - t->gat_off[j]);
		if (t->ck_off[mid] < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

int gn_core_bucket_register(struct gn_ctx *ctx, const struct gn_core_tensor *o,
			    const size_t *elems, u32 members, bool shared)
{
	struct gn_layout lay = { elems, members, shared };

	return gn_tensor_add(ctx, o, &lay, NULL);
}
