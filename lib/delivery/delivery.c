// SPDX-License-Identifier: MIT
/*
 * delivery.c - the delivery state of a context: set up and torn down, the
 * poll that runs everything due, and the counting of packet events.
 */
#include "delivery.h"

#define CWND_START (256 * GN_CWND_ONE)
#define CWND_START_SSTHRESH (4096 * GN_CWND_ONE)
#define RTO_START_NS 20000000ull

void gn_dl_set_err(char *buf, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, GN_ERRMSG_LEN, fmt, ap);
	va_end(ap);
}

/* The job key and this rank's HELLO key now; room for the sender keys. */
static int keys_init(struct gn_dl *dl, const u8 *key)
{
	if (!key) {
		dl->insecure = true;
		return 0;
	}
	dl->keys_size = sizeof(*dl->keys) +
			(size_t)dl->world * sizeof(dl->keys->sender[0]);
	dl->keys = gn_alloc(dl->env, dl->keys_size);
	if (!dl->keys)
		return -ENOMEM;
	memcpy(dl->keys->job, key, GN_MAC_KEY_LEN);
	return gn_wire_hello_key(dl->keys->hello, key, (u16)dl->rank,
				 dl->instance);
}

int gn_dl_init(struct gn_dl *dl, const struct gn_dl_conf *c,
	       const struct gn_env *env, struct gn_transport *tp,
	       const struct gn_dl_up *up, void *up_arg)
{
	int i, r;

	dl->rank = c->rank;
	dl->world = c->world;
	dl->job = c->job;
	dl->version = c->version;
	dl->mtu = c->mtu;
	dl->max_pkt = c->max_pkt;
	dl->chunk = c->chunk;
	dl->timeout_ns = c->timeout_ns;
	dl->env = env;
	dl->tp = tp;
	dl->up = up;
	dl->up_arg = up_arg;
	dl->dead_peer = -1;
	dl->on_session = c->on_session;
	dl->seal_flags = c->clear ? GN_SEAL_CLEAR : 0;
	r = gn_env_random(env, &dl->instance, sizeof(dl->instance));
	if (r)
		return r;
	/* The session key is only as fresh as these bytes are random. */
	if (!dl->instance)
		dl->instance = 1;
	dl->peers = gn_alloc_array(env, (size_t)c->world, sizeof(*dl->peers));
	dl->session_info = gn_alloc(env, gn_dl_session_info_len(c->world));
	if (!dl->peers || !dl->session_info)
		return -ENOMEM;
	for (i = 0; i < c->world; i++) {
		struct gn_peer *p = &dl->peers[i];

		p->rank = i;
		snprintf(p->name, sizeof(p->name), "rank %d", i);
		p->rto_ns = RTO_START_NS;
		p->cwnd = CWND_START;
		p->ssthresh = CWND_START_SSTHRESH;
	}
	r = gn_dl_reserve(dl, 64, 64);
	if (r)
		return r;
	return keys_init(dl, c->key);
}

void gn_dl_destroy(struct gn_dl *dl)
{
	u32 i;

	gn_dl_account_flush(dl);
	while (dl->park_n)
		gn_dl_buf_put(dl, gn_dl_park_pop(dl));
	/* Data messages are freed above; control messages end up here. */
	for (i = 0; dl->msg_tab && i <= dl->msg_mask; i++)
		while (dl->msg_tab[i]) {
			struct gn_txmsg *m = dl->msg_tab[i];

			gn_dl_msg_cancel(dl, m);
			if (dl->msg_tab[i] == m)	/* cannot be; never loop */
				gn_dl_msg_hash_del(dl, m);
		}
	while (dl->ctrl_free) {
		struct gn_txmsg *m = dl->ctrl_free;

		dl->ctrl_free = m->hnext;
		gn_free(dl->env, m);
	}
	gn_free(dl->env, dl->msg_tab);
	gn_free(dl->env, dl->ackq);
	gn_free(dl->env, dl->peers);
	gn_free(dl->env, dl->session_info);
	/* Leave no key in the heap. */
	if (dl->keys)
		gn_memzero_explicit(dl->keys, dl->keys_size);
	gn_free(dl->env, dl->keys);
}

static void msg_tab_put(struct gn_txmsg **tab, u32 mask, struct gn_txmsg *m);

