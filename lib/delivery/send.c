// SPDX-License-Identifier: MIT
/*
 * send.c - reliable delivery of messages, data and control alike: sending
 * within a per-peer window, acknowledgements, and retransmission of the
 * very same buffers after a loss or a timeout.
 *
 * Each peer keeps the packets it has in flight on a list in the order
 * they were (re)sent. A packet is sent again when a packet sent after it
 * by more than a reordering window has been acknowledged (time-based loss
 * detection, as RACK does for TCP). That condition holds for a prefix of
 * the list, so the pump looks at the head only: the list is the timer
 * queue.
 *
 * A lost tail has no later packet to reveal it, and a sender cannot tell
 * it from a receiver that is not running (two ranks on one core, for
 * milliseconds): both are silent. So when the head has waited a probe
 * timeout (PTO, a few round trips) the sender asks instead of resending:
 * it sends a PING, which the receiver answers with a PONG only after
 * acknowledging everything that reached it before the PING. The PONG's
 * stamp then moves RACK's clock as an acknowledgement of a packet sent at
 * that time would, and what is still unacknowledged is resent as lost. A
 * receiver that was descheduled answers when it runs again, after its
 * ACKs, and nothing is resent. Unanswered probes are repeated with
 * exponential backoff. The retransmission timeout stays as a backstop,
 * with a floor far above any descheduling, for when probes fail too.
 */
#include "delivery.h"

#define CWND_MIN (32 * GN_CWND_ONE)
#define CWND_MAX (8192 * GN_CWND_ONE)
#define REORDER_MIN_NS 500000ull
/* The backstop: far above a receiver descheduled on a busy host. */
#define RTO_FLOOR_NS 200000000ull
#define PTO_FLOOR_NS 1000000ull
#define PTO_BACKOFF_MAX 6
/*
 * Probes within a share of the data: a probe costs about a PING, a PONG
 * and the ACK it brings, and every PROBE_SHARE data bytes sent to a peer
 * earn that much credit (up to PROBE_BURST probes). Without credit a
 * probe waits PTO_SLOW_NS more, past the 4 ms a receiver may hold an
 * acknowledgement (receive.c), so that small steps with a pause between
 * them (a training loop) are not probed step after step.
 */
#define PROBE_COST (3 * (GN_WIRE_HDR_LEN + GN_WIRE_PING_LEN + GN_WIRE_TAG))
#define PROBE_SHARE 64
#define PROBE_BURST 8
#define PTO_SLOW_NS 5000000ull

enum due { NOT_DUE, DUE_NEW, DUE_LOST, DUE_TIMEOUT };

struct gn_buf *gn_dl_buf(struct gn_dl *dl)
{
	return dl->tp->ops->get(dl->tp->state);
}

void gn_dl_buf_put(struct gn_dl *dl, struct gn_buf *b)
{
	dl->tp->ops->put(dl->tp->state, b);
}

void gn_dl_buf_hold(struct gn_dl *dl, struct gn_buf *b)
{
	dl->tp->ops->hold(dl->tp->state, b);
}

void gn_dl_hdr_init(const struct gn_dl *dl, struct gn_wire_hdr *h, u8 type,
		    int to)
{
	memset(h, 0, sizeof(*h));
	h->magic = GN_WIRE_MAGIC;
	h->version = dl->version;
	h->type = type;
	h->src = (u16)dl->rank;
	h->dst = (u16)to;
	h->job = dl->job;
}

/*
 * @n packet numbers in a row; the first, or 0 once they are used up (at
 * 2^56, some 15 years of a 100 Gbit/s link's smallest frames).
 */
static u64 pn_take(struct gn_dl *dl, u64 n)
{
	if (dl->pn > GN_WIRE_PN_MAX - n)
		return 0;
	dl->pn += n;
	return dl->pn - n + 1;
}

