// SPDX-License-Identifier: MIT
/*
 * registry.c - the one table of compressors, by id, and what every path
 * does with a tensor's parameter block: defaults, checks, resolution
 * against the job's, and text for messages. A block is the codec's words
 * and the entropy stage's (entropy/entropy.h), which every codec has: the
 * parameters of a codec here are its own, then the stage's. Integer-only,
 * so the kernel module checks a block the same way libgradnet does.
 */
#include "codec.h"
#include "entropy/entropy.h"

/* The compressors, each defined in its folder. */
extern const struct gn_codec_ops gn_codec_dense;
extern const struct gn_codec_ops gn_codec_tlc;
extern const struct gn_codec_ops gn_codec_qsgd;
extern const struct gn_codec_ops gn_codec_topk;
extern const struct gn_codec_ops gn_codec_cltk;

/* enum gn_codec values are the index: the id the wire and the ioctls carry. */
static const struct gn_codec_ops *const codecs[] = {
	[GN_CODEC_NONE] = &gn_codec_dense,
	[GN_CODEC_3LC] = &gn_codec_tlc,
	[GN_CODEC_TOPK] = &gn_codec_topk,
	[GN_CODEC_QSGD] = &gn_codec_qsgd,
	[GN_CODEC_CLTK] = &gn_codec_cltk,
};

#define NCODECS (sizeof(codecs) / sizeof(codecs[0]))

const struct gn_codec_ops *gn_codec_find(u32 id)
{
	return id < NCODECS ? codecs[id] : NULL;
}

/* The i-th registered compressor, in id order; NULL past the last. */
const struct gn_codec_ops *gn_codec_at(u32 i)
{
	u32 id;

	for (id = 0; id < NCODECS; id++)
		if (codecs[id] && !i--)
			return codecs[id];
	return NULL;
}

static bool name_is(const char *name, const char *s, size_t len)
{
	return strlen(name) == len && !memcmp(name, s, len);
}

const struct gn_codec_ops *gn_codec_by_name(const char *name, size_t len)
{
	u32 id;

	for (id = 0; id < NCODECS; id++)
		if (codecs[id] && name_is(codecs[id]->name, name, len))
			return codecs[id];
	return NULL;
}

const char *gn_codec_name_of(u32 id)
{
	const struct gn_codec_ops *c = gn_codec_find(id);

	return c ? c->name : "?";
}

const struct gn_codec_param *gn_codec_param_at(const struct gn_codec_ops *c,
					       u32 i)
{
	if (i < c->nparams)
		return &c->params[i];
	i -= c->nparams;
	return i < gn_stage_nparams ? &gn_stage_params[i] : NULL;
}

const struct gn_codec_param *gn_codec_param_find(const struct gn_codec_ops *c,
						 const char *name, size_t len)
{
	const struct gn_codec_param *d;
	u32 i;

	for (i = 0; (d = gn_codec_param_at(c, i)); i++)
		if (name_is(d->name, name, len))
			return d;
	return NULL;
}

void gn_codec_defaults(const struct gn_codec_ops *c, struct gn_codec_params *p)
{
	const struct gn_codec_param *d;
	u32 i;

	memset(p, 0, sizeof(*p));
	for (i = 0; (d = gn_codec_param_at(c, i)); i++)
		*gn_param_word(p, d->word) = d->def;
}

/*
 * A positive float32 from its bits, as %g would print it to six digits,
 * without floating point: round(v * 1e9) is an integer below 1e18 for
 * v < 1e9, and six significant digits of it say the rest. +0 (a word
 * that stands for a default) prints as 0; other values outside [1e-9,
 * 1e9) as their bits.
 */
