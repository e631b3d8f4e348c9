// SPDX-License-Identifier: MIT
/*
 * fault.c - a transport that wraps another and loses, duplicates and
 * reorders outgoing packets, for tests of the reliability layer. Enabled
 * only by the environment variable
 *	GN_TEST_FAULTS=loss=0.01,dup=0.05,reorder=0.05,seed=7
 * (probabilities per packet). Reordered packets are held back and go out
 * after the packets of a later send call.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define HELD_MAX 256

struct fault {
	const struct gn_transport_ops *inner;
	void *inner_state;
	const struct gn_addr *peers;
	double loss, dup, reorder;
	u64 rng;
	char record[128], replay[128];
	FILE *rec;
	u8 *rep;			/* the recording to replay */
	size_t rep_len, rep_at;
	/* The progress thread (send, wait) and an API call (a control
	 * message from gn_tensor_register()) both send: guards what follows. */
	pthread_mutex_t lock;
	int held_n;
	struct {
		u16 peer, len;
		u8 data[GN_WIRE_MAX_PKT];
	} held[HELD_MAX];
	struct gn_tx_pkt out[HELD_MAX * 2];
};

static const struct gn_transport_ops *inner_ops;

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

static int fault_open(const struct gn_addr *self, unsigned int max_pkt,
		      void **state)
{
	struct fault *f = calloc(1, sizeof(*f));
	int r;

	if (!f)
		return -ENOMEM;
	pthread_mutex_init(&f->lock, NULL);
	if (parse(f, getenv("GN_TEST_FAULTS"))) {
		fault_free(f);
		return -EINVAL;
	}
	if (f->record[0] && !(f->rec = fopen(f->record, "ab"))) {
		r = -errno;
		goto out_free;
	}
	if (f->replay[0] && (r = load_replay(f)))
		goto out_free;
	f->inner = inner_ops;
	r = f->inner->open(self, max_pkt, &f->inner_state);
	if (r)
		goto out_free;
	*state = f;
	return 0;

out_free:
	fault_free(f);
	return r;
}

static void fault_close(void *state)
{
	struct fault *f = state;

	f->inner->close(f->inner_state);
	fault_free(f);
}

static void record(struct fault *f, const struct gn_tx_pkt *p)
{
	u8 head[4] = { (u8)p->peer, (u8)(p->peer >> 8), (u8)p->len,
		       (u8)(p->len >> 8) };

	fwrite(head, 1, sizeof(head), f->rec);
	fwrite(p->data, 1, p->len, f->rec);
	fflush(f->rec);
}

/* Send the next @n packets of the recording, as they were recorded. */
static void replay(struct fault *f, const struct gn_addr *peers, int n)
{
	struct gn_tx_pkt p;

	while (n-- > 0) {
		if (f->rep_at + 4 > f->rep_len)
			f->rep_at = 0;
		p.peer = (u16)(f->rep[f->rep_at] | f->rep[f->rep_at + 1] << 8);
		p.len = (u16)(f->rep[f->rep_at + 2] | f->rep[f->rep_at + 3] << 8);
		p.data = f->rep + f->rep_at + 4;
		if (f->rep_at + 4 + p.len > f->rep_len) {
			f->rep_at = 0;
			continue;
		}
		f->rep_at += 4 + p.len;
		f->inner->send(f->inner_state, peers, &p, 1);
	}
}

/* Send the first @n held packets and forget them. */
static void release_held(struct fault *f, const struct gn_addr *peers, int n)
{
	int i;

	for (i = 0; i < n; i++)
		f->out[i] = (struct gn_tx_pkt){ f->held[i].data, f->held[i].len,
						f->held[i].peer };
	if (n)
		f->inner->send(f->inner_state, peers, f->out, n);
	memmove(f->held, f->held + n, (size_t)(f->held_n - n) * sizeof(f->held[0]));
	f->held_n -= n;
}

/* Every packet counts as sent: what is lost or held is the network's. */
static int fault_send(void *state, const struct gn_addr *peers,
		      const struct gn_tx_pkt *pkts, int n)
{
	struct fault *f = state;
	int i, k = 0, held_before;

	pthread_mutex_lock(&f->lock);
	held_before = f->held_n;
	f->peers = peers;
	for (i = 0; i < n; i++) {
		if (f->rec)
			record(f, &pkts[i]);
		if (unit(f) < f->loss)
			continue;
		if (f->held_n < HELD_MAX && unit(f) < f->reorder) {
			f->held[f->held_n].peer = pkts[i].peer;
			f->held[f->held_n].len = pkts[i].len;
			memcpy(f->held[f->held_n].data, pkts[i].data, pkts[i].len);
			f->held_n++;
			continue;
		}
		f->out[k++] = pkts[i];
		if (unit(f) < f->dup && k < HELD_MAX * 2)
			f->out[k++] = pkts[i];
		if (k >= HELD_MAX * 2 - 1) {
			f->inner->send(f->inner_state, peers, f->out, k);
			k = 0;
		}
	}
	if (k)
		f->inner->send(f->inner_state, peers, f->out, k);
	/* Packets held in an earlier call go out now, after later ones. */
	release_held(f, peers, held_before);
	if (f->rep)
		replay(f, peers, n);
	pthread_mutex_unlock(&f->lock);
	return n;
}

static int fault_recv(void *state, struct gn_rx_pkt *pkts, int max)
{
	struct fault *f = state;

	return f->inner->recv(f->inner_state, pkts, max);
}

static int fault_wait(void *state, int timeout_ms)
{
	struct fault *f = state;

	pthread_mutex_lock(&f->lock);
	if (f->held_n && f->peers)
		release_held(f, f->peers, f->held_n);
	pthread_mutex_unlock(&f->lock);
	return f->inner->wait(f->inner_state, timeout_ms);
}

static void fault_wake(void *state)
{
	struct fault *f = state;

	f->inner->wake(f->inner_state);
}

static const struct gn_transport_ops fault_ops = {
	.name = "fault",
	.open = fault_open,
	.close = fault_close,
	.send = fault_send,
	.recv = fault_recv,
	.wait = fault_wait,
	.wake = fault_wake,
};

/* The transport to use: @inner, or @inner behind faults if asked for. */
int gn_fault_wrap(const struct gn_transport_ops **ops)
{
	const char *spec = getenv("GN_TEST_FAULTS");
	struct fault *probe;
	int r;

	if (!spec || !*spec)
		return 0;
	probe = calloc(1, sizeof(*probe));
	if (!probe)
		return -ENOMEM;
	r = parse(probe, spec);
	free(probe);
	if (r)
		return r;
	inner_ops = *ops;
	*ops = &fault_ops;
	return 0;
}
