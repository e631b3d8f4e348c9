// SPDX-License-Identifier: MIT
/*
 * progress.c - the context's progress thread: receive and check every
 * packet, the handshake, liveness probes, reliable control messages and
 * timers; data and acknowledgements go to allreduce.c and reliable.c.
 *
 * Every packet is checked in this order before it can touch any state:
 * length and header, source address, job, MAC; each failure is counted by
 * reason. Only then does the packet's type matter.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define HELLO_EVERY_NS 100000000ull
#define MISMATCH_GRACE_NS 300000000ull
#define RX_ROUNDS 16

void gn_hdr_init(struct gn_ctx *ctx, struct gn_wire_hdr *h, u8 type, int to)
{
	memset(h, 0, sizeof(*h));
	h->magic = GN_WIRE_MAGIC;
	h->version = ctx->version;
	h->type = type;
	h->src = (u16)ctx->rank;
	h->dst = (u16)to;
	h->job = ctx->job;
}

int gn_send_now(struct gn_ctx *ctx, int peer, const u8 *pkt, u16 len)
{
	struct gn_tx_pkt p = { pkt, len, (u16)peer };
	int r = ctx->tp->send(ctx->tp_state, ctx->addrs, &p, 1);

	if (r == 1) {
		ctx->stats.ctl_packets++;
		ctx->stats.ctl_bytes += len;
		ctx->peers[peer].stats.ctl_packets++;
		ctx->peers[peer].stats.ctl_bytes += len;
	}
	return r == 1 ? 0 : -EAGAIN;
}

/* ---- handshake ------------------------------------------------------------ */

/*
 * A HELLO to @p that names @echo as the instance we heard from it (0: none
 * yet). HELLOs are the only packets under the job key.
 */
static void send_hello(struct gn_ctx *ctx, struct gn_peer *p, u8 flags,
		       u64 echo)
{
	u8 pkt[GN_WIRE_HDR_LEN + GN_WIRE_HELLO_LEN + GN_WIRE_TAG];
	bool reply = p->hello_in && echo == p->instance;
	struct gn_wire_hello o = {
		.world = (u16)ctx->world,
		.flags = flags | (reply ? GN_HELLO_REPLY : 0) |
			 (ctx->insecure ? GN_HELLO_INSECURE : 0),
		.codec = ctx->codec,
		.s = ctx->s_bits,
		.chunk = ctx->chunk,
		.mtu = (u16)ctx->mtu,
		.instance = ctx->instance,
		.echo = echo,
	};
	struct gn_wire_hdr h;

	gn_hdr_init(ctx, &h, GN_PKT_HELLO, p->rank);
	gn_wire_hdr_put(&h, pkt);
	gn_wire_hello_put(&o, pkt);
	p->told_reply |= reply;
	gn_send_now(ctx, p->rank, pkt,
		    (u16)gn_mac_seal(ctx->job_mac, pkt, sizeof(pkt) - GN_WIRE_TAG));
}

/*
 * Fail the handshake a little later, answering HELLOs meanwhile, so the
 * peer hears about the difference too and fails the same way.
 */
