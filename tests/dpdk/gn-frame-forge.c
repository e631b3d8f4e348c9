// SPDX-License-Identifier: MIT
/*
 * gn-frame-forge.c - send malformed Ethernet frames at a DPDK rank from a
 * packet socket, for mixed_bridge.sh: each kind is one reason of the DPDK
 * receive filter (dpdk/filter.h), and the rank's GN_DPDK_STATS file must
 * count exactly the frames sent of it. Every field but the broken one is
 * right (checksums included), so each frame fails one check only.
 *
 *   ip_header  IPv4 total length past the end of the frame (truncated)
 *   udp_len    UDP length past the end of the IP datagram
 *   ip_csum    IPv4 header checksum off by one
 *   udp_csum   UDP checksum off by one
 *   fragment   the first fragment of a datagram (MF set)
 *   not_udp    IP protocol 6
 *   dst_port   another UDP port of the rank's address
 *   ethertype  an IPv6 ether type on an IPv4 frame
 *
 * With --arp it sends well-formed ARP instead, each claiming that the
 * --as address is at --from-mac (the forger's own, so that frames a
 * DPDK rank is fooled into sending reach it):
 *
 *   announce   gratuitous ARP (the claimed address as target)
 *   reply      a reply to the rank's address that no request asked for
 *   request    a request for the rank's address
 *
 * all sent to the rank alone: the kernels on the segment would believe
 * them too, and that is not what the test is about.
 *
 * usage: gn-frame-forge --dev DEV --to-mac MAC --to ADDR:PORT
 *                       --as ADDR:PORT [--count N] [--gap-us US]
 *                       [--arp --from-mac MAC]
 * Prints one JSON line: frames sent per kind.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PAYLOAD 64
#define FRAME (14 + 20 + 8 + PAYLOAD)

enum kind {
	K_IP_HEADER, K_UDP_LEN, K_IP_CSUM, K_UDP_CSUM, K_FRAGMENT, K_NOT_UDP,
	K_DST_PORT, K_ETHERTYPE, K_COUNT
};

static const char *const names[K_COUNT] = {
	"ip_header", "udp_len", "ip_csum", "udp_csum", "fragment", "not_udp",
	"dst_port", "ethertype",
};

enum arp_kind { A_ANNOUNCE, A_REPLY, A_REQUEST, A_COUNT };

static const char *const arp_names[A_COUNT] = { "announce", "reply", "request" };

struct target {
	uint8_t mac[6], src_mac[6];
	struct in_addr to, as;
	uint16_t to_port, as_port;	/* host order */
};

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint16_t csum(uint32_t sum, const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* A frame of kind @k into @f; its length. */
static size_t build(const struct target *t, enum kind k, uint8_t *f)
{
	uint8_t *ip = f + 14, *udp = ip + 20;
	uint16_t ulen = 8 + PAYLOAD, c;
	uint32_t sum;
	int i;

	memcpy(f, t->mac, 6);
	memcpy(f + 6, t->src_mac, 6);
	put16(f + 12, k == K_ETHERTYPE ? 0x86dd : 0x0800);
	memset(ip, 0, 20);
	ip[0] = 0x45;
	put16(ip + 2, (uint16_t)(20 + ulen + (k == K_IP_HEADER ? 100 : 0)));
	put16(ip + 6, k == K_FRAGMENT ? 0x2000 : 0x4000);
	ip[8] = 64;
	ip[9] = k == K_NOT_UDP ? 6 : 17;
	memcpy(ip + 12, &t->as, 4);
	memcpy(ip + 16, &t->to, 4);
	c = csum(0, ip, 20);
	put16(ip + 10, (uint16_t)(k == K_IP_CSUM ? c + 1 : c));
	put16(udp, t->as_port);
	put16(udp + 2, (uint16_t)(k == K_DST_PORT ? t->to_port + 1 : t->to_port));
	put16(udp + 4, (uint16_t)(k == K_UDP_LEN ? ulen + 8 : ulen));
	put16(udp + 6, 0);
	for (i = 0; i < PAYLOAD; i++)
		udp[8 + i] = (uint8_t)(i * 37 + k);
	sum = (uint32_t)(ip[12] << 8 | ip[13]) + (uint32_t)(ip[14] << 8 | ip[15]) +
	      (uint32_t)(ip[16] << 8 | ip[17]) + (uint32_t)(ip[18] << 8 | ip[19]) +
	      17 + ulen;
	c = csum(sum, udp, ulen);
	if (!c)
		c = 0xffff;
	put16(udp + 6, (uint16_t)(k == K_UDP_CSUM ? c + 1 : c));
	return FRAME;
}

#define ARP_FRAME 60		/* the shortest Ethernet frame, zero padded */

/* ARP of kind @k claiming that t->as is at t->src_mac into @f; its length. */
static size_t build_arp(const struct target *t, enum arp_kind k, uint8_t *f)
{
	uint8_t *a = f + 14;

	memset(f, 0, ARP_FRAME);
	memcpy(f, t->mac, 6);
	memcpy(f + 6, t->src_mac, 6);
	put16(f + 12, 0x0806);
	put16(a, 1);				/* Ethernet */
	put16(a + 2, 0x0800);			/* IPv4 */
	a[4] = 6;
	a[5] = 4;
	put16(a + 6, k == A_REQUEST ? 1 : 2);
	memcpy(a + 8, t->src_mac, 6);
	memcpy(a + 14, &t->as, 4);
	if (k == A_REPLY)
		memcpy(a + 18, t->mac, 6);
	memcpy(a + 24, k == A_ANNOUNCE ? &t->as : &t->to, 4);
	return ARP_FRAME;
}

static int parse_mac(const char *s, uint8_t *mac)
{
	unsigned int b[6];
	int i;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4],
		   &b[5]) != 6)
		return -1;
	for (i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return 0;
}

