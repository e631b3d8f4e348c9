// SPDX-License-Identifier: MIT
/*
 * eal.c - DPDK's EAL, brought up once per process from GN_DPDK_EAL's
 * arguments, or found up already when the application brought it up.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_log.h>

#include "gn_dpdk.h"

#define EAL_ARGS_MAX 64

static pthread_mutex_t eal_lock = PTHREAD_MUTEX_INITIALIZER;
static int eal_state;			/* 0 not tried, 1 up, -errno failed */
static char eal_err[160];

/*
 * The EAL keeps pointers into its arguments, so they live as long as the
 * process; it is brought up once. rte_eal_init() pins the calling thread
 * to the main lcore: the caller's thread is the application's and gets
 * its CPUs back; the poll loop's thread is pinned (poll.c).
 */
static int eal_up(const char *args)
{
	static char *argv[EAL_ARGS_MAX + 1];
	char *copy = strdup(args ? args : ""), *tok, *save = NULL;
	cpu_set_t mine;
	bool have_mine;
	int argc = 0, r;

	/*
	 * An EAL that is up (the application's) has lcores; asking it again
	 * would only make it log a FATAL line.
	 */
	if (rte_lcore_count()) {
		free(copy);
		return 1;
	}
	if (!copy)
		return -ENOMEM;
	argv[argc++] = "gradnet";
	for (tok = strtok_r(copy, " \t\n", &save); tok;
	     tok = strtok_r(NULL, " \t\n", &save)) {
		if (argc == EAL_ARGS_MAX) {
			snprintf(eal_err, sizeof(eal_err), "more than %d EAL arguments",
				 EAL_ARGS_MAX - 1);
			free(copy);
			return -E2BIG;
		}
		argv[argc++] = tok;
	}
	argv[argc] = NULL;
	/* stdout is the application's: DPDK logs to stderr. */
	rte_openlog_stream(stderr);
	have_mine = !pthread_getaffinity_np(pthread_self(), sizeof(mine), &mine);
	r = rte_eal_init(argc, argv);
	if (have_mine)
		pthread_setaffinity_np(pthread_self(), sizeof(mine), &mine);
	if (r >= 0)
		return 1;
	/* Only an EAL that came up keeps pointers into its arguments. */
	free(copy);
	if (rte_errno == EALREADY)
		return 1;
	r = rte_errno ? -rte_errno : -EINVAL;
	/*
	 * The EAL says EACCES when it finds no hugepages it may use, and
	 * ENOMEM when they are too few: name the likely cause and the fix.
	 */
	snprintf(eal_err, sizeof(eal_err), "rte_eal_init(\"%s\") failed: %s%s",
		 args ? args : "", rte_strerror(-r),
		 r == -EACCES || r == -ENOMEM ?
		 " (no or too few free hugepages? tools/dpdk-host-check.sh says; or run without them: --no-huge -m 1024)" :
		 "");
	return r;
}

int gn_dpdk_eal_init(const char *args, char *msg, size_t len)
{
	int r;

	pthread_mutex_lock(&eal_lock);
	if (!eal_state)
		eal_state = eal_up(args);
	r = eal_state;
	if (r < 0)
		snprintf(msg, len, "%s", eal_err[0] ? eal_err : strerror(-r));
	pthread_mutex_unlock(&eal_lock);
	return r < 0 ? r : 0;
}
