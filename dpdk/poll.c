// SPDX-License-Identifier: MIT
/*
 * poll.c - the DPDK transport's poll loop and idle waits: the thread that
 * drives the core between a caller's steps (an lcore's own, or one pinned
 * to its CPUs), and wait and wake, which poll the rx queues, then nap on
 * a futex that wake cuts short. wait runs in the polling thread only,
 * wake in any.
 */
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_pause.h>

#include "dtp.h"

/* Idle wait: poll this long before the first sleep, then sleep from
 * SLEEP_MIN_NS doubling up to poll_us. */
#define SPIN_NS 20000ull
#define SLEEP_MIN_NS 50000ull
#define NSEC_PER_SEC 1000000000ull

static u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * NSEC_PER_SEC + (u64)ts.tv_nsec;
}

/*
 * The poll loop's thread runs on an lcore's CPUs. With GN_DPDK_LCORE
 * naming a worker lcore of the EAL that runs nothing, the loop is that
 * lcore's function (rte_eal_remote_launch()): the EAL's own thread, with
 * its lcore id (per-lcore mempool caches, rte_lcore_id()). Otherwise it
 * is a thread of ours pinned to that lcore's CPUs (the main lcore, or one
 * already running something), or without GN_DPDK_LCORE to the main
 * lcore's, so two ranks on one host given -l 0 and -l 1 do not share a
 * core; on an application's port it stays where the application put the
 * opening thread. Either thread is named gn-dpdk-poll, for top -H and the
 * tests.
 */
static pthread_mutex_t launch_lock = PTHREAD_MUTEX_INITIALIZER;

static int poller_main(void *arg)
{
	struct dtp *d = arg;
	char name[16] = "";
	rte_cpuset_t set;

	pthread_getname_np(pthread_self(), name, sizeof(name));
	pthread_setname_np(pthread_self(), "gn-dpdk-poll");
	if (!d->launched && !(d->shared && d->lcore < 0)) {
		set = rte_lcore_cpuset(d->lcore >= 0 ? (unsigned int)d->lcore :
							rte_get_main_lcore());
		if (CPU_COUNT(&set))
			pthread_setaffinity_np(pthread_self(), sizeof(set),
					       &set);
	}
	d->poller_fn(d->poller_arg);
	/* The lcore's thread goes back to the EAL as it was. */
	if (d->launched)
		pthread_setname_np(pthread_self(), name);
	return 0;
}

static void *poller_thread(void *arg)
{
	poller_main(arg);
	return NULL;
}

int gn_dpdk_poller_start(void *tp, void *(*fn)(void *), void *arg)
{
	struct dtp *d = tp;
	unsigned int lc = (unsigned int)d->lcore;

	d->poller_fn = fn;
	d->poller_arg = arg;
	/* Decided before the launch: the launched thread reads it. */
	pthread_mutex_lock(&launch_lock);
	d->launched = d->lcore >= 0 && lc != rte_get_main_lcore() &&
		      rte_eal_get_lcore_state(lc) == WAIT;
	if (d->launched && rte_eal_remote_launch(poller_main, d, lc))
		d->launched = false;
	pthread_mutex_unlock(&launch_lock);
	if (d->launched)
		return 0;
	return -pthread_create(&d->poller, NULL, poller_thread, d);
}

void gn_dpdk_poller_join(void *tp)
{
	struct dtp *d = tp;

	if (d->launched)
		rte_eal_wait_lcore((unsigned int)d->lcore);
	else
		pthread_join(d->poller, NULL);
}

/* Sleep up to @ns, or until wake() (a futex, so wake cuts it short). */
static void nap(struct dtp *d, u64 ns)
{
	struct timespec ts = { (time_t)(ns / NSEC_PER_SEC),
			       (long)(ns % NSEC_PER_SEC) };

	__atomic_store_n(&d->sleeping, 1, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&d->wake_word, __ATOMIC_SEQ_CST))
		syscall(SYS_futex, &d->wake_word, FUTEX_WAIT_PRIVATE, 0, &ts,
			NULL, 0);
	__atomic_store_n(&d->sleeping, 0, __ATOMIC_SEQ_CST);
}

/*
 * No descriptor to sleep on: poll the rx queues, busily while traffic is
 * recent (spin_tsc since the last packet sent or received, so a step's
 * next packet, an ACK or the peer's share, is seen at once) or for
 * SPIN_NS at least, then with sleeps that double from SLEEP_MIN_NS up to
 * poll_ns, so a rank between steps costs little CPU and a burst of
 * traffic is seen within poll_ns. It spins without yielding only on an
 * lcore of its own (GN_DPDK_LCORE), for SPIN_NS; on the main lcore it
 * yields the CPU at every round to any thread waiting for it: the
 * trainer's, gradnet's progress thread, which share that CPU (without
 * the yield, each hand-over of the queue between the two would wait out
 * the whole SPIN_NS), another rank's. What a poll finds stays for recv.
 * Return: 1 packets are there, 0 woken or timed out.
 */
int dtp_wait(void *tp, int timeout_ms)
{
	struct dtp *d = tp;
	u64 start = mono_ns(), now = start, nap_ns = SLEEP_MIN_NS;
	u64 end = start + (u64)timeout_ms * 1000000ull;
	u64 since = rte_get_timer_cycles() - d->active_tsc;
	u64 spin_end = start + SPIN_NS;

	if (since < d->spin_tsc) {
		u64 left = (d->spin_tsc - since) * NSEC_PER_SEC / d->tsc_hz;

		if (spin_end < start + left)
			spin_end = start + left;
	}
	for (;;) {
		if (dtp_rx_any(d))
			return 1;
		if (__atomic_exchange_n(&d->wake_word, 0, __ATOMIC_SEQ_CST))
			return 0;
		if (now >= end)
			return 0;
		if (!d->poll_ns || now < spin_end) {
			if (d->lcore >= 0 && now - start < SPIN_NS)
				rte_pause();
			else
				sched_yield();
		} else {
			nap(d, nap_ns < end - now ? nap_ns : end - now);
			nap_ns = nap_ns * 2 < d->poll_ns ? nap_ns * 2 : d->poll_ns;
		}
		now = mono_ns();
	}
}

void dtp_wake(void *tp)
{
	struct dtp *d = tp;

	if (!__atomic_exchange_n(&d->wake_word, 1, __ATOMIC_SEQ_CST) &&
	    __atomic_load_n(&d->sleeping, __ATOMIC_SEQ_CST))
		syscall(SYS_futex, &d->wake_word, FUTEX_WAKE_PRIVATE, 1, NULL,
			NULL, 0);
}
