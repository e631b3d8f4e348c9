// SPDX-License-Identifier: MIT
/*
 * maps.c - the pinned maps read back: every record of a map, per-CPU
 * values summed, and the names of the values the keys carry.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "stat.h"

/* The flow's last step, a word of struct gn_stat_flow that is no count. */
#define LAST_STEP_WORD ((int)(offsetof(struct gn_stat_flow, last_step) / 8))

/*
 * Every record of a pinned map, key then value; a per-CPU map's values are
 * summed over the CPUs, except the word at index @max_word (-1: none),
 * which is a latest value, not a count, and takes the CPUs' largest.
 */
void *map_read(const char *pin, size_t ksz, size_t vsz, bool percpu,
	       int max_word, size_t *count)
{
	int fd = bpf_obj_get(pin), ncpu = percpu ? libbpf_num_possible_cpus() : 1;
	size_t n = 0, cap = 0, rec = ksz + vsz;
	char key[128], next[128];
	__u64 *vals = NULL;
	char *out = NULL;
	void *prev = NULL;

	*count = 0;
	if (fd < 0) {
		fprintf(stderr, "gradnet-stat: %s: %s (not attached?)\n", pin,
			strerror(errno));
		return NULL;
	}
	vals = calloc((size_t)ncpu, vsz);
	if (!vals)
		goto out;
	while (!bpf_map_get_next_key(fd, prev, next)) {
		__u64 *sum;
		size_t w;
		int c;

		memcpy(key, next, ksz);
		prev = key;
		if (bpf_map_lookup_elem(fd, key, vals))
			continue;	/* deleted meanwhile */
		if (n == cap) {
			char *grown = realloc(out, (cap = cap * 2 + 64) * rec);

			if (!grown)
				break;
			out = grown;
		}
		memcpy(out + n * rec, key, ksz);
		sum = (__u64 *)(out + n * rec + ksz);
		memset(sum, 0, vsz);
		for (c = 0; c < ncpu; c++)
			for (w = 0; w < vsz / 8; w++) {
				__u64 v = vals[(size_t)c * (vsz / 8) + w];

				if ((int)w != max_word)
					sum[w] += v;
				else if (v > sum[w])
					sum[w] = v;
			}
		n++;
	}
out:
	free(vals);
	close(fd);
	*count = n;
	return out ? out : calloc(1, 1);
}

/*
 * The flows, their counts summed over the CPUs; last_step is no count but
 * the flow's latest step, so it takes the CPUs' largest.
 */
struct flow *read_flows(size_t *count)
{
	return map_read(pins.flows, sizeof(struct gn_stat_key),
			sizeof(struct gn_stat_flow), true, LAST_STEP_WORD, count);
}

const char *phase_name(__u64 phase)
{
	switch (phase) {
	case 0:
		return "reduce";
	case 1:
		return "gather";
	case GN_STAT_PHASE_CTL:
		return "ctl";
	case GN_STAT_PHASE_NONE:
		return "none";
	}
	return "?";
}

/* The reasons of GN_STAT_REFUSE_*, as the views name them. */
const char *refuse_name(__u64 reason)
{
	switch (reason) {
	case GN_STAT_REFUSE_HEADER:
		return "header";
	case GN_STAT_REFUSE_VERSION:
		return "version";
	case GN_STAT_REFUSE_JOB:
		return "job";
	case GN_STAT_REFUSE_PORT:
		return "port";
	case GN_STAT_REFUSE_FULL:
		return "full";
	}
	return "?";
}

const char *transport_name(__u64 t)
{
	switch (t) {
	case GN_STAT_TRANSPORT_UDP:
		return "udp";
	case GN_STAT_TRANSPORT_DPDK:
		return "dpdk";
	case GN_STAT_TRANSPORT_KMOD:
		return "kmod";
	}
	return "?";
}

struct wire *read_wire(size_t *count)
{
	return map_read(pins.wire, sizeof(struct gn_stat_wire_key),
			sizeof(struct gn_stat_wire), true, -1, count);
}

int read_hists(struct hists *h)
{
	h->rec = map_read(pins.hist, sizeof(struct gn_stat_hist_key),
			  sizeof(struct gn_stat_hist), false, -1, &h->n);
	return h->rec ? 0 : -ENOENT;
}

/*
 * A map that attaches of an older gradnet-stat did not pin reads as
 * empty: the maps it had are there, and the next attach pins the rest.
 */
static void *map_read_new(const char *pin, size_t ksz, size_t vsz,
			  bool percpu, size_t *count)
{
	if (access(pin, F_OK) && errno == ENOENT) {
		*count = 0;
		return calloc(1, 1);
	}
	return map_read(pin, ksz, vsz, percpu, -1, count);
}

/* What the tc programs refused, summed over the CPUs. */
struct refused *read_refused(size_t *count)
{
	return map_read_new(pins.refused, sizeof(struct gn_stat_refused_key),
			    sizeof(struct gn_stat_refused), true, count);
}

/* Every map a dump shows; -ENOENT (each missing pin named) if one is not there. */
int read_maps(struct stat_maps *m)
{
	m->f = read_flows(&m->nf);
	m->w = read_wire(&m->nw);
	m->r = read_refused(&m->nr);
	m->j = map_read_new(pins.jobs, sizeof(__u64), sizeof(struct gn_stat_job),
			    false, &m->nj);
	if (read_hists(&m->h) || !m->f || !m->w || !m->r || !m->j) {
		free_maps(m);
		return -ENOENT;
	}
	return 0;
}

void free_maps(struct stat_maps *m)
{
	free(m->f);
	free(m->w);
	free(m->h.rec);
	free(m->r);
	free(m->j);
	memset(m, 0, sizeof(*m));
}

int cmp_flow(const void *a, const void *b)
{
	const struct gn_stat_key *x = &((const struct flow *)a)->k;
	const struct gn_stat_key *y = &((const struct flow *)b)->k;

	return memcmp(x, y, sizeof(*x)) < 0 ? -1 : 1;
}

const struct flow *find_flow(const struct flow *f, size_t n,
			     const struct gn_stat_key *k)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!memcmp(&f[i].k, k, sizeof(*k)))
			return &f[i];
	return NULL;
}
