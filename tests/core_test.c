// SPDX-License-Identifier: MIT
/*
 * core_test.c - the protocol core's scenario (tests/core/scenario.c) in a
 * process: three cores in one thread over the lossy in-memory fabric give
 * the hashes of tests/golden/core_hashes.h, and so does the public
 * library, three ranks in three threads over UDP on loopback, with the
 * same inputs and parameters. The kernel module's self-test expects the
 * same hashes of the same scenario.
 *
 * core_test --print writes the golden header to stdout, only when both
 * runs agree: the header always comes from the userspace library.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gradnet/gradnet.h>
#include "libc.h"
#include "mem.h"
#include "collective/collective.h"
#include "core/scenario.h"
#include "core/libc_idle.h"

#include "golden/core_hashes.h"
#define GOLDEN_CASES ((int)(sizeof(gn_core_golden) / sizeof(gn_core_golden[0])))

/* Our own main() below takes --print first, then hands over. */
#define main harness_main
#include "kselftest_harness.h"

static double secs(uint64_t ns)
{
	return (double)ns * 1e-9;
}

/*
 * The libc env, counting allocations: after the first step of a case the
 * core allocates nothing (everything was sized at open and registration).
 */
struct counting_env {
	struct gn_env_libc libc;
	struct gn_env env;
	uint64_t allocs;
	uint64_t at_step[GN_SCN_CASES][GN_SCN_STEPS];
};

static void *count_alloc(void *arg, size_t bytes)
{
	struct counting_env *c = arg;

	c->allocs++;
	return c->libc.env.ops->alloc(c->libc.env.priv, bytes);
}

static void count_free(void *arg, void *p)
{
	struct counting_env *c = arg;

	c->libc.env.ops->free(c->libc.env.priv, p);
}

static uint64_t count_now(void *arg)
{
	(void)arg;
	return gn_env_libc_now();
}

static void count_lock(void *arg)
{
	struct counting_env *c = arg;

	c->libc.env.ops->lock(c->libc.env.priv);
}

static void count_unlock(void *arg)
{
	struct counting_env *c = arg;

	c->libc.env.ops->unlock(c->libc.env.priv);
}

static void count_wake(void *arg)
{
	struct counting_env *c = arg;

	c->libc.env.ops->wake(c->libc.env.priv);
}

static int count_random(void *arg, void *buf, size_t len)
{
	struct counting_env *c = arg;

	return c->libc.env.ops->random(c->libc.env.priv, buf, len);
}

static const struct gn_env_ops counting_ops = {
	.alloc = count_alloc, .free = count_free, .now_ns = count_now,
	.lock = count_lock, .unlock = count_unlock, .wake = count_wake,
	.random = count_random,
};

static void count_step_end(void *arg, int kase, int step)
{
	struct counting_env *c = arg;

	c->at_step[kase][step] = c->allocs;
}

/* The scenario over the fabric with the libc env. Return: 0 or -errno. */
static int run_scenario(struct gn_scn_result *res, struct counting_env *c)
{
	struct gn_scn_hooks hooks = { .idle = gn_scn_libc_idle,
				      .step_end = count_step_end, .arg = c };
	int err;

	gn_env_libc_init(&c->libc);
	c->env.ops = &counting_ops;
	c->env.priv = c;
	err = gn_scn_run(&c->env, &hooks, res);
	gn_env_libc_destroy(&c->libc);
	return err;
}

static void describe_failure(const struct gn_scn_result *res, int err,
			     char *buf, size_t len)
{
	snprintf(buf, len, "%s (case %s, step %d, rank %d): %s%s%s",
		 res->what ? res->what : "?",
		 res->kase >= 0 ? gn_scn_cases[res->kase].name : "-",
		 res->step, res->rank, gn_strerror(err),
		 res->msg[0] ? ": " : "", res->msg);
}

/* One rank of the public library's job, in its own thread. */
struct udp_rank {
	int kase, rank;
	const char *peers;
	int open_rc, rc[GN_SCN_STEPS];
	uint64_t hash[GN_SCN_STEPS];
	char msg[320];
};

/*
 * The parameters a case sets, as the public API takes them: "key=value,..."
 * with floats in hex, so the text is exactly the case's bits.
 */
