/* SPDX-License-Identifier: MIT */
/*
 * gradnet/wire.h - gradnet's packet format, shared by the UDP, DPDK and
 * kernel data paths. Freestanding, like the codec.
 *
 * Every packet is a UDP payload: a 32-byte common header, a type-specific
 * part, the body, and a 16-byte tag. All integers are little-endian. The
 * first four bytes (magic, version, type) keep their meaning in every
 * protocol version, so a peer can always tell which version another
 * speaks.
 *
 * common header (struct gn_wire_hdr), 32 bytes:
 *	 0  u16 magic 0x4e47		 2  u8 version		 3  u8 type
 *	 4  u16 src rank		 6  u16 dst rank (0xffff: every rank)
 *	 8  u32 job id			12  u32 tensor id
 *	16  u32 step			20  u16 body length	22  u8 phase
 *	23  u8 codec: bits 0-6 the codec id; bit 7 (DATA and WHOLE only,
 *	    GN_WIRE_ENTROPY) the body is the slice coded by the tensor's
 *	    entropy stage, a zstd frame (<gradnet/codec.h>)
 *	24  u8 seal flags (GN_SEAL_*)	25  u56 pn: the sender's packet number
 * The seal flags and the packet number belong to the seal (below): the
 * builders of each type leave them to gn_wire_seal().
 *
 * Sealing. Every packet is sealed with ChaCha20-Poly1305 (RFC 8439) under
 * a 32-byte key of its sender, with the 96-bit nonce 0^32 || le64(pn), as
 * WireGuard lays out its counter nonce. The header and the type's fixed
 * part are associated data: authenticated and in the clear, so the tc
 * program, gradnet-stat and the DPDK receive filter still read them. The
 * body (the values of DATA and WHOLE, the entries of an ACK) is
 * encrypted, unless GN_SEAL_CLEAR is set: then the whole packet is
 * associated data and only authenticated. The tag follows the body.
 * A job without a key sends GN_SEAL_CLEAR and 16 zero bytes of tag.
 *
 * Packet numbers count from 1 in every context (a rank's run) and never
 * repeat within it: each packet a context seals takes a number no other
 * packet of that context has, and a retransmission sends the very same
 * bytes again (same number, same ciphertext). Keys (lib/wire/seal.c):
 * HELLOs are sealed under a key of the job key, the sender's rank and its
 * instance; every other packet under its sender's key of the run's
 * session key. So no key ever seals two different packets with one nonce.
 *
 * DATA (struct gn_wire_data), 32 more bytes: one slice of one chunk of a
 * tensor, decodable alone, in any order:
 *	32  u64 chunk_off: the chunk's first element in the tensor
 *	40  u32 chunk_len: elements in the chunk
 *	44  u32 first: the slice's first unit in the chunk (the codec's
 *	    units: groups of five values for 3LC, values for the others)
 *	48  u32 count: units in this packet; the slices of a message cover
 *	    the chunk's units exactly once
 *	52  u32 aux: the codec's word for the chunk (3LC: its scale M as
 *	    float32 bits; dense: 0)
 *	56  u32 pkt: index of the packet in its message (all packets of one
 *	    tensor, step and phase from one sender to one receiver)
 *	60  u32 npkts: packets in the message
 *	64  body: the codec's slice (lib/codec: its stream format in
 *	    <gradnet/codec.h>)
 * So a DATA packet costs 64 header bytes and the 16-byte tag. The codec
 * byte of the header names the compressor; its parameters are the
 * tensor's, which its descriptor (CTRL TENSOR) carried.
 *
 * WHOLE, 16 more bytes: a chunk whose message is this one packet (most
 * small tensors, and the members of a bucket), so that what DATA spells
 * out is implied: first 0, count all of the chunk's units, pkt 0, npkts 1:
 *	32  u64 chunk_off	40  u32 chunk_len	44  u32 aux
 *	48  body, as DATA's
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
#define GN_WIRE_VERSION 4	/* 4: ChaCha20-Poly1305, packet numbers, the
				   codec seam's parts; 3: WHOLE packets */
#define GN_WIRE_TAG 16
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

/*
 * Phases of an allreduce: contributions to a shard's owner, then the
 * owner's result to every rank; for a codec with an index round (CLT-k),
 * first a chunk's index set from its leader to every rank: DATA packets
 * whose aux is the set's size and whose slices cover entries of the set
 * (<gradnet/codec.h>, "The index round").
 */
enum gn_phase {
	GN_PHASE_REDUCE = 0,
	GN_PHASE_GATHER = 1,
	GN_PHASE_INDEX = 2,
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
	uint8_t seal;			/* GN_SEAL_* */
	uint64_t pn;			/* 1 .. GN_WIRE_PN_MAX */
};

