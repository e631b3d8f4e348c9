// SPDX-License-Identifier: MIT
/*
 * fault.c - a transport that wraps another and loses, duplicates and
 * reorders outgoing packets, for tests of the reliability layer. Enabled
 * only by the environment variable
 *	GN_TEST_FAULTS=loss=0.01,dup=0.05,reorder=0.05,seed=7
 * (probabilities per packet). Reordered packets are held back (a
 * reference, not a copy) and go out after the packets of a later send
 * call, or when the driver next waits. phase=N limits the faults to the
 * data packets of that phase (2: CLT-k's index sets).
 *
 * For tests of freshness across runs, record=PATH appends every packet
 * this rank sends (le16 peer, le16 length, the bytes) to PATH, and
 * replay=PATH sends such a recording again, to the same peers, from this
 * rank's socket: one recorded packet after each packet of this run, from
 * the start of the recording again when it is used up. What a peer then
 * receives is what an attacker replaying the earlier run from this rank's
 * address would send.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define HELD_MAX 256

struct fault {
	struct gn_transport inner;
	double loss, dup, reorder;
	int phase;			/* faults only for data of this phase; -1: all */
	u64 rng;
	char record[128], replay[128];
	FILE *rec;
	u8 *rep;			/* the recording to replay */
	size_t rep_len, rep_at;
	/* The driver (send, wait) and an API call (a control message from
	 * gn_tensor_register()) may both send: guards what follows. */
	pthread_mutex_t lock;
	int held_n;
	struct {
		struct gn_buf *b;	/* one reference of ours */
		u16 peer;		/* the core may reuse ->peer meanwhile */
	} held[HELD_MAX];
	struct gn_buf *out[HELD_MAX * 2];
};

static double unit(struct fault *f)
{
	f->rng ^= f->rng << 13;
	f->rng ^= f->rng >> 7;
	f->rng ^= f->rng << 17;
	return (double)(f->rng >> 11) * (1.0 / 9007199254740992.0);
}

/* Parse "key=value,..." into the probabilities; unknown keys are errors. */
static int parse(struct fault *f, const char *spec)
{
	char buf[256], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", spec);
	f->rng = 0x9e3779b97f4a7c15ull;
	f->phase = -1;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		double v;

		if (!eq)
			return -EINVAL;
		*eq = 0;
		v = strtod(eq + 1, NULL);
		if (!strcmp(tok, "record"))
			snprintf(f->record, sizeof(f->record), "%s", eq + 1);
		else if (!strcmp(tok, "replay"))
			snprintf(f->replay, sizeof(f->replay), "%s", eq + 1);
		else if (!strcmp(tok, "loss"))
			f->loss = v;
		else if (!strcmp(tok, "dup"))
			f->dup = v;
		else if (!strcmp(tok, "reorder"))
			f->reorder = v;
		else if (!strcmp(tok, "phase"))
			f->phase = (int)v;
		else if (!strcmp(tok, "seed"))
			f->rng ^= (u64)v * 0xbf58476d1ce4e5b9ull;
		else
			return -EINVAL;
	}
	return 0;
}

/* Read the whole recording to replay; -errno if it cannot be had. */
static int load_replay(struct fault *f)
{
	FILE *in = fopen(f->replay, "rb");
	long len;

	if (!in)
		return -errno;
	if (fseek(in, 0, SEEK_END) || (len = ftell(in)) <= 0 ||
	    fseek(in, 0, SEEK_SET)) {
		fclose(in);
		return -EINVAL;
	}
	f->rep = malloc((size_t)len);
	if (!f->rep || fread(f->rep, 1, (size_t)len, in) != (size_t)len) {
		fclose(in);
		return -EIO;
	}
	fclose(in);
	f->rep_len = (size_t)len;
	return 0;
}

static void fault_free(struct fault *f)
{
	pthread_mutex_destroy(&f->lock);
	if (f->rec)
		fclose(f->rec);
	free(f->rep);
	free(f);
}

static void record(struct fault *f, const struct gn_buf *b)
{
	u8 head[4] = { (u8)b->peer, (u8)(b->peer >> 8), (u8)b->len,
		       (u8)(b->len >> 8) };

	fwrite(head, 1, sizeof(head), f->rec);
	fwrite(b->data, 1, b->len, f->rec);
	fflush(f->rec);
}

/* Send the next @n packets of the recording, as they were recorded. */
static void replay(struct fault *f, int n)
{
	const struct gn_transport_ops *in = f->inner.ops;
	struct gn_buf *b;
	u16 peer, len;

	while (n-- > 0) {
		if (f->rep_at + 4 > f->rep_len)
			f->rep_at = 0;
		peer = (u16)(f->rep[f->rep_at] | f->rep[f->rep_at + 1] << 8);
		len = (u16)(f->rep[f->rep_at + 2] | f->rep[f->rep_at + 3] << 8);
		if (f->rep_at + 4 + len > f->rep_len) {
			f->rep_at = 0;
			continue;
		}
		/* A packet of a run with bigger buffers cannot be sent here. */
		if (len > f->inner.caps.max_pkt) {
			f->rep_at += 4 + (size_t)len;
			continue;
		}
		b = in->get(f->inner.state);
		if (!b)
			return;
		memcpy(b->data, f->rep + f->rep_at + 4, len);
		b->len = len;
		b->peer = peer;
		f->rep_at += 4 + (size_t)len;
		in->send(f->inner.state, &b, 1);
		in->put(f->inner.state, b);
	}
}

