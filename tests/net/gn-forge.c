// SPDX-License-Identifier: MIT
/*
 * gn-forge.c - send forged gradnet packets to one rank of a live job, for
 * the network test of the receive path's checks (allreduce_net.sh). A raw
 * IPv4 socket (IP_HDRINCL) puts any source address and port on a datagram,
 * so the tool can pose as a peer of the job. Every kind of forgery is to
 * be dropped, and counted, for exactly one reason (enum gn_drop):
 *
 *   source     from this host's own address; from a peer's address but
 *              another port; from a peer, with another rank as sender
 *   mac        as a peer: a flipped or random tag, a flipped body byte
 *   job        as a peer, sealed with the job's key: another job id
 *   replay     as a peer, sealed: DATA of a step that is over (--step),
 *              built as the peer would have built it
 *   malformed  as a peer: empty, truncated, garbage; sealed, but with a
 *              wrong destination rank, an unknown type or a bad DATA part
 *   version    as a peer: another protocol version
 *
 * Two more kinds are sent only when LIST names them, since what they are
 * dropped for depends on when they come:
 *
 *   gso        from this host, unauthenticated, through a plain UDP socket:
 *              one UDP GSO super-datagram of 128 segments (64 on kernels
 *              before 6.9, which refuse more), each a 'source' drop
 *   npkts      as a peer, sealed: DATA claiming npkts 0xffffffff or 2^31
 *              (first or last packet), for steps --step .. --step +
 *              --steps - 1 in turn; 'malformed' in an open step, else
 *              'replay'
 *
 * usage: gn-forge --to ADDR:PORT --to-rank R --as ADDR:PORT --as-rank R
 *                 --world W --job J --key HEX --elems N [--chunk C]
 *                 [--mtu M] [--codec 3lc|none] [--tensor ID (100)] [--step S]
 *                 [--steps N] [--count N] [--kinds LIST] [--gap-us U]
 *                 [--seed S] [--session FILE]
 * --session: seal with --as-rank's key of the run, derived from the job key
 * and what FILE holds (the victim's GN_TEST_SESSION_FILE), as an insider
 * would; without it, with a key of the job key alone, which no rank of a
 * run takes. The packet numbers are low ones, which the peer used long
 * ago, as a recording's are: the victim's window does not move.
 * Sends --count packets of each kind in LIST (default: all but gso and
 * npkts), interleaved, and prints one JSON line with the packets sent per
 * kind (for gso, super-datagrams, and their segments as gso_segs).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <gradnet/codec.h>
#include <gradnet/wire.h>
#include "testlib.h"	/* gn_test_session_key() */

#define IPUDP_LEN (sizeof(struct iphdr) + sizeof(struct udphdr))
#define MAX_TEMPLATES 512
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#define GSO_SEGS 128		/* Linux >= 6.9; 64 before */
#define GSO_SEG_LEN 64

enum kind {
	K_SOURCE, K_MAC, K_JOB, K_REPLAY, K_MALFORMED, K_VERSION,
	K_GSO, K_NPKTS, K_COUNT
};

static const char *const kind_names[K_COUNT] = {
	"source", "mac", "job", "replay", "malformed", "version", "gso", "npkts",
};

/* Sent unless --kinds says otherwise. */
#define DEFAULT_KINDS ((1u << K_GSO) - 1)

/* A template is kept unsealed (@len: bytes before the tag); a packet sealed. */
struct pkt {
	size_t len;
	uint8_t buf[GN_WIRE_MAX_PKT];
};

struct forge {
	struct sockaddr_in to, as, self;
	int to_rank, as_rank, world;
	uint32_t job, tensor, step, steps, chunk;
	uint64_t elems;
	unsigned int max_pkt;
	uint8_t codec;
	uint8_t key[GN_SEAL_KEY_LEN];	/* --as-rank's, what it seals under */
	uint64_t rng;
	int fd;
	int gso_fd, gso_segs;
	/* DATA packets of step @step as rank @as_rank sends them. */
	struct pkt *tpl;
	int ntpl;
};

static void die(const char *msg)
{
	fprintf(stderr, "gn-forge: %s\n", msg);
	exit(1);
}

static uint64_t next_rand(struct forge *f)
{
	f->rng ^= f->rng << 13;
	f->rng ^= f->rng >> 7;
	f->rng ^= f->rng << 17;
	return f->rng;
}

/* ---- packets -------------------------------------------------------------- */

