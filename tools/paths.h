/* SPDX-License-Identifier: MIT */
/*
 * paths.h - where a tool finds its data and helpers: in the source tree
 * when it runs from the build tree, else next to where it is installed.
 */
#ifndef GN_TOOL_PATHS_H
#define GN_TOOL_PATHS_H

#include <limits.h>
#include <stdbool.h>

struct gn_tool_paths {
	bool build_tree;		/* running from the build tree */
	char bindir[PATH_MAX];		/* gradnet-rank and the other tools */
	char libexec[PATH_MAX];		/* helper scripts and programs */
	char data[PATH_MAX];		/* the gradient samples */
};

/*
 * gn_tool_paths() - find them from /proc/self/exe
 *
 * An installed tool finds its prefix by removing the bindir (or
 * libexecdir/gradnet) it sits in from its own path, so a tree installed
 * with DESTDIR, or moved whole, still works. GN_DATA_DIR, if set,
 * overrides the data directory.
 *
 * Return: 0, or -errno if the executable's path is unknown.
 */
int gn_tool_paths(struct gn_tool_paths *p);

/*
 * The gradient samples' tensors, in the model's order (the same in
 * mlp-digits and mlp-small-seq), and the steady-state run of
 * mlp-small-seq: GN_SEQ_STEPS steps from GN_SEQ_FIRST.
 */
#define GN_SAMPLE_TENSORS 6
#define GN_SEQ_FIRST 200
#define GN_SEQ_STEPS 48
extern const char *const gn_sample_tensors[GN_SAMPLE_TENSORS];

#endif /* GN_TOOL_PATHS_H */
