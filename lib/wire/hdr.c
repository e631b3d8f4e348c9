// SPDX-License-Identifier: MIT
/*
 * hdr.c - build, parse and check gradnet packets (gradnet/wire.h): the
 * common header and the fixed part of every type. libgradnet writes and
 * reads packet fields nowhere else; tests/golden/packets.h holds this file
 * to the documented format.
 * Integer-only and freestanding: the same file runs in the kernel module.
 * A parser never reads past the length it is given.
 */
#include "gn_deps.h"
#include <gradnet/wire.h>

#include "codec/codec.h"

GN_STATIC_ASSERT(GN_WIRE_HDR_LEN == 32, "common header is 32 bytes");
GN_STATIC_ASSERT(GN_WIRE_TAG == 16, "the tag is Poly1305's 16 bytes");
GN_STATIC_ASSERT(GN_WIRE_DATA_HDR == 64, "DATA header is 64 bytes");
GN_STATIC_ASSERT(GN_WIRE_DATA_OVERHEAD == 80, "DATA overhead is 80 bytes");
GN_STATIC_ASSERT(GN_WIRE_WHOLE_HDR == 48 && GN_WIRE_WHOLE_OVERHEAD == 64,
		 "WHOLE header is 48 bytes, its overhead 64");
GN_STATIC_ASSERT(GN_WIRE_HELLO_LEN == 32, "HELLO part is 32 bytes");
GN_STATIC_ASSERT(GN_WIRE_ACK_LEN == 4 && GN_WIRE_ACK_ENTRY == 28,
		 "ACK part is 4 bytes, an entry 28 before its bitmap");
GN_STATIC_ASSERT(GN_WIRE_CTRL_LEN == 52, "CTRL part is 52 bytes");
GN_STATIC_ASSERT(GN_WIRE_PARAM_WORDS == GN_CODEC_PARAM_WORDS,
		 "the descriptor carries a whole parameter block");
GN_STATIC_ASSERT(GN_WIRE_CTRL_ACK_LEN == 4, "CTRL_ACK part is 4 bytes");
GN_STATIC_ASSERT(GN_WIRE_PING_LEN == 8, "PING and PONG parts are 8 bytes");

/* Fixed part after the common header, by packet type. */
static const u8 fixed_len[] = {
	[GN_PKT_HELLO] = GN_WIRE_HELLO_LEN,
	[GN_PKT_DATA] = GN_WIRE_DATA_LEN,
	[GN_PKT_ACK] = GN_WIRE_ACK_LEN,
	[GN_PKT_CTRL] = GN_WIRE_CTRL_LEN,
	[GN_PKT_CTRL_ACK] = GN_WIRE_CTRL_ACK_LEN,
	[GN_PKT_PING] = GN_WIRE_PING_LEN,
	[GN_PKT_PONG] = GN_WIRE_PING_LEN,
	[GN_PKT_WHOLE] = GN_WIRE_WHOLE_LEN,
};

int gn_wire_fixed_len(unsigned int type)
{
	if (type == 0 || type >= sizeof(fixed_len))
		return -1;
	return fixed_len[type];
}

void gn_wire_hdr_put(const struct gn_wire_hdr *h, u8 *b)
{
	gn_put_le16(GN_WIRE_MAGIC, b);
	b[2] = h->version;
	b[3] = h->type;
	gn_put_le16(h->src, b + 4);
	gn_put_le16(h->dst, b + 6);
	gn_put_le32(h->job, b + 8);
	gn_put_le32(h->tensor, b + 12);
	gn_put_le32(h->step, b + 16);
	gn_put_le16(h->body_len, b + 20);
	b[22] = h->phase;
	b[23] = (u8)(h->codec | (h->entropy ? GN_WIRE_ENTROPY : 0));
	gn_put_le64(h->pn << 8 | h->seal, b + 24);
}

