// SPDX-License-Identifier: MIT
/*
 * hooks.c - what the GN_TEST_* variables do, installed into libgradnet's
 * test hooks when a test program starts:
 *	GN_TEST_FAULTS=...		loss, duplication, reordering, record
 *					and replay (fault.c)
 *	GN_TEST_WIRE_VERSION=N		speak protocol version N
 *	GN_TEST_SESSION_FILE=PATH	write what the session key binds to
 *					PATH, for attackers that hold the key
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "testlib.h"

static int test_open(struct gn_core_conf *conf, struct gn_transport *tp,
		     char *msg, size_t len)
{
	const char *v = getenv("GN_TEST_WIRE_VERSION");

	if (v)
		conf->version = (u8)atoi(v);
	if (gn_fault_wrap(tp)) {
		snprintf(msg, len, "GN_TEST_FAULTS=%s: use loss=P,dup=P,reorder=P,seed=N,record=PATH,replay=PATH",
			 getenv("GN_TEST_FAULTS"));
		return -EINVAL;
	}
	return 0;
}

/* The instances travel in clear HELLOs: this tells an insider nothing a
 * rank could not. Written whole, or not at all. */
static void test_session(const u8 *info, size_t len)
{
	const char *path = getenv("GN_TEST_SESSION_FILE");
	char tmp[PATH_MAX];
	bool ok;
	FILE *f;

	if (!path)
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "wb");
	if (!f)
		return;
	ok = fwrite(info, 1, len, f) == len;
	ok = !fclose(f) && ok;
	if (!ok || rename(tmp, path))
		unlink(tmp);
}

int gn_test_session_mac(const char *path, const u8 *key, struct gn_mac *out)
{
	static u8 info[GN_MAC_INFO_MAX];
	static struct gn_mac job;
	FILE *f = NULL;
	size_t len;
	int tries;

	for (tries = 0; tries < 3000 && !(f = fopen(path, "rb")); tries++)
		usleep(10000);
	if (!f)
		return -ETIMEDOUT;
	len = fread(info, 1, sizeof(info), f);
	fclose(f);
	gn_mac_init(&job, key);
	return gn_mac_session(out, &job, info, len);
}

static const struct gn_test_hooks hooks = {
	.open = test_open,
	.session = test_session,
};

__attribute__((constructor)) static void install(void)
{
	gn_test_hooks = &hooks;
}
