// SPDX-License-Identifier: MIT
/*
 * env_dpdk_test.c - the core's DPDK environment (dpdk/env.c) on an
 * EAL without hugepages or devices: memory comes zeroed, the clock counts
 * nanoseconds forward, random bytes fill what was asked and no more, and
 * the lock excludes another thread.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_memory.h>

#include "kselftest_harness.h"
#include "gn_env_dpdk.h"

/* One EAL per test process (the harness forks each test): no hugepages,
 * no PCI, no shared config, on the first CPU this process may run on. */
static int eal_up(void)
{
	char prefix[64], lcore[16];
	char *argv[] = { "env_dpdk_test", "--no-huge", "-m", "256", "--no-pci",
			 "--no-shconf", "--no-telemetry", prefix, "-l", lcore,
			 "--log-level=lib.eal:error" };
	cpu_set_t set;
	int cpu = 0;

	if (!sched_getaffinity(0, sizeof(set), &set))
		while (cpu < CPU_SETSIZE - 1 && !CPU_ISSET(cpu, &set))
			cpu++;
	snprintf(prefix, sizeof(prefix), "--file-prefix=gnenv%d", (int)getpid());
	snprintf(lcore, sizeof(lcore), "%d", cpu);
	return rte_eal_init((int)(sizeof(argv) / sizeof(argv[0])), argv);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

FIXTURE(denv) {
	struct gn_env *env;
};

FIXTURE_SETUP(denv)
{
	ASSERT_LE(0, eal_up()) TH_LOG("rte_eal_init: %s", rte_strerror(rte_errno));
	ASSERT_EQ(0, gn_env_dpdk_new(SOCKET_ID_ANY, &self->env));
	ASSERT_NE(NULL, self->env);
}

/* The EAL leaves its (empty) runtime directory behind; this run's goes. */
FIXTURE_TEARDOWN(denv)
{
	char dir[4096];

	snprintf(dir, sizeof(dir), "%s", rte_eal_get_runtime_dir());
	gn_env_dpdk_free(self->env);
	rte_eal_cleanup();
	rmdir(dir);
}

static size_t nonzero(const uint8_t *p, size_t n)
{
	size_t i, c = 0;

	for (i = 0; i < n; i++)
		c += p[i] != 0;
	return c;
}

/* Zeroed even where a freed, dirtied block is handed out again. */
TEST_F(denv, alloc_is_zeroed)
{
	const size_t n = 1 << 20;
	uint8_t *p;
	int round;

	for (round = 0; round < 4; round++) {
		p = gn_alloc(self->env, n);
		ASSERT_NE(NULL, p);
		ASSERT_EQ(0, nonzero(p, n)) TH_LOG("round %d", round);
		memset(p, 0xa5, n);
		gn_free(self->env, p);
	}
	p = gn_alloc_array(self->env, 1000, sizeof(uint64_t));
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, nonzero(p, 1000 * sizeof(uint64_t)));
	gn_free(self->env, p);
	/* n * size past SIZE_MAX is refused, not wrapped. */
	ASSERT_EQ(NULL, gn_alloc_array(self->env, SIZE_MAX / 8 + 2, 8));
	gn_free(self->env, NULL);
}

/*
 * Nanoseconds, not timer cycles: over a 10 ms sleep the env clock and
 * CLOCK_MONOTONIC agree within a factor of two, however loaded the
 * machine (both measure the same interval); and it never goes back.
 */
TEST_F(denv, clock_counts_nanoseconds)
{
	uint64_t t0, t1, m0, m1, prev, now;
	struct timespec ten_ms = { .tv_nsec = 10 * 1000 * 1000 };
	int i;

	m0 = mono_ns();
	t0 = gn_env_now(self->env);
	nanosleep(&ten_ms, NULL);
	t1 = gn_env_now(self->env);
	m1 = mono_ns();
	ASSERT_LE(5000000ull, t1 - t0) TH_LOG("env clock moved %llu ns over a 10 ms sleep",
					      (unsigned long long)(t1 - t0));
	ASSERT_LE(t1 - t0, 2 * (m1 - m0) + 1000000) {
		TH_LOG("env clock moved %llu ns while CLOCK_MONOTONIC moved %llu",
		       (unsigned long long)(t1 - t0), (unsigned long long)(m1 - m0));
	}
	prev = gn_env_now(self->env);
	for (i = 0; i < 100000; i++) {
		now = gn_env_now(self->env);
		ASSERT_LE(prev, now);
		prev = now;
	}
}

/* Every byte asked for is written, the ones past it are not. */
TEST_F(denv, random_fills_exactly)
{
	uint8_t a[256 + 16], b[256];
	size_t len;

	for (len = 1; len <= 256; len += 13) {
		memset(a, 0, sizeof(a));
		ASSERT_EQ(0, gn_env_random(self->env, a, len));
		ASSERT_EQ(0, nonzero(a + len, sizeof(a) - len)) TH_LOG("len %zu", len);
	}
	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	ASSERT_EQ(0, gn_env_random(self->env, a, 256));
	ASSERT_EQ(0, gn_env_random(self->env, b, 256));
	/* About one zero byte in 256 is expected; 32 would be a broken fill. */
	ASSERT_LT(224, nonzero(a, 256));
	ASSERT_NE(0, memcmp(a, b, 256));
	ASSERT_EQ(0, gn_env_random(self->env, a, 0));
}

#define LOCK_ROUNDS 200000

struct counter {
	struct gn_env *env;
	volatile uint64_t n;
};

/* A read, a yield point and a write: without the lock, updates get lost. */
static void bump(struct counter *c)
{
	int i;

	for (i = 0; i < LOCK_ROUNDS; i++) {
		uint64_t v;

		gn_env_lock(c->env);
		v = c->n;
		if (!(i & 4095))
			sched_yield();
		c->n = v + 1;
		gn_env_unlock(c->env);
	}
}

static void *bump_thread(void *arg)
{
	bump(arg);
	return NULL;
}

/* A thread that is no lcore shares the lock with the lcore; wake is a no-op. */
TEST_F(denv, lock_excludes_another_thread)
{
	struct counter c = { .env = self->env };
	pthread_t th;

	ASSERT_EQ(0, pthread_create(&th, NULL, bump_thread, &c));
	bump(&c);
	ASSERT_EQ(0, pthread_join(th, NULL));
	ASSERT_EQ(2ull * LOCK_ROUNDS, c.n);
	gn_env_lock(self->env);
	gn_env_wake(self->env);
	gn_env_unlock(self->env);
}

TEST_HARNESS_MAIN