static int parse_addr(const char *s, struct in_addr *a, uint16_t *port)
{
	char host[64];
	const char *colon = strrchr(s, ':');

	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	*port = (uint16_t)atoi(colon + 1);
	return inet_pton(AF_INET, host, a) == 1 && *port ? 0 : -1;
}

static void usage(void)
{
	fprintf(stderr, "usage: gn-frame-forge --dev DEV --to-mac MAC --to ADDR:PORT --as ADDR:PORT [--count N] [--gap-us US] [--arp --from-mac MAC]\n");
	exit(2);
}

struct opts {
	const char *dev;
	int count, gap_us;
	bool arp;
};

static void parse(int argc, char **argv, struct target *t, struct opts *o)
{
	static const struct option opts[] = {
		{ "dev", required_argument, NULL, 'd' },
		{ "to-mac", required_argument, NULL, 'm' },
		{ "to", required_argument, NULL, 't' },
		{ "as", required_argument, NULL, 'a' },
		{ "count", required_argument, NULL, 'c' },
		{ "gap-us", required_argument, NULL, 'g' },
		{ "arp", no_argument, NULL, 'r' },
		{ "from-mac", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	int c, have = 0;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'd': o->dev = optarg; have |= 1; break;
		case 'm': if (parse_mac(optarg, t->mac)) usage(); have |= 2; break;
		case 't': if (parse_addr(optarg, &t->to, &t->to_port)) usage(); have |= 4; break;
		case 'a': if (parse_addr(optarg, &t->as, &t->as_port)) usage(); have |= 8; break;
		case 'c': o->count = atoi(optarg); break;
		case 'g': o->gap_us = atoi(optarg); break;
		case 'r': o->arp = true; break;
		case 'f': if (parse_mac(optarg, t->src_mac)) usage(); have |= 16; break;
		default: usage();
		}
	}
	if ((have & 15) != 15 || o->count < 1 || o->gap_us < 0 ||
	    (o->arp && !(have & 16)))
		usage();
}

int main(int argc, char **argv)
{
	struct sockaddr_ll ll = { .sll_family = AF_PACKET, .sll_halen = 6 };
	struct opts o = { .count = 10, .gap_us = 200 };
	int sent[K_COUNT] = { 0 }, fd, i, k, kinds;
	/* Our own MAC as the source: the bridge learns nothing odd. */
	struct target t = { .src_mac = { 0x02, 0x66, 0, 0, 0, 0x01 } };
	const char *const *kind_names;
	uint8_t frame[FRAME];
	const char *dev;

	parse(argc, argv, &t, &o);
	dev = o.dev;
	kinds = o.arp ? A_COUNT : K_COUNT;
	kind_names = o.arp ? arp_names : names;
	fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (fd < 0) {
		perror("gn-frame-forge: socket(AF_PACKET)");
		return 1;
	}
	ll.sll_ifindex = (int)if_nametoindex(dev);
	if (!ll.sll_ifindex) {
		fprintf(stderr, "gn-frame-forge: no interface %s\n", dev);
		return 1;
	}
	for (i = 0; i < o.count; i++)
		for (k = 0; k < kinds; k++) {
			size_t len = o.arp ? build_arp(&t, (enum arp_kind)k, frame) :
					     build(&t, (enum kind)k, frame);

			memcpy(ll.sll_addr, frame, 6);
			if (sendto(fd, frame, len, 0, (struct sockaddr *)&ll,
				   sizeof(ll)) == (ssize_t)len)
				sent[k]++;
			usleep((useconds_t)o.gap_us);
		}
	close(fd);
	printf("{");
	for (k = 0; k < kinds; k++)
		printf("%s\"%s\": %d", k ? ", " : "", kind_names[k], sent[k]);
	printf("}\n");
	return 0;
}