/* Seal the @len bytes in @b under @key with number @pn, and address it. */
static int seal(struct gn_dl *dl, const u8 *key, struct gn_buf *b, u16 len,
		u64 pn, int to)
{
	size_t sealed = gn_wire_seal(key, b->data, len, pn, dl->seal_flags);

	b->len = (u16)sealed;
	b->peer = (u16)to;
	return sealed ? 0 : -EIO;
}

/*
 * This rank's sender key (NULL: a job without a key); false before the
 * handshake derived it, when only HELLOs may go.
 */
static bool sender_key(const struct gn_dl *dl, const u8 **key)
{
	*key = dl->keys ? dl->keys->sender[dl->rank] : NULL;
	return !dl->keys || dl->ready;
}

int gn_dl_seal(struct gn_dl *dl, struct gn_buf *b, u16 len, int to)
{
	const u8 *key;

	if (!sender_key(dl, &key))
		return -EAGAIN;
	return seal(dl, key, b, len, pn_take(dl, 1), to);
}

int gn_dl_seal_hello(struct gn_dl *dl, struct gn_buf *b, u16 len, int to)
{
	return seal(dl, dl->keys ? dl->keys->hello : NULL, b, len,
		    pn_take(dl, 1), to);
}

int gn_dl_seal_msg(struct gn_dl *dl, struct gn_txmsg *m, u32 i, u16 len,
		   int to)
{
	const u8 *key;

	if (!sender_key(dl, &key))
		return -EAGAIN;
	return seal(dl, key, m->pkt[i], len,
		    i < m->cap && m->pn ? m->pn + i : 0, to);
}

void gn_dl_kick(struct gn_dl *dl)
{
	if (dl->tp->ops->wake)
		dl->tp->ops->wake(dl->tp->state);
}

/*
 * @b to the transport: 1 it took it (@b is put), 0 it had no room (@b is
 * kept), < 0 it cannot send it at all (@b is put, the packet lost).
 */
static int send_ctl(struct gn_dl *dl, struct gn_buf *b)
{
	struct gn_event ev = { .type = GN_EV_TX_CTL, .peer = b->peer,
			       .wire_bytes = b->len };
	int r = dl->tp->ops->send(dl->tp->state, &b, 1);

	if (!r)
		return 0;
	if (r == 1)
		gn_dl_account(dl, &ev);
	gn_dl_buf_put(dl, b);
	return r;
}

/*
 * Control packets the transport had no room for (its tx queue full of
 * this rank's own data) wait in the park, in order, and go before
 * anything else: an ACK dropped there made its sender take packets that
 * had arrived for lost, as soon as a later ACK acknowledged later ones
 * (RACK), and send them again. Return: whether the park is empty.
 */
bool gn_dl_park_flush(struct gn_dl *dl)
{
	while (dl->park_n && send_ctl(dl, dl->park[dl->park_head]))
		gn_dl_park_pop(dl);
	return !dl->park_n;
}

/*
 * One packet that needs no acknowledgement, @b, which is put: now, or
 * after those parked. A full park drops its oldest, as the wire would.
 */
void gn_dl_send_now(struct gn_dl *dl, struct gn_buf *b)
{
	if (gn_dl_park_flush(dl) && send_ctl(dl, b))
		return;
	dl->counts.ctl_parked++;
	if (dl->park_n == GN_CTL_PARK) {
		gn_dl_buf_put(dl, gn_dl_park_pop(dl));
		dl->counts.ctl_dropped++;
	}
	dl->park[(dl->park_head + dl->park_n++) % GN_CTL_PARK] = b;
}

/* gn_dl_seal() and gn_dl_send_now(); unsealed, @b is put, as if lost. */
void gn_dl_seal_send(struct gn_dl *dl, struct gn_buf *b, u16 len, int to)
{
	if (gn_dl_seal(dl, b, len, to))
		gn_dl_buf_put(dl, b);
	else
		gn_dl_send_now(dl, b);
}

/* ---- messages ------------------------------------------------------------ */

