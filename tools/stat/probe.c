// SPDX-License-Identifier: MIT
/*
 * probe.c - what gradnet-stat needs from the machine (root, bpffs, kernel
 * BTF) and from the kernel for each attach kind, asked before anything is
 * loaded, so a missing feature is named with the Linux version that
 * brought it instead of surfacing as a verifier or attach error.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "stat.h"

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif

/* Why BPF cannot work here, said once, before anything is loaded. */
int check_env(void)
{
	struct statfs fs;

	if (geteuid() != 0) {
		fprintf(stderr, "gradnet-stat: needs root (CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN)\n");
		return -EPERM;
	}
	if (statfs("/sys/fs/bpf", &fs) || fs.f_type != BPF_FS_MAGIC) {
		fprintf(stderr, "gradnet-stat: no bpffs at /sys/fs/bpf: mount -t bpf bpf /sys/fs/bpf\n");
		return -ENOENT;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		fprintf(stderr, "gradnet-stat: the kernel has no BTF (/sys/kernel/btf/vmlinux): it needs CONFIG_DEBUG_INFO_BTF\n");
		return -ENOENT;
	}
	return 0;
}

/* The running kernel's version as 0xMMmmpp (4.17.0: 0x041100), 0 if unknown. */
static unsigned int kernel_version(char *rel, size_t len)
{
	unsigned int maj = 0, min = 0;
	struct utsname u;

	if (uname(&u) || sscanf(u.release, "%u.%u", &maj, &min) != 2)
		return 0;
	snprintf(rel, len, "%s", u.release);
	return maj << 16 | min << 8;
}

static int probe_percpu_hash(void)
{
	return libbpf_probe_bpf_map_type(BPF_MAP_TYPE_PERCPU_HASH, NULL);
}

static int probe_kprobe(void)
{
	return libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_KPROBE, NULL);
}

static int probe_attach_cookie(void)
{
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE,
				       BPF_FUNC_get_attach_cookie, NULL);
}

static int probe_raw_tp(void)
{
	return libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_RAW_TRACEPOINT, NULL);
}

static int probe_sched_cls(void)
{
	return libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_SCHED_CLS, NULL);
}

/*
 * What the programs of each attach kind need from the kernel: probed
 * where the kernel can be asked (libbpf's probes load a tiny program),
 * else read from the version (@since, 0xMMmm00) when nothing else tells.
 */
static const struct kernel_need {
	int kinds;			/* bit per enum prog_kind */
	const char *what;
	unsigned int since;
	int (*probe)(void);
} kernel_needs[] = {
	{ KIND_ALL, "BPF_MAP_TYPE_PERCPU_HASH maps (Linux 4.6)", 0x040600,
	  probe_percpu_hash },
	{ KIND_BIT(KIND_USDT), "BPF_PROG_TYPE_KPROBE programs on uprobes (Linux 4.1)",
	  0x040100, probe_kprobe },
	{ KIND_BIT(KIND_USDT), "bpf_get_attach_cookie() in uprobe programs and BPF perf links, which pin them (Linux 5.15)",
	  0x050f00, probe_attach_cookie },
	{ KIND_BIT(KIND_KMOD), "BPF_PROG_TYPE_RAW_TRACEPOINT programs (Linux 4.17)",
	  0x041100, probe_raw_tp },
	{ KIND_BIT(KIND_KMOD), "raw tracepoints of modules as pinnable BPF links (Linux 5.7)",
	  0x050700, NULL },
	{ KIND_BIT(KIND_TC), "BPF_PROG_TYPE_SCHED_CLS programs in direct-action mode (Linux 4.5)",
	  0x040500, probe_sched_cls },
	{ KIND_BIT(KIND_TC), "the clsact qdisc (Linux 4.5, CONFIG_NET_SCH_INGRESS)",
	  0x040500, NULL },
};

/*
 * Whether this kernel has what the programs of @kind need; if not, name
 * the first missing feature and the Linux version that brought it.
 */
int check_kernel(enum prog_kind kind)
{
	unsigned int ver;
	char rel[65] = "?";
	size_t i;
	int have;

	ver = kernel_version(rel, sizeof(rel));
	for (i = 0; i < sizeof(kernel_needs) / sizeof(*kernel_needs); i++) {
		const struct kernel_need *n = &kernel_needs[i];

		if (!(n->kinds & KIND_BIT(kind)))
			continue;
		have = n->probe ? n->probe() : !ver || ver >= n->since;
		if (have == 1)
			continue;
		if (have < 0)
			fprintf(stderr, "gradnet-stat: cannot ask the kernel (%s) whether it has %s: %s\n",
				rel, n->what, strerror(-have));
		else
			fprintf(stderr, "gradnet-stat: this kernel (%s) lacks %s\n",
				rel, n->what);
		return have < 0 ? have : -EOPNOTSUPP;
	}
	return 0;
}
