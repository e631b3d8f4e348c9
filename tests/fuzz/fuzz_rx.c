// SPDX-License-Identifier: MIT
/*
 * fuzz_rx.c - libFuzzer target for libgradnet's whole receive path: header
 * parse, source, job and MAC checks, DATA parse, duplicate and replay
 * tracking, decode-accumulate of contributions, the owner's reduction and
 * re-compression, decode of results, ACKs and control messages.
 *
 * Each input runs on a fresh context of rank 0 in a world of 3 without a
 * network or progress thread (gn_test_ctx_new()), with the tensors of
 * fuzz_input.h registered, the peers' descriptors received and step 1 of
 * every tensor started from fixed gradients (or, if the input says so,
 * nothing registered yet). The input is a sequence of packets
 * (fuzz_input.h); a record can ask for a consistent header, a DATA part
 * snapped to a real chunk (npkts left as it is), and a seal under the
 * sender's key, so the fuzzer gets past authentication to the decoders,
 * and then a broken tag or a cut; or it sets the handshake state, so
 * packets also meet a context that is not ready, peers half through the
 * handshake, or a pending mismatch. A tensor whose step completes is
 * collected (gn_allreduce_wait() returns at once then) and its next step
 * started. A packet the harness did not seal, or sealed and then broke,
 * must be dropped before anything but the checks of the header, the
 * source, the job and the tag sees it: no data packet taken, no drop
 * for a reason that comes after the tag. Every packet sits in an
 * exact-size heap buffer, so ASan reports any read past it; UBSan aborts
 * on any undefined behaviour, and the context is freed after each input,
 * so leaks are reported too.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gradnet/codec.h>
#include <gradnet/gradnet.h>
#include <gradnet/wire.h>
#include "testlib.h"
#include "fuzz_check.h"
#include "fuzz_input.h"

struct rx_state {
	struct gn_ctx *ctx;
	bool bare;			/* no tensors registered */
	float *data[GN_FZX_NTENSORS];
	u32 ctrl_seq[GN_FZX_WORLD];
	u64 pn;				/* the last packet number sealed */
};

/* Every rank's sender key in the test context. */
static u8 fzx_keys[GN_FZX_WORLD][GN_SEAL_KEY_LEN];

/*
 * Seal @len bytes at @pkt (tag room included) as rank @from would: a HELLO
 * under the HELLO key of the instance it names, anything else under the
 * sender's key; with the packet number the packet carries, or if it is 0
 * the next of the harness's.
 */
static void seal(struct rx_state *rs, u8 *pkt, size_t len, int from)
{
	u8 hello[GN_SEAL_KEY_LEN];
	const u8 *key = fzx_keys[from >= 0 && from < GN_FZX_WORLD ? from : 0];
	u64 pn;

	if (len < GN_WIRE_HDR_LEN + GN_WIRE_TAG)
		return;
	pn = gn_get_le64(pkt + 24) >> 8;
	if (!pn)
		pn = ++rs->pn;
	if (pkt[3] == GN_PKT_HELLO &&
	    len >= GN_WIRE_HDR_LEN + GN_WIRE_HELLO_LEN + GN_WIRE_TAG) {
		if (gn_wire_hello_key(hello, gn_fzx_key, gn_get_le16(pkt + 4),
				      gn_get_le64(pkt + GN_WIRE_HDR_LEN + 16)))
			return;
		key = hello;
	}
	gn_wire_seal(key, pkt, len - GN_WIRE_TAG, pn, pkt[24] & GN_SEAL_CLEAR);
}

static u32 s_bits_of(const struct gn_fzx_tensor *t)
{
	float s = t->s == 0.0f ? 1.0f : t->s;
	u32 b;

	memcpy(&b, &s, sizeof(b));
	return t->codec == GN_CODEC_3LC ? b : 0;
}

