// SPDX-License-Identifier: MIT
/*
 * app_port.c - an application that brought DPDK up itself hands gradnet
 * one queue of its port (GN_DPDK_QUEUE), for memif_allreduce.sh: it runs
 * its own EAL with a net_memif port of two queue pairs (memif joins queue
 * q of one side to queue q of the other), configured and started by it,
 * and gives queue 1 to a gradnet context. Checks, as TAP-free exit codes
 * with a message on stderr:
 *
 *  - a queue the port lacks is -EINVAL naming the queue count, and a
 *    second context on the taken queue is -EBUSY;
 *  - two tensors (3LC and dense), three steps: every result bit-identical
 *    to tests/job.h's single-process reference;
 *  - after gn_ctx_close() the port still runs for the application: rank 0
 *    sends FRAMES frames on queue 0, rank 1 receives them all and
 *    answers on queue 0 too.
 *
 * usage: gn-app-port RANK MEMIF_SOCKET CPU FILE_PREFIX
 * (GN_PEERS and GN_DPDK_PEERS come from the environment; the key is
 * tests/job.h's.)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "job.h"

#define FRAMES 64
#define APP_ETHERTYPE 0x88b5		/* IEEE local experimental */

static int fail(const char *what, int r)
{
	fprintf(stderr, "gn-app-port: %s: %d (%s) %s\n", what, r,
		strerror(r < 0 ? -r : r), gn_last_errmsg());
	return 1;
}

/* The application's port: two queue pairs, started. */
static int app_port(struct rte_mempool **mp)
{
	struct rte_eth_conf conf = { 0 };
	int q, r;

	*mp = rte_pktmbuf_pool_create("app", 8191, 256, 0,
				      RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	if (!*mp)
		return -ENOMEM;
	r = rte_eth_dev_configure(0, 2, 2, &conf);
	for (q = 0; !r && q < 2; q++) {
		r = rte_eth_rx_queue_setup(0, (uint16_t)q, 1024, SOCKET_ID_ANY, NULL, *mp);
		if (!r)
			r = rte_eth_tx_queue_setup(0, (uint16_t)q, 1024, SOCKET_ID_ANY, NULL);
	}
	return r ? r : rte_eth_dev_start(0);
}

static int open_ctx(int rank, const char *queue, struct gn_ctx **ctx)
{
	/* The key in the options: the library clears GN_KEY once read. */
	GN_OPTS(gn_ctx_opts, o, .rank = rank, .world_size = 2,
		.flags = GN_CTX_RANK, .timeout_ms = 20000, .key = job_key,
		.key_len = sizeof(job_key));

	setenv("GN_TRANSPORT", "dpdk", 1);
	setenv("GN_DPDK_QUEUE", queue, 1);
	return gn_ctx_open(&o, ctx);
}

/* A queue the application's port lacks. */
static int misuse(int rank)
{
	struct gn_ctx *c2;
	int r = open_ctx(rank, "5", &c2);

	if (r != -EINVAL || !strstr(gn_last_errmsg(), "has 2 rx and 2 tx queues configured, GN_DPDK_QUEUE is 5"))
		return fail("queue 5 of a port of 2", r);
	return 0;
}

static int job(int rank, struct gn_ctx *ctx)
{
	static const struct job_spec s = {
		.world = 2, .steps = 3, .ntensors = 2,
		.elems = { 1000003, 5 },
		.codec = { GN_CODEC_3LC, GN_CODEC_NONE },
	};
	uint64_t hash[JOB_MAX_STEPS];
	struct gn_ctx *c2;
	int k, step, r;

	for (k = 0; k < s.ntensors; k++) {
		GN_OPTS(gn_tensor_opts, t, .id = 100 + (uint32_t)k,
			.elems = s.elems[k], .codec = s.codec[k]);

		r = gn_tensor_register(ctx, &t);
		if (r)
			return fail("register", r);
	}
	r = open_ctx(rank, "1", &c2);
	if (r != -EBUSY || !strstr(gn_last_errmsg(), "queue 1 is in use"))
		return fail("a second context on queue 1", r);
	for (k = 0; k < s.ntensors; k++) {
		float *x = malloc(s.elems[k] * sizeof(float));
		float *ref = malloc(s.elems[k] * sizeof(float));

		job_reference(&s, k, NULL, hash, ref);
		for (step = 0; step < s.steps; step++) {
			job_grad(x, s.elems[k], rank, k, step);
			r = gn_allreduce(ctx, 100 + (uint32_t)k, x);
			if (r)
				return fail("allreduce", r);
			if (job_fnv(x, s.elems[k]) != hash[step]) {
				fprintf(stderr, "gn-app-port: tensor %d step %d differs from the reference\n",
					k, step);
				return 1;
			}
		}
		free(x);
		free(ref);
	}
	return 0;
}

/* One frame of @type on queue 0, retried for up to 10 s. */
static int send_frame(struct rte_mempool *mp, unsigned int type, int seq)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
	uint8_t *f;
	int tries;

	if (!m)
		return fail("mbuf", -ENOMEM);
	f = (uint8_t *)rte_pktmbuf_append(m, 60);
	if (!f) {
		rte_pktmbuf_free(m);
		return fail("mbuf room", -ENOSPC);
	}
	memset(f, 0, 60);
	memset(f, 0xff, 12);
	f[12] = (uint8_t)(type >> 8);
	f[13] = (uint8_t)type;
	f[14] = (uint8_t)seq;
	/* A memif server sends into buffers its client's rx gives. */
	for (tries = 0; tries < 10000; tries++) {
		if (rte_eth_tx_burst(0, 0, &m, 1))
			return 0;
		usleep(1000);
	}
	rte_pktmbuf_free(m);
	return fail("tx on queue 0", -EAGAIN);
}

