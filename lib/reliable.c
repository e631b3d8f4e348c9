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
#define RTO_FLOOR_NS 50000000ull
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

/* Set up per-receiver state once m->to is known, and start sending. */
void gn_txmsg_queue(struct gn_ctx *ctx, struct gn_txmsg *m)
{
	u32 rows = rows_of(ctx, m->to), r, bm = (m->npkts + 7) / 8;
	struct gn_tensor *t;

	m->acked = calloc((size_t)rows * bm, 1);
	m->again = calloc((size_t)rows * bm, 1);
	m->sent_ns = calloc((size_t)rows * m->npkts, sizeof(u64));
	m->unacked = calloc(rows, sizeof(u32));
	m->next_new = calloc(rows, sizeof(u32));
	m->left = 0;
	t = gn_tensor_find(ctx, m->tensor);
	for (r = 0; r < rows; r++) {
		int p = row_peer(m, r);

		if (p == ctx->rank || ctx->peers[p].dead)
			continue;
		m->unacked[r] = m->npkts;
		m->left++;
		ctx->stats.raw_bytes += m->raw_bytes;
		ctx->peers[p].stats.raw_bytes += m->raw_bytes;
		if (t)
			t->stats.raw_bytes += m->raw_bytes;
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
	struct gn_stats *s[3] = { &ctx->stats, &ctx->peers[peer].stats, NULL };
	struct gn_tensor *t = gn_tensor_find(ctx, m->tensor);
	int k;

	if (t)
		s[2] = &t->stats;
	for (k = 0; k < 3 && s[k]; k++) {
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

/* Send what is due on every message. */
void gn_tx_pump(struct gn_ctx *ctx)
{
	struct gn_tx_pkt out[TX_BATCH];
	struct pending pend[TX_BATCH];
	struct gn_txmsg *m;
	int n = 0, sent, k;

	for (m = ctx->tx; m && n < TX_BATCH; m = m->next) {
		u32 r;

		for (r = 0; r < rows_of(ctx, m->to) && n < TX_BATCH; r++) {
			int peer = row_peer(m, r);

			if (peer == ctx->rank || ctx->peers[peer].dead ||
			    !m->unacked[r])
				continue;
			n += collect(ctx, m, r, out + n, pend + n, TX_BATCH - n);
		}
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

			if (peer == ctx->rank || p->dead || !m->unacked[r])
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
		gn_txmsg_free(m);
	}
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
				const struct gn_wire_hdr *h, u64 chunk_off)
{
	struct gn_txmsg *m;

	for (m = ctx->tx; m; m = m->next)
		if (m->tensor == h->tensor && m->stepno == h->step &&
		    m->phase == h->phase && m->chunk_off == chunk_off &&
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

void gn_ack_in(struct gn_ctx *ctx, struct gn_peer *p,
	       const struct gn_wire_hdr *h, const u8 *pkt)
{
	const u8 *bits = pkt + GN_WIRE_HDR_LEN + GN_WIRE_ACK_LEN;
	struct gn_wire_ack a;
	struct gn_txmsg *m;
	u32 r, i;

	if (gn_wire_ack_get(pkt, h, &a)) {
		gn_count_drop(ctx, p, GN_DROP_MALFORMED);
		return;
	}
	m = find_tx(ctx, p->rank, h, a.chunk_off);
	if (!m || m->npkts != a.npkts || !m->unacked)
		return;	/* old news */
	r = m->to == GN_RANK_ALL ? (u32)p->rank : 0;
	if (!m->unacked[r])
		return;
	if (a.base == a.npkts && !h->body_len) {
		row_done(ctx, m, r);
	} else {
		for (i = 0; i < (u32)h->body_len * 8 && a.base + i < a.npkts; i++)
			if (bits[i / 8] >> (i % 8) & 1)
				acked_one(ctx, p, m, r, a.base + i);
		if (!m->unacked[r])
			row_done(ctx, m, r);
	}
	if (!m->left) {
		unlink_msg(ctx, m);
		gn_txmsg_free(m);
	}
}

/* ---- receive side ---------------------------------------------------------- */

/*
 * Note a packet of a message. Return: 0 if new, 1 if a duplicate,
 * -EBADMSG if it contradicts earlier packets of the message.
 */
int gn_rxmsg_mark(struct gn_ctx *ctx, struct gn_rxmsg *m,
		  const struct gn_wire_hdr *h, const struct gn_wire_data *d)
{
	if (!m->npkts) {
		m->seen = calloc((d->npkts + 7) / 8, 1);
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
	if (!m->ack_due) {
		struct gn_rxmsg **tail = &ctx->ack_list;

		/* In arrival order, so a sender sees earlier packets acked first. */
		while (*tail)
			tail = &(*tail)->ack_next;
		m->ack_due = true;
		m->ack_next = NULL;
		*tail = m;
	}
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
	struct gn_rxmsg **pp;

	if (m->ack_due)
		for (pp = &ctx->ack_list; *pp; pp = &(*pp)->ack_next)
			if (*pp == m) {
				*pp = m->ack_next;
				break;
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

static void send_ack(struct gn_ctx *ctx, int peer, u8 phase, u32 tensor,
		     u32 stepno, u64 chunk_off, u32 npkts, const u8 *seen)
{
	u8 pkt[GN_WIRE_MAX_PKT];
	struct gn_wire_ack a = { chunk_off, npkts, npkts };
	size_t room = ctx->max_pkt - GN_WIRE_HDR_LEN - GN_WIRE_ACK_LEN -
		      GN_WIRE_TAG;
	struct gn_wire_hdr h;
	u32 base = 0;

	gn_hdr_init(ctx, &h, GN_PKT_ACK, peer);
	h.phase = phase;
	h.tensor = tensor;
	h.step = stepno;
	do {
		size_t bytes = 0;

		if (seen) {
			a.base = base;
			bytes = (npkts - base + 7) / 8;
			bytes = bytes < room ? bytes : room;
			memcpy(pkt + GN_WIRE_HDR_LEN + GN_WIRE_ACK_LEN,
			       seen + base / 8, bytes);
		}
		h.body_len = (u16)bytes;
		gn_wire_hdr_put(&h, pkt);
		gn_wire_ack_put(&a, pkt);
		gn_send_now(ctx, peer, pkt,
			    (u16)gn_mac_seal(ctx->mac, pkt, GN_WIRE_HDR_LEN +
							       GN_WIRE_ACK_LEN + bytes));
		base += (u32)bytes * 8;
	} while (seen && base < npkts);
}

void gn_ack_flush(struct gn_ctx *ctx)
{
	while (ctx->ack_list) {
		struct gn_rxmsg *m = ctx->ack_list;

		ctx->ack_list = m->ack_next;
		m->ack_due = false;
		send_ack(ctx, m->from, m->phase, m->tensor, m->stepno,
			 m->chunk_off, m->npkts, m->got == m->npkts ? NULL : m->seen);
	}
}

/* Acknowledge a whole message of a step that is over, so retries stop. */
void gn_ack_all(struct gn_ctx *ctx, int peer, const struct gn_wire_hdr *h,
		const struct gn_wire_data *d)
{
	send_ack(ctx, peer, h->phase, h->tensor, h->step, d->chunk_off,
		 d->npkts, NULL);
}
