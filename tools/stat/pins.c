// SPDX-License-Identifier: MIT
/*
 * pins.c - the pin directory of gradnet-stat: where the maps and links
 * are pinned, so the counting goes on after the tool exits, and the
 * detach that unpins them all.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
	snprintf(pins.jobs, sizeof(pins.jobs), "%s/gn_tc_jobs", pins.dir);
	snprintf(pins.ports, sizeof(pins.ports), "%s/gn_tc_ports", pins.dir);
	snprintf(pins.refused, sizeof(pins.refused), "%s/gn_tc_refused", pins.dir);
}

/*
 * Whether a directory above the pin directory can be trusted: only root
 * or this user may change it, or, if others may write to it, the sticky
 * bit keeps them from renaming or deleting what they do not own (bpffs
 * is mounted 1777 unless mode= says otherwise).
 */
static int check_ancestor(const char *path, const struct stat *st)
{
	uid_t me = geteuid();

	if (S_ISLNK(st->st_mode)) {
		fprintf(stderr, "gradnet-stat: %s, on the way to the pin directory %s, is a symbolic link: give GN_STAT_PIN_DIR a path without links\n",
			path, pins.dir);
		return -ELOOP;
	}
	if (!S_ISDIR(st->st_mode)) {
		fprintf(stderr, "gradnet-stat: %s, on the way to the pin directory %s, is not a directory\n",
			path, pins.dir);
		return -ENOTDIR;
	}
	if (st->st_uid != 0 && st->st_uid != me) {
		fprintf(stderr, "gradnet-stat: %s, above the pin directory, is owned by uid %u, who can replace the pin directory: set GN_STAT_PIN_DIR under a directory only root can change\n",
			path, (unsigned int)st->st_uid);
		return -EPERM;
	}
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX)) {
		fprintf(stderr, "gradnet-stat: %s, above the pin directory, has mode %04o: others can write to it and, without the sticky bit, rename the pin directory away and put theirs in its place: chmod +t %s, or set GN_STAT_PIN_DIR elsewhere\n",
			path, (unsigned int)(st->st_mode & 07777), path);
		return -EPERM;
	}
	return 0;
}

/*
 * Whether a pin directory can be trusted: a directory (not a symbolic
 * link) of this user's that nobody else may enter, so nobody else can
 * read, delete or replace a pin in it.
 */
static int check_own(const char *path, const struct stat *st)
{
	uid_t me = geteuid();

	if (S_ISLNK(st->st_mode)) {
		fprintf(stderr, "gradnet-stat: %s is a symbolic link, and pins must not go where someone else points: remove it (rm %s) and run again, or set GN_STAT_PIN_DIR to a directory of your own\n",
			path, path);
		return -ELOOP;
	}
	if (!S_ISDIR(st->st_mode)) {
		fprintf(stderr, "gradnet-stat: %s is not a directory: remove it, or set GN_STAT_PIN_DIR elsewhere\n",
			path);
		return -ENOTDIR;
	}
	if (st->st_uid != me) {
		fprintf(stderr, "gradnet-stat: %s is owned by uid %u, not by this user (uid %u): whoever made it can read, delete or replace the pins in it. Check what it holds, remove it (rm -r %s) and run again, or set GN_STAT_PIN_DIR to a directory of your own\n",
			path, (unsigned int)st->st_uid, (unsigned int)me, path);
		return -EPERM;
	}
	if ((st->st_mode & 07777) != 0700) {
		fprintf(stderr, "gradnet-stat: %s has mode %04o, not 0700: others could enter it and read or replace the pins. Check what it holds, then chmod 0700 %s\n",
			path, (unsigned int)(st->st_mode & 07777), path);
		return -EPERM;
	}
	return 0;
}

/*
 * Open @name in directory @at without following a symbolic link, and
 * stat what was opened: what is checked is what is then used, whatever
 * someone renames meanwhile. Return: an O_PATH descriptor, or -errno.
 */
