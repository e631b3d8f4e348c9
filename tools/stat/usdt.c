// SPDX-License-Identifier: MIT
/*
 * usdt.c - attach --lib and --pid: one uprobe per gradnet probe site of
 * a library or program, each link pinned. libbpf's own USDT support is
 * not used because it hides the uprobe links of an attachment, and only
 * links can be pinned; so stapsdt.c reads the notes and the BPF cookie of
 * each uprobe tells the program which register holds each argument.
 */
#include <errno.h>
#include <stdio.h>
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

/* The file of process @pid that holds gradnet probes: a library or its exe. */
static int find_probed_file(int pid, char *path, size_t len)
{
	struct usdt_site site;
	char maps[64], line[PATH_MAX + 128];
	FILE *f;
	int found = 0;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	f = fopen(maps, "r");
	if (!f)
		return -errno;
	while (!found && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');

		if (!p || !strstr(line, " r-xp "))
			continue;
		p[strcspn(p, "\n")] = 0;
		if (usdt_sites(p, &site, 1) > 0) {
			snprintf(path, len, "%s", p);
			found = 1;
		}
	}
	fclose(f);
	return found ? 0 : -ENOENT;
}

int attach_usdt(const struct opts *o)
{
	struct usdt_site sites[64];
	char path[PATH_MAX], tag[64], pin[2 * PATH_MAX];
	struct gradnet_stat_bpf *skel;
	struct stat st;
	int n, i, err = 0, pinned = 0;

	if (o->lib) {
		snprintf(path, sizeof(path), "%s", o->lib);
	} else if (find_probed_file(o->pid, path, sizeof(path))) {
		fprintf(stderr, "gradnet-stat: process %d maps no file with gradnet probes\n",
			o->pid);
		return -ENOENT;
	}
	n = usdt_sites(path, sites, 64);
	if (n < 0 || stat(path, &st)) {
		fprintf(stderr, "gradnet-stat: cannot read %s: %s\n", path,
			strerror(n < 0 ? -n : errno));
		return n < 0 ? n : -errno;
	}
	if (!n) {
		fprintf(stderr, "gradnet-stat: %s has no gradnet USDT probes\n", path);
		return -ENOENT;
	}
	err = check_kernel(KIND_USDT);
	if (err)
		return err;
	skel = open_load(KIND_USDT, 0);
	if (!skel)
		return -EINVAL;
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
						    path, (size_t)sites[i].off, &uo);
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
	return err;
}
