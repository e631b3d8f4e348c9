// SPDX-License-Identifier: MIT
/*
 * scenario.c - three protocol cores, one thread, a lossy in-memory fabric:
 * the job that tests/core_test.c runs in a process and the module's
 * self-test runs in the kernel, with the same hashes expected of both.
 *
 * Integer-only: the kernel builds this file without the FPU, so the
 * gradients are made as float32 bit patterns and results are read as
 * bytes; only the core, which brackets its own FPU work, computes on
 * them. Locking as collective.h asks: every call under the env's lock but
 * open, free and allreduce_start. One env serves the three contexts, as
 * one thread drives them all.
 */
#include "gn_deps.h"
#include <gradnet/wire.h>

#include "collective/collective.h"
#include "env.h"
#include "mem.h"
#include "scenario.h"

/* DORE with its quantizer both ways and momentum 0.5. */
static const struct gn_core_model scn_dore = {
	.flags = GN_MODEL_DORE, .momentum = 0x3f000000u,
};

/*
 * model-dore with the entropy stage on the changes only: DORE's quantizer
 * down, spelled out, through zstd at level 1.
 */
static const struct gn_core_model scn_dore_zstd = {
	.flags = GN_MODEL_DORE, .momentum = 0x3f000000u,
	.down = { .codec = GN_CODEC_QSGD, .given = 7 | 1u << 8,
		  .p = { .w = { 2, 256, 1 }, .stage = { 1 } } },
};

/* 3LC's push/pull: each direction 3LC with its error feedback. */
static const struct gn_core_model scn_push_pull = {
	.down = { .codec = GN_CODEC_3LC },
};

