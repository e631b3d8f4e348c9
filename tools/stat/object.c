// SPDX-License-Identifier: MIT
/*
 * object.c - the BPF object (bpf/gradnet_stat.bpf.c, through its
 * skeleton): opened with its maps pinned by name under the pin
 * directory, so every attach shares them, and loaded with the programs
 * of one attach kind only.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "stat.h"
#include "gradnet_stat.skel.h"

static enum prog_kind prog_kind(const struct bpf_program *p)
{
	switch (bpf_program__type(p)) {
	case BPF_PROG_TYPE_SCHED_CLS:
		return KIND_TC;
	case BPF_PROG_TYPE_RAW_TRACEPOINT:
		return KIND_KMOD;
	default:
		return KIND_USDT;
	}
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	if (level == LIBBPF_DEBUG && !getenv("GN_STAT_DEBUG"))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* libbpf's debug messages only when GN_STAT_DEBUG is set. */
void quiet_libbpf(void)
{
	libbpf_set_print(libbpf_quiet);
}

/*
 * The skeleton, its maps pinned by name under GN_STAT_PIN_DIR, loaded;
 * the tc programs with the cookie of their device's network namespace
 * and the ports of attach --dev --port (@o).
 */
struct gradnet_stat_bpf *open_load(enum prog_kind kind, __u64 netns,
				   const struct opts *o)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .pin_root_path = pins.dir);
	struct gradnet_stat_bpf *skel;
	struct bpf_program *p;
	int err, i;

	skel = gradnet_stat_bpf__open_opts(&oo);
	if (!skel) {
		fprintf(stderr, "gradnet-stat: cannot open the BPF object: %s\n",
			strerror(errno));
		return NULL;
	}
	bpf_object__for_each_program(p, skel->obj)
		bpf_program__set_autoload(p, prog_kind(p) == kind);
	skel->rodata->gn_netns_cookie = netns;
	for (i = 0; o && i < o->nports; i++)
		skel->rodata->gn_ports[i] = o->ports[i];
	skel->rodata->gn_nports = o ? (__u32)o->nports : 0;
	err = gradnet_stat_bpf__load(skel);
	if (err) {
		fprintf(stderr, "gradnet-stat: cannot load the BPF programs: %s%s\n",
			strerror(-err), err == -EINVAL ?
			" (a kernel older than 5.15 lacks BPF cookies and perf links)" : "");
		gradnet_stat_bpf__destroy(skel);
		return NULL;
	}
	return skel;
}
