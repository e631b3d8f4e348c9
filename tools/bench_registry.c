// SPDX-License-Identifier: MIT
/*
 * bench_registry.c - `gradnet-bench codec`'s rows for the registry's
 * codecs: each one encoded and decoded through its ops table
 * (gn_codec_stream_encode/decode, one chunk stream per chunk, what
 * gradnet-codec writes) on the tiled gradients the 3LC rows use, so every
 * compressor is measured the same way in the same run. A row whose spec
 * has the entropy stage (entropy=zstd) also cuts every chunk into packets
 * through the stage at the set's MTU, as lib/collective/pack.c does, and
 * decodes and adds those packets: its speeds include zstd both ways, its
 * ratio is input bytes over packet bodies.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "codec/codec.h"
#include "codec/entropy/entropy.h"
#include "spec.h"
#include <gradnet/wire.h>

/*
 * Labels that stand for the settings of the compressor benchmarks, the
 * same as bench-allreduce.sh's: a label not here is a spec of its own.
 */
static const struct {
	const char *label, *spec;
} builtin[] = {
	{ "topk", "topk:density=0.01" },
	{ "topk-qsgd", "topk:density=0.01,bits=4" },
	{ "qsgd", "qsgd:bits=4" },
};
#define NBUILTIN (sizeof(builtin) / sizeof(builtin[0]))

static const char *builtin_spec(const char *label)
{
	size_t i;

	for (i = 0; i < NBUILTIN; i++)
		if (!strcmp(builtin[i].label, label))
			return builtin[i].spec;
	return label;
}

/* One item, LABEL=SPEC or SPEC, checked as a stream of @chunk values. */
static void add_item(struct bench_codecs *set, const char *item, size_t chunk)
{
	const char *colon = strchr(item, ':'), *eq = strchr(item, '=');
	struct bench_codec_row *row;
	struct gn_codec_spec spec;
	char msg[256];
	size_t k;

	if (set->n == BENCH_MAX_CODECS)
		bench_die("--codec: more than %d codecs", BENCH_MAX_CODECS);
	row = &set->row[set->n];
	memset(row, 0, sizeof(*row));
	if (eq && (!colon || eq < colon)) {
		snprintf(row->label, sizeof(row->label), "%.*s",
			 (int)(eq - item), item);
		snprintf(row->spec, sizeof(row->spec), "%s", eq + 1);
	} else {
		snprintf(row->label, sizeof(row->label), "%s", item);
		snprintf(row->spec, sizeof(row->spec), "%s",
			 builtin_spec(item));
	}
	if (!row->label[0] || !row->spec[0])
		bench_die("--codec %s: an empty label or spec", item);
	for (k = 0; k < set->n; k++)
		if (!strcmp(set->row[k].label, row->label))
			bench_die("--codec: label %s is given twice", row->label);
	if (gn_spec_parse(row->spec, &spec, msg, sizeof(msg)) ||
	    gn_codec_resolve(&spec, &spec, &spec, msg, sizeof(msg)))
		bench_die("--codec %s: %s", item, msg);
	row->ops = gn_codec_find(spec.codec);
	row->p = spec.p;
	if (gn_codec_params_check(row->ops, &row->p, (u32)chunk, 0xffffffffu,
				  msg, sizeof(msg)))
		bench_die("--codec %s: %s", item, msg);
	gn_codec_spec_text(row->ops, &row->p, row->text, sizeof(row->text));
	set->n++;
}

/**
 * bench_codecs_add() - the items of one --codec argument
 * @set: the list, appended to
 * @arg: items separated by commas, each SPEC or LABEL=SPEC; the first item
 *	with parameters (a colon) takes the rest of @arg as its parameters
 * @chunk: values per chunk, what the parameters are checked against
 *
 * Dies with a message naming the bad item.
 */
void bench_codecs_add(struct bench_codecs *set, const char *arg, size_t chunk)
{
	const char *at = arg;
	char item[512];

	for (;;) {
		size_t head = strcspn(at, ",:");
		size_t len = at[head] == ',' ? head : strlen(at);

		if (len >= sizeof(item))
			bench_die("--codec %s: an item of %zu characters", arg, len);
		memcpy(item, at, len);
		item[len] = 0;
		if (!len)
			bench_die("--codec %s: an empty item", arg);
		add_item(set, item, chunk);
		if (!at[len])
			return;
		at += len + 1;
		if (!*at)
			bench_die("--codec %s: the list ends in a comma", arg);
	}
}

