// SPDX-License-Identifier: MIT
/*
 * step.c - steps: one allreduce of one tensor, from its first packet or
 * its start to its result or failure, its messages, and its deadline.
 *
 * Error feedback is double-buffered: a step reads one buffer and writes
 * the other, and only a completed step flips them, so a failed step leaves
 * the error feedback as it was.
 */
#include "core.h"

/* Step @no of @t in the tensor's slot for its parity, cleared. */
struct gn_step *gn_step_new(struct gn_ctx *ctx, struct gn_tensor *t, u32 no)
{
	struct gn_step *st = &t->steps[no & 1];
	void *mem = st->mem;
	size_t len = st->mem_len;

	if (st->live)
		return NULL;	/* cannot be: the other step has the other parity */
	memset(st, 0, sizeof(*st));
	st->mem = mem;
	st->mem_len = len;
	memset(mem, 0, len);
	gn_step_carve(ctx, t, st);
	st->t = t;
	st->no = no;
	st->live = true;
	st->gat_left = t->chunks_total;
	if (gn_index_round(t))
		gn_index_step_init(ctx, st);
	return st;
}

/* Forget what the step received; held packets go back. */
static void step_release_rx(struct gn_ctx *ctx, struct gn_step *st)
{
	struct gn_tensor *t = st->t;
	u32 i, k, own = t->chunks[ctx->rank];

	for (i = 0; i < (u32)ctx->world * own + t->chunks_total; i++) {
		struct gn_rx *rx = i < (u32)ctx->world * own ? &st->red[i] :
				   &st->gat[i - (u32)ctx->world * own];

		for (k = 0; k < rx->held_n; k++)
			gn_dl_buf_put(&ctx->dl, rx->held[k]);
		rx->held_n = 0;
		gn_dl_rx_clear(&ctx->dl, &rx->m);
	}
	ctx->work_n -= st->todo_n;
	st->todo_n = 0;
	memset(st->todo, 0, own);
	if (gn_index_round(t))
		gn_index_release(ctx, st);
}

/*
 * A step is over: its reduce messages are delivered or moot; its results
 * may still be needed by slower ranks unless it failed.
 */
static void step_drop_msgs(struct gn_ctx *ctx, struct gn_step *st)
{
	struct gn_tensor *t = st->t;
	u32 i, lo = t->gat_off[ctx->rank], hi = lo + t->chunks[ctx->rank];

	for (i = 0; i < t->chunks_total; i++) {
		struct gn_txmsg *m = t->msg[st->no & 1][i];

		if (m->owner != st || !m->busy)
			continue;
		if (!st->err && i >= lo && i < hi)
			continue;
		gn_dl_msg_cancel(&ctx->dl, m);
	}
	if (gn_index_round(t))
		gn_index_drop_msgs(ctx, st);
}

void gn_step_free(struct gn_ctx *ctx, struct gn_step *st)
{
	if (!st || !st->live)
		return;
	step_release_rx(ctx, st);
	step_drop_msgs(ctx, st);
	st->live = false;
}

/*
 * The message of slot @idx for step @st. One of the step two before may
 * still be owed to a slow receiver (every rank is past that step, but an
 * acknowledgement may be lost): it keeps going as an orphan, and the slot
 * gets a new one. Orphans are rare, so this is the one allocation on the
 * step path, and only when they happen.
 */
struct gn_txmsg *gn_step_msg(struct gn_ctx *ctx, struct gn_step *st, u32 idx)
{
	return gn_slot_msg(ctx, &st->t->msg[st->no & 1][idx]);
}

/* The message in @slot, cleared, or a fresh one if that one is owed. */
struct gn_txmsg *gn_slot_msg(struct gn_ctx *ctx, struct gn_txmsg **slot)
{
	struct gn_txmsg *m = *slot, *fresh;

	if (!m->busy) {
		gn_dl_msg_clear(&ctx->dl, m);
		return m;
	}
	fresh = gn_dl_msg_new(&ctx->dl, m->rows, m->cap);
	if (!fresh)
		return NULL;
	m->up_next = ctx->orphans;
	ctx->orphans = m;
	ctx->orphans_made++;
	*slot = fresh;
	return fresh;
}