const struct gn_scn_case gn_scn_cases[GN_SCN_CASES] = {
	{ "3lc-sum", { .codec = GN_CODEC_3LC }, 0, NULL, 0 },
	{ "3lc-avg", { .codec = GN_CODEC_3LC }, GN_TENSOR_AVERAGE, NULL, 0 },
	{ "dense-sum", { .codec = GN_CODEC_NONE }, 0, NULL, 0 },
	{ "dense-avg", { .codec = GN_CODEC_NONE }, GN_TENSOR_AVERAGE, NULL, 0 },
	/* QSGD 4 bits, buckets of 128 (the chunk is not a multiple). */
	{ "qsgd-avg", { .codec = GN_CODEC_QSGD, .given = 2,
			.p = { .w = { 0, 128 } } }, GN_TENSOR_AVERAGE, NULL, 0 },
	/* Top-k at 5%: sparse contributions, sums as sparse or dense. */
	{ "topk-sum", { .codec = GN_CODEC_TOPK, .given = 1,
			.p = { .w = { 0x3d4ccccdu } } }, 0, NULL, 0 },
	/* Per block of 512, as SparCML's code selects. */
	{ "topk-block-avg", { .codec = GN_CODEC_TOPK, .given = 3,
			      .p = { .w = { 0x3d4ccccdu, 512 } } },
	  GN_TENSOR_AVERAGE, NULL, 0 },
	/* Top-k at 5% with QSGD values of 4 bits. */
	{ "topk-qsgd-avg", { .codec = GN_CODEC_TOPK, .given = 5,
			     .p = { .w = { 0x3d4ccccdu, 0, 4 } } },
	  GN_TENSOR_AVERAGE, NULL, 0 },
	/* CLT-k at 5%: the leaders' index sets, rotating over the steps. */
	{ "cltk-sum", { .codec = GN_CODEC_CLTK, .given = 1,
			.p = { .w = { 0x3d4ccccdu } } }, 0, NULL, 0 },
	/* With beta 0.5, a dense first step and QSGD values of 4 bits. */
	{ "cltk-warm-qsgd-avg", { .codec = GN_CODEC_CLTK, .given = 0xf,
				  .p = { .w = { 0x3d4ccccdu, 0x3f000000u, 1, 4 } } },
	  GN_TENSOR_AVERAGE, NULL, 0 },
	{ "model-dore", { 0 }, 0, &scn_dore, 0 },
	{ "model-3lc-push-pull", { .codec = GN_CODEC_3LC }, 0, &scn_push_pull, 0 },
	/* Top-k at 5%, Bloom P0 indices (fpr 0.001), QSGD values. */
	{ "topk-bloom-qsgd-avg", { .codec = GN_CODEC_TOPK, .given = 0x25,
				   .p = { .w = { 0x3d4ccccdu, 0, 4, 0, 0, 3 } } },
	  GN_TENSOR_AVERAGE, NULL, 0 },
	/* Bloom P1 at fpr 0.01, float16 values. */
	{ "topk-bloom-p1-f16-sum", { .codec = GN_CODEC_TOPK, .given = 0xe1,
				     .p = { .w = { 0x3d4ccccdu, 0, 0, 0, 0, 4,
						   0x3c23d70au, 1 } } }, 0, NULL, 0 },
	/* Bloom P2 at 20%: results of three ranks' entries, dense or not. */
	{ "topk-bloom-p2-avg", { .codec = GN_CODEC_TOPK, .given = 0x21,
				 .p = { .w = { 0x3e4ccccdu, 0, 0, 0, 0, 5 } } },
	  GN_TENSOR_AVERAGE, NULL, 0 },
	/* The smallest of varint, bitmap and run lengths per chunk. */
	{ "topk-auto-sum", { .codec = GN_CODEC_TOPK, .given = 0x21,
			     .p = { .w = { 0x3d4ccccdu, 0, 0, 0, 0, 6 } } }, 0, NULL, 0 },
	/* Curve-fitted values, curves of 128 values. */
	{ "topk-fit-avg", { .codec = GN_CODEC_TOPK, .given = 0x89,
			    .p = { .w = { 0x3d4ccccdu, 0, 0, 128, 0, 0, 0, 3 } } },
	  GN_TENSOR_AVERAGE, NULL, 0 },
	/*
	 * The entropy stage (zstd at level 1) on the inputs of dense-sum and
	 * qsgd-avg: lossless, so with their results, whichever zstd (the
	 * kernel's or libzstd) coded the packets. (3LC's slices of these
	 * inputs are too short for the stage to code.)
	 */
	{ "dense-sum-zstd", { .codec = GN_CODEC_NONE, .given = 1u << 8,
			      .p = { .stage = { 1 } } }, 0, NULL, 3 },
	{ "qsgd-avg-zstd", { .codec = GN_CODEC_QSGD, .given = 2 | 1u << 8,
			     .p = { .w = { 0, 128 }, .stage = { 1 } } },
	  GN_TENSOR_AVERAGE, NULL, 5 },
	/* The owners' results coded: model-dore's parameters, fewer bytes. */
	{ "model-dore-zstd", { 0 }, 0, &scn_dore_zstd, 11 },
};

/*
 * A phase (handshake, a step, the drain) that has not ended after this
 * much env time or this many rounds over the ranks is a failure, not a
 * hang. Generous: the kernel runs this under TCG emulation.
 */
#define SCN_PHASE_NS	(120ull * 1000000000ull)
#define SCN_PHASE_ROUNDS 4000000ull
/* A silent peer is dead after this; steps have as long again. */
#define SCN_TIMEOUT_NS	(5ull * 1000000000ull)
/* Buffers of the fabric, shared by the ranks: far more than they hold. */
#define SCN_NBUFS	1024u

struct scn {
	const struct gn_env *env;
	const struct gn_scn_hooks *hooks;
	struct gn_scn_result *res;
	int kase;
	struct gn_mem_fabric *fab;
	struct gn_transport tp[GN_SCN_WORLD];
	struct gn_ctx *ctx[GN_SCN_WORLD];
	float *x[GN_SCN_WORLD];
	float *p[GN_SCN_WORLD];		/* a model case's parameters */
	bool opened[GN_SCN_WORLD];
	u64 rounds;
};