static void case_params(const struct gn_codec_spec *spec, char *buf,
			size_t len)
{
	const struct gn_codec_ops *c = gn_codec_find(spec->codec);
	size_t at = 0;
	uint32_t i;

	buf[0] = 0;
	for (i = 0; c && gn_codec_param_at(c, i) && at < len; i++) {
		const struct gn_codec_param *d = gn_codec_param_at(c, i);
		uint32_t v = gn_param_get(&spec->p, d->word);
		float f;

		if (!(spec->given & 1u << d->word))
			continue;
		memcpy(&f, &v, sizeof(f));
		if (d->type == GN_PARAM_F32)
			at += snprintf(buf + at, len - at, "%s%s=%a",
				       at ? "," : "", d->name, (double)f);
		else if (d->type == GN_PARAM_ENUM)
			at += snprintf(buf + at, len - at, "%s%s=%s",
				       at ? "," : "", d->name, d->choices[v]);
		else
			at += snprintf(buf + at, len - at, "%s%s=%u",
				       at ? "," : "", d->name, v);
	}
}

static float float_of(uint32_t bits)
{
	float f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}

/* A model case through the public API, its options from the case's bits. */
static int model_register(struct gn_ctx *ctx, const struct gn_scn_case *k)
{
	const struct gn_core_model *m = k->model;
	char params[256], down[256];
	GN_OPTS(gn_model_opts, o, .id = GN_SCN_TENSOR, .elems = GN_SCN_ELEMS,
		.flags = m->flags, .codec = (int)k->codec.codec,
		.down_codec = (int)m->down.codec,
		.momentum = float_of(m->momentum),
		.weight_decay = float_of(m->weight_decay),
		.alpha = float_of(m->alpha), .beta = float_of(m->beta),
		.eta = float_of(m->eta));

	case_params(&k->codec, params, sizeof(params));
	case_params(&m->down, down, sizeof(down));
	o.params = params[0] ? params : NULL;
	o.down_params = down[0] ? down : NULL;
	return gn_model_register(ctx, &o);
}

static void *udp_rank_main(void *arg)
{
	static const uint8_t key[] = GN_SCN_KEY;
	struct udp_rank *u = arg;
	const struct gn_scn_case *k = &gn_scn_cases[u->kase];
	char params[256];
	GN_OPTS(gn_ctx_opts, o, .rank = u->rank, .world_size = GN_SCN_WORLD,
		.peers = u->peers, .key = key, .key_len = sizeof(key) - 1,
		.job_id = GN_SCN_JOB, .mtu = GN_SCN_MTU, .timeout_ms = 5000,
		.flags = GN_CTX_RANK, .codec = GN_CODEC_3LC,
		.chunk = GN_SCN_CHUNK);
	GN_OPTS(gn_tensor_opts, t, .id = GN_SCN_TENSOR, .elems = GN_SCN_ELEMS,
		.codec = (int)k->codec.codec, .flags = k->flags,
		.params = params);
	uint32_t s_bits = GN_SCN_S_BITS;
	struct gn_ctx *ctx;
	float *x, *p;
	int step;

	case_params(&k->codec, params, sizeof(params));
	memcpy(&o.s, &s_bits, sizeof(o.s));
	u->open_rc = gn_ctx_open(&o, &ctx);
	if (u->open_rc) {
		snprintf(u->msg, sizeof(u->msg), "%s", gn_last_errmsg());
		return NULL;
	}
	x = malloc(GN_SCN_ELEMS * sizeof(*x));
	p = malloc(GN_SCN_ELEMS * sizeof(*p));
	u->open_rc = !x || !p ? -ENOMEM : k->model ? model_register(ctx, k) :
						     gn_tensor_register(ctx, &t);
	if (p)
		gn_scn_input(p, GN_SCN_ELEMS, u->kase, GN_SCN_WORLD, 0);
	for (step = 0; !u->open_rc && step < GN_SCN_STEPS; step++) {
		uint32_t lr_bits = GN_SCN_LR(step);
		float lr;

		memcpy(&lr, &lr_bits, sizeof(lr));
		gn_scn_input(x, GN_SCN_ELEMS, u->kase, u->rank, step);
		u->rc[step] = k->model ? gn_model_step(ctx, GN_SCN_TENSOR, x, p, lr) :
					 gn_allreduce(ctx, GN_SCN_TENSOR, x);
		if (u->rc[step]) {
			snprintf(u->msg, sizeof(u->msg), "%s", gn_ctx_errmsg(ctx));
			break;
		}
		u->hash[step] = gn_scn_hash(k->model ? p : x,
					    GN_SCN_ELEMS * sizeof(*x));
	}
	if (u->open_rc)
		snprintf(u->msg, sizeof(u->msg), "%s", gn_ctx_errmsg(ctx));
	free(x);
	free(p);
	gn_ctx_close(ctx);
	return NULL;
}

/*
 * Every case through the public API, three threads on 127.0.0.1, with the
 * scenario's inputs. Return: 0 with hash[case][step] (equal on every
 * rank), or -1 with the reason in @why.
 */
