// SPDX-License-Identifier: MIT
/*
 * dpdk_open_test.c - opening a context on the DPDK transport through the
 * public API: what the caller gets when the EAL, the port or the
 * neighbour list is wrong or a peer does not answer ARP (-errno and a
 * message naming the cause), and a
 * one-rank job on a net_null port, opened twice in one process. The
 * harness forks each test, so each brings up an EAL of its own.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gradnet/gradnet.h>
#include <rte_launch.h>

#include "eal_dir.h"
#include "kselftest_harness.h"

/*
 * EAL arguments for this process: no hugepages, no PCI, no shared config
 * (unless @shconf: memif needs it).
 */
static void eal_env_with(const char *extra, bool shconf)
{
	char args[512];
	cpu_set_t set;
	int cpu = 0;

	if (!sched_getaffinity(0, sizeof(set), &set))
		while (cpu < CPU_SETSIZE - 1 && !CPU_ISSET(cpu, &set))
			cpu++;
	snprintf(args, sizeof(args),
		 "--no-huge -m 1024 --no-pci %s --no-telemetry -l %d --file-prefix=gnopen%d --log-level=*:error %s",
		 shconf ? "" : "--no-shconf", cpu, (int)getpid(), extra);
	setenv("GN_DPDK_EAL", args, 1);
	setenv("GN_TRANSPORT", "dpdk", 1);
}

static void eal_env(const char *extra)
{
	eal_env_with(extra, false);
}

static int open_dpdk(struct gn_ctx **ctx, int world, const char *peers)
{
	GN_OPTS(gn_ctx_opts, o, .world_size = world, .peers = peers,
		.flags = GN_CTX_INSECURE | GN_CTX_RANK, .timeout_ms = 1000);

	return gn_ctx_open(&o, ctx);
}

TEST(unknown_transport_is_einval)
{
	GN_OPTS(gn_ctx_opts, o, .world_size = 1, .peers = "127.0.0.1:29951",
		.flags = GN_CTX_INSECURE, .transport = "rdma");
	struct gn_ctx *ctx;

	ASSERT_EQ(-EINVAL, gn_ctx_open(&o, &ctx));
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "use udp or dpdk")) TH_LOG("%s", gn_last_errmsg());
}

TEST(neighbour_list_entries_checked)
{
	struct gn_ctx *ctx;

	eal_env("");
	setenv("GN_DPDK_PEERS", "-,02:00:00:00:00:0g", 1);
	ASSERT_EQ(-EINVAL, open_dpdk(&ctx, 2, "10.1.0.1:7000,10.1.0.2:7000"));
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "entry 1")) TH_LOG("%s", gn_last_errmsg());
	setenv("GN_DPDK_PEERS", "-", 1);
	ASSERT_EQ(-EINVAL, open_dpdk(&ctx, 2, "10.1.0.1:7000,10.1.0.2:7000"));
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "lists 1 MAC")) TH_LOG("%s", gn_last_errmsg());
	setenv("GN_DPDK_PEERS", "-,arp,ar", 1);
	ASSERT_EQ(-EINVAL, open_dpdk(&ctx, 3, "10.1.0.1:7000,10.1.0.2:7000,10.1.0.3:7000"));
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "entry 2")) TH_LOG("%s", gn_last_errmsg());
	gn_eal_dir_rm("gnopen");
}

/*
 * Without a MAC for a peer the transport asks by ARP; on a net_null port
 * nobody answers, so the open fails once the job's timeout (1 s) passed,
 * naming the ranks that stayed silent, and not those the list gave.
 */
static void arp_silence(struct __test_metadata *_metadata, const char *peers)
{
	struct gn_ctx *ctx;
	struct timespec t0, t1;
	double secs;

	eal_env("--vdev=net_null0");
	if (peers)
		setenv("GN_DPDK_PEERS", peers, 1);
	else
		unsetenv("GN_DPDK_PEERS");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ASSERT_EQ(-EHOSTUNREACH, open_dpdk(&ctx, 3,
					   "10.1.0.1:7000,10.1.0.2:7000,10.1.0.3:7001"));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	TH_LOG("%s (after %.2f s)", gn_last_errmsg(), secs);
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "no ARP reply within 1000 ms")) TH_LOG("%s", gn_last_errmsg());
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "rank 2 (10.1.0.3)")) TH_LOG("%s", gn_last_errmsg());
	if (peers) {
		ASSERT_EQ(NULL, strstr(gn_last_errmsg(), "rank 1")) TH_LOG("%s", gn_last_errmsg());
	} else {
		ASSERT_NE(NULL, strstr(gn_last_errmsg(), "rank 1 (10.1.0.2)")) TH_LOG("%s", gn_last_errmsg());
	}
	ASSERT_EQ(NULL, strstr(gn_last_errmsg(), "rank 0")) TH_LOG("%s", gn_last_errmsg());
	ASSERT_LE(1.0, secs);
	gn_eal_dir_rm("gnopen");
}

