// SPDX-License-Identifier: MIT
/*
 * receive.c - every received packet: checked (length and header, source,
 * job, MAC, each failure counted by reason), then handed on by type;
 * duplicate detection of messages and of control messages, and the
 * acknowledgements that go back.
 */
#include "delivery.h"

/*
 * Acknowledgements wait up to ACK_DELAY_NS, so that one packet to a peer
 * carries those of many small messages; a burst of ACK_BURST packets is
 * acknowledged at once, which keeps a bulk sender's window moving. A
 * whole message whose receipt a packet this rank already sent back
 * implies (the layer above says which: an owner's result implies every
 * contribution to it, a contribution to the next step implies the last
 * result) is not acknowledged at all: in steady state the data packets
 * acknowledge each other, and ACKs are left for what lags behind. So a
 * whole message's entry may wait up to ACK_HOLD_NS for that packet,
 * unless an entry of the same peer queued after it must go now (an ACK
 * of later packets without it would make the sender's RACK take its
 * packets for lost) or the held entries cover a burst's worth of packets.
 * Only small messages wait: a large one's entry costs little next to its
 * data, and its sender's window must move. ACK_HOLD_NS stays well under
 * the senders' retransmission backstop; a sender that probes sooner (its
 * tail-loss probe, send.c) gets every entry at once with the PONG.
 */
#define ACK_DELAY_NS 2000000ull
#define ACK_HOLD_NS 4000000ull
#define ACK_HOLD_PKTS 4
#define ACK_BURST 32
#define RX_ROUNDS 16

static inline bool bit_get(const u8 *b, u32 i)
{
	return b[i / 8] >> (i % 8) & 1;
}

static inline void bit_set(u8 *b, u32 i)
{
	b[i / 8] |= (u8)(1u << (i % 8));
}

/* ---- acknowledgements out -------------------------------------------------- */

static void ack_queue(struct gn_dl *dl, struct gn_rxmsg *m)
{
	/* The queue has room for every message registered; if a burst of
	 * old ones fills it anyway, what is queued goes out now. */
	if (dl->ackq_n == dl->ackq_cap)
		gn_dl_ack_flush(dl);
	if (!dl->ackq_n || dl->now_ns + ACK_DELAY_NS < dl->ack_due_ns)
		dl->ack_due_ns = dl->now_ns + ACK_DELAY_NS;
	dl->ackq[dl->ackq_n] = (struct gn_ackq){
		.peer = m->from, .phase = m->phase, .tensor = m->tensor,
		.step = m->stepno, .npkts = m->npkts, .chunk_off = m->chunk_off,
		.m = m, .at_ns = dl->now_ns,
	};
	m->ack_due = true;
	m->ackq_idx = dl->ackq_n++;
}

int gn_dl_rx_mark(struct gn_dl *dl, struct gn_rxmsg *m,
		  const struct gn_wire_hdr *h, const struct gn_wire_data *d)
{
	if (!m->npkts) {
		if (d->npkts > m->cap)
			return -EBADMSG;
		m->npkts = d->npkts;
		m->from = h->src;
		m->phase = h->phase;
		m->tensor = h->tensor;
		m->stepno = h->step;
		m->chunk_off = d->chunk_off;
	} else if (m->npkts != d->npkts) {
		return -EBADMSG;
	}
	if (dl->ackq_cap && !m->ack_due)
		ack_queue(dl, m);
	dl->ack_pkts++;
	return bit_get(m->seen, d->pkt) ? 1 : 0;
}

void gn_dl_rx_take(struct gn_rxmsg *m, u32 pkt)
{
	bit_set(m->seen, pkt);
	m->got++;
}

void gn_dl_rx_clear(struct gn_dl *dl, struct gn_rxmsg *m)
{
	if (m->ack_due) {
		struct gn_ackq *q = &dl->ackq[m->ackq_idx];

		q->all = m->got == m->npkts;
		q->dead = !q->all;
		q->m = NULL;
	}
	if (m->npkts)
		memset(m->seen, 0, (m->npkts + 7) / 8);
	m->npkts = m->got = 0;
	m->ack_due = false;
}