/* Orphans that are delivered are freed. */
static void orphans_sweep(struct gn_ctx *ctx)
{
	struct gn_txmsg **pp = &ctx->orphans;

	while (*pp) {
		struct gn_txmsg *m = *pp;

		if (m->busy) {
			pp = &m->up_next;
			continue;
		}
		*pp = m->up_next;
		gn_dl_msg_free(&ctx->dl, m);
	}
}

/* The step's outcome is known: tell the waiter. */
void gn_step_report(struct gn_ctx *ctx, struct gn_step *st)
{
	struct gn_tensor *t = st->t;

	if (!st->started)
		return;
	t->done_no = st->no;
	t->done_err = st->err;
	snprintf(t->done_msg, sizeof(t->done_msg), "%s", st->errmsg);
	gn_env_wake(ctx->env);
}

/*
 * Fail a step: drop what it sent and received. A started step stays as
 * t->cur (the caller's thread may still be compressing into it) until the
 * next start frees it; an early one keeps its error for that start.
 */
void gn_step_fail(struct gn_ctx *ctx, struct gn_step *st, int err,
		  const char *msg)
{
	if (st->err || st->done)
		return;
	st->err = err;
	snprintf(st->errmsg, sizeof(st->errmsg), "%s", msg);
	step_release_rx(ctx, st);
	step_drop_msgs(ctx, st);
	gn_step_report(ctx, st);
}

void gn_abort_peers(struct gn_ctx *ctx, struct gn_step *st, int err,
		    int culprit)
{
	int i;

	for (i = 0; i < ctx->world; i++)
		if (i != ctx->rank && !ctx->dl.peers[i].dead)
			gn_dl_ctrl_send(&ctx->dl, i, GN_CTRL_ABORT, 0, st->t->id,
					st->no, st->t->cd->id, (u64)-err,
					(u32)culprit, NULL);
	gn_dl_kick(&ctx->dl);
}

void gn_step_abort(struct gn_ctx *ctx, struct gn_step *st, int err,
		   const char *why)
{
	char msg[GN_ERRMSG_LEN];

	snprintf(msg, sizeof(msg), "tensor %u step %u: %s", st->t->id, st->no,
		 why);
	gn_step_fail(ctx, st, err, msg);
	gn_abort_peers(ctx, st, err, ctx->rank);
}

static void step_complete(struct gn_ctx *ctx, struct gn_step *st)
{
	struct gn_tensor *t = st->t;

	struct gn_event ev = { .type = GN_EV_STEP, .peer = -1, .tensor = t->id,
			       .step = st->no, .flow = &t->stats,
			       .ns = gn_env_now(ctx->env) - st->start_ns };

	st->done = true;
	t->e_cur ^= 1;
	gn_dl_account(&ctx->dl, &ev);
	gn_step_report(ctx, st);
	t->cur = t->early;
	t->early = NULL;
	/* Still compressing (the last shard just went out): the caller's
	 * thread frees it when it is done. */
	if (!st->encoding)
		gn_step_free(ctx, st);
}

void gn_step_gathered(struct gn_ctx *ctx, struct gn_step *st)
{
	if (!--st->gat_left)
		step_complete(ctx, st);
}

void gn_fail_all(struct gn_ctx *ctx, int err, const char *msg)
{
	struct gn_tensor *t;

	for (t = ctx->tensors; t; t = t->next) {
		if (t->cur)
			gn_step_fail(ctx, t->cur, err, msg);
		if (t->early)
			gn_step_fail(ctx, t->early, err, msg);
	}
}

/*
 * The step a packet belongs to: the current one, or the next one if a
 * faster peer is already there. Older steps are over: the sender gets an
 * acknowledgement so it stops, the packet is dropped as a replay.
 */
struct gn_step *gn_step_for(struct gn_ctx *ctx, struct gn_tensor *t, u32 no,
			    bool *stale)
{
	*stale = false;
	if (t->cur && t->cur->no == no)
		return t->cur;
	if (t->early && t->early->no == no)
		return t->early;
	if (no == t->stepno + 1) {
		struct gn_step *st;

		if (t->cur && (t->cur->done || t->cur->err) &&
		    !t->cur->encoding) {
			gn_step_free(ctx, t->cur);
			t->cur = NULL;
		}
		if (t->cur && t->early)
			return NULL;
		st = gn_step_new(ctx, t, no);
		if (!st)
			return NULL;
		gn_aborts_due(ctx, st);
		if (!t->cur)
			t->cur = st;
		else
			t->early = st;
		return st;
	}
	*stale = no <= t->stepno;
	return NULL;
}

