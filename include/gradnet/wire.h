/* SPDX-License-Identifier: MIT */
/*
 * gradnet/wire.h - gradnet's packet format, shared by the UDP, DPDK and
 * kernel data paths. Freestanding, like the codec.
 *
 * Every packet is a UDP payload: a 24-byte common header, a type-specific
 * part, the body, and an 8-byte MAC tag over everything before it. All
 * integers are little-endian. The first four bytes (magic, version, type)
 * keep their meaning in every protocol version, so a peer can always tell
 * which version another speaks.
 *
 * common header (struct gn_wire_hdr), 24 bytes:
 *	 0  u16 magic 0x4e47		 2  u8 version		 3  u8 type
 *	 4  u16 src rank		 6  u16 dst rank (0xffff: every rank)
 *	 8  u32 job id			12  u32 tensor id
 *	16  u32 step			20  u16 body length	22  u8 phase
 *	23  u8 codec: bits 0-6 the codec id; bit 7 (DATA and WHOLE only,
 *	    GN_WIRE_ENTROPY) the body is the slice coded by the tensor's
 *	    entropy stage, a zstd frame (<gradnet/codec.h>)
 *
 * DATA (struct gn_wire_data), 32 more bytes: one slice of one chunk of a
 * tensor, decodable alone, in any order:
 *	24  u64 chunk_off: the chunk's first element in the tensor
 *	32  u32 chunk_len: elements in the chunk
 *	36  u32 first: the slice's first unit in the chunk (the codec's
 *	    units: groups of five values for 3LC, values for the others)
 *	40  u32 count: units in this packet; the slices of a message cover
 *	    the chunk's units exactly once
 *	44  u32 aux: the codec's word for the chunk (3LC: its scale M as
 *	    float32 bits; dense: 0)
 *	48  u32 pkt: index of the packet in its message (all packets of one
 *	    tensor, step and phase from one sender to one receiver)
 *	52  u32 npkts: packets in the message
 *	56  body: the codec's slice (lib/codec: its stream format in
 *	    <gradnet/codec.h>)
 * So a DATA packet costs 56 header bytes and the 8-byte tag. The codec
 * byte of the header names the compressor; its parameters are the
 * tensor's, which its descriptor (CTRL TENSOR) carried.
 *
 * WHOLE, 16 more bytes: a chunk whose message is this one packet (most
 * small tensors, and the members of a bucket), so that what DATA spells
 * out is implied: first 0, count all of the chunk's units, pkt 0, npkts 1:
 *	24  u64 chunk_off	32  u32 chunk_len	36  u32 aux
 *	40  body, as DATA's
 * 16 bytes less per packet, which counts where most messages are one
 * packet (a bucket of small tensors).
 */
#ifndef GRADNET_WIRE_H
#define GRADNET_WIRE_H

#include <stddef.h>
#include <stdint.h>

#ifndef GN_EXPORT
#define GN_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define GN_WIRE_MAGIC 0x4e47
#define GN_WIRE_VERSION 4
#define GN_WIRE_TAG 8
#define GN_RANK_ALL 0xffff
#define GN_WIRE_MAX_PKT 9000	/* largest UDP payload gradnet sends */
/*
 * IPv4 + UDP header bytes, for fitting packets into an MTU. The core sizes
 * packets as mtu - GN_WIRE_IPUDP; a rank on IPv6 gives it an MTU smaller
 * by the difference, so its datagrams fit too (every rank of a job uses
 * one family, and the handshake checks that the MTUs agree).
 */
#define GN_WIRE_IPUDP 28
#define GN_WIRE_IP6UDP 48

enum gn_pkt_type {
	GN_PKT_HELLO = 1,	/* handshake: who I am, what I run */
	GN_PKT_DATA = 2,	/* a slice of a tensor shard */
	GN_PKT_ACK = 3,		/* which packets of a message arrived */
	GN_PKT_CTRL = 4,	/* reliable control: tensor descriptor, abort */
	GN_PKT_CTRL_ACK = 5,	/* acknowledges a CTRL packet */
	GN_PKT_PING = 6,	/* probe: liveness, lost tails */
	GN_PKT_PONG = 7,	/* answer to a probe */
	GN_PKT_WHOLE = 8,	/* a whole chunk in one packet, short header */
};

