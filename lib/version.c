// SPDX-License-Identifier: MIT
/* version.c - the library's version, for callers that load it dynamically. */
#include <gradnet/gradnet.h>

const char *gn_version(void)
{
	return GRADNET_VERSION;
}