/* Gradient-like values that differ by tensor, step and element. */
static void fill(float *x, size_t n, unsigned int k, unsigned int step)
{
	size_t i;

	for (i = 0; i < n; i++)
		x[i] = sinf((float)(i * 7 + k * 13 + step * 29)) *
		       (i % 11 ? 1e-3f : 2e-2f);
}

static void deliver(struct gn_ctx *ctx, int from, const u8 *pkt, size_t len)
{
	u8 *buf = malloc(len ? len : 1);

	GN_FZ_CHECK(buf, "out of memory");
	memcpy(buf, pkt, len);
	gn_test_packet_in(ctx, from, buf, len);
	free(buf);
}

/* Peer @peer registered tensor @k: its reliable TENSOR control message. */
static void send_desc(struct rx_state *rs, int peer, unsigned int k)
{
	const struct gn_fzx_tensor *t = &gn_fzx_tensors[k];
	u8 pkt[GN_WIRE_HDR_LEN + GN_WIRE_CTRL_LEN + GN_WIRE_TAG];
	struct gn_wire_hdr h = {
		.magic = GN_WIRE_MAGIC, .version = GN_WIRE_VERSION,
		.type = GN_PKT_CTRL, .src = (u16)peer, .dst = 0,
		.job = GN_FZX_JOB, .tensor = t->id, .codec = t->codec,
	};
	struct gn_wire_ctrl c = {
		.seq = ++rs->ctrl_seq[peer], .kind = GN_CTRL_TENSOR,
		.flags = (u8)t->flags, .value = t->elems,
		.params = { s_bits_of(t) },	/* 3LC's s is its word 0 */
		.extra = t->zstd ? 0x101 : 0,	/* zstd, level 1 */
	};

	gn_wire_hdr_put(&h, pkt);
	gn_wire_ctrl_put(&c, pkt);
	seal(rs, pkt, sizeof(pkt), peer);
	deliver(rs->ctx, peer, pkt, sizeof(pkt));
}

static void start(struct rx_state *rs, unsigned int k, unsigned int step)
{
	const struct gn_fzx_tensor *t = &gn_fzx_tensors[k];
	int r;

	fill(rs->data[k], t->elems, k, step);
	r = gn_allreduce_start(rs->ctx, t->id, rs->data[k]);
	GN_FZ_CHECK(r == 0, "tensor %u step %u: start: %d %s", t->id, step, r,
		    gn_ctx_errmsg(rs->ctx));
}

/* Half the descriptors come before the tensor is registered, half after. */
static void setup(struct rx_state *rs, bool bare)
{
	unsigned int k;
	int r, p;

	memset(rs, 0, sizeof(*rs));
	r = gn_test_ctx_new(GN_FZX_WORLD, 0, gn_fzx_key, GN_FZX_JOB, &rs->ctx);
	GN_FZ_CHECK(r == 0, "gn_test_ctx_new: %d", r);
	GN_FZ_CHECK(rs->ctx->chunk == GN_FZX_CHUNK, "chunk %u",
		    rs->ctx->chunk);
	rs->bare = bare;
	for (k = 0; k < GN_FZX_NTENSORS && !bare; k++) {
		const struct gn_fzx_tensor *t = &gn_fzx_tensors[k];
		GN_OPTS(gn_tensor_opts, o, .id = t->id, .elems = t->elems,
			.codec = t->codec, .s = t->s, .flags = t->flags,
			.params = t->zstd ? "entropy=zstd" : NULL);

		for (p = 1; k % 2 && p < GN_FZX_WORLD; p++)
			send_desc(rs, p, k);
		r = gn_tensor_register(rs->ctx, &o);
		GN_FZ_CHECK(r == 0, "register %u: %d", t->id, r);
		for (p = 1; !(k % 2) && p < GN_FZX_WORLD; p++)
			send_desc(rs, p, k);
		rs->data[k] = malloc(t->elems * sizeof(float));
		GN_FZ_CHECK(rs->data[k], "out of memory");
		start(rs, k, 1);
	}
}