/* Phases of an allreduce: contributions to a shard's owner, then the
 * owner's result to every rank. */
enum gn_phase {
	GN_PHASE_REDUCE = 0,
	GN_PHASE_GATHER = 1,
};

/*
 * The codec byte of the header is an enum gn_codec value of gradnet.h (the
 * registry's id, lib/codec/registry.c) in bits 0-6; a receiver refuses ids
 * it does not know. Bit 7 marks an entropy-coded body (struct
 * gn_wire_hdr.entropy). CTRL TENSOR carries the tensor's parameter block
 * of GN_WIRE_PARAM_WORDS little-endian words, whose meaning the codec
 * defines, and its entropy stage in the extra word.
 */
#define GN_WIRE_PARAM_WORDS 8
#define GN_WIRE_CODEC_ID 0x7f
#define GN_WIRE_ENTROPY 0x80

/* Decoded common header. */
struct gn_wire_hdr {
	uint16_t magic;
	uint8_t version;
	uint8_t type;
	uint16_t src;
	uint16_t dst;
	uint32_t job;
	uint32_t tensor;
	uint32_t step;
	uint16_t body_len;
	uint8_t phase;
	uint8_t codec;		/* the id: bits 0-6 of the byte */
	uint8_t entropy;	/* bit 7 of the byte: 0 or 1 */
};

#define GN_WIRE_HDR_LEN 24

/* Decoded DATA or WHOLE part (WHOLE: the implied fields filled in). */
struct gn_wire_data {
	uint64_t chunk_off;
	uint32_t chunk_len;
	uint32_t first;
	uint32_t count;
	uint32_t aux;
	uint32_t pkt;
	uint32_t npkts;
};

#define GN_WIRE_DATA_LEN 32
#define GN_WIRE_DATA_HDR (GN_WIRE_HDR_LEN + GN_WIRE_DATA_LEN)
/* Bytes of a DATA packet that are not body. */
#define GN_WIRE_DATA_OVERHEAD (GN_WIRE_DATA_HDR + GN_WIRE_TAG)
#define GN_WIRE_WHOLE_LEN 16
#define GN_WIRE_WHOLE_HDR (GN_WIRE_HDR_LEN + GN_WIRE_WHOLE_LEN)
#define GN_WIRE_WHOLE_OVERHEAD (GN_WIRE_WHOLE_HDR + GN_WIRE_TAG)

/* Where the body of a DATA or WHOLE packet of @type starts. */
static inline size_t gn_wire_body_off(uint8_t type)
{
	return type == GN_PKT_WHOLE ? GN_WIRE_WHOLE_HDR : GN_WIRE_DATA_HDR;
}

/*
 * HELLO body, 32 bytes: what peers must agree on, and the fresh random
 * values the session key is derived from (a challenge and its response).
 *	0 u16 world size	2 u8 flags (GN_HELLO_*)	3 u8 reserved (0)
 *	4 u32 reserved (0)	8 u32 chunk		12 u16 mtu
 *	14 u16 reserved (0)	16 u64 instance: random per context, never 0
 *	24 u64 echo: the receiver's instance as the sender last heard it in
 *	a HELLO, 0 if it has heard none. A HELLO whose echo is the
 *	receiver's own instance was made in this run: only such a HELLO
 *	may change the receiver's state.
 * Codecs and their parameters are the tensors' and travel in their
 * descriptors, so ranks whose job defaults differ still meet; a tensor
 * they register differently fails at its first allreduce.
 * HELLOs are authenticated with the job key; every other packet with the
 * session key, derived from the job key and every rank's instance
 * (gn_mac_session()), so nothing recorded in one run is valid in another.
 */
struct gn_wire_hello {
	uint16_t world;
	uint8_t flags;
	uint32_t chunk;
	uint16_t mtu;
	uint64_t instance;
	uint64_t echo;
};

#define GN_WIRE_HELLO_LEN 32
#define GN_HELLO_REPLY (1u << 0)	/* I have your HELLO and it matches */
#define GN_HELLO_INSECURE (1u << 1)	/* sender runs without a key */
#define GN_HELLO_ANSWER (1u << 2)	/* answers yours; not to be answered */
/*
 * A HELLO's body, after the fixed part: the 16-byte digest of the job's
 * peer list as the sender was given it (every rank's address, in rank
 * order, and the job id). Ranks whose digests differ refuse each other.
 */
