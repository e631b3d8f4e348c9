// SPDX-License-Identifier: MIT
/*
 * pmix_absent.c - the launcher exchange of a library built without
 * libpmix: there is never a PMIx server to use.
 */
#include <errno.h>
#include <stdio.h>

#include "launcher.h"

const bool gn_pmix_built;

bool gn_pmix_present(void)
{
	return false;
}

int gn_pmix_exchange(int rank, int world, const char *mine, char **list,
		     char *msg, size_t len)
{
	(void)rank;
	(void)world;
	(void)mine;
	*list = NULL;
	snprintf(msg, len, "this libgradnet was built without PMIx");
	return -EOPNOTSUPP;
}