static int open_nofollow(int at, const char *name, struct stat *st)
{
	int fd = openat(at, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, st)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/*
 * Directory @name in @at, made (mode 0700 whatever the umask) if @create
 * and missing, then checked by check_own(). Return: 0, -ENOENT if it is
 * missing and not to be made, else -errno after saying what is wrong.
 */
static int own_dir(int at, const char *name, const char *path, bool create)
{
	bool made = false;
	struct stat st;
	int fd, dfd, err;

	if (create) {
		if (!mkdirat(at, name, 0700))
			made = true;
		else if (errno != EEXIST)
			goto out_errno;
	}
	fd = open_nofollow(at, name, &st);
	if (fd == -ENOENT && !create)
		return -ENOENT;
	if (fd < 0) {
		errno = -fd;
		goto out_errno;
	}
	err = 0;
	if (made && S_ISDIR(st.st_mode)) {
		/* A real descriptor of the same directory, for fchmod. */
		dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0 || fchmod(dfd, 0700) || fstat(dfd, &st))
			err = -errno;
		if (dfd >= 0)
			close(dfd);
	}
	close(fd);
	if (err) {
		errno = -err;
		goto out_errno;
	}
	return check_own(path, &st);
out_errno:
	fprintf(stderr, "gradnet-stat: pin directory %s: %s\n", path,
		strerror(errno));
	return -errno;
}

/*
 * The pin directory and its links/, checked before anything is pinned
 * in them, read from them or unpinned: every directory above is walked
 * from / without following links and must be one that only root (or
 * this user) can change, and the two must be this user's, mode 0700. On
 * a bpffs mounted 1777, another user could otherwise make the directory
 * first, or plant a symbolic link, and read, delete or replace the pins.
 * Once checked, no one but root can change what the paths name, so the
 * pins are then made by path. @create makes what is missing (attach).
 *
 * Return: 0; -ENOENT if the pin directory does not exist and @create is
 * false; else -errno after a message that says what is wrong and how to
 * fix it.
 */
int check_pin_dir(bool create)
{
	char walked[PATH_MAX], part[PATH_MAX];
	const char *p = pins.dir, *last;
	struct stat st;
	int at, fd, err = 0;
	size_t n;

	if (p[0] != '/') {
		fprintf(stderr, "gradnet-stat: the pin directory %s is not an absolute path: set GN_STAT_PIN_DIR to one\n",
			p);
		return -EINVAL;
	}
	last = strrchr(p, '/') + 1;
	if (!*last || !strcmp(last, ".") || !strcmp(last, "..")) {
		fprintf(stderr, "gradnet-stat: the pin directory %s must end in a name: set GN_STAT_PIN_DIR without a trailing /, . or ..\n",
			p);
		return -EINVAL;
	}
	at = open_nofollow(AT_FDCWD, "/", &st);
	if (at < 0)
		return at;
	err = check_ancestor("/", &st);
	while (!err) {
		while (*p == '/')
			p++;
		if (p == last)
			break;
		n = strcspn(p, "/");
		snprintf(part, sizeof(part), "%.*s", (int)n, p);
		p += n;
		/* The path up to here, for messages: a prefix of pins.dir. */
		snprintf(walked, sizeof(walked), "%.*s", (int)(p - pins.dir),
			 pins.dir);
		fd = open_nofollow(at, part, &st);
		if (fd < 0) {
			fprintf(stderr, "gradnet-stat: %s, on the way to the pin directory %s: %s\n",
				walked, pins.dir, strerror(-fd));
			err = fd;
			break;
		}
		close(at);
		at = fd;
		err = check_ancestor(walked, &st);
	}
	if (!err)
		err = own_dir(at, last, pins.dir, create);
	close(at);
	if (err)
		return err;
	at = open(pins.dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (at < 0)
		return -errno;
	err = own_dir(at, "links", pins.links, create);
	close(at);
	/* A pin directory without links/ is one that detach half removed. */
	return err == -ENOENT ? 0 : err;
}

/* Unpin every link and map this tool pinned, then their directories. */
int detach_all(void)
{
	const char *const maps[] = { pins.flows, pins.wire, pins.hist,
				     pins.qdisc, pins.jobs, pins.ports,
				     pins.refused };
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