static int run_udp(uint64_t hash[GN_SCN_CASES][GN_SCN_STEPS], char *why,
		   size_t len)
{
	static int calls;
	int kase, r, step;

	for (kase = 0; kase < GN_SCN_CASES; kase++) {
		struct udp_rank u[GN_SCN_WORLD];
		pthread_t th[GN_SCN_WORLD];
		int base = 20000 + (int)((getpid() * 131 + calls++ * 8) % 40000);
		char peers[128];

		snprintf(peers, sizeof(peers), "127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d",
			 base, base + 1, base + 2);
		memset(u, 0, sizeof(u));
		for (r = 0; r < GN_SCN_WORLD; r++) {
			u[r].kase = kase;
			u[r].rank = r;
			u[r].peers = peers;
			if (pthread_create(&th[r], NULL, udp_rank_main, &u[r])) {
				snprintf(why, len, "pthread_create failed");
				while (r--)
					pthread_join(th[r], NULL);
				return -1;
			}
		}
		for (r = 0; r < GN_SCN_WORLD; r++)
			pthread_join(th[r], NULL);
		for (r = 0; r < GN_SCN_WORLD; r++) {
			if (u[r].open_rc) {
				snprintf(why, len, "%s rank %d: open/register: %s: %s",
					 gn_scn_cases[kase].name, r,
					 gn_strerror(u[r].open_rc), u[r].msg);
				return -1;
			}
			for (step = 0; step < GN_SCN_STEPS; step++) {
				if (u[r].rc[step]) {
					snprintf(why, len, "%s rank %d step %d: %s: %s",
						 gn_scn_cases[kase].name, r, step,
						 gn_strerror(u[r].rc[step]), u[r].msg);
					return -1;
				}
				if (u[r].hash[step] != u[0].hash[step]) {
					snprintf(why, len, "%s step %d: rank %d differs from rank 0",
						 gn_scn_cases[kase].name, step, r);
					return -1;
				}
			}
		}
		for (step = 0; step < GN_SCN_STEPS; step++)
			hash[kase][step] = u[0].hash[step];
	}
	return 0;
}

static void check_golden(struct __test_metadata *_metadata,
			 uint64_t hash[GN_SCN_CASES][GN_SCN_STEPS])
{
	int k, step;

	ASSERT_STREQ(GN_SCN_DESC, GN_CORE_GOLDEN_DESC) {
		TH_LOG("the scenario changed: regenerate the header with core_test --print");
	}
	ASSERT_EQ(GN_SCN_CASES, GOLDEN_CASES);
	/* A twin ends as the case it is the twin of. */
	for (k = 0; k < GN_SCN_CASES; k++) {
		const struct gn_scn_case *c = &gn_scn_cases[k];

		for (step = 0; c->twin && step < GN_SCN_STEPS; step++)
			EXPECT_EQ(hash[c->twin - 1][step], hash[k][step]) {
				TH_LOG("%s step %d", c->name, step);
			}
	}
	for (k = 0; k < GOLDEN_CASES; k++) {
		ASSERT_STREQ(gn_scn_cases[k].name, gn_core_golden[k].name);
		for (step = 0; step < GN_SCN_STEPS; step++) {
			EXPECT_EQ(gn_core_golden[k].hash[step], hash[k][step]) {
				TH_LOG("%s step %d: 0x%016llx, golden 0x%016llx",
				       gn_scn_cases[k].name, step,
				       (unsigned long long)hash[k][step],
				       (unsigned long long)gn_core_golden[k].hash[step]);
			}
		}
	}
}

/* Only for the timeout: the harness's default 30 s is short for a job. */
FIXTURE(core) {
	int unused;
};

FIXTURE_SETUP(core)
{
}

FIXTURE_TEARDOWN(core)
{
}

