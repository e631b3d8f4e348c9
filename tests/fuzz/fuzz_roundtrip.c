// SPDX-License-Identifier: MIT
/*
 * fuzz_roundtrip.c - libFuzzer target for the encoders: gn_tlc_encode,
 * gn_tlc_quantize, gn_tlc_quantize_chunks and gn_zre_encode on values (or
 * group bytes) taken from the input (layout in fuzz_input.h), for every
 * instruction set the CPU has, all compared bit for bit with the
 * specification model. It checks that decode(encode(x)) is exactly q*M,
 * that e is untouched on any error, that chunked quantization stops at the
 * first bad chunk without writing it, and that a chunk cut into slices to a
 * byte budget decodes, slice by slice, to the same acc as the whole stream.
 * Every buffer the codec reads or writes is an exact-size heap allocation.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gradnet/codec.h>
#include "fuzz_check.h"
#include "fuzz_input.h"
#include "tlc_model.h"

/* Bits no codec result has in these tests: a NaN with a payload. */
#define SENTINEL_BITS 0x7fa5a5a5u
#define SENTINEL_BYTE 0xee

struct fz_input {
	const float *x;
	const float *e;
	size_t n;
	float s;
	size_t chunk;		/* 0 is invalid */
	size_t budget;		/* bytes per slice */
	float scale;		/* of the int8 modes; M of the group mode */
};

static void fill_sentinel(float *f, size_t n)
{
	uint32_t b = SENTINEL_BITS;
	size_t i;

	for (i = 0; i < n; i++)
		memcpy(&f[i], &b, 4);
}

static bool is_sentinel(const float *f, size_t n)
{
	uint32_t b = SENTINEL_BITS;
	size_t i;

	for (i = 0; i < n; i++)
		if (memcmp(&f[i], &b, 4))
			return false;
	return true;
}

static bool bytes_are(const uint8_t *p, size_t n, uint8_t v)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

static bool same_floats(const float *a, const float *b, size_t n)
{
	return !n || !memcmp(a, b, n * sizeof(float));
}

/*
 * Cut @count groups into slices of at most @budget bytes as a sender does.
 * Each slice must match the model byte for byte, pass gn_zre_check() and
 * decode; together they must give the acc the whole chunk gives.
 */
static void check_slices(const uint8_t *q, size_t count, size_t n, float m,
			 size_t budget)
{
	size_t bytes = n * sizeof(float), len, used, at;
	uint8_t *all = gn_fz_alloc(count, 0);
	float *whole = gn_fz_alloc(bytes, 0), *acc = gn_fz_alloc(bytes, 0);
	int isa, ret;

	len = model_zre(q, count, count, all, &used);
	GN_FZ_CHECK(used == count, "model consumed %zu of %zu", used, count);
	ret = model_decode_slice(all, len, m, whole, n, 0, count);
	GN_FZ_CHECK(!ret, "the model rejects its own encoding");
	gn_fz_for_each_isa(isa) {
		const char *name = gn_fz_isa_name(isa);
		uint8_t *none = gn_fz_alloc(0, 0);
		long l;

		used = SIZE_MAX;
		l = GN_FZ_CALL(gn_zre_encode_isa(isa, q, count, none, 0, &used));
		GN_FZ_CHECK(l == 0 && used == 0,
			    "%s: budget 0 gave %ld bytes, %zu groups", name, l,
			    used);
		free(none);
		if (bytes)
			memset(acc, 0, bytes);
		for (at = 0; at < count; at += used) {
			uint8_t *dst = gn_fz_alloc(budget, 0);
			uint8_t *want = gn_fz_alloc(budget, 0);
			size_t want_used, want_len;

			want_len = model_zre(q + at, count - at, budget, want,
					     &want_used);
			l = GN_FZ_CALL(gn_zre_encode_isa(isa, q + at, count - at,
							 dst, budget, &used));
			GN_FZ_CHECK(l == (long)want_len && used == want_used,
				    "%s: slice at group %zu, budget %zu: %ld bytes "
				    "for %zu groups, the model %zu for %zu",
				    name, at, budget, l, used, want_len, want_used);
			GN_FZ_CHECK(!memcmp(dst, want, want_len),
				    "%s: slice at group %zu differs", name, at);
			GN_FZ_CHECK(used > 0, "%s: budget %zu, no progress", name,
				    budget);
			ret = GN_FZ_CALL(gn_zre_check(dst, want_len, n, at, used));
			GN_FZ_CHECK(!ret, "gn_zre_check rejects a slice at %zu", at);
			ret = GN_FZ_CALL(gn_tlc_decode_slice_isa(isa, dst, want_len,
								 m, acc, n, at,
								 used));
			GN_FZ_CHECK(!ret, "%s: slice at %zu rejected: %d", name, at,
				    ret);
			free(dst);
			free(want);
		}
		at = gn_fz_first_diff(acc, whole, n);
		GN_FZ_CHECK(at == n, "%s: slices give acc[%zu] 0x%08x, whole 0x%08x",
			    name, at, gn_bits(acc[at]), gn_bits(whole[at]));
	}
	free(all);
	free(whole);
	free(acc);
}

