// SPDX-License-Identifier: MIT
/*
 * gn-loss.c - attach, inspect and detach the tc loss injector (loss.bpf.c).
 *
 *   gn-loss attach --dev DEV [--ingress|--egress] --ppm N [--spread]
 *                  --ports LO[-HI]
 *   gn-loss stats  --dev DEV [--ingress|--egress]
 *   gn-loss detach --dev DEV [--ingress|--egress]
 *
 * The program stays attached after this process exits, held by its tc
 * filter. Nothing is pinned: stats and detach find the filter by its fixed
 * handle and priority, and the maps through the program's map ids, so the
 * tool works the same under `ip netns exec`. Direction defaults to egress
 * for attach and to both for stats and detach. --spread drops one packet
 * in each run of 10^6 / N instead of each with probability N / 10^6
 * (loss.h): the same rate, but a flow is sure to lose some.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "loss.h"
#include "loss.skel.h"

/* Where our filter sits in the clsact hook; other filters keep theirs. */
#define GN_LOSS_TC_HANDLE	0x6e6c
#define GN_LOSS_TC_PRIO		0x4e4c

#define DIR_INGRESS	(1 << 0)
#define DIR_EGRESS	(1 << 1)

/* Set around calls whose failure is an expected answer, not an error. */
static bool libbpf_quiet;

static int libbpf_log(enum libbpf_print_level level, const char *fmt,
		      va_list ap)
{
	if (libbpf_quiet || level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

struct gn_loss_args {
	const char *dev;
	int ifindex;
	int dirs;		/* DIR_* */
	__u64 ppm;
	__u64 port_lo;
	__u64 port_hi;
	bool have_ppm;
	bool have_ports;
	bool spread;
};

/* What a query finds about one attached filter. */
struct gn_loss_found {
	__u32 prog_id;
	int conf_fd;
	int count_fd;
	struct gn_loss_cfg cfg;
};

static const char *dir_name(int dir)
{
	return dir == DIR_INGRESS ? "ingress" : "egress";
}

static void tc_hook_init(struct bpf_tc_hook *hook, int ifindex, int dir)
{
	memset(hook, 0, sizeof(*hook));
	hook->sz = sizeof(*hook);
	hook->ifindex = ifindex;
	hook->attach_point = dir == DIR_INGRESS ? BPF_TC_INGRESS : BPF_TC_EGRESS;
}

static void tc_opts_init(struct bpf_tc_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->sz = sizeof(*opts);
	opts->handle = GN_LOSS_TC_HANDLE;
	opts->priority = GN_LOSS_TC_PRIO;
}

static void found_close(struct gn_loss_found *f)
{
	if (f->conf_fd >= 0)
		close(f->conf_fd);
	if (f->count_fd >= 0)
		close(f->count_fd);
	f->conf_fd = -1;
	f->count_fd = -1;
}

/* Open map @id if its name is @name; return its fd, -ENOENT or -errno. */
static int map_open_named(__u32 id, const char *name)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	int fd;

	fd = bpf_map_get_fd_by_id(id);
	if (fd < 0)
		return -errno;
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len) ||
	    strcmp(info.name, name)) {
		close(fd);
		return -ENOENT;
	}
	return fd;
}

/*
 * tc_find() - look for our filter on @ifindex in direction @dir.
 * Return: 0 with @f filled (caller closes with found_close()), -ENOENT if
 * there is none, or another negative errno.
 */
