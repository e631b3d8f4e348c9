// SPDX-License-Identifier: MIT
/*
 * reliable.c - delivery of data messages: sending within a per-peer window,
 * acknowledgements as bitmaps, retransmission of the very same bytes after
 * a timeout, and duplicate detection on receive.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define TX_BATCH 256
#define CWND_MIN 32.0
#define CWND_MAX 8192.0
/*
 * A packet is sent again when a packet sent after it has been acknowledged
 * (by more than a reordering window: time-based loss detection, as RACK
 * does for TCP), or when the retransmission timeout passes, which is for
 * lost tails. The timeout has a floor so that a receiver that is busy for
 * a few milliseconds (two ranks on two cores) does not cause spurious
 * retransmissions.
 */
#define RTO_FLOOR_NS 10000000ull
#define REORDER_MIN_NS 500000ull

enum due { NOT_DUE, DUE_NEW, DUE_LOST, DUE_TIMEOUT };

struct pending {
	struct gn_txmsg *m;
	u32 row, i;
	enum due why;
};

static inline bool bit_get(const u8 *b, u32 i)
{
	return b[i / 8] >> (i % 8) & 1;
}

static inline void bit_set(u8 *b, u32 i)
{
	b[i / 8] |= (u8)(1u << (i % 8));
}

static u32 rows_of(const struct gn_ctx *ctx, u16 to)
{
	return to == GN_RANK_ALL ? (u32)ctx->world : 1;
}

static int row_peer(const struct gn_txmsg *m, u32 row)
{
	return m->to == GN_RANK_ALL ? (int)row : m->to;
}

struct gn_txmsg *gn_txmsg_new(struct gn_ctx *ctx, u32 npkts, size_t bytes)
{
	struct gn_txmsg *m = calloc(1, sizeof(*m));

	(void)ctx;
	if (!m)
		return NULL;
	m->npkts = npkts;
	m->buf = malloc(bytes ? bytes : 1);
	m->off = calloc(npkts + 1, sizeof(*m->off));
	if (!m->buf || !m->off) {
		gn_txmsg_free(m);
		return NULL;
	}
	return m;
}

void gn_txmsg_free(struct gn_txmsg *m)
{
	if (!m)
		return;
	free(m->buf);
	free(m->off);
	free(m->acked);
	free(m->again);
	free(m->sent_ns);
	free(m->unacked);
	free(m->next_new);
	free(m);
}

/* A message to one more receiver: what it stands for, bare and raw. */
static void stream_stats(struct gn_stats *s, const struct gn_txmsg *m)
{
	u64 body = m->off[m->npkts] - (u64)m->npkts * GN_WIRE_DATA_OVERHEAD;

	s->raw_bytes += m->raw_bytes;
	s->messages++;
	s->stream_bytes += body + (m->codec == GN_WIRE_CODEC_3LC ?
				   GN_TLC_SCALE_BYTES : 0);
}

/* Set up per-receiver state once m->to is known, and start sending. */
void gn_txmsg_queue(struct gn_ctx *ctx, struct gn_txmsg *m)
{
	u32 rows = rows_of(ctx, m->to), r, bm = (m->npkts + 7) / 8;

	m->acked = calloc((size_t)rows * bm, 1);
	m->again = calloc((size_t)rows * bm, 1);
	m->sent_ns = calloc((size_t)rows * m->npkts, sizeof(u64));
	m->unacked = calloc(rows, sizeof(u32));
	m->next_new = calloc(rows, sizeof(u32));
	m->left = 0;
	for (r = 0; r < rows; r++) {
		int p = row_peer(m, r);

		if (p == ctx->rank || ctx->peers[p].dead)
			continue;
		m->unacked[r] = m->npkts;
		m->left++;
		stream_stats(&ctx->stats, m);
		stream_stats(&ctx->peers[p].stats, m);
		stream_stats(&m->t->stats, m);
	}
	if (!m->acked || !m->again || !m->sent_ns || !m->unacked ||
	    !m->next_new) {
		/* Out of memory: the step fails by timeout rather than crash. */
		m->left = 0;
	}
	m->next = ctx->tx;
	ctx->tx = m;
}

