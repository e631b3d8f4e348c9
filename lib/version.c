// SPDX-License-Identifier: MIT
/* version.c - the library's version, for callers that load it dynamically. */
#include <gradnet/gradnet.h>

/* gradnet.h's macros and meson.build's project version must agree. */
_Static_assert(GN_VERSION_MAJOR == GRADNET_BUILD_MAJOR &&
	       GN_VERSION_MINOR == GRADNET_BUILD_MINOR &&
	       GN_VERSION_PATCH == GRADNET_BUILD_PATCH,
	       "GN_VERSION_* in gradnet.h differ from meson.build's version");

const char *gn_version(void)
{
	return GRADNET_VERSION;
}

unsigned int gn_version_number(void)
{
	return GN_VERSION_NUMBER;
}