TEST(arp_unanswered_names_the_ranks)
{
	arp_silence(_metadata, NULL);
}

TEST(arp_only_for_ranks_the_list_leaves_out)
{
	arp_silence(_metadata, "-,02:00:00:00:00:02,arp");
}

TEST(eal_failure_names_the_eal)
{
	struct gn_ctx *ctx;
	int r, out, null;

	eal_env("--no-such-eal-option");
	setenv("GN_DPDK_PEERS", "-", 1);
	/* The EAL prints its usage on stdout, which is the TAP stream. */
	fflush(stdout);
	out = dup(1);
	null = open("/dev/null", O_WRONLY);
	ASSERT_LE(0, out);
	ASSERT_LE(0, null);
	dup2(null, 1);
	r = open_dpdk(&ctx, 1, "10.1.0.1:7000");
	fflush(stdout);
	dup2(out, 1);
	close(out);
	close(null);
	ASSERT_GT(0, r);
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "rte_eal_init")) TH_LOG("%s", gn_last_errmsg());
	/* Once failed, the EAL stays failed in this process: the same error. */
	ASSERT_EQ(r, open_dpdk(&ctx, 1, "10.1.0.1:7000"));
	gn_eal_dir_rm("gnopen");
}

/*
 * A one-rank open on the EAL of @extra with variable @var set to @val
 * fails with @err and a message that holds @says.
 */
static void refused(struct __test_metadata *_metadata, const char *extra,
		    const char *var, const char *val, int err, const char *says)
{
	struct gn_ctx *ctx;

	eal_env(extra);
	setenv("GN_DPDK_PEERS", "-", 1);
	setenv(var, val, 1);
	ASSERT_EQ(err, open_dpdk(&ctx, 1, "10.1.0.1:7000"));
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), says)) TH_LOG("%s", gn_last_errmsg());
	unsetenv(var);
	gn_eal_dir_rm("gnopen");
}

TEST(missing_port_is_enodev)
{
	refused(_metadata, "", "GN_DPDK_PORT", "3", -ENODEV,
		"port 3 does not exist");
}

TEST(ipv6_peers_refused)
{
	struct gn_ctx *ctx;

	eal_env("--vdev=net_null0");
	setenv("GN_DPDK_PEERS", "-", 1);
	ASSERT_EQ(-EAFNOSUPPORT, open_dpdk(&ctx, 1, "[::1]:7000"));
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "IPv4 only")) TH_LOG("%s", gn_last_errmsg());
	gn_eal_dir_rm("gnopen");
}

/* One rank on a memif server port of its own, socket @sock. */
static void memif_env(char *sock, size_t len)
{
	char vdev[256];

	snprintf(sock, len, "/tmp/gnopen%d.sock", (int)getpid());
	snprintf(vdev, sizeof(vdev),
		 "--vdev=net_memif0,role=server,socket=%s,socket-abstract=no", sock);
	eal_env_with(vdev, true);
	setenv("GN_DPDK_PEERS", "-", 1);
}

/* A port that takes no jumbo frames says so, with its limit. */
TEST(mtu_over_the_port_limit_is_einval)
{
	struct gn_ctx *ctx;
	char sock[64];

	memif_env(sock, sizeof(sock));
	setenv("GN_MTU", "9000", 1);
	ASSERT_EQ(-EINVAL, open_dpdk(&ctx, 1, "10.1.0.1:7000"));
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "takes frames of at most 1518 bytes (an MTU of 1500), the job's MTU is 9000")) TH_LOG("%s", gn_last_errmsg());
	unsetenv("GN_MTU");
	unlink(sock);
	gn_eal_dir_rm("gnopen");
}

