// SPDX-License-Identifier: MIT
/*
 * absent.c - the DPDK transport in a libgradnet built without libdpdk:
 * asking for it fails with a message that says how to get it.
 */
#include <errno.h>
#include <stdio.h>

#include "gn_dpdk.h"

static int absent(char *msg, size_t len)
{
	snprintf(msg, len, "this libgradnet was built without DPDK (libdpdk-dev missing, or meson -Ddpdk=disabled): GN_TRANSPORT=dpdk is not available");
	return -EOPNOTSUPP;
}

int gn_dpdk_eal_init(const char *args, char *msg, size_t len)
{
	(void)args;
	return absent(msg, len);
}

int gn_dpdk_open(struct gn_transport *tp, const struct gn_dpdk_conf *conf,
		 char *msg, size_t len)
{
	(void)tp;
	(void)conf;
	return absent(msg, len);
}

/* Never called: no context of this library has a DPDK transport. */
int gn_dpdk_poller_start(void *tp, void *(*fn)(void *), void *arg)
{
	(void)tp;
	(void)fn;
	(void)arg;
	return -EOPNOTSUPP;
}

void gn_dpdk_poller_join(void *tp)
{
	(void)tp;
}
