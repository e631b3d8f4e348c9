// SPDX-License-Identifier: MIT
/*
 * steady_test.c - the error-feedback steady state on real gradients: the
 * mlp-small-seq steps fed through gn_tlc_encode in manifest order, one
 * chunk per tensor and one error buffer per tensor name, must give exactly
 * the stream lengths and FNV-1a hashes that the independent numpy model
 * (tests/golden/gen_steady.py) wrote to golden/steady_state.tsv, for every
 * instruction set. So the steady-state ratio the benchmark reports is the
 * one the specification gives; the totals are printed per s.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include <gradnet/codec.h>
#include "testutil.h"

#define MAX_ROWS 2048
#define MAX_S 8
#define MAX_TENSORS 16

struct steady_row {
	char s[16];
	int step;
	char tensor[64];
	size_t elems;
	size_t stream_bytes;
	uint64_t hash;
};

struct manifest_row {
	int step;
	char tensor[64];
	size_t elems;
	char file[128];
};

static uint64_t fnv1a64(const uint8_t *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static size_t read_golden(struct steady_row *r, size_t max)
{
	char line[512];
	size_t k = 0;
	FILE *f = fopen(GN_GOLDEN_DIR "/steady_state.tsv", "r");

	if (!f)
		return 0;
	while (k < max && fgets(line, sizeof(line), f)) {
		unsigned long long h;

		if (sscanf(line, "%15s %d %63s %zu %zu %llx", r[k].s, &r[k].step,
			   r[k].tensor, &r[k].elems, &r[k].stream_bytes, &h) != 6)
			continue;
		r[k++].hash = h;
	}
	fclose(f);
	return k;
}

static size_t read_manifest(struct manifest_row *m, size_t max)
{
	char path[4096], line[512], model[64];
	size_t k = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/mlp-small-seq/manifest.tsv",
		 gn_data_dir());
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (k < max && fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %d %63s %zu %127s", model, &m[k].step,
			   m[k].tensor, &m[k].elems, m[k].file) == 5)
			k++;
	fclose(f);
	return k;
}

/* The error buffer of a tensor name, created zero on first use. */
static float *ef_of(char names[][64], float **ef, size_t *count,
		    const char *tensor, size_t n)
{
	size_t i;

	for (i = 0; i < *count; i++)
		if (!strcmp(names[i], tensor))
			return ef[i];
	if (*count == MAX_TENSORS)
		return NULL;
	snprintf(names[*count], 64, "%s", tensor);
	ef[*count] = calloc(n ? n : 1, sizeof(float));
	return ef[(*count)++];
}

FIXTURE(isa) {
	int isa;
	struct steady_row *golden;
	size_t ngolden;
	struct manifest_row *manifest;
	size_t nmanifest;
	float **x;
};

FIXTURE_SETUP(isa)
{
	char why[96];
	size_t k;

	self->isa = gn_test_isa(why, sizeof(why));
	ASSERT_LE(0, self->isa) TH_LOG("%s", why);
	ksft_print_msg("codec kernels: %s\n", gn_codec_isa_name(self->isa));
	self->golden = calloc(MAX_ROWS, sizeof(*self->golden));
	self->manifest = calloc(MAX_ROWS, sizeof(*self->manifest));
	ASSERT_NE(NULL, self->golden);
	ASSERT_NE(NULL, self->manifest);
	self->ngolden = read_golden(self->golden, MAX_ROWS);
	ASSERT_LT(0, self->ngolden) TH_LOG("cannot read %s/steady_state.tsv",
					   GN_GOLDEN_DIR);
	self->nmanifest = read_manifest(self->manifest, MAX_ROWS);
	ASSERT_LT(0, self->nmanifest) TH_LOG("no manifest under %s",
					     gn_data_dir());
	self->x = calloc(self->nmanifest, sizeof(*self->x));
	ASSERT_NE(NULL, self->x);
	for (k = 0; k < self->nmanifest; k++) {
		char rel[256];
		size_t n = 0;

		snprintf(rel, sizeof(rel), "mlp-small-seq/%s",
			 self->manifest[k].file);
		self->x[k] = gn_load_f32(rel, &n);
		ASSERT_NE(NULL, self->x[k]) TH_LOG("cannot read %s", rel);
		ASSERT_EQ(self->manifest[k].elems, n) TH_LOG("%s", rel);
	}
}

FIXTURE_TEARDOWN(isa)
{
	size_t k;

	for (k = 0; self->x && k < self->nmanifest; k++)
		free(self->x[k]);
	free(self->x);
	free(self->golden);
	free(self->manifest);
}

/*
 * The golden file lists, for each s, every manifest row in order. Encode
 * them the same way and compare each row's length and hash.
 */
TEST_F(isa, streams_match_the_model)
{
	size_t row = 0, runs = 0;

	while (row < self->ngolden) {
		char names[MAX_TENSORS][64];
		float *ef[MAX_TENSORS] = { 0 };
		size_t nef = 0, k, raw = 0, bytes = 0, bad = 0;
		const char *s_text = self->golden[row].s;
		float s = strtof(s_text, NULL);

		ASSERT_LE(row + self->nmanifest, self->ngolden)
			TH_LOG("s %s: fewer rows than the manifest", s_text);
		for (k = 0; k < self->nmanifest; k++, row++) {
			const struct manifest_row *m = &self->manifest[k];
			const struct steady_row *g = &self->golden[row];
			size_t n = m->elems, cap = gn_tlc_encode_bound(n);
			float *e = ef_of(names, ef, &nef, m->tensor, n);
			uint8_t *out = malloc(cap);
			uint64_t hash;
			long len;

			ASSERT_NE(NULL, e);
			ASSERT_NE(NULL, out);
			ASSERT_STREQ(s_text, g->s);
			ASSERT_EQ(m->step, g->step);
			ASSERT_STREQ(m->tensor, g->tensor);
			ASSERT_EQ(n, g->elems);
			len = gn_tlc_encode_isa(self->isa, self->x[k], e, n, s,
						out, cap);
			ASSERT_LT(0, len) TH_LOG("s %s step %d %s", s_text,
						 m->step, m->tensor);
			hash = fnv1a64(out, (size_t)len);
			if (((size_t)len != g->stream_bytes || hash != g->hash) &&
			    bad++ < 5)
				TH_LOG("s %s step %d %s: %ld bytes hash %016llx, "
				       "the model %zu bytes hash %016llx", s_text,
				       m->step, m->tensor, len,
				       (unsigned long long)hash, g->stream_bytes,
				       (unsigned long long)g->hash);
			raw += n * sizeof(float);
			bytes += (size_t)len;
			free(out);
		}
		for (k = 0; k < nef; k++)
			free(ef[k]);
		EXPECT_EQ(0, bad) TH_LOG("s %s: %zu streams differ", s_text, bad);
		ksft_print_msg("%s s %-4s: %zu raw bytes, %zu stream bytes, ratio %.3f\n",
			       gn_codec_isa_name(self->isa), s_text, raw, bytes,
			       (double)raw / (double)bytes);
		/* The test runs in a child that leaves with _exit(). */
		fflush(stdout);
		runs++;
	}
	ASSERT_EQ(4, runs);
}

TEST_HARNESS_MAIN