TEST(lcore_not_the_eals_is_einval)
{
	refused(_metadata, "--vdev=net_null0", "GN_DPDK_LCORE", "200", -EINVAL,
		"GN_DPDK_LCORE=200 is not one of the EAL's lcores");
}

TEST(rtc_not_0_or_1_is_einval)
{
	refused(_metadata, "--vdev=net_null0", "GN_DPDK_RTC", "2", -EINVAL,
		"GN_DPDK_RTC=2 is not a number in 0..1");
}

TEST(queues_not_a_count_is_einval)
{
	refused(_metadata, "--vdev=net_null0", "GN_DPDK_QUEUES", "0", -EINVAL,
		"GN_DPDK_QUEUES=0 is not a number in 1..1024");
}

/* More queue pairs than the port has: refused with its limit. */
TEST(queues_over_the_port_limit_is_einval)
{
	struct gn_ctx *ctx;
	char sock[64];

	memif_env(sock, sizeof(sock));
	setenv("GN_DPDK_QUEUES", "300", 1);
	ASSERT_EQ(-EINVAL, open_dpdk(&ctx, 1, "10.1.0.1:7000"));
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "DPDK port 0 (net_memif) has at most 255 queue pairs, GN_DPDK_QUEUES is 300")) TH_LOG("%s", gn_last_errmsg());
	unsetenv("GN_DPDK_QUEUES");
	unlink(sock);
	gn_eal_dir_rm("gnopen");
}

/* The application's port gives gradnet one queue, not several. */
TEST(queues_on_the_applications_port_is_einval)
{
	setenv("GN_DPDK_QUEUE", "0", 1);
	refused(_metadata, "--vdev=net_null0", "GN_DPDK_QUEUES", "2", -EINVAL,
		"GN_DPDK_QUEUES=2 is for a port gradnet configures");
	unsetenv("GN_DPDK_QUEUE");
}

/* The CPUs of the thread named @name in this process: its tid, or -1. */
static int thread_cpus(const char *name, cpu_set_t *set)
{
	DIR *dir = opendir("/proc/self/task");
	char path[300], comm[32];
	struct dirent *e;
	int found = -1;
	FILE *f;

	while (dir && found < 0 && (e = readdir(dir))) {
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strncmp(comm, name, strlen(name)) &&
		    !sched_getaffinity(atoi(e->d_name), sizeof(*set), set))
			found = atoi(e->d_name);
		fclose(f);
	}
	if (dir)
		closedir(dir);
	return found;
}

/*
 * The first two CPUs this process may use in @cpu; an EAL on lcores
 * -l A,B (lcore id = CPU), B the main lcore if @b_main, on net_null, with
 * GN_DPDK_LCORE=B. Return: how many CPUs were found (the tests need 2).
 */
static int lcore_env(int cpu[2], bool b_main)
{
	char args[512], lc[16], main_arg[32] = "";
	int n = 0, c;
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 0;
	for (c = 0; c < CPU_SETSIZE && n < 2; c++)
		if (CPU_ISSET(c, &set))
			cpu[n++] = c;
	if (n < 2)
		return n;
	if (b_main)
		snprintf(main_arg, sizeof(main_arg), " --main-lcore %d", cpu[1]);
	snprintf(args, sizeof(args),
		 "--no-huge -m 1024 --no-pci --no-shconf --no-telemetry -l %d,%d%s --file-prefix=gnopen%d --log-level=*:error --vdev=net_null0",
		 cpu[0], cpu[1], main_arg, (int)getpid());
	setenv("GN_DPDK_EAL", args, 1);
	setenv("GN_TRANSPORT", "dpdk", 1);
	setenv("GN_DPDK_PEERS", "-", 1);
	snprintf(lc, sizeof(lc), "%d", cpu[1]);
	setenv("GN_DPDK_LCORE", lc, 1);
	return n;
}

/*
 * GN_DPDK_LCORE: the poll loop is that lcore's own function, the EAL's
 * thread of the lcore (so on its CPU, with its lcore id), not a thread
 * pinned to the main lcore's CPU; after close the lcore is free and its
 * thread back under its EAL name, so a second context launches there
 * again. Needs two CPUs: the EAL gets -l A,B and the loop lcore B.
 */