/* One chunk: gn_tlc_encode, gn_tlc_quantize and decode(encode). */
static void check_encode(const struct fz_input *in)
{
	size_t n = in->n, g = gn_tlc_groups(n), bound = gn_tlc_encode_bound(n);
	size_t bytes = n * sizeof(float), used, i, at;
	int8_t *q = gn_fz_alloc(n, 0);
	float *e_want = gn_fz_alloc(bytes, 0);
	uint8_t *quartic = gn_fz_alloc(g, 0);
	uint8_t *stream = gn_fz_alloc(bound, 0);
	long want_len = 0;
	float m = 0.0f;
	int want, isa;

	want = model_quantize(in->x, in->e, e_want, n, in->s, q, &m);
	if (!want) {
		model_quartic(q, n, quartic);
		gn_fz_put_le(stream, gn_bits(m), 4);
		want_len = 4 + (long)model_zre(quartic, g, g, stream + 4, &used);
	}
	gn_fz_for_each_isa(isa) {
		const char *name = gn_fz_isa_name(isa);
		float *e = gn_fz_dup(in->e, bytes), *acc, qm;
		uint8_t *dst = gn_fz_alloc(bound, 0), *qc;
		float mc = gn_float(SENTINEL_BITS);
		long len;
		int ret;

		len = GN_FZ_CALL(gn_tlc_encode_isa(isa, in->x, e, n, in->s, dst,
						   bound));
		if (want) {
			GN_FZ_CHECK(len == want, "%s: encode returned %ld, the "
				    "specification says %d", name, len, want);
			GN_FZ_CHECK(same_floats(e, in->e, n),
				    "%s: encode failed but changed e", name);
		} else {
			GN_FZ_CHECK(len == want_len, "%s: %ld stream bytes, the "
				    "specification says %ld", name, len,
				    want_len);
			GN_FZ_CHECK(!memcmp(dst, stream, (size_t)len),
				    "%s: stream differs from the specification",
				    name);
			at = gn_fz_first_diff(e, e_want, n);
			GN_FZ_CHECK(at == n, "%s: e[%zu] 0x%08x, the specification "
				    "says 0x%08x", name, at, gn_bits(e[at]),
				    gn_bits(e_want[at]));
		}
		free(e);

		/* Too small a buffer: an error and e untouched. */
		e = gn_fz_dup(in->e, bytes);
		qc = gn_fz_alloc(bound - 1, SENTINEL_BYTE);
		ret = (int)GN_FZ_CALL(gn_tlc_encode_isa(isa, in->x, e, n, in->s,
							qc, bound - 1));
		GN_FZ_CHECK(want ? ret < 0 : ret == -ENOSPC,
			    "%s: cap below the bound gave %d", name, ret);
		GN_FZ_CHECK(same_floats(e, in->e, n),
			    "%s: -ENOSPC but e changed", name);
		free(qc);
		free(e);

		e = gn_fz_dup(in->e, bytes);
		qc = gn_fz_alloc(g, SENTINEL_BYTE);
		ret = GN_FZ_CALL(gn_tlc_quantize_isa(isa, in->x, e, n, in->s, qc,
						     &mc));
		GN_FZ_CHECK(ret == want, "%s: quantize returned %d, the "
			    "specification says %d", name, ret, want);
		if (want) {
			GN_FZ_CHECK(same_floats(e, in->e, n) &&
				    bytes_are(qc, g, SENTINEL_BYTE),
				    "%s: quantize failed but wrote e or groups",
				    name);
			GN_FZ_CHECK(is_sentinel(&mc, 1),
				    "%s: quantize returned %d but wrote M 0x%08x",
				    name, want, gn_bits(mc));
		} else {
			GN_FZ_CHECK(gn_bits(mc) == gn_bits(m) &&
				    !memcmp(qc, quartic, g) &&
				    same_floats(e, e_want, n),
				    "%s: quantize differs from the specification",
				    name);
		}
		free(qc);
		free(e);
		if (want)
			goto next;

		/* decode(encode(x)) is q*M: M, -M or +0 for each element. */
		acc = gn_fz_alloc(bytes, 0);
		ret = GN_FZ_CALL(gn_tlc_decode_isa(isa, dst, (size_t)len, acc, n));
		GN_FZ_CHECK(!ret, "%s: its own stream rejected: %d", name, ret);
		for (i = 0; i < n; i++) {
			qm = q[i] > 0 ? m : (q[i] < 0 ? -m : 0.0f);
			GN_FZ_CHECK(gn_bits(acc[i]) == gn_bits(qm),
				    "%s: decode(encode(x))[%zu] is 0x%08x, q*M 0x%08x",
				    name, i, gn_bits(acc[i]), gn_bits(qm));
		}
		free(acc);
next:
		free(dst);
	}
	if (!want)
		check_slices(quartic, g, n, m, in->budget);
	free(q);
	free(e_want);
	free(quartic);
	free(stream);
}