/*
 * The default rows: every registered codec by name (topk and qsgd as the
 * benchmarks' settings), then every other benchmark label.
 */
void bench_codecs_default(struct bench_codecs *set, size_t chunk)
{
	const struct gn_codec_ops *c;
	size_t i;
	u32 k;

	for (k = 0; (c = gn_codec_at(k)); k++)
		add_item(set, c->name, chunk);
	for (i = 0; i < NBUILTIN; i++)
		if (!gn_codec_by_name(builtin[i].label, strlen(builtin[i].label)))
			add_item(set, builtin[i].label, chunk);
}

/* A codec's state over a tensor of @n values in chunks of @chunk. */
struct reg_run {
	const struct bench_codec_row *row;
	struct gn_codec_call call;
	size_t n, chunk, chunks, bound;
	const float *x;
	float *e, *e_out;		/* NULL without error feedback */
	void *scratch;
	uint8_t *buf;			/* [chunks][bound] */
	size_t *len;			/* [chunks] */
	float *out;
	/* The entropy stage's rows: packets [chunks][most] of @cap bytes. */
	u32 mtu, cap;
	struct gn_entropy_enc z;
	struct gn_entropy_dec dec;
	void *zmem, *dmem;
	u32 most;
	uint8_t *pkt;
	u32 *pk_len, *pk_first, *pk_count, *npk;
	u32 *hint;			/* [chunks]: as the tensor's in pack.c */
	bool *pk_coded;
};

/* Chunk @k's packets through the stage (its encoding is in r->scratch). */
static size_t reg_cut(struct reg_run *r, size_t k, u32 aux)
{
	const struct gn_codec_ops *c = r->row->ops;
	u32 n = (u32)(k + 1 < r->chunks ? r->chunk : r->n - k * r->chunk);
	u32 at = 0, next = r->hint[k] ? r->hint[k] : r->z.raw_max, used, i = 0;
	size_t base = k * r->most, total = 0;
	long len;

	while (at < c->units(n)) {
		if (i == r->most)
			bench_die("%s: more packets than pkts_max", r->row->label);
		len = gn_entropy_slice(c, &r->row->p, r->scratch, aux,
				       r->x + k * r->chunk, n, at, &r->z,
				       r->pkt + (base + i) * r->cap, r->cap,
				       &used, &r->pk_coded[base + i], &next);
		if (len < 0)
			bench_die("%s: packet: %s", r->row->label,
				  strerror((int)-len));
		if (!i)
			r->hint[k] = next;
		r->pk_len[base + i] = (u32)len;
		r->pk_first[base + i] = at;
		r->pk_count[base + i] = used;
		total += (size_t)len;
		at += used;
		i++;
	}
	r->npk[k] = i;
	return total;
}

/*
 * Every packet of chunk @k checked and decoded (@add: added) as a
 * receiver does, through the stage's decoder where it is coded.
 */
static void reg_uncut(struct reg_run *r, size_t k, bool add)
{
	const struct gn_codec_ops *c = r->row->ops;
	u32 n = (u32)(k + 1 < r->chunks ? r->chunk : r->n - k * r->chunk);
	u32 aux = gn_get_le32(r->buf + k * r->bound), i;
	size_t base = k * r->most;

	for (i = 0; i < r->npk[k]; i++) {
		const uint8_t *b = r->pkt + (base + i) * r->cap;
		long len = r->pk_len[base + i];

		if (r->pk_coded[base + i]) {
			len = gn_entropy_open(&r->dec, c, &r->row->p, n, b, (u32)len);
			b = r->dec.raw;
		}
		if (len < 0 || c->check_slice(&r->row->p, n, r->pk_first[base + i],
					      r->pk_count[base + i], aux, b,
					      (u32)len))
			bench_die("%s: a packet its check refuses", r->row->label);
		(add ? c->add : c->decode)(&r->call, r->out + k * r->chunk, n,
					   r->pk_first[base + i],
					   r->pk_count[base + i], aux, b,
					   (u32)len);
	}
}

static size_t run_len(const struct reg_run *r, size_t k)
{
	size_t at = k * r->chunk;

	return r->n - at < r->chunk ? r->n - at : r->chunk;
}