#define GN_WIRE_HDR_LEN 32
#define GN_SEAL_CLEAR 0x01		/* the body is authenticated, not encrypted */
#define GN_WIRE_PN_MAX ((1ull << 56) - 1)

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
 * A HELLO is sealed under its sender's HELLO key (gn_wire_hello_key(): the
 * job key, the sender's rank and this instance, which a receiver reads
 * before it opens the packet); every other packet under its sender's key
 * of the session key (gn_wire_session_key(), gn_wire_sender_key()), which
 * binds the job key and every rank's instance, so nothing recorded in one
 * run is valid in another.
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
 * the body and the tag exactly, that the version is ours, the seal flags
 * known and the packet number not 0. It authenticates nothing:
 * gn_wire_open() does.
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
 * unknown, an ABORT carries parameters or a TENSOR an extra with bits 16-31 set.
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
 * Keys and sealing (lib/wire/seal.c). The cryptography is the
 * environment's (gn_deps.h): ChaCha20-Poly1305 for the packets and keyed
 * BLAKE2s-256 (RFC 7693) as the key derivation function, from libcrypto in
 * a process and from the kernel's lib/crypto in the module. Nothing here
 * needs an FPU section: the libraries use SIMD on their own terms.
 */
#define GN_MAC_KEY_LEN 16		/* a job key */
#define GN_SEAL_KEY_LEN 32		/* a ChaCha20-Poly1305 key */
#define GN_WIRE_INFO_MAX 4096		/* what a session key binds, at most */

/**
 * gn_wire_hello_key() - the key a rank's HELLOs are sealed under
 * @out: GN_SEAL_KEY_LEN bytes
 * @job_key: GN_MAC_KEY_LEN bytes, the job's key
 * @rank: the sender
 * @instance: the sender's instance (random per context, never 0)
 *
 * BLAKE2s-256 keyed with the job key, of "gradnet hello" || le16(rank) ||
 * le64(instance): a key per context, so its packet numbers, which start
 * at 1 in every context, never meet under one key.
 *
 * Return: 0, or -errno from the environment's KDF.
 */
GN_EXPORT int gn_wire_hello_key(uint8_t *out, const uint8_t *job_key,
				uint16_t rank, uint64_t instance);

/**
 * gn_wire_session_key() - a run's session key
 * @out: GN_SEAL_KEY_LEN bytes
 * @job_key: GN_MAC_KEY_LEN bytes, the job's key
 * @info: what the session is bound to: the job id, world size, protocol
 *	version and every rank's fresh instance, in an order all ranks share
 * @len: bytes of @info, at most GN_WIRE_INFO_MAX
 *
 * BLAKE2s-256 keyed with the job key, of "gradnet session" || @info.
 * It keys only gn_wire_sender_key().
 *
 * Return: 0; -EINVAL if @len is over GN_WIRE_INFO_MAX (@out untouched),
 * or -errno from the environment's KDF.
 */
GN_EXPORT int gn_wire_session_key(uint8_t *out, const uint8_t *job_key,
				  const uint8_t *info, size_t len);

/**
 * gn_wire_sender_key() - the key a rank seals its packets under in a run
 * @out: GN_SEAL_KEY_LEN bytes
 * @session: GN_SEAL_KEY_LEN bytes, from gn_wire_session_key()
 * @rank: the sender
 *
 * BLAKE2s-256 keyed with the session key, of "gradnet sender" ||
 * le16(rank): one key per sender, so each key's nonces are one sender's
 * packet numbers.
 *
 * Return: 0, or -errno from the environment's KDF.
 */
GN_EXPORT int gn_wire_sender_key(uint8_t *out, const uint8_t *session,
				 uint16_t rank);

/**
 * gn_wire_seal() - number, seal and tag a packet in place
 * @key: GN_SEAL_KEY_LEN bytes, or NULL for a job without a key
 * @pkt: the packet, its header and fixed part written, with GN_WIRE_TAG
 *	bytes of room after @len
 * @len: bytes before the tag, at most GN_WIRE_MAX_PKT - GN_WIRE_TAG, and
 *	at least the header and the fixed part of its type
 * @pn: its packet number, 1 .. GN_WIRE_PN_MAX
 * @flags: GN_SEAL_*; without a key GN_SEAL_CLEAR is set whatever it says
 *
 * Writes @flags and @pn into the header, encrypts the body in place
 * (unless GN_SEAL_CLEAR) and appends the tag; without a key the tag is 16
 * zero bytes.
 *
 * Return: the packet length with the tag; 0 if @len or @pn is out of
 * range or the environment's AEAD failed, and then the packet is not to
 * be sent.
 */
GN_EXPORT size_t gn_wire_seal(const uint8_t *key, uint8_t *pkt, size_t len,
			      uint64_t pn, uint8_t flags);

/**
 * gn_wire_open() - check a received packet's tag and decrypt its body
 * @key: GN_SEAL_KEY_LEN bytes, or NULL for a job without a key (the
 *	packet must say GN_SEAL_CLEAR and carry a zero tag)
 * @pkt: the packet, its header checked by gn_wire_hdr_get(); writable
 * @len: its length, tag included
 *
 * The body is decrypted in place only if the tag is right; a packet that
 * fails leaves its body undefined, and is to be dropped.
 *
 * Return: 0, or -EBADMSG if the tag is wrong (or the packet too short to
 * have one).
 */
GN_EXPORT int gn_wire_open(const uint8_t *key, uint8_t *pkt, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* GRADNET_WIRE_H */