/* What gn_tlc_quantize_chunks() must give, chunk by chunk. */
struct chunks_model {
	size_t chunk, nc, stride;
	float *e;		/* e_out of the chunks before the bad one */
	float *m;
	uint8_t *q;
	size_t done;		/* chunks quantized before a bad one */
	int ret;
};

static void model_chunks(const struct fz_input *in, size_t chunk,
			 struct chunks_model *cm)
{
	size_t n = in->n, c;
	int8_t *trits = gn_fz_alloc(chunk < n ? chunk : n, 0);

	cm->chunk = chunk;
	cm->nc = gn_tlc_chunk_count(n, chunk);
	cm->stride = gn_tlc_groups(chunk);
	cm->e = gn_fz_alloc(n * sizeof(float), 0);
	cm->m = gn_fz_alloc(cm->nc * sizeof(float), 0);
	cm->q = gn_fz_alloc(gn_tlc_chunks_groups(n, chunk), 0);
	cm->done = 0;
	/* The header promises -EINVAL for a bad s, even with no values. */
	cm->ret = in->s >= 1.0f && in->s < 2.0f ? 0 : -EINVAL;
	for (c = 0; c < cm->nc && !cm->ret; c++) {
		size_t off = c * chunk, len = n - off < chunk ? n - off : chunk;

		cm->ret = model_quantize(in->x + off, in->e + off, cm->e + off,
					 len, in->s, trits, &cm->m[c]);
		if (cm->ret)
			break;
		model_quartic(trits, len, cm->q + c * cm->stride);
		cm->done++;
	}
	free(trits);
}

/*
 * One call, out of place (with non-temporal stores if @flags says so) or
 * in place: chunks before a bad one equal the model's, the bad one and
 * those after it are not written, and the input e of an out-of-place call
 * is never written.
 */