TEST(poll_loop_on_the_dedicated_lcore)
{
	GN_OPTS(gn_tensor_opts, t, .id = 1, .elems = 8, .codec = GN_CODEC_NONE);
	float x[8] = { 0 };
	char worker[32];
	int cpu[2] = { -1, -1 }, round, tid;
	struct gn_ctx *ctx;
	cpu_set_t set;

	ASSERT_EQ(2, lcore_env(cpu, false)) TH_LOG("this test needs two CPUs");
	/* The EAL's name for the thread of lcore B (-l: lcore id = CPU). */
	snprintf(worker, sizeof(worker), "rte-worker-%d\n", cpu[1]);
	for (round = 0; round < 2; round++) {
		ASSERT_EQ(0, open_dpdk(&ctx, 1, "10.1.0.1:7000")) TH_LOG("%s", gn_last_errmsg());
		ASSERT_EQ(0, gn_tensor_register(ctx, &t));
		ASSERT_EQ(0, gn_allreduce(ctx, 1, x));
		usleep(100000);
		tid = thread_cpus("gn-dpdk-poll", &set);
		ASSERT_LT(0, tid);
		ASSERT_EQ(1, CPU_COUNT(&set));
		ASSERT_TRUE(CPU_ISSET(cpu[1], &set));
		ASSERT_EQ(RUNNING, rte_eal_get_lcore_state((unsigned int)cpu[1]));
		ASSERT_EQ(-1, thread_cpus(worker, &set));
		gn_ctx_close(ctx);
		ASSERT_EQ(WAIT, rte_eal_get_lcore_state((unsigned int)cpu[1]));
		ASSERT_EQ(tid, thread_cpus(worker, &set));
		ASSERT_EQ(-1, thread_cpus("gn-dpdk-poll", &set));
	}
	unsetenv("GN_DPDK_LCORE");
	gn_eal_dir_rm("gnopen");
}

/*
 * GN_DPDK_LCORE naming the main lcore, whose thread is the caller's:
 * the poll loop is a thread of gradnet's pinned to its CPU.
 */
TEST(poll_loop_pinned_to_the_main_lcore)
{
	GN_OPTS(gn_tensor_opts, t, .id = 1, .elems = 8, .codec = GN_CODEC_NONE);
	float x[8] = { 0 };
	int cpu[2] = { -1, -1 };
	struct gn_ctx *ctx;
	cpu_set_t set;

	ASSERT_EQ(2, lcore_env(cpu, true)) TH_LOG("this test needs two CPUs");
	ASSERT_EQ(0, open_dpdk(&ctx, 1, "10.1.0.1:7000")) TH_LOG("%s", gn_last_errmsg());
	ASSERT_EQ(0, gn_tensor_register(ctx, &t));
	ASSERT_EQ(0, gn_allreduce(ctx, 1, x));
	usleep(100000);
	ASSERT_LT(0, thread_cpus("gn-dpdk-poll", &set));
	ASSERT_EQ(1, CPU_COUNT(&set));
	ASSERT_TRUE(CPU_ISSET(cpu[1], &set));
	/* Lcore A, the worker, was left alone. */
	ASSERT_EQ(WAIT, rte_eal_get_lcore_state((unsigned int)cpu[0]));
	gn_ctx_close(ctx);
	ASSERT_EQ(-1, thread_cpus("gn-dpdk-poll", &set));
	unsetenv("GN_DPDK_LCORE");
	gn_eal_dir_rm("gnopen");
}

/* A job of one: opens, reduces (nothing to send), closes, and again. */
TEST(one_rank_on_net_null_twice)
{
	GN_OPTS(gn_tensor_opts, t, .id = 1, .elems = 8, .codec = GN_CODEC_NONE);
	float x[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct gn_ctx *ctx;
	int round, i;

	eal_env("--vdev=net_null0");
	setenv("GN_DPDK_PEERS", "-", 1);
	for (round = 0; round < 2; round++) {
		ASSERT_EQ(0, open_dpdk(&ctx, 1, "10.1.0.1:7000")) TH_LOG("%s", gn_last_errmsg());
		ASSERT_EQ(0, gn_tensor_register(ctx, &t));
		ASSERT_EQ(0, gn_allreduce(ctx, 1, x));
		for (i = 0; i < 8; i++)
			ASSERT_EQ((float)(i + 1), x[i]);
		gn_ctx_close(ctx);
	}
	gn_eal_dir_rm("gnopen");
}

TEST_HARNESS_MAIN
