// SPDX-License-Identifier: MIT
/*
 * pins.c - the pin directory of gradnet-stat: where the maps and links
 * are pinned, so the counting goes on after the tool exits, and the
 * detach that unpins them all.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "stat.h"

struct stat_pins pins;

/*
 * Where the pins go: GN_STAT_PIN_DIR, or the directory the environment
 * variable of that name gives (tests use their own, so they never touch
 * an operator's).
 */
void set_pin_dir(void)
{
	const char *d = getenv("GN_STAT_PIN_DIR");

	snprintf(pins.dir, sizeof(pins.dir), "%s", d && *d ? d : GN_STAT_PIN_DIR);
	snprintf(pins.links, sizeof(pins.links), "%s/links", pins.dir);
	snprintf(pins.flows, sizeof(pins.flows), "%s/gn_flows", pins.dir);
	snprintf(pins.wire, sizeof(pins.wire), "%s/gn_wire", pins.dir);
	snprintf(pins.hist, sizeof(pins.hist), "%s/gn_step_hist", pins.dir);
	snprintf(pins.qdisc, sizeof(pins.qdisc), "%s/gn_tc_qdisc", pins.dir);
}

int mkdir_p(const char *dir)
{
	if (mkdir(dir, 0700) && errno != EEXIST) {
		fprintf(stderr, "gradnet-stat: mkdir %s: %s\n", dir, strerror(errno));
		return -errno;
	}
	return 0;
}

/* Unpin every link and map this tool pinned, then their directories. */
int detach_all(void)
{
	const char *const maps[] = { pins.flows, pins.wire, pins.hist,
				     pins.qdisc };
	char path[sizeof(pins.links) + 260];
	struct dirent *de;
	struct gn_stat_qdisc_key qk;
	int links = 0, err = 0, qfd;
	size_t i;
	DIR *dir;

	dir = opendir(pins.links);
	while (dir && (de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", pins.links, de->d_name);
		if (unlink(path)) {
			fprintf(stderr, "gradnet-stat: unlink %s: %s\n", path,
				strerror(errno));
			err = -errno;
		} else {
			links++;
		}
	}
	if (dir)
		closedir(dir);
	qfd = bpf_obj_get(pins.qdisc);
	if (qfd >= 0) {
		if (!bpf_map_get_next_key(qfd, NULL, &qk))
			fprintf(stderr, "gradnet-stat: clsact qdiscs this tool created stay (detach --dev first to remove them)\n");
		close(qfd);
	}
	for (i = 0; i < sizeof(maps) / sizeof(*maps); i++)
		if (unlink(maps[i]) && errno != ENOENT) {
			fprintf(stderr, "gradnet-stat: unlink %s: %s\n", maps[i],
				strerror(errno));
			err = -errno;
		}
	if ((rmdir(pins.links) && errno != ENOENT) ||
	    (rmdir(pins.dir) && errno != ENOENT)) {
		fprintf(stderr, "gradnet-stat: %s holds files this tool did not pin\n",
			pins.dir);
		err = -ENOTEMPTY;
	}
	if (!err)
		printf("detached %d links, unpinned the maps\n", links);
	return err;
}