static void unlink_msg(struct gn_ctx *ctx, struct gn_txmsg *m)
{
	struct gn_txmsg **pp;

	for (pp = &ctx->tx; *pp; pp = &(*pp)->next)
		if (*pp == m) {
			*pp = m->next;
			return;
		}
}

static u64 rto_of(const struct gn_peer *p)
{
	return p->rto_ns > RTO_FLOOR_NS ? p->rto_ns : RTO_FLOOR_NS;
}

static enum due due(const struct gn_ctx *ctx, const struct gn_peer *p,
		    u64 sent)
{
	u64 reo = (u64)(p->srtt_ns / 4) > REORDER_MIN_NS ? (u64)(p->srtt_ns / 4) :
							    REORDER_MIN_NS;

	if (!sent)
		return DUE_NEW;	/* the socket did not take it last time */
	if (sent + reo < p->rack_ns)
		return DUE_LOST;
	return ctx->now_ns - sent >= rto_of(p) ? DUE_TIMEOUT : NOT_DUE;
}

/* Packets of @m for row @r that are due: never sent, lost or timed out. */
static int collect(struct gn_ctx *ctx, struct gn_txmsg *m, u32 r,
		   struct gn_tx_pkt *out, struct pending *pend, int room)
{
	int peer = row_peer(m, r), n = 0;
	struct gn_peer *p = &ctx->peers[peer];
	u8 *acked = m->acked + (size_t)r * ((m->npkts + 7) / 8);
	u64 *sent = m->sent_ns + (size_t)r * m->npkts;
	u32 i;

	for (i = 0; i < m->next_new[r] && n < room; i++) {
		enum due why;

		if (bit_get(acked, i))
			continue;
		why = due(ctx, p, sent[i]);
		if (why == NOT_DUE)
			continue;
		out[n] = (struct gn_tx_pkt){ m->buf + m->off[i],
					     (u16)(m->off[i + 1] - m->off[i]),
					     (u16)peer };
		pend[n++] = (struct pending){ m, r, i, why };
	}
	while (m->next_new[r] < m->npkts && n < room && p->inflight < p->cwnd) {
		i = m->next_new[r]++;
		out[n] = (struct gn_tx_pkt){ m->buf + m->off[i],
					     (u16)(m->off[i + 1] - m->off[i]),
					     (u16)peer };
		pend[n++] = (struct pending){ m, r, i, DUE_NEW };
		p->inflight++;
	}
	return n;
}

static void account(struct gn_ctx *ctx, struct gn_txmsg *m, int peer, u16 len,
		    bool again)
{
	struct gn_stats *s[3] = { &ctx->stats, &ctx->peers[peer].stats,
				  &m->t->stats };
	int k;

	for (k = 0; k < 3; k++) {
		s[k]->tx_packets++;
		s[k]->wire_bytes += len;
		s[k]->retransmits += again;
	}
}

/*
 * Losses shrink the window once per round trip: by half after a timeout,
 * a little after a loss that later packets revealed (random loss on a
 * lossy link is not always congestion).
 */
static void shrink(struct gn_ctx *ctx, struct gn_peer *p, enum due why)
{
	double f = why == DUE_TIMEOUT ? 0.5 : 0.85;

	if (ctx->now_ns - p->last_loss_ns < (u64)p->srtt_ns)
		return;
	p->cwnd = p->cwnd * f < CWND_MIN ? CWND_MIN : p->cwnd * f;
	p->ssthresh = p->cwnd;
	p->last_loss_ns = ctx->now_ns;
}

/*
 * Does row @r of @m have a live receiver that is owed packets? A receiver
 * that has not yet told us it registered the tensor would only drop them:
 * they wait for its descriptor (which comes at its registration).
 */
static bool row_live(const struct gn_ctx *ctx, const struct gn_txmsg *m,
		     u32 r)
{
	int peer = row_peer(m, r);

	return peer != ctx->rank && !ctx->peers[peer].dead && m->unacked[r] &&
	       m->t->desc[peer].have;
}