/*
 * The whole tensor, chunk after chunk, the error feedback read from one
 * buffer and written to the other as libgradnet keeps it (a failed step
 * keeps the old one); the next encode reads what this one wrote. Returns
 * the stream bytes.
 */
static size_t reg_encode(struct reg_run *r)
{
	size_t k, total = 0;
	float *e;

	for (k = 0; k < r->chunks; k++) {
		size_t at = k * r->chunk;
		long len = gn_codec_stream_encode(r->row->ops, &r->call,
						  r->x + at,
						  r->e ? r->e + at : NULL,
						  r->e ? r->e_out + at : NULL,
						  (u32)run_len(r, k), r->scratch,
						  r->buf + k * r->bound,
						  r->bound);

		if (len < 0)
			bench_die("%s: encode: %s", r->row->label,
				  strerror((int)-len));
		r->len[k] = (size_t)len;
		total += r->pkt ? reg_cut(r, k, gn_get_le32(r->buf + k * r->bound)) :
				  (size_t)len;
	}
	e = r->e;
	r->e = r->e_out;
	r->e_out = e;
	return total;
}

/* Every chunk's stream decoded as a result: its positions set. */
static void reg_decode(struct reg_run *r)
{
	size_t k;

	for (k = 0; k < r->chunks && r->pkt; k++)
		reg_uncut(r, k, false);
	for (k = 0; k < r->chunks && !r->pkt; k++) {
		int e = gn_codec_stream_decode(r->row->ops, &r->call,
					       r->buf + k * r->bound, r->len[k],
					       r->out + k * r->chunk,
					       (u32)run_len(r, k));

		if (e)
			bench_die("%s: decode: %s", r->row->label, strerror(-e));
	}
}

/* The fastest of a row's runs, in seconds. */
struct reg_best {
	double encode, decode;
};

static double timed_min(double best, double t0)
{
	double dt = bench_now() - t0;

	return dt < best ? dt : best;
}

/* A stage row's encoder, decoder and packets, as a job at @r->mtu has. */
static void stage_alloc(struct reg_run *r)
{
	const struct bench_codec_row *row = r->row;
	u32 raw_max = gn_entropy_raw_max(r->mtu - GN_WIRE_IPUDP -
					 GN_WIRE_WHOLE_OVERHEAD);
	u32 level = row->p.stage[GN_STAGE_LEVEL];
	size_t ze = gn_entropy_enc_size(raw_max, level);
	size_t zd = gn_entropy_dec_size(raw_max);
	size_t npkt;

	r->zmem = aligned_alloc(64, (ze + 63) & ~(size_t)63);
	r->dmem = aligned_alloc(64, (zd + 63) & ~(size_t)63);
	if (!r->zmem || !r->dmem ||
	    gn_entropy_enc_init(&r->z, r->zmem, ze, raw_max, level) ||
	    gn_entropy_dec_init(&r->dec, r->dmem, zd, raw_max))
		bench_die("%s: no entropy contexts", row->label);
	r->cap = r->mtu - GN_WIRE_IPUDP - GN_WIRE_DATA_OVERHEAD;
	r->most = row->ops->pkts_max(&row->p, (u32)r->chunk, r->cap);
	npkt = r->chunks * r->most;
	r->pkt = bench_alloc(npkt * r->cap);
	r->pk_len = bench_alloc(npkt * sizeof(u32));
	r->pk_first = bench_alloc(npkt * sizeof(u32));
	r->pk_count = bench_alloc(npkt * sizeof(u32));
	r->pk_coded = bench_alloc(npkt * sizeof(bool));
	r->npk = bench_alloc(r->chunks * sizeof(u32));
	r->hint = bench_alloc(r->chunks * sizeof(u32));
	memset(r->hint, 0, r->chunks * sizeof(u32));
}

/*
 * Every row at @n values, in rounds: each round encodes and decodes
 * twice per codec in turn, and each keeps its fastest run, so a shared
 * host's noise hits every codec alike. Each codec first encodes three
 * times to its error feedback's steady state; the rounds go on for at
 * least three times @secs per codec, and at least three rounds. The
 * codecs share the stream buffer and the output (a round decodes the
 * stream it just encoded) and each keeps its own error feedback.
 * Fills @best[k] and @ratio[k]: input bytes over the stream bytes of the
 * third encode, the same step whatever the rounds.
 */