struct gn_txmsg *gn_dl_msg_new(struct gn_dl *dl, u32 rows, u32 cap)
{
	size_t bytes = sizeof(struct gn_txmsg) + (size_t)cap * sizeof(void *) +
		       (size_t)rows * sizeof(struct gn_txrow) +
		       (size_t)rows * cap * sizeof(struct gn_txpkt);
	struct gn_txmsg *m = gn_alloc(dl->env, bytes);
	u32 r;

	if (!m)
		return NULL;
	m->pkt = (struct gn_buf **)(m + 1);
	m->row = (struct gn_txrow *)(m->pkt + cap);
	m->sent = (struct gn_txpkt *)(m->row + rows);
	m->rows = rows;
	m->cap = cap;
	for (r = 0; r < rows; r++)
		m->row[r].m = m;
	m->pn = pn_take(dl, cap);
	return m;
}

void gn_dl_msg_free(struct gn_dl *dl, struct gn_txmsg *m)
{
	if (!m)
		return;
	gn_dl_msg_clear(dl, m);
	gn_free(dl->env, m);
}

static int row_peer(const struct gn_txmsg *m, u32 r)
{
	return m->to == GN_RANK_ALL ? (int)r : m->to;
}

static struct gn_txpkt *pkt_of(struct gn_txmsg *m, u32 r, u32 i)
{
	return &m->sent[(size_t)r * m->cap + i];
}

static void fly_unlink(struct gn_peer *p, struct gn_txpkt *q)
{
	if (q->prev)
		q->prev->next = q->next;
	else if (p->fly_head == q)
		p->fly_head = q->next;
	else
		return;		/* not on the list */
	if (q->next)
		q->next->prev = q->prev;
	else
		p->fly_tail = q->prev;
	q->prev = q->next = NULL;
}

static void fly_append(struct gn_peer *p, struct gn_txpkt *q)
{
	q->next = NULL;
	q->prev = p->fly_tail;
	if (p->fly_tail)
		p->fly_tail->next = q;
	else
		p->fly_head = q;
	p->fly_tail = q;
}

/* Put @row on its peer's queue of rows with packets never sent. */
static void newq_add(struct gn_peer *p, struct gn_txrow *row, bool front)
{
	if (row->queued)
		return;
	row->queued = true;
	if (front) {
		row->prev = NULL;
		row->next = p->newq_head;
		if (p->newq_head)
			p->newq_head->prev = row;
		else
			p->newq_tail = row;
		p->newq_head = row;
	} else {
		row->next = NULL;
		row->prev = p->newq_tail;
		if (p->newq_tail)
			p->newq_tail->next = row;
		else
			p->newq_head = row;
		p->newq_tail = row;
	}
}

static void newq_unlink(struct gn_peer *p, struct gn_txrow *row)
{
	if (!row->queued)
		return;
	if (row->prev)
		row->prev->next = row->next;
	else
		p->newq_head = row->next;
	if (row->next)
		row->next->prev = row->prev;
	else
		p->newq_tail = row->prev;
	row->prev = row->next = NULL;
	row->queued = false;
}

void gn_dl_msg_queue(struct gn_dl *dl, struct gn_txmsg *m)
{
	u32 r, i;

	m->left = 0;
	for (r = 0; r < m->rows; r++) {
		int peer = row_peer(m, r);
		struct gn_txrow *row = &m->row[r];
		struct gn_event ev = { .type = GN_EV_MSG, .phase = m->phase,
				       .peer = peer, .tensor = m->tensor,
				       .raw_bytes = m->raw_bytes,
				       .stream_bytes = m->stream_bytes,
				       .flow = m->flow };

		row->unacked = 0;
		row->next_new = m->npkts;
		row->done = true;
		if (peer == dl->rank || dl->peers[peer].dead || !m->npkts)
			continue;
		for (i = 0; i < m->npkts; i++)
			*pkt_of(m, r, i) = (struct gn_txpkt){ .m = m, .i = i,
							      .row = (u16)r };
		row->unacked = m->npkts;
		row->next_new = 0;
		row->done = false;
		m->left++;
		if (!m->ctl)
			gn_dl_account(dl, &ev);
		newq_add(&dl->peers[peer], row, m->ctl);
	}
	if (!m->left) {
		gn_dl_msg_clear(dl, m);
		return;
	}
	m->busy = true;
	dl->busy_msgs++;
	gn_dl_msg_hash_add(dl, m);
}

