// SPDX-License-Identifier: MIT
/*
 * mem.c - the in-memory fabric: every rank's receive queue is a ring in
 * one shared block, and sending is holding the buffer and queueing it at
 * the receiver, with faults drawn from a seeded PRNG. Freestanding (it
 * runs in the kernel module's self-test too): the env's alloc at fabric
 * creation is all the memory it ever takes, and there is no floating
 * point.
 *
 * Threads: none of its own and no locks. One driver thread calls every
 * rank's operations in turn (get, hold and put included); a second thread
 * touching the fabric at the same time is a bug.
 *
 * A received packet is copied into a receive buffer of its own, as a
 * NIC's DMA would: the receiver's core decrypts it in place and chains it
 * through ->next, while the sender's core may still hold its buffer for a
 * retransmission and read its ->peer (the receiver). The queues hold
 * references to the senders' buffers, not copies, until then.
 */
#include "env.h"
#include "transport.h"
#include "mem.h"

/* Packets held back for reordering, per receiver. */
#define MEM_ASIDE 64
/* Probabilities are in 1/65536: one draw is 16 bits. */
#define MEM_PROB_ONE 65536u

struct mem_pkt {
	struct gn_buf *b;		/* a data or receive buffer, held */
	u16 from, len;
};

struct mem_ring {
	struct mem_pkt *e;
	u32 cap, head, n;
};

struct mem_end {
	struct gn_mem_fabric *fab;
	struct mem_ring q;		/* delivered by recv, in order */
	struct mem_ring aside;		/* reordered: join q later */
	u16 rank;
	bool open;
};

struct gn_mem_fabric {
	struct gn_env env;
	int world;
	u32 max_pkt;
	u32 nbufs, ndesc;
	struct gn_buf *bufs;		/* data buffers */
	u8 *data;
	struct gn_buf **free;
	u32 nfree;
	struct gn_buf *descs;		/* receive buffers */
	u8 *ddata;
	struct gn_buf **dfree;
	u32 ndfree;
	struct mem_end *ends;
	struct mem_pkt *qmem, *amem;
	struct gn_mem_faults faults;
	u64 rng;
	struct gn_mem_counts counts;
};

/* xorshift64: 16 bits per draw, the same on every CPU and in the kernel. */
static u32 mem_draw(struct gn_mem_fabric *fab)
{
	u64 x = fab->rng;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	fab->rng = x;
	return (u32)(x >> 48);
}

static bool ring_push(struct mem_ring *r, struct mem_pkt p)
{
	if (r->n == r->cap)
		return false;
	r->e[(r->head + r->n) & (r->cap - 1)] = p;
	r->n++;
	return true;
}

static struct mem_pkt ring_pop(struct mem_ring *r)
{
	struct mem_pkt p = r->e[r->head];

	r->head = (r->head + 1) & (r->cap - 1);
	r->n--;
	return p;
}

/* ---- buffers ---- */

static struct gn_buf *mem_get(void *tp)
{
	struct mem_end *e = tp;
	struct gn_mem_fabric *fab = e->fab;
	struct gn_buf *b;

	if (!fab->nfree)
		return NULL;
	b = fab->free[--fab->nfree];
	b->refs = 1;
	b->len = 0;
	b->peer = 0;
	b->next = NULL;
	return b;
}

static void mem_hold(void *tp, struct gn_buf *b)
{
	(void)tp;
	b->refs++;
}

static bool is_rx_buf(const struct gn_mem_fabric *fab, const struct gn_buf *b)
{
	return b >= fab->descs && b < fab->descs + fab->ndesc;
}

static void buf_put(struct gn_mem_fabric *fab, struct gn_buf *b)
{
	/* A put too many must not free the buffer twice. */
	if (unlikely(!b->refs))
		return;
	if (--b->refs)
		return;
	if (is_rx_buf(fab, b))
		fab->dfree[fab->ndfree++] = b;
	else
		fab->free[fab->nfree++] = b;
}

static void mem_put(void *tp, struct gn_buf *b)
{
	struct mem_end *e = tp;

	buf_put(e->fab, b);
}

/* ---- send ---- */

/* Into @to's queue, holding the data; a full queue loses it. */
static void enqueue(struct gn_mem_fabric *fab, struct mem_ring *r,
		    struct mem_pkt p)
{
	if (!ring_push(r, p)) {
		fab->counts.lost++;
		return;
	}
	p.b->refs++;
}

/* What was put aside for @to joins its queue, after what is there. */
static int flush_aside(struct gn_mem_fabric *fab, struct mem_end *to)
{
	int n = 0;

	while (to->aside.n) {
		struct mem_pkt p = ring_pop(&to->aside);

		/* The aside ring's reference moves to the queue. */
		if (!ring_push(&to->q, p)) {
			fab->counts.lost++;
			buf_put(fab, p.b);
		}
		n++;
	}
	return n;
}