/* Send what is due on every message. */
void gn_tx_pump(struct gn_ctx *ctx)
{
	struct gn_tx_pkt out[TX_BATCH];
	struct pending pend[TX_BATCH];
	struct gn_txmsg *m;
	int n = 0, sent, k;

	for (m = ctx->tx; m && n < TX_BATCH; m = m->next) {
		u32 r;

		for (r = 0; r < rows_of(ctx, m->to) && n < TX_BATCH; r++)
			if (row_live(ctx, m, r))
				n += collect(ctx, m, r, out + n, pend + n,
					     TX_BATCH - n);
	}
	if (!n)
		return;
	sent = ctx->tp->send(ctx->tp_state, ctx->addrs, out, n);
	if (sent < 0)
		sent = 0;
	for (k = 0; k < n; k++) {
		struct pending *q = &pend[k];
		struct gn_peer *p = &ctx->peers[out[k].peer];
		u64 *slot = &q->m->sent_ns[(size_t)q->row * q->m->npkts + q->i];

		if (k >= sent) {
			/* Not taken by the socket: try again next round. */
			if (q->why == DUE_NEW && !*slot) {
				if (q->i < q->m->next_new[q->row])
					q->m->next_new[q->row] = q->i;
				p->inflight--;
			}
			continue;
		}
		if (q->why == DUE_LOST || q->why == DUE_TIMEOUT) {
			shrink(ctx, p, q->why);
			bit_set(q->m->again + (size_t)q->row * ((q->m->npkts + 7) / 8),
				q->i);
		}
		account(ctx, q->m, out[k].peer, out[k].len,
			q->why == DUE_LOST || q->why == DUE_TIMEOUT);
		*slot = ctx->now_ns;
	}
}

/* The earliest time a retransmission may be due, for the sleep. */
u64 gn_tx_deadline(struct gn_ctx *ctx)
{
	struct gn_txmsg *m;
	u64 t = ~0ull;

	for (m = ctx->tx; m; m = m->next) {
		u32 r;

		for (r = 0; r < rows_of(ctx, m->to); r++) {
			int peer = row_peer(m, r);
			struct gn_peer *p = &ctx->peers[peer];
			u64 rto = rto_of(p);
			u64 *sent = m->sent_ns + (size_t)r * m->npkts;
			u8 *acked = m->acked + (size_t)r * ((m->npkts + 7) / 8);
			u32 i;

			if (!row_live(ctx, m, r))
				continue;
			if (m->next_new[r] < m->npkts && p->inflight < p->cwnd)
				return ctx->now_ns;
			for (i = 0; i < m->next_new[r]; i++) {
				if (bit_get(acked, i))
					continue;
				if (due(ctx, p, sent[i]) != NOT_DUE)
					return ctx->now_ns;
				if (sent[i] + rto < t)
					t = sent[i] + rto;
			}
		}
	}
	return t;
}

static void row_done(struct gn_ctx *ctx, struct gn_txmsg *m, u32 r)
{
	struct gn_peer *p = &ctx->peers[row_peer(m, r)];
	u8 *acked = m->acked + (size_t)r * ((m->npkts + 7) / 8);
	u32 i;

	for (i = 0; i < m->next_new[r]; i++)
		if (!bit_get(acked, i) && p->inflight)
			p->inflight--;
	m->unacked[r] = 0;
	m->next_new[r] = m->npkts;
	if (m->left)
		m->left--;
}

/* A message is dropped unacknowledged: its packets no longer fly. */
static void drop_msg(struct gn_ctx *ctx, struct gn_txmsg *m)
{
	u32 r;

	for (r = 0; m->unacked && r < rows_of(ctx, m->to); r++)
		if (m->unacked[r])
			row_done(ctx, m, r);
	gn_txmsg_free(m);
}

/* A step is over: its reduce messages are delivered or moot. */
void gn_tx_drop_step(struct gn_ctx *ctx, struct gn_step *st)
{
	struct gn_txmsg **pp = &ctx->tx;

	while (*pp) {
		struct gn_txmsg *m = *pp;

		if (m->step != st) {
			pp = &m->next;
			continue;
		}
		if (!st->err && m->phase == GN_PHASE_GATHER) {
			/* Others may still need this rank's result. */
			m->step = NULL;
			pp = &m->next;
			continue;
		}
		*pp = m->next;
		drop_msg(ctx, m);
	}
}

