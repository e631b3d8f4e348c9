/* SPDX-License-Identifier: MIT */
/*
 * bench.h - what the gradnet-bench subcommands share: timing, buffers, the
 * gradient sample files.
 */
#ifndef GN_BENCH_H
#define GN_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "codec/codec.h"

struct bench_tensor {
	char name[64];
	char file[128];
	size_t elems;
	int step;
};

double bench_now(void);
void *bench_alloc(size_t bytes);
__attribute__((noreturn, format(printf, 1, 2))) void bench_die(const char *fmt, ...);
const char *bench_data_dir(void);
float *bench_load_f32(const char *rel, size_t *n);
size_t bench_manifest(const char *rel, struct bench_tensor *t, size_t max);
void bench_pin_cpu(void);
float *bench_tiled_gradients(size_t n);
/* The memory anchors: STREAM-style e[i] += x[i] and acc[i] += k. */
void bench_stream_add(float *e, const float *x, size_t n);
void bench_stream_addk(float *acc, float k, size_t n);

/*
 * Chunks per quantizer call in libgradnet's encoder, and so in a part of
 * the codec workers' encoding: ENCODE_BATCH in lib/collective/core.h.
 */
#define BENCH_ENCODE_BATCH 4

/*
 * A tensor encoded as libgradnet encodes it: chunk k's scale and zero-run
 * stream in slot k of @buf (gn_tlc_encode_bound(chunk) bytes), its length
 * in len[k]. The error feedback is read from @e_in and written to @e_out,
 * which may be the same buffer; bench_enc_swap() exchanges them.
 */
struct bench_enc {
	int isa;
	size_t n, chunk, chunks, stride, bound;
	const float *x;
	float *e_in, *e_out;
	uint8_t *quartic;	/* [chunks][stride] group bytes */
	float *m;		/* [chunks] */
	uint8_t *buf;		/* [chunks][bound] */
	size_t *len;		/* [chunks] */
};

/* Values in chunk @k of @b's tensor: the last one may be short. */
static inline size_t bench_enc_len(const struct bench_enc *b, size_t k)
{
	size_t at = k * b->chunk;

	return b->n - at < b->chunk ? b->n - at : b->chunk;
}

void bench_enc_init(struct bench_enc *b, int isa, const float *x,
		    float *e_in, float *e_out, size_t n, size_t chunk);
void bench_enc_free(struct bench_enc *b);
void bench_enc_swap(struct bench_enc *b);
size_t bench_enc_parts(const struct bench_enc *b);
void bench_encode_part(const struct bench_enc *b, size_t part);
size_t bench_encode(const struct bench_enc *b);
void bench_decode_chunk(const struct bench_enc *b, size_t k, float *acc);

/* A speed in GB/s, of a cache-resident tensor and of a DRAM-resident one. */
struct bench_speed {
	double cache, dram;
};

/*
 * A codec of the registry as `gradnet-bench codec` measures it: @label
 * names the row, @spec is the text it stands for, @text every parameter.
 */
#define BENCH_MAX_CODECS 16
struct bench_codec_row {
	char label[64];
	char spec[256];
	char text[256];
	const struct gn_codec_ops *ops;
	struct gn_codec_params p;
	struct bench_speed encode, decode;
	double ratio;			/* input bytes over stream bytes */
};

struct bench_codecs {
	size_t n;
	unsigned mtu;			/* the stage rows' packets' */
	struct bench_codec_row row[BENCH_MAX_CODECS];
};

void bench_codecs_add(struct bench_codecs *set, const char *arg, size_t chunk);
void bench_codecs_default(struct bench_codecs *set, size_t chunk);
void bench_codecs_measure(struct bench_codecs *set, size_t n, size_t chunk,
			  double secs, int dram);

int bench_codec(int argc, char **argv);
int bench_codec_threads(int isa, const char *list, size_t n, size_t chunk,
			double secs, int json);
int bench_seal(int argc, char **argv);
int bench_udp(int argc, char **argv);
int bench_model(int argc, char **argv);

/*
 * Run @stmt at least three times and for at least @secs seconds; @gbps gets
 * @bytes over the fastest run. Noisy machines only ever slow a run down.
 */
#define BENCH_TIME(gbps, bytes, secs, stmt)                                   \
	do {                                                                  \
		double best_ = 1e30, start_ = bench_now();                    \
		int runs_ = 0;                                                \
		while (runs_ < 3 || bench_now() - start_ < (secs)) {          \
			double t0_ = bench_now(), dt_;                        \
			stmt;                                                 \
			dt_ = bench_now() - t0_;                              \
			best_ = dt_ < best_ ? dt_ : best_;                    \
			runs_++;                                              \
		}                                                             \
		(gbps) = (double)(bytes) / best_ / 1e9;                       \
	} while (0)

#endif /* GN_BENCH_H */
