/* SPDX-License-Identifier: MIT */
/*
 * launcher.h - the launcher's key-value exchange that gn_ctx_open() uses
 * when it has no peer list: PMIx (pmix.c), or its stand-in in a library
 * built without libpmix (pmix_absent.c).
 */
#ifndef GN_LAUNCHER_H
#define GN_LAUNCHER_H

#include "driver.h"

/* Was the library built with PMIx? */
extern const bool gn_pmix_built GN_HIDDEN;

/* Does the environment name a PMIx server (the launcher started us)? */
bool gn_pmix_present(void) GN_HIDDEN;

/*
 * gn_pmix_exchange() - every rank's address through the launcher
 * @rank, @world: this rank and the job's size, checked against PMIx's
 * @mine: this rank's "host:port"
 * @list: out, "host:port,..." in rank order, malloc'd
 * @msg, @len: why it failed
 *
 * Puts @mine under a key of this process's next context, commits,
 * waits in a fence with every rank of the job, then reads each rank's.
 * Return: 0 or -errno with @msg.
 */
int gn_pmix_exchange(int rank, int world, const char *mine, char **list,
		     char *msg, size_t len) GN_HIDDEN;

#endif /* GN_LAUNCHER_H */
