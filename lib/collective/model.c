// SPDX-License-Identifier: MIT
/*
 * model.c - model tensors (model.h): their options checked and resolved,
 * the digest that peers compare, their state sized at registration, and
 * the step's start and end. Integer-only: the options arrive as float
 * bits and are judged as bits; model_fp.c computes with them.
 */
#include "core.h"
#include "codec/entropy/entropy.h"

/*
 * DORE's quantizer, where DORE is asked for without a codec: QSGD at 2
 * bits (one level: b_j is 0 or 1), the largest magnitude as the norm,
 * blocks of 256 values. Words as qsgd's table (lib/codec/qsgd).
 */
static const struct gn_codec_spec dore_quantizer = {
	.codec = GN_CODEC_QSGD, .given = 7, .p = { .w = { 2, 256, 1 } },
};

/* DORE's quantizer with the parameters the caller gave on top. */
static void dore_default(struct gn_codec_spec *up)
{
	struct gn_codec_spec q = dore_quantizer;
	u32 i;

	for (i = 0; i < GN_PARAM_WORDS_ALL; i++)
		if (up->given & 1u << i)
			*gn_param_word(&q.p, i) = gn_param_get(&up->p, i);
	q.given |= up->given;
	*up = q;
}

/* Bits of a float32 in [0, 1): its sign clear, below 1.0's bits. */
static bool unit_open(u32 bits)
{
	return bits < 0x3f800000u;
}

/* Bits of a float32 in (0, 1]. */
static bool unit_closed(u32 bits)
{
	return bits && bits <= 0x3f800000u;
}

static int model_err(struct gn_ctx *ctx, u32 id, const char *what)
{
	snprintf(ctx->api_errmsg, sizeof(ctx->api_errmsg),
		 "model tensor %u: %s", id, what);
	return -EINVAL;
}

/* DORE's three, each 0 (its default) or in (0, 1]; none without DORE. */
static int dore_check(struct gn_ctx *ctx, u32 id, const struct gn_core_model *m,
		      struct gn_model *out)
{
	const u32 v[3] = { m->alpha, m->beta, m->eta };
	const u32 def[3] = { GN_DORE_ALPHA, GN_DORE_BETA, GN_DORE_ETA };
	u32 *to[3] = { &out->alpha, &out->beta, &out->eta };
	int i;

	for (i = 0; i < 3; i++) {
		if (!(m->flags & GN_MODEL_DORE) && v[i])
			return model_err(ctx, id, "alpha, beta and eta are DORE's: set GN_MODEL_DORE, or leave them 0");
		if (v[i] && !unit_closed(v[i]))
			return model_err(ctx, id, "alpha, beta and eta must be in (0, 1] (0: 0.1, 1 and 0.5)");
		*to[i] = v[i] ? v[i] : def[i];
	}
	/* Without DORE the change is added as it is. */
	if (!(m->flags & GN_MODEL_DORE))
		out->alpha = out->eta = 0;
	return 0;
}

/* FNV-1a over words, folded to 24 bits; never 0 (0 means no model). */
static u32 digest_of(const u32 *w, u32 n)
{
	u32 h = 0x811c9dc5u, i, k;

	for (i = 0; i < n; i++)
		for (k = 0; k < 4; k++)
			h = (h ^ (w[i] >> (8 * k) & 0xff)) * 0x01000193u;
	h = (h >> 24 ^ h) & 0xffffffu;
	return h ? h : 1;
}

/**
 * gn_model_setup() - a model tensor's options, checked and resolved
 * @ctx: the context (the job's codec, chunk and packet size)
 * @o: the registration; its flags must be 0
 * @m: the optimizer and the changes' codec
 * @up: in: the gradients' codec as given; out: with DORE's quantizer in
 *	place of the job's codec
 * @out: the model, its state not yet allocated
 *
 * Return: 0, or -EINVAL with the reason in the context's api_errmsg.
 */
int gn_model_setup(struct gn_ctx *ctx, const struct gn_core_tensor *o,
		   const struct gn_core_model *m, struct gn_codec_spec *up,
		   struct gn_model *out)
{
	char why[GN_ERRMSG_LEN - 40];
	struct gn_codec_spec down, res;
	u32 w[8 + GN_CODEC_PARAM_WORDS];
	bool dore_q;
	int r;