/* Close the ACK being filled and send it. */
static void ack_send(struct gn_dl *dl, struct gn_ack_out *o)
{
	struct gn_wire_hdr h;

	if (!o->b)
		return;
	if (!o->entries) {
		gn_dl_buf_put(dl, o->b);
		o->b = NULL;
		return;
	}
	gn_dl_hdr_init(dl, &h, GN_PKT_ACK, o->peer);
	h.body_len = (u16)(o->len - GN_WIRE_HDR_LEN - GN_WIRE_ACK_LEN);
	gn_wire_hdr_put(&h, o->b->data);
	gn_wire_ack_put(o->entries, o->b->data);
	gn_dl_seal_send(dl, o->b, (u16)o->len, o->peer);
	o->b = NULL;
}

static bool ack_open(struct gn_dl *dl, struct gn_ack_out *o)
{
	if (o->b)
		return true;
	o->b = gn_dl_buf(dl);
	o->len = GN_WIRE_HDR_LEN + GN_WIRE_ACK_LEN;
	o->entries = 0;
	return o->b != NULL;
}

/*
 * Add an entry for @a with the bitmap @seen (NULL: all of it), cut into
 * windows that fit, sending full packets as it goes.
 */
static void ack_add(struct gn_dl *dl, struct gn_ack_out *o,
		    struct gn_wire_ack *a, const u8 *seen)
{
	size_t cap = dl->max_pkt - GN_WIRE_TAG, base = 0;

	do {
		size_t room, bytes = 0;

		if (o->b && (o->len + GN_WIRE_ACK_ENTRY + (seen ? 1 : 0) > cap ||
			     o->entries == 0xffff))
			ack_send(dl, o);
		/* Without a buffer the senders will retransmit. */
		if (!ack_open(dl, o))
			return;
		room = cap - o->len - GN_WIRE_ACK_ENTRY;
		a->base = a->npkts;
		if (seen) {
			a->base = (u32)base;
			bytes = ((size_t)a->npkts - base + 7) / 8;
			bytes = bytes < room ? bytes : room;
			memcpy(o->b->data + o->len + GN_WIRE_ACK_ENTRY,
			       seen + base / 8, bytes);
		}
		a->bytes = (u16)bytes;
		gn_wire_ack_entry_put(a, o->b->data + o->len);
		o->len += GN_WIRE_ACK_ENTRY + (u32)bytes;
		o->entries++;
		base += bytes * 8;
	} while (seen && base < a->npkts);
}

static bool ack_whole(const struct gn_ackq *q)
{
	return q->all || (q->m && q->m->got == q->m->npkts);
}

/* Only whole messages: a partial one's bitmap asks for what is missing. */
static bool ack_implied(struct gn_dl *dl, const struct gn_ackq *q)
{
	return ack_whole(q) && dl->up->ack_implied &&
	       dl->up->ack_implied(dl->up_arg, q);
}

/*
 * Mark the live entries of @peer (from @i on, the first of them) that
 * wait: with @hold, those queued after the last one that must go now
 * (partial, of more than ACK_HOLD_PKTS packets, or older than
 * ACK_HOLD_NS) and, if one does, after those that waited ACK_DELAY_NS
 * already; unless they cover ACK_BURST packets. The
 * queue is in order of arrival, so what goes acknowledges nothing sent
 * after what waits.
 */
static void ack_hold(struct gn_dl *dl, u32 i, u16 peer, bool hold)
{
	u32 j, last = i, pkts = 0;

	for (j = i; hold && j < dl->ackq_n; j++) {
		const struct gn_ackq *q = &dl->ackq[j];

		if (q->dead || q->peer != peer)
			continue;
		if (!ack_whole(q) || q->npkts > ACK_HOLD_PKTS ||
		    dl->now_ns - q->at_ns >= ACK_HOLD_NS)
			last = j + 1;
	}
	/* An ACK goes to @peer anyway: what waited ACK_DELAY_NS joins it. */
	for (j = last; hold && last > i && j < dl->ackq_n; j++) {
		const struct gn_ackq *q = &dl->ackq[j];

		if (q->dead || q->peer != peer)
			continue;
		if (dl->now_ns - q->at_ns < ACK_DELAY_NS)
			break;
		last = j + 1;
	}
	for (j = last; hold && j < dl->ackq_n; j++)
		if (!dl->ackq[j].dead && dl->ackq[j].peer == peer)
			pkts += dl->ackq[j].npkts;
	if (!hold || pkts >= ACK_BURST)
		return;
	for (j = last; j < dl->ackq_n; j++)
		if (!dl->ackq[j].dead && dl->ackq[j].peer == peer)
			dl->ackq[j].held = true;
}

