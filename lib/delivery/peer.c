// SPDX-License-Identifier: MIT
/*
 * peer.c - peers: the handshake and the session key, liveness probes and
 * the round-trip time, and what happens when a peer goes silent.
 */
#include "delivery.h"

#define HELLO_EVERY_NS 100000000ull
#define MISMATCH_GRACE_NS 300000000ull
/*
 * HELLO answers to one peer: ANSWER_BURST in a row, then one every
 * ANSWER_EVERY_NS. A peer's handshake asks once per HELLO_EVERY_NS, so
 * this never holds a real answer back; it bounds what recorded or spoofed
 * HELLOs, which anyone may send again, make this rank reflect.
 */
#define ANSWER_BURST 4
#define ANSWER_EVERY_NS 25000000ull

/* ---- handshake ------------------------------------------------------------ */

/*
 * May this rank answer a HELLO of @p now? The rate limit as a clock:
 * answer_at is when the next answer is due, each answer moves it on by
 * ANSWER_EVERY_NS, and it never lags now by more than the burst allows.
 */
static bool answer_allowed(struct gn_dl *dl, struct gn_peer *p)
{
	const u64 slack = (ANSWER_BURST - 1) * ANSWER_EVERY_NS;
	u64 floor = dl->now_ns > slack ? dl->now_ns - slack : 0;

	if (p->answer_at < floor)
		p->answer_at = floor;
	if (p->answer_at > dl->now_ns)
		return false;
	p->answer_at += ANSWER_EVERY_NS;
	return true;
}

/*
 * A HELLO to @p that names @echo as the instance we heard from it (0: none
 * yet). HELLOs are the only packets under the HELLO key; answers
 * (GN_HELLO_ANSWER) are rate-limited.
 */
static void send_hello(struct gn_dl *dl, struct gn_peer *p, u8 flags,
		       u64 echo)
{
	struct gn_buf *b;
	bool reply = p->hello_in && echo == p->instance;
	struct gn_wire_hello o = {
		.world = (u16)dl->world,
		.flags = flags | (reply ? GN_HELLO_REPLY : 0) |
			 (dl->insecure ? GN_HELLO_INSECURE : 0),
		.chunk = dl->chunk,
		.mtu = (u16)dl->mtu,
		.instance = dl->instance,
		.echo = echo,
	};
	struct gn_wire_hdr h;

	if (flags & GN_HELLO_ANSWER && !answer_allowed(dl, p))
		return;
	b = gn_dl_buf(dl);
	if (!b)
		return;
	gn_dl_hdr_init(dl, &h, GN_PKT_HELLO, p->rank);
	h.body_len = GN_WIRE_HELLO_BODY;
	gn_wire_hdr_put(&h, b->data);
	gn_wire_hello_put(&o, b->data);
	memcpy(b->data + GN_WIRE_HDR_LEN + GN_WIRE_HELLO_LEN, dl->peers_digest,
	       GN_WIRE_HELLO_BODY);
	if (gn_dl_seal_hello(dl, b, GN_WIRE_HDR_LEN + GN_WIRE_HELLO_LEN +
			     GN_WIRE_HELLO_BODY, p->rank)) {
		gn_dl_buf_put(dl, b);
		return;
	}
	p->told_reply |= reply;
	gn_dl_send_now(dl, b);
}

/*
 * Fail the handshake a little later, answering HELLOs meanwhile, so the
 * peer hears about the difference too and fails the same way.
 */
