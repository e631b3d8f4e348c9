// SPDX-License-Identifier: MIT
/*
 * ops_fp.c - top-k's received slices in float: a contribution's entries
 * added into the owner's sum, a result's set over its positions (0 where
 * it has no entry), float32 or QSGD values, sparse or dense.
 */
#include "topk.h"
#include "codec/index/varint.h"

static float f_at(const u8 *p)
{
	u32 b = gn_get_le32(p);
	float f;

	memcpy(&f, &b, sizeof(f));
	return f;
}

/* out[i] for every value of a checked slice; @set: = (averaged), else +=. */
static void apply(const struct gn_codec_call *c, float *out, u32 len,
		  u32 first, u32 count, u32 aux, const u8 *body, u32 blen,
		  bool set)
{
	struct gn_topk t;
	u32 e0, at, n, j, k, pos, d = 0, nb = 0, b0 = 0;
	float w = set && c->average ? (float)c->world : 1.0f;

	gn_topk_params(c->p, &t);
	if (aux == GN_TOPK_DENSE) {
		for (j = 0; j < count; j++) {
			float v;

			if (!t.qsgd) {
				v = f_at(body + 4 * j);
			} else {
				u32 bj = j / t.q.bucket, m = j % t.q.bucket;
				u32 sz = 4 + gn_qsgd_code_bytes(&t.q, t.q.bucket);

				v = gn_qsgd_value(&t.q, f_at(body + bj * sz),
						  gn_qsgd_code_at(&t.q,
								  body + bj * sz + 4,
								  m));
			}
			out[first + j] = set ? v / w : out[first + j] + v;
		}
		return;
	}
	n = (u32)gn_topk_parse_sparse(&t, len, first, count, body, blen, &e0,
				      &at);
	if (set)
		memset(out + first, 0, (size_t)count * sizeof(float));
	if (t.qsgd && n) {
		b0 = e0 / t.q.bucket;
		nb = (e0 + n - 1) / t.q.bucket - b0 + 1;
	}
	/* The index varints again, after the count (and e0): all checked. */
	k = gn_varint_get(body, blen, &d);
	if (t.qsgd)
		k += gn_varint_get(body + k, blen - k, &d);
	for (j = 0, pos = first; j < n; j++, pos++) {
		float v;

		k += gn_varint_get(body + k, blen - k, &d);
		pos += d;
		if (!t.qsgd)
			v = f_at(body + at + 4 * j);
		else
			v = gn_qsgd_value(&t.q,
					  f_at(body + at +
					       4 * ((e0 + j) / t.q.bucket - b0)),
					  gn_qsgd_code_at(&t.q, body + at + 4 * nb,
							  j));
		out[pos] = set ? v / w : out[pos] + v;
	}
}

void gn_topk_op_add(const struct gn_codec_call *c, float *acc, u32 len,
		    u32 first, u32 count, u32 aux, const u8 *body, u32 blen)
{
	apply(c, acc, len, first, count, aux, body, blen, false);
}

void gn_topk_op_decode(const struct gn_codec_call *c, float *out, u32 len,
		       u32 first, u32 count, u32 aux, const u8 *body, u32 blen)
{
	apply(c, out, len, first, count, aux, body, blen, true);
}