	memset(out, 0, sizeof(*out));
	if (o->flags)
		return model_err(ctx, o->id, "tensor flags (GN_TENSOR_AVERAGE) do not apply: a step averages the gradients");
	if (m->flags & ~GN_MODEL_DORE)
		return model_err(ctx, o->id, "unknown flags");
	if (!unit_open(m->momentum))
		return model_err(ctx, o->id, "momentum must be in [0, 1)");
	if (m->weight_decay >= 0x7f800000u)
		return model_err(ctx, o->id, "weight_decay must be finite and >= 0");
	r = dore_check(ctx, o->id, m, out);
	if (r)
		return r;
	dore_q = m->flags & GN_MODEL_DORE && !up->codec;
	if (dore_q)
		dore_default(up);
	down = m->down.codec ? m->down : *up;
	/* The gradients' codec with the changes' own parameters: under DORE
	 * without a codec, its quantizer with them on top, as for @up. */
	if (!m->down.codec && m->down.given) {
		down = m->down;
		down.codec = up->codec;
		if (dore_q)
			dore_default(&down);
	}
	r = gn_codec_resolve(&ctx->codec, &down, &res, why, sizeof(why));
	if (!r)
		r = gn_codec_params_check(gn_codec_find(res.codec), &res.p,
					  ctx->chunk,
					  ctx->max_pkt - GN_WIRE_DATA_OVERHEAD,
					  why, sizeof(why));
	if (r) {
		snprintf(ctx->api_errmsg, sizeof(ctx->api_errmsg),
			 "model tensor %u: the changes' codec: %s", o->id, why);
		return r;
	}
	out->cd = gn_codec_find(res.codec);
	out->params = res.p;
	out->flags = m->flags;
	out->momentum = m->momentum;
	out->weight_decay = m->weight_decay;
	out->res_scratch = (out->cd->scratch(&out->params, ctx->chunk) + 7) &
			   ~(size_t)7;
	w[0] = out->cd->id;
	w[1] = out->flags;
	w[2] = out->momentum;
	w[3] = out->weight_decay;
	w[4] = out->alpha;
	w[5] = out->beta;
	w[6] = out->eta;
	/* 0 without the stage: such a model's digest is what it always was. */
	w[7] = gn_entropy_desc(&out->params);
	memcpy(w + 8, out->params.w, sizeof(out->params.w));
	out->digest = digest_of(w, sizeof(w) / sizeof(w[0]));
	return 0;
}

/* A result slot's bytes: the changes' codec's scratch, then its stream. */
size_t gn_model_res_slot(const struct gn_ctx *ctx, const struct gn_tensor *t)
{
	const struct gn_model *m = t->model;
	size_t slot = m->res_scratch +
		      (size_t)m->cd->bound(&m->params, ctx->chunk);

	return slot > t->stride ? slot : t->stride;
}

/* Both halves of a double buffer of @n values, zeroed. */
static int state_alloc(struct gn_ctx *ctx, float **buf, size_t n)
{
	buf[0] = gn_alloc_array(ctx->env, n, sizeof(float));
	buf[1] = gn_alloc_array(ctx->env, n, sizeof(float));
	return buf[0] && buf[1] ? 0 : -ENOMEM;
}

/**
 * gn_model_alloc() - a model tensor's state, all zero, and its streams
 * @ctx: the context
 * @t: the tensor, laid out, its encode scratch sized
 *
 * Return: 0 or -ENOMEM (gn_model_free() frees what was made).
 */
int gn_model_alloc(struct gn_ctx *ctx, struct gn_tensor *t)
{
	struct gn_model *m = t->model;
	size_t own = t->lo[ctx->rank + 1] - t->lo[ctx->rank] + 1;
	u32 parts = (gn_encode_scratch(ctx, t) + ENCODE_BATCH - 1) /
		    ENCODE_BATCH;
	int r = 0;

	if (m->flags & GN_MODEL_DORE)
		r = state_alloc(ctx, m->hw, t->n) ?: state_alloc(ctx, m->ho, own) ?:
		    state_alloc(ctx, m->eo, own);
	if (!r && m->momentum)
		r = state_alloc(ctx, m->mom, own);
	if (!r && m->cd->flags & GN_CODEC_EF_REDUCE)
		r = state_alloc(ctx, m->ef, own);
	if (r)
		return r;
	m->tmp_len = ((size_t)t->cd->bound(&t->params, ctx->chunk) + 7) &
		     ~(size_t)7;
	m->tmp = gn_alloc_array(ctx->env, parts, m->tmp_len);
	return m->tmp ? 0 : -ENOMEM;
}

