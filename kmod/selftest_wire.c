// SPDX-License-Identifier: MIT
/*
 * selftest_wire.c - runs lib/wire and the module's cryptography (the
 * kernel's lib/crypto, through lib/env/kernel_crypto.c) against golden
 * data, in two passes: "simd", as the worker calls it, where the library
 * picks its SIMD code, and "generic", each call inside a
 * kernel_fpu_begin() section of the test's, where the library must fall
 * back to its generic code:
 *  - every known answer of tests/golden/seal_vectors.h: RFC 8439's A.5,
 *    the keyed BLAKE2s KAT, the AEAD tags, and the HELLO, session and
 *    sender keys of lib/wire/seal.c;
 *  - every golden packet of tests/golden/packets.h: the builders and
 *    gn_wire_seal() make exactly its bytes, and gn_wire_open() and the
 *    parsers read back exactly its fields and body.
 * Keys, packets and messages live in kernel allocations made before the
 * checks; no FPU section of the test's holds anything but one call.
 *
 * Log lines, per pass, one per failure, then a summary:
 *   gradnet: selftest seal <pass>: <passed>/<total> known answers
 *   gradnet: selftest wire <pass>: <passed>/<total> golden packets
 *   gradnet: selftest FAIL seal|wire <pass> <vector>: <what went wrong>
 *   gradnet: selftest wire summary: PASS|FAIL, <passed>/<total> checks ...
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/build_bug.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/printk.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/types.h>
#include <asm/fpu/api.h>

#include <gradnet/wire.h>
#include "gn_deps.h"
#include "golden/packets.h"
#include "golden/seal_vectors.h"
#include "selftest.h"

#define WT_KATS (2 + ARRAY_SIZE(gn_seal_kat) + ARRAY_SIZE(gn_seal_kat_hello) + \
		 ARRAY_SIZE(gn_seal_kat_session))
#define WT_PKTS ARRAY_SIZE(gn_golden_pkt)

/* What a builder leaves alone shows up as this byte. */
#define WT_FILL 0xa5

/* One pass's run, and the scratch it works in. */
struct wt_run {
	const char *pass;	/* "simd" or "generic" */
	bool generic;		/* each call in an FPU section of ours */
	u8 *pkt;		/* GN_WIRE_MAX_PKT bytes */
	u8 *msg;		/* GN_WIRE_MAX_PKT bytes */
	unsigned int passed;
	unsigned int failed;
};

static __printf(4, 5) void wt_fail(const struct wt_run *run,
				   const char *group, const char *vector,
				   const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	pr_info("selftest FAIL %s %s %s: %pV\n", group, run->pass, vector,
		&vaf);
	va_end(args);
}

/* 0 if @got is @want, else 1 and a log line naming @what. */
static int wt_eq(const struct wt_run *run, const char *group,
		 const char *vector, const char *what, u64 want, u64 got)
{
	if (want == got)
		return 0;
	wt_fail(run, group, vector, "%s is 0x%llx, expected 0x%llx", what,
		got, want);
	return 1;
}

/* 0 if a call returned @want, else 1 and a log line naming it. */
static int wt_ret(const struct wt_run *run, const char *group,
		  const char *vector, const char *call, long want, long got)
{
	if (want == got)
		return 0;
	wt_fail(run, group, vector, "%s returned %ld, expected %ld", call, got,
		want);
	return 1;
}

/* 0 if @len bytes at @got are @want's, else 1 and a log line. */
static int wt_same(const struct wt_run *run, const char *group,
		   const char *vector, const char *what, const u8 *want,
		   const u8 *got, size_t len)
{
	if (!memcmp(want, got, len))
		return 0;
	wt_fail(run, group, vector, "%s differs", what);
	return 1;
}