static void send_one(struct gn_mem_fabric *fab, struct mem_end *from,
		     struct gn_buf *b)
{
	struct mem_pkt p = {
		.b = b,			/* a received one, too: forwarded */
		.from = from->rank,
		.len = b->len,
	};
	const struct gn_mem_faults *f = &fab->faults;
	/* Three draws for every packet: the sequence depends on the seed only. */
	u32 lose = mem_draw(fab), dup = mem_draw(fab), late = mem_draw(fab);
	struct mem_end *to;
	int copies, i;

	fab->counts.sent++;
	if (b->peer >= fab->world || b->peer == from->rank ||
	    !fab->ends[b->peer].open || lose < f->loss) {
		fab->counts.lost++;
		return;
	}
	to = &fab->ends[b->peer];
	copies = dup < f->dup ? 2 : 1;
	fab->counts.duplicated += copies - 1;
	if (late < f->reorder && to->aside.n + copies <= to->aside.cap) {
		fab->counts.reordered++;
		for (i = 0; i < copies; i++)
			enqueue(fab, &to->aside, p);
		return;
	}
	for (i = 0; i < copies; i++)
		enqueue(fab, &to->q, p);
	flush_aside(fab, to);
}

/* Every packet is taken: what is lost is the fabric's doing. */
static int mem_send(void *tp, struct gn_buf *const *b, int n)
{
	struct mem_end *e = tp;
	int i;

	for (i = 0; i < n; i++)
		send_one(e->fab, e, b[i]);
	return n;
}

/* ---- receive ---- */

static int mem_recv(void *tp, struct gn_buf **b, int max)
{
	struct mem_end *e = tp;
	struct gn_mem_fabric *fab = e->fab;
	int n = 0;

	/* Out of receive buffers: the rest waits in the queue. */
	while (n < max && e->q.n && fab->ndfree) {
		struct mem_pkt p = ring_pop(&e->q);
		struct gn_buf *d = fab->dfree[--fab->ndfree];

		memcpy(d->data, p.b->data, p.len);
		d->len = p.len;
		d->peer = p.from;
		d->refs = 1;
		d->next = NULL;
		buf_put(fab, p.b);	/* the queue's reference */
		b[n++] = d;
		fab->counts.delivered++;
	}
	return n;
}

/* Packets put aside for this rank are delivered now, late. */
static int mem_poll(void *tp, u64 now_ns, u64 *next_ns)
{
	struct mem_end *e = tp;

	(void)now_ns;
	(void)next_ns;
	return flush_aside(e->fab, e);
}

/* Nothing arrives while the only thread waits: no sleeping. */
static int mem_wait(void *tp, int timeout_ms)
{
	struct mem_end *e = tp;

	(void)timeout_ms;
	flush_aside(e->fab, e);
	return e->q.n ? 1 : 0;
}

static void mem_wake(void *tp)
{
	(void)tp;
}

/* What is queued for a closed rank is lost; its receive buffers stay valid. */
static void mem_close(void *tp)
{
	struct mem_end *e = tp;
	struct gn_mem_fabric *fab = e->fab;

	while (e->q.n) {
		fab->counts.lost++;
		buf_put(fab, ring_pop(&e->q).b);
	}
	while (e->aside.n) {
		fab->counts.lost++;
		buf_put(fab, ring_pop(&e->aside).b);
	}
	e->open = false;
}

static const struct gn_transport_ops mem_ops = {
	.name = "mem",
	.get = mem_get,
	.hold = mem_hold,
	.put = mem_put,
	.send = mem_send,
	.recv = mem_recv,
	.poll = mem_poll,
	.wait = mem_wait,
	.wake = mem_wake,
	.close = mem_close,
};

/* ---- the fabric ---- */

/**
 * gn_mem_fabric_new() - a fabric of @world ranks
 * @env: where the memory comes from (copied)
 * @world: ranks, 1 to 65535
 * @max_pkt: bytes of a buffer
 * @nbufs: data buffers, shared by every rank; each rank's queue holds as
 *	many packets (rounded up to a power of two), and receive has twice
 *	as many buffers of its own
 * @faults: loss, duplication and reordering, or NULL for none
 * @out: the fabric
 *
 * Return: 0, -EINVAL for bad arguments or -ENOMEM.
 */
int gn_mem_fabric_new(const struct gn_env *env, int world, u32 max_pkt,
		      u32 nbufs, const struct gn_mem_faults *faults,
		      struct gn_mem_fabric **out)
{
	struct gn_mem_fabric *fab;
	u32 qcap = 16, i;
	int r;

