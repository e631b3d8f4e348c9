/* SPDX-License-Identifier: MIT */
/*
 * job.h - run a gradnet job on loopback from a test: one forked process
 * per rank, deterministic gradients, results in shared memory, and the
 * single-process reference computed with the codecs' operations directly
 * (lib/codec/codec.h), as the collective composes them.
 */
#ifndef GN_TEST_JOB_H
#define GN_TEST_JOB_H

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gradnet/codec.h>
#include <gradnet/gradnet.h>
#include "codec/codec.h"
#include "codec/rng.h"
#include "spec.h"
#include "testutil.h"

#define JOB_MAX_RANKS 8
#define JOB_MAX_TENSORS 24
#define JOB_MAX_STEPS 8

struct job_spec {
	int world;
	int steps;
	int ntensors;
	size_t elems[JOB_MAX_TENSORS];
	int codec[JOB_MAX_TENSORS];		/* GN_CODEC_* */
	const char *params[JOB_MAX_TENSORS];	/* "key=value,...", or NULL */
	unsigned int flags[JOB_MAX_TENSORS];	/* GN_TENSOR_* */
	float s;
	unsigned int chunk;
	unsigned int timeout_ms;
	bool keyed;
	bool ipv6;				/* peers on [::1], not 127.0.0.1 */
	int nan_rank, nan_step, nan_tensor;	/* -1: no NaN */
	int late_ms;				/* others start the NaN step late */
	int die_rank, die_step;			/* -1: nobody dies */
	bool idle;				/* idle_rank holds back step */
	int idle_rank, idle_step;		/* idle_step until the others
						   have ended it */
	const char *env[JOB_MAX_RANKS];		/* "K=V;K=V" per rank */
	uint32_t job_id;			/* 0: a new one per run (a
						   stochastic codec's reference
						   needs it set) */
	size_t register_elems_rank1;		/* != 0: rank 1 registers tensor 0 so */
	/* job_reference()'s gradients, if not job_grad()'s (tests/net/gn-ref.c) */
	void (*grad)(float *x, size_t n, int rank, int t, int step, void *arg);
	void *grad_arg;
	/*
	 * An attacker on the same host, forked with the ranks and killed once
	 * they are done; rank k listens on 127.0.0.1:@base + k, @key is the
	 * job's key (an insider has it).
	 */
	void (*attack)(const struct job_spec *s, int base, uint32_t job,
		       const uint8_t *key);
	/*
	 * Step 1 waits until rank 0 has dropped a malformed packet: an
	 * insider's forgery must land before the real packet of the same
	 * number, which would make it a mere duplicate.
	 */
	bool await_malformed;
};

/* What each rank saw, in shared memory. */
struct job_out {
	int open_rc[JOB_MAX_RANKS];
	int isa[JOB_MAX_RANKS];			/* the codec kernels it ran */
	int status[JOB_MAX_RANKS];		/* wait status of each rank */
	int rc[JOB_MAX_RANKS][JOB_MAX_STEPS];
	uint64_t hash[JOB_MAX_RANKS][JOB_MAX_STEPS][JOB_MAX_TENSORS];
	double seconds[JOB_MAX_RANKS][JOB_MAX_STEPS];
	int steps_done[JOB_MAX_RANKS];
	char msg[JOB_MAX_RANKS][320];
	struct gn_stats stats[JOB_MAX_RANKS];
	int attacked;				/* rank 0 saw await_malformed's drop */
	float data[];				/* final results, rank by rank */
};

