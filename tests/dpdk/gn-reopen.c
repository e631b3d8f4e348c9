// SPDX-License-Identifier: MIT
/*
 * gn-reopen.c - one rank of a job that opens gradnet contexts from the
 * environment one after another in a single process, as a trainer whose
 * framework re-initialises does: each context is opened, with --elems
 * used for one allreduce of a tensor of that many floats, and closed
 * before the next opens.
 *
 * The tensor of context i on rank r is a fixed function of (r, i, index),
 * so a run over any data path can be compared byte for byte with one over
 * another (the tests compare DPDK with UDP). Prints one line per context,
 * "open I R MESSAGE", and with --out writes context i's result to
 * PREFIX.I. Stops at the first open or allreduce that fails, and exits 1;
 * 0 when every context opened and did what it was asked.
 *
 * --mtus gives context i the i-th MTU of a list (gn_ctx_opts.mtu; the
 * environment's GN_MTU for the rest), so a port is asked for another
 * shape from one context to the next.
 *
 * usage: gn-reopen [--contexts N] [--elems E] [--codec none|3lc]
 *                  [--mtus M,M,...] [--out PREFIX]
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gradnet/gradnet.h>

#define MAX_CONTEXTS 64

/* Context @ctx_no's gradient on @rank: small integers over 256, varied. */
static void fill(float *x, size_t n, int rank, int ctx_no)
{
	size_t j;

	for (j = 0; j < n; j++) {
		unsigned int h = (unsigned int)j * 2654435761u ^
				 (unsigned int)(rank * 7919 + ctx_no * 104729);

		x[j] = (float)((int)(h % 2001u) - 1000) / 256.0f;
	}
}

/* One allreduce of @n floats on @ctx, its result written to @path. */
static int use(struct gn_ctx *ctx, size_t n, int codec, int ctx_no,
	       const char *path)
{
	GN_OPTS(gn_tensor_opts, t, .id = 1, .elems = n, .codec = codec);
	float *x = malloc(n * sizeof(*x));
	FILE *f;
	int r;

	if (!x)
		return -1;
	r = gn_tensor_register(ctx, &t);
	if (!r) {
		fill(x, n, gn_ctx_rank(ctx), ctx_no);
		r = gn_allreduce(ctx, 1, x);
	}
	if (r) {
		printf("allreduce %d %d %s\n", ctx_no, r, gn_ctx_errmsg(ctx));
	} else if (path) {
		f = fopen(path, "wb");
		if (!f || fwrite(x, sizeof(*x), n, f) != n || fclose(f)) {
			printf("allreduce %d: cannot write %s\n", ctx_no, path);
			r = -1;
		}
	}
	free(x);
	return r;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "contexts", required_argument, NULL, 'n' },
		{ "elems", required_argument, NULL, 'e' },
		{ "codec", required_argument, NULL, 'c' },
		{ "out", required_argument, NULL, 'o' },
		{ "mtus", required_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL, *mtus = "";
	int contexts = 2, codec = GN_CODEC_NONE, c, i, r;
	unsigned int mtu[MAX_CONTEXTS] = { 0 };
	size_t elems = 0;
	char path[4096], *end;
	struct gn_ctx *ctx;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			contexts = atoi(optarg);
			break;
		case 'e':
			elems = strtoull(optarg, NULL, 0);
			break;
		case 'c':
			codec = !strcmp(optarg, "3lc") ? GN_CODEC_3LC :
				!strcmp(optarg, "none") ? GN_CODEC_NONE : -1;
			break;
		case 'o':
			out = optarg;
			break;
		case 'm':
			mtus = optarg;
			break;
		default:
			codec = -1;
		}
	}
	for (i = 0; *mtus && i < MAX_CONTEXTS && codec >= 0; i++) {
		mtu[i] = (unsigned int)strtoul(mtus, &end, 10);
		if (end == mtus || (*end && *end != ','))
			codec = -1;
		mtus = *end ? end + 1 : end;
	}
	if (contexts < 1 || contexts > MAX_CONTEXTS || codec < 0 || *mtus ||
	    optind != argc) {
		fprintf(stderr, "usage: gn-reopen [--contexts N] [--elems E] [--codec none|3lc] [--mtus M,M,...] [--out PREFIX]\n");
		return 2;
	}
	for (i = 0; i < contexts; i++) {
		GN_OPTS(gn_ctx_opts, o);

		/* Unset fields come from the environment, as with no opts. */
		o.mtu = mtu[i];
		r = gn_ctx_open(&o, &ctx);
		printf("open %d %d %s\n", i, r, r ? gn_last_errmsg() : "");
		fflush(stdout);
		if (r)
			return 1;
		if (elems) {
			snprintf(path, sizeof(path), "%s.%d", out ? out : "", i);
			r = use(ctx, elems, codec, i, out ? path : NULL);
		}
		gn_ctx_close(ctx);
		fflush(stdout);
		if (r)
			return 1;
	}
	return 0;
}