static void open_mismatch(struct gn_dl *dl, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void open_mismatch(struct gn_dl *dl, int err, const char *fmt, ...)
{
	va_list ap;

	if (dl->ready || dl->open_err || dl->pending_err)
		return;
	va_start(ap, fmt);
	vsnprintf(dl->errmsg, sizeof(dl->errmsg), fmt, ap);
	va_end(ap);
	dl->pending_err = -err;
	dl->fail_at_ns = dl->now_ns + MISMATCH_GRACE_NS;
}


/* Name the first parameter a peer's HELLO disagrees on, if any. */
static bool hello_differs(struct gn_dl *dl, struct gn_peer *p,
			  const struct gn_wire_hello *o)
{
	if (o->world != dl->world) {
		open_mismatch(dl, EPROTO, "%s runs world size %u, this rank %d",
			      p->name, o->world, dl->world);
		return true;
	}
	if (!!(o->flags & GN_HELLO_INSECURE) != dl->insecure) {
		open_mismatch(dl, EPROTO, "%s runs %s, this rank %s", p->name,
			      o->flags & GN_HELLO_INSECURE ? "without a key" : "with a key",
			      dl->insecure ? "without a key" : "with a key");
		return true;
	}
	if (o->chunk != dl->chunk) {
		open_mismatch(dl, EPROTO, "%s runs chunk %u, this rank chunk %u",
			      p->name, o->chunk, dl->chunk);
		return true;
	}
	if (o->mtu != dl->mtu) {
		open_mismatch(dl, EPROTO, "%s runs MTU %u, this rank %u",
			      p->name, o->mtu, dl->mtu);
		return true;
	}
	return false;
}

/* Did @p's HELLO (@pkt) come from a rank given another peer list? */
static bool peers_differ(struct gn_dl *dl, struct gn_peer *p, const u8 *pkt)
{
	const u8 *theirs = pkt + GN_WIRE_HDR_LEN + GN_WIRE_HELLO_LEN;

	if (!memcmp(theirs, dl->peers_digest, GN_PEERS_DIGEST_LEN))
		return false;
	open_mismatch(dl, EPROTO,
		      "%s was given another peer list (digest %016llx..., this rank's %016llx...): every rank needs the same addresses in the same order",
		      p->name, (unsigned long long)gn_get_le64(theirs),
		      (unsigned long long)gn_get_le64(dl->peers_digest));
	return true;
}

/*
 * A HELLO is fresh when it echoes our instance: the peer made it in this
 * run, after hearing from us. Anything else may be a recording of another
 * run (the job key is the same in every run), so it only gets an answer
 * that tells the sender our instance; it changes no state.
 */
void gn_dl_hello_in(struct gn_dl *dl, struct gn_peer *p,
		     const struct gn_wire_hdr *h, const u8 *pkt)
{
	struct gn_wire_hello o;

	if (gn_wire_hello_get(pkt, h, &o)) {
		gn_dl_drop(dl, p, GN_DROP_MALFORMED);
		return;
	}
	if (o.echo != dl->instance) {
		p->heard = o.instance;
		if (o.flags & GN_HELLO_ANSWER)
			gn_dl_drop(dl, p, GN_DROP_REPLAY);
		else
			send_hello(dl, p, GN_HELLO_ANSWER, o.instance);
		return;
	}
	if (hello_differs(dl, p, &o) || peers_differ(dl, p, pkt)) {
		p->hello_in = false;
		if (!(o.flags & GN_HELLO_ANSWER))
			send_hello(dl, p, GN_HELLO_ANSWER, o.instance);
		return;
	}
	if (dl->ready && o.instance != p->instance) {
		/*
		 * It restarted after our session began: it cannot join this
		 * session, and its old self will time out. Answer so its
		 * handshake is not left waiting on us.
		 */
		gn_dl_drop(dl, p, GN_DROP_REPLAY);
		if (!(o.flags & GN_HELLO_ANSWER))
			send_hello(dl, p, GN_HELLO_ANSWER, o.instance);
		return;
	}
	if (p->instance != o.instance)
		p->told_reply = false;
	p->instance = p->heard = o.instance;
	p->hello_in = true;
	/*
	 * Once the session is up, only session packets with new numbers
	 * count as signs of life (receive.c): a HELLO carries nothing that
	 * tells a recording of this run from a fresh one.
	 */
	if (!dl->ready)
		p->last_rx_ns = dl->now_ns;
	if (o.flags & GN_HELLO_REPLY)
		p->hello_acked = true;
	/*
	 * Answer every HELLO that asks; and an answer too, once, if the peer
	 * has not yet heard from us that we have its HELLO: our first HELLO
	 * may have gone out before we had the peer's, and we may be done
	 * (and gone) before its next one comes.
	 */
	if (!(o.flags & GN_HELLO_ANSWER) || !p->told_reply)
		send_hello(dl, p, GN_HELLO_ANSWER, o.instance);
}

/*
 * The session key: the job key, every rank's instance of this run (so no
 * packet of another run authenticates in this one) and the peer list's
 * digest (so ranks given other lists cannot share a session); and from it
 * every rank's sender key.
 */
static int start_session(struct gn_dl *dl)
{
	size_t len = gn_dl_session_info_len(dl->world);
	u8 *info = dl->session_info, session[GN_SEAL_KEY_LEN];
	int i, r;

	if (!dl->keys)
		return 0;
	if (len > GN_WIRE_INFO_MAX)
		return -E2BIG;
	gn_put_le32(dl->job, info);
	gn_put_le16((u16)dl->world, info + 4);
	info[6] = dl->version;
	info[7] = 0;
	for (i = 0; i < dl->world; i++)
		gn_put_le64(i == dl->rank ? dl->instance : dl->peers[i].instance,
			    info + 8 + 8 * i);
	memcpy(info + 8 + 8 * (size_t)dl->world, dl->peers_digest,
	       GN_PEERS_DIGEST_LEN);
	r = gn_wire_session_key(session, dl->keys->job, info, len);
	for (i = 0; !r && i < dl->world; i++)
		r = gn_wire_sender_key(dl->keys->sender[i], session, (u16)i);
	/* The session key lives on only as the sender keys. */
	gn_memzero_explicit(session, sizeof(session));
	if (!r && dl->on_session)
		dl->on_session(info, len);
	return r;
}

/* Peers not heard from, for the handshake timeout message. */
static void missing_peers(struct gn_dl *dl, char *buf, size_t len,
			  int *err)
{
	size_t at = 0;
	int i;

	*err = -ETIMEDOUT;
	buf[0] = 0;
	for (i = 0; i < dl->world && at < len; i++) {
		struct gn_peer *p = &dl->peers[i];

		if (i == dl->rank || (p->hello_in && p->hello_acked))
			continue;
		if (p->version_seen && *err != -EKEYREJECTED) {
			*err = -EPROTO;
			at += (size_t)snprintf(buf + at, len - at,
					       "%s%s (it speaks gradnet protocol version %u, this rank version %u)",
					       at ? ", " : "", p->name,
					       p->version_seen, dl->version);
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

static void handshake_tick(struct gn_dl *dl, u64 start, u64 *next)
{
	bool all = true;
	int i;

	if (dl->pending_err && dl->now_ns >= dl->fail_at_ns) {
		dl->open_err = dl->pending_err;
		gn_env_wake(dl->env);
		return;
	}
	for (i = 0; i < dl->world; i++) {
		struct gn_peer *p = &dl->peers[i];

		if (i == dl->rank)
			continue;
		if (!p->hello_in || !p->hello_acked) {
			all = false;
			if (dl->now_ns >= *next)
				send_hello(dl, p, 0, p->heard);
		}
	}
	if (dl->now_ns >= *next)
		*next = dl->now_ns + HELLO_EVERY_NS;
	if (all && !dl->pending_err) {
		int r = start_session(dl);

		if (r) {
			snprintf(dl->errmsg, sizeof(dl->errmsg),
				 "handshake: cannot derive the session key (%d ranks): %s",
				 dl->world, r == -E2BIG ? "too many ranks" : "error");
			dl->open_err = r;
			gn_env_wake(dl->env);
			return;
		}
		dl->ready = true;
		for (i = 0; i < dl->world; i++)
			dl->peers[i].last_rx_ns = dl->now_ns;
		gn_env_wake(dl->env);
		return;
	}
	if (!dl->pending_err && dl->now_ns - start > dl->timeout_ns) {
		char who[GN_ERRMSG_LEN - 64];
		int err;

		missing_peers(dl, who, sizeof(who), &err);
		snprintf(dl->errmsg, sizeof(dl->errmsg),
			 "handshake: no answer within %llu ms from %s",
			 (unsigned long long)(dl->timeout_ns / 1000000), who);
		dl->open_err = err;
		gn_env_wake(dl->env);
	}
}

/* ---- liveness and probes --------------------------------------------------- */

static void send_ping(struct gn_dl *dl, struct gn_peer *p, u8 type, u64 stamp)
{
	struct gn_wire_ping o = { .stamp = stamp };
	struct gn_buf *b = gn_dl_buf(dl);
	struct gn_wire_hdr h;

	if (!b)
		return;
	gn_dl_hdr_init(dl, &h, type, p->rank);
	gn_wire_hdr_put(&h, b->data);
	gn_wire_ping_put(&o, b->data);
	gn_dl_seal_send(dl, b, GN_WIRE_HDR_LEN + GN_WIRE_PING_LEN, p->rank);
}

/*
 * Liveness PINGs and tail-loss probes (send.c) share one clock of stamps,
 * strictly increasing, so that a PONG names the one PING it answers.
 */
u64 gn_dl_ping_send(struct gn_dl *dl, struct gn_peer *p)
{
	u64 stamp = dl->now_ns > p->last_ping_ns ? dl->now_ns :
						   p->last_ping_ns + 1;

	p->last_ping_ns = stamp;
	send_ping(dl, p, GN_PKT_PING, stamp);
	return stamp;
}

void gn_dl_ping_in(struct gn_dl *dl, struct gn_peer *p,
		    const struct gn_wire_hdr *h, const u8 *pkt)
{
	struct gn_wire_ping o;

	if (gn_wire_ping_get(pkt, h, &o)) {
		gn_dl_drop(dl, p, GN_DROP_MALFORMED);
		return;
	}
	if (h->type == GN_PKT_PING) {
		/*
		 * Acknowledge everything the prober's packets brought so far,
		 * then echo its clock: the PONG leaves after those ACKs, so it
		 * says that whatever reached us before the PING is acknowledged
		 * (send.c's probes rely on it), and it measures the round trip.
		 */
		gn_dl_ack_flush_peer(dl, p->rank);
		send_ping(dl, p, GN_PKT_PONG, o.stamp);
		return;
	}
	/*
	 * A PONG counts only if it echoes a PING of ours later than the last
	 * one answered: a replayed PONG would fake the round trip, the peer's
	 * liveness and its acknowledgements.
	 */
	if (o.stamp <= p->pong_floor || o.stamp > p->last_ping_ns) {
		gn_dl_drop(dl, p, GN_DROP_REPLAY);
		return;
	}
	p->pong_floor = o.stamp;
	p->last_rx_ns = dl->now_ns;
	gn_dl_peer_rtt(p, dl->now_ns > o.stamp ? dl->now_ns - o.stamp : 0);
	gn_dl_pong_in(dl, p, o.stamp);
}

/*
 * RFC 6298-style smoothing, but RTO = 2 SRTT + 4 RTTVAR within 1 ms .. 2 s:
 * on a loaded host the round trip is mostly queueing and scheduling, which
 * swings more than the variance estimate follows.
 */
void gn_dl_peer_rtt(struct gn_peer *p, u64 sample_ns)
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

static void liveness_tick(struct gn_dl *dl)
{
	int i;

	for (i = 0; i < dl->world; i++) {
		struct gn_peer *p = &dl->peers[i];
		u64 quiet = dl->now_ns - p->last_rx_ns;

		if (i == dl->rank || p->dead)
			continue;
		if (quiet > dl->timeout_ns) {
			gn_dl_peer_dead(dl, p);
			continue;
		}
		if (quiet > dl->timeout_ns / 4 && dl->now_ns > p->last_ping_ns &&
		    dl->now_ns - p->last_ping_ns > dl->timeout_ns / 8)
			gn_dl_ping_send(dl, p);
	}
}

void gn_dl_peer_dead(struct gn_dl *dl, struct gn_peer *p)
{
	char msg[GN_ERRMSG_LEN];

	if (p->dead)
		return;
	p->dead = true;
	if (dl->dead_peer < 0)
		dl->dead_peer = p->rank;
	snprintf(msg, sizeof(msg), "%s went silent (nothing for %llu ms) or restarted",
		 p->name, (unsigned long long)(dl->timeout_ns / 1000000));
	gn_dl_drop_peer(dl, p->rank);
	dl->up->peer_dead(dl->up_arg, p, msg);
}


void gn_dl_peers_tick(struct gn_dl *dl)
{
	if (!dl->start_ns)
		dl->start_ns = dl->now_ns;
	if (!dl->ready && !dl->open_err)
		handshake_tick(dl, dl->start_ns, &dl->hello_next_ns);
	if (dl->ready)
		liveness_tick(dl);
}

/* ---- the peer list ---------------------------------------------------------- */

/*
 * A chain of keyed BLAKE2s (the environment's gn_kdf()) from a fixed,
 * public key, one link per rank: the digest names the list, so ranks
 * handed different lists (a launcher's store that someone else wrote to,
 * a typo in one rank's GN_PEERS) find out at the handshake and say which
 * peer differs. It is not a secret; what keeps a stranger out is the key,
 * and the session key is derived over the digest too. One link per rank
 * keeps the input a fixed 20 bytes, whatever the world size.
 */
int gn_dl_peers_digest(const struct gn_peer_addr *a, int world, u32 job,
		       u8 out[GN_PEERS_DIGEST_LEN])
{
	static const u8 list_key[] = "gradnet peer list";
	u8 h[GN_SEAL_KEY_LEN], in[20];
	int i, r;

	gn_put_le32(job, in);
	gn_put_le32((u32)world, in + 4);
	r = gn_kdf(h, list_key, sizeof(list_key) - 1, (const u8 *)"peers", 5,
		   in, 8);
	for (i = 0; !r && i < world; i++) {
		gn_put_le16(a[i].family, in);
		gn_put_le16(a[i].port, in + 2);
		memcpy(in + 4, a[i].addr, 16);
		r = gn_kdf(h, h, sizeof(h), (const u8 *)"peer", 4, in,
			   sizeof(in));
	}
	memcpy(out, h, GN_PEERS_DIGEST_LEN);
	return r;
}

void gn_dl_set_peers_digest(struct gn_dl *dl, const u8 *digest)
{
	memcpy(dl->peers_digest, digest, GN_PEERS_DIGEST_LEN);
}

/* Peers are looked at every 20 ms at least, HELLOs go out on time. */
u64 gn_dl_peers_deadline(const struct gn_dl *dl)
{
	u64 t = dl->now_ns + 20000000ull;

	if (!dl->ready && !dl->open_err && dl->hello_next_ns < t)
		t = dl->hello_next_ns;
	if (dl->pending_err && !dl->open_err && dl->fail_at_ns < t)
		t = dl->fail_at_ns;
	return t;
}