static void open_mismatch(struct gn_ctx *ctx, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void open_mismatch(struct gn_ctx *ctx, int err, const char *fmt, ...)
{
	va_list ap;

	if (ctx->ready || ctx->open_err || ctx->pending_err)
		return;
	va_start(ap, fmt);
	vsnprintf(ctx->errmsg, sizeof(ctx->errmsg), fmt, ap);
	va_end(ap);
	ctx->pending_err = -err;
	ctx->fail_at_ns = ctx->now_ns + MISMATCH_GRACE_NS;
}

static const char *codec_name(u8 c)
{
	return c == GN_WIRE_CODEC_NONE ? "none" : c == GN_WIRE_CODEC_3LC ? "3lc" : "?";
}

static float bits_float(u32 b)
{
	float f;

	memcpy(&f, &b, sizeof(f));
	return f;
}

/* Name the first parameter a peer's HELLO disagrees on, if any. */
static bool hello_differs(struct gn_ctx *ctx, struct gn_peer *p,
			  const struct gn_wire_hello *o)
{
	if (o->world != ctx->world) {
		open_mismatch(ctx, EPROTO, "%s runs world size %u, this rank %d",
			      p->name, o->world, ctx->world);
		return true;
	}
	if (!!(o->flags & GN_HELLO_INSECURE) != ctx->insecure) {
		open_mismatch(ctx, EPROTO, "%s runs %s, this rank %s", p->name,
			      o->flags & GN_HELLO_INSECURE ? "without a key" : "with a key",
			      ctx->insecure ? "without a key" : "with a key");
		return true;
	}
	if (o->codec != ctx->codec || o->s != ctx->s_bits ||
	    o->chunk != ctx->chunk) {
		open_mismatch(ctx, EPROTO,
			      "%s runs codec %s s=%g chunk %u, this rank codec %s s=%g chunk %u",
			      p->name, codec_name(o->codec), (double)bits_float(o->s),
			      o->chunk, codec_name(ctx->codec), (double)ctx->s,
			      ctx->chunk);
		return true;
	}
	if (o->mtu != ctx->mtu) {
		open_mismatch(ctx, EPROTO, "%s runs MTU %u, this rank %u",
			      p->name, o->mtu, ctx->mtu);
		return true;
	}
	return false;
}

/*
 * A HELLO is fresh when it echoes our instance: the peer made it in this
 * run, after hearing from us. Anything else may be a recording of another
 * run (the job key is the same in every run), so it only gets an answer
 * that tells the sender our instance; it changes no state.
 */
static void hello_in(struct gn_ctx *ctx, struct gn_peer *p,
		     const struct gn_wire_hdr *h, const u8 *pkt)
{
	struct gn_wire_hello o;

	if (gn_wire_hello_get(pkt, h, &o)) {
		gn_count_drop(ctx, p, GN_DROP_MALFORMED);
		return;
	}
	if (o.echo != ctx->instance) {
		p->heard = o.instance;
		if (o.flags & GN_HELLO_ANSWER)
			gn_count_drop(ctx, p, GN_DROP_REPLAY);
		else
			send_hello(ctx, p, GN_HELLO_ANSWER, o.instance);
		return;
	}
	if (hello_differs(ctx, p, &o)) {
		p->hello_in = false;
		if (!(o.flags & GN_HELLO_ANSWER))
			send_hello(ctx, p, GN_HELLO_ANSWER, o.instance);
		return;
	}
	if (ctx->ready && o.instance != p->instance) {
		/*
		 * It restarted after our session began: it cannot join this
		 * session, and its old self will time out. Answer so its
		 * handshake is not left waiting on us.
		 */
		gn_count_drop(ctx, p, GN_DROP_REPLAY);
		if (!(o.flags & GN_HELLO_ANSWER))
			send_hello(ctx, p, GN_HELLO_ANSWER, o.instance);
		return;
	}
	if (p->instance != o.instance)
		p->told_reply = false;
	p->instance = p->heard = o.instance;
	p->hello_in = true;
	p->last_rx_ns = ctx->now_ns;
	if (o.flags & GN_HELLO_REPLY)
		p->hello_acked = true;
	/*
	 * Answer every HELLO that asks; and an answer too, once, if the peer
	 * has not yet heard from us that we have its HELLO: our first HELLO
	 * may have gone out before we had the peer's, and we may be done
	 * (and gone) before its next one comes.
	 */
	if (!(o.flags & GN_HELLO_ANSWER) || !p->told_reply)
		send_hello(ctx, p, GN_HELLO_ANSWER, o.instance);
}

/*
 * The session key: the job key and every rank's instance of this run,
 * so no packet of another run authenticates in this one.
 */
static int start_session(struct gn_ctx *ctx)
{
	size_t len = 8 + 8 * (size_t)ctx->world;
	u8 *info;
	int i, r;

	if (!ctx->job_mac)
		return 0;
	if (len > GN_MAC_INFO_MAX)
		return -E2BIG;
	info = calloc(1, len);
	if (!info)
		return -ENOMEM;
	gn_put_le32(ctx->job, info);
	gn_put_le16((u16)ctx->world, info + 4);
	info[6] = ctx->version;
	for (i = 0; i < ctx->world; i++)
		gn_put_le64(i == ctx->rank ? ctx->instance : ctx->peers[i].instance,
			    info + 8 + 8 * i);
	r = gn_mac_session(ctx->mac, ctx->job_mac, info, len);
	if (!r && gn_test_hooks && gn_test_hooks->session)
		gn_test_hooks->session(ctx, info, len);
	free(info);
	return r;
}

/* Peers not heard from, for the handshake timeout message. */
static void missing_peers(struct gn_ctx *ctx, char *buf, size_t len,
			  int *err)
{
	size_t at = 0;
	int i;

	*err = -ETIMEDOUT;
	buf[0] = 0;
	for (i = 0; i < ctx->world && at < len; i++) {
		struct gn_peer *p = &ctx->peers[i];

		if (i == ctx->rank || (p->hello_in && p->hello_acked))
			continue;
		if (p->version_seen && *err != -EKEYREJECTED) {
			*err = -EPROTO;
			at += (size_t)snprintf(buf + at, len - at,
					       "%s%s (it speaks gradnet protocol version %u, this rank version %u)",
					       at ? ", " : "", p->name,
					       p->version_seen, ctx->version);
			continue;
		}
		if (p->mac_failures)
			*err = -EKEYREJECTED;
		at += (size_t)snprintf(buf + at, len - at, "%s%s%s", at ? ", " : "",
				       p->name,
				       p->mac_failures ? " (its packets fail authentication: keys differ?)" :
				       p->hello_in ? " (has not heard from us)" : "");
	}
}

static void handshake_tick(struct gn_ctx *ctx, u64 start, u64 *next)
{
	bool all = true;
	int i;

	if (ctx->pending_err && ctx->now_ns >= ctx->fail_at_ns) {
		ctx->open_err = ctx->pending_err;
		pthread_cond_broadcast(&ctx->cond);
		return;
	}
	for (i = 0; i < ctx->world; i++) {
		struct gn_peer *p = &ctx->peers[i];

		if (i == ctx->rank)
			continue;
		if (!p->hello_in || !p->hello_acked) {
			all = false;
			if (ctx->now_ns >= *next)
				send_hello(ctx, p, 0, p->heard);
		}
	}
	if (ctx->now_ns >= *next)
		*next = ctx->now_ns + HELLO_EVERY_NS;
	if (all && !ctx->pending_err) {
		int r = start_session(ctx);

		if (r) {
			snprintf(ctx->errmsg, sizeof(ctx->errmsg),
				 "handshake: cannot derive the session key (%d ranks): %s",
				 ctx->world, strerror(-r));
			ctx->open_err = r;
			pthread_cond_broadcast(&ctx->cond);
			return;
		}
		ctx->ready = true;
		for (i = 0; i < ctx->world; i++)
			ctx->peers[i].last_rx_ns = ctx->now_ns;
		pthread_cond_broadcast(&ctx->cond);
		return;
	}
	if (!ctx->pending_err && ctx->now_ns - start > ctx->timeout_ns) {
		char who[GN_ERRMSG_LEN - 64];
		int err;

		missing_peers(ctx, who, sizeof(who), &err);
		snprintf(ctx->errmsg, sizeof(ctx->errmsg),
			 "handshake: no answer within %llu ms from %s",
			 (unsigned long long)(ctx->timeout_ns / 1000000), who);
		ctx->open_err = err;
		pthread_cond_broadcast(&ctx->cond);
	}
}

/* ---- liveness ------------------------------------------------------------- */

static void send_ping(struct gn_ctx *ctx, struct gn_peer *p, u8 type, u64 stamp)
{
	u8 pkt[GN_WIRE_HDR_LEN + GN_WIRE_PING_LEN + GN_WIRE_TAG];
	struct gn_wire_ping o = { .stamp = stamp };
	struct gn_wire_hdr h;

	gn_hdr_init(ctx, &h, type, p->rank);
	gn_wire_hdr_put(&h, pkt);
	gn_wire_ping_put(&o, pkt);
	gn_send_now(ctx, p->rank, pkt,
		    (u16)gn_mac_seal(ctx->mac, pkt, sizeof(pkt) - GN_WIRE_TAG));
}

static void ping_in(struct gn_ctx *ctx, struct gn_peer *p,
		    const struct gn_wire_hdr *h, const u8 *pkt)
{
	struct gn_wire_ping o;

	if (gn_wire_ping_get(pkt, h, &o)) {
		gn_count_drop(ctx, p, GN_DROP_MALFORMED);
		return;
	}
	if (h->type == GN_PKT_PING) {
		/* Echo the prober's clock: it measures the round trip. */
		send_ping(ctx, p, GN_PKT_PONG, o.stamp);
		return;
	}
	/*
	 * A PONG counts only if it echoes a PING of ours later than the last
	 * one answered: a replayed PONG would fake both the round trip and
	 * the peer's liveness.
	 */
	if (o.stamp <= p->pong_floor || o.stamp > p->last_ping_ns) {
		gn_count_drop(ctx, p, GN_DROP_REPLAY);
		return;
	}
	p->pong_floor = o.stamp;
	p->last_rx_ns = ctx->now_ns;
	gn_peer_rtt(p, ctx->now_ns - o.stamp);
}

/*
 * RFC 6298-style smoothing, but RTO = 2 SRTT + 4 RTTVAR within 1 ms .. 2 s:
 * on a loaded host the round trip is mostly queueing and scheduling, which
 * swings more than the variance estimate follows.
 */
void gn_peer_rtt(struct gn_peer *p, u64 sample_ns)
{
	u64 r = sample_ns ? sample_ns : 1, rto;

	if (p->srtt_ns == 0) {
		p->srtt_ns = r;
		p->rttvar_ns = r / 2;
	} else {
		u64 d = r > p->srtt_ns ? r - p->srtt_ns : p->srtt_ns - r;

		p->rttvar_ns = (3 * p->rttvar_ns + d) / 4;
		p->srtt_ns = (7 * p->srtt_ns + r) / 8;
	}
	rto = 2 * p->srtt_ns + 4 * p->rttvar_ns;
	p->rto_ns = rto < 1000000 ? 1000000 : rto > 2000000000 ? 2000000000 : rto;
}

static void liveness_tick(struct gn_ctx *ctx)
{
	int i;

	for (i = 0; i < ctx->world; i++) {
		struct gn_peer *p = &ctx->peers[i];
		u64 quiet = ctx->now_ns - p->last_rx_ns;

		if (i == ctx->rank || p->dead)
			continue;
		if (quiet > ctx->timeout_ns) {
			gn_peer_dead(ctx, p);
			continue;
		}
		if (quiet > ctx->timeout_ns / 4 &&
		    ctx->now_ns - p->last_ping_ns > ctx->timeout_ns / 8) {
			p->last_ping_ns = ctx->now_ns;
			send_ping(ctx, p, GN_PKT_PING, ctx->now_ns);
		}
	}
}

void gn_peer_dead(struct gn_ctx *ctx, struct gn_peer *p)
{
	char msg[GN_ERRMSG_LEN];

	if (p->dead)
		return;
	p->dead = true;
	if (ctx->dead_peer < 0)
		ctx->dead_peer = p->rank;
	snprintf(msg, sizeof(msg), "%s went silent (nothing for %llu ms) or restarted",
		 p->name, (unsigned long long)(ctx->timeout_ns / 1000000));
	gn_tx_drop_peer(ctx, p->rank);
	gn_fail_all(ctx, -ETIMEDOUT, msg);
}

/* ---- reliable control messages -------------------------------------------- */

int gn_ctrl_send(struct gn_ctx *ctx, int peer, u8 kind, u8 flags, u32 tensor,
		 u32 stepno, u8 codec, u64 value, u32 extra)
{
	struct gn_peer *p = &ctx->peers[peer];
	struct gn_ctrl_out *c = calloc(1, sizeof(*c));
	struct gn_wire_ctrl wc = { .kind = kind, .flags = flags,
				   .value = value, .extra = extra };
	struct gn_wire_hdr h;

	if (!c)
		return -ENOMEM;
	wc.seq = c->seq = ++p->ctrl_seq;
	gn_hdr_init(ctx, &h, GN_PKT_CTRL, peer);
	h.tensor = tensor;
	h.step = stepno;
	h.codec = codec;
	gn_wire_hdr_put(&h, c->pkt);
	gn_wire_ctrl_put(&wc, c->pkt);
	c->len = (u16)gn_mac_seal(ctx->mac, c->pkt, GN_WIRE_HDR_LEN + GN_WIRE_CTRL_LEN);
	c->sent_ns = ctx->now_ns;
	c->next = p->ctrl_q;
	p->ctrl_q = c;
	gn_send_now(ctx, peer, c->pkt, c->len);
	return 0;
}

static void ctrl_tick(struct gn_ctx *ctx)
{
	int i;

	for (i = 0; i < ctx->world; i++) {
		struct gn_peer *p = &ctx->peers[i];
		struct gn_ctrl_out *c;

		if (p->dead)
			continue;
		for (c = p->ctrl_q; c; c = c->next)
			if (ctx->now_ns - c->sent_ns > p->rto_ns) {
				c->sent_ns = ctx->now_ns;
				gn_send_now(ctx, i, c->pkt, c->len);
			}
	}
}

static void ctrl_ack_in(struct gn_ctx *ctx, struct gn_peer *p,
			const struct gn_wire_hdr *h, const u8 *pkt)
{
	struct gn_wire_ctrl_ack a;
	struct gn_ctrl_out **c;

	if (gn_wire_ctrl_ack_get(pkt, h, &a)) {
		gn_count_drop(ctx, p, GN_DROP_MALFORMED);
		return;
	}
	for (c = &p->ctrl_q; *c; c = &(*c)->next)
		if ((*c)->seq == a.seq) {
			struct gn_ctrl_out *done = *c;

			*c = done->next;
			free(done);
			return;
		}
}

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

static void ctrl_in(struct gn_ctx *ctx, struct gn_peer *p,
		    const struct gn_wire_hdr *h, const u8 *pkt)
{
	u8 ack[GN_WIRE_HDR_LEN + GN_WIRE_CTRL_ACK_LEN + GN_WIRE_TAG];
	struct gn_wire_ctrl c;
	struct gn_wire_ctrl_ack ca;
	struct gn_wire_hdr ah;
	int seen;

	if (gn_wire_ctrl_get(pkt, h, &c)) {
		gn_count_drop(ctx, p, GN_DROP_MALFORMED);
		return;
	}
	seen = ctrl_seen(p, c.seq, false);
	if (seen < 0)
		return;	/* beyond the window: the sender will try again */
	if (!seen && !gn_ctrl_fits(ctx, p, h, &c)) {
		/* No room to keep it yet: the sender will try again. */
		gn_count_drop(ctx, p, GN_DROP_TENSOR);
		return;
	}
	if (!seen)
		ctrl_seen(p, c.seq, true);
	gn_hdr_init(ctx, &ah, GN_PKT_CTRL_ACK, p->rank);
	gn_wire_hdr_put(&ah, ack);
	ca.seq = c.seq;
	gn_wire_ctrl_ack_put(&ca, ack);
	gn_send_now(ctx, p->rank, ack,
		    (u16)gn_mac_seal(ctx->mac, ack, sizeof(ack) - GN_WIRE_TAG));
	if (seen)
		gn_count_drop(ctx, p, GN_DROP_DUPLICATE);
	else
		gn_ctrl_in(ctx, p, h, &c);
}

/* ---- receive ---------------------------------------------------------------- */

static bool same_addr(const struct gn_addr *a, const struct gn_addr *b)
{
	if (a->sa.ss_family != b->sa.ss_family)
		return false;
	if (a->sa.ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)&a->sa, *y = (const void *)&b->sa;

		return x->sin_port == y->sin_port &&
		       x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	if (a->sa.ss_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const void *)&a->sa, *y = (const void *)&b->sa;

		return x->sin6_port == y->sin6_port &&
		       !memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr));
	}
	return false;
}