/* Frames of @type seen on queue 0 until @want, for up to 15 s. */
static int recv_frames(unsigned int type, int want)
{
	struct rte_mbuf *m[32];
	int got = 0, tries, n, i;

	for (tries = 0; got < want && tries < 15000; tries++) {
		n = rte_eth_rx_burst(0, 0, m, 32);
		for (i = 0; i < n; i++) {
			const uint8_t *f = rte_pktmbuf_mtod(m[i], const uint8_t *);

			got += f[12] == (uint8_t)(type >> 8) && f[13] == (uint8_t)type;
			rte_pktmbuf_free(m[i]);
		}
		if (!n)
			usleep(1000);
	}
	return got;
}

/*
 * After gradnet: the application's queue 0 still carries its frames.
 * Rank 0 sends FRAMES, rank 1 answers once it has them all, and stays
 * until rank 0 is gone (memif loses what is in its rings when a side
 * leaves).
 */
static int app_traffic(int rank, struct rte_mempool *mp)
{
	struct rte_eth_link link;
	int i, got, tries;

	if (rank == 0) {
		for (i = 0; i < FRAMES; i++)
			if (send_frame(mp, APP_ETHERTYPE, i))
				return 1;
		if (recv_frames(APP_ETHERTYPE + 1, 1) != 1) {
			fprintf(stderr, "gn-app-port: rank 0 got no answer on queue 0 after gradnet closed\n");
			return 1;
		}
		return 0;
	}
	got = recv_frames(APP_ETHERTYPE, FRAMES);
	if (got != FRAMES) {
		fprintf(stderr, "gn-app-port: rank 1 got %d of %d frames on queue 0 after gradnet closed\n",
			got, FRAMES);
		return 1;
	}
	if (send_frame(mp, APP_ETHERTYPE + 1, 0))
		return 1;
	for (tries = 0; tries < 15000; tries++) {
		if (!rte_eth_link_get_nowait(0, &link) &&
		    link.link_status == RTE_ETH_LINK_DOWN)
			break;
		usleep(1000);
	}
	return 0;
}

int main(int argc, char **argv)
{
	char vdev[512], lcores[32], prefix[128];
	char *eal[] = { "gn-app-port", "--no-huge", "-m", "1024", "--no-pci",
			"--no-telemetry", "-l", lcores, prefix, vdev,
			"--log-level=*:warning", NULL };
	struct rte_mempool *mp;
	struct gn_ctx *ctx;
	int rank, r;

	if (argc != 5) {
		fprintf(stderr, "usage: gn-app-port RANK MEMIF_SOCKET CPU FILE_PREFIX\n");
		return 2;
	}
	rank = atoi(argv[1]);
	snprintf(lcores, sizeof(lcores), "%s", argv[3]);
	snprintf(prefix, sizeof(prefix), "--file-prefix=%s", argv[4]);
	snprintf(vdev, sizeof(vdev),
		 "--vdev=net_memif0,role=%s,socket=%s,socket-abstract=no,mac=02:00:00:00:00:0%d",
		 rank ? "client" : "server", argv[2], rank + 1);
	if (rte_eal_init((int)(sizeof(eal) / sizeof(eal[0])) - 1, eal) < 0)
		return fail("rte_eal_init", -rte_errno);
	r = app_port(&mp);
	if (r)
		return fail("the application's port", r);
	if (rank == 0 && misuse(rank))
		return 1;
	r = open_ctx(rank, "1", &ctx);
	if (r)
		return fail("gn_ctx_open on queue 1", r);
	r = job(rank, ctx);
	gn_ctx_close(ctx);
	if (!r)
		r = app_traffic(rank, mp);
	rte_eth_dev_stop(0);
	rte_eal_cleanup();
	return r;
}