void gn_tx_drop_peer(struct gn_ctx *ctx, int peer)
{
	struct gn_txmsg **pp = &ctx->tx;

	while (*pp) {
		struct gn_txmsg *m = *pp;
		u32 r = m->to == GN_RANK_ALL ? (u32)peer : 0;

		if ((m->to == GN_RANK_ALL || m->to == peer) && m->unacked &&
		    m->unacked[r])
			row_done(ctx, m, r);
		if (!m->left) {
			*pp = m->next;
			gn_txmsg_free(m);
			continue;
		}
		pp = &m->next;
	}
}

static struct gn_txmsg *find_tx(struct gn_ctx *ctx, int peer,
				const struct gn_wire_ack *a)
{
	struct gn_txmsg *m;

	for (m = ctx->tx; m; m = m->next)
		if (m->tensor == a->tensor && m->stepno == a->step &&
		    m->phase == a->phase && m->chunk_off == a->chunk_off &&
		    (m->to == peer || m->to == GN_RANK_ALL))
			return m;
	return NULL;
}

static void acked_one(struct gn_ctx *ctx, struct gn_peer *p,
		      struct gn_txmsg *m, u32 r, u32 i)
{
	size_t bm = (size_t)r * ((m->npkts + 7) / 8);
	u64 sent = m->sent_ns[(size_t)r * m->npkts + i];

	if (bit_get(m->acked + bm, i) || i >= m->next_new[r])
		return;
	bit_set(m->acked + bm, i);
	m->unacked[r]--;
	if (p->inflight)
		p->inflight--;
	/* Which send an acknowledgement answers is only clear for one send. */
	if (!bit_get(m->again + bm, i) && sent && ctx->now_ns > sent) {
		gn_peer_rtt(p, ctx->now_ns - sent);
		if (sent > p->rack_ns)
			p->rack_ns = sent;
	}
	/* Doubling per round trip up to ssthresh, then one packet per trip. */
	p->cwnd += p->cwnd < p->ssthresh ? 1 : 1 / p->cwnd;
	if (p->cwnd > CWND_MAX)
		p->cwnd = CWND_MAX;
}

static void ack_entry_in(struct gn_ctx *ctx, struct gn_peer *p,
			 const struct gn_wire_ack *a, const u8 *bits)
{
	struct gn_txmsg *m = find_tx(ctx, p->rank, a);
	u32 r, i;

	if (!m || m->npkts != a->npkts || !m->unacked)
		return;	/* old news */
	r = m->to == GN_RANK_ALL ? (u32)p->rank : 0;
	if (!m->unacked[r])
		return;
	if (a->base == a->npkts) {
		row_done(ctx, m, r);
	} else {
		for (i = 0; i < (u32)a->bytes * 8 && a->base + i < a->npkts; i++)
			if (bits[i / 8] >> (i % 8) & 1)
				acked_one(ctx, p, m, r, a->base + i);
		if (!m->unacked[r])
			row_done(ctx, m, r);
	}
	if (!m->left) {
		unlink_msg(ctx, m);
		gn_txmsg_free(m);
	}
}

/* Every entry is checked before any is applied. */
void gn_ack_in(struct gn_ctx *ctx, struct gn_peer *p,
	       const struct gn_wire_hdr *h, const u8 *pkt)
{
	const u8 *body = pkt + GN_WIRE_HDR_LEN + GN_WIRE_ACK_LEN, *at;
	unsigned int entries, k;
	struct gn_wire_ack a;
	size_t left;
	int len;

	if (gn_wire_ack_get(pkt, h, &entries))
		goto bad;
	for (k = 0, at = body, left = h->body_len; k < entries; k++) {
		len = gn_wire_ack_entry_get(at, left, &a);
		if (len < 0)
			goto bad;
		at += len;
		left -= (size_t)len;
	}
	if (left)
		goto bad;
	for (k = 0, at = body, left = h->body_len; k < entries; k++) {
		len = gn_wire_ack_entry_get(at, left, &a);
		ack_entry_in(ctx, p, &a, at + GN_WIRE_ACK_ENTRY);
		at += len;
		left -= (size_t)len;
	}
	return;
bad:
	gn_count_drop(ctx, p, GN_DROP_MALFORMED);
}