static struct gn_peer *peer_of(struct gn_ctx *ctx, const struct gn_addr *from)
{
	int i;

	for (i = 0; i < ctx->world; i++)
		if (i != ctx->rank && same_addr(&ctx->addrs[i], from))
			return &ctx->peers[i];
	return NULL;
}

/*
 * Another version's packet cannot be authenticated (its layout is not
 * ours), so it changes nothing: it is counted, and remembered for the
 * message if the handshake times out.
 */
static void version_in(struct gn_ctx *ctx, struct gn_peer *p,
		       const struct gn_wire_hdr *h)
{
	gn_count_drop(ctx, p, GN_DROP_VERSION);
	p->version_seen = h->version;
}

void gn_packet_in(struct gn_ctx *ctx, const struct gn_rx_pkt *rx)
{
	struct gn_peer *p = peer_of(ctx, &rx->from);
	struct gn_wire_hdr h;
	int r;

	if (!p) {
		gn_count_drop(ctx, NULL, GN_DROP_SOURCE);
		return;
	}
	r = gn_wire_hdr_get(rx->data, rx->len, &h);
	if (r == -EPROTONOSUPPORT || (!r && h.version != ctx->version)) {
		version_in(ctx, p, &h);
		return;
	}
	if (r || (h.dst != ctx->rank && h.dst != GN_RANK_ALL)) {
		gn_count_drop(ctx, p, GN_DROP_MALFORMED);
		return;
	}
	if (h.job != ctx->job) {
		gn_count_drop(ctx, p, GN_DROP_JOB);
		return;
	}
	if (h.src != p->rank) {
		gn_count_drop(ctx, p, GN_DROP_SOURCE);
		return;
	}
	if (h.type != GN_PKT_HELLO && !ctx->ready) {
		/* No session key yet to check it with; the sender repeats. */
		gn_count_drop(ctx, p, GN_DROP_EARLY);
		return;
	}
	if (gn_mac_check(h.type == GN_PKT_HELLO ? ctx->job_mac : ctx->mac,
			 rx->data, rx->len)) {
		p->mac_failures++;
		gn_count_drop(ctx, p, GN_DROP_MAC);
		return;
	}
	if (p->dead)
		return;
	switch (h.type) {
	case GN_PKT_HELLO:
		hello_in(ctx, p, &h, rx->data);
		break;
	case GN_PKT_PING:
	case GN_PKT_PONG:
		ping_in(ctx, p, &h, rx->data);
		break;
	case GN_PKT_CTRL_ACK:
		ctrl_ack_in(ctx, p, &h, rx->data);
		break;
	case GN_PKT_CTRL:
		/* A faster peer's tensor descriptor may come before our own
		 * handshake is done; it is kept until we register the tensor. */
		ctrl_in(ctx, p, &h, rx->data);
		break;
	default:
		if (!ctx->ready) {
			/* Not before the handshake: the sender will repeat. */
			return;
		}
		if (h.type == GN_PKT_DATA)
			gn_data_in(ctx, p, &h, rx->data);
		else if (h.type == GN_PKT_ACK)
			gn_ack_in(ctx, p, &h, rx->data);
		break;
	}
}