static uint64_t shard_lo(const struct forge *f, int j)
{
	return (uint64_t)((unsigned __int128)f->elems * (unsigned int)j /
			  (unsigned int)f->world);
}

/* A gradient-like chunk: mostly small values, a few large ones. */
static void fake_gradient(struct forge *f, float *x, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		int32_t r = (int32_t)(next_rand(f) >> 40) - (1 << 23);

		x[i] = (float)r * (i % 97 ? 1e-9f : 1e-6f);
	}
}

static struct pkt *new_tpl(struct forge *f)
{
	if (f->ntpl == MAX_TEMPLATES)
		die("too many packets in one message");
	return &f->tpl[f->ntpl++];
}

static void put_data(struct forge *f, struct pkt *p, uint8_t phase, int dst,
		     const struct gn_wire_data *d, const uint8_t *body,
		     uint16_t blen)
{
	struct gn_wire_hdr h = {
		.magic = GN_WIRE_MAGIC, .version = GN_WIRE_VERSION,
		.type = GN_PKT_DATA, .src = (uint16_t)f->as_rank,
		.dst = (uint16_t)dst, .job = f->job, .tensor = f->tensor,
		.step = f->step, .body_len = blen, .phase = phase,
		.codec = f->codec, .pn = 1,	/* seal() numbers it again */
	};

	gn_wire_hdr_put(&h, p->buf);
	gn_wire_data_put(d, p->buf);
	memcpy(p->buf + GN_WIRE_DATA_HDR, body, blen);
	p->len = GN_WIRE_DATA_HDR + blen;
}

/* Seal @p (unsealed, a template's copy) as the peer would, number @i. */
static void seal(struct forge *f, struct pkt *p, unsigned long i)
{
	p->len = gn_wire_seal(f->key, p->buf, p->len, 1 + i % 64, 0);
	if (!p->len)
		die("cannot seal a packet");
}

/*
 * The packets of the first chunk of shard @shard, as the library cuts
 * them: 3LC groups zero-run encoded greedily to the MTU, or dense values.
 */
static void build_msg(struct forge *f, uint8_t phase, int dst, int shard)
{
	uint64_t off = shard_lo(f, shard), end = shard_lo(f, shard + 1);
	uint32_t len = end - off < f->chunk ? (uint32_t)(end - off) : f->chunk;
	uint32_t cap = f->max_pkt - GN_WIRE_DATA_OVERHEAD, i, first = 0;
	uint32_t g = (uint32_t)gn_tlc_groups(len);
	float *x = malloc((size_t)len * sizeof(float));
	float *e = calloc(len, sizeof(float));
	uint8_t *q = malloc(g), body[GN_WIRE_MAX_PKT];
	/* One packet until the count is known, so each parses on its own. */
	struct gn_wire_data d = { .chunk_off = off, .chunk_len = len, .npkts = 1 };
	int at = f->ntpl;
	float m;

	if (!len)
		die("a shard is empty: more elements, please");
	if (!x || !e || !q)
		die("out of memory");
	fake_gradient(f, x, len);
	if (f->codec == GN_CODEC_NONE) {
		uint32_t per = cap / 4;

		for (; first < len; first += per) {
			d.first = first;
			d.count = len - first < per ? len - first : per;
			put_data(f, new_tpl(f), phase, dst, &d,
				 (const uint8_t *)(x + first), (uint16_t)(d.count * 4));
		}
	} else {
		if (gn_tlc_quantize_chunks(x, e, e, len, len, 1.0f, q, &m))
			die("cannot quantize");
		memcpy(&d.aux, &m, sizeof(m));
		while (first < g) {
			size_t used;
			long blen = gn_zre_encode(q + first, g - first, body, cap,
						  &used);

			if (blen <= 0)
				die("cannot encode");
			d.first = first;
			d.count = (uint32_t)used;
			put_data(f, new_tpl(f), phase, dst, &d, body, (uint16_t)blen);
			first += (uint32_t)used;
		}
	}
	/* Now the packet count is known: write it. */
	for (i = (uint32_t)at; i < (uint32_t)f->ntpl; i++) {
		struct pkt *p = &f->tpl[i];
		struct gn_wire_hdr h;

		if (gn_wire_hdr_get(p->buf, p->len + GN_WIRE_TAG, &h) ||
		    gn_wire_data_get(p->buf, &h, &d))
			die("built a packet the library would not parse");
		d.pkt = i - (uint32_t)at;
		d.npkts = (uint32_t)f->ntpl - (uint32_t)at;
		gn_wire_data_put(&d, p->buf);
	}
	free(x);
	free(e);
	free(q);
}

