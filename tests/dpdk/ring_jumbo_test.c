// SPDX-License-Identifier: MIT
/*
 * ring_jumbo_test.c - frames of MTU 9000 through the DPDK transport, and
 * the gn_ctx_opts fields that let one process hold several DPDK
 * contexts (dpdk_eal, dpdk_port, dpdk_queue).
 *
 * None of the drivers here that reach the kernel takes a frame over a
 * page (net_memif and net_af_packet stop at 1518 bytes, net_af_xdp at
 * about 3.4 KiB), but net_ring takes any length. The test brings up its
 * own EAL with two net_ring ports joined crosswise (what one sends, the
 * other receives), each configured for MTU 9000, and hands gradnet queue
 * 0 of each, one context per port, in two threads of this process: a
 * two-rank job. A ring passes mbufs by pointer, so the sender's tx mbuf
 * would reach the receiver, which no NIC does; an rx callback on each
 * port plays the NIC's DMA instead: it copies each frame into an mbuf of
 * the application's pool (9 KiB, one segment) and frees the sender's,
 * counting the frames by size as it goes.
 *
 * The job runs twice: with run to completion (the default), where the
 * thread that waits for an allreduce polls its port itself, and with
 * GN_DPDK_RTC=0, where only gradnet's progress thread does; the rx
 * callback notes which threads polled.
 *
 * The harness forks each test, so each brings up an EAL of its own.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "eal_dir.h"
#include "job.h"
#include "kselftest_harness.h"

#define MTU 9000
#define FRAME_MAX (RTE_ETHER_HDR_LEN + MTU)
#define NIC_MBUFS 4095

#define POLLERS 8

/* What one port's "NIC" received, and which threads polled it. */
struct nic {
	struct rte_mempool *pool;	/* the application's rx pool */
	uint64_t frames, over_1518, segmented, dropped;
	uint32_t longest;
	pid_t poller[POLLERS];
};

static struct nic nics[2];
/*
 * Pollers are noted once both contexts are open: opening resolves the
 * peer by ARP in the opening thread, before there is a progress thread.
 */
static pthread_barrier_t opened;
static bool armed;

static int eal_up(void)
{
	static char prefix[64], lcores[32];
	static char *argv[] = { "ring_jumbo_test", "--no-huge", "-m", "1024",
				"--no-pci", "--no-shconf", "--no-telemetry",
				"-l", lcores, prefix, "--log-level=*:error",
				NULL };
	cpu_set_t set;
	int cpu = 0;

	if (!sched_getaffinity(0, sizeof(set), &set))
		while (cpu < CPU_SETSIZE - 1 && !CPU_ISSET(cpu, &set))
			cpu++;
	snprintf(lcores, sizeof(lcores), "%d", cpu);
	snprintf(prefix, sizeof(prefix), "--file-prefix=gnring%d", (int)getpid());
	return rte_eal_init((int)(sizeof(argv) / sizeof(argv[0])) - 1, argv);
}

/*
 * The NIC's DMA: each frame the ring hands port @port becomes a copy in
 * an mbuf of the port's pool, and the sender's mbuf goes back to it.
 */
static uint16_t nic_rx(uint16_t port, uint16_t queue, struct rte_mbuf **pkts,
		       uint16_t n, uint16_t max, void *arg)
{
	struct nic *nic = arg;
	pid_t me = gettid();
	uint16_t i, kept = 0;

	(void)port;
	(void)queue;
	(void)max;
	/* One poller at a time per port: gradnet hands the queue over. */
	for (i = 0; __atomic_load_n(&armed, __ATOMIC_ACQUIRE) &&
		    i < POLLERS && nic->poller[i] != me; i++)
		if (!nic->poller[i]) {
			nic->poller[i] = me;
			break;
		}
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i], *c = rte_pktmbuf_alloc(nic->pool);
		uint32_t len = rte_pktmbuf_pkt_len(m);
		char *dst = c ? rte_pktmbuf_append(c, (uint16_t)len) : NULL;
		const void *src;

		__atomic_add_fetch(&nic->frames, 1, __ATOMIC_RELAXED);
		if (m->nb_segs > 1)
			__atomic_add_fetch(&nic->segmented, 1, __ATOMIC_RELAXED);
		if (len > RTE_ETHER_MAX_LEN)
			__atomic_add_fetch(&nic->over_1518, 1, __ATOMIC_RELAXED);
		if (len > __atomic_load_n(&nic->longest, __ATOMIC_RELAXED))
			__atomic_store_n(&nic->longest, len, __ATOMIC_RELAXED);
		if (!dst || len > FRAME_MAX) {
			__atomic_add_fetch(&nic->dropped, 1, __ATOMIC_RELAXED);
			rte_pktmbuf_free(c);
			rte_pktmbuf_free(m);
			continue;
		}
		src = rte_pktmbuf_read(m, 0, len, dst);
		if (src != dst)
			memcpy(dst, src, len);
		rte_pktmbuf_free(m);
		pkts[kept++] = c;
	}
	return kept;
}