/* Take over step @no of @t, or fail it right away (lock held). */
static struct gn_step *begin_step(struct gn_ctx *ctx, struct gn_tensor *t,
				  float *data)
{
	u32 no = t->stepno + 1;
	struct gn_step *st;

	orphans_sweep(ctx);
	/* An older step that failed or ended; not this one, which may have
	 * failed early on an abort from a peer. */
	if (t->cur && t->cur->no != no && (t->cur->err || t->cur->done) &&
	    !t->cur->encoding) {
		gn_step_free(ctx, t->cur);
		t->cur = NULL;
	}
	st = t->cur && t->cur->no == no ? t->cur : NULL;
	if (!st && t->early && t->early->no == no) {
		st = t->early;
		t->early = NULL;
	}
	if (!st) {
		st = gn_step_new(ctx, t, no);
		if (st)
			gn_aborts_due(ctx, st);
	}
	if (!st)
		return NULL;
	t->stepno = no;
	t->cur = st;
	st->started = true;
	st->start_ns = gn_env_now(ctx->env);
	st->data = data;
	if (t->proto_err && !st->err)
		gn_step_fail(ctx, st, -EPROTO, t->proto_msg);
	if (ctx->dl.dead_peer >= 0 && !st->err) {
		char msg[GN_ERRMSG_LEN];

		snprintf(msg, sizeof(msg), "%s is gone; the job cannot continue",
			 ctx->dl.peers[ctx->dl.dead_peer].name);
		gn_step_fail(ctx, st, -ETIMEDOUT, msg);
	}
	if (st->err)
		gn_step_report(ctx, st);
	return st;
}

int gn_core_allreduce_start(struct gn_ctx *ctx, u32 id, float *data)
{
	struct gn_tensor *t;
	struct gn_step *st;
	bool enc;
	u32 c;

	gn_env_lock(ctx->env);
	t = gn_tensor_find(ctx, id);
	if (!t) {
		snprintf(ctx->api_errmsg, sizeof(ctx->api_errmsg),
			 "tensor %u is not registered", id);
		gn_env_unlock(ctx->env);
		return -ENOENT;
	}
	if (t->busy) {
		snprintf(ctx->api_errmsg, sizeof(ctx->api_errmsg),
			 "tensor %u: allreduce already in flight; call gn_allreduce_wait() first",
			 id);
		gn_env_unlock(ctx->env);
		return -EBUSY;
	}
	st = begin_step(ctx, t, data);
	if (!st) {
		snprintf(ctx->api_errmsg, sizeof(ctx->api_errmsg),
			 "tensor %u: out of memory", id);
		gn_env_unlock(ctx->env);
		return -ENOMEM;
	}
	t->busy = true;
	st->encoding = enc = !st->err;
	if (enc) {
		/* Contributions that came early can be added up to our turn. */
		for (c = 0; c < t->chunks[ctx->rank]; c++)
			gn_want_work(ctx, st, c);
		gn_dl_kick(&ctx->dl);
	}
	gn_env_unlock(ctx->env);
	if (enc) {
		gn_encode_all(ctx, st);
		gn_env_lock(ctx->env);
		st->encoding = false;
		if (st->done)
			gn_step_free(ctx, st);
		gn_env_unlock(ctx->env);
	}
	return 0;
}

int gn_core_allreduce_done(struct gn_ctx *ctx, u32 id, int *err)
{
	struct gn_tensor *t = gn_tensor_find(ctx, id);

	if (!t || !t->busy) {
		snprintf(ctx->api_errmsg, sizeof(ctx->api_errmsg),
			 "tensor %u: no allreduce in flight", id);
		return t ? -EINVAL : -ENOENT;
	}
	if (t->done_no != t->stepno)
		return 0;
	*err = t->done_err;
	snprintf(ctx->api_errmsg, sizeof(ctx->api_errmsg), "%s",
		 t->done_err ? t->done_msg : "");
	t->busy = false;
	return 1;
}

