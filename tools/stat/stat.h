/* SPDX-License-Identifier: MIT */
/*
 * stat.h - what the files of gradnet-stat share: the parsed command line,
 * the pin paths, the attach kinds, and each file's entry points. One file
 * per concern, as bpftool keeps one per subcommand.
 */
#ifndef GN_STAT_TOOL_H
#define GN_STAT_TOOL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "gradnet_stat.h"

struct bpf_program;
struct gradnet_stat_bpf;

/* Jobs or ports an option may list. */
#define OPT_LIST	16

struct opts {
	const char *lib, *dev, *netns;
	int pid;
	bool kmod, json, openmetrics;
	double interval;
	long count;
	long long tensor;		/* top and dump: only this */
	__u64 jobs[OPT_LIST];		/* attach --dev: count these; top, */
	int njobs;			/* dump: only these */
	__u64 ports[OPT_LIST];		/* attach --dev: on these ports */
	int nports;
};

/* pins.c: where the maps and links are pinned. */
struct stat_pins {
	char dir[PATH_MAX];
	char links[PATH_MAX + 8];
	char flows[PATH_MAX + 16];
	char wire[PATH_MAX + 16];
	char hist[PATH_MAX + 16];
	char qdisc[PATH_MAX + 16];
	char jobs[PATH_MAX + 16];
	char ports[PATH_MAX + 16];
	char refused[PATH_MAX + 16];
};

extern struct stat_pins pins;

void set_pin_dir(void);
int check_pin_dir(bool create);
int detach_all(void);

/* Which of the object's programs a load takes: those of one attach kind. */
enum prog_kind {
	KIND_USDT,	/* uprobes on the USDT probes */
	KIND_KMOD,	/* raw tracepoints of the module */
	KIND_TC,	/* clsact ingress and egress */
};

#define KIND_BIT(k)	(1 << (k))
#define KIND_ALL	(KIND_BIT(KIND_USDT) | KIND_BIT(KIND_KMOD) | KIND_BIT(KIND_TC))

/* probe.c: what the machine and its kernel must have. */
int check_env(void);
int check_kernel(enum prog_kind kind);

/* object.c: the BPF object. */
void quiet_libbpf(void);
struct gradnet_stat_bpf *open_load(enum prog_kind kind, __u64 netns,
				   const struct opts *o);

/* usdt.c, kmod.c, tc.c: the attach kinds. */
int attach_usdt(const struct opts *o);
int attach_kmod(void);
int detach_kmod(bool quiet);
int attach_tc(const struct opts *o);
int detach_tc(const struct opts *o);

/* maps.c: the pinned maps, read back. */
struct flow {
	struct gn_stat_key k;
	struct gn_stat_flow v;
};

struct wire {
	struct gn_stat_wire_key k;
	struct gn_stat_wire v;
};

struct refused {
	struct gn_stat_refused_key k;
	struct gn_stat_refused v;
};

struct tc_job {
	__u64 job;
	struct gn_stat_job v;
};

/* The step histograms, read from gn_step_hist: records of key and value. */
struct hists {
	char *rec;
	size_t n;
};

#define HIST_REC	(sizeof(struct gn_stat_hist_key) + sizeof(struct gn_stat_hist))

/*
 * What a dump shows: the flows, the wire counters, the step histograms,
 * what tc refused and the jobs it counts.
 */
struct stat_maps {
	struct flow *f;
	size_t nf;
	struct wire *w;
	size_t nw;
	struct hists h;
	struct refused *r;
	size_t nr;
	struct tc_job *j;
	size_t nj;
};

void *map_read(const char *pin, size_t ksz, size_t vsz, bool percpu,
	       int max_word, size_t *count);
struct flow *read_flows(size_t *count);
struct wire *read_wire(size_t *count);
int read_hists(struct hists *h);
int read_maps(struct stat_maps *m);
void free_maps(struct stat_maps *m);
int cmp_flow(const void *a, const void *b);
const struct flow *find_flow(const struct flow *f, size_t n,
			     const struct gn_stat_key *k);
struct refused *read_refused(size_t *count);
const char *phase_name(__u64 phase);
const char *refuse_name(__u64 reason);
const char *transport_name(__u64 t);

/* json.c, openmetrics.c, top.c: the views. */
int dump_json(void);
int dump_openmetrics(void);
int dump_text(const struct opts *o);
int top(const struct opts *o);

#endif /* GN_STAT_TOOL_H */