#define GN_WIRE_HELLO_BODY 16

/*
 * ACK: acknowledgements of many messages to one sender in one packet. A
 * message is the packets of one chunk (tensor, step, phase, chunk_off)
 * from one sender to one receiver. The fixed part is u16 entries and a
 * u16 reserved (0); the body is the entries back to back:
 *	0 u32 tensor	4 u32 step	8 u64 chunk_off	16 u32 npkts
 *	20 u32 base: bit i of the bitmap is packet base + i; a multiple of 8
 *	24 u8 phase	25 u8 reserved (0)	26 u16 bitmap bytes
 *	28 the bitmap
 * An entry with base == npkts and no bitmap means "all of it", sent for
 * complete messages and for messages of steps that are over.
 * Data acknowledge data too, so a receiver may leave out the entry of a
 * whole message that a DATA packet it sent to the message's sender
 * implies, and a sender ends such a message on that packet: the result
 * of chunk (tensor, step, chunk_off) implies every contribution to that
 * chunk, and a contribution to (tensor, step + 1, chunk_off) implies the
 * result of (tensor, step, chunk_off). Retries of a step that is over are
 * still acknowledged at once.
 */
struct gn_wire_ack {
	uint32_t tensor;
	uint32_t step;
	uint64_t chunk_off;
	uint32_t npkts;
	uint32_t base;
	uint8_t phase;
	uint16_t bytes;
};

#define GN_WIRE_ACK_ENTRY 28
#define GN_WIRE_ACK_LEN 4

/*
 * CTRL body, 52 bytes, delivered reliably and in any order:
 *	0 u32 seq (per sender and receiver, from 1)	4 u8 kind
 *	5 u8 flags	6 u16 reserved (0)	8 u64 value	16 u32 extra
 *	20 u32 params[GN_WIRE_PARAM_WORDS]
 * GN_CTRL_TENSOR: the sender registered tensor (header) with value =
 *	elements (bits 0-39) and, for a bucket (gn_bucket_register()), a
 *	24-bit hash of its member sizes in bits 40-63 (0 for a tensor),
 *	codec (header), params its parameter block, extra its entropy
 *	stage (0: none; else bits 0-7 the coder, 1 zstd, and bits 8-15
 *	zstd's level; bits 16-31 are 0), flags = GN_TENSOR_* flags;
 *	step (header) is the registration's base: 0 for the first, and for a
 *	registration after gn_tensor_unregister() one more than the last step
 *	of the previous one (its steps are numbered from base + 1).
 * GN_CTRL_ABORT: step (header) of tensor (header) failed with errno value;
 *	extra is the rank it blames; params 0.
 */
struct gn_wire_ctrl {
	uint32_t seq;
	uint8_t kind;
	uint8_t flags;
	uint64_t value;
	uint32_t extra;
	uint32_t params[GN_WIRE_PARAM_WORDS];
};

#define GN_WIRE_CTRL_LEN 52
enum gn_ctrl_kind {
	GN_CTRL_TENSOR = 1,
	GN_CTRL_ABORT = 2,
};

/*
 * CTRL_ACK body, 4 bytes: the receiver of a CTRL packet acknowledges it.
 *	0 u32 seq: the seq of the CTRL packet it has (never 0)
 * Tensor, step, phase and codec of the header are 0.
 */
struct gn_wire_ctrl_ack {
	uint32_t seq;
};

#define GN_WIRE_CTRL_ACK_LEN 4

/*
 * PING and PONG body, 8 bytes: a probe (of liveness, or of a tail of
 * packets that may be lost) and its answer.
 *	0 u64 stamp: the prober's clock in nanoseconds; a PONG echoes the
 *	stamp of the PING it answers, so the prober measures the round trip
 *	on its own clock and the peers' clocks never meet.
 * A rank sends every acknowledgement it owes the prober before the PONG,
 * so the PONG says that whatever reached it before the PING has been
 * acknowledged: what the prober sent before it and still sees
 * unacknowledged is lost.
 * Tensor, step, phase and codec of the header are 0.
 */