void gn_model_free(struct gn_ctx *ctx, struct gn_tensor *t)
{
	struct gn_model *m = t->model;
	int k;

	if (!m)
		return;
	for (k = 0; k < 2; k++) {
		gn_free(ctx->env, m->hw[k]);
		gn_free(ctx->env, m->ho[k]);
		gn_free(ctx->env, m->eo[k]);
		gn_free(ctx->env, m->mom[k]);
		gn_free(ctx->env, m->ef[k]);
	}
	gn_free(ctx->env, m->tmp);
	gn_free(ctx->env, m);
	t->model = NULL;
}

/* The parameters, a chunk of values per part, with the change added. */
struct commit_job {
	struct gn_ctx *ctx;
	struct gn_step *st;
};

static void commit_part(void *arg, u32 part)
{
	struct commit_job *c = arg;
	size_t off = (size_t)part * c->ctx->chunk, n = c->st->t->n;

	gn_fp_model_commit(c->st, off,
			   n - off < c->ctx->chunk ? n - off : c->ctx->chunk);
}

/**
 * gn_model_commit() - a completed step's changes into the parameters
 * @ctx: the context (lock held)
 * @st: the step: every chunk of its data holds the change it decoded
 */
void gn_model_commit(struct gn_ctx *ctx, struct gn_step *st)
{
	struct commit_job c = { ctx, st };
	size_t parts = (st->t->n + ctx->chunk - 1) / ctx->chunk;

	gn_env_run(ctx->env, commit_part, &c, (u32)parts);
}

/* One parameter word as text: 0, or its value as the registry prints it. */
static size_t word_text(u32 bits, char *buf, size_t len)
{
	static const struct gn_codec_param f32 = { .type = GN_PARAM_F32 };

	if (!bits)
		return (size_t)snprintf(buf, len, "0");
	return gn_codec_param_text(&f32, bits, buf, len);
}

/* "momentum=0.9 weight_decay=0 [alpha=.. beta=.. eta=..] changes SPEC" */
size_t gn_model_text(const struct gn_model *m, char *buf, size_t len)
{
	const char *names[5] = { "momentum", "weight_decay", "alpha", "beta",
				 "eta" };
	const u32 v[5] = { m->momentum, m->weight_decay, m->alpha, m->beta,
			   m->eta };
	u32 i, shown = m->flags & GN_MODEL_DORE ? 5 : 2;
	size_t at = 0;

	for (i = 0; i < shown && at < len; i++) {
		at += (size_t)snprintf(buf + at, len - at, "%s=", names[i]);
		if (at < len)
			at += word_text(v[i], buf + at, len - at);
		if (at < len)
			at += (size_t)snprintf(buf + at, len - at, " ");
	}
	if (at < len)
		at += (size_t)snprintf(buf + at, len - at, "changes ");
	if (at < len)
		at += gn_codec_spec_text(m->cd, &m->params, buf + at, len - at);
	return at;
}

int gn_core_model_register(struct gn_ctx *ctx, const struct gn_core_tensor *o,
			   const struct gn_core_model *m)
{
	return gn_tensor_add(ctx, o, NULL, m);
}

int gn_core_model_start(struct gn_ctx *ctx, u32 id, float *grad,
			float *params, u32 lr)
{
	/* Finite and not negative; -0 is refused with the negatives. */
	if (lr >= 0x7f800000u) {
		gn_env_lock(ctx->env);
		snprintf(ctx->api_errmsg, sizeof(ctx->api_errmsg),
			 "model tensor %u: the learning rate (bits %#x) must be finite and >= 0",
			 id, lr);
		gn_env_unlock(ctx->env);
		return -EINVAL;
	}
	return gn_step_start(ctx, id, grad, params, lr, true);
}