/* ---- receive side ---------------------------------------------------------- */

/*
 * Acknowledgements wait up to ACK_DELAY_NS, so that one packet to a peer
 * carries those of many small messages; a burst of ACK_BURST packets is
 * acknowledged at once, which keeps a bulk sender's window moving.
 */
#define ACK_DELAY_NS 2000000ull
#define ACK_BURST 32

static int ack_queue(struct gn_ctx *ctx, struct gn_rxmsg *m)
{
	if (ctx->ackq_n == ctx->ackq_cap) {
		u32 cap = ctx->ackq_cap ? 2 * ctx->ackq_cap : 64;
		struct gn_ackq *q = realloc(ctx->ackq, cap * sizeof(*q));

		if (!q)
			return -ENOMEM;
		ctx->ackq = q;
		ctx->ackq_cap = cap;
	}
	if (!ctx->ackq_n)
		ctx->ack_due_ns = ctx->now_ns + ACK_DELAY_NS;
	ctx->ackq[ctx->ackq_n] = (struct gn_ackq){
		.peer = m->from, .phase = m->phase, .tensor = m->tensor,
		.step = m->stepno, .npkts = m->npkts, .chunk_off = m->chunk_off,
		.m = m,
	};
	m->ack_due = true;
	m->ackq_idx = ctx->ackq_n++;
	return 0;
}

/*
 * Note a packet of a message. Return: 0 if new, 1 if a duplicate,
 * -EBADMSG if it contradicts earlier packets of the message.
 */
int gn_rxmsg_mark(struct gn_ctx *ctx, struct gn_rxmsg *m,
		  const struct gn_wire_hdr *h, const struct gn_wire_data *d)
{
	if (!m->npkts) {
		m->seen = calloc(((size_t)d->npkts + 7) / 8, 1);
		if (!m->seen)
			return -ENOMEM;
		m->npkts = d->npkts;
		m->from = h->src;
		m->phase = h->phase;
		m->tensor = h->tensor;
		m->stepno = h->step;
		m->chunk_off = d->chunk_off;
	} else if (m->npkts != d->npkts) {
		return -EBADMSG;
	}
	if (!m->ack_due && ack_queue(ctx, m))
		return -ENOMEM;
	ctx->ack_pkts++;
	if (bit_get(m->seen, d->pkt))
		return 1;
	return 0;
}

void gn_rxmsg_take(struct gn_rxmsg *m, u32 pkt)
{
	bit_set(m->seen, pkt);
	m->got++;
}

void gn_rxmsg_clear(struct gn_ctx *ctx, struct gn_rxmsg *m)
{
	if (m->ack_due) {
		struct gn_ackq *q = &ctx->ackq[m->ackq_idx];

		q->all = m->got == m->npkts;
		q->dead = !q->all;
		q->m = NULL;
	}
	while (m->held) {
		struct gn_held *h = m->held;

		m->held = h->next;
		free(h);
	}
	free(m->seen);
	free(m->cover);
	memset(m, 0, sizeof(*m));
}

/* An ACK packet being filled for one peer. */
struct ack_out {
	u8 pkt[GN_WIRE_MAX_PKT];
	size_t len;
	unsigned int entries;
	int peer;
};

static void ack_send(struct gn_ctx *ctx, struct ack_out *o)
{
	struct gn_wire_hdr h;

	if (!o->entries)
		return;
	gn_hdr_init(ctx, &h, GN_PKT_ACK, o->peer);
	h.body_len = (u16)(o->len - GN_WIRE_HDR_LEN - GN_WIRE_ACK_LEN);
	gn_wire_hdr_put(&h, o->pkt);
	gn_wire_ack_put(o->entries, o->pkt);
	gn_send_now(ctx, o->peer, o->pkt,
		    (u16)gn_mac_seal(ctx->mac, o->pkt, o->len));
	o->len = GN_WIRE_HDR_LEN + GN_WIRE_ACK_LEN;
	o->entries = 0;
}