struct gn_wire_ping {
	uint64_t stamp;
};

#define GN_WIRE_PING_LEN 8

/**
 * gn_wire_hdr_put() - write a common header
 * @h: fields
 * @buf: at least GN_WIRE_HDR_LEN bytes
 */
GN_EXPORT void gn_wire_hdr_put(const struct gn_wire_hdr *h, uint8_t *buf);

/**
 * gn_wire_hdr_get() - parse and check a packet's common header
 * @buf: the packet
 * @len: its length, tag included
 * @h: out
 *
 * Checks magic, that the packet holds the header, the type's fixed part,
 * the body and the tag exactly, and that the version is ours.
 *
 * Return: 0; -EBADMSG for a malformed packet; -EPROTONOSUPPORT for a
 * well-formed prefix of another version (@h->version says which).
 */
GN_EXPORT int gn_wire_hdr_get(const uint8_t *buf, size_t len,
			      struct gn_wire_hdr *h);

/**
 * gn_wire_data_put() - write the DATA or WHOLE part
 * @d: fields (for WHOLE only chunk_off, chunk_len and aux are written)
 * @buf: the packet, its common header written already: its type says
 *	which part; the part starts at GN_WIRE_HDR_LEN, the body follows
 *	it at gn_wire_body_off()
 */
GN_EXPORT void gn_wire_data_put(const struct gn_wire_data *d, uint8_t *buf);
/**
 * gn_wire_data_get() - parse and check the DATA or WHOLE part
 * @buf: the packet (the part starts at GN_WIRE_HDR_LEN)
 * @h: its parsed common header
 * @d: out; for WHOLE the implied fields too
 *
 * Checks what the packet can say about itself without the tensor's
 * parameters: a registered codec, count > 0, the slice inside its chunk's
 * units, pkt < npkts. The body is the codec's to check (its check_slice),
 * with the tensor's parameters.
 *
 * Return: 0 or -EBADMSG.
 */
GN_EXPORT int gn_wire_data_get(const uint8_t *buf, const struct gn_wire_hdr *h,
			       struct gn_wire_data *d);

/**
 * gn_wire_hello_put() - write a HELLO body, reserved bytes 0
 * @o: fields
 * @buf: the packet; the body starts at GN_WIRE_HDR_LEN and takes
 *	GN_WIRE_HELLO_LEN bytes
 */
GN_EXPORT void gn_wire_hello_put(const struct gn_wire_hello *o, uint8_t *buf);
/**
 * gn_wire_hello_get() - parse and check a HELLO body
 * @buf: the packet, its common header already checked by gn_wire_hdr_get()
 * @h: that header
 * @o: out
 *
 * Return: 0; -EBADMSG if @h is not a HELLO, its body is not the
 * GN_WIRE_HELLO_BODY bytes of the peer-list digest, world is 0, the
 * reserved bytes are not 0 or a flag is unknown. Whether the values (and
 * the digest, at buf + GN_WIRE_HDR_LEN + GN_WIRE_HELLO_LEN) match ours is
 * the caller's business.
 */
GN_EXPORT int gn_wire_hello_get(const uint8_t *buf, const struct gn_wire_hdr *h,
				struct gn_wire_hello *o);
/**
 * gn_wire_ack_put() - write the ACK fixed part, reserved bytes 0
 * @entries: how many entries the body holds
 * @buf: the packet; the part starts at GN_WIRE_HDR_LEN and takes
 *	GN_WIRE_ACK_LEN bytes, the entries follow it
 */
GN_EXPORT void gn_wire_ack_put(unsigned int entries, uint8_t *buf);
/**
 * gn_wire_ack_get() - parse and check the ACK fixed part
 * @buf: the packet, its common header already checked by gn_wire_hdr_get()
 * @h: that header
 * @entries: out, how many entries follow; gn_wire_ack_entry_get() reads
 *	them one by one
 *
 * Return: 0; -EBADMSG if @h is not an ACK, there are no entries, the
 * reserved bytes are not 0 or the body cannot hold that many entries.
 */
GN_EXPORT int gn_wire_ack_get(const uint8_t *buf, const struct gn_wire_hdr *h,
			      unsigned int *entries);