/* Send the first @n held packets and forget them. */
static void release_held(struct fault *f, int n)
{
	const struct gn_transport_ops *in = f->inner.ops;
	int i;

	for (i = 0; i < n; i++) {
		f->held[i].b->peer = f->held[i].peer;
		f->out[i] = f->held[i].b;
	}
	if (n)
		in->send(f->inner.state, f->out, n);
	for (i = 0; i < n; i++)
		in->put(f->inner.state, f->held[i].b);
	memmove(f->held, f->held + n, (size_t)(f->held_n - n) * sizeof(f->held[0]));
	f->held_n -= n;
}

/* Is @b one the faults are for? */
static bool faulty(const struct fault *f, const struct gn_buf *b)
{
	if (f->phase < 0)
		return true;
	return b->len > GN_WIRE_HDR_LEN &&
	       (b->data[3] == GN_PKT_DATA || b->data[3] == GN_PKT_WHOLE) &&
	       b->data[22] == f->phase;
}

/* Every packet counts as sent: what is lost or held is the network's. */
static int fault_send(void *state, struct gn_buf *const *b, int n)
{
	struct fault *f = state;
	const struct gn_transport_ops *in = f->inner.ops;
	int i, k = 0, held_before;

	pthread_mutex_lock(&f->lock);
	held_before = f->held_n;
	for (i = 0; i < n; i++) {
		if (f->rec)
			record(f, b[i]);
		if (!faulty(f, b[i])) {
			f->out[k++] = b[i];
		} else if (unit(f) < f->loss) {
			continue;
		} else if (f->held_n < HELD_MAX && unit(f) < f->reorder) {
			in->hold(f->inner.state, b[i]);
			f->held[f->held_n].b = b[i];
			f->held[f->held_n].peer = b[i]->peer;
			f->held_n++;
			continue;
		} else {
			f->out[k++] = b[i];
			if (unit(f) < f->dup && k < HELD_MAX * 2)
				f->out[k++] = b[i];
		}
		if (k >= HELD_MAX * 2 - 1) {
			in->send(f->inner.state, f->out, k);
			k = 0;
		}
	}
	if (k)
		in->send(f->inner.state, f->out, k);
	/* Packets held in an earlier call go out now, after later ones. */
	release_held(f, held_before);
	if (f->rep)
		replay(f, n);
	pthread_mutex_unlock(&f->lock);
	return n;
}

static struct gn_buf *fault_get(void *state)
{
	struct fault *f = state;

	return f->inner.ops->get(f->inner.state);
}

static void fault_hold(void *state, struct gn_buf *b)
{
	struct fault *f = state;

	f->inner.ops->hold(f->inner.state, b);
}

static void fault_put(void *state, struct gn_buf *b)
{
	struct fault *f = state;

	f->inner.ops->put(f->inner.state, b);
}

static int fault_recv(void *state, struct gn_buf **b, int max)
{
	struct fault *f = state;

	return f->inner.ops->recv(f->inner.state, b, max);
}

static void fault_authentic(void *state, struct gn_buf *b)
{
	struct fault *f = state;

	if (f->inner.ops->authentic)
		f->inner.ops->authentic(f->inner.state, b);
}

static int fault_poll(void *state, u64 now_ns, u64 *next_ns)
{
	struct fault *f = state;

	if (!f->inner.ops->poll)
		return 0;
	return f->inner.ops->poll(f->inner.state, now_ns, next_ns);
}

static int fault_wait(void *state, int timeout_ms)
{
	struct fault *f = state;

	pthread_mutex_lock(&f->lock);
	if (f->held_n)
		release_held(f, f->held_n);
	pthread_mutex_unlock(&f->lock);
	return f->inner.ops->wait(f->inner.state, timeout_ms);
}

static void fault_wake(void *state)
{
	struct fault *f = state;

	f->inner.ops->wake(f->inner.state);
}

/* What is still held never goes out: lost, as in a network that died. */
static void fault_close(void *state)
{
	struct fault *f = state;
	int i;

	for (i = 0; i < f->held_n; i++)
		f->inner.ops->put(f->inner.state, f->held[i].b);
	f->inner.ops->close(f->inner.state);
	fault_free(f);
}

static const struct gn_transport_ops fault_ops = {
	.name = "fault",
	.get = fault_get,
	.hold = fault_hold,
	.put = fault_put,
	.send = fault_send,
	.recv = fault_recv,
	.authentic = fault_authentic,
	.poll = fault_poll,
	.wait = fault_wait,
	.wake = fault_wake,
	.close = fault_close,
};

/*
 * Put @tp behind GN_TEST_FAULTS, in place: its table and state move
 * inside the wrapper, which closes them when it is closed.
 */
int gn_fault_wrap(struct gn_transport *tp)
{
	const char *spec = getenv("GN_TEST_FAULTS");
	struct fault *f;
	int r;

	if (!spec || !*spec)
		return 0;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	pthread_mutex_init(&f->lock, NULL);
	r = parse(f, spec);
	if (r)
		goto out_free;
	if (f->record[0] && !(f->rec = fopen(f->record, "ab"))) {
		r = -errno;
		goto out_free;
	}
	if (f->replay[0] && (r = load_replay(f)))
		goto out_free;
	f->inner = *tp;
	tp->ops = &fault_ops;
	tp->state = f;
	return 0;

out_free:
	fault_free(f);
	return r;
}