/* Held entries move to the front of the queue; the rest are done. */
static void ack_compact(struct gn_dl *dl)
{
	u32 i, kept = 0;
	u64 due = ~0ull;

	for (i = 0; i < dl->ackq_n; i++) {
		struct gn_ackq q = dl->ackq[i];

		if (!q.held) {
			if (q.m)
				q.m->ack_due = false;
			continue;
		}
		q.held = false;
		if (q.m)
			q.m->ackq_idx = kept;
		if (q.at_ns + ACK_HOLD_NS < due)
			due = q.at_ns + ACK_HOLD_NS;
		dl->ackq[kept++] = q;
	}
	dl->ackq_n = kept;
	dl->ack_due_ns = due;
	dl->ack_pkts = 0;
}

/* ACK packets per peer for what is received, but what may wait. */
static void ack_flush(struct gn_dl *dl, bool hold)
{
	struct gn_ack_out *o = &dl->ack_out;
	u32 i, j;

	for (i = 0; i < dl->ackq_n; i++) {
		if (!dl->ackq[i].dead && ack_implied(dl, &dl->ackq[i]))
			dl->ackq[i].dead = true;
	}
	for (i = 0; i < dl->ackq_n; i++) {
		if (dl->ackq[i].dead || dl->ackq[i].held)
			continue;
		ack_hold(dl, i, dl->ackq[i].peer, hold);
		if (dl->ackq[i].held)
			continue;
		o->peer = dl->ackq[i].peer;
		for (j = i; j < dl->ackq_n; j++) {
			struct gn_ackq *q = &dl->ackq[j];
			struct gn_wire_ack a = { q->tensor, q->step, q->chunk_off,
						 q->npkts, 0, q->phase, 0 };
			bool all = q->all || (q->m && q->m->got == q->m->npkts);

			if (q->dead || q->held || q->peer != o->peer)
				continue;
			ack_add(dl, o, &a, all ? NULL : q->m->seen);
			q->dead = true;
		}
		ack_send(dl, o);
	}
	ack_compact(dl);
}

/* One ACK packet (or a few) per peer for everything received. */
void gn_dl_ack_flush(struct gn_dl *dl)
{
	ack_flush(dl, false);
}

/*
 * A PING from @peer: every entry of @peer goes now, held, delayed or
 * implied alike, so that the PONG behind it is the whole truth (an
 * implying packet may itself be lost). The other peers' entries stay
 * queued as they were.
 */
void gn_dl_ack_flush_peer(struct gn_dl *dl, int peer)
{
	struct gn_ack_out *o = &dl->ack_out;
	u32 i, kept = 0;

	o->peer = peer;
	for (i = 0; i < dl->ackq_n; i++) {
		struct gn_ackq *q = &dl->ackq[i];
		struct gn_wire_ack a = { q->tensor, q->step, q->chunk_off,
					 q->npkts, 0, q->phase, 0 };

		if (q->dead || q->peer != peer)
			continue;
		ack_add(dl, o, &a, ack_whole(q) ? NULL : q->m->seen);
		q->dead = true;
	}
	if (o->b) {
		dl->counts.ping_flushes++;
		ack_send(dl, o);
	}
	for (i = 0; i < dl->ackq_n; i++) {
		struct gn_ackq q = dl->ackq[i];

		if (q.dead) {
			if (q.m)
				q.m->ack_due = false;
			continue;
		}
		if (q.m)
			q.m->ackq_idx = kept;
		dl->ackq[kept++] = q;
	}
	dl->ackq_n = kept;
}

void gn_dl_ack_maybe(struct gn_dl *dl)
{
	if (!dl->ackq_n)
		return;
	if (dl->ack_pkts >= ACK_BURST || dl->now_ns >= dl->ack_due_ns)
		ack_flush(dl, true);
}

void gn_dl_ack_all(struct gn_dl *dl, int peer, const struct gn_wire_hdr *h,
		   const struct gn_wire_data *d)
{
	struct gn_wire_ack a = { h->tensor, h->step, d->chunk_off, d->npkts,
				 d->npkts, h->phase, 0 };
	struct gn_buf *b = gn_dl_buf(dl);
	struct gn_wire_hdr ah;

	if (!b)
		return;
	gn_dl_hdr_init(dl, &ah, GN_PKT_ACK, peer);
	ah.body_len = GN_WIRE_ACK_ENTRY;
	gn_wire_hdr_put(&ah, b->data);
	gn_wire_ack_put(1, b->data);
	gn_wire_ack_entry_put(&a, b->data + GN_WIRE_HDR_LEN + GN_WIRE_ACK_LEN);
	gn_dl_seal_send(dl, b,
			GN_WIRE_HDR_LEN + GN_WIRE_ACK_LEN + GN_WIRE_ACK_ENTRY, peer);
}