/* Row @r of @m owes nothing any more: its packets leave the flight list. */
static void row_done(struct gn_dl *dl, struct gn_txmsg *m, u32 r)
{
	struct gn_peer *p = &dl->peers[row_peer(m, r)];
	struct gn_txrow *row = &m->row[r];
	u32 i;

	if (row->done)
		return;
	row->done = true;
	for (i = 0; i < row->next_new; i++) {
		struct gn_txpkt *q = pkt_of(m, r, i);

		if (q->acked)
			continue;
		fly_unlink(p, q);
		if (!m->ctl && p->inflight)
			p->inflight--;
	}
	row->unacked = 0;
	row->next_new = m->npkts;
	/* Off the queue now: the message may be freed once it is done. */
	newq_unlink(p, row);
	if (m->left && !--m->left)
		gn_dl_msg_clear(dl, m);
}

void gn_dl_msg_cancel(struct gn_dl *dl, struct gn_txmsg *m)
{
	u32 r;

	for (r = 0; r < m->rows && m->busy; r++)
		row_done(dl, m, r);
}

/*
 * Give the packets back to the transport. A busy message is done (or
 * cancelled) first; a control message goes back on the free list. The
 * message gets numbers for its next packets: a number seals one packet
 * only, and a message is emptied before it is filled again.
 */
void gn_dl_msg_clear(struct gn_dl *dl, struct gn_txmsg *m)
{
	u32 i;

	if (m->busy) {
		if (m->left) {
			gn_dl_msg_cancel(dl, m);
			return;	/* row_done() came back here */
		}
		m->busy = false;
		dl->busy_msgs--;
		gn_dl_msg_hash_del(dl, m);
	}
	for (i = 0; i < m->npkts; i++)
		if (m->pkt[i]) {
			gn_dl_buf_put(dl, m->pkt[i]);
			m->pkt[i] = NULL;
		}
	m->npkts = 0;
	m->pn = pn_take(dl, m->cap);
	if (m->ctl && !m->owner) {
		m->owner = dl;	/* marks it free */
		m->hnext = dl->ctrl_free;
		dl->ctrl_free = m;
	}
}

/*
 * A control message: one packet, sent and retransmitted like data, but
 * ahead of data and outside the window; acknowledged by its sequence.
 */
int gn_dl_ctrl_send(struct gn_dl *dl, int peer, u8 kind, u8 flags,
		    u32 tensor, u32 stepno, u8 codec, u64 value, u32 extra,
		    const u32 *params)
{
	struct gn_peer *p = &dl->peers[peer];
	struct gn_wire_ctrl wc = { .kind = kind, .flags = flags,
				   .value = value, .extra = extra };
	struct gn_txmsg *m = dl->ctrl_free;
	struct gn_wire_hdr h;
	struct gn_buf *b;

	if (m) {
		dl->ctrl_free = m->hnext;
		m->hnext = NULL;
	} else {
		m = gn_dl_msg_new(dl, 1, 1);
		if (!m)
			return -ENOMEM;
		m->ctl = true;
	}
	m->owner = NULL;
	b = gn_dl_buf(dl);
	if (!b) {
		gn_dl_msg_clear(dl, m);
		return -ENOMEM;
	}
	if (params)
		memcpy(wc.params, params, sizeof(wc.params));
	wc.seq = p->ctrl_seq + 1;
	gn_dl_hdr_init(dl, &h, GN_PKT_CTRL, peer);
	h.tensor = tensor;
	h.step = stepno;
	h.codec = codec;
	gn_wire_hdr_put(&h, b->data);
	gn_wire_ctrl_put(&wc, b->data);
	if (gn_dl_seal(dl, b, GN_WIRE_HDR_LEN + GN_WIRE_CTRL_LEN, peer)) {
		gn_dl_buf_put(dl, b);
		gn_dl_msg_clear(dl, m);
		return -EIO;
	}
	p->ctrl_seq = wc.seq;
	m->pkt[0] = b;
	m->npkts = 1;
	m->to = (u16)peer;
	m->phase = GN_PHASE_CTRL;
	m->tensor = (u32)peer;
	m->stepno = wc.seq;
	m->chunk_off = 0;
	gn_dl_msg_queue(dl, m);
	return 0;
}