/*
 * Room for @msgs more messages in the identity table and @acks more
 * entries in the acknowledgement queue. Called when a tensor is
 * registered, so the packet path never allocates.
 */
int gn_dl_reserve(struct gn_dl *dl, u32 msgs, u32 acks)
{
	u32 want = dl->msg_room + msgs, size = dl->msg_tab ? dl->msg_mask + 1 : 0;

	if (want > size) {
		struct gn_txmsg **tab;
		u32 n = size ? size : 64, i;

		while (n < want)
			n *= 2;
		tab = gn_alloc_array(dl->env, n, sizeof(*tab));
		if (!tab)
			return -ENOMEM;
		for (i = 0; i < size; i++)
			while (dl->msg_tab[i]) {
				struct gn_txmsg *m = dl->msg_tab[i];

				dl->msg_tab[i] = m->hnext;
				msg_tab_put(tab, n - 1, m);
			}
		gn_free(dl->env, dl->msg_tab);
		dl->msg_tab = tab;
		dl->msg_mask = n - 1;
	}
	dl->msg_room = want;
	want = dl->ack_room + acks;
	if (want > dl->ackq_cap) {
		struct gn_ackq *q = gn_alloc_array(dl->env, want, sizeof(*q));

		if (!q)
			return -ENOMEM;
		if (dl->ackq_n)
			memcpy(q, dl->ackq, dl->ackq_n * sizeof(*q));
		gn_free(dl->env, dl->ackq);
		dl->ackq = q;
		dl->ackq_cap = want;
	}
	dl->ack_room = want;
	return 0;
}

/* A tensor is gone: its reservation may serve the next one. */
void gn_dl_unreserve(struct gn_dl *dl, u32 msgs, u32 acks)
{
	dl->msg_room -= msgs < dl->msg_room ? msgs : dl->msg_room;
	dl->ack_room -= acks < dl->ack_room ? acks : dl->ack_room;
}

static u32 msg_hash(u32 tensor, u32 step, u8 phase, u64 off)
{
	u64 k = ((u64)tensor << 32 | step) * 0x9e3779b97f4a7c15ull;

	k ^= (off + phase) * 0xc2b2ae3d27d4eb4full;
	return (u32)(k >> 32);
}

static void msg_tab_put(struct gn_txmsg **tab, u32 mask, struct gn_txmsg *m)
{
	u32 i = msg_hash(m->tensor, m->stepno, m->phase, m->chunk_off) & mask;

	m->hnext = tab[i];
	tab[i] = m;
}

void gn_dl_msg_hash_add(struct gn_dl *dl, struct gn_txmsg *m)
{
	msg_tab_put(dl->msg_tab, dl->msg_mask, m);
	dl->msg_count++;
}

void gn_dl_msg_hash_del(struct gn_dl *dl, struct gn_txmsg *m)
{
	u32 i = msg_hash(m->tensor, m->stepno, m->phase, m->chunk_off) &
		dl->msg_mask;
	struct gn_txmsg **pp;

	for (pp = &dl->msg_tab[i]; *pp; pp = &(*pp)->hnext)
		if (*pp == m) {
			*pp = m->hnext;
			m->hnext = NULL;
			dl->msg_count--;
			return;
		}
}

/* The message an acknowledgement from @peer names, or NULL: O(1). */
struct gn_txmsg *gn_dl_msg_find(struct gn_dl *dl, int peer, u32 tensor,
				u32 step, u8 phase, u64 off)
{
	struct gn_txmsg *m;

	m = dl->msg_tab[msg_hash(tensor, step, phase, off) & dl->msg_mask];
	for (; m; m = m->hnext)
		if (m->tensor == tensor && m->stepno == step &&
		    m->phase == phase && m->chunk_off == off &&
		    (m->to == peer || m->to == GN_RANK_ALL))
			return m;
	return NULL;
}

void gn_dl_account_flush(struct gn_dl *dl)
{
	u32 i, n = dl->acct_n;

	dl->acct_n = 0;
	for (i = 0; i < n; i++)
		dl->up->account(dl->up_arg, &dl->acct[i]);
}

/* Same kind and flow: @p's count and bytes may take @ev's. */
static bool acct_same(const struct gn_event *p, const struct gn_event *ev)
{
	return p->type == ev->type && p->peer == ev->peer &&
	       p->tensor == ev->tensor && p->phase == ev->phase &&
	       p->reason == ev->reason && p->again == ev->again &&
	       p->count != (u32)-1;
}