static void check_chunks_call(const struct fz_input *in,
			      const struct chunks_model *cm, int isa,
			      bool in_place, unsigned int flags)
{
	const char *name = gn_fz_isa_name(isa);
	const char *how = in_place ? " in place" : flags ? " streamed" : "";
	size_t n = in->n, bytes = n * sizeof(float), c, at;
	float *e_in = gn_fz_dup(in->e, bytes);
	float *e_out = in_place ? e_in : gn_fz_alloc(bytes, 0);
	float *m = gn_fz_alloc(cm->nc * sizeof(float), 0);
	uint8_t *q = gn_fz_alloc(gn_tlc_chunks_groups(n, cm->chunk),
				 SENTINEL_BYTE);
	int ret;

	if (!in_place)
		fill_sentinel(e_out, n);
	fill_sentinel(m, cm->nc);
	ret = GN_FZ_CALL(gn_tlc_quantize_chunks_ex(isa, in->x, e_in, e_out, n,
						   cm->chunk, in->s, flags, q, m));
	GN_FZ_CHECK(ret == cm->ret,
		    "%s%s: chunks returned %d, the specification says %d (n %zu)",
		    name, how, ret, cm->ret, n);
	if (!in_place)
		GN_FZ_CHECK(same_floats(e_in, in->e, n), "%s: e_in written",
			    name);
	for (c = 0; c < cm->nc; c++) {
		size_t off = c * cm->chunk;
		size_t len = n - off < cm->chunk ? n - off : cm->chunk;
		size_t g = gn_tlc_groups(len);
		const uint8_t *qc = q + c * cm->stride;

		if (c < cm->done) {
			at = gn_fz_first_diff(e_out + off, cm->e + off, len);
			GN_FZ_CHECK(at == len &&
				    !memcmp(qc, cm->q + c * cm->stride, g) &&
				    !memcmp(&m[c], &cm->m[c], 4),
				    "%s%s: chunk %zu differs from the "
				    "specification (e[%zu])", name, how, c,
				    off + at);
			continue;
		}
		GN_FZ_CHECK(in_place ? same_floats(e_out + off, in->e + off, len) :
				       is_sentinel(e_out + off, len),
			    "%s%s: e of chunk %zu written after the error in "
			    "chunk %zu", name, how, c, cm->done);
		GN_FZ_CHECK(bytes_are(qc, g, SENTINEL_BYTE),
			    "%s%s: groups of chunk %zu written after the error "
			    "in chunk %zu", name, how, c, cm->done);
		GN_FZ_CHECK(is_sentinel(&m[c], 1),
			    "%s%s: M of chunk %zu written after the error in "
			    "chunk %zu", name, how, c, cm->done);
	}
	if (!in_place)
		free(e_out);
	free(e_in);
	free(m);
	free(q);
}

/*
 * gn_tlc_quantize_chunks: chunk 0 refused, then out of place, streamed and
 * in place.
 */
static void check_chunks(const struct fz_input *in)
{
	size_t n = in->n, chunk = in->chunk;
	struct chunks_model cm;
	int isa, ret;

	if (!chunk) {
		gn_fz_for_each_isa(isa) {
			float *e_out = gn_fz_alloc(n * sizeof(float), 0), m;
			uint8_t *q = gn_fz_alloc(n, 0);

			ret = GN_FZ_CALL(gn_tlc_quantize_chunks_isa(
				isa, in->x, in->e, e_out, n, 0, in->s, q, &m));
			GN_FZ_CHECK(ret == -EINVAL, "%s: chunk 0 gave %d",
				    gn_fz_isa_name(isa), ret);
			free(e_out);
			free(q);
		}
		chunk = n ? n : 1;
	}
	model_chunks(in, chunk, &cm);
	gn_fz_for_each_isa(isa) {
		check_chunks_call(in, &cm, isa, false, 0);
		check_chunks_call(in, &cm, isa, false, GN_TLC_NT);
		check_chunks_call(in, &cm, isa, true, 0);
	}
	free(cm.e);
	free(cm.m);
	free(cm.q);
}