/* ---- the pump -------------------------------------------------------------- */

static u64 rto_of(const struct gn_peer *p)
{
	return p->rto_ns > RTO_FLOOR_NS ? p->rto_ns : RTO_FLOOR_NS;
}

static u64 reorder_of(const struct gn_peer *p)
{
	return p->srtt_ns / 4 > REORDER_MIN_NS ? p->srtt_ns / 4 :
						 REORDER_MIN_NS;
}

static enum due due(const struct gn_dl *dl, const struct gn_peer *p,
		    const struct gn_txpkt *q)
{
	if (q->sent_ns + reorder_of(p) < p->rack_ns)
		return DUE_LOST;
	return dl->now_ns - q->sent_ns >= rto_of(p) ? DUE_TIMEOUT : NOT_DUE;
}

/*
 * Twice the round trip of PINGs: a PONG is sent at once, while an ACK may
 * wait for company or for the data that imply it (receive.c), so the
 * round trips of ACKs say little about how soon a lost tail can show.
 * The floor keeps the probe beyond the reordering window, which a PONG
 * must clear to show a packet lost.
 */
static u64 pto_of(const struct gn_peer *p)
{
	return 2 * p->prtt_ns > PTO_FLOOR_NS ? 2 * p->prtt_ns : PTO_FLOOR_NS;
}

/*
 * When @p is to be probed: a PTO after the oldest packet in flight was
 * sent, or after the last probe if it is not answered yet; doubled for
 * every probe since one was answered or the oldest packet acknowledged.
 */
static u64 probe_at(const struct gn_peer *p)
{
	u64 base = p->probe_ns ? p->probe_ns : p->fly_head->sent_ns;
	u32 k = p->probe_backoff < PTO_BACKOFF_MAX ? p->probe_backoff :
						     PTO_BACKOFF_MAX;

	return base + (pto_of(p) << k) +
	       (p->probe_credit < PROBE_COST ? PTO_SLOW_NS : 0);
}

static void probe(struct gn_dl *dl, struct gn_peer *p)
{
	if (p->probe_credit < PROBE_COST)
		dl->counts.probe_slow++;
	else
		p->probe_credit -= PROBE_COST;
	p->probe_ns = gn_dl_ping_send(dl, p);
	if (p->probe_backoff < 255)
		p->probe_backoff++;
	dl->counts.probes++;
}

static void probe_earn(struct gn_peer *p, u32 wire_bytes)
{
	u32 c = p->probe_credit + wire_bytes / PROBE_SHARE;

	p->probe_credit = c < PROBE_BURST * PROBE_COST ? c :
			  PROBE_BURST * PROBE_COST;
}

/*
 * Losses shrink the window once per round trip: by half after a timeout,
 * a little after a loss that later packets revealed (random loss on a
 * lossy link is not always congestion).
 */
static void shrink(struct gn_dl *dl, struct gn_peer *p, enum due why)
{
	/* x 1/2, or x 17/20 */
	u64 cut = why == DUE_TIMEOUT ? p->cwnd / 2 : p->cwnd / 20 * 17;

	if (dl->now_ns - p->last_loss_ns < p->srtt_ns)
		return;
	p->cwnd = cut < CWND_MIN ? CWND_MIN : cut;
	p->ssthresh = p->cwnd;
	p->last_loss_ns = dl->now_ns;
}

