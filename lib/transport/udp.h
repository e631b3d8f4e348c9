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

/*
 * The same in two steps, for a rank that publishes its address before it
 * knows the others': bind @self (port 0: any free port) and say where in
 * @bound; later, every rank's addresses. Until then no packet is a peer's.
 */
int gn_udp_bind(struct gn_transport *tp, const struct gn_addr *self,
		u32 max_pkt, struct gn_addr *bound);
int gn_udp_peers(void *state, const struct gn_addr *addrs, int world);

#endif /* GN_TRANSPORT_UDP_H */
