/* SPDX-License-Identifier: MIT */
/*
 * test_hooks.h - what the test library (tests/lib) hooks into when it is
 * linked: NULL in every process that does not link it, which no shipped
 * program does. open.c calls them.
 */
#ifndef GN_TEST_HOOKS_H
#define GN_TEST_HOOKS_H

#include "driver.h"

/*
 * @open: after the transport opened, before the core does: may change
 *	@conf (the wire version) or wrap @tp; -errno and a message fail it
 * @session: the session key was derived from @info
 * @closed: the progress thread stopped, the core not yet freed: @ctx's
 *	counters are final (gn_stats_ctx() may read them)
 */
struct gn_test_hooks {
	int (*open)(struct gn_core_conf *conf, struct gn_transport *tp,
		    char *msg, size_t len);
	void (*session)(const u8 *info, size_t len);
	void (*closed)(struct gn_ctx *ctx);
};

extern const struct gn_test_hooks *gn_test_hooks GN_HIDDEN;

#endif /* GN_TEST_HOOKS_H */