int gn_wire_hdr_get(const u8 *b, size_t len, struct gn_wire_hdr *h)
{
	int fixed;

	if (len < 4 || gn_get_le16(b) != GN_WIRE_MAGIC)
		return -EBADMSG;
	memset(h, 0, sizeof(*h));
	h->magic = GN_WIRE_MAGIC;
	h->version = b[2];
	h->type = b[3];
	if (h->version != GN_WIRE_VERSION)
		return -EPROTONOSUPPORT;
	if (len < GN_WIRE_HDR_LEN + GN_WIRE_TAG || len > GN_WIRE_MAX_PKT)
		return -EBADMSG;
	h->src = gn_get_le16(b + 4);
	h->dst = gn_get_le16(b + 6);
	h->job = gn_get_le32(b + 8);
	h->tensor = gn_get_le32(b + 12);
	h->step = gn_get_le32(b + 16);
	h->body_len = gn_get_le16(b + 20);
	h->phase = b[22];
	h->codec = b[23] & GN_WIRE_CODEC_ID;
	h->entropy = b[23] >> 7;
	h->seal = b[24];
	h->pn = gn_get_le64(b + 24) >> 8;
	fixed = gn_wire_fixed_len(h->type);
	if (fixed < 0 ||
	    len != (size_t)GN_WIRE_HDR_LEN + fixed + h->body_len + GN_WIRE_TAG)
		return -EBADMSG;
	/* Only data has a body to code, and a coded body has bytes. */
	if (h->entropy && ((h->type != GN_PKT_DATA && h->type != GN_PKT_WHOLE) ||
			   !h->body_len))
		return -EBADMSG;
	if (h->phase > GN_PHASE_INDEX || h->seal & ~GN_SEAL_CLEAR || !h->pn)
		return -EBADMSG;
	return 0;
}

void gn_wire_data_put(const struct gn_wire_data *d, u8 *b)
{
	bool whole = b[3] == GN_PKT_WHOLE;

	b += GN_WIRE_HDR_LEN;
	gn_put_le64(d->chunk_off, b);
	gn_put_le32(d->chunk_len, b + 8);
	if (whole) {
		gn_put_le32(d->aux, b + 12);
		return;
	}
	gn_put_le32(d->first, b + 12);
	gn_put_le32(d->count, b + 16);
	gn_put_le32(d->aux, b + 20);
	gn_put_le32(d->pkt, b + 24);
	gn_put_le32(d->npkts, b + 28);
}

int gn_wire_data_get(const u8 *b, const struct gn_wire_hdr *h,
		     struct gn_wire_data *d)
{
	const struct gn_codec_ops *c = gn_codec_find(h->codec);
	bool whole = h->type == GN_PKT_WHOLE;

	if (!c || (h->type != GN_PKT_DATA && !whole))
		return -EBADMSG;
	b += GN_WIRE_HDR_LEN;
	d->chunk_off = gn_get_le64(b);
	d->chunk_len = gn_get_le32(b + 8);
	if (whole) {
		d->first = 0;
		d->count = c->units(d->chunk_len);
		d->aux = gn_get_le32(b + 12);
		d->pkt = 0;
		d->npkts = 1;
	} else {
		d->first = gn_get_le32(b + 12);
		d->count = gn_get_le32(b + 16);
		d->aux = gn_get_le32(b + 20);
		d->pkt = gn_get_le32(b + 24);
		d->npkts = gn_get_le32(b + 28);
	}
	if (!d->chunk_len || !d->count || !d->npkts || d->pkt >= d->npkts ||
	    d->chunk_off + d->chunk_len < d->chunk_off ||
	    (u64)d->first + d->count > c->units(d->chunk_len))
		return -EBADMSG;
	return 0;
}

void gn_wire_hello_put(const struct gn_wire_hello *o, u8 *b)
{
	b += GN_WIRE_HDR_LEN;
	gn_put_le16(o->world, b);
	b[2] = o->flags;
	b[3] = 0;
	gn_put_le32(0, b + 4);
	gn_put_le32(o->chunk, b + 8);
	gn_put_le16(o->mtu, b + 12);
	gn_put_le16(0, b + 14);
	gn_put_le64(o->instance, b + 16);
	gn_put_le64(o->echo, b + 24);
}

int gn_wire_hello_get(const u8 *b, const struct gn_wire_hdr *h,
		      struct gn_wire_hello *o)
{
	b += GN_WIRE_HDR_LEN;
	o->world = gn_get_le16(b);
	o->flags = b[2];
	o->chunk = gn_get_le32(b + 8);
	o->mtu = gn_get_le16(b + 12);
	o->instance = gn_get_le64(b + 16);
	o->echo = gn_get_le64(b + 24);
	if (h->type != GN_PKT_HELLO || h->body_len != GN_WIRE_HELLO_BODY ||
	    !o->world || !o->instance || b[3] || gn_get_le32(b + 4) ||
	    gn_get_le16(b + 14) ||
	    o->flags & ~(GN_HELLO_REPLY | GN_HELLO_INSECURE | GN_HELLO_ANSWER))
		return -EBADMSG;
	return 0;
}

void gn_wire_ack_put(unsigned int entries, u8 *b)
{
	gn_put_le16((u16)entries, b + GN_WIRE_HDR_LEN);
	gn_put_le16(0, b + GN_WIRE_HDR_LEN + 2);
}

