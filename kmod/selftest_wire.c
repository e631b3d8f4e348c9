// SPDX-License-Identifier: MIT
/*
 * selftest_wire.c - runs lib/wire in the kernel against its golden data,
 * once with the MAC's scalar NH pass and once with the AVX2 one where
 * gn_mac_init() picks it:
 *  - every known answer of tests/golden/mac_vectors.h: the SipHash table,
 *    the key expansions, the tags and the session keys of gn_mac_session();
 *  - every golden packet of tests/golden/packets.h: the builders and
 *    gn_mac_seal() make exactly its bytes, and the parsers read back
 *    exactly its fields and accept its tag.
 * The MAC is reached only through kmod/mac_fpu.c, one packet per FPU
 * section. Keys, packets and messages live in kernel allocations made
 * before the checks (messages and parsed packets of exactly their length);
 * this file is integer-only.
 *
 * Log lines, per NH pass, one per failure, then a summary:
 *   gradnet: selftest mac <pass>: <passed>/<total> known answers
 *   gradnet: selftest wire <pass>: <passed>/<total> golden packets
 *   gradnet: selftest mac|wire avx2: skipped, CPU lacks it
 *   gradnet: selftest FAIL mac|wire <pass> <vector>: <what went wrong>
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

#include <gradnet/wire.h>
#include "golden/mac_vectors.h"
#include "golden/packets.h"
#include "mac_fpu.h"
#include "selftest.h"

#define WT_KATS (ARRAY_SIZE(gn_siphash_kat) + \
		 ARRAY_SIZE(gn_mac_kat_expanded) + ARRAY_SIZE(gn_mac_kat) + \
		 ARRAY_SIZE(gn_mac_kat_session))
#define WT_PKTS ARRAY_SIZE(gn_golden_pkt)

/* What a builder leaves alone shows up as this byte. */
#define WT_FILL 0xa5

