// SPDX-License-Identifier: MIT
/*
 * usdt.c - attach --lib and --pid: one uprobe per gradnet probe site of
 * a library or program, each link pinned. libbpf's own USDT support is
 * not used because it hides the uprobe links of an attachment, and only
 * links can be pinned; so stapsdt.c reads the notes and the BPF cookie of
 * each uprobe tells the program which register holds each argument.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "stat.h"
#include "stapsdt.h"
#include "gradnet_stat.skel.h"

/*
 * The program of probe @site, or NULL. A probe that lacks its last
 * argument, the count (a library whose core does not coalesce events),
 * gets a cookie in which the count reads as 1: one hit, one event.
 */
static struct bpf_program *usdt_prog(struct gradnet_stat_bpf *s,
				     struct usdt_site *site)
{
	static const struct {
		const char *name;
		size_t off;
		int counted;	/* arguments, the last a count; 0: no count */
	} t[] = {
		{ "msg", offsetof(struct gradnet_stat_bpf, progs.gn_usdt_msg), 9 },
		{ "tx", offsetof(struct gradnet_stat_bpf, progs.gn_usdt_tx), 9 },
		{ "tx_ctl", offsetof(struct gradnet_stat_bpf, progs.gn_usdt_tx_ctl), 6 },
		{ "rx", offsetof(struct gradnet_stat_bpf, progs.gn_usdt_rx), 8 },
		{ "drop", offsetof(struct gradnet_stat_bpf, progs.gn_usdt_drop), 6 },
		{ "step", offsetof(struct gradnet_stat_bpf, progs.gn_usdt_step), 0 },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(*t); i++) {
		int last = t[i].counted - 1;

		if (strcmp(site->name, t[i].name))
			continue;
		if (t[i].counted && site->nargs == last) {
			site->cookie &= ~((__u64)31 << (5 * last));
			site->cookie |= (__u64)ARG_ONE << (5 * last);
		}
		return *(struct bpf_program **)((char *)s + t[i].off);
	}
	return NULL;
}

/* @s with anything unprintable as '?', for a message. */
static void printable(char *s)
{
	for (; *s; s++)
		if (*s < 0x20 || *s == 0x7f)
			*s = '?';
}

/*
 * The file of process @pid that holds gradnet probes (a library or its
 * executable), opened through /proc/PID/map_files/START-END: the very
 * file the process mapped, in whatever mount namespace it runs, not the
 * file its path names in ours. @shown gets the path /proc/PID/maps gives,
 * for messages.
 * Return: a descriptor, -ENOENT if no mapping has gradnet probes, or the
 * error of reading the maps.
 */
static int open_probed_file(int pid, char *shown, size_t len)
{
	struct usdt_site site;
	char maps[64], mf[96], why[STAPSDT_WHY], perms[5], *line = NULL;
	unsigned long start, end, inode;
	size_t cap = 0;
	int fd = -ENOENT, at;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	f = fopen(maps, "r");
	if (!f)
		return -errno;
	/* getline: a path of any length stays one line. */
	while (fd < 0 && getline(&line, &cap, f) > 0) {
		at = 0;
		if (sscanf(line, "%lx-%lx %4s %*x %*x:%*x %lu %n", &start, &end,
			   perms, &inode, &at) != 4 || !at || perms[2] != 'x' ||
		    !inode)
			continue;
		snprintf(mf, sizeof(mf), "/proc/%d/map_files/%lx-%lx", pid,
			 start, end);
		fd = open(mf, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (usdt_sites_fd(fd, &site, 1, why) > 0) {
			line[strcspn(line, "\n")] = 0;
			snprintf(shown, len, "%s", line + at);
			printable(shown);
			break;
		}
		close(fd);
		fd = -ENOENT;
	}
	free(line);
	fclose(f);
	return fd;
}

int attach_usdt(const struct opts *o)
{
	struct usdt_site sites[64];
	char path[PATH_MAX], self[64], tag[64], pin[2 * PATH_MAX];
	char why[STAPSDT_WHY];
	struct gradnet_stat_bpf *skel;
	struct stat st;
	int fd, n, i, err = 0, pinned = 0;

	if (o->lib) {
		snprintf(path, sizeof(path), "%s", o->lib);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, "gradnet-stat: cannot read %s: %s\n",
				path, strerror(errno));
			return -errno;
		}
	} else {
		fd = open_probed_file(o->pid, path, sizeof(path));
		if (fd == -ENOENT) {
			fprintf(stderr, "gradnet-stat: process %d maps no file with gradnet probes\n",
				o->pid);
			return fd;
		}
		if (fd < 0) {
			fprintf(stderr, "gradnet-stat: cannot read the mappings of process %d: %s\n",
				o->pid, strerror(-fd));
			return fd;
		}
	}
	n = usdt_sites_fd(fd, sites, 64, why);
	if (n < 0 || fstat(fd, &st)) {
		err = n < 0 ? n : -errno;
		fprintf(stderr, "gradnet-stat: cannot read %s: %s\n", path,
			n < 0 ? why : strerror(-err));
		goto out_close;
	}
	if (!n) {
		fprintf(stderr, "gradnet-stat: %s has no gradnet USDT probes\n", path);
		err = -ENOENT;
		goto out_close;
	}
	err = check_kernel(KIND_USDT);
	if (err)
		goto out_close;
	skel = open_load(KIND_USDT, 0, NULL);
	if (!skel) {
		err = -EINVAL;
		goto out_close;
	}
	/*
	 * The uprobes go on the file this descriptor holds, the one whose
	 * notes were read, whatever its path names by now.
	 */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	/* Names say what a link is for: pid (or all) and the file's inode. */
	snprintf(tag, sizeof(tag), "usdt-%s%d-%lx-%lx", o->pid > 0 ? "pid" : "all",
		 o->pid > 0 ? o->pid : 0, (unsigned long)st.st_dev,
		 (unsigned long)st.st_ino);
	for (i = 0; i < n; i++) {
		struct bpf_program *p = usdt_prog(skel, &sites[i]);
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .bpf_cookie = sites[i].cookie);
		struct bpf_link *l;

		if (!p)
			continue;	/* a probe of a newer library */
		l = bpf_program__attach_uprobe_opts(p, o->pid > 0 ? o->pid : -1,
						    self, (size_t)sites[i].off, &uo);
		if (!l) {
			err = -errno;
			fprintf(stderr, "gradnet-stat: cannot attach to probe %s in %s: %s\n",
				sites[i].name, path, strerror(-err));
			break;
		}
		snprintf(pin, sizeof(pin), "%s/%s-%s-%lx", pins.links, tag,
			 sites[i].name, sites[i].off);
		unlink(pin);
		err = bpf_link__pin(l, pin);
		bpf_link__destroy(l);	/* the pin holds it now */
		if (err) {
			fprintf(stderr, "gradnet-stat: cannot pin %s: %s\n", pin,
				strerror(-err));
			break;
		}
		pinned++;
	}
	gradnet_stat_bpf__destroy(skel);
	if (!err)
		printf("attached %d probe sites of %s%s%.0d, links in %s\n",
		       pinned, path, o->pid > 0 ? " in process " : "",
		       o->pid > 0 ? o->pid : 0, pins.links);
out_close:
	close(fd);
	return err;
}
