// SPDX-License-Identifier: MIT
/*
 * dpdk_open.c - gn_ctx_open()'s glue to the DPDK transport (dpdk/): the
 * EAL, the static neighbour list and the GN_DPDK_* variables, gathered
 * into the transport's configuration. The transport itself, and every
 * DPDK header, stay in dpdk/.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "gn_dpdk.h"
#include "open.h"

/* "aa:bb:cc:dd:ee:ff" of @len characters into @mac. */
static int parse_mac(const char *s, size_t len, u8 mac[6])
{
	size_t i;

	if (len != 17)
		return -EINVAL;
	for (i = 0; i < 6; i++) {
		int hi = gn_open_hexval(s[3 * i]);
		int lo = gn_open_hexval(s[3 * i + 1]);

		if (hi < 0 || lo < 0 || (i < 5 && s[3 * i + 2] != ':'))
			return -EINVAL;
		mac[i] = (u8)(hi << 4 | lo);
	}
	return 0;
}

/*
 * The static neighbour list: GN_DPDK_PEERS, one MAC per rank in rank
 * order, "-" (or nothing) for this rank, whose MAC is its port's, "arp"
 * for a rank to resolve. Without GN_DPDK_PEERS every peer is resolved by
 * ARP when the transport opens.
 */
static int dpdk_peers(const struct open_args *a, struct gn_dpdk_peer *dp)
{
	const char *p = getenv("GN_DPDK_PEERS");
	int n = 0, i;

	for (i = 0; i < a->conf.world; i++) {
		const struct sockaddr_in *in = (const void *)&a->addrs[i].sa;

		if (in->sin_family != AF_INET)
			return gn_open_fail(-EAFNOSUPPORT,
					    "the DPDK transport speaks IPv4 only: GN_PEERS entry %d is %s",
					    i, a->names[i]);
		dp[i].ip = in->sin_addr.s_addr;
		dp[i].port = in->sin_port;
	}
	if (!p || !*p)
		return 0;
	while (*p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (n >= a->conf.world)
			return gn_open_fail(-EINVAL, "GN_DPDK_PEERS lists more than world size %d MAC addresses",
					    a->conf.world);
		if (!(n == a->conf.rank && (!len || (len == 1 && *p == '-'))) &&
		    !(len == 3 && !strncmp(p, "arp", 3)) &&
		    parse_mac(p, len, dp[n].mac))
			return gn_open_fail(-EINVAL, "GN_DPDK_PEERS entry %d \"%.*s\" is not a MAC address (aa:bb:cc:dd:ee:ff) nor \"arp\"",
					    n, (int)len, p);
		n++;
		p += len + (end != NULL);
	}
	if (n != a->conf.world)
		return gn_open_fail(-EINVAL, "GN_DPDK_PEERS lists %d MAC addresses, world size is %d",
				    n, a->conf.world);
	return 0;
}

/* The DPDK transport's receive rounds, a part per queue, on the workers. */
static void dpdk_run(void *arg, void (*fn)(void *, u32), void *fn_arg,
		     u32 parts)
{
	gn_env_run(arg, fn, fn_arg, parts);
}

/* The EAL (once per process) and the DPDK transport on its port. */
int gn_open_dpdk(struct open_args *a, struct gn_drv *d, u32 max_pkt)
{
	static const char *const port_vars[] = { "GN_DPDK_PORT", NULL };
	static const char *const mbuf_vars[] = { "GN_DPDK_MBUFS", NULL };
	static const char *const poll_vars[] = { "GN_DPDK_POLL_US", NULL };
	static const char *const spin_vars[] = { "GN_DPDK_SPIN_US", NULL };
	static const char *const queue_vars[] = { "GN_DPDK_QUEUE", NULL };
	static const char *const lcore_vars[] = { "GN_DPDK_LCORE", NULL };
	static const char *const rtc_vars[] = { "GN_DPDK_RTC", NULL };
	static const char *const queues_vars[] = { "GN_DPDK_QUEUES", NULL };
	struct gn_dpdk_conf c = { .world = a->conf.world, .rank = a->conf.rank,
				  .mtu = a->conf.mtu, .max_pkt = max_pkt };
	long port = 0, mbufs = 0, poll_us = 1000, queue = -1, lcore = -1;
	long rtc = -1, queues = 0;
	long spin_us = GN_DPDK_SPIN_US_DEFAULT;
	char msg[GN_ERRMSG_LEN] = "";
	struct gn_dpdk_peer *dp;
	int r;

	if ((r = gn_open_env_int(port_vars, 0, 65535, &port)) < 0 ||
	    (r = gn_open_env_int(mbuf_vars, 1023, 1 << 24, &mbufs)) < 0 ||
	    (r = gn_open_env_int(poll_vars, 0, 1000000, &poll_us)) < 0 ||
	    (r = gn_open_env_int(spin_vars, 0, 1000000, &spin_us)) < 0 ||
	    (r = gn_open_env_int(queue_vars, 0, 65535, &queue)) < 0 ||
	    (r = gn_open_env_int(lcore_vars, 0, 65535, &lcore)) < 0 ||
	    (r = gn_open_env_int(rtc_vars, 0, 1, &rtc)) < 0 ||
	    (r = gn_open_env_int(queues_vars, 1, 1024, &queues)) < 0)
		return r;
	/* Run to completion, unless the poll loop has a core of its own. */
	d->rtc = rtc < 0 ? lcore < 0 : rtc;
	if (a->dpdk_port >= 0)
		port = a->dpdk_port;
	if (a->dpdk_queue >= 0)
		queue = a->dpdk_queue;
	dp = calloc((size_t)a->conf.world, sizeof(*dp));
	if (!dp)
		return gn_open_fail(-ENOMEM, "out of memory");
	/* First, so a library without DPDK says so before anything else. */
	r = gn_dpdk_eal_init(a->dpdk_eal ? a->dpdk_eal : getenv("GN_DPDK_EAL"),
			     msg, sizeof(msg));
	if (r) {
		r = gn_open_fail(r, "DPDK: %s", msg);
		goto out;
	}
	r = dpdk_peers(a, dp);
	if (r)
		goto out;
	c.port_id = (u16)port;
	c.peers = dp;
	c.mbufs = (u32)mbufs;
	c.poll_us = (u32)poll_us;
	c.spin_us = (u32)spin_us;
	c.arp_timeout_ms = (u32)(a->conf.timeout_ns / 1000000);
	c.stats_path = getenv("GN_DPDK_STATS");
	/* GN_DPDK_QUEUE: the application's port, this queue gradnet's. */
	c.queue = (int)queue;
	c.lcore = (int)lcore;
	/* On a port of its own: a queue pair per codec worker where RSS. */
	c.queues = (u32)queues;
	c.workers = a->workers;
	c.run = dpdk_run;
	c.run_arg = (void *)&d->env.env;
	r = gn_dpdk_open(&d->tp, &c, msg, sizeof(msg));
	if (r)
		r = gn_open_fail(r, "DPDK: %s", msg);
	else
		d->dpdk = d->tp.state;
out:
	free(dp);
	return r;
}