/**
 * gn_wire_ack_entry_put() - write an ACK entry header
 * @a: the entry; @a->bytes of bitmap go right after it
 * @buf: GN_WIRE_ACK_ENTRY bytes
 */
GN_EXPORT void gn_wire_ack_entry_put(const struct gn_wire_ack *a, uint8_t *buf);
/**
 * gn_wire_ack_entry_get() - parse and check the next ACK entry
 * @buf: where it starts
 * @left: body bytes from @buf to the end of the body
 * @a: out; its bitmap is the @a->bytes after the entry header
 *
 * Return: bytes the entry takes, header and bitmap; -EBADMSG if it does
 * not fit or contradicts itself.
 */
GN_EXPORT int gn_wire_ack_entry_get(const uint8_t *buf, size_t left,
				    struct gn_wire_ack *a);
/**
 * gn_wire_ctrl_put() - write a CTRL body, reserved bytes 0
 * @c: fields
 * @buf: the packet; the body starts at GN_WIRE_HDR_LEN and takes
 *	GN_WIRE_CTRL_LEN bytes
 */
GN_EXPORT void gn_wire_ctrl_put(const struct gn_wire_ctrl *c, uint8_t *buf);
/**
 * gn_wire_ctrl_get() - parse and check a CTRL body
 * @buf: the packet, its common header already checked by gn_wire_hdr_get()
 * @h: that header
 * @c: out
 *
 * Return: 0; -EBADMSG if @h is not a CTRL, the packet has a body past the
 * fixed part, seq is 0, the reserved bytes are not 0, the kind is
 * unknown, an ABORT carries parameters or a TENSOR an extra.
 */
GN_EXPORT int gn_wire_ctrl_get(const uint8_t *buf, const struct gn_wire_hdr *h,
			       struct gn_wire_ctrl *c);

/**
 * gn_wire_ctrl_ack_put() - write a CTRL_ACK body
 * @a: fields
 * @buf: the packet; the body starts at GN_WIRE_HDR_LEN and takes
 *	GN_WIRE_CTRL_ACK_LEN bytes
 */
GN_EXPORT void gn_wire_ctrl_ack_put(const struct gn_wire_ctrl_ack *a,
				    uint8_t *buf);
/**
 * gn_wire_ctrl_ack_get() - parse and check a CTRL_ACK body
 * @buf: the packet, its common header already checked by gn_wire_hdr_get()
 * @h: that header
 * @a: out
 *
 * Return: 0; -EBADMSG if @h is not a CTRL_ACK, the packet has a body past
 * the fixed part, or seq is 0 (no CTRL packet has it).
 */
GN_EXPORT int gn_wire_ctrl_ack_get(const uint8_t *buf,
				   const struct gn_wire_hdr *h,
				   struct gn_wire_ctrl_ack *a);
/**
 * gn_wire_ping_put() - write a PING or PONG body
 * @p: fields
 * @buf: the packet; the body starts at GN_WIRE_HDR_LEN and takes
 *	GN_WIRE_PING_LEN bytes
 *
 * The header's type says which of the two it is.
 */
GN_EXPORT void gn_wire_ping_put(const struct gn_wire_ping *p, uint8_t *buf);
/**
 * gn_wire_ping_get() - parse and check a PING or PONG body
 * @buf: the packet, its common header already checked by gn_wire_hdr_get()
 * @h: that header
 * @p: out
 *
 * Return: 0; -EBADMSG if @h is neither a PING nor a PONG or the packet has
 * a body past the fixed part.
 */
GN_EXPORT int gn_wire_ping_get(const uint8_t *buf, const struct gn_wire_hdr *h,
			       struct gn_wire_ping *p);

/**
 * gn_wire_fixed_len() - bytes of a packet type's fixed part after the
 * common header
 * @type: enum gn_pkt_type
 *
 * Return: the length, or -1 for an unknown type.
 */
GN_EXPORT int gn_wire_fixed_len(unsigned int type);