static void receive(struct gn_ctx *ctx)
{
	struct gn_rx_pkt *pkts = ctx->rx_batch;
	int round, i, n;

	for (round = 0; round < RX_ROUNDS; round++) {
		n = ctx->tp->recv(ctx->tp_state, pkts, GN_RX_BATCH);
		if (n <= 0)
			break;
		ctx->now_ns = gn_now_ns();
		for (i = 0; i < n; i++) {
			if (!pkts[i].len) {
				gn_count_drop(ctx, peer_of(ctx, &pkts[i].from),
					      GN_DROP_MALFORMED);
				continue;
			}
			gn_packet_in(ctx, &pkts[i]);
		}
		gn_ack_maybe(ctx);
		if (n < GN_RX_BATCH)
			break;
	}
}

/* Milliseconds to sleep: until the next timer, at most 20. */
static int sleep_ms(struct gn_ctx *ctx, u64 hello_next)
{
	u64 until = ctx->now_ns + 20000000ull, t = gn_tx_deadline(ctx);

	if (t < until)
		until = t;
	if (ctx->work_n)
		return 0;
	if (ctx->ackq_n && ctx->ack_due_ns < until)
		until = ctx->ack_due_ns;
	if (!ctx->ready && hello_next < until)
		until = hello_next;
	if (until <= ctx->now_ns)
		return 0;
	return (int)((until - ctx->now_ns + 999999) / 1000000);
}

void *gn_progress_main(void *arg)
{
	struct gn_ctx *ctx = arg;
	u64 start = gn_now_ns(), hello_next = 0;

	pthread_mutex_lock(&ctx->lock);
	while (!ctx->stop) {
		int ms;

		ctx->now_ns = gn_now_ns();
		if (!ctx->ready && !ctx->open_err)
			handshake_tick(ctx, start, &hello_next);
		if (ctx->ready) {
			liveness_tick(ctx);
			gn_step_deadlines(ctx);
			ctrl_tick(ctx);
			gn_tx_pump(ctx);
		}
		ms = sleep_ms(ctx, hello_next);
		pthread_mutex_unlock(&ctx->lock);
		ctx->tp->wait(ctx->tp_state, ms);
		pthread_mutex_lock(&ctx->lock);
		ctx->now_ns = gn_now_ns();
		receive(ctx);
		if (ctx->work_n)
			gn_run_work(ctx, 4);
		gn_ack_maybe(ctx);
	}
	pthread_mutex_unlock(&ctx->lock);
	return NULL;
}
