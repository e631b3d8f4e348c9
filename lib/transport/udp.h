/* SPDX-License-Identifier: MIT */
/*
 * udp.h - the UDP-socket transport, gradnet's default data path.
 */
#ifndef GN_TRANSPORT_UDP_H
#define GN_TRANSPORT_UDP_H

#include <sys/socket.h>

#include "transport.h"

struct gn_addr {
	struct sockaddr_storage sa;
	socklen_t len;
};

/*
 * Bind @addrs[@rank] and send to the others; a packet from @addrs[j] is
 * rank j's, one from anywhere else is GN_PEER_NONE.
 * Return: 0 or -errno (the socket could not be made or bound).
 */
int gn_udp_open(struct gn_transport *tp, const struct gn_addr *addrs,
		int world, int rank, u32 max_pkt);

#endif /* GN_TRANSPORT_UDP_H */