/* Group bytes as they come: -EINVAL for any above 242, else the model. */
static void check_groups(const uint8_t *q, size_t count, size_t budget,
			 float m)
{
	bool bad = false;
	size_t j;
	int isa;

	for (j = 0; j < count; j++)
		bad |= q[j] > 242;
	gn_fz_for_each_isa(isa) {
		uint8_t *dst = gn_fz_alloc(budget, SENTINEL_BYTE);
		size_t used = SIZE_MAX;
		long l;

		l = GN_FZ_CALL(gn_zre_encode_isa(isa, q, count, dst, budget,
						 &used));
		if (bad)
			GN_FZ_CHECK(l == -EINVAL && bytes_are(dst, budget,
							      SENTINEL_BYTE),
				    "%s: a group above 242 gave %ld",
				    gn_fz_isa_name(isa), l);
		free(dst);
	}
	/* Five values per group: no padding, every group byte is valid. */
	if (!bad)
		check_slices(q, count, count * GN_TLC_GROUP, m, budget);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_input in = { 0 };
	const uint8_t *d = data + GN_FZR_HDR;
	size_t dl, nf, i;
	unsigned int flags, mode;
	float *x = NULL, *e = NULL;
	uint8_t *groups;
	int exp;

	if (size < GN_FZR_HDR)
		return -1;
	dl = size - GN_FZR_HDR;
	flags = data[GN_FZR_FLAGS];
	mode = flags & GN_FZR_MODE_MASK;
	if (flags & GN_FZR_RAW_S)
		in.s = gn_float(gn_fz_le(data + GN_FZR_S, 4));
	else
		in.s = 1.0f + (float)gn_fz_le(data + GN_FZR_S, 2) / 65536.0f;
	in.chunk = gn_fz_le(data + GN_FZR_CHUNK, 2);
	in.budget = gn_fz_le(data + GN_FZR_BUDGET, 2);
	if (!in.budget)
		in.budget = 1;
	nf = gn_fz_le(data + GN_FZR_N, 2) & GN_FZR_N_MAX;
	if (!nf)
		nf = dl < GN_FZR_N_MAX ? dl : GN_FZR_N_MAX;
	exp = (int)data[GN_FZR_EXP];
	in.scale = ldexpf(1.0f, exp - 150);
	gn_fz_caller_csr = GN_FZ_CSR_DEFAULT;
	if (flags & GN_FZR_FTZ)
		gn_fz_caller_csr |= GN_FZ_CSR_FTZ_DAZ;

	if (mode == GN_FZR_GROUPS) {
		groups = gn_fz_alloc(dl ? nf : 0, 0);
		for (i = 0; dl && i < nf; i++)
			groups[i] = d[i % dl];
		check_groups(groups, dl ? nf : 0, in.budget, in.scale);
		free(groups);
		return 0;
	}
	in.n = mode == GN_FZR_FLOATS ? dl / 8 : (dl ? nf : 0);
	x = gn_fz_alloc(in.n * sizeof(float), 0);
	e = gn_fz_alloc(in.n * sizeof(float), 0);
	for (i = 0; i < in.n; i++) {
		if (mode == GN_FZR_FLOATS) {
			x[i] = gn_float(gn_fz_le(d + 8 * i, 4));
			e[i] = gn_float(gn_fz_le(d + 8 * i + 4, 4));
			continue;
		}
		x[i] = (float)(int8_t)d[i % dl] * in.scale;
		if (mode == GN_FZR_INT8_EF)
			e[i] = (float)(int8_t)d[(7 * i + 3) % dl] *
			       ldexpf(1.0f, exp - 156);
	}
	in.x = x;
	in.e = e;
	check_encode(&in);
	check_chunks(&in);
	free(x);
	free(e);
	return 0;
}
