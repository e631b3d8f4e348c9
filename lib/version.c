// SPDX-License-Identifier: MIT
/* version.c - the library's version, for callers that load it dynamically. */
#include <gradnet/codec.h>

GN_EXPORT const char *gn_version(void);

const char *gn_version(void)
{
	return GRADNET_VERSION;
}