static bool window_open(const struct gn_peer *p)
{
	return (u64)p->inflight * GN_CWND_ONE < p->cwnd;
}

/* A row may send: its receiver has what it needs to take the packets. */
static bool row_open(const struct gn_txrow *row, int peer)
{
	return row->m->busy && row->next_new < row->m->npkts &&
	       (!row->m->gate || row->m->gate[peer]);
}

/* What is due to @p: lost and timed-out packets first, then new ones. */
static int collect(struct gn_dl *dl, struct gn_peer *p)
{
	struct gn_txrow *row, *next;
	struct gn_txpkt *q;
	int n = 0;

	for (q = p->fly_head; q && n < GN_TX_BATCH; q = q->next) {
		enum due why = due(dl, p, q);

		if (why == NOT_DUE)
			break;
		dl->tx[n] = q->m->pkt[q->i];
		dl->tx_pend[n] = q;
		dl->tx_why[n++] = (u8)why;
	}
	for (row = p->newq_head; row && n < GN_TX_BATCH; row = next) {
		struct gn_txmsg *m = row->m;

		next = row->next;
		if (!m->busy || row->next_new >= m->npkts) {
			newq_unlink(p, row);	/* nothing left to send */
			continue;
		}
		if (!row_open(row, p->rank))
			continue;	/* gated: its receiver is not ready */
		while (row->next_new < m->npkts && n < GN_TX_BATCH &&
		       (m->ctl || window_open(p))) {
			q = pkt_of(m, (u32)(row - m->row), row->next_new++);
			dl->tx[n] = m->pkt[q->i];
			dl->tx_pend[n] = q;
			dl->tx_why[n++] = DUE_NEW;
			if (!m->ctl)
				p->inflight++;
		}
		if (!m->ctl && !window_open(p))
			break;
	}
	return n;
}

static void sent_one(struct gn_dl *dl, struct gn_peer *p, struct gn_txpkt *q,
		     enum due why)
{
	struct gn_txmsg *m = q->m;
	struct gn_event ev = { .type = m->ctl ? GN_EV_TX_CTL : GN_EV_TX,
			       .phase = m->phase, .peer = p->rank,
			       .tensor = m->tensor, .flow = m->flow,
			       .wire_bytes = m->pkt[q->i]->len };

	if (why != DUE_NEW) {
		fly_unlink(p, q);
		shrink(dl, p, why);
		q->again = 1;
		ev.again = true;
		if (why == DUE_LOST)
			dl->counts.rtx_lost++;
		else
			dl->counts.rtx_timeout++;
	} else if (!m->ctl) {
		probe_earn(p, ev.wire_bytes);
	}
	q->sent_ns = dl->now_ns;
	fly_append(p, q);
	gn_dl_account(dl, &ev);
}

/* A packet the transport did not take: it is due again next time. */
static void unsent_one(struct gn_dl *dl, struct gn_peer *p,
		       struct gn_txpkt *q, enum due why)
{
	struct gn_txmsg *m = q->m;
	struct gn_txrow *row = &m->row[q->row];

	(void)dl;
	if (why != DUE_NEW)
		return;
	if (q->i < row->next_new)
		row->next_new = q->i;
	if (!m->ctl && p->inflight)
		p->inflight--;
	newq_add(p, row, true);
}

/*
 * Send what is due to every peer, and probe the peers whose oldest packet
 * waited too long. The clock is read again: the layer above may have
 * worked for milliseconds since the poll began, and a send time taken
 * too early makes the packet look older than it is.
 */
