/* SPDX-License-Identifier: MIT */
/*
 * libc_idle.h - the scenario's idle hook (struct gn_scn_hooks) in a
 * process: sleep until the earliest time a core wants polling, 10 ms at
 * most.
 */
#ifndef GN_TEST_LIBC_IDLE_H
#define GN_TEST_LIBC_IDLE_H

#include <stdint.h>
#include <time.h>

#include "libc.h"

static inline void gn_scn_libc_idle(void *arg, uint64_t until_ns)
{
	uint64_t now = gn_env_libc_now(), d;
	struct timespec ts;

	(void)arg;
	if (!until_ns || until_ns <= now)
		return;
	d = until_ns - now;
	if (d > 10000000)
		d = 10000000;
	ts.tv_sec = 0;
	ts.tv_nsec = (long)d;
	nanosleep(&ts, NULL);
}

#endif /* GN_TEST_LIBC_IDLE_H */