/* Rewrite an unsealed packet's header with @edit applied. */
static void edit_hdr(struct pkt *p,
		     void (*edit)(struct gn_wire_hdr *h, uint32_t arg),
		     uint32_t arg)
{
	struct gn_wire_hdr h;

	if (gn_wire_hdr_get(p->buf, p->len + GN_WIRE_TAG, &h))
		die("template does not parse");
	edit(&h, arg);
	gn_wire_hdr_put(&h, p->buf);
}

static void set_src(struct gn_wire_hdr *h, uint32_t v)
{
	h->src = (uint16_t)v;
}

static void set_dst(struct gn_wire_hdr *h, uint32_t v)
{
	h->dst = (uint16_t)v;
}

static void set_job(struct gn_wire_hdr *h, uint32_t v)
{
	h->job = v;
}

static void set_version(struct gn_wire_hdr *h, uint32_t v)
{
	h->version = (uint8_t)v;
}

static void set_step(struct gn_wire_hdr *h, uint32_t v)
{
	h->step = v;
}

/* An unsealed DATA packet that claims @npkts packets, @pkt among them. */
static void set_npkts(struct pkt *p, uint32_t npkts, uint32_t pkt)
{
	struct gn_wire_hdr h;
	struct gn_wire_data d;

	if (gn_wire_hdr_get(p->buf, p->len + GN_WIRE_TAG, &h) ||
	    gn_wire_data_get(p->buf, &h, &d))
		die("template does not parse");
	d.npkts = npkts;
	d.pkt = pkt;
	gn_wire_data_put(&d, p->buf);
}

/* ---- raw IPv4 ----------------------------------------------------------- */

static uint32_t sum16(uint32_t sum, const void *buf, size_t len)
{
	const uint8_t *b = buf;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)b[i] << 8 | b[i + 1];
	if (len & 1)
		sum += (uint32_t)b[len - 1] << 8;
	return sum;
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* One UDP datagram from @from to f->to, @len payload bytes. */
static int send_raw(struct forge *f, const struct sockaddr_in *from,
		    const uint8_t *payload, size_t len)
{
	uint8_t dgram[IPUDP_LEN + GN_WIRE_MAX_PKT];
	struct iphdr *ip = (struct iphdr *)dgram;
	struct udphdr *udp = (struct udphdr *)(dgram + sizeof(*ip));
	uint16_t ulen = (uint16_t)(sizeof(*udp) + len);
	uint8_t pseudo[12];
	uint16_t check;
	uint32_t sum;

	memset(dgram, 0, IPUDP_LEN);
	ip->version = 4;
	ip->ihl = sizeof(*ip) / 4;
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->tot_len = htons((uint16_t)(IPUDP_LEN + len));
	ip->id = htons((uint16_t)next_rand(f));
	ip->frag_off = htons(IP_DF);
	ip->saddr = from->sin_addr.s_addr;
	ip->daddr = f->to.sin_addr.s_addr;
	udp->source = from->sin_port;
	udp->dest = f->to.sin_port;
	udp->len = htons(ulen);
	memcpy(dgram + IPUDP_LEN, payload, len);
	memcpy(pseudo, &ip->saddr, 4);
	memcpy(pseudo + 4, &ip->daddr, 4);
	pseudo[8] = 0;
	pseudo[9] = IPPROTO_UDP;
	pseudo[10] = (uint8_t)(ulen >> 8);
	pseudo[11] = (uint8_t)ulen;
	sum = sum16(0, pseudo, sizeof(pseudo));
	sum = sum16(sum, udp, ulen);
	check = fold(sum);
	udp->check = htons(check ? check : 0xffff);
	if (sendto(f->fd, dgram, IPUDP_LEN + len, 0,
		   (const struct sockaddr *)&f->to, sizeof(f->to)) < 0) {
		perror("gn-forge: sendto");
		return -1;
	}
	return 0;
}

/*
 * One UDP GSO super-datagram from this host to f->to over a plain socket:
 * f->gso_segs segments of GSO_SEG_LEN bytes, the starts of templates.
 */