/*
 * The upcall gets @ev later, folded into a held-back event of its flow:
 * a probe hit then stands for many packets, and the hits, not the
 * packets, are what tracing costs. Held back no longer than the poll half
 * (gn_dl_poll_rx(), gn_dl_poll_tx()) that ends with a flush; a step end
 * goes at once, after the events before it.
 */
static void acct_hold(struct gn_dl *dl, const struct gn_event *ev)
{
	struct gn_event *p;
	u32 i;

	if (ev->type == GN_EV_STEP) {
		struct gn_event one = *ev;

		gn_dl_account_flush(dl);
		one.count = 1;
		one.flow = NULL;
		dl->up->account(dl->up_arg, &one);
		return;
	}
	for (i = 0; i < dl->acct_n; i++) {
		p = &dl->acct[i];
		if (acct_same(p, ev)) {
			p->count++;
			p->wire_bytes += ev->wire_bytes;
			p->raw_bytes += ev->raw_bytes;
			p->stream_bytes += ev->stream_bytes;
			return;
		}
	}
	if (dl->acct_n == GN_ACCT_PENDING)
		gn_dl_account_flush(dl);
	p = &dl->acct[dl->acct_n++];
	*p = *ev;
	p->count = 1;
	p->flow = NULL;
}

/*
 * Every packet event is counted here and only here: the context's, the
 * peer's and the tensor's counters at once, then the upcall (probes),
 * coalesced.
 */
void gn_dl_account(struct gn_dl *dl, const struct gn_event *ev)
{
	struct gn_stats *s[3] = { &dl->stats,
				  ev->peer >= 0 ? &dl->peers[ev->peer].stats : NULL,
				  ev->flow };
	int k;

	for (k = 0; k < 3; k++) {
		if (!s[k])
			continue;
		switch (ev->type) {
		case GN_EV_MSG:
			s[k]->messages++;
			s[k]->raw_bytes += ev->raw_bytes;
			s[k]->stream_bytes += ev->stream_bytes;
			break;
		case GN_EV_TX:
			s[k]->tx_packets++;
			s[k]->wire_bytes += ev->wire_bytes;
			s[k]->retransmits += ev->again;
			break;
		case GN_EV_TX_CTL:
			s[k]->ctl_packets++;
			s[k]->ctl_bytes += ev->wire_bytes;
			break;
		case GN_EV_RX:
			s[k]->rx_packets++;
			s[k]->rx_wire_bytes += ev->wire_bytes;
			break;
		case GN_EV_DROP:
			s[k]->drops[ev->reason]++;
			break;
		case GN_EV_STEP:
			s[k]->allreduces++;
			break;
		}
	}
	if (dl->up->account)
		acct_hold(dl, ev);
}

void gn_dl_drop(struct gn_dl *dl, struct gn_peer *p, int reason)
{
	struct gn_event ev = { .type = GN_EV_DROP, .reason = (u8)reason,
			       .peer = p ? p->rank : -1 };

	gn_dl_account(dl, &ev);
}

bool gn_dl_owes(const struct gn_dl *dl)
{
	return dl->busy_msgs != 0;
}

/* The receive half of a poll: packets in, acknowledgements out. */
void gn_dl_poll_rx(struct gn_dl *dl)
{
	dl->now_ns = gn_env_now(dl->env);
	gn_dl_receive(dl);
	gn_dl_ack_maybe(dl);
	gn_dl_account_flush(dl);
}

/*
 * The send half: the handshake, liveness, what is due to every peer.
 * Return: the next time something falls due.
 */
u64 gn_dl_poll_tx(struct gn_dl *dl)
{
	u64 next, t;

	gn_dl_park_flush(dl);
	gn_dl_ack_maybe(dl);
	gn_dl_peers_tick(dl);
	if (dl->ready)
		gn_dl_pump(dl);
	next = gn_dl_peers_deadline(dl);
	if (dl->ready) {
		t = gn_dl_tx_deadline(dl);
		next = t < next ? t : next;
	}
	if (dl->ackq_n && dl->ack_due_ns < next)
		next = dl->ack_due_ns;
	/* What is parked goes as soon as the transport has room. */
	if (dl->park_n)
		next = dl->now_ns;
	gn_dl_account_flush(dl);
	return next;
}