/* A golden packet field @f of the parsed @got against golden @want. */
#define WT_FIELD(run, g, want, got, f) \
	wt_eq(run, "wire", (g)->name, #f, (want)->f, (got)->f)

static void wt_count(struct wt_run *run, int failed)
{
	if (failed)
		run->failed++;
	else
		run->passed++;
}

/*
 * The calls into the cryptography, each alone in an FPU section of ours
 * in the generic pass: there the kernel's library cannot use SIMD and
 * takes its generic code, which must give the same bytes.
 */
static void wt_fpu_begin(const struct wt_run *run)
{
	if (run->generic)
		kernel_fpu_begin();
}

static void wt_fpu_end(const struct wt_run *run)
{
	if (run->generic)
		kernel_fpu_end();
}

/* gn_aead_seal() or gn_aead_open(), as @aead says, in this run's way. */
static int wt_aead(const struct wt_run *run,
		   int (*aead)(const u8 *key, u64 nonce, const u8 *ad,
			       size_t ad_len, u8 *body, size_t len),
		   const u8 *key, u64 nonce, const u8 *ad, size_t ad_len,
		   u8 *body, size_t len)
{
	int ret;

	wt_fpu_begin(run);
	ret = aead(key, nonce, ad, ad_len, body, len);
	wt_fpu_end(run);
	return ret;
}

static size_t wt_seal(const struct wt_run *run, const u8 *key, u8 *pkt,
		      size_t len, u64 pn, u8 flags)
{
	size_t ret;

	wt_fpu_begin(run);
	ret = gn_wire_seal(key, pkt, len, pn, flags);
	wt_fpu_end(run);
	return ret;
}

static int wt_open(const struct wt_run *run, const u8 *key, u8 *pkt,
		   size_t len)
{
	int ret;

	wt_fpu_begin(run);
	ret = gn_wire_open(key, pkt, len);
	wt_fpu_end(run);
	return ret;
}

/*
 * The key golden packet @g is sealed under, into @k, as a rank derives
 * it; NULL for a job without a key, or if a derivation failed.
 */
static const u8 *wt_golden_key(const struct wt_run *run,
			       const struct gn_golden_pkt *g, u8 *k)
{
	u8 s[GN_SEAL_KEY_LEN];
	int ret;

	if (!g->keyed)
		return NULL;
	wt_fpu_begin(run);
	if (g->hdr.type == GN_PKT_HELLO) {
		ret = gn_wire_hello_key(k, gn_golden_pkt_key, g->hdr.src,
					g->hello.instance);
	} else {
		ret = gn_wire_session_key(s, gn_golden_pkt_key,
					  gn_golden_pkt_info,
					  sizeof(gn_golden_pkt_info));
		if (!ret)
			ret = gn_wire_sender_key(k, s, g->hdr.src);
	}
	wt_fpu_end(run);
	return ret ? NULL : k;
}

/* @aead of RFC 8439 A.5's @n bytes at @p, with its key, nonce and AAD. */
static int wt_a5(const struct wt_run *run,
		 int (*aead)(const u8 *key, u64 nonce, const u8 *ad,
			     size_t ad_len, u8 *body, size_t len),
		 u8 *p, size_t n)
{
	return wt_aead(run, aead, gn_rfc8439_a5_key, gn_rfc8439_a5_nonce,
		       gn_rfc8439_a5_aad, sizeof(gn_rfc8439_a5_aad), p, n);
}

/* RFC 8439 A.5 both ways, and a changed tag refused. */
static int wt_rfc8439(struct wt_run *run)
{
	const size_t n = sizeof(gn_rfc8439_a5_text);
	u8 *p = run->msg;
	int bad;

	BUILD_BUG_ON(sizeof(gn_rfc8439_a5_out) != n + GN_WIRE_TAG);
	memcpy(p, gn_rfc8439_a5_text, n);
	bad = wt_ret(run, "seal", "rfc8439", "gn_aead_seal()", 0,
		     wt_a5(run, gn_aead_seal, p, n));
	bad |= wt_same(run, "seal", "rfc8439", "ciphertext and tag",
		       gn_rfc8439_a5_out, p, n + GN_WIRE_TAG);
	bad |= wt_ret(run, "seal", "rfc8439", "gn_aead_open()", 0,
		      wt_a5(run, gn_aead_open, p, n));
	bad |= wt_same(run, "seal", "rfc8439", "plaintext", gn_rfc8439_a5_text,
		       p, n);
	memcpy(p, gn_rfc8439_a5_out, n + GN_WIRE_TAG);
	p[n] ^= 1;
	bad |= wt_ret(run, "seal", "rfc8439", "gn_aead_open() of a bad tag",
		      -EBADMSG, wt_a5(run, gn_aead_open, p, n));
	return bad;
}

/* The BLAKE2 reference KAT: keyed with 00..1f, of nothing. */
static int wt_blake2s(struct wt_run *run)
{
	u8 key[32], out[32];
	size_t i;
	int bad;

	for (i = 0; i < sizeof(key); i++)
		key[i] = (u8)i;
	wt_fpu_begin(run);
	bad = gn_kdf(out, key, sizeof(key), NULL, 0, NULL, 0);
	wt_fpu_end(run);
	if (wt_ret(run, "seal", "blake2s", "gn_kdf()", 0, bad))
		return 1;
	return wt_same(run, "seal", "blake2s", "hash",
		       gn_blake2s_kat_keyed_empty, out, sizeof(out));
}

/* AEAD known answer @kat: its tag, and the body back after opening. */
static int wt_aead_kat(struct wt_run *run, const struct gn_seal_kat *kat)
{
	size_t n = (size_t)kat->ad_len + kat->body_len, i;
	const u8 *key = gn_seal_kat_key[kat->key];
	u8 *msg = run->msg;
	int bad;

	if (n > GN_WIRE_MAX_PKT)
		return 1;
	for (i = 0; i < n; i++)
		msg[i] = GN_SEAL_KAT_BYTE(kat->pattern, i);
	bad = wt_ret(run, "seal", "aead", "gn_aead_seal()", 0,
		     wt_aead(run, gn_aead_seal, key, kat->pn, msg, kat->ad_len,
			     msg + kat->ad_len, kat->body_len));
	if (!bad && memcmp(kat->tag, msg + n, GN_WIRE_TAG)) {
		wt_fail(run, "seal", "aead",
			"key %u pattern %u, %u + %u bytes: tag differs",
			kat->key, kat->pattern, kat->ad_len, kat->body_len);
		bad = 1;
	}
	bad |= wt_ret(run, "seal", "aead", "gn_aead_open()", 0,
		      wt_aead(run, gn_aead_open, key, kat->pn, msg, kat->ad_len,
			      msg + kat->ad_len, kat->body_len));
	for (i = 0; !bad && i < n; i++)
		bad = msg[i] != GN_SEAL_KAT_BYTE(kat->pattern, i);
	if (bad)
		wt_fail(run, "seal", "aead", "%u + %u bytes did not come back",
			kat->ad_len, kat->body_len);
	return bad;
}

static int wt_hello_kat(struct wt_run *run,
			const struct gn_seal_kat_hello *kat)
{
	u8 k[GN_SEAL_KEY_LEN];
	int ret;

	wt_fpu_begin(run);
	ret = gn_wire_hello_key(k, gn_seal_kat_job_key, kat->rank,
				kat->instance);
	wt_fpu_end(run);
	if (wt_ret(run, "seal", "hello key", "gn_wire_hello_key()", 0, ret))
		return 1;
	return wt_same(run, "seal", "hello key", "key", kat->key, k, sizeof(k));
}

static int wt_session_kat(struct wt_run *run,
			  const struct gn_seal_kat_session *kat)
{
	u8 s[GN_SEAL_KEY_LEN], k0[GN_SEAL_KEY_LEN], kl[GN_SEAL_KEY_LEN];
	int ret;

	wt_fpu_begin(run);
	ret = gn_wire_session_key(s, gn_seal_kat_job_key, kat->info,
				  kat->info_len);
	if (!ret)
		ret = gn_wire_sender_key(k0, s, 0);
	if (!ret)
		ret = gn_wire_sender_key(kl, s, kat->last);
	wt_fpu_end(run);
	if (wt_ret(run, "seal", "session", "the key schedule", 0, ret))
		return 1;
	return wt_same(run, "seal", "session", "session key", kat->session, s,
		       sizeof(s)) |
	       wt_same(run, "seal", "session", "sender key 0", kat->sender0, k0,
		       sizeof(k0)) |
	       wt_same(run, "seal", "session", "last sender key",
		       kat->sender_last, kl, sizeof(kl));
}

/* Every known answer; failures counted. */
static void wt_run_seal(struct wt_run *run)
{
	size_t i;

	wt_count(run, wt_rfc8439(run));
	wt_count(run, wt_blake2s(run));
	for (i = 0; i < ARRAY_SIZE(gn_seal_kat); i++)
		wt_count(run, wt_aead_kat(run, &gn_seal_kat[i]));
	for (i = 0; i < ARRAY_SIZE(gn_seal_kat_hello); i++)
		wt_count(run, wt_hello_kat(run, &gn_seal_kat_hello[i]));
	for (i = 0; i < ARRAY_SIZE(gn_seal_kat_session); i++)
		wt_count(run, wt_session_kat(run, &gn_seal_kat_session[i]));
	pr_info("selftest seal %s: %u/%zu known answers\n", run->pass,
		run->passed, WT_KATS);
}

static void wt_put_hello(const struct gn_golden_pkt *g, u8 *p)
{
	const struct gn_golden_pkt_hello *o = &g->hello;
	struct gn_wire_hello wo = {
		.world = o->world, .flags = o->flags, .chunk = o->chunk,
		.mtu = o->mtu,
		.instance = o->instance, .echo = o->echo,
	};

	gn_wire_hello_put(&wo, p);
	memcpy(p + GN_WIRE_HDR_LEN + GN_WIRE_HELLO_LEN, g->body,
	       g->hdr.body_len);
}

static void wt_put_data(const struct gn_golden_pkt *g, u8 *p)
{
	const struct gn_golden_pkt_data *d = &g->data;
	struct gn_wire_data wd = {
		.chunk_off = d->chunk_off, .chunk_len = d->chunk_len,
		.first = d->first, .count = d->count, .aux = d->aux,
		.pkt = d->pkt, .npkts = d->npkts,
	};

	gn_wire_data_put(&wd, p);
	memcpy(p + gn_wire_body_off(g->hdr.type), g->body, g->hdr.body_len);
}

static void wt_put_ack(const struct gn_golden_pkt *g, u8 *p)
{
	size_t at = GN_WIRE_HDR_LEN + GN_WIRE_ACK_LEN;
	unsigned int i;

	gn_wire_ack_put(g->ack_entries, p);
	for (i = 0; i < g->ack_entries; i++) {
		const struct gn_golden_pkt_ack_entry *e = &g->ack[i];
		struct gn_wire_ack a = {
			.tensor = e->tensor, .step = e->step,
			.chunk_off = e->chunk_off, .npkts = e->npkts,
			.base = e->base, .phase = e->phase, .bytes = e->bytes,
		};

		gn_wire_ack_entry_put(&a, p + at);
		/* "All of it" has no bitmap (NULL). */
		if (e->bytes)
			memcpy(p + at + GN_WIRE_ACK_ENTRY, e->bitmap, e->bytes);
		at += GN_WIRE_ACK_ENTRY + e->bytes;
	}
}

static void wt_put_ctrl(const struct gn_golden_pkt *g, u8 *p)
{
	const struct gn_golden_pkt_ctrl *c = &g->ctrl;
	struct gn_wire_ctrl wc = {
		.seq = c->seq, .kind = c->kind, .flags = c->flags,
		.value = c->value, .extra = c->extra,
	};

	memcpy(wc.params, c->params, sizeof(wc.params));
	gn_wire_ctrl_put(&wc, p);
}

/*
 * Builds golden packet @g from its field values into run->pkt, filled
 * with WT_FILL first, and seals it.
 *
 * Return: what gn_wire_seal() returned.
 */
static size_t wt_build(const struct wt_run *run, const struct gn_golden_pkt *g)
{
	const struct gn_golden_pkt_hdr *gh = &g->hdr;
	struct gn_wire_hdr h = {
		.magic = GN_WIRE_MAGIC, .version = gh->version,
		.type = gh->type, .src = gh->src, .dst = gh->dst,
		.job = gh->job, .tensor = gh->tensor, .step = gh->step,
		.body_len = gh->body_len, .phase = gh->phase,
		.codec = gh->codec,
	};
	struct gn_wire_ctrl_ack ca = { .seq = g->ctrl_ack.seq };
	struct gn_wire_ping pi = { .stamp = g->ping.stamp };
	u8 *p = run->pkt, k[GN_SEAL_KEY_LEN];
	const u8 *key = wt_golden_key(run, g, k);

	memset(p, WT_FILL, GN_WIRE_MAX_PKT);
	gn_wire_hdr_put(&h, p);
	switch (gh->type) {
	case GN_PKT_HELLO:
		wt_put_hello(g, p);
		break;
	case GN_PKT_DATA:
	case GN_PKT_WHOLE:
		wt_put_data(g, p);
		break;
	case GN_PKT_ACK:
		wt_put_ack(g, p);
		break;
	case GN_PKT_CTRL:
		wt_put_ctrl(g, p);
		break;
	case GN_PKT_CTRL_ACK:
		gn_wire_ctrl_ack_put(&ca, p);
		break;
	case GN_PKT_PING:
	case GN_PKT_PONG:
		gn_wire_ping_put(&pi, p);
		break;
	}
	if (g->keyed && !key)
		return 0;
	return wt_seal(run, key, p, g->len - GN_WIRE_TAG, gh->pn,
		       g->keyed ? gh->seal : 0);
}

/* 0 if the builders and the seal make exactly @g's bytes, else 1. */
static int wt_check_build(const struct wt_run *run,
			  const struct gn_golden_pkt *g)
{
	size_t len = wt_build(run, g), i;

	if (len != g->len) {
		wt_fail(run, "wire", g->name, "built %zu bytes, expected %zu",
			len, g->len);
		return 1;
	}
	for (i = 0; i < g->len; i++) {
		if (run->pkt[i] != g->bytes[i]) {
			wt_fail(run, "wire", g->name,
				"built byte %zu is 0x%02x, expected 0x%02x",
				i, run->pkt[i], g->bytes[i]);
			return 1;
		}
	}
	return 0;
}

static int wt_check_hdr(const struct wt_run *run,
			const struct gn_golden_pkt *g,
			const struct gn_wire_hdr *h)
{
	const struct gn_golden_pkt_hdr *gh = &g->hdr;
	int bad = 0;

	bad |= wt_eq(run, "wire", g->name, "magic", GN_WIRE_MAGIC, h->magic);
	bad |= WT_FIELD(run, g, gh, h, version);
	bad |= WT_FIELD(run, g, gh, h, type);
	bad |= WT_FIELD(run, g, gh, h, src);
	bad |= WT_FIELD(run, g, gh, h, dst);
	bad |= WT_FIELD(run, g, gh, h, job);
	bad |= WT_FIELD(run, g, gh, h, tensor);
	bad |= WT_FIELD(run, g, gh, h, step);
	bad |= WT_FIELD(run, g, gh, h, body_len);
	bad |= WT_FIELD(run, g, gh, h, phase);
	bad |= WT_FIELD(run, g, gh, h, codec);
	bad |= WT_FIELD(run, g, gh, h, seal);
	bad |= WT_FIELD(run, g, gh, h, pn);
	return bad;
}

static int wt_check_hello(const struct wt_run *run,
			  const struct gn_golden_pkt *g, const u8 *p,
			  const struct gn_wire_hdr *h)
{
	const struct gn_golden_pkt_hello *want = &g->hello;
	struct gn_wire_hello o;
	int bad;

	bad = wt_ret(run, "wire", g->name, "gn_wire_hello_get()", 0,
		    gn_wire_hello_get(p, h, &o));
	bad |= WT_FIELD(run, g, want, &o, world);
	bad |= WT_FIELD(run, g, want, &o, flags);
	bad |= WT_FIELD(run, g, want, &o, chunk);
	bad |= WT_FIELD(run, g, want, &o, mtu);
	bad |= WT_FIELD(run, g, want, &o, instance);
	bad |= WT_FIELD(run, g, want, &o, echo);
	return bad;
}

static int wt_check_data(const struct wt_run *run,
			 const struct gn_golden_pkt *g, const u8 *p,
			 const struct gn_wire_hdr *h)
{
	const struct gn_golden_pkt_data *want = &g->data;
	struct gn_wire_data d;
	int bad;

	bad = wt_ret(run, "wire", g->name, "gn_wire_data_get()", 0,
		    gn_wire_data_get(p, h, &d));
	bad |= WT_FIELD(run, g, want, &d, chunk_off);
	bad |= WT_FIELD(run, g, want, &d, chunk_len);
	bad |= WT_FIELD(run, g, want, &d, first);
	bad |= WT_FIELD(run, g, want, &d, count);
	bad |= WT_FIELD(run, g, want, &d, aux);
	bad |= WT_FIELD(run, g, want, &d, pkt);
	bad |= WT_FIELD(run, g, want, &d, npkts);
	if (memcmp(g->body, p + gn_wire_body_off(h->type), h->body_len)) {
		wt_fail(run, "wire", g->name, "body differs");
		bad = 1;
	}
	return bad;
}

/* The entries one by one, each ending where the next starts. */
static int wt_check_ack(const struct wt_run *run,
			const struct gn_golden_pkt *g, const u8 *p,
			const struct gn_wire_hdr *h)
{
	const u8 *at = p + GN_WIRE_HDR_LEN + GN_WIRE_ACK_LEN;
	size_t left = h->body_len;
	struct gn_wire_ack a;
	unsigned int n, i;
	int r, bad;

	bad = wt_ret(run, "wire", g->name, "gn_wire_ack_get()", 0,
		    gn_wire_ack_get(p, h, &n));
	if (bad || wt_eq(run, "wire", g->name, "entries", g->ack_entries, n))
		return 1;
	for (i = 0; i < n; i++) {
		const struct gn_golden_pkt_ack_entry *e = &g->ack[i];

		r = gn_wire_ack_entry_get(at, left, &a);
		if (wt_ret(run, "wire", g->name, "gn_wire_ack_entry_get()",
			  GN_WIRE_ACK_ENTRY + e->bytes, r))
			return 1;
		bad |= WT_FIELD(run, g, e, &a, tensor);
		bad |= WT_FIELD(run, g, e, &a, step);
		bad |= WT_FIELD(run, g, e, &a, chunk_off);
		bad |= WT_FIELD(run, g, e, &a, npkts);
		bad |= WT_FIELD(run, g, e, &a, base);
		bad |= WT_FIELD(run, g, e, &a, phase);
		bad |= WT_FIELD(run, g, e, &a, bytes);
		if (e->bytes && memcmp(e->bitmap, at + GN_WIRE_ACK_ENTRY,
				       e->bytes)) {
			wt_fail(run, "wire", g->name, "bitmap %u differs", i);
			bad = 1;
		}
		at += r;
		left -= r;
	}
	return bad | wt_eq(run, "wire", g->name, "body bytes left", 0, left);
}

static int wt_check_ctrl(const struct wt_run *run,
			 const struct gn_golden_pkt *g, const u8 *p,
			 const struct gn_wire_hdr *h)
{
	const struct gn_golden_pkt_ctrl *want = &g->ctrl;
	struct gn_wire_ctrl c;
	unsigned int i;
	int bad;

	bad = wt_ret(run, "wire", g->name, "gn_wire_ctrl_get()", 0,
		    gn_wire_ctrl_get(p, h, &c));
	bad |= WT_FIELD(run, g, want, &c, seq);
	bad |= WT_FIELD(run, g, want, &c, kind);
	bad |= WT_FIELD(run, g, want, &c, flags);
	bad |= WT_FIELD(run, g, want, &c, value);
	bad |= WT_FIELD(run, g, want, &c, extra);
	for (i = 0; i < GN_WIRE_PARAM_WORDS; i++)
		bad |= wt_eq(run, "wire", g->name, "params", want->params[i],
			     c.params[i]);
	return bad;
}

/* The type's own part, by the parser of its type. */
static int wt_check_part(const struct wt_run *run,
			 const struct gn_golden_pkt *g, const u8 *p,
			 const struct gn_wire_hdr *h)
{
	struct gn_wire_ctrl_ack ca;
	struct gn_wire_ping pi;
	int bad;

	switch (h->type) {
	case GN_PKT_HELLO:
		return wt_check_hello(run, g, p, h);
	case GN_PKT_DATA:
	case GN_PKT_WHOLE:
		return wt_check_data(run, g, p, h);
	case GN_PKT_ACK:
		return wt_check_ack(run, g, p, h);
	case GN_PKT_CTRL:
		return wt_check_ctrl(run, g, p, h);
	case GN_PKT_CTRL_ACK:
		bad = wt_ret(run, "wire", g->name, "gn_wire_ctrl_ack_get()", 0,
			    gn_wire_ctrl_ack_get(p, h, &ca));
		return bad | WT_FIELD(run, g, &g->ctrl_ack, &ca, seq);
	case GN_PKT_PING:
	case GN_PKT_PONG:
		bad = wt_ret(run, "wire", g->name, "gn_wire_ping_get()", 0,
			    gn_wire_ping_get(p, h, &pi));
		return bad | WT_FIELD(run, g, &g->ping, &pi, stamp);
	}
	wt_fail(run, "wire", g->name, "unknown type %u", h->type);
	return 1;
}

/*
 * Parses a copy of @g of exactly its length: header, tag (opening the
 * body), then the part.
 *
 * Return: 0 if every field is read back, 1 if not (logged), or -ENOMEM.
 */
static int wt_check_parse(const struct wt_run *run,
			  const struct gn_golden_pkt *g)
{
	u8 k[GN_SEAL_KEY_LEN];
	const u8 *key = wt_golden_key(run, g, k);
	struct gn_wire_hdr h;
	int bad;
	u8 *p;

	p = kvmalloc(g->len, GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	memcpy(p, g->bytes, g->len);
	bad = wt_ret(run, "wire", g->name, "gn_wire_hdr_get()", 0,
		    gn_wire_hdr_get(p, g->len, &h));
	if (bad)
		goto out_free;
	bad |= wt_check_hdr(run, g, &h);
	bad |= wt_same(run, "wire", g->name, "tag", g->tag,
		       p + g->len - GN_WIRE_TAG, GN_WIRE_TAG);
	if (g->keyed && !key)
		bad = 1;
	bad |= wt_ret(run, "wire", g->name, "gn_wire_open()", 0,
		      wt_open(run, key, p, g->len));
	bad |= wt_check_part(run, g, p, &h);
out_free:
	kvfree(p);
	return bad;
}

/* Return: 0 once every golden packet has run (failures counted), -ENOMEM. */
static int wt_run_wire(struct wt_run *run)
{
	int ret;
	size_t i;

	for (i = 0; i < WT_PKTS; i++) {
		const struct gn_golden_pkt *g = &gn_golden_pkt[i];

		ret = wt_check_parse(run, g);
		if (ret < 0)
			return ret;
		wt_count(run, ret | wt_check_build(run, g));
	}
	pr_info("selftest wire %s: %u/%zu golden packets\n", run->pass,
		run->passed, WT_PKTS);
	return 0;
}

/* Both groups for one pass; adds what ran to *passed and *total. */
static int wt_run_pass(struct wt_run *run, unsigned int *passed,
		       unsigned int *total)
{
	int ret;

	wt_run_seal(run);
	*passed += run->passed;
	*total += run->passed + run->failed;
	run->passed = 0;
	run->failed = 0;
	ret = wt_run_wire(run);
	if (ret)
		return ret;
	*passed += run->passed;
	*total += run->passed + run->failed;
	return 0;
}

/**
 * gn_selftest_wire_run() - check lib/wire and the cryptography against
 * golden data
 *
 * Runs every known answer and every golden packet twice: with the kernel
 * library's SIMD code, as the worker runs it, and with its generic code,
 * each call inside an FPU section of the test's; logs one line per group
 * and pass, one per failure and a summary. Runs in process context.
 *
 * Return: 0 if all passed; -EIO if any check failed; -ENOMEM.
 */
int gn_selftest_wire_run(void)
{
	static const char *const pass_name[] = { "simd", "generic" };
	unsigned int passed = 0, total = 0, pass;
	struct wt_run run = { 0 };
	int ret = -ENOMEM;

	run.pkt = kvmalloc(GN_WIRE_MAX_PKT, GFP_KERNEL);
	run.msg = kvmalloc(GN_WIRE_MAX_PKT + GN_WIRE_TAG, GFP_KERNEL);
	if (!run.pkt || !run.msg)
		goto out_free;

	for (pass = 0; pass < ARRAY_SIZE(pass_name); pass++) {
		run.pass = pass_name[pass];
		run.generic = pass;
		run.passed = 0;
		run.failed = 0;
		ret = wt_run_pass(&run, &passed, &total);
		if (ret) {
			pr_err("selftest wire %s: aborted: %d\n", run.pass, ret);
			goto out_free;
		}
	}
	pr_info("selftest wire summary: %s, %u/%u checks passed, %zu passes tested\n",
		passed == total ? "PASS" : "FAIL", passed, total,
		ARRAY_SIZE(pass_name));
	ret = 0;
	if (passed != total) {
		pr_err("selftest wire failed, refusing to load\n");
		ret = -EIO;
	}
out_free:
	kvfree(run.msg);
	kvfree(run.pkt);
	return ret;
}