static int send_gso(struct forge *f)
{
	uint8_t buf[GSO_SEGS * GSO_SEG_LEN];
	int i, seg = GSO_SEG_LEN;

	if (f->gso_fd < 0) {
		f->gso_fd = socket(AF_INET, SOCK_DGRAM, 0);
		if (f->gso_fd < 0 ||
		    setsockopt(f->gso_fd, IPPROTO_UDP, UDP_SEGMENT, &seg,
			       sizeof(seg))) {
			perror("gn-forge: UDP_SEGMENT");
			return -1;
		}
		f->gso_segs = GSO_SEGS;
	}
	for (i = 0; i < f->gso_segs; i++)
		memcpy(buf + i * GSO_SEG_LEN, f->tpl[i % f->ntpl].buf, GSO_SEG_LEN);
	while (sendto(f->gso_fd, buf, (size_t)f->gso_segs * GSO_SEG_LEN, 0,
		      (const struct sockaddr *)&f->to, sizeof(f->to)) < 0) {
		/* Kernels before 6.9 take at most 64 segments. */
		if (errno != EINVAL || f->gso_segs == GSO_SEGS / 2) {
			perror("gn-forge: GSO sendto");
			return -1;
		}
		f->gso_segs = GSO_SEGS / 2;
	}
	return 0;
}

/* ---- the forgeries ------------------------------------------------------- */

/* A rank of the job other than @not. */
static int other_rank(int not)
{
	return not ? 0 : 1;
}

/*
 * Packet @i of kind @k: fill @p and the address it comes from. Edits of
 * what the tag covers come before the seal; what breaks the seal itself
 * (the tag, a sealed byte, the length) after it.
 */
static void forge_one(struct forge *f, enum kind k, unsigned long i,
		      struct pkt *p, struct sockaddr_in *from)
{
	const struct pkt *t = &f->tpl[i % (unsigned long)f->ntpl];
	size_t j;

	*p = *t;
	*from = f->as;
	switch (k) {
	case K_SOURCE:
		if (i % 3 == 0)
			*from = f->self;
		else if (i % 3 == 1)
			from->sin_port = htons((uint16_t)(ntohs(f->as.sin_port) + 1));
		else
			edit_hdr(p, set_src, (uint32_t)other_rank(f->as_rank));
		break;
	case K_JOB:
		edit_hdr(p, set_job, f->job ^ (uint32_t)(1 + next_rand(f) % 0xfffffffe));
		break;
	case K_MALFORMED:
		if (i % 6 == 3)
			edit_hdr(p, set_dst, (uint32_t)other_rank(f->to_rank));
		else if (i % 6 == 5)
			/* count = 0, sealed: caught only after the tag. */
			memset(p->buf + GN_WIRE_HDR_LEN + 16, 0, 4);
		break;
	case K_NPKTS:
		/* Sweep the steps, each sweep with the next of four claims. */
		j = i / f->steps % 4;
		edit_hdr(p, set_step, f->step + (uint32_t)(i % f->steps));
		set_npkts(p, j % 2 ? 0x80000000u : 0xffffffffu,
			  j / 2 ? (j % 2 ? 0x7fffffffu : 0xfffffffeu) : 0);
		break;
	case K_VERSION:
		if (i % 3 == 2) {
			/* A HELLO of another version, as a newer peer would send. */
			edit_hdr(p, set_version, GN_WIRE_VERSION + 1);
			p->buf[3] = GN_PKT_HELLO;
		} else {
			edit_hdr(p, set_version, i % 3 ? 0 : GN_WIRE_VERSION + 1);
		}
		break;
	default:
		break;
	}
	/* gn_wire_seal() reads the type alone: another version seals too. */
	seal(f, p, i);
	switch (k) {
	case K_MAC:
		if (i % 3 == 0)
			p->buf[p->len - 1 - next_rand(f) % GN_WIRE_TAG] ^=
				(uint8_t)(1u << next_rand(f) % 8);
		else if (i % 3 == 1)
			for (j = p->len - GN_WIRE_TAG; j < p->len; j++)
				p->buf[j] = (uint8_t)next_rand(f);
		else
			p->buf[GN_WIRE_DATA_HDR +
			       next_rand(f) % (p->len - GN_WIRE_DATA_OVERHEAD)] ^= 0x10;
		break;
	case K_MALFORMED:
		if (i % 6 == 0) {
			p->len = 0;
		} else if (i % 6 == 4) {
			/* An unknown type has no fixed part to seal by. */
			p->buf[3] = 9;
		} else if (i % 6 == 1) {
			p->len = 1 + next_rand(f) % (p->len - 1);
		} else if (i % 6 == 2) {
			p->len = 1 + next_rand(f) % f->max_pkt;
			for (j = 0; j < p->len; j++)
				p->buf[j] = (uint8_t)next_rand(f);
			if (p->buf[0] == (GN_WIRE_MAGIC & 0xff))
				p->buf[0] ^= 0x80;
		}
		break;
	default:
		break;
	}
}