static int tc_find(int ifindex, int dir, struct gn_loss_found *f)
{
	__u32 map_ids[8], nr_maps, len, key = 0, i;
	struct bpf_prog_info info;
	struct bpf_tc_hook hook;
	struct bpf_tc_opts opts;
	int prog_fd, fd, err;

	f->conf_fd = -1;
	f->count_fd = -1;
	tc_hook_init(&hook, ifindex, dir);
	tc_opts_init(&opts);
	libbpf_quiet = true;
	err = bpf_tc_query(&hook, &opts);
	libbpf_quiet = false;
	/* No clsact qdisc at all reads as -EINVAL. */
	if (err == -ENOENT || err == -EINVAL)
		return -ENOENT;
	if (err)
		return err;
	f->prog_id = opts.prog_id;

	prog_fd = bpf_prog_get_fd_by_id(opts.prog_id);
	if (prog_fd < 0)
		return -errno;
	memset(&info, 0, sizeof(info));
	info.nr_map_ids = sizeof(map_ids) / sizeof(map_ids[0]);
	info.map_ids = (__u64)(unsigned long)map_ids;
	len = sizeof(info);
	err = bpf_obj_get_info_by_fd(prog_fd, &info, &len) ? -errno : 0;
	close(prog_fd);
	if (err)
		return err;
	if (strcmp(info.name, "gn_loss"))
		return -ENOENT;
	nr_maps = info.nr_map_ids < sizeof(map_ids) / sizeof(map_ids[0]) ?
		  info.nr_map_ids : sizeof(map_ids) / sizeof(map_ids[0]);

	for (i = 0; i < nr_maps; i++) {
		fd = map_open_named(map_ids[i], "gn_loss_conf");
		if (fd >= 0) {
			f->conf_fd = fd;
			continue;
		}
		fd = map_open_named(map_ids[i], "gn_loss_count");
		if (fd >= 0)
			f->count_fd = fd;
	}
	if (f->conf_fd < 0 || f->count_fd < 0) {
		err = -ENOENT;
		goto out_close;
	}
	if (bpf_map_lookup_elem(f->conf_fd, &key, &f->cfg)) {
		err = -errno;
		goto out_close;
	}
	return 0;

out_close:
	found_close(f);
	return err;
}

/* Sum the per-CPU counters of @count_fd into @sum. */
static int stats_read(int count_fd, struct gn_loss_stats *sum)
{
	struct gn_loss_stats *percpu;
	__u32 key = 0;
	int ncpus, cpu, err = 0;

	ncpus = libbpf_num_possible_cpus();
	if (ncpus < 0)
		return ncpus;
	percpu = calloc(ncpus, sizeof(*percpu));
	if (!percpu)
		return -ENOMEM;
	if (bpf_map_lookup_elem(count_fd, &key, percpu)) {
		err = -errno;
		goto out_free;
	}
	memset(sum, 0, sizeof(*sum));
	for (cpu = 0; cpu < ncpus; cpu++) {
		sum->seen += percpu[cpu].seen;
		sum->dropped += percpu[cpu].dropped;
		sum->seen_bytes += percpu[cpu].seen_bytes;
		sum->dropped_bytes += percpu[cpu].dropped_bytes;
		sum->seen_segs += percpu[cpu].seen_segs;
		sum->dropped_segs += percpu[cpu].dropped_segs;
	}
out_free:
	free(percpu);
	return err;
}

static int cmd_attach(const struct gn_loss_args *a)
{
	int dir = a->dirs == DIR_INGRESS ? DIR_INGRESS : DIR_EGRESS;
	struct gn_loss_cfg cfg = {
		.ppm = a->ppm, .port_lo = a->port_lo, .port_hi = a->port_hi,
	};
	struct gn_loss_found old;
	struct bpf_tc_hook hook;
	struct bpf_tc_opts opts;
	struct loss_bpf *skel;
	bool created = false;
	__u32 key = 0;
	int err;

	if (a->dirs == (DIR_INGRESS | DIR_EGRESS)) {
		fprintf(stderr, "gn-loss: attach takes one direction\n");
		return -EINVAL;
	}
	if (a->spread) {
		ssize_t r = getrandom(&cfg.seed, sizeof(cfg.seed), 0);

		cfg.spread = GN_LOSS_PPM_MAX / a->ppm;
		if (r != (ssize_t)sizeof(cfg.seed)) {
			err = r < 0 ? -errno : -EIO;
			goto out;
		}
	}
	tc_hook_init(&hook, a->ifindex, dir);
	libbpf_quiet = true;
	err = bpf_tc_hook_create(&hook);
	libbpf_quiet = false;
	if (!err)
		created = true;
	else if (err != -EEXIST)
		goto out;
	if (created) {
		cfg.flags |= GN_LOSS_F_OWN_HOOK;
	} else {
		/* Ownership of the qdisc passes from whichever filter had it. */
		if (!tc_find(a->ifindex, dir, &old)) {
			cfg.flags |= old.cfg.flags & GN_LOSS_F_OWN_HOOK;
			found_close(&old);
		}
		if (!tc_find(a->ifindex, dir ^ (DIR_INGRESS | DIR_EGRESS), &old)) {
			cfg.flags |= old.cfg.flags & GN_LOSS_F_OWN_HOOK;
			found_close(&old);
		}
	}

	skel = loss_bpf__open_and_load();
	if (!skel) {
		err = -errno;
		goto out_hook;
	}
	if (bpf_map__update_elem(skel->maps.gn_loss_conf, &key, sizeof(key),
				 &cfg, sizeof(cfg), BPF_ANY)) {
		err = -errno;
		goto out_destroy;
	}
	tc_opts_init(&opts);
	opts.prog_fd = bpf_program__fd(skel->progs.gn_loss);
	opts.flags = BPF_TC_F_REPLACE;
	err = bpf_tc_attach(&hook, &opts);
	if (err)
		goto out_destroy;
	printf("attached %s %s prog_id %u ppm %llu spread %llu ports %llu-%llu\n",
	       a->dev, dir_name(dir), opts.prog_id,
	       (unsigned long long)cfg.ppm, (unsigned long long)cfg.spread,
	       (unsigned long long)cfg.port_lo,
	       (unsigned long long)cfg.port_hi);

out_destroy:
	/* The tc filter holds its own reference on the program. */
	loss_bpf__destroy(skel);
out_hook:
	if (err && created) {
		hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
		bpf_tc_hook_destroy(&hook);
	}
out:
	if (err)
		fprintf(stderr, "gn-loss: attach %s: %s\n", a->dev, strerror(-err));
	return err;
}

