/* SPDX-License-Identifier: MIT */
/*
 * testlib.h - libgradnet's test-only library: contexts without a network,
 * fault injection, and the hooks that the GN_TEST_* variables set. Linked
 * into test programs only; no shipped program or library contains it.
 */
#ifndef GN_TESTLIB_H
#define GN_TESTLIB_H

#include "backend.h"
#include "test_hooks.h"

/*
 * A ready context of @world ranks at 127.0.0.1:9000+k whose packets go
 * nowhere and that has no progress thread; @key NULL: insecure. Its
 * session key is the job key twice over, so tests and fuzz seeds can seal
 * packets: under gn_test_sender_key() of their sender.
 */
int gn_test_ctx_new(int world, int rank, const u8 *key, u32 job,
		    struct gn_ctx **out);
/* Rank @rank's sender key in a context of gn_test_ctx_new() with @key. */
int gn_test_sender_key(const u8 *key, int rank, u8 *out);
void gn_test_ctx_free(struct gn_ctx *ctx);

/* Feed one packet from rank @from (or from nobody, -1) to @ctx. */
void gn_test_packet_in(struct gn_ctx *ctx, int from, const u8 *pkt,
		       size_t len);

/*
 * hooks.c: the session key of a run (GN_SEAL_KEY_LEN bytes), as an
 * insider holding the job @key derives it from what a rank wrote to @path
 * (GN_TEST_SESSION_FILE); waits up to 30 s for the file. 0, -ETIMEDOUT or
 * -EINVAL.
 */
int gn_test_session_key(const char *path, const u8 *key, u8 *out);

/*
 * fault.c: @tp behind GN_TEST_FAULTS, in place (nothing to do if it is
 * unset); -EINVAL for a bad spec, -errno for the files.
 */
int gn_fault_wrap(struct gn_transport *tp);

#endif /* GN_TESTLIB_H */
