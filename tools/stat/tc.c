// SPDX-License-Identifier: MIT
/*
 * tc.c - attach --dev and detach --dev: the tc programs on an interface's
 * clsact ingress and egress hooks, in any network namespace, and the
 * clsact qdisc, removed on detach only if this tool created it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "stat.h"
#include "gradnet_stat.skel.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

/* Runs before a loss injector on the same hook (gn-loss: prio 0x4e4c). */
#define GN_STAT_TC_HANDLE	0x6e67
#define GN_STAT_TC_PRIO		0x4e47

/* Enter network namespace @name (ip netns), keeping the mount namespace. */
static int enter_netns(const char *name)
{
	char path[PATH_MAX];
	int fd, err = 0;

	if (!name)
		return 0;
	snprintf(path, sizeof(path), "/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET)) {
		err = -errno;
		fprintf(stderr, "gradnet-stat: cannot enter network namespace %s: %s\n",
			name, strerror(errno));
	}
	if (fd >= 0)
		close(fd);
	return err;
}

static __u64 netns_cookie(void)
{
	socklen_t len = sizeof(__u64);
	__u64 c = 0;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd >= 0) {
		getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &c, &len);
		close(fd);
	}
	return c;
}

/* The index of --dev in the namespace of --netns, entered; or -errno. */
static int dev_index(const struct opts *o)
{
	int ifindex, err = enter_netns(o->netns);

	if (err)
		return err;
	ifindex = (int)if_nametoindex(o->dev);
	if (!ifindex) {
		fprintf(stderr, "gradnet-stat: no interface %s here\n", o->dev);
		return -ENODEV;
	}
	return ifindex;
}

/* The jobs of attach --dev --job into gn_tc_jobs, which all devices share. */
static int add_jobs(struct gradnet_stat_bpf *skel, const struct opts *o)
{
	struct gn_stat_job v;
	int i, err;

	for (i = 0; i < o->njobs; i++) {
		if (bpf_map__lookup_elem(skel->maps.gn_tc_jobs, &o->jobs[i],
					 sizeof(o->jobs[i]), &v, sizeof(v), 0))
			memset(&v, 0, sizeof(v));
		v.from |= GN_STAT_JOB_GIVEN;
		err = bpf_map__update_elem(skel->maps.gn_tc_jobs, &o->jobs[i],
					   sizeof(o->jobs[i]), &v, sizeof(v),
					   BPF_ANY);
		if (err) {
			fprintf(stderr, "gradnet-stat: cannot add job %llu to gn_tc_jobs: %s%s\n",
				(unsigned long long)o->jobs[i], strerror(-err),
				err == -E2BIG ? " (it holds 256 jobs: detach and attach again)" : "");
			return err;
		}
	}
	return 0;
}

int attach_tc(const struct opts *o)
{
	static const enum bpf_tc_attach_point dirs[] = { BPF_TC_INGRESS,
							 BPF_TC_EGRESS };
	struct gradnet_stat_bpf *skel;
	struct gn_stat_qdisc_key qk;
	int ifindex, err = 0, d;
	__u64 one = 1;

	ifindex = dev_index(o);
	if (ifindex < 0)
		return ifindex;
	err = check_kernel(KIND_TC);
	if (err)
		return err;
	qk.netns = netns_cookie();
	qk.ifindex = (__u64)ifindex;
	skel = open_load(KIND_TC, qk.netns, o);
	if (!skel)
		return -EINVAL;
	err = add_jobs(skel, o);
	for (d = 0; d < 2 && !err; d++) {
		LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
			    .attach_point = dirs[d]);
		LIBBPF_OPTS(bpf_tc_opts, to, .handle = GN_STAT_TC_HANDLE,
			    .priority = GN_STAT_TC_PRIO, .flags = BPF_TC_F_REPLACE);
		struct bpf_program *p = d ? skel->progs.gn_tc_egress :
					    skel->progs.gn_tc_ingress;

		/* One clsact qdisc holds both hooks: create it once. */
		err = d ? -EEXIST : bpf_tc_hook_create(&hook);
		if (err && err != -EEXIST) {
			fprintf(stderr, "gradnet-stat: cannot create the clsact qdisc of %s: %s%s\n",
				o->dev, strerror(-err), err == -EOPNOTSUPP ||
				err == -ENOENT ? " (the kernel lacks clsact: Linux 4.5, CONFIG_NET_SCH_INGRESS)" : "");
			break;
		}
		/* Ours if it did not exist: detach then removes it again. */
		if (!err && !d)
			err = bpf_map__update_elem(skel->maps.gn_tc_qdisc, &qk,
						   sizeof(qk), &one, sizeof(one),
						   BPF_ANY);
		if (err == -EEXIST)
			err = 0;
		to.prog_fd = bpf_program__fd(p);
		if (!err)
			err = bpf_tc_attach(&hook, &to);
		if (err)
			fprintf(stderr, "gradnet-stat: cannot attach to %s %s: %s\n",
				o->dev, d ? "egress" : "ingress", strerror(-err));
	}
	gradnet_stat_bpf__destroy(skel);
	if (!err)
		printf("attached to %s%s%s ingress and egress (tc handle %#x prio %#x), counting %s on %s\n",
		       o->dev, o->netns ? " in netns " : "", o->netns ? o->netns : "",
		       GN_STAT_TC_HANDLE, GN_STAT_TC_PRIO,
		       o->njobs ? "the jobs given and those the probes see" :
		       "the jobs the probes see",
		       o->nports ? "the ports given" : "the ports this host's ranks send from");
	return err;
}

/*
 * Remove the clsact qdisc of @ifindex if attach_tc created it (the map
 * gn_tc_qdisc says so), with whatever filters it still holds.
 */
static int remove_own_qdisc(const char *dev, int ifindex)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
		    .attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS);
	struct gn_stat_qdisc_key qk = { .netns = netns_cookie(),
					.ifindex = (__u64)ifindex };
	int fd = bpf_obj_get(pins.qdisc), err = 0;
	__u64 v;

	if (fd < 0)
		return 0;	/* nothing recorded: no qdisc of ours */
	if (!bpf_map_lookup_elem(fd, &qk, &v)) {
		err = bpf_tc_hook_destroy(&hook);
		if (err && err != -ENOENT)
			fprintf(stderr, "gradnet-stat: cannot remove the clsact qdisc of %s: %s\n",
				dev, strerror(-err));
		else
			err = bpf_map_delete_elem(fd, &qk) ? -errno : 0;
	}
	close(fd);
	return err;
}

int detach_tc(const struct opts *o)
{
	static const enum bpf_tc_attach_point dirs[] = { BPF_TC_INGRESS,
							 BPF_TC_EGRESS };
	int ifindex, d, err, ret = 0;

	ifindex = dev_index(o);
	if (ifindex < 0)
		return ifindex;
	for (d = 0; d < 2; d++) {
		LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
			    .attach_point = dirs[d]);
		LIBBPF_OPTS(bpf_tc_opts, to, .handle = GN_STAT_TC_HANDLE,
			    .priority = GN_STAT_TC_PRIO);

		err = bpf_tc_detach(&hook, &to);
		if (err && err != -ENOENT) {
			fprintf(stderr, "gradnet-stat: cannot detach from %s: %s\n",
				o->dev, strerror(-err));
			ret = err;
		}
	}
	err = remove_own_qdisc(o->dev, ifindex);
	return ret ? ret : err;
}