static inline uint64_t job_fnv(const float *v, size_t n)
{
	const uint8_t *p = (const uint8_t *)v;
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < n * sizeof(float); i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/* This rank's gradient of tensor @t at step @step: Laplace, per-rank scale. */
static inline void job_grad(float *x, size_t n, int rank, int t, int step)
{
	struct gn_rng r = { 0x1234 + (uint64_t)rank * 1000003 + (uint64_t)t * 7919 +
			    (uint64_t)step * 104729 };
	float b = 1e-3f * (float)(1 + rank) * (float)(1 + t % 3);
	size_t i;

	for (i = 0; i < n; i++)
		x[i] = gn_rng_laplace(&r, b);
}

static inline size_t job_total(const struct job_spec *s)
{
	size_t k, total = 0;

	for (k = 0; k < (size_t)s->ntensors; k++)
		total += s->elems[k];
	return total;
}

static inline void job_env(const char *spec)
{
	char buf[512], *tok, *save = NULL;

	if (!spec)
		return;
	snprintf(buf, sizeof(buf), "%s", spec);
	for (tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
		char *eq = strchr(tok, '=');

		if (eq) {
			*eq = 0;
			setenv(tok, eq + 1, 1);
		}
	}
}

static inline double job_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Alive (the progress thread answers pings) but idle until every other
 * rank has ended @step (for at most a minute). */
static void job_idle(const struct job_spec *s, struct job_out *out, int rank,
		     int step)
{
	double until = job_now() + 60;
	int r;

	for (r = 0; r < s->world && job_now() < until; r++)
		while (r != rank && job_now() < until &&
		       __atomic_load_n(&out->steps_done[r], __ATOMIC_ACQUIRE) <= step)
			usleep(1000);
}

/* For job_spec's await_malformed: rank 0 watches its counters, the others
 * it (for at most a minute; the test's assertion on the drop says if not). */
static void job_await_attack(struct job_out *out, struct gn_ctx *ctx, int rank)
{
	double until = job_now() + 60;

	while (job_now() < until && !__atomic_load_n(&out->attacked, __ATOMIC_ACQUIRE)) {
		if (rank == 0) {
			GN_OPTS(gn_stats, st);

			if (!gn_stats_ctx(ctx, &st) && st.drops[GN_DROP_MALFORMED])
				__atomic_store_n(&out->attacked, 1, __ATOMIC_RELEASE);
		}
		usleep(1000);
	}
}

static const uint8_t job_key[16] = "gradnet test key";

static void job_rank(const struct job_spec *s, struct job_out *out, int rank,
		     const char *peers, uint32_t job)
{
	const uint8_t *key = job_key;
	GN_OPTS(gn_ctx_opts, o, .rank = rank, .world_size = s->world,
		.peers = peers, .timeout_ms = s->timeout_ms ? s->timeout_ms : 5000,
		.flags = (s->keyed ? 0 : GN_CTX_INSECURE) | GN_CTX_RANK, .s = s->s,
		.chunk = s->chunk, .job_id = job);
	float *x[JOB_MAX_TENSORS], *final = out->data;
	struct gn_ctx *ctx;
	int k, step, r;

	char more[1100];

	job_env(s->env[rank]);
	if (s->keyed && !getenv("GN_KEY")) {
		o.key = key;
		o.key_len = sizeof(job_key);
	}
	/* A rank told of a bigger world gets one more (unused) address. */
	if (getenv("GN_WORLD_SIZE")) {
		o.world_size = atoi(getenv("GN_WORLD_SIZE"));
		snprintf(more, sizeof(more), "%s,127.0.0.1:1", peers);
		o.peers = more;
	}
	for (k = 0; k < rank; k++)
		final += job_total(s);
	r = gn_ctx_open(&o, &ctx);
	out->open_rc[rank] = r;
	out->isa[rank] = gn_codec_isa_default();
	if (r) {
		snprintf(out->msg[rank], sizeof(out->msg[rank]), "%s", gn_last_errmsg());
		_exit(0);
	}
	for (k = 0; k < s->ntensors; k++) {
		size_t n = s->elems[k];
		GN_OPTS(gn_tensor_opts, t, .id = 100 + (uint32_t)k, .codec = s->codec[k],
			.flags = s->flags[k], .params = s->params[k]);

		if (k == 0 && rank == 1 && s->register_elems_rank1)
			n = s->register_elems_rank1;
		t.elems = n;
		x[k] = malloc(n * sizeof(float));
		if (gn_tensor_register(ctx, &t))
			_exit(3);
	}
	if (s->await_malformed)
		job_await_attack(out, ctx, rank);
	for (step = 0; step < s->steps; step++) {
		double t0;

		if (rank == s->die_rank && step == s->die_step)
			_exit(0);	/* dies without a word, mid-job */
		if (rank != s->nan_rank && step == s->nan_step && s->late_ms)
			usleep((useconds_t)s->late_ms * 1000);
		if (s->idle && rank == s->idle_rank && step == s->idle_step)
			job_idle(s, out, rank, step);
		for (k = 0; k < s->ntensors; k++) {
			size_t n = k == 0 && rank == 1 && s->register_elems_rank1 ?
					   s->register_elems_rank1 : s->elems[k];

			job_grad(x[k], n, rank, k, step);
			if (rank == s->nan_rank && step == s->nan_step &&
			    k == s->nan_tensor)
				x[k][n / 2] = NAN;
		}
		t0 = job_now();
		r = 0;
		/* All tensors in flight at once, then wait for each. */
		for (k = 0; k < s->ntensors; k++) {
			int e = gn_allreduce_start(ctx, 100 + (uint32_t)k, x[k]);

			r = r ? r : e;
		}
		for (k = 0; k < s->ntensors; k++) {
			int e = gn_allreduce_wait(ctx, 100 + (uint32_t)k);

			if (e && !r) {
				r = e;
				snprintf(out->msg[rank], sizeof(out->msg[rank]), "%s",
					 gn_ctx_errmsg(ctx));
			}
			if (!e)
				out->hash[rank][step][k] = job_fnv(x[k], s->elems[k]);
		}
		out->seconds[rank][step] = job_now() - t0;
		out->rc[rank][step] = r;
		__atomic_store_n(&out->steps_done[rank], step + 1, __ATOMIC_RELEASE);
	}
	for (k = 0; k < s->ntensors; k++) {
		memcpy(final, x[k], s->elems[k] * sizeof(float));
		final += s->elems[k];
	}
	out->stats[rank].sz = sizeof(out->stats[rank]);
	gn_stats_ctx(ctx, &out->stats[rank]);
	gn_ctx_close(ctx);
	_exit(0);
}

/*
 * Run @s; returns the shared results (munmap with job_free) or NULL.
 * Ranks that do not finish within @limit seconds are killed.
 */
static inline struct job_out *job_run(const struct job_spec *s, int limit)
{
	static int calls;
	size_t bytes = sizeof(struct job_out) +
		       (size_t)s->world * job_total(s) * sizeof(float);
	struct job_out *out = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
				   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t pid[JOB_MAX_RANKS], attacker = 0;
	char peers[1024] = "";
	int base, i, left;
	uint32_t job;
	double until;

	if (out == MAP_FAILED)
		return NULL;
	memset(out, 0, sizeof(*out));
	/* Each job its own ports and job id: stragglers of the last one
	 * must not be taken for peers of this one. */
	base = 20000 + (int)((getpid() * 131 + calls * 16) % 40000);
	job = (uint32_t)getpid() * 1000 + (uint32_t)calls++;
	if (s->job_id)
		job = s->job_id;
	for (i = 0; i < s->world; i++) {
		char one[48];

		snprintf(one, sizeof(one), "%s%s:%d", i ? "," : "",
			 s->ipv6 ? "[::1]" : "127.0.0.1", base + i);
		strcat(peers, one);
	}
	for (i = 0; i < s->world; i++) {
		pid[i] = fork();
		if (pid[i] == 0)
			job_rank(s, out, i, peers, job);
	}
	if (s->attack) {
		attacker = fork();
		if (attacker == 0) {
			s->attack(s, base, job, job_key);
			_exit(0);
		}
	}
	until = job_now() + limit;
	for (left = s->world; left > 0;) {
		int status;
		pid_t p = waitpid(-1, &status, WNOHANG);

		if (p > 0 && p == attacker) {
			attacker = 0;
			continue;
		}
		if (p > 0) {
			for (i = 0; i < s->world; i++)
				if (pid[i] == p)
					out->status[i] = status;
			left--;
			continue;
		}
		if (job_now() > until) {
			for (i = 0; i < s->world; i++)
				kill(pid[i], SIGKILL);
			if (attacker > 0)
				kill(attacker, SIGKILL);
			attacker = 0;
			while (wait(NULL) > 0)
				;
			out->open_rc[0] = -ETIME;	/* marks a hang */
			break;
		}
		usleep(2000);
	}
	if (attacker > 0) {
		kill(attacker, SIGKILL);
		waitpid(attacker, NULL, 0);
	}
	return out;
}

static inline void job_free(const struct job_spec *s, struct job_out *out)
{
	munmap(out, sizeof(struct job_out) +
			    (size_t)s->world * job_total(s) * sizeof(float));
}

/* Tensor @k's codec with every parameter, as its ranks register it. */
static inline const struct gn_codec_ops *
job_codec(const struct job_spec *s, int k, struct gn_codec_spec *spec)
{
	struct gn_codec_spec t;
	char msg[256];

	if (gn_spec_for(GN_CODEC_3LC, s->codec[k],
			s->codec[k] == GN_CODEC_3LC || !s->codec[k] ? s->s : 0.0f,
			s->params[k], &t, msg, sizeof(msg)) ||
	    gn_codec_resolve(&t, &t, spec, msg, sizeof(msg))) {
		fprintf(stderr, "job: tensor %d: %s\n", k, msg);
		abort();
	}
	return gn_codec_find(spec->codec);
}

/*
 * What one rank contributes to a chunk, as one slice: its encoding under
 * the rank's key, with its error feedback @e (NULL without), into @body.
 * Return: the slice's bytes, with its word in *@aux.
 */
static inline long job_slice(const struct gn_codec_ops *c,
			     const struct gn_codec_call *call, const float *x,
			     float *e, u32 len, u64 off, void *scratch,
			     u8 *body, u64 cap, u32 *aux)
{
	u32 used;
	long n;

	if (c->encode(call, x, e, e, len, len, off, scratch,
		      c->scratch(call->p, len), aux))
		abort();
	n = c->slice(call->p, scratch, *aux, x, len, 0, body, (u32)cap, &used);
	if (n < 0 || used != c->units(len))
		abort();
	return n;
}

/*
 * One chunk of a codec with an index round (CLT-k), as the collective
 * composes it: chunk @g's leader at step @no (steps of the registration
 * before it: @no - 1) selects the set from its x + m (its memory written
 * to a copy: the selection alone), then every rank, the owner first,
 * encodes its values at that set (memory updated) and the owner adds
 * them at the set; the owner's result at the set is decoded into @res.
 */
static inline void job_index_chunk(const struct gn_codec_ops *c,
				   struct gn_codec_call call, float **g,
				   float **e, u32 g_no, int owner, u64 off,
				   u32 len, u32 id, u32 no, u32 job,
				   float *acc, float *res, u8 *scratch,
				   u8 *body, u64 cap)
{
	size_t sb = c->scratch(call.p, len);
	u32 k = c->index_len(call.p, no - 1, len), aux, used, *idx = NULL;
	float *tmp = malloc(len * sizeof(float));
	int W = (int)call.world, L = (int)((no - 1 + g_no) % call.world), i, r;
	long bl;

	call.step = no - 1;
	if (k < len) {
		idx = malloc(k * sizeof(u32));
		call.seed = gn_draw_seed(job, id, no, (u32)L, 0);
		if (c->encode(&call, g[L] + off, e[L] + off, tmp, len, len, off,
			      scratch, sb, &aux))
			abort();
		memcpy(idx, c->index_set(scratch), k * sizeof(u32));
	}
	call.idx = idx;
	call.nidx = k;
	for (i = 0; i < W; i++) {
		r = i ? (i <= owner ? i - 1 : i) : owner;
		call.seed = gn_draw_seed(job, id, no, (u32)r, 0);
		if (c->encode(&call, g[r] + off, e[r] + off, e[r] + off, len, len,
			      off, scratch, sb, &aux) || aux != k)
			abort();
		if (r == owner) {
			c->own(&call, scratch, aux, acc + off, len);
			continue;
		}
		bl = c->slice(call.p, scratch, aux, g[r] + off, len, 0, body,
			      (u32)cap, &used);
		if (bl < 0 || used != k)
			abort();
		c->add(&call, acc + off, len, 0, k, aux, body, (u32)bl);
	}
	call.seed = gn_draw_seed(job, id, no, (u32)owner, 1);
	if (c->result(&call, acc + off, NULL, NULL, len, off, scratch, &aux))
		abort();
	bl = c->slice(call.p, scratch, aux, acc + off, len, 0, body, (u32)cap,
		      &used);
	if (bl < 0 || used != k)
		abort();
	c->decode(&call, res + off, len, 0, k, aux, body, (u32)bl);
	free(idx);
	free(tmp);
}

/*
 * The single-process reference of one tensor, chunk by chunk as the
 * collective composes the codec's operations: the owner's sum starts as
 * its own share (as it is, or as its encoding stands for it); every other
 * rank's chunk, encoded under its key with its error feedback, is added
 * into it by rank; the owner turns the sum into its result under its own
 * key (with its error feedback where the codec keeps one) and that is
 * decoded. Steps are numbered from 1, the tensor is 100 + @k, the job
 * s->job_id (which a stochastic codec's reference needs). @skip[step]
 * marks steps that failed (error feedback kept). Returns the per-step
 * hashes in @hash and the last result in @res. The entropy stage of a
 * tensor's parameters (entropy=zstd) is lossless, so the reference leaves
 * it out: it models the stage as the identity on values.
 */
static inline void job_reference(const struct job_spec *s, int k,
				 const bool *skip, uint64_t *hash, float *res)
{
	size_t n = s->elems[k], j_lo, j_hi, off;
	unsigned int chunk = s->chunk ? s->chunk : 65536;
	struct gn_codec_spec spec;
	const struct gn_codec_ops *c = job_codec(s, k, &spec);
	bool ef = c->flags & GN_CODEC_EF_REDUCE;
	bool efr = c->flags & GN_CODEC_EF_RESULT;
	int W = s->world, step, j, r;
	float **g = calloc((size_t)W, sizeof(float *));
	float **e = calloc((size_t)W, sizeof(float *));
	float *eag = calloc(n, sizeof(float)), *acc = calloc(n, sizeof(float));
	float **e_try = calloc((size_t)W, sizeof(float *));
	float *eag_try = malloc(n * sizeof(float));
	u64 cap = c->bound(&spec.p, chunk);
	u8 *scratch = malloc(c->scratch(&spec.p, chunk) + 1);
	u8 *body = malloc(cap + 1);

	if ((c->flags & GN_CODEC_STOCHASTIC) && !s->job_id) {
		fprintf(stderr, "job: codec %s draws from the generator: give the job a job_id\n",
			c->name);
		abort();
	}
	for (r = 0; r < W; r++) {
		g[r] = malloc(n * sizeof(float));
		e[r] = calloc(n, sizeof(float));
		e_try[r] = malloc(n * sizeof(float));
	}
	for (step = 0; step < s->steps; step++) {
		u32 no = (u32)step + 1, id = 100 + (u32)k, gno = 0;

		for (r = 0; r < W; r++) {
			if (s->grad)
				s->grad(g[r], n, r, k, step, s->grad_arg);
			else
				job_grad(g[r], n, r, k, step);
			memcpy(e_try[r], e[r], n * sizeof(float));
		}
		memcpy(eag_try, eag, n * sizeof(float));
		memset(res, 0, n * sizeof(float));
		memset(acc, 0, n * sizeof(float));
		for (j = 0; j < W; j++) {
			j_lo = (size_t)((unsigned __int128)n * (unsigned)j / (unsigned)W);
			j_hi = (size_t)((unsigned __int128)n * (unsigned)(j + 1) / (unsigned)W);
			for (off = j_lo; off < j_hi; off += chunk) {
				u32 len = (u32)(j_hi - off < chunk ? j_hi - off : chunk);
				struct gn_codec_call call = {
					.p = &spec.p, .world = (u32)W, .ef_len = 0,
					.average = s->flags[k] & GN_TENSOR_AVERAGE,
				};
				u32 aux, used;
				long bl;

				if (c->flags & GN_CODEC_INDEX_ROUND) {
					job_index_chunk(c, call, g, e_try,
							gno++, j, off, len, id, no,
							s->job_id, acc, res,
							scratch, body, cap);
					continue;
				}
				memcpy(acc + off, g[j] + off, len * sizeof(float));
				call.seed = gn_draw_seed(s->job_id, id, no, (u32)j, 0);
				if ((c->flags & GN_CODEC_OWN_ENCODED) && c->own) {
					job_slice(c, &call, g[j] + off,
						  ef ? e_try[j] + off : NULL, len, off,
						  scratch, body, cap, &aux);
					c->own(&call, scratch, aux, acc + off, len);
				}
				for (r = 0; r < W; r++) {
					if (r == j)
						continue;
					call.seed = gn_draw_seed(s->job_id, id, no,
								(u32)r, 0);
					bl = job_slice(c, &call, g[r] + off,
						       ef ? e_try[r] + off : NULL, len,
						       off, scratch, body, cap, &aux);
					c->add(&call, acc + off, len, 0,
					       c->units(len), aux, body, (u32)bl);
				}
				call.seed = gn_draw_seed(s->job_id, id, no, (u32)j, 1);
				if (c->result(&call, acc + off,
					      efr ? eag_try + off : NULL,
					      efr ? eag_try + off : NULL, len, off,
					      scratch, &aux))
					abort();
				bl = c->slice(&spec.p, scratch, aux, acc + off, len, 0,
					      body, (u32)cap, &used);
				if (bl < 0 || used != c->units(len))
					abort();
				c->decode(&call, res + off, len, 0, used, aux, body,
					  (u32)bl);
			}
		}
		hash[step] = job_fnv(res, n);
		if (skip && skip[step])
			continue;
		for (r = 0; r < W; r++)
			memcpy(e[r], e_try[r], n * sizeof(float));
		memcpy(eag, eag_try, n * sizeof(float));
	}
	for (r = 0; r < W; r++) {
		free(g[r]);
		free(e[r]);
		free(e_try[r]);
	}
	free(g);
	free(e);
	free(e_try);
	free(eag);
	free(eag_try);
	free(acc);
	free(scratch);
	free(body);
}

#endif /* GN_TEST_JOB_H */