static void teardown(struct rx_state *rs)
{
	unsigned int k;

	gn_test_ctx_free(rs->ctx);
	for (k = 0; k < GN_FZX_NTENSORS; k++)
		free(rs->data[k]);
}

/* GN_FZX_STATE: see fuzz_input.h. */
static void set_state(struct rx_state *rs, u8 st)
{
	struct gn_ctx *ctx = rs->ctx;
	int p;

	ctx->dl.ready = st & GN_FZX_ST_READY;
	for (p = 1; p < GN_FZX_WORLD; p++) {
		ctx->dl.peers[p].hello_in = st & GN_FZX_ST_HELLO_IN(p);
		ctx->dl.peers[p].hello_acked = st & GN_FZX_ST_HELLO_ACKED(p);
		ctx->dl.peers[p].told_reply = st & GN_FZX_ST_TOLD_REPLY;
	}
	if (st & GN_FZX_ST_MISMATCH) {
		ctx->dl.pending_err = -EPROTO;
		ctx->dl.fail_at_ns = ctx->dl.now_ns;
	} else {
		ctx->dl.pending_err = 0;
	}
}

/* Collect steps that ended and start the next ones, up to GN_FZX_STEPS. */
static void advance(struct rx_state *rs)
{
	unsigned int k;

	for (k = 0; k < GN_FZX_NTENSORS; k++) {
		struct gn_tensor *t = gn_tensor_find(rs->ctx, gn_fzx_tensors[k].id);
		int r;

		if (rs->bare)
			return;
		GN_FZ_CHECK(t, "tensor %u is gone", gn_fzx_tensors[k].id);
		if (!t->busy || t->done_no != t->stepno)
			continue;
		r = gn_allreduce_wait(rs->ctx, t->id);
		/* A peer's ABORT may carry any errno. */
		GN_FZ_CHECK(r <= 0 && r > -4096,
			    "tensor %u step %u: wait returned %d", t->id,
			    t->stepno, r);
		if (t->stepno < GN_FZX_STEPS)
			start(rs, k, t->stepno + 1);
	}
}

/* The shard a DATA packet is for: the receiver's, or its sender's result. */
static int shard_of(u8 phase, int from)
{
	if (phase == GN_PHASE_REDUCE)
		return 0;
	return from >= 0 && from < GN_FZX_WORLD ? from : 0;
}

/* The tensor a DATA or WHOLE packet names, or NULL. */
static const struct gn_fzx_tensor *tensor_of(const u8 *b)
{
	unsigned int k;

	for (k = 0; k < GN_FZX_NTENSORS; k++)
		if (gn_fzx_tensors[k].id == gn_fz_le(b + 12, 4))
			return &gn_fzx_tensors[k];
	return NULL;
}

/* GN_FZX_FIX_DATA for WHOLE: a real chunk of the named shard. */
static void fix_whole(u8 *b, size_t len, int from)
{
	const struct gn_fzx_tensor *t = tensor_of(b);
	u8 *d = b + GN_WIRE_HDR_LEN;
	size_t lo, hi, off, clen;
	u32 c, nch;
	int j;

	if (len < GN_WIRE_WHOLE_OVERHEAD || !t)
		return;
	j = shard_of(b[22] & 1, from);
	lo = gn_fzx_shard_lo(t->elems, (unsigned int)j);
	hi = gn_fzx_shard_lo(t->elems, (unsigned int)j + 1);
	nch = (u32)((hi - lo + GN_FZX_CHUNK - 1) / GN_FZX_CHUNK);
	if (!nch)
		return;
	c = gn_fz_le(d, 4) % nch;
	off = lo + (size_t)c * GN_FZX_CHUNK;
	clen = hi - off < GN_FZX_CHUNK ? hi - off : GN_FZX_CHUNK;
	gn_fz_put_le(d, (u32)off, 4);
	gn_fz_put_le(d + 4, (u32)((u64)off >> 32), 4);
	gn_fz_put_le(d + 8, (u32)clen, 4);
	if (t->codec != GN_CODEC_3LC)
		gn_fz_put_le(d + 12, 0, 4);
}

