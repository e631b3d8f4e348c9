// SPDX-License-Identifier: MIT
/*
 * spec.c - codecs by name and their parameters as text: GN_CODEC's
 * "name:key=value,...", the params strings of the options structs, and
 * what the Python binding and the tools pass. The names, types and ranges
 * come from the registry (lib/codec/registry.c); this file only reads
 * text, which the freestanding core cannot (no strtof in the kernel).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gradnet/gradnet.h>

#include "spec.h"

int gn_codec_id(const char *name)
{
	const struct gn_codec_ops *c;

	if (!name)
		return -EINVAL;
	c = gn_codec_by_name(name, strlen(name));
	return c ? c->id : -EINVAL;
}

const char *gn_codec_name(int id)
{
	const struct gn_codec_ops *c = id > 0 ? gn_codec_find((u32)id) : NULL;

	return c ? c->name : NULL;
}

/* "none, 3lc, ...": every registered name, for messages. */
static void codec_names(char *buf, size_t len)
{
	const struct gn_codec_ops *c;
	size_t at = 0;
	u32 i;

	buf[0] = 0;
	for (i = 0; (c = gn_codec_at(i)) && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? ", " : "",
				       c->name);
}

/* Its own parameters, then the entropy stage's, which every codec has. */
static void param_names(const struct gn_codec_ops *c, char *buf, size_t len)
{
	const struct gn_codec_param *d;
	size_t at = 0;
	u32 i;

	buf[0] = 0;
	for (i = 0; (d = gn_codec_param_at(c, i)) && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? ", " : "",
				       d->name);
}

/* One value of parameter @d from @v (@n characters) into *@out. */
static int param_value(const struct gn_codec_param *d, const char *v,
		       size_t n, u32 *out)
{
	char text[64], *end;
	u32 i;

	if (!n || n >= sizeof(text))
		return -EINVAL;
	memcpy(text, v, n);
	text[n] = 0;
	if (d->type == GN_PARAM_ENUM)
		for (i = 0; i <= d->hi; i++)
			if (!strcmp(text, d->choices[i])) {
				*out = i;
				return 0;
			}
	errno = 0;
	if (d->type == GN_PARAM_F32) {
		/* Underflow to a subnormal is a value; the range check judges. */
		float f = strtof(text, &end);

		if (end == text || *end || !isfinite(f))
			return -EINVAL;
		memcpy(out, &f, sizeof(*out));
		return 0;
	}
	{
		unsigned long long u = strtoull(text, &end, 0);

		if (errno || *end || text[0] == '-' || u > 0xffffffffull)
			return -EINVAL;
		*out = (u32)u;
	}
	return 0;
}

/**
 * gn_spec_params() - parameters of codec @c from "key=value,key=value"
 * @c: the codec
 * @text: the list, may be empty
 * @len: its length
 * @spec: out: the values set and their given bits (added to what it has)
 * @msg: out, why not
 * @mlen: bytes at @msg
 *
 * Syntax and names only: the ranges are the registry's to check with the
 * job's chunk and MTU, when the tensor registers.
 *
 * Return: 0 or -EINVAL.
 */
int gn_spec_params(const struct gn_codec_ops *c, const char *text, size_t len,
		   struct gn_codec_spec *spec, char *msg, size_t mlen)
{
	const char *p = text, *end = text + len;
	char names[192];