	if (!env || !env->ops || !out || world < 1 || world >= (int)GN_PEER_NONE ||
	    !max_pkt || max_pkt > 0xffff || !nbufs || nbufs > (1u << 24))
		return -EINVAL;
	while (qcap < nbufs)
		qcap <<= 1;
	fab = gn_alloc(env, sizeof(*fab));
	if (!fab)
		return -ENOMEM;
	fab->env = *env;
	fab->world = world;
	fab->max_pkt = max_pkt;
	fab->nbufs = nbufs;
	fab->ndesc = 2 * nbufs;
	if (faults)
		fab->faults = *faults;
	/* xorshift never leaves zero. */
	fab->rng = fab->faults.seed ^ 0x9e3779b97f4a7c15ull;
	if (!fab->rng)
		fab->rng = 1;
	fab->bufs = gn_alloc_array(env, nbufs, sizeof(*fab->bufs));
	fab->data = gn_alloc_array(env, nbufs, max_pkt);
	fab->free = gn_alloc_array(env, nbufs, sizeof(*fab->free));
	fab->descs = gn_alloc_array(env, fab->ndesc, sizeof(*fab->descs));
	fab->ddata = gn_alloc_array(env, fab->ndesc, max_pkt);
	fab->dfree = gn_alloc_array(env, fab->ndesc, sizeof(*fab->dfree));
	fab->ends = gn_alloc_array(env, (size_t)world, sizeof(*fab->ends));
	fab->qmem = gn_alloc_array(env, (size_t)world * qcap, sizeof(*fab->qmem));
	fab->amem = gn_alloc_array(env, (size_t)world * MEM_ASIDE,
				   sizeof(*fab->amem));
	if (!fab->bufs || !fab->data || !fab->free || !fab->descs ||
	    !fab->ddata || !fab->dfree || !fab->ends || !fab->qmem ||
	    !fab->amem) {
		gn_mem_fabric_free(fab);
		return -ENOMEM;
	}
	/* Lowest first out, which makes runs easy to read in a debugger. */
	for (i = 0; i < nbufs; i++) {
		fab->bufs[i].data = fab->data + (size_t)i * max_pkt;
		fab->free[nbufs - 1 - i] = &fab->bufs[i];
	}
	fab->nfree = nbufs;
	for (i = 0; i < fab->ndesc; i++) {
		fab->descs[i].data = fab->ddata + (size_t)i * max_pkt;
		fab->dfree[fab->ndesc - 1 - i] = &fab->descs[i];
	}
	fab->ndfree = fab->ndesc;
	for (r = 0; r < world; r++) {
		struct mem_end *e = &fab->ends[r];

		e->fab = fab;
		e->rank = (u16)r;
		e->q.e = fab->qmem + (size_t)r * qcap;
		e->q.cap = qcap;
		e->aside.e = fab->amem + (size_t)r * MEM_ASIDE;
		e->aside.cap = MEM_ASIDE;
	}
	*out = fab;
	return 0;
}

/**
 * gn_mem_open() - rank @rank's end of @fab, in @tp
 *
 * Packets sent to a rank before it opens or after it closes are lost.
 * Return: 0, or -EINVAL (no such rank, or it is open already).
 */
int gn_mem_open(struct gn_mem_fabric *fab, int rank, struct gn_transport *tp)
{
	struct mem_end *e;

	if (!fab || !tp || rank < 0 || rank >= fab->world)
		return -EINVAL;
	e = &fab->ends[rank];
	if (e->open)
		return -EINVAL;
	e->open = true;
	tp->ops = &mem_ops;
	tp->state = e;
	tp->caps.max_pkt = fab->max_pkt;
	tp->caps.flags = 0;
	return 0;
}

void gn_mem_fabric_free(struct gn_mem_fabric *fab)
{
	struct gn_env env_copy, *env = &env_copy;

	if (!fab)
		return;
	/* The env lives inside what is freed: free with a copy of it. */
	env_copy = fab->env;
	gn_free(env, fab->amem);
	gn_free(env, fab->qmem);
	gn_free(env, fab->ends);
	gn_free(env, fab->dfree);
	gn_free(env, fab->ddata);
	gn_free(env, fab->descs);
	gn_free(env, fab->free);
	gn_free(env, fab->data);
	gn_free(env, fab->bufs);
	gn_free(env, fab);
}

void gn_mem_fabric_counts(const struct gn_mem_fabric *fab,
			  struct gn_mem_counts *out)
{
	*out = fab->counts;
	out->bufs_free = fab->nfree;
	out->bufs_total = fab->nbufs;
}