/*
 * Add an entry for @a with the bitmap @seen (NULL: all of it), cut into
 * windows that fit, sending full packets as it goes.
 */
static void ack_add(struct gn_ctx *ctx, struct ack_out *o,
		    struct gn_wire_ack *a, const u8 *seen)
{
	size_t cap = ctx->max_pkt - GN_WIRE_TAG, base = 0;

	do {
		size_t room, bytes = 0;

		if (o->len + GN_WIRE_ACK_ENTRY + (seen ? 1 : 0) > cap ||
		    o->entries == 0xffff)
			ack_send(ctx, o);
		room = cap - o->len - GN_WIRE_ACK_ENTRY;
		a->base = a->npkts;
		if (seen) {
			a->base = (u32)base;
			bytes = ((size_t)a->npkts - base + 7) / 8;
			bytes = bytes < room ? bytes : room;
			memcpy(o->pkt + o->len + GN_WIRE_ACK_ENTRY, seen + base / 8,
			       bytes);
		}
		a->bytes = (u16)bytes;
		gn_wire_ack_entry_put(a, o->pkt + o->len);
		o->len += GN_WIRE_ACK_ENTRY + bytes;
		o->entries++;
		base += bytes * 8;
	} while (seen && base < a->npkts);
}

/* One ACK packet (or a few) per peer for everything received. */
void gn_ack_flush(struct gn_ctx *ctx)
{
	struct ack_out *o;
	u32 i, j;

	if (!ctx->ackq_n)
		return;
	o = malloc(sizeof(*o));
	for (i = 0; o && i < ctx->ackq_n; i++) {
		if (ctx->ackq[i].dead)
			continue;
		o->peer = ctx->ackq[i].peer;
		o->len = GN_WIRE_HDR_LEN + GN_WIRE_ACK_LEN;
		o->entries = 0;
		for (j = i; j < ctx->ackq_n; j++) {
			struct gn_ackq *q = &ctx->ackq[j];
			struct gn_wire_ack a = { q->tensor, q->step, q->chunk_off,
						 q->npkts, 0, q->phase, 0 };
			bool all = q->all || (q->m && q->m->got == q->m->npkts);

			if (q->dead || q->peer != o->peer)
				continue;
			ack_add(ctx, o, &a, all ? NULL : q->m->seen);
			q->dead = true;
		}
		ack_send(ctx, o);
	}
	/* Without memory the senders will retransmit. */
	for (i = 0; i < ctx->ackq_n; i++)
		if (ctx->ackq[i].m)
			ctx->ackq[i].m->ack_due = false;
	free(o);
	ctx->ackq_n = 0;
	ctx->ack_pkts = 0;
}

void gn_ack_maybe(struct gn_ctx *ctx)
{
	if (ctx->ackq_n && (ctx->ack_pkts >= ACK_BURST ||
			    ctx->now_ns >= ctx->ack_due_ns))
		gn_ack_flush(ctx);
}

/* Acknowledge a whole message of a step that is over, so retries stop. */
void gn_ack_all(struct gn_ctx *ctx, int peer, const struct gn_wire_hdr *h,
		const struct gn_wire_data *d)
{
	u8 pkt[GN_WIRE_HDR_LEN + GN_WIRE_ACK_LEN + GN_WIRE_ACK_ENTRY + GN_WIRE_TAG];
	struct gn_wire_ack a = { h->tensor, h->step, d->chunk_off, d->npkts,
				 d->npkts, h->phase, 0 };
	struct gn_wire_hdr ah;

	gn_hdr_init(ctx, &ah, GN_PKT_ACK, peer);
	ah.body_len = GN_WIRE_ACK_ENTRY;
	gn_wire_hdr_put(&ah, pkt);
	gn_wire_ack_put(1, pkt);
	gn_wire_ack_entry_put(&a, pkt + GN_WIRE_HDR_LEN + GN_WIRE_ACK_LEN);
	gn_send_now(ctx, peer, pkt,
		    (u16)gn_mac_seal(ctx->mac, pkt, sizeof(pkt) - GN_WIRE_TAG));
}