/* ---- options -------------------------------------------------------------- */

static void parse_addr(const char *s, struct sockaddr_in *a)
{
	char host[64];
	const char *colon = strrchr(s, ':');

	if (!colon || (size_t)(colon - s) >= sizeof(host))
		die("addresses are IPv4 ADDR:PORT");
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_port = htons((uint16_t)atoi(colon + 1));
	if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
		die("addresses are IPv4 ADDR:PORT");
}

/*
 * An insider holds the job key and learns this run's instances, as every
 * rank does: it seals with the session key derived from them. @path is
 * where the victim rank writes what its session key binds
 * (GN_TEST_SESSION_FILE); wait for it up to 30 s.
 */
static void session_key(struct forge *f, const char *path,
			const uint8_t *key)
{
	uint8_t s[GN_SEAL_KEY_LEN];
	int r = gn_test_session_key(path, key, s);

	if (r == -ETIMEDOUT)
		die("--session: the victim wrote no session file in 30 s");
	if (r)
		die("--session: the session file is too long");
	if (gn_wire_sender_key(f->key, s, (uint16_t)f->as_rank))
		die("--session: cannot derive the sender key");
}

static void parse_key(const char *hex, uint8_t *key)
{
	unsigned int i, b;

	if (strlen(hex) != 2 * GN_MAC_KEY_LEN)
		die("--key takes 32 hex digits");
	for (i = 0; i < GN_MAC_KEY_LEN; i++) {
		if (sscanf(hex + 2 * i, "%2x", &b) != 1)
			die("--key takes 32 hex digits");
		key[i] = (uint8_t)b;
	}
}

static unsigned int parse_kinds(const char *list)
{
	unsigned int mask = 0;
	char buf[256], *tok, *save = NULL;
	int k;

	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (k = 0; k < K_COUNT; k++)
			if (!strcmp(tok, kind_names[k]))
				break;
		if (k == K_COUNT)
			die("--kinds: source, mac, job, replay, malformed, version, gso, npkts");
		mask |= 1u << k;
	}
	return mask;
}

