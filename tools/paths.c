// SPDX-License-Identifier: MIT
/*
 * paths.c - a tool's data and helper directories, from its own location
 * (see paths.h). The layout comes from meson: GN_BUILD_ROOT and
 * GN_SOURCE_ROOT for the build tree, GN_PREFIX, GN_BINDIR, GN_LIBEXECDIR
 * and GN_DATADIR (relative to the prefix, or absolute) once installed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "paths.h"

const char *const gn_sample_tensors[GN_SAMPLE_TENSORS] = {
	"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight",
	"fc3.bias",
};

/* @path ends with "/@suffix": cut it off and return true. */
static bool cut_suffix(char *path, const char *suffix)
{
	size_t n = strlen(path), k = strlen(suffix);

	if (k >= n || path[n - k - 1] != '/' || strcmp(path + n - k, suffix))
		return false;
	path[n - k - 1] = 0;
	return true;
}

/* @dir under @prefix unless it is absolute, then @tail. */
static void join(char *out, const char *prefix, const char *dir,
		 const char *tail)
{
	if (dir[0] == '/')
		snprintf(out, PATH_MAX, "%s%s", dir, tail);
	else
		snprintf(out, PATH_MAX, "%s/%s%s", prefix, dir, tail);
}

int gn_tool_paths(struct gn_tool_paths *p)
{
	char dir[PATH_MAX], prefix[PATH_MAX], *slash;
	const char *env = getenv("GN_DATA_DIR");
	size_t broot = strlen(GN_BUILD_ROOT);
	ssize_t n;

	n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	if (n <= 0)
		return -errno;
	dir[n] = 0;
	slash = strrchr(dir, '/');
	if (!slash)
		return -ENOENT;
	*slash = 0;

	p->build_tree = !strncmp(dir, GN_BUILD_ROOT, broot) &&
			(dir[broot] == '/' || !dir[broot]);
	if (p->build_tree) {
		snprintf(p->bindir, PATH_MAX, "%s/tools", GN_BUILD_ROOT);
		snprintf(p->libexec, PATH_MAX, "%s/tools", GN_SOURCE_ROOT);
		snprintf(p->data, PATH_MAX, "%s/data/gradients", GN_SOURCE_ROOT);
	} else {
		/* Installed: the prefix is what holds this binary's directory;
		 * a binary found nowhere known uses the configured prefix. */
		snprintf(prefix, sizeof(prefix), "%s", dir);
		if (!cut_suffix(prefix, GN_BINDIR) &&
		    !cut_suffix(prefix, GN_LIBEXECDIR "/gradnet"))
			snprintf(prefix, sizeof(prefix), "%s", GN_PREFIX);
		join(p->bindir, prefix, GN_BINDIR, "");
		join(p->libexec, prefix, GN_LIBEXECDIR, "/gradnet");
		join(p->data, prefix, GN_DATADIR, "/gradnet/gradients");
	}
	if (env && *env)
		snprintf(p->data, PATH_MAX, "%s", env);
	return 0;
}