/* What a step waits for, in gn_step_deadlines()'s messages. */
enum waiting {
	WAIT_SHARE,
	WAIT_RESULT,
	WAIT_INDEX,
};

/*
 * Peers this rank still waits for in @st, as names in @who: first a
 * leader whose index set has not come (every share of its chunk waits
 * for it), then those whose share of this rank's shard is incomplete; if
 * none, owners that sent no result at all. Returns the first such peer,
 * or -1. @kind tells which kind it found.
 */
static int waiting_for(const struct gn_ctx *ctx, const struct gn_step *st,
		       char *who, size_t cap, enum waiting *kind)
{
	const struct gn_tensor *t = st->t;
	u32 nc = t->chunks[ctx->rank], c;
	int j, first = -1, more = 0;

	*kind = WAIT_INDEX;
	if (gn_index_round(t))
		first = gn_index_missing(ctx, st);
	if (first >= 0) {
		snprintf(who, cap, "%s", ctx->dl.peers[first].name);
		return first;
	}
	*kind = WAIT_SHARE;
	for (j = 0; j < ctx->world; j++) {
		if (j == ctx->rank)
			continue;
		for (c = 0; c < nc && gn_rx_whole(&st->red[(size_t)j * nc + c]); c++)
			;
		if (c < nc && first < 0)
			first = j;
		else if (c < nc)
			more++;
	}
	for (j = 0; first < 0 && j < ctx->world; j++) {
		const struct gn_rx *g = &st->gat[t->gat_off[j]];

		if (j == ctx->rank || !t->chunks[j])
			continue;
		for (c = 0; c < t->chunks[j] && !g[c].m.npkts; c++)
			;
		if (c == t->chunks[j]) {
			first = j;
			*kind = WAIT_RESULT;
		}
	}
	if (first >= 0)
		snprintf(who, cap, more ? "%s and %d more" : "%s",
			 ctx->dl.peers[first].name, more);
	return first;
}

/*
 * A peer that is alive (it answers pings) but never sends its share, say
 * a trainer stuck in its data loader, would hold the others forever. A
 * step still short of a peer's share step_timeout_ns after this rank
 * started it fails here and, by an abort, on every rank. That keeps the
 * ranks in step: while a share is missing at this owner, no rank can
 * have finished, since every rank needs this owner's result. An owner
 * that sent no result at all is given half as long again, so that the
 * owner that lacks a share can time out first and name the real culprit.
 */
void gn_step_deadlines(struct gn_ctx *ctx)
{
	struct gn_tensor *t;
	u64 now = ctx->dl.now_ns;

	if (!ctx->step_timeout_ns || now < ctx->deadlines_ns)
		return;
	ctx->deadlines_ns = now + 50000000ull;
	for (t = ctx->tensors; t; t = t->next) {
		struct gn_step *st = t->cur;
		u64 age, ms = ctx->step_timeout_ns / 1000000;
		char who[GN_ERRMSG_LEN / 2], msg[GN_ERRMSG_LEN];
		enum waiting kind;
		int j;

		if (!st || !st->started || st->done || st->err)
			continue;
		age = now - st->start_ns;
		if (age <= ctx->step_timeout_ns)
			continue;
		j = waiting_for(ctx, st, who, sizeof(who), &kind);
		if (j < 0 || (kind == WAIT_RESULT &&
			      age <= ctx->step_timeout_ns * 3 / 2))
			continue;
		snprintf(msg, sizeof(msg),
			 kind == WAIT_RESULT ? "tensor %u step %u: no result from %s within %llu ms; step failed on every rank" :
			 kind == WAIT_INDEX ? "tensor %u step %u: no index set from its leader %s within %llu ms (is it calling allreduce for this tensor?); step failed on every rank" :
			 "tensor %u step %u: no share from %s within %llu ms (is it calling allreduce for this tensor?); step failed on every rank",
			 t->id, st->no, who, (unsigned long long)ms);
		gn_step_fail(ctx, st, -ETIMEDOUT, msg);
		gn_abort_peers(ctx, st, -ETIMEDOUT, j);
	}
}