static size_t f32_text(u32 bits, char *buf, size_t len)
{
	u32 e = bits >> 23 & 0xff, m = bits & 0x7fffff, digits = 0;
	int sh = (int)e - 150;
	u64 n, p10 = 1, ip, fp;
	size_t at;

	if (!bits)
		return (size_t)snprintf(buf, len, "0");
	if (bits >> 31 || e < 97 || e > 156)
		return (size_t)snprintf(buf, len, "0x%08x", bits);
	n = (u64)(m | 1u << 23) * 1000000000ull;
	if (sh >= 0)
		n <<= sh;
	else
		n = (n + (1ull << (-sh - 1))) >> -sh;
	for (ip = n; ip; ip /= 10)
		digits++;
	while (digits-- > 6)
		p10 *= 10;
	n = (n + p10 / 2) / p10 * p10;
	ip = n / 1000000000ull;
	fp = n % 1000000000ull;
	at = (size_t)snprintf(buf, len, "%llu", (unsigned long long)ip);
	if (fp && at < len) {
		u32 w = 9;

		while (fp % 10 == 0) {
			fp /= 10;
			w--;
		}
		at += (size_t)snprintf(buf + at, len - at, ".%0*llu", (int)w,
				       (unsigned long long)fp);
	}
	return at;
}

size_t gn_codec_param_text(const struct gn_codec_param *d, u32 v, char *buf,
			   size_t len)
{
	switch (d->type) {
	case GN_PARAM_F32:
		return f32_text(v, buf, len);
	case GN_PARAM_ENUM:
		if (v <= d->hi)
			return (size_t)snprintf(buf, len, "%s", d->choices[v]);
		break;
	}
	return (size_t)snprintf(buf, len, "%u", v);
}

/*
 * "name:p=v,p=v": every parameter of the codec, for messages and tools;
 * the entropy stage's only when it is on.
 */
size_t gn_codec_spec_text(const struct gn_codec_ops *c,
			  const struct gn_codec_params *p, char *buf,
			  size_t len)
{
	size_t at = (size_t)snprintf(buf, len, "%s", c->name);
	u32 i, n = c->nparams + (gn_entropy_on(p) ? gn_stage_nparams : 0);

	for (i = 0; i < n && at < len; i++) {
		const struct gn_codec_param *d = gn_codec_param_at(c, i);

		at += (size_t)snprintf(buf + at, len - at, "%c%s=", i ? ',' : ':',
				       d->name);
		if (at < len)
			at += gn_codec_param_text(d, gn_param_get(p, d->word),
						  buf + at, len - at);
	}
	return at;
}

static bool value_ok(const struct gn_codec_param *d, u32 v)
{
	/* Float bits of positive finite values order like the values. */
	if (d->type == GN_PARAM_F32 && (v >> 31 || v >= 0x7f800000u))
		return false;
	if (d->type == GN_PARAM_ENUM)
		return v <= d->hi;
	return v >= d->lo && v <= d->hi;
}

static size_t range_text(const struct gn_codec_param *d, char *buf,
			 size_t len)
{
	size_t at;
	u32 v;

	if (d->range)
		return (size_t)snprintf(buf, len, "%s", d->range);
	if (d->type == GN_PARAM_ENUM) {
		at = 0;
		for (v = 0; v <= d->hi && at < len; v++)
			at += (size_t)snprintf(buf + at, len - at, "%s%s",
					       v ? ", " : "one of ",
					       d->choices[v]);
		return at;
	}
	at = gn_codec_param_text(d, d->lo, buf, len);
	if (at < len)
		at += (size_t)snprintf(buf + at, len - at, "..");
	if (at < len)
		at += gn_codec_param_text(d, d->hi, buf + at, len - at);
	return at;
}

/**
 * gn_codec_params_check() - is @p a valid parameter block of @c?
 * @c: the compressor
 * @p: the block
 * @chunk: the job's values per chunk
 * @body_cap: body bytes of a DATA packet at the job's MTU
 * @msg: out, why not (may be NULL)
 * @len: bytes at @msg
 *
 * Every named word in its range, every other word 0, the codec's own
 * check and the entropy stage's.
 *
 * Return: 0 or -EINVAL.
 */
int gn_codec_params_check(const struct gn_codec_ops *c,
			  const struct gn_codec_params *p, u32 chunk,
			  u32 body_cap, char *msg, size_t len)
{
	const struct gn_codec_param *d;
	char v[24], r[96];
	u32 named = 0, i;
	int e;

	for (i = 0; (d = gn_codec_param_at(c, i)); i++) {
		u32 w = gn_param_get(p, d->word);

		named |= 1u << d->word;
		if (value_ok(d, w))
			continue;
		gn_codec_param_text(d, w, v, sizeof(v));
		range_text(d, r, sizeof(r));
		if (msg)
			snprintf(msg, len, "%s: %s=%s is outside %s", c->name,
				 d->name, v, r);
		return -EINVAL;
	}
	for (i = 0; i < GN_CODEC_PARAM_WORDS; i++) {
		if (named & 1u << i || !p->w[i])
			continue;
		if (msg)
			snprintf(msg, len, "%s: parameter word %u is %#x; %s has no parameter there",
				 c->name, i, p->w[i], c->name);
		return -EINVAL;
	}
	e = c->check ? c->check(p, chunk, body_cap, msg, len) : 0;
	if (!e && gn_entropy_check(p, r, sizeof(r))) {
		if (msg)
			snprintf(msg, len, "%s: %s", c->name, r);
		e = -EINVAL;
	}
	return e;
}