/* ---- control messages in ---------------------------------------------------- */

/*
 * Seen before? Tracks a window of 64 sequence numbers past the last gap;
 * a new one is noted as seen if @mark.
 */
static int ctrl_seen(struct gn_peer *p, u32 seq, bool mark)
{
	u32 d;

	if (seq <= p->ctrl_seen_base)
		return 1;
	d = seq - p->ctrl_seen_base - 1;
	if (d >= 64)
		return -1;
	if (p->ctrl_seen_bits & (1ull << d))
		return 1;
	if (!mark)
		return 0;
	p->ctrl_seen_bits |= 1ull << d;
	while (p->ctrl_seen_bits & 1) {
		p->ctrl_seen_bits >>= 1;
		p->ctrl_seen_base++;
	}
	return 0;
}

static void ctrl_ack(struct gn_dl *dl, struct gn_peer *p, u32 seq)
{
	struct gn_wire_ctrl_ack ca = { .seq = seq };
	struct gn_buf *b = gn_dl_buf(dl);
	struct gn_wire_hdr ah;

	if (!b)
		return;
	gn_dl_hdr_init(dl, &ah, GN_PKT_CTRL_ACK, p->rank);
	gn_wire_hdr_put(&ah, b->data);
	gn_wire_ctrl_ack_put(&ca, b->data);
	gn_dl_seal_send(dl, b, GN_WIRE_HDR_LEN + GN_WIRE_CTRL_ACK_LEN, p->rank);
}

static void ctrl_in(struct gn_dl *dl, struct gn_peer *p,
		    const struct gn_wire_hdr *h, const u8 *pkt)
{
	struct gn_wire_ctrl c;
	int seen;

	if (gn_wire_ctrl_get(pkt, h, &c)) {
		gn_dl_drop(dl, p, GN_DROP_MALFORMED);
		return;
	}
	seen = ctrl_seen(p, c.seq, false);
	if (seen < 0)
		return;	/* beyond the window: the sender will try again */
	if (!seen && !dl->up->ctrl_fits(dl->up_arg, p, h, &c)) {
		/* No room to keep it yet: the sender will try again. */
		gn_dl_drop(dl, p, GN_DROP_TENSOR);
		return;
	}
	if (!seen)
		ctrl_seen(p, c.seq, true);
	ctrl_ack(dl, p, c.seq);
	if (seen)
		gn_dl_drop(dl, p, GN_DROP_DUPLICATE);
	else
		dl->up->ctrl_in(dl->up_arg, p, h, &c);
}

/* ---- every packet ----------------------------------------------------------- */

/*
 * Another version's packet cannot be authenticated (its layout is not
 * ours), so it changes nothing: it is counted, and remembered for the
 * message if the handshake times out.
 */
static void version_in(struct gn_dl *dl, struct gn_peer *p,
		       const struct gn_wire_hdr *h)
{
	gn_dl_drop(dl, p, GN_DROP_VERSION);
	p->version_seen = h->version;
}

/*
 * Check @b's tag and decrypt its body in place, under its sender's key:
 * for a HELLO the key of the instance it names, which is read first (a
 * HELLO whose fixed part is malformed is -EPROTO, not a wrong tag).
 */
static int open_packet(struct gn_dl *dl, const struct gn_wire_hdr *h,
		       struct gn_buf *b)
{
	u8 key[GN_SEAL_KEY_LEN];
	struct gn_wire_hello o;
	int r;

	if (!dl->keys)
		return gn_wire_open(NULL, b->data, b->len);
	if (h->type != GN_PKT_HELLO)
		return gn_wire_open(dl->keys->sender[h->src], b->data, b->len);
	if (gn_wire_hello_get(b->data, h, &o))
		return -EPROTO;
	r = gn_wire_hello_key(key, dl->keys->job, h->src, o.instance);
	if (!r)
		r = gn_wire_open(key, b->data, b->len);
	gn_memzero_explicit(key, sizeof(key));
	return r;
}