	while (p < end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *item_end = comma ? comma : end;
		const char *eq = memchr(p, '=', (size_t)(item_end - p));
		const struct gn_codec_param *d;
		u32 v;

		if (!eq) {
			snprintf(msg, mlen, "%s: \"%.*s\" is not key=value",
				 c->name, (int)(item_end - p), p);
			return -EINVAL;
		}
		d = gn_codec_param_find(c, p, (size_t)(eq - p));
		if (!d) {
			param_names(c, names, sizeof(names));
			snprintf(msg, mlen, "%s has no parameter \"%.*s\" (it has: %s)",
				 c->name, (int)(eq - p), p, names);
			return -EINVAL;
		}
		if (spec->given & 1u << d->word) {
			snprintf(msg, mlen, "%s: %s is given twice", c->name,
				 d->name);
			return -EINVAL;
		}
		if (param_value(d, eq + 1, (size_t)(item_end - eq - 1), &v)) {
			snprintf(msg, mlen, "%s: %s=%.*s is not %s", c->name,
				 d->name, (int)(item_end - eq - 1), eq + 1,
				 d->type == GN_PARAM_F32 ? "a finite number" :
				 d->type == GN_PARAM_U32 ? "a whole number" :
							   "one of its choices");
			return -EINVAL;
		}
		*gn_param_word(&spec->p, d->word) = v;
		spec->given |= 1u << d->word;
		p = item_end + (comma != NULL);
		if (comma && p == end) {
			snprintf(msg, mlen, "%s: the parameter list ends in a comma",
				 c->name);
			return -EINVAL;
		}
	}
	return 0;
}

/**
 * gn_spec_parse() - a codec and its parameters from "name[:key=value,...]"
 * @text: the spec
 * @spec: out
 * @msg: out, why not
 * @mlen: bytes at @msg
 *
 * Return: 0 or -EINVAL.
 */
int gn_spec_parse(const char *text, struct gn_codec_spec *spec, char *msg,
		  size_t mlen)
{
	const char *colon = strchr(text, ':');
	size_t n = colon ? (size_t)(colon - text) : strlen(text);
	const struct gn_codec_ops *c = gn_codec_by_name(text, n);
	char names[128];

	memset(spec, 0, sizeof(*spec));
	if (!c) {
		codec_names(names, sizeof(names));
		snprintf(msg, mlen, "codec \"%.*s\" is unknown (known: %s)",
			 (int)n, text, names);
		return -EINVAL;
	}
	spec->codec = c->id;
	return colon ? gn_spec_params(c, colon + 1, strlen(colon + 1), spec,
				      msg, mlen) : 0;
}

/**
 * gn_spec_for() - a tensor's codec spec from its options' fields
 * @job_codec: the job's codec, which GN_CODEC_DEFAULT stands for
 * @codec: enum gn_codec
 * @s: 3LC's s (0: not given), the options' own field for it
 * @params: "key=value,..." or NULL
 * @spec: out
 * @msg: out, why not
 * @mlen: bytes at @msg
 *
 * Return: 0 or -EINVAL.
 */
int gn_spec_for(u32 job_codec, int codec, float s, const char *params,
		struct gn_codec_spec *spec, char *msg, size_t mlen)
{
	const struct gn_codec_ops *c;
	const struct gn_codec_param *d;
	char names[128];
	int r;

	memset(spec, 0, sizeof(*spec));
	spec->codec = codec == GN_CODEC_DEFAULT ? job_codec : (u32)codec;
	c = codec < 0 ? NULL : gn_codec_find(spec->codec);
	if (!c) {
		codec_names(names, sizeof(names));
		snprintf(msg, mlen, "codec %d is unknown (known: %s; gn_codec_id() maps names)",
			 codec, names);
		return -EINVAL;
	}
	if (params) {
		r = gn_spec_params(c, params, strlen(params), spec, msg, mlen);
		if (r)
			return r;
	}
	if (s == 0.0f)
		return 0;
	d = gn_codec_param_find(c, "s", 1);
	if (!d) {
		snprintf(msg, mlen, "s is a parameter of 3lc; codec %s has none",
			 c->name);
		return -EINVAL;
	}
	if (spec->given & 1u << d->word) {
		snprintf(msg, mlen, "%s: s is given twice (field and params)",
			 c->name);
		return -EINVAL;
	}
	memcpy(&spec->p.w[d->word], &s, sizeof(u32));
	spec->given |= 1u << d->word;
	return 0;
}