/* Where the golden inputs come from: xorshift64, never zero. */
static u64 scn_xorshift(u64 *s)
{
	u64 x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

/**
 * gn_scn_input() - a rank's gradient in one case at one step
 * @x: the values to fill
 * @n: how many
 * @kase: index into gn_scn_cases (its twin's inputs, if it has one)
 * @rank: the rank whose gradient it is (GN_SCN_WORLD: a model case's
 *	parameters at the start, the same on every rank)
 * @step: 0 .. GN_SCN_STEPS - 1
 *
 * Sign and mantissa random, exponent in [115, 130] (about 2^-12 to 2^3):
 * finite, normal, wide enough that sums round and 3LC quantizes coarsely.
 */
void gn_scn_input(float *x, u32 n, int kase, int rank, int step)
{
	int from = gn_scn_cases[kase].twin ? gn_scn_cases[kase].twin - 1 : kase;
	u64 s = 0x9e3779b97f4a7c15ull ^ ((u64)(from + 1) << 40) ^
		((u64)(rank + 1) << 20) ^ (u64)(step + 1);
	u32 i;

	for (i = 0; i < 8; i++)
		scn_xorshift(&s);
	for (i = 0; i < n; i++) {
		u64 r = scn_xorshift(&s);
		u32 bits = (u32)(r >> 63) << 31 |
			   (115u + (u32)(r >> 32 & 15)) << 23 |
			   (u32)(r & 0x7fffff);

		memcpy(&x[i], &bits, sizeof(bits));
	}
}

/**
 * gn_scn_hash() - FNV-1a 64, how the scenario and the golden header name a result
 * @p: the bytes
 * @bytes: how many
 *
 * Return: the hash.
 */
u64 gn_scn_hash(const void *p, size_t bytes)
{
	const u8 *b = p;
	u64 h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < bytes; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static void scn_copy(char *dst, size_t cap, const char *src)
{
	size_t i = 0;

	while (src && src[i] && i + 1 < cap) {
		dst[i] = src[i];
		i++;
	}
	dst[i] = 0;
}

/* Record the first failure: @rank -1 if it is no one rank's. */
static int scn_fail(struct scn *c, int step, int rank, int err,
		    const char *what, const char *core_msg)
{
	struct gn_scn_result *res = c->res;

	if (!res->what) {
		res->what = what;
		res->kase = c->kase;
		res->step = step;
		res->rank = rank;
		res->err = err;
		scn_copy(res->msg, sizeof(res->msg), core_msg);
	}
	return err ? err : -EIO;
}

enum scn_phase { SCN_HANDSHAKE, SCN_STEP, SCN_DRAIN };

/* Has rank @r's part of @phase ended? 1 yes, 0 not yet, -errno failed. */
static int scn_rank_done(struct scn *c, enum scn_phase phase, int r,
			 bool *done, int *err)
{
	struct gn_ctx *ctx = c->ctx[r];
	int st;

	switch (phase) {
	case SCN_HANDSHAKE:
		st = gn_core_status(ctx);
		return st < 0 ? st : st == 1;
	case SCN_STEP:
		if (*done)
			return 1;
		st = gn_core_allreduce_done(ctx, GN_SCN_TENSOR, err);
		if (st < 0)
			return st;
		*done = st == 1;
		return st == 1;
	case SCN_DRAIN:
		return !gn_core_tensor_owes(ctx, GN_SCN_TENSOR) &&
		       !gn_core_owes(ctx);
	}
	return -EINVAL;
}

/*
 * Poll every rank in turn until each one's part of @phase has ended,
 * within SCN_PHASE_NS and SCN_PHASE_ROUNDS; between rounds the caller's
 * idle hook sleeps until the earliest time a core asked to be polled.
 */
static int scn_poll_until(struct scn *c, enum scn_phase phase, int step,
			  int *errs)
{
	bool done[GN_SCN_WORLD] = { false };
	u64 start = gn_env_now(c->env), rounds, now, next;
	int r, all, st;

	for (rounds = 0;; rounds++) {
		next = (u64)-1;
		all = 1;
		for (r = 0; r < GN_SCN_WORLD; r++) {
			u64 t;

			gn_env_lock(c->env);
			t = gn_core_poll(c->ctx[r]);
			st = scn_rank_done(c, phase, r, &done[r], &errs[r]);
			if (st < 0)
				scn_fail(c, step, r, st, phase == SCN_HANDSHAKE ?
					 "handshake failed" :
					 "allreduce_done refused the step",
					 gn_core_errmsg(c->ctx[r]));
			gn_env_unlock(c->env);
			if (st < 0)
				return st;
			all &= st;
			if (t < next)
				next = t;
		}
		c->rounds++;
		if (all)
			return 0;
		now = gn_env_now(c->env);
		if (now - start > SCN_PHASE_NS || rounds >= SCN_PHASE_ROUNDS)
			return scn_fail(c, step, -1, -ETIMEDOUT,
					phase == SCN_HANDSHAKE ? "handshake never ended" :
					phase == SCN_STEP ? "step never ended" :
					"ranks still owe each other after retiring the tensor",
					NULL);
		c->hooks->idle(c->hooks->arg, next > now ? next : 0);
	}
}

static int scn_open(struct scn *c)
{
	static const u8 key[GN_MAC_KEY_LEN + 1] = GN_SCN_KEY;
	struct gn_mem_faults faults = {
		.loss = GN_SCN_FAULT, .dup = GN_SCN_FAULT,
		.reorder = GN_SCN_FAULT, .seed = 0x5eed0000u + (u64)c->kase,
	};
	struct gn_core_conf conf = {
		.world = GN_SCN_WORLD, .job = GN_SCN_JOB, .mtu = GN_SCN_MTU,
		.chunk = GN_SCN_CHUNK,
		.codec = { .codec = GN_CODEC_3LC, .given = 1,
			   .p = { .w = { GN_SCN_S_BITS } } },
		.timeout_ns = SCN_TIMEOUT_NS,
		.step_timeout_ns = 2 * SCN_TIMEOUT_NS, .key = key,
	};
	int r, err;

	GN_STATIC_ASSERT(sizeof(GN_SCN_KEY) == GN_MAC_KEY_LEN + 1,
			 "the scenario's key is one MAC key");
	/* Packets fit the MTU, so a buffer of the MTU holds any of them. */
	err = gn_mem_fabric_new(c->env, GN_SCN_WORLD, GN_SCN_MTU, SCN_NBUFS,
				&faults, &c->fab);
	if (err)
		return scn_fail(c, -1, -1, err, "gn_mem_fabric_new failed", NULL);
	for (r = 0; r < GN_SCN_WORLD; r++) {
		err = gn_mem_open(c->fab, r, &c->tp[r]);
		if (err)
			return scn_fail(c, -1, r, err, "gn_mem_open failed", NULL);
		c->opened[r] = true;
		conf.rank = r;
		conf.account = c->hooks->account;
		conf.account_arg = c->hooks->account_arg[r];
		err = gn_core_open(&conf, c->env, &c->tp[r], &c->ctx[r]);
		if (err)
			return scn_fail(c, -1, r, err, "gn_core_open failed", NULL);
		c->x[r] = gn_alloc_array(c->env, GN_SCN_ELEMS, sizeof(float));
		c->p[r] = gn_alloc_array(c->env, GN_SCN_ELEMS, sizeof(float));
		if (!c->x[r] || !c->p[r])
			return scn_fail(c, -1, r, -ENOMEM, "no memory for a tensor",
					NULL);
		/* Every rank's parameters start equal: "rank" WORLD's input. */
		gn_scn_input(c->p[r], GN_SCN_ELEMS, c->kase, GN_SCN_WORLD, 0);
	}
	return 0;
}

static int scn_register(struct scn *c)
{
	const struct gn_scn_case *k = &gn_scn_cases[c->kase];
	struct gn_core_tensor o = {
		.id = GN_SCN_TENSOR, .elems = GN_SCN_ELEMS, .flags = k->flags,
		.codec = k->codec,
	};
	int r, err;

	for (r = 0; r < GN_SCN_WORLD; r++) {
		gn_env_lock(c->env);
		err = k->model ? gn_core_model_register(c->ctx[r], &o, k->model) :
				 gn_core_tensor_register(c->ctx[r], &o);
		if (err)
			scn_fail(c, -1, r, err, "gn_core_tensor_register failed",
				 gn_core_api_errmsg(c->ctx[r]));
		gn_env_unlock(c->env);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Unregister as gn_tensor_unregister() does: retire the tensor, poll until
 * the peers acknowledged every rank's last results and nothing else is
 * owed, then remove it.
 */
static int scn_unregister(struct scn *c)
{
	int r, err, errs[GN_SCN_WORLD] = { 0 };

	for (r = 0; r < GN_SCN_WORLD; r++) {
		gn_env_lock(c->env);
		err = gn_core_tensor_retire(c->ctx[r], GN_SCN_TENSOR);
		if (err)
			scn_fail(c, GN_SCN_STEPS, r, err, "gn_core_tensor_retire failed",
				 gn_core_api_errmsg(c->ctx[r]));
		gn_env_unlock(c->env);
		if (err)
			return err;
	}
	err = scn_poll_until(c, SCN_DRAIN, GN_SCN_STEPS, errs);
	for (r = 0; !err && r < GN_SCN_WORLD; r++) {
		gn_env_lock(c->env);
		err = gn_core_tensor_remove(c->ctx[r], GN_SCN_TENSOR, false);
		if (err)
			scn_fail(c, GN_SCN_STEPS, r, err, "gn_core_tensor_remove failed",
				 gn_core_api_errmsg(c->ctx[r]));
		gn_env_unlock(c->env);
	}
	return err;
}

/*
 * One allreduce (or model step) on every rank; the hash of its result (the
 * parameters), the same on all, into res.
 */
static int scn_step(struct scn *c, int step)
{
	const size_t bytes = GN_SCN_ELEMS * sizeof(float);
	bool model = gn_scn_cases[c->kase].model;
	float **out = model ? c->p : c->x;
	int r, err, errs[GN_SCN_WORLD] = { 0 };

	for (r = 0; r < GN_SCN_WORLD; r++) {
		gn_scn_input(c->x[r], GN_SCN_ELEMS, c->kase, r, step);
		err = model ? gn_core_model_start(c->ctx[r], GN_SCN_TENSOR,
						  c->x[r], c->p[r],
						  GN_SCN_LR(step)) :
			      gn_core_allreduce_start(c->ctx[r], GN_SCN_TENSOR,
						      c->x[r]);
		if (err) {
			gn_env_lock(c->env);
			scn_fail(c, step, r, err, "gn_core_allreduce_start failed",
				 gn_core_api_errmsg(c->ctx[r]));
			gn_env_unlock(c->env);
			return err;
		}
	}
	err = scn_poll_until(c, SCN_STEP, step, errs);
	if (err)
		return err;
	for (r = 0; r < GN_SCN_WORLD; r++) {
		if (errs[r]) {
			gn_env_lock(c->env);
			scn_fail(c, step, r, errs[r], "the step failed",
				 gn_core_api_errmsg(c->ctx[r]));
			gn_env_unlock(c->env);
			return errs[r];
		}
		/* Replicas are bit-identical, not merely close. */
		if (r && memcmp(out[r], out[0], bytes))
			return scn_fail(c, step, r, -EIO,
					"this rank's result differs from rank 0's",
					NULL);
	}
	c->res->hash[c->kase][step] = gn_scn_hash(out[0], bytes);
	gn_env_lock(c->env);
	for (r = 0; r < GN_SCN_WORLD; r++)
		c->res->orphans[c->kase][step] += gn_core_orphans(c->ctx[r]);
	gn_env_unlock(c->env);
	return 0;
}

/* The core's own account of the faults: what it resent and refused. */
static void scn_stats(struct scn *c)
{
	int r;

	gn_env_lock(c->env);
	for (r = 0; r < GN_SCN_WORLD; r++) {
		const struct gn_stats *st = gn_core_stats(c->ctx[r], -1);

		if (!st)
			continue;
		c->res->retransmits[c->kase] += st->retransmits;
		c->res->dup_drops[c->kase] += st->drops[GN_DROP_DUPLICATE];
		c->res->stream_bytes[c->kase] += st->stream_bytes;
	}
	gn_env_unlock(c->env);
}

/* Everything scn_open() made, in reverse; the fabric's counts first. */
static int scn_close(struct scn *c)
{
	struct gn_mem_counts *n = &c->res->counts[c->kase];
	int r;

	for (r = GN_SCN_WORLD - 1; r >= 0; r--) {
		gn_free(c->env, c->x[r]);
		gn_free(c->env, c->p[r]);
		if (c->ctx[r])
			gn_core_free(c->ctx[r]);
		if (c->opened[r])
			c->tp[r].ops->close(c->tp[r].state);
	}
	if (!c->fab)
		return 0;
	gn_mem_fabric_counts(c->fab, n);
	gn_mem_fabric_free(c->fab);
	if (n->bufs_free != n->bufs_total)
		return scn_fail(c, -1, -1, -EIO,
				"packet buffers not back in the pool after close",
				NULL);
	return 0;
}

static int scn_case(const struct gn_env *env, const struct gn_scn_hooks *hooks,
		    struct gn_scn_result *res, int kase)
{
	struct scn c = { .env = env, .hooks = hooks, .res = res, .kase = kase };
	int errs[GN_SCN_WORLD] = { 0 };
	u64 start = gn_env_now(env);
	int step, err, cerr;

	err = scn_open(&c);
	if (!err)
		err = scn_poll_until(&c, SCN_HANDSHAKE, -1, errs);
	if (!err)
		err = scn_register(&c);
	for (step = 0; !err && step < GN_SCN_STEPS; step++) {
		err = scn_step(&c, step);
		if (!err && hooks->step_end)
			hooks->step_end(hooks->arg, kase, step);
	}
	/* Every rank's last results acknowledged before anyone leaves. */
	if (!err)
		err = scn_unregister(&c);
	if (!err)
		scn_stats(&c);
	cerr = scn_close(&c);
	res->ns[kase] = gn_env_now(env) - start;
	res->rounds[kase] = c.rounds;
	return err ? err : cerr;
}

/**
 * gn_scn_run() - run every case of the scenario
 * @env: the environment of all three ranks (and of the fabric)
 * @hooks: how to let time pass while nothing is due
 * @res: zeroed by the caller; hashes and counts out, or the failure
 *
 * Beyond each step ending without error and all ranks holding the same
 * bytes, checks that the fabric really lost, duplicated and reordered
 * packets over the run, and that every packet buffer came back.
 *
 * Return: 0, or -errno with res->what (static text) saying what failed
 * where, and res->msg what the core said about it.
 */
int gn_scn_run(const struct gn_env *env, const struct gn_scn_hooks *hooks,
	       struct gn_scn_result *res)
{
	struct gn_mem_counts sum = { 0 };
	int kase, err;

	res->kase = res->step = res->rank = -1;
	for (kase = 0; kase < GN_SCN_CASES; kase++) {
		err = scn_case(env, hooks, res, kase);
		if (err)
			return err;
		sum.lost += res->counts[kase].lost;
		sum.duplicated += res->counts[kase].duplicated;
		sum.reordered += res->counts[kase].reordered;
	}
	res->kase = -1;
	if (!sum.lost || !sum.duplicated || !sum.reordered) {
		res->what = "the fabric never lost, duplicated or reordered a packet";
		return -EIO;
	}
	return 0;
}