static int cmd_stats(const struct gn_loss_args *a)
{
	struct gn_loss_stats st;
	struct gn_loss_found f;
	int dir, err, found = 0;

	for (dir = DIR_INGRESS; dir <= DIR_EGRESS; dir <<= 1) {
		if (!(a->dirs & dir))
			continue;
		err = tc_find(a->ifindex, dir, &f);
		if (err == -ENOENT)
			continue;
		if (err)
			goto out_err;
		err = stats_read(f.count_fd, &st);
		found_close(&f);
		if (err)
			goto out_err;
		found++;
		printf("{\"dev\":\"%s\",\"dir\":\"%s\",\"prog_id\":%u,"
		       "\"ppm\":%llu,\"spread\":%llu,"
		       "\"port_lo\":%llu,\"port_hi\":%llu,"
		       "\"seen\":%llu,\"dropped\":%llu,"
		       "\"seen_bytes\":%llu,\"dropped_bytes\":%llu,"
		       "\"seen_segs\":%llu,\"dropped_segs\":%llu}\n",
		       a->dev, dir_name(dir), f.prog_id,
		       (unsigned long long)f.cfg.ppm,
		       (unsigned long long)f.cfg.spread,
		       (unsigned long long)f.cfg.port_lo,
		       (unsigned long long)f.cfg.port_hi,
		       (unsigned long long)st.seen,
		       (unsigned long long)st.dropped,
		       (unsigned long long)st.seen_bytes,
		       (unsigned long long)st.dropped_bytes,
		       (unsigned long long)st.seen_segs,
		       (unsigned long long)st.dropped_segs);
	}
	if (!found) {
		fprintf(stderr, "gn-loss: nothing attached to %s\n", a->dev);
		return -ENOENT;
	}
	return 0;

out_err:
	fprintf(stderr, "gn-loss: stats %s %s: %s\n", a->dev, dir_name(dir),
		strerror(-err));
	return err;
}

static int cmd_detach(const struct gn_loss_args *a)
{
	struct gn_loss_found f;
	struct bpf_tc_hook hook;
	struct bpf_tc_opts opts;
	bool own = false, left = false;
	int dir, err, detached = 0;

	for (dir = DIR_INGRESS; dir <= DIR_EGRESS; dir <<= 1) {
		err = tc_find(a->ifindex, dir, &f);
		if (err == -ENOENT)
			continue;
		if (err)
			goto out_err;
		found_close(&f);
		if (!(a->dirs & dir)) {
			left = true;
			continue;
		}
		if (f.cfg.flags & GN_LOSS_F_OWN_HOOK)
			own = true;
		tc_hook_init(&hook, a->ifindex, dir);
		tc_opts_init(&opts);
		err = bpf_tc_detach(&hook, &opts);
		if (err)
			goto out_err;
		detached++;
		printf("detached %s %s\n", a->dev, dir_name(dir));
	}
	if (!detached)
		printf("nothing attached to %s\n", a->dev);
	/* A filter left in the other direction inherits the qdisc. */
	if (own && left) {
		for (dir = DIR_INGRESS; dir <= DIR_EGRESS; dir <<= 1) {
			__u32 key = 0;

			if (a->dirs & dir || tc_find(a->ifindex, dir, &f))
				continue;
			f.cfg.flags |= GN_LOSS_F_OWN_HOOK;
			err = bpf_map_update_elem(f.conf_fd, &key, &f.cfg,
						  BPF_EXIST) ? -errno : 0;
			found_close(&f);
			if (err)
				goto out_err;
		}
	} else if (own) {
		tc_hook_init(&hook, a->ifindex, DIR_INGRESS);
		hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
		err = bpf_tc_hook_destroy(&hook);
		if (err)
			goto out_err;
		printf("removed clsact on %s\n", a->dev);
	}
	return 0;

out_err:
	fprintf(stderr, "gn-loss: detach %s %s: %s\n", a->dev, dir_name(dir),
		strerror(-err));
	return err;
}