static void measure_rows(const struct bench_codecs *set, const float *x,
			 size_t n, size_t chunk, double secs,
			 struct reg_best *best, double *ratio)
{
	struct reg_run r[BENCH_MAX_CODECS];
	size_t bytes = n * sizeof(float), chunks = (n + chunk - 1) / chunk;
	size_t k, i, bound = 0, scratch = 1;
	uint8_t *buf;
	size_t *len = bench_alloc(chunks * sizeof(size_t));
	float *out = bench_alloc(bytes);
	void *sc;
	double start;
	int rounds;

	for (k = 0; k < set->n; k++) {
		const struct bench_codec_row *row = &set->row[k];
		size_t b = (size_t)gn_codec_stream_bound(row->ops, &row->p,
							 (u32)chunk);
		size_t c = row->ops->scratch(&row->p, (u32)chunk);

		bound = b > bound ? b : bound;
		scratch = c > scratch ? c : scratch;
	}
	buf = bench_alloc(chunks * bound);
	sc = bench_alloc(scratch);
	for (k = 0; k < set->n; k++) {
		const struct bench_codec_row *row = &set->row[k];

		r[k] = (struct reg_run){
			.row = row, .n = n, .chunk = chunk, .x = x,
			.mtu = set->mtu,
			.chunks = chunks, .bound = bound, .scratch = sc,
			.buf = buf, .len = len, .out = out,
			.call = { .p = &row->p, .seed = 0x6772616469656e74ull,
				  .world = 1, .ef_len = n },
		};
		if (row->ops->flags & GN_CODEC_EF_REDUCE) {
			r[k].e = bench_alloc(bytes);
			r[k].e_out = bench_alloc(bytes);
		}
		if (gn_entropy_on(&row->p))
			stage_alloc(&r[k]);
		for (i = 0; i < 3; i++)
			ratio[k] = (double)bytes / (double)reg_encode(&r[k]);
		best[k] = (struct reg_best){ 1e30, 1e30 };
	}
	start = bench_now();
	for (rounds = 0; rounds < 3 ||
	     bench_now() - start < 3 * secs * (double)set->n; rounds++) {
		for (k = 0; k < set->n; k++) {
			/* Twice each: a cache-sized tensor is hot the second time. */
			for (i = 0; i < 2; i++) {
				double t0 = bench_now();

				reg_encode(&r[k]);
				best[k].encode = timed_min(best[k].encode, t0);
			}
			for (i = 0; i < 2; i++) {
				double t0 = bench_now();

				reg_decode(&r[k]);
				best[k].decode = timed_min(best[k].decode, t0);
			}
		}
	}
	for (k = 0; k < set->n; k++) {
		free(r[k].e);
		free(r[k].e_out);
		free(r[k].zmem);
		free(r[k].dmem);
		free(r[k].pkt);
		free(r[k].pk_len);
		free(r[k].pk_first);
		free(r[k].pk_count);
		free(r[k].pk_coded);
		free(r[k].npk);
		free(r[k].hint);
	}
	free(buf);
	free(sc);
	free(len);
	free(out);
}

/**
 * bench_codecs_measure() - every row of @set at @n values
 * @set: the codecs
 * @n: values of the tiled gradient tensor
 * @chunk: values per chunk
 * @secs: each codec's measurements run at least three times this long
 * @dram: fill the rows' dram speeds (else their cache speeds)
 */
void bench_codecs_measure(struct bench_codecs *set, size_t n, size_t chunk,
			  double secs, int dram)
{
	float *x = bench_tiled_gradients(n);
	struct reg_best best[BENCH_MAX_CODECS];
	double ratio[BENCH_MAX_CODECS], gb = (double)n * sizeof(float) / 1e9;
	size_t k;

	measure_rows(set, x, n, chunk, secs, best, ratio);
	for (k = 0; k < set->n; k++) {
		struct bench_codec_row *row = &set->row[k];
		struct bench_speed *sp[2] = { &row->encode, &row->decode };
		double t[2] = { best[k].encode, best[k].decode };
		int i;

		for (i = 0; i < 2; i++)
			*(dram ? &sp[i]->dram : &sp[i]->cache) = gb / t[i];
		if (dram)
			row->ratio = ratio[k];
	}
	free(x);
}