/* The address this host sends from towards f->to. */
static void own_address(struct forge *f)
{
	socklen_t len = sizeof(f->self);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (fd < 0 || connect(fd, (const struct sockaddr *)&f->to, sizeof(f->to)) ||
	    getsockname(fd, (struct sockaddr *)&f->self, &len))
		die("no route to --to");
	f->self.sin_port = f->to.sin_port;
	close(fd);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: gn-forge --to ADDR:PORT --to-rank R --as ADDR:PORT --as-rank R\n"
		"                --world W --job J --key HEX --elems N [--chunk C]\n"
		"                [--mtu M] [--codec 3lc|none] [--tensor ID] [--step S]\n"
		"                [--steps N] [--count N] [--kinds LIST] [--gap-us U]\n"
		"                [--seed S] [--session FILE]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "to", required_argument, NULL, 't' },
		{ "to-rank", required_argument, NULL, 'T' },
		{ "as", required_argument, NULL, 'a' },
		{ "as-rank", required_argument, NULL, 'A' },
		{ "world", required_argument, NULL, 'w' },
		{ "job", required_argument, NULL, 'j' },
		{ "key", required_argument, NULL, 'k' },
		{ "elems", required_argument, NULL, 'n' },
		{ "chunk", required_argument, NULL, 'c' },
		{ "mtu", required_argument, NULL, 'm' },
		{ "codec", required_argument, NULL, 'C' },
		{ "tensor", required_argument, NULL, 'i' },
		{ "step", required_argument, NULL, 's' },
		{ "steps", required_argument, NULL, 'P' },
		{ "count", required_argument, NULL, 'N' },
		{ "kinds", required_argument, NULL, 'K' },
		{ "gap-us", required_argument, NULL, 'g' },
		{ "seed", required_argument, NULL, 'S' },
		{ "session", required_argument, NULL, 'E' },
		{ NULL, 0, NULL, 0 },
	};
	/* Tensor 100 is gradnet-rank's (tools/gradnet-rank.c), the victim's. */
	struct forge f = { .to_rank = -1, .as_rank = -1, .tensor = 100, .step = 1,
			   .steps = 1, .gso_fd = -1, .chunk = 65536, .max_pkt = 1500 - GN_WIRE_IPUDP,
			   .codec = GN_CODEC_3LC, .rng = 0x2545f4914f6cdd1dull };
	unsigned long count = 10, i, sent[K_COUNT] = { 0 };
	unsigned int kinds = DEFAULT_KINDS, gap_us = 100;
	bool have_to = false, have_as = false, have_key = false;
	const char *session = NULL;
	uint8_t key[GN_MAC_KEY_LEN];
	struct pkt *p = malloc(sizeof(*p));
	int c, k;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			parse_addr(optarg, &f.to);
			have_to = true;
			break;
		case 'T':
			f.to_rank = atoi(optarg);
			break;
		case 'a':
			parse_addr(optarg, &f.as);
			have_as = true;
			break;
		case 'A':
			f.as_rank = atoi(optarg);
			break;
		case 'w':
			f.world = atoi(optarg);
			break;
		case 'j':
			f.job = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'k':
			parse_key(optarg, key);
			have_key = true;
			break;
		case 'n':
			f.elems = strtoull(optarg, NULL, 0);
			break;
		case 'c':
			f.chunk = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'm':
			f.max_pkt = (unsigned int)atoi(optarg) - GN_WIRE_IPUDP;
			break;
		case 'C':
			if (!strcmp(optarg, "none"))
				f.codec = GN_CODEC_NONE;
			else if (strcmp(optarg, "3lc"))
				usage();
			break;
		case 'i':
			f.tensor = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 's':
			f.step = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'P':
			f.steps = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'N':
			count = strtoul(optarg, NULL, 0);
			break;
		case 'K':
			kinds = parse_kinds(optarg);
			break;
		case 'g':
			gap_us = (unsigned int)atoi(optarg);
			break;
		case 'S':
			f.rng ^= strtoull(optarg, NULL, 0) * 0x9e3779b97f4a7c15ull;
			break;
		case 'E':
			session = optarg;
			break;
		default:
			usage();
		}
	}
	if (!have_to || !have_as || !have_key || f.world < 2 ||
	    f.to_rank < 0 || f.to_rank >= f.world || f.as_rank < 0 ||
	    f.as_rank >= f.world || f.to_rank == f.as_rank || !f.elems ||
	    !f.chunk || !f.steps || f.max_pkt < 576 - GN_WIRE_IPUDP ||
	    f.max_pkt > GN_WIRE_MAX_PKT || !p)
		usage();
	memcpy(f.key, key, GN_MAC_KEY_LEN);
	memcpy(f.key + GN_MAC_KEY_LEN, key, GN_MAC_KEY_LEN);
	if (session)
		session_key(&f, session, key);
	own_address(&f);
	f.tpl = calloc(MAX_TEMPLATES, sizeof(*f.tpl));
	if (!f.tpl)
		die("out of memory");
	/* A contribution to the victim's shard and this rank's result. */
	build_msg(&f, GN_PHASE_REDUCE, f.to_rank, f.to_rank);
	build_msg(&f, GN_PHASE_GATHER, GN_RANK_ALL, f.as_rank);
	f.fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	if (f.fd < 0) {
		perror("gn-forge: raw socket (needs CAP_NET_RAW)");
		return 1;
	}
	for (i = 0; i < count; i++) {
		for (k = 0; k < K_COUNT; k++) {
			struct timespec gap = { 0, (long)gap_us * 1000 };
			struct sockaddr_in from;

			if (!(kinds & (1u << k)))
				continue;
			if (k == K_GSO) {
				if (send_gso(&f))
					goto out;
			} else {
				forge_one(&f, (enum kind)k, i, p, &from);
				if (send_raw(&f, &from, p->buf, p->len))
					goto out;
			}
			sent[k]++;
			nanosleep(&gap, NULL);
		}
	}
out:
	printf("{");
	for (k = 0; k < K_COUNT; k++)
		printf("%s\"%s\": %lu", k ? ", " : "", kind_names[k], sent[k]);
	printf(", \"gso_segs\": %lu}\n", sent[K_GSO] * (unsigned long)f.gso_segs);
	close(f.fd);
	if (f.gso_fd >= 0)
		close(f.gso_fd);
	free(f.tpl);
	free(p);
	return i == count ? 0 : 1;
}
