/* SPDX-License-Identifier: MIT */
/*
 * libc.h - the environment of libgradnet's core: the C library and
 * pthreads. The driver (lib/driver.c) and the API (lib/api.c) wait on
 * the same lock and condition variable that the core's wake() signals.
 */
#ifndef GN_ENV_LIBC_H
#define GN_ENV_LIBC_H

#include <errno.h>
#include <pthread.h>
#include <sys/random.h>

#include "env.h"
#include "workers.h"

struct gn_env_libc {
	struct gn_env env;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct gn_workers *pool;	/* codec workers; NULL: none */
};

/*
 * @len bytes from the kernel's generator, in a process on any path (libc
 * and DPDK environments alike). Return: 0 or -errno.
 */
static inline int gn_getrandom(void *buf, size_t len)
{
	size_t at = 0;

	while (at < len) {
		ssize_t r = getrandom((char *)buf + at, len - at, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		at += (size_t)r;
	}
	return 0;
}

void gn_env_libc_init(struct gn_env_libc *e);
void gn_env_libc_destroy(struct gn_env_libc *e);
int gn_env_libc_workers(struct gn_env_libc *e, u32 n);
/* With the lock held: sleep until a wake(), or until @deadline_ns (0: none). */
void gn_env_libc_wait(struct gn_env_libc *e, u64 deadline_ns);
u64 gn_env_libc_now(void);

#endif /* GN_ENV_LIBC_H */