/*
 * A session packet's number, after its tag: the first time a number is
 * seen is the only time its packet counts as a sign of life. Control
 * packets that are never sent twice (ACK, CTRL_ACK, PING, PONG) must
 * bring a new number; DATA, WHOLE and CTRL are retransmitted as the very
 * same bytes, so for them a repeat is a duplicate, which the message and
 * sequence state above tell and acknowledge again.
 */
static bool pn_fresh(struct gn_dl *dl, struct gn_peer *p,
		     const struct gn_wire_hdr *h)
{
	if (gn_replay_note(&p->replay, h->pn) == GN_PN_NEW) {
		p->last_rx_ns = dl->now_ns;
		return true;
	}
	switch (h->type) {
	case GN_PKT_DATA:
	case GN_PKT_WHOLE:
	case GN_PKT_CTRL:
		return true;
	default:
		gn_dl_drop(dl, p, GN_DROP_REPLAY);
		return false;
	}
}

void gn_dl_packet_in(struct gn_dl *dl, struct gn_buf *b)
{
	struct gn_peer *p = b->peer < dl->world && b->peer != dl->rank ?
				    &dl->peers[b->peer] : NULL;
	struct gn_wire_hdr h;
	int r;

	if (!p) {
		gn_dl_drop(dl, NULL, GN_DROP_SOURCE);
		return;
	}
	if (!b->len) {
		gn_dl_drop(dl, p, GN_DROP_MALFORMED);
		return;
	}
	r = gn_wire_hdr_get(b->data, b->len, &h);
	if (r == -EPROTONOSUPPORT || (!r && h.version != dl->version)) {
		version_in(dl, p, &h);
		return;
	}
	if (r || (h.dst != dl->rank && h.dst != GN_RANK_ALL)) {
		gn_dl_drop(dl, p, GN_DROP_MALFORMED);
		return;
	}
	if (h.job != dl->job) {
		gn_dl_drop(dl, p, GN_DROP_JOB);
		return;
	}
	if (h.src != p->rank) {
		gn_dl_drop(dl, p, GN_DROP_SOURCE);
		return;
	}
	if (h.type != GN_PKT_HELLO && !dl->ready) {
		/* No session key yet to check it with; the sender repeats. */
		gn_dl_drop(dl, p, GN_DROP_EARLY);
		return;
	}
	r = open_packet(dl, &h, b);
	if (r == -EPROTO) {
		gn_dl_drop(dl, p, GN_DROP_MALFORMED);
		return;
	}
	if (r) {
		p->mac_failures++;
		gn_dl_drop(dl, p, GN_DROP_MAC);
		return;
	}
	if (p->dead || (h.type != GN_PKT_HELLO && !pn_fresh(dl, p, &h)))
		return;
	/* A HELLO's job key is every run's: it may be another run's packet. */
	if (h.type != GN_PKT_HELLO && dl->tp->ops->authentic)
		dl->tp->ops->authentic(dl->tp->state, b);
	switch (h.type) {
	case GN_PKT_HELLO:
		gn_dl_hello_in(dl, p, &h, b->data);
		break;
	case GN_PKT_PING:
	case GN_PKT_PONG:
		gn_dl_ping_in(dl, p, &h, b->data);
		break;
	case GN_PKT_CTRL_ACK:
		gn_dl_ctrl_ack_in(dl, p, &h, b->data);
		break;
	case GN_PKT_CTRL:
		ctrl_in(dl, p, &h, b->data);
		break;
	case GN_PKT_DATA:
	case GN_PKT_WHOLE:
		dl->up->data_in(dl->up_arg, p, &h, b);
		break;
	case GN_PKT_ACK:
		gn_dl_ack_in(dl, p, &h, b->data);
		break;
	}
}

void gn_dl_receive(struct gn_dl *dl)
{
	int round, i, n;

	for (round = 0; round < RX_ROUNDS; round++) {
		n = dl->tp->ops->recv(dl->tp->state, dl->rx, GN_RX_BATCH);
		if (n <= 0)
			break;
		dl->now_ns = gn_env_now(dl->env);
		for (i = 0; i < n; i++) {
			gn_dl_packet_in(dl, dl->rx[i]);
			gn_dl_buf_put(dl, dl->rx[i]);
		}
		gn_dl_ack_maybe(dl);
		if (n < GN_RX_BATCH)
			break;
	}
}