/* GN_FZX_FIX_DATA: see fuzz_input.h. */
static void fix_data(u8 *b, size_t len, int from)
{
	const struct gn_fzx_tensor *t;
	u32 first, count, npkts, body, c, nch;
	size_t lo, hi, off, clen;
	u8 *d = b + GN_WIRE_HDR_LEN;
	int j;

	if (len >= GN_WIRE_WHOLE_OVERHEAD && b[3] == GN_PKT_WHOLE) {
		fix_whole(b, len, from);
		return;
	}
	if (len < GN_WIRE_DATA_OVERHEAD || b[3] != GN_PKT_DATA)
		return;
	t = tensor_of(b);
	if (!t)
		return;
	j = shard_of(b[22] & 1, from);
	lo = gn_fzx_shard_lo(t->elems, (unsigned int)j);
	hi = gn_fzx_shard_lo(t->elems, (unsigned int)j + 1);
	nch = (u32)((hi - lo + GN_FZX_CHUNK - 1) / GN_FZX_CHUNK);
	if (!nch)
		return;
	c = gn_fz_le(d, 4) % nch;
	off = lo + (size_t)c * GN_FZX_CHUNK;
	clen = hi - off < GN_FZX_CHUNK ? hi - off : GN_FZX_CHUNK;
	gn_fz_put_le(d, (u32)off, 4);
	gn_fz_put_le(d + 4, (u32)((u64)off >> 32), 4);
	gn_fz_put_le(d + 8, (u32)clen, 4);
	body = (u32)(len - GN_WIRE_DATA_OVERHEAD);
	first = gn_fz_le(d + 12, 4);
	count = gn_fz_le(d + 16, 4);
	if (t->codec == GN_CODEC_3LC) {
		u32 g = (u32)gn_tlc_groups(clen);

		first %= g;
		if (body <= g - first && (count < body || count > g - first))
			count = body + count % (g - first - body + 1);
	} else {
		first %= (u32)clen;
		count = body / 4;
		gn_fz_put_le(d + 20, 0, 4);
	}
	gn_fz_put_le(d + 12, first, 4);
	gn_fz_put_le(d + 16, count, 4);
	npkts = gn_fz_le(d + 28, 4);
	if (npkts)
		gn_fz_put_le(d + 24, gn_fz_le(d + 24, 4) % npkts, 4);
}

/* GN_FZX_FIX_HDR: see fuzz_input.h. */
static void fix_hdr(u8 *b, size_t len, int from)
{
	const struct gn_fzx_tensor *t;
	int fixed;

	if (len < 4)
		return;
	gn_fz_put_le(b, GN_WIRE_MAGIC, 2);
	b[2] = GN_WIRE_VERSION;
	if (len < GN_WIRE_HDR_LEN)
		return;
	t = &gn_fzx_tensors[gn_fz_le(b + 12, 4) % GN_FZX_NTENSORS];
	if (from >= 0 && from < GN_FZX_WORLD)
		gn_fz_put_le(b + 4, (u32)from, 2);
	b[22] &= 1;
	gn_fz_put_le(b + 6, (b[3] == GN_PKT_DATA || b[3] == GN_PKT_WHOLE) &&
				    b[22] == GN_PHASE_GATHER ?
				    GN_RANK_ALL : 0, 2);
	gn_fz_put_le(b + 8, GN_FZX_JOB, 4);
	gn_fz_put_le(b + 12, t->id, 4);
	b[23] = (u8)(t->codec | (b[23] & GN_WIRE_ENTROPY));
	fixed = gn_wire_fixed_len(b[3]);
	if (fixed >= 0 && len >= (size_t)GN_WIRE_HDR_LEN + (size_t)fixed + GN_WIRE_TAG)
		gn_fz_put_le(b + 20, (u32)(len - GN_WIRE_HDR_LEN - (size_t)fixed -
					   GN_WIRE_TAG), 2);
}