/* Three cores, one thread, a fabric that loses, duplicates and reorders. */
TEST_F_TIMEOUT(core, scenario_matches_golden, 240)
{
	struct gn_scn_result *res = calloc(1, sizeof(*res));
	struct counting_env *c = calloc(1, sizeof(*c));
	char why[512];
	int err, k;

	ASSERT_NE(NULL, res);
	ASSERT_NE(NULL, c);
	err = run_scenario(res, c);
	describe_failure(res, err, why, sizeof(why));
	ASSERT_EQ(0, err) TH_LOG("%s", why);
	for (k = 0; k < GN_SCN_CASES; k++) {
		const struct gn_mem_counts *n = &res->counts[k];

		TH_LOG("%-9s %.3f s, %llu poll rounds; fabric: %llu sent, %llu delivered, "
		       "%llu lost, %llu duplicated, %llu reordered; core: %llu retransmits, "
		       "%llu duplicates dropped", gn_scn_cases[k].name, secs(res->ns[k]),
		       (unsigned long long)res->rounds[k],
		       (unsigned long long)n->sent, (unsigned long long)n->delivered,
		       (unsigned long long)n->lost, (unsigned long long)n->duplicated,
		       (unsigned long long)n->reordered,
		       (unsigned long long)res->retransmits[k],
		       (unsigned long long)res->dup_drops[k]);
	}
	check_golden(_metadata, res->hash);
	/* A twin with the entropy stage sends fewer bytes than its twin. */
	for (k = 0; k < GN_SCN_CASES; k++) {
		int t = gn_scn_cases[k].twin - 1;

		if (t < 0)
			continue;
		TH_LOG("%s: %llu body bytes, %s %llu", gn_scn_cases[k].name,
		       (unsigned long long)res->stream_bytes[k],
		       gn_scn_cases[t].name,
		       (unsigned long long)res->stream_bytes[t]);
		EXPECT_LT(res->stream_bytes[k], res->stream_bytes[t]);
	}
	/*
	 * Steps repeat with the same shapes: after the first, the only
	 * allocation is a message replaced while a slow receiver still owed
	 * its acknowledgement (an orphan), one each.
	 */
	for (k = 0; k < GN_SCN_CASES; k++) {
		uint64_t more = c->at_step[k][GN_SCN_STEPS - 1] - c->at_step[k][0];
		uint64_t orph = res->orphans[k][GN_SCN_STEPS - 1] - res->orphans[k][0];
		const char *name = gn_scn_cases[k].name;

		ASSERT_EQ(orph, more) TH_LOG("%s: %llu allocations in steps 2..%d, %llu orphans",
					     name, (unsigned long long)more, GN_SCN_STEPS,
					     (unsigned long long)orph);
	}
	free(c);
	free(res);
}

/* The public library over UDP: the golden hashes are the library's own. */
TEST_F_TIMEOUT(core, udp_library_matches_golden, 240)
{
	uint64_t hash[GN_SCN_CASES][GN_SCN_STEPS];
	char why[512];

	ASSERT_EQ(0, run_udp(hash, why, sizeof(why))) TH_LOG("%s", why);
	check_golden(_metadata, hash);
}

TEST_HARNESS_MAIN

/*
 * The golden header, from both runs, or nothing: a scenario the library
 * over UDP disagrees with is no reference for the kernel.
 */
static int print_golden(void)
{
	static struct gn_scn_result res;
	static struct counting_env cenv;
	uint64_t udp[GN_SCN_CASES][GN_SCN_STEPS];
	char why[512];
	int k, step, err;

	err = run_scenario(&res, &cenv);
	if (err) {
		describe_failure(&res, err, why, sizeof(why));
		fprintf(stderr, "core_test: scenario: %s\n", why);
		return 1;
	}
	if (run_udp(udp, why, sizeof(why))) {
		fprintf(stderr, "core_test: library over UDP: %s\n", why);
		return 1;
	}
	if (memcmp(udp, res.hash, sizeof(udp))) {
		fprintf(stderr, "core_test: the library over UDP and the scenario disagree\n");
		return 1;
	}
	printf("/* SPDX-License-Identifier: MIT */\n"
	       "/*\n"
	       " * core_hashes.h - generated by tests/core_test --print; do not edit.\n"
	       " * FNV-1a 64 of the allreduce result of tests/core/scenario.c, per case\n"
	       " * and step, the same on every rank; both the core over the in-memory\n"
	       " * fabric and libgradnet over UDP gave them. The kernel module's\n"
	       " * self-test (kmod/selftest_core.c) expects them too.\n"
	       " */\n"
	       "#ifndef GN_GOLDEN_CORE_HASHES_H\n"
	       "#define GN_GOLDEN_CORE_HASHES_H\n\n"
	       "#define GN_CORE_GOLDEN_DESC \\\n\t\"%s\"\n"
	       "#define GN_CORE_GOLDEN_STEPS %d\n\n"
	       "static const struct gn_core_golden {\n"
	       "\tconst char *name;\n"
	       "\tuint64_t hash[GN_CORE_GOLDEN_STEPS];\n"
	       "} gn_core_golden[] = {\n", GN_SCN_DESC, GN_SCN_STEPS);
	for (k = 0; k < GN_SCN_CASES; k++) {
		printf("\t{ \"%s\", {", gn_scn_cases[k].name);
		for (step = 0; step < GN_SCN_STEPS; step++)
			printf("%s 0x%016llxull", step ? "," : "",
			       (unsigned long long)res.hash[k][step]);
		printf(" } },\n");
	}
	printf("};\n\n#endif /* GN_GOLDEN_CORE_HASHES_H */\n");
	return 0;
}

#undef main
int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--print"))
		return print_golden();
	return harness_main(argc, argv);
}