/*
 * The MAC. A job key of 16 bytes is expanded once into a struct gn_mac;
 * gn_mac_tag() then authenticates a packet: an NH universal hash (two
 * passes with offset keys, as in UMAC) compresses the packet to 128 bits,
 * and SipHash-2-4 keyed separately turns hash and length into the 64-bit
 * tag. See lib/wire/mac.c for why this and not SipHash over the packet.
 *
 * FPU rule. gn_mac_tag(), gn_mac_seal() and gn_mac_check() run the NH
 * pass with AVX2 when the key's isa is set (gn_mac_init() sets it where
 * the CPU has AVX2) and open no FPU section of their own. In the kernel,
 * call them with such a key only between kernel_fpu_begin() and
 * kernel_fpu_end(), one packet per section (kmod/mac_fpu.c does this), never
 * a batch: preemption is off inside. gn_mac_init(), gn_mac_session() and
 * gn_siphash() are integer-only and run anywhere.
 */
#define GN_MAC_KEY_LEN 16
#define GN_MAC_NH_WORDS (GN_WIRE_MAX_PKT / 4 + 8)

struct gn_mac {
	uint64_t prf[2];			/* SipHash key of the tag */
	uint64_t kdf[2][2];			/* SipHash keys of gn_mac_session() */
	uint32_t nh[GN_MAC_NH_WORDS + 4];	/* NH key, +4 for the offset pass */
	int isa;				/* 1: AVX2 NH pass, 0: scalar */
};

/**
 * gn_mac_init() - expand a job key
 * @m: out
 * @key: GN_MAC_KEY_LEN bytes
 */
GN_EXPORT void gn_mac_init(struct gn_mac *m, const uint8_t *key);

/**
 * gn_mac_session() - a run's session MAC from the job's
 * @s: out: the session key, expanded as gn_mac_init() does
 * @job: the job key, expanded
 * @info: what the session is bound to: the job id, world size, protocol
 *	version and every rank's fresh instance, in an order all ranks share
 * @len: bytes of @info, at most GN_MAC_INFO_MAX
 *
 * A KDF with SipHash-2-4 as the PRF under two keys K0, K1 expanded from
 * the job key for this use only: the session key is
 * le64(SipHash_K0(info)) || le64(SipHash_K1(info)).
 *
 * Return: 0, or -EINVAL if @len is over GN_MAC_INFO_MAX (@s untouched).
 */
#define GN_MAC_INFO_MAX 4096
GN_EXPORT int gn_mac_session(struct gn_mac *s, const struct gn_mac *job,
			     const uint8_t *info, size_t len);

/**
 * gn_mac_tag() - the tag of @len bytes
 * @m: expanded key
 * @buf: bytes to authenticate
 * @len: their length, at most GN_WIRE_MAX_PKT
 *
 * Return: the 64-bit tag (the packet carries it little-endian); 0 if @len
 * is over GN_WIRE_MAX_PKT, which no packet that gn_mac_check() takes is.
 */
GN_EXPORT uint64_t gn_mac_tag(const struct gn_mac *m, const uint8_t *buf,
			      size_t len);

/**
 * gn_mac_seal() - append the tag to a packet
 * @m: expanded key, or NULL for an insecure job (tag 0)
 * @pkt: packet, with GN_WIRE_TAG bytes of room after @len
 * @len: bytes before the tag, at most GN_WIRE_MAX_PKT - GN_WIRE_TAG, the
 *	longest packet gn_mac_check() takes
 *
 * Return: the packet length with the tag; 0 if @len is over the limit, and
 * then nothing is written.
 */
GN_EXPORT size_t gn_mac_seal(const struct gn_mac *m, uint8_t *pkt, size_t len);

/**
 * gn_mac_check() - verify a received packet's tag in constant time
 * @m: expanded key, or NULL for an insecure job (tag must be 0)
 * @pkt: the packet
 * @len: its length, tag included, >= GN_WIRE_TAG
 *
 * Return: 0 or -EBADMSG.
 */
GN_EXPORT int gn_mac_check(const struct gn_mac *m, const uint8_t *pkt,
			   size_t len);

/**
 * gn_siphash() - SipHash-2-4 with a 128-bit key
 * @k: key words, little-endian halves
 * @buf: input
 * @len: bytes
 *
 * Return: the 64-bit hash.
 */
GN_EXPORT uint64_t gn_siphash(const uint64_t k[2], const void *buf,
			      size_t len);

#ifdef __cplusplus
}
#endif

#endif /* GRADNET_WIRE_H */