static int parse_u64(const char *s, __u64 max, __u64 *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || v > max || *s == '-')
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_ports(const char *s, struct gn_loss_args *a)
{
	char buf[32], *dash;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	dash = strchr(buf, '-');
	if (dash)
		*dash++ = '\0';
	if (parse_u64(buf, 65535, &a->port_lo) ||
	    parse_u64(dash ? dash : buf, 65535, &a->port_hi) ||
	    a->port_lo > a->port_hi)
		return -EINVAL;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gn-loss attach --dev DEV [--ingress|--egress] --ppm N [--spread]\n"
		"                      --ports LO[-HI]\n"
		"       gn-loss stats  --dev DEV [--ingress|--egress]\n"
		"       gn-loss detach --dev DEV [--ingress|--egress]\n"
		"Drops N per million UDP packets whose source or destination port is in\n"
		"[LO, HI]; the tc filter stays after exit. --spread drops exactly one\n"
		"in each run of 1000000/N such packets, at a random place (N must\n"
		"divide 1000000). stats prints one JSON line per attached direction.\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "dev", required_argument, NULL, 'd' },
		{ "ingress", no_argument, NULL, 'i' },
		{ "egress", no_argument, NULL, 'e' },
		{ "ppm", required_argument, NULL, 'p' },
		{ "ports", required_argument, NULL, 'P' },
		{ "spread", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct gn_loss_args a = { 0 };
	const char *cmd;
	int c, err;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
		usage(stdout);
		return 0;
	}
	optind = 2;
	while ((c = getopt_long(argc, argv, "d:iep:P:sh", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			a.dev = optarg;
			break;
		case 'i':
			a.dirs |= DIR_INGRESS;
			break;
		case 'e':
			a.dirs |= DIR_EGRESS;
			break;
		case 'p':
			if (parse_u64(optarg, GN_LOSS_PPM_MAX, &a.ppm)) {
				fprintf(stderr, "gn-loss: bad --ppm %s\n", optarg);
				return 2;
			}
			a.have_ppm = true;
			break;
		case 'P':
			if (parse_ports(optarg, &a)) {
				fprintf(stderr, "gn-loss: bad --ports %s\n", optarg);
				return 2;
			}
			a.have_ports = true;
			break;
		case 's':
			a.spread = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || !a.dev) {
		usage(stderr);
		return 2;
	}
	a.ifindex = if_nametoindex(a.dev);
	if (!a.ifindex) {
		fprintf(stderr, "gn-loss: no device %s\n", a.dev);
		return 1;
	}
	if (!a.dirs)
		a.dirs = strcmp(cmd, "attach") ? DIR_INGRESS | DIR_EGRESS :
						 DIR_EGRESS;

	libbpf_set_print(libbpf_log);
	if (!strcmp(cmd, "attach")) {
		if (!a.have_ppm || !a.have_ports) {
			usage(stderr);
			return 2;
		}
		if (a.spread && (!a.ppm || GN_LOSS_PPM_MAX % a.ppm)) {
			fprintf(stderr, "gn-loss: --spread needs a --ppm that "
				"divides 1000000, not %llu\n",
				(unsigned long long)a.ppm);
			return 2;
		}
		err = cmd_attach(&a);
	} else if (!strcmp(cmd, "stats")) {
		err = cmd_stats(&a);
	} else if (!strcmp(cmd, "detach")) {
		err = cmd_detach(&a);
	} else {
		usage(stderr);
		return 2;
	}
	return err ? 1 : 0;
}