/* What only a packet that passed its tag can move. */
struct rx_marks {
	u64 taken, after_tag;
};

static struct rx_marks marks(struct gn_ctx *ctx)
{
	GN_OPTS(gn_stats, st);
	struct rx_marks m;

	GN_FZ_CHECK(!gn_stats_ctx(ctx, &st), "gn_stats_ctx");
	m.taken = st.rx_packets;
	m.after_tag = st.drops[GN_DROP_REPLAY] + st.drops[GN_DROP_DUPLICATE] +
		      st.drops[GN_DROP_TENSOR];
	return m;
}

/*
 * GN_FZX_BREAK, after the seal: a tag bit flipped, or the packet cut
 * short by 1..16 bytes, as @how says.
 */
static size_t break_seal(u8 *pkt, size_t len, u8 how)
{
	if (len < GN_WIRE_TAG)
		return len;
	if (how & 1) {
		pkt[len - 1 - (how >> 1) % GN_WIRE_TAG] ^= (u8)(1u << (how % 8));
		return len;
	}
	return len - 1 - (how >> 1) % GN_WIRE_TAG;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool keys_ready;
	struct rx_state rs;
	size_t at = 0;
	int p;

	if (!keys_ready) {
		for (p = 0; p < GN_FZX_WORLD; p++)
			GN_FZ_CHECK(!gn_test_sender_key(gn_fzx_key, p, fzx_keys[p]),
				    "sender key %d", p);
		keys_ready = true;
	}
	setup(&rs, size > GN_FZX_REC_HDR && (data[0] & GN_FZX_STATE) &&
		   gn_fz_le(data + 1, 2) && (data[GN_FZX_REC_HDR] & GN_FZX_ST_BARE));
	while (at + GN_FZX_REC_HDR <= size) {
		u8 ctl = data[at];
		size_t len = gn_fz_le(data + at + 1, 2);
		int from = (ctl & GN_FZX_FROM_MASK) == GN_FZX_FROM_NONE ? -1 :
			   ctl & GN_FZX_FROM_MASK;
		bool forged = !(ctl & GN_FZX_SEAL) || (ctl & GN_FZX_BREAK);
		struct rx_marks before, after;
		u8 *pkt;

		at += GN_FZX_REC_HDR;
		if (len > size - at)
			len = size - at;
		if (len > GN_FZX_MAX_PKT)
			len = GN_FZX_MAX_PKT;
		if (ctl & GN_FZX_STATE) {
			if (len)
				set_state(&rs, data[at]);
			at += len;
			continue;
		}
		/* Exactly the packet's bytes: ASan catches any read beyond. */
		pkt = malloc(len ? len : 1);
		GN_FZ_CHECK(pkt, "out of memory");
		memcpy(pkt, data + at, len);
		at += len;
		if (ctl & GN_FZX_FIX_HDR)
			fix_hdr(pkt, len, from);
		if (ctl & GN_FZX_FIX_DATA)
			fix_data(pkt, len, from);
		if (ctl & GN_FZX_SEAL)
			seal(&rs, pkt, len, from);
		if (ctl & GN_FZX_BREAK)
			len = break_seal(pkt, len, len ? pkt[0] : 0);
		before = marks(rs.ctx);
		gn_test_packet_in(rs.ctx, from, pkt, len);
		if (ctl & GN_FZX_TWICE)
			gn_test_packet_in(rs.ctx, from, pkt, len);
		after = marks(rs.ctx);
		/* Unsealed, a forged or broken tag or a cut: the odds that
		 * one authenticates are 2^-128 or so, never in a fuzz run. */
		GN_FZ_CHECK(!forged || (after.taken == before.taken &&
					after.after_tag == before.after_tag),
			    "a packet that was not sealed, or broken after, got past its tag");
		free(pkt);
		advance(&rs);
	}
	teardown(&rs);
	return 0;
}