void gn_dl_pump(struct gn_dl *dl)
{
	int i;

	dl->now_ns = gn_env_now(dl->env);
	for (i = 0; i < dl->world; i++) {
		struct gn_peer *p = &dl->peers[i];
		int n, sent, k;

		if (i == dl->rank || p->dead)
			continue;
		n = collect(dl, p);
		for (k = 0; k < n; k++)
			dl->tx[k]->peer = (u16)i;
		sent = n ? dl->tp->ops->send(dl->tp->state, dl->tx, n) : 0;
		if (sent < 0)
			sent = 0;
		for (k = 0; k < n; k++) {
			if (k < sent)
				sent_one(dl, p, dl->tx_pend[k], dl->tx_why[k]);
			else
				unsent_one(dl, p, dl->tx_pend[k], dl->tx_why[k]);
		}
		if (p->fly_head && dl->now_ns >= probe_at(p))
			probe(dl, p);
	}
}

/* The earliest time something may be due, for the sleep. */
u64 gn_dl_tx_deadline(struct gn_dl *dl)
{
	u64 t = ~0ull;
	int i;

	for (i = 0; i < dl->world; i++) {
		struct gn_peer *p = &dl->peers[i];
		struct gn_txrow *row;

		if (i == dl->rank || p->dead)
			continue;
		if (p->fly_head) {
			u64 at = p->fly_head->sent_ns + rto_of(p), pr = probe_at(p);

			if (due(dl, p, p->fly_head) != NOT_DUE)
				return dl->now_ns;
			at = pr < at ? pr : at;
			t = at < t ? at : t;
		}
		for (row = p->newq_head; row; row = row->next)
			if (row_open(row, i) && (row->m->ctl || window_open(p)))
				return dl->now_ns;
	}
	return t;
}

void gn_dl_drop_peer(struct gn_dl *dl, int peer)
{
	struct gn_peer *p = &dl->peers[peer];
	u32 i;

	/* Every busy message is in the table; rows to @peer end. */
	for (i = 0; i <= dl->msg_mask; i++) {
		struct gn_txmsg *m = dl->msg_tab[i], *next;

		for (; m; m = next) {
			next = m->hnext;
			if (m->to == GN_RANK_ALL)
				row_done(dl, m, (u32)peer);
			else if (m->to == peer)
				row_done(dl, m, 0);
		}
	}
	p->newq_head = p->newq_tail = NULL;
	p->fly_head = p->fly_tail = NULL;
	p->inflight = 0;
}

/* ---- acknowledgements in ------------------------------------------------------ */

static void acked_one(struct gn_dl *dl, struct gn_peer *p, struct gn_txmsg *m,
		      u32 r, u32 i)
{
	struct gn_txpkt *q = pkt_of(m, r, i);
	u64 sent = q->sent_ns;

	if (q->acked || i >= m->row[r].next_new)
		return;
	q->acked = 1;
	/* The oldest packet moved: probing starts over. */
	if (p->fly_head == q)
		p->probe_backoff = 0;
	fly_unlink(p, q);
	m->row[r].unacked--;
	/* Which send an acknowledgement answers is only clear for one send. */
	if (!q->again && sent && dl->now_ns > sent) {
		gn_dl_peer_rtt(p, dl->now_ns - sent);
		if (sent > p->rack_ns)
			p->rack_ns = sent;
	}
	if (m->ctl)
		return;
	if (p->inflight)
		p->inflight--;
	/* Doubling per round trip up to ssthresh, then one packet per trip. */
	p->cwnd += p->cwnd < p->ssthresh ? GN_CWND_ONE :
		   GN_CWND_ONE * GN_CWND_ONE / p->cwnd;
	if (p->cwnd > CWND_MAX)
		p->cwnd = CWND_MAX;
}

static void ack_entry_in(struct gn_dl *dl, struct gn_peer *p,
			 const struct gn_wire_ack *a, const u8 *bits)
{
	struct gn_txmsg *m = gn_dl_msg_find(dl, p->rank, a->tensor, a->step,
					    a->phase, a->chunk_off);
	u32 r, i;

	if (!m || m->npkts != a->npkts)
		return;	/* old news */
	r = m->to == GN_RANK_ALL ? (u32)p->rank : 0;
	if (m->row[r].done)
		return;
	if (a->base == a->npkts) {
		/* All of it: each packet counts as if its bit were set (RTT,
		 * RACK's clock, the window). */
		for (i = 0; i < m->row[r].next_new; i++)
			acked_one(dl, p, m, r, i);
		row_done(dl, m, r);
		return;
	}
	for (i = 0; i < (u32)a->bytes * 8 && a->base + i < a->npkts; i++)
		if (bits[i / 8] >> (i % 8) & 1)
			acked_one(dl, p, m, r, a->base + i);
	if (!m->row[r].unacked)
		row_done(dl, m, r);
}