/* Ports 0 and 1 on rings a and b, crosswise, at MTU 9000, started. */
static int ring_pair(void)
{
	struct rte_ring *a = rte_ring_create("gn_ra", 1024, SOCKET_ID_ANY,
					     RING_F_SP_ENQ | RING_F_SC_DEQ);
	struct rte_ring *b = rte_ring_create("gn_rb", 1024, SOCKET_ID_ANY,
					     RING_F_SP_ENQ | RING_F_SC_DEQ);
	struct rte_eth_conf conf = { .rxmode = { .mtu = MTU } };
	int p, r;

	if (!a || !b)
		return -ENOMEM;
	if (rte_eth_from_rings("gn_ring0", &a, 1, &b, 1, SOCKET_ID_ANY) != 0 ||
	    rte_eth_from_rings("gn_ring1", &b, 1, &a, 1, SOCKET_ID_ANY) != 1)
		return -ENODEV;
	for (p = 0; p < 2; p++) {
		char name[32];

		snprintf(name, sizeof(name), "nic%d", p);
		nics[p].pool = rte_pktmbuf_pool_create(name, NIC_MBUFS, 256, 0,
						       RTE_PKTMBUF_HEADROOM + 9216,
						       SOCKET_ID_ANY);
		if (!nics[p].pool)
			return -ENOMEM;
		r = rte_eth_dev_configure((uint16_t)p, 1, 1, &conf);
		if (!r)
			r = rte_eth_rx_queue_setup((uint16_t)p, 0, 1024, SOCKET_ID_ANY,
						   NULL, nics[p].pool);
		if (!r)
			r = rte_eth_tx_queue_setup((uint16_t)p, 0, 1024, SOCKET_ID_ANY,
						   NULL);
		if (!r && !rte_eth_add_rx_callback((uint16_t)p, 0, nic_rx, &nics[p]))
			r = -rte_errno;
		if (!r)
			r = rte_eth_dev_start((uint16_t)p);
		if (r)
			return r;
	}
	return 0;
}

static const struct job_spec spec = {
	.world = 2, .steps = 3, .ntensors = 2,
	.elems = { 1000003, 1000003 },
	.codec = { GN_CODEC_NONE, GN_CODEC_3LC },
};

struct rank {
	int rank;
	pid_t tid;			/* the thread that waits for its steps */
	int rc;
	char what[512];
	uint64_t hash[JOB_MAX_TENSORS][JOB_MAX_STEPS];
};

static void *rank_main(void *arg)
{
	struct rank *rk = arg;
	GN_OPTS(gn_ctx_opts, o, .rank = rk->rank, .world_size = 2,
		.peers = "10.9.0.1:7000,10.9.0.2:7000",
		.flags = GN_CTX_RANK | GN_CTX_DPDK_PORT | GN_CTX_DPDK_QUEUE,
		.key = job_key, .key_len = sizeof(job_key), .mtu = MTU,
		.timeout_ms = 20000, .transport = "dpdk",
		.dpdk_port = (unsigned int)rk->rank, .dpdk_queue = 0);
	struct gn_ctx *ctx;
	float *x = NULL;
	int k, step;

	rk->tid = gettid();
	rk->rc = gn_ctx_open(&o, &ctx);
	if (rk->rc)
		snprintf(rk->what, sizeof(rk->what), "open: %s", gn_last_errmsg());
	pthread_barrier_wait(&opened);
	if (rk->rc)
		return NULL;
	__atomic_store_n(&armed, true, __ATOMIC_RELEASE);
	for (k = 0; k < spec.ntensors && !rk->rc; k++) {
		GN_OPTS(gn_tensor_opts, t, .id = 1 + (uint32_t)k,
			.elems = spec.elems[k], .codec = spec.codec[k]);

		rk->rc = gn_tensor_register(ctx, &t);
	}
	if (!rk->rc)
		x = malloc(spec.elems[0] * sizeof(float));
	for (step = 0; x && !rk->rc && step < spec.steps; step++)
		for (k = 0; !rk->rc && k < spec.ntensors; k++) {
			job_grad(x, spec.elems[k], rk->rank, k, step);
			rk->rc = gn_allreduce(ctx, 1 + (uint32_t)k, x);
			rk->hash[k][step] = job_fnv(x, spec.elems[k]);
		}
	if (rk->rc)
		snprintf(rk->what, sizeof(rk->what), "job: %s", gn_ctx_errmsg(ctx));
	free(x);
	gn_ctx_close(ctx);
	return NULL;
}

static bool polled_by(const struct nic *nic, pid_t tid)
{
	int i;

	for (i = 0; i < POLLERS; i++)
		if (nic->poller[i] == tid)
			return true;
	return false;
}

