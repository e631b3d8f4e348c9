// SPDX-License-Identifier: MIT
/*
 * registry.c - the one table of compressors, by id, and what every path
 * does with a tensor's parameter block: defaults, checks, resolution
 * against the job's, and text for messages. Integer-only, so the kernel
 * module checks a block the same way libgradnet does.
 */
#include "codec.h"

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

const struct gn_codec_param *gn_codec_param_find(const struct gn_codec_ops *c,
						 const char *name, size_t len)
{
	u32 i;

	for (i = 0; i < c->nparams; i++)
		if (name_is(c->params[i].name, name, len))
			return &c->params[i];
	return NULL;
}

void gn_codec_defaults(const struct gn_codec_ops *c, struct gn_codec_params *p)
{
	u32 i;

	memset(p, 0, sizeof(*p));
	for (i = 0; i < c->nparams; i++)
		p->w[c->params[i].word] = c->params[i].def;
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

/* "name:p=v,p=v": every parameter of the codec, for messages and tools. */
size_t gn_codec_spec_text(const struct gn_codec_ops *c,
			  const struct gn_codec_params *p, char *buf,
			  size_t len)
{
	size_t at = (size_t)snprintf(buf, len, "%s", c->name);
	u32 i;

	for (i = 0; i < c->nparams && at < len; i++) {
		at += (size_t)snprintf(buf + at, len - at, "%c%s=", i ? ',' : ':',
				       c->params[i].name);
		if (at < len)
			at += gn_codec_param_text(&c->params[i],
						  p->w[c->params[i].word],
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
 * Every named word in its range, every other word 0, and the codec's own
 * check.
 *
 * Return: 0 or -EINVAL.
 */
int gn_codec_params_check(const struct gn_codec_ops *c,
			  const struct gn_codec_params *p, u32 chunk,
			  u32 body_cap, char *msg, size_t len)
{
	char v[24], r[96];
	u32 named = 0, i;

	for (i = 0; i < c->nparams; i++) {
		const struct gn_codec_param *d = &c->params[i];

		named |= 1u << d->word;
		if (value_ok(d, p->w[d->word]))
			continue;
		gn_codec_param_text(d, p->w[d->word], v, sizeof(v));
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
	return c->check ? c->check(p, chunk, body_cap, msg, len) : 0;
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
				   .given = (1u << GN_CODEC_PARAM_WORDS) - 1 };

	if (!c) {
		snprintf(msg, len, "codec %u is unknown", id);
		return -EINVAL;
	}
	/* Only given words carry a value: anything else is a caller's slip. */
	for (i = 0; i < GN_CODEC_PARAM_WORDS; i++)
		if ((!(t->given & 1u << i) && t->p.w[i]) ||
		    (!(job->given & 1u << i) && job->p.w[i]))
			break;
	if (i < GN_CODEC_PARAM_WORDS || (t->given | job->given) >> GN_CODEC_PARAM_WORDS) {
		snprintf(msg, len, "%s: a parameter word is set but not marked given, or a given bit is past the %u words",
			 c->name, GN_CODEC_PARAM_WORDS);
		return -EINVAL;
	}
	gn_codec_defaults(c, &r.p);
	for (i = 0; i < GN_CODEC_PARAM_WORDS; i++) {
		if (id == job->codec && job->given & 1u << i)
			r.p.w[i] = job->p.w[i];
		if (t->given & 1u << i)
			r.p.w[i] = t->p.w[i];
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
	char a[24], b[24];
	u32 i;

	for (i = 0; i < c->nparams; i++) {
		const struct gn_codec_param *d = &c->params[i];

		if (theirs->w[d->word] == ours->w[d->word])
			continue;
		gn_codec_param_text(d, theirs->w[d->word], a, sizeof(a));
		gn_codec_param_text(d, ours->w[d->word], b, sizeof(b));
		snprintf(msg, len, "%s=%s there, %s=%s here", d->name, a,
			 d->name, b);
		return true;
	}
	for (i = 0; i < GN_CODEC_PARAM_WORDS; i++) {
		if (theirs->w[i] == ours->w[i])
			continue;
		snprintf(msg, len, "parameter word %u %#x there, %#x here", i,
			 theirs->w[i], ours->w[i]);
		return true;
	}
	return false;
}