/*
 * No RTT sample and no move of RACK's clock: the evidence comes with the
 * peer's own traffic, later than an ACK would, and out of step with its
 * ACKs. The packets leave the flight list and the window as acknowledged.
 */
void gn_dl_ack_implied(struct gn_dl *dl, struct gn_peer *p, u32 tensor,
		       u32 step, u8 phase, u64 off)
{
	struct gn_txmsg *m = gn_dl_msg_find(dl, p->rank, tensor, step, phase,
					    off);
	u32 r;

	if (!m || m->ctl)
		return;
	r = m->to == GN_RANK_ALL ? (u32)p->rank : 0;
	/* A peer cannot have what was never sent: evidence of that is false. */
	if (m->row[r].next_new < m->npkts)
		return;
	row_done(dl, m, r);
}

void gn_dl_pong_in(struct gn_dl *dl, struct gn_peer *p, u64 stamp)
{
	u64 reo = reorder_of(p), r = dl->now_ns > stamp ? dl->now_ns - stamp : 0;
	bool again = false;
	struct gn_txpkt *q;

	p->prtt_ns = p->prtt_ns ? (7 * p->prtt_ns + r) / 8 : r;
	/* What this PONG shows lost that the ACKs did not: the pump resends it. */
	for (q = p->fly_head; stamp > p->rack_ns && q &&
	     q->sent_ns + reo < stamp; q = q->next)
		if (q->sent_ns + reo >= p->rack_ns) {
			dl->counts.probe_lost++;
			again |= q->again;
		}
	if (stamp > p->rack_ns)
		p->rack_ns = stamp;
	if (!p->probe_ns || stamp < p->probe_ns)
		return;
	/*
	 * Answered: probing starts over, unless a packet sent again is lost
	 * again (a receiver that refuses it for now): then it backs off.
	 */
	p->probe_ns = 0;
	if (!again)
		p->probe_backoff = 0;
	dl->counts.probe_answers++;
}

bool gn_dl_msg_sent_to(const struct gn_txmsg *m, int peer)
{
	u32 r = m->to == GN_RANK_ALL ? (u32)peer : 0;

	if (r >= m->rows)
		return false;
	return m->row[r].done ||
	       (m->npkts && m->sent[(size_t)r * m->cap].sent_ns);
}

/* Every entry is checked before any is applied. */
void gn_dl_ack_in(struct gn_dl *dl, struct gn_peer *p,
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
		ack_entry_in(dl, p, &a, at + GN_WIRE_ACK_ENTRY);
		at += len;
		left -= (size_t)len;
	}
	return;
bad:
	gn_dl_drop(dl, p, GN_DROP_MALFORMED);
}

void gn_dl_ctrl_ack_in(struct gn_dl *dl, struct gn_peer *p,
		       const struct gn_wire_hdr *h, const u8 *pkt)
{
	struct gn_wire_ctrl_ack a;
	struct gn_txmsg *m;

	if (gn_wire_ctrl_ack_get(pkt, h, &a)) {
		gn_dl_drop(dl, p, GN_DROP_MALFORMED);
		return;
	}
	m = gn_dl_msg_find(dl, p->rank, (u32)p->rank, a.seq, GN_PHASE_CTRL, 0);
	if (!m || !m->ctl)
		return;
	acked_one(dl, p, m, 0, 0);
	if (!m->row[0].unacked)
		row_done(dl, m, 0);
	if (dl->up->ctrl_acked)
		dl->up->ctrl_acked(dl->up_arg, p, a.seq);
}
