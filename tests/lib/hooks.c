// SPDX-License-Identifier: MIT
/*
 * hooks.c - what the GN_TEST_* variables do, installed into libgradnet's
 * test hooks when a test program starts:
 *	GN_TEST_FAULTS=...		loss, duplication, reordering, record
 *					and replay (fault.c)
 *	GN_TEST_WIRE_VERSION=N		speak protocol version N
 *	GN_TEST_SESSION_FILE=PATH	write what the session key binds to
 *					PATH, for attackers that hold the key
 *	GN_TEST_STATS_FILE=PATH		write the context's final counters,
 *					after its last packet, to PATH (JSON)
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

int gn_test_session_key(const char *path, const u8 *key, u8 *out)
{
	static u8 info[GN_WIRE_INFO_MAX];
	FILE *f = NULL;
	size_t len;
	int tries;

	for (tries = 0; tries < 3000 && !(f = fopen(path, "rb")); tries++)
		usleep(10000);
	if (!f)
		return -ETIMEDOUT;
	len = fread(info, 1, sizeof(info), f);
	fclose(f);
	return gn_wire_session_key(out, key, info, len);
}

/*
 * The counters once nothing can change them: a rank's own stats line is
 * taken before close, which still acknowledges and retransmits, so it
 * cannot be compared exactly with a tracer that saw every packet.
 */
static void test_closed(struct gn_ctx *ctx)
{
	const char *path = getenv("GN_TEST_STATS_FILE");
	GN_OPTS(gn_stats, st);
	FILE *f;
	int i;

	if (!path || gn_stats_ctx(ctx, &st))
		return;
	f = fopen(path, "w");
	if (!f)
		return;
	fprintf(f, "{\"rank\": %d, \"tx_packets\": %llu, \"wire_bytes\": %llu, "
		"\"retransmits\": %llu, \"messages\": %llu, \"raw_bytes\": %llu, "
		"\"stream_bytes\": %llu, \"ctl_packets\": %llu, \"ctl_bytes\": %llu, "
		"\"rx_packets\": %llu, \"rx_wire_bytes\": %llu, \"allreduces\": %llu, "
		"\"drops\": [", gn_ctx_rank(ctx),
		(unsigned long long)st.tx_packets, (unsigned long long)st.wire_bytes,
		(unsigned long long)st.retransmits, (unsigned long long)st.messages,
		(unsigned long long)st.raw_bytes, (unsigned long long)st.stream_bytes,
		(unsigned long long)st.ctl_packets, (unsigned long long)st.ctl_bytes,
		(unsigned long long)st.rx_packets, (unsigned long long)st.rx_wire_bytes,
		(unsigned long long)st.allreduces);
	for (i = 0; i < GN_DROP_COUNT; i++)
		fprintf(f, "%s%llu", i ? ", " : "", (unsigned long long)st.drops[i]);
	fprintf(f, "]}\n");
	fclose(f);
}

static const struct gn_test_hooks hooks = {
	.open = test_open,
	.session = test_session,
	.closed = test_closed,
};

__attribute__((constructor)) static void install(void)
{
	gn_test_hooks = &hooks;
}