/**
 * gn_codec_resolve() - a tensor's codec and parameters
 * @job: the job's default codec and the parameters it set
 * @t: what the tensor's registration set; codec 0 is the job's
 * @out: the codec with every parameter (given says all)
 * @msg: out, why not
 * @len: bytes at @msg
 *
 * A parameter the tensor leaves unset takes the job's value when the
 * tensor runs the job's codec, else the codec's default.
 *
 * Return: 0, or -EINVAL for an unknown codec, a nonzero word whose given
 * bit is clear or a given bit past the block.
 */
int gn_codec_resolve(const struct gn_codec_spec *job,
		     const struct gn_codec_spec *t, struct gn_codec_spec *out,
		     char *msg, size_t len)
{
	u32 id = t->codec ? t->codec : job->codec, i;
	const struct gn_codec_ops *c = gn_codec_find(id);
	struct gn_codec_spec r = { .codec = id,
				   .given = (1u << GN_PARAM_WORDS_ALL) - 1 };

	if (!c) {
		snprintf(msg, len, "codec %u is unknown", id);
		return -EINVAL;
	}
	/* Only given words carry a value: anything else is a caller's slip. */
	for (i = 0; i < GN_PARAM_WORDS_ALL; i++)
		if ((!(t->given & 1u << i) && gn_param_get(&t->p, i)) ||
		    (!(job->given & 1u << i) && gn_param_get(&job->p, i)))
			break;
	if (i < GN_PARAM_WORDS_ALL || (t->given | job->given) >> GN_PARAM_WORDS_ALL) {
		snprintf(msg, len, "%s: a parameter word is set but not marked given, or a given bit is past the %u words",
			 c->name, GN_PARAM_WORDS_ALL);
		return -EINVAL;
	}
	gn_codec_defaults(c, &r.p);
	for (i = 0; i < GN_PARAM_WORDS_ALL; i++) {
		if (id == job->codec && job->given & 1u << i)
			*gn_param_word(&r.p, i) = gn_param_get(&job->p, i);
		if (t->given & 1u << i)
			*gn_param_word(&r.p, i) = gn_param_get(&t->p, i);
	}
	*out = r;
	return 0;
}

/**
 * gn_codec_params_diff() - name the first parameter two blocks disagree on
 * @c: the compressor both run
 * @theirs: a peer's block
 * @ours: this rank's
 * @msg: out, "density=0.01 there, density=0.02 here"
 * @len: bytes at @msg
 *
 * Return: true if they differ.
 */
bool gn_codec_params_diff(const struct gn_codec_ops *c,
			  const struct gn_codec_params *theirs,
			  const struct gn_codec_params *ours, char *msg,
			  size_t len)
{
	const struct gn_codec_param *d;
	char a[24], b[24];
	u32 i;

	for (i = 0; (d = gn_codec_param_at(c, i)); i++) {
		u32 x = gn_param_get(theirs, d->word), y = gn_param_get(ours, d->word);

		if (x == y)
			continue;
		gn_codec_param_text(d, x, a, sizeof(a));
		gn_codec_param_text(d, y, b, sizeof(b));
		snprintf(msg, len, "%s=%s there, %s=%s here", d->name, a,
			 d->name, b);
		return true;
	}
	for (i = 0; i < GN_PARAM_WORDS_ALL; i++) {
		if (gn_param_get(theirs, i) == gn_param_get(ours, i))
			continue;
		snprintf(msg, len, "parameter word %u %#x there, %#x here", i,
			 gn_param_get(theirs, i), gn_param_get(ours, i));
		return true;
	}
	return false;
}