int gn_wire_ack_get(const u8 *b, const struct gn_wire_hdr *h,
		    unsigned int *entries)
{
	*entries = gn_get_le16(b + GN_WIRE_HDR_LEN);
	if (h->type != GN_PKT_ACK || !*entries ||
	    gn_get_le16(b + GN_WIRE_HDR_LEN + 2) ||
	    (size_t)*entries * GN_WIRE_ACK_ENTRY > h->body_len)
		return -EBADMSG;
	return 0;
}

void gn_wire_ack_entry_put(const struct gn_wire_ack *a, u8 *b)
{
	gn_put_le32(a->tensor, b);
	gn_put_le32(a->step, b + 4);
	gn_put_le64(a->chunk_off, b + 8);
	gn_put_le32(a->npkts, b + 16);
	gn_put_le32(a->base, b + 20);
	b[24] = a->phase;
	b[25] = 0;
	gn_put_le16(a->bytes, b + 26);
}

int gn_wire_ack_entry_get(const u8 *b, size_t left, struct gn_wire_ack *a)
{
	if (left < GN_WIRE_ACK_ENTRY)
		return -EBADMSG;
	a->tensor = gn_get_le32(b);
	a->step = gn_get_le32(b + 4);
	a->chunk_off = gn_get_le64(b + 8);
	a->npkts = gn_get_le32(b + 16);
	a->base = gn_get_le32(b + 20);
	a->phase = b[24];
	a->bytes = gn_get_le16(b + 26);
	if (b[25] || a->phase > GN_PHASE_INDEX || !a->npkts ||
	    (size_t)GN_WIRE_ACK_ENTRY + a->bytes > left)
		return -EBADMSG;
	/* "All of it", or a bitmap window that starts inside the message. */
	if (a->base == a->npkts)
		return a->bytes ? -EBADMSG : GN_WIRE_ACK_ENTRY;
	if (a->base % 8 || a->base > a->npkts || !a->bytes ||
	    (u64)a->base + (u64)a->bytes * 8 > (u64)a->npkts + 7)
		return -EBADMSG;
	return GN_WIRE_ACK_ENTRY + a->bytes;
}

void gn_wire_ctrl_put(const struct gn_wire_ctrl *c, u8 *b)
{
	unsigned int i;

	b += GN_WIRE_HDR_LEN;
	gn_put_le32(c->seq, b);
	b[4] = c->kind;
	b[5] = c->flags;
	gn_put_le16(0, b + 6);
	gn_put_le64(c->value, b + 8);
	gn_put_le32(c->extra, b + 16);
	for (i = 0; i < GN_WIRE_PARAM_WORDS; i++)
		gn_put_le32(c->params[i], b + 20 + 4 * i);
}

int gn_wire_ctrl_get(const u8 *b, const struct gn_wire_hdr *h,
		     struct gn_wire_ctrl *c)
{
	u32 any = 0;
	unsigned int i;

	b += GN_WIRE_HDR_LEN;
	c->seq = gn_get_le32(b);
	c->kind = b[4];
	c->flags = b[5];
	c->value = gn_get_le64(b + 8);
	c->extra = gn_get_le32(b + 16);
	for (i = 0; i < GN_WIRE_PARAM_WORDS; i++) {
		c->params[i] = gn_get_le32(b + 20 + 4 * i);
		any |= c->params[i];
	}
	if (h->type != GN_PKT_CTRL || h->body_len || !c->seq ||
	    gn_get_le16(b + 6) ||
	    (c->kind != GN_CTRL_TENSOR && c->kind != GN_CTRL_ABORT) ||
	    (c->kind == GN_CTRL_ABORT && any) ||
	    (c->kind == GN_CTRL_TENSOR && c->extra >> 16))
		return -EBADMSG;
	return 0;
}

void gn_wire_ctrl_ack_put(const struct gn_wire_ctrl_ack *a, u8 *b)
{
	gn_put_le32(a->seq, b + GN_WIRE_HDR_LEN);
}

int gn_wire_ctrl_ack_get(const u8 *b, const struct gn_wire_hdr *h,
			 struct gn_wire_ctrl_ack *a)
{
	a->seq = gn_get_le32(b + GN_WIRE_HDR_LEN);
	if (h->type != GN_PKT_CTRL_ACK || h->body_len || !a->seq)
		return -EBADMSG;
	return 0;
}

void gn_wire_ping_put(const struct gn_wire_ping *p, u8 *b)
{
	gn_put_le64(p->stamp, b + GN_WIRE_HDR_LEN);
}

int gn_wire_ping_get(const u8 *b, const struct gn_wire_hdr *h,
		     struct gn_wire_ping *p)
{
	p->stamp = gn_get_le64(b + GN_WIRE_HDR_LEN);
	if ((h->type != GN_PKT_PING && h->type != GN_PKT_PONG) || h->body_len)
		return -EBADMSG;
	return 0;
}