/*
 * Two contexts of one process, one per port, at MTU 9000; @rtc: the
 * threads that wait for the steps poll (run to completion), or only the
 * progress threads do.
 */
static void jumbo_job(struct __test_metadata *_metadata, bool rtc)
{
	struct rank rk[2] = { { .rank = 0 }, { .rank = 1 } };
	uint64_t ref[JOB_MAX_STEPS];
	pthread_t th[2];
	float *out = malloc(spec.elems[0] * sizeof(float));
	int i, k, step;

	ASSERT_NE(NULL, out);
	if (!rtc)
		setenv("GN_DPDK_RTC", "0", 1);
	ASSERT_EQ(0, pthread_barrier_init(&opened, NULL, 2));
	ASSERT_LE(0, eal_up()) TH_LOG("rte_eal_init: %s", rte_strerror(rte_errno));
	ASSERT_EQ(0, ring_pair());
	/* A smaller tx pool than the default 256 MiB: two contexts in 1 GiB. */
	setenv("GN_DPDK_MBUFS", "8191", 1);
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, rank_main, &rk[i]));
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, rk[i].rc) TH_LOG("rank %d: %s", i, rk[i].what);
	for (k = 0; k < spec.ntensors; k++) {
		job_reference(&spec, k, NULL, ref, out);
		for (step = 0; step < spec.steps; step++)
			for (i = 0; i < 2; i++)
				EXPECT_EQ(ref[step], rk[i].hash[k][step])
					TH_LOG("rank %d tensor %d step %d", i, k, step);
	}
	for (i = 0; i < 2; i++) {
		TH_LOG("port %d received %lu frames, %lu over 1518 bytes, the longest %u bytes",
		       i, (unsigned long)nics[i].frames,
		       (unsigned long)nics[i].over_1518, nics[i].longest);
		/* Dense packets fill the MTU: most frames are jumbo ones. */
		EXPECT_LT(nics[i].frames / 2, nics[i].over_1518);
		EXPECT_LT(8000u, nics[i].longest);
		EXPECT_GE((uint32_t)FRAME_MAX, nics[i].longest);
		EXPECT_EQ(0u, nics[i].segmented);
		EXPECT_EQ(0u, nics[i].dropped);
		/* Port i is rank i's: its waiting thread polled it, or not. */
		EXPECT_EQ(rtc, polled_by(&nics[i], rk[i].tid))
			TH_LOG("port %d: rank %d's waiting thread %s it", i, i,
			       rtc ? "never polled" : "polled");
		EXPECT_FALSE(polled_by(&nics[i], rk[1 - i].tid));
	}
	free(out);
	for (i = 0; i < 2; i++)
		rte_eth_dev_stop((uint16_t)i);
	gn_eal_dir_rm("gnring");
}

TEST(mtu_9000_two_contexts_on_a_ring_pair)
{
	jumbo_job(_metadata, true);
}

TEST(mtu_9000_with_the_progress_thread_polling)
{
	jumbo_job(_metadata, false);
}

/* The DPDK fields of gn_ctx_opts belong to the dpdk transport. */
TEST(dpdk_options_on_udp_are_einval)
{
	GN_OPTS(gn_ctx_opts, o, .world_size = 1, .peers = "127.0.0.1:0",
		.flags = GN_CTX_INSECURE | GN_CTX_DPDK_PORT, .transport = "udp");
	struct gn_ctx *ctx;

	ASSERT_EQ(-EINVAL, gn_ctx_open(&o, &ctx));
	EXPECT_NE(NULL, strstr(gn_last_errmsg(), "GN_CTX_DPDK_PORT or GN_CTX_DPDK_QUEUE given for the udp transport"))
		TH_LOG("%s", gn_last_errmsg());
	o.flags = GN_CTX_INSECURE;
	o.dpdk_eal = "--no-huge";
	ASSERT_EQ(-EINVAL, gn_ctx_open(&o, &ctx));
	EXPECT_NE(NULL, strstr(gn_last_errmsg(), "gn_ctx_opts.dpdk_eal"))
		TH_LOG("%s", gn_last_errmsg());
}

TEST(dpdk_queue_out_of_range_is_einval)
{
	GN_OPTS(gn_ctx_opts, o, .world_size = 1, .peers = "127.0.0.1:0",
		.flags = GN_CTX_INSECURE | GN_CTX_DPDK_QUEUE, .transport = "dpdk",
		.dpdk_queue = 70000);
	struct gn_ctx *ctx;

	ASSERT_EQ(-EINVAL, gn_ctx_open(&o, &ctx));
	EXPECT_NE(NULL, strstr(gn_last_errmsg(), "dpdk_queue 70000 is not in 0..65535"))
		TH_LOG("%s", gn_last_errmsg());
}

TEST_HARNESS_MAIN