/* One NH pass's run, and the scratch it works in. */
struct wt_run {
	const char *pass;	/* "scalar" or "avx2" */
	int isa;		/* struct gn_mac isa to test */
	struct gn_mac *m, *s, *k;
	u8 *pkt;		/* GN_WIRE_MAX_PKT bytes */
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
		  const char *vector, const char *call, int want, int got)
{
	if (want == got)
		return 0;
	wt_fail(run, group, vector, "%s returned %d, expected %d", call, got,
		want);
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

/* Expands @key into @m for this run's NH pass; 0, or 1 if it cannot. */
static int wt_key(const struct wt_run *run, struct gn_mac *m, const u8 *key,
		  const char *vector)
{
	gn_mac_init(m, key);
	if (run->isa && !m->isa) {
		wt_fail(run, "mac", vector, "gn_mac_init() did not pick AVX2");
		return 1;
	}
	m->isa = run->isa;
	return 0;
}

/* The tag of @len bytes at @buf under @m, one FPU section; 1 if refused. */
static int wt_tag(const struct wt_run *run, const struct gn_mac *m,
		  const u8 *buf, size_t len, const char *vector, u64 *tag)
{
	int ret = gn_kmod_mac_tag(m, buf, len, tag);

	if (ret) {
		wt_fail(run, "mac", vector, "gn_kmod_mac_tag() returned %d",
			ret);
		return 1;
	}
	return 0;
}

/* The SipHash reference table: entry n hashes 00 01 .. (n - 1). */
static void wt_siphash(struct wt_run *run)
{
	static const u64 k[2] = { 0x0706050403020100ull,
				  0x0f0e0d0c0b0a0908ull };
	u8 in[ARRAY_SIZE(gn_siphash_kat)];
	size_t n;

	for (n = 0; n < sizeof(in); n++)
		in[n] = (u8)n;
	for (n = 0; n < ARRAY_SIZE(gn_siphash_kat); n++)
		wt_count(run, wt_eq(run, "mac", "siphash", "table entry",
				    gn_siphash_kat[n],
				    gn_siphash(k, in, n)));
}

/* Key expansion i: P and the ends of the NH key. */
static int wt_expansion(struct wt_run *run, unsigned int i)
{
	const struct gn_mac_kat_expanded *x = &gn_mac_kat_expanded[i];
	struct gn_mac *m = run->m;
	int bad = 0;
	size_t w;

	BUILD_BUG_ON(ARRAY_SIZE(m->nh) != GN_MAC_KAT_NH_WORDS);
	if (wt_key(run, m, gn_mac_kat_key[i], "expansion"))
		return 1;
	bad |= wt_eq(run, "mac", "expansion", "prf[0]", x->prf[0], m->prf[0]);
	bad |= wt_eq(run, "mac", "expansion", "prf[1]", x->prf[1], m->prf[1]);
	for (w = 0; w < ARRAY_SIZE(x->nh_head); w++)
		bad |= wt_eq(run, "mac", "expansion", "nh head word",
			     x->nh_head[w], m->nh[w]);
	for (w = 0; w < ARRAY_SIZE(x->nh_tail); w++)
		bad |= wt_eq(run, "mac", "expansion", "nh tail word",
			     x->nh_tail[w],
			     m->nh[GN_MAC_KAT_NH_WORDS - 4 + w]);
	return bad;
}

/* Tag known answer @kat, its message in a buffer of exactly its length. */
static int wt_mac_kat(struct wt_run *run, const struct gn_mac_kat *kat)
{
	u8 *msg;
	u64 tag;
	size_t i;
	int bad;

	msg = kvmalloc(kat->len ? kat->len : 1, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	for (i = 0; i < kat->len; i++)
		msg[i] = GN_MAC_KAT_BYTE(kat->pattern, i);
	bad = wt_key(run, run->m, gn_mac_kat_key[kat->key], "tag");
	if (!bad)
		bad = wt_tag(run, run->m, msg, kat->len, "tag", &tag);
	if (!bad && tag != kat->tag) {
		wt_fail(run, "mac", "tag",
			"key %u pattern %u, %zu bytes: 0x%016llx, expected 0x%016llx",
			kat->key, kat->pattern, kat->len, tag, kat->tag);
		bad = 1;
	}
	kvfree(msg);
	return bad;
}

/*
 * Session known answer @kat: gn_mac_session() of key 0 expands to what
 * gn_mac_init() makes of the model's session key, tags the ramp as the
 * model does, and not as the job key does.
 */
static int wt_session(struct wt_run *run,
		      const struct gn_mac_kat_session *kat)
{
	u8 ramp[64];
	u64 tag, job_tag;
	size_t i;
	int ret;

	for (i = 0; i < sizeof(ramp); i++)
		ramp[i] = GN_MAC_KAT_BYTE(0, i);
	if (wt_key(run, run->m, gn_mac_kat_key[0], "session"))
		return 1;
	ret = gn_mac_session(run->s, run->m, kat->info, kat->info_len);
	if (ret) {
		wt_fail(run, "mac", "session", "gn_mac_session() returned %d",
			ret);
		return 1;
	}
	gn_mac_init(run->k, kat->key);
	if (memcmp(run->k, run->s, sizeof(*run->s))) {
		wt_fail(run, "mac", "session", "%zu info bytes: key differs",
			kat->info_len);
		return 1;
	}
	run->s->isa = run->isa;
	if (wt_tag(run, run->s, ramp, sizeof(ramp), "session", &tag) ||
	    wt_tag(run, run->m, ramp, sizeof(ramp), "session", &job_tag))
		return 1;
	if (tag == job_tag) {
		wt_fail(run, "mac", "session", "tags like the job key");
		return 1;
	}
	return wt_eq(run, "mac", "session", "ramp tag", kat->ramp64_tag, tag);
}

/* Return: 0 once every known answer has run (failures counted), -ENOMEM. */
static int wt_run_mac(struct wt_run *run)
{
	size_t i;
	int ret;

	wt_siphash(run);
	for (i = 0; i < ARRAY_SIZE(gn_mac_kat_expanded); i++)
		wt_count(run, wt_expansion(run, i));
	for (i = 0; i < ARRAY_SIZE(gn_mac_kat); i++) {
		ret = wt_mac_kat(run, &gn_mac_kat[i]);
		if (ret < 0)
			return ret;
		wt_count(run, ret);
	}
	for (i = 0; i < ARRAY_SIZE(gn_mac_kat_session); i++)
		wt_count(run, wt_session(run, &gn_mac_kat_session[i]));
	pr_info("selftest mac %s: %u/%zu known answers\n", run->pass,
		run->passed, WT_KATS);
	return 0;
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
 * Return: what gn_kmod_mac_seal() returned.
 */
static long wt_build(const struct wt_run *run, const struct gn_golden_pkt *g)
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
	u8 *p = run->pkt;

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
	return gn_kmod_mac_seal(g->keyed ? run->m : NULL, p,
				g->len - GN_WIRE_TAG);
}

/* 0 if the builders and the MAC make exactly @g's bytes, else 1. */
static int wt_check_build(const struct wt_run *run,
			  const struct gn_golden_pkt *g)
{
	long len = wt_build(run, g);
	size_t i;

	if (len != (long)g->len) {
		wt_fail(run, "wire", g->name, "built %ld bytes, expected %zu",
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
 * Parses a copy of @g of exactly its length: header, tag, then the part.
 *
 * Return: 0 if every field is read back, 1 if not (logged), or -ENOMEM.
 */
static int wt_check_parse(const struct wt_run *run,
			  const struct gn_golden_pkt *g)
{
	const struct gn_mac *m = g->keyed ? run->m : NULL;
	struct gn_wire_hdr h;
	u64 tag;
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
	bad |= wt_ret(run, "wire", g->name, "gn_kmod_mac_check()", 0,
		     gn_kmod_mac_check(m, p, g->len));
	if (g->keyed) {
		if (wt_tag(run, m, p, g->len - GN_WIRE_TAG, g->name, &tag))
			bad = 1;
		else
			bad |= wt_eq(run, "wire", g->name, "tag", g->tag, tag);
	}
	bad |= wt_check_part(run, g, p, &h);
out_free:
	kvfree(p);
	return bad;
}

/* Return: 0 once every golden packet has run (failures counted), -ENOMEM. */
static int wt_run_wire(struct wt_run *run)
{
	int ret, no_key;
	size_t i;

	/* Without its key every packet fails, and the line says so. */
	no_key = wt_key(run, run->m, gn_golden_pkt_key, "packet key");
	for (i = 0; i < WT_PKTS; i++) {
		const struct gn_golden_pkt *g = &gn_golden_pkt[i];

		if (no_key) {
			wt_count(run, 1);
			continue;
		}
		ret = wt_check_parse(run, g);
		if (ret < 0)
			return ret;
		wt_count(run, ret | wt_check_build(run, g));
	}
	pr_info("selftest wire %s: %u/%zu golden packets\n", run->pass,
		run->passed, WT_PKTS);
	return 0;
}

/* Both groups for one NH pass; adds what ran to *passed and *total. */
static int wt_run_pass(struct wt_run *run, unsigned int *passed,
		       unsigned int *total)
{
	int ret;

	ret = wt_run_mac(run);
	if (ret)
		return ret;
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

/*
 * Whether gn_mac_init() picks the AVX2 NH pass on this CPU: the test runs
 * that pass where the MAC itself would, so the CPU check is under test too
 * (tests/kmod/selftest.sh compares it with the guest's flags).
 */
static bool wt_mac_picks_avx2(struct gn_mac *scratch)
{
	gn_mac_init(scratch, gn_golden_pkt_key);
	return scratch->isa;
}

/**
 * gn_selftest_wire_run() - check lib/wire against its golden data
 *
 * Runs every MAC known answer and every golden packet with the scalar NH
 * pass and, where gn_mac_init() picks it, the AVX2 one; logs one line per
 * group and pass, one per failure and a summary. Runs in process context:
 * it sleeps to allocate, outside the FPU sections.
 *
 * Return: 0 if all passed; -EIO if any check failed; -ENOMEM.
 */
int gn_selftest_wire_run(void)
{
	static const char *const pass_name[] = { "scalar", "avx2" };
	unsigned int passed = 0, total = 0, ran = 0;
	struct wt_run run = { 0 };
	unsigned int isa;
	int ret = -ENOMEM;

	/* Zeroed: the session check compares whole keys, padding too. */
	run.m = kvzalloc(sizeof(*run.m), GFP_KERNEL);
	run.s = kvzalloc(sizeof(*run.s), GFP_KERNEL);
	run.k = kvzalloc(sizeof(*run.k), GFP_KERNEL);
	run.pkt = kvmalloc(GN_WIRE_MAX_PKT, GFP_KERNEL);
	if (!run.m || !run.s || !run.k || !run.pkt)
		goto out_free;

	for (isa = 0; isa < ARRAY_SIZE(pass_name); isa++) {
		run.isa = isa;
		run.pass = pass_name[isa];
		run.passed = 0;
		run.failed = 0;
		if (isa && !wt_mac_picks_avx2(run.m)) {
			pr_info("selftest mac %s: skipped, CPU lacks it\n",
				run.pass);
			pr_info("selftest wire %s: skipped, CPU lacks it\n",
				run.pass);
			continue;
		}
		ret = wt_run_pass(&run, &passed, &total);
		if (ret) {
			pr_err("selftest wire %s: aborted: %d\n", run.pass, ret);
			goto out_free;
		}
		ran++;
	}
	pr_info("selftest wire summary: %s, %u/%u checks passed, %u NH passes tested\n",
		passed == total ? "PASS" : "FAIL", passed, total, ran);
	ret = 0;
	if (passed != total) {
		pr_err("selftest wire failed, refusing to load\n");
		ret = -EIO;
	}
out_free:
	kvfree(run.pkt);
	kvfree(run.k);
	kvfree(run.s);
	kvfree(run.m);
	return ret;
}
