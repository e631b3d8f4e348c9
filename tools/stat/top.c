// SPDX-License-Identifier: MIT
/*
 * top.c - top and the plain dump: one line per flow, rates over the
 * interval (or totals), the compression ratio, bits per value, the share
 * of retransmissions, drops, steps and the step latency quantiles.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "stat.h"

/* Whether --job lists @job, or lists none. */
static bool job_wanted(const struct opts *o, __u64 job)
{
	int i;

	for (i = 0; i < o->njobs; i++)
		if (o->jobs[i] == job)
			return true;
	return !o->njobs;
}

static void rank_text(char *buf, size_t len, __u64 r)
{
	if (r == GN_STAT_RANK_ALL)
		snprintf(buf, len, "all");
	else if (r == GN_STAT_RANK_NONE)
		snprintf(buf, len, "?");
	else
		snprintf(buf, len, "%llu", (unsigned long long)r);
}

/*
 * Quantile @q of the step latency of @rank on (@job, @tensor, @transport),
 * in milliseconds: the upper bound of the bucket where the cumulative
 * count reaches q of the total, so at most twice the true value. Negative
 * if no step was counted.
 */
static double step_quantile_ms(const struct hists *h, const struct gn_stat_key *fk,
			       double q)
{
	const struct gn_stat_hist *v = NULL;
	__u64 total = 0, cum = 0, want;
	size_t i;
	int b;

	for (i = 0; h && i < h->n; i++) {
		const struct gn_stat_hist_key *k = (const void *)(h->rec + i * HIST_REC);

		if (k->job == fk->job && k->rank == fk->src &&
		    k->tensor == fk->tensor && k->transport == fk->transport) {
			v = (const void *)(h->rec + i * HIST_REC + sizeof(*k));
			break;
		}
	}
	if (!v)
		return -1;
	for (b = 0; b < GN_STAT_HIST_BUCKETS; b++)
		total += v->count[b];
	if (!total)
		return -1;
	want = (__u64)((double)total * q);
	if ((double)want < (double)total * q || !want)
		want++;
	for (b = 0; b < GN_STAT_HIST_BUCKETS; b++) {
		cum += v->count[b];
		if (cum >= want)
			break;
	}
	return (double)(1ULL << (b + 1)) / 1000.0;
}

static void print_quantile(double ms)
{
	if (ms < 0)
		printf(" %9s", "-");
	else
		printf(" %9.3f", ms);
}

/*
 * One line per flow: rates over @dt seconds against @old (NULL: totals),
 * then what compression saves (raw / wire), bits per value and the
 * retransmission share, cumulative, and the step latency quantiles of
 * the sender on the flow's tensor, since attach.
 */
static void print_flows(const struct flow *f, size_t n, const struct flow *old,
			size_t nold, double dt, const struct hists *h,
			const struct opts *o)
{
	size_t i;
	int d;

	printf("%-10s %4s %4s %6s %-6s %10s %10s %10s %7s %6s %5s %6s %7s %9s %9s\n",
	       "job", "src", "dst", "tensor", "phase", dt > 0 ? "tx pkt/s" : "tx pkts",
	       dt > 0 ? "wire MB/s" : "wire MB", dt > 0 ? "raw MB/s" : "raw MB",
	       "ratio", "bits/v", "rtx%", "drops", "steps", "p50 ms", "p99 ms");
	for (i = 0; i < n; i++) {
		const struct gn_stat_key *k = &f[i].k;
		const struct gn_stat_flow *v = &f[i].v;
		const struct flow *p = old ? find_flow(old, nold, k) : NULL;
		double pk = (double)v->tx_packets;
		double wb = (double)v->tx_wire_bytes;
		double rb = (double)v->raw_bytes, div = dt > 0 ? dt : 1;
		char src[8], dst[8];
		__u64 drops = 0;

		if (!job_wanted(o, k->job) ||
		    (o->tensor >= 0 && (long long)k->tensor != o->tensor))
			continue;
		for (d = 0; d < GN_STAT_DROPS; d++)
			drops += v->drops[d];
		if (p) {
			pk -= (double)p->v.tx_packets;
			wb -= (double)p->v.tx_wire_bytes;
			rb -= (double)p->v.raw_bytes;
		}
		rank_text(src, sizeof(src), k->src);
		rank_text(dst, sizeof(dst), k->dst);
		printf("%-10llu %4s %4s %6llu %-6s %10.0f %10.2f %10.2f %7.1f %6.3f %5.2f %6llu %7llu",
		       (unsigned long long)k->job, src, dst,
		       (unsigned long long)k->tensor, phase_name(k->phase),
		       pk / div, wb / div / 1e6, rb / div / 1e6,
		       v->tx_wire_bytes ? (double)v->raw_bytes / (double)v->tx_wire_bytes : 0.0,
		       v->raw_bytes ? (double)v->tx_wire_bytes * 8 / ((double)v->raw_bytes / 4) : 0.0,
		       v->tx_packets ? 100.0 * (double)v->retransmits / (double)v->tx_packets : 0.0,
		       (unsigned long long)drops, (unsigned long long)v->steps);
		print_quantile(step_quantile_ms(h, k, 0.50));
		print_quantile(step_quantile_ms(h, k, 0.99));
		printf("\n");
	}
}

/*
 * What tc refused since attach, summed over interfaces and directions by
 * reason, one line; nothing if it refused nothing.
 */
static void print_refused(void)
{
	__u64 sum[GN_STAT_REFUSES] = { 0 }, all = 0;
	struct refused *r;
	size_t i, n;
	int k;

	r = read_refused(&n);
	for (i = 0; r && i < n; i++)
		if (r[i].k.reason < GN_STAT_REFUSES) {
			sum[r[i].k.reason] += r[i].v.packets;
			all += r[i].v.packets;
		}
	free(r);
	if (!all)
		return;
	printf("tc refused %llu datagrams:", (unsigned long long)all);
	for (k = 1; k < GN_STAT_REFUSES; k++)
		printf(" %s %llu%s", refuse_name(k), (unsigned long long)sum[k],
		       k + 1 < GN_STAT_REFUSES ? "," : "\n");
}

int dump_text(const struct opts *o)
{
	struct hists h;
	struct flow *f;
	size_t n;

	f = read_flows(&n);
	if (!f)
		return -ENOENT;
	if (read_hists(&h)) {
		free(f);
		return -ENOENT;
	}
	qsort(f, n, sizeof(*f), cmp_flow);
	print_flows(f, n, NULL, 0, 0, &h, o);
	print_refused();
	free(h.rec);
	free(f);
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int top(const struct opts *o)
{
	struct flow *old = NULL, *f;
	struct hists h;
	size_t nold = 0, n;
	double t0 = now_s(), t;
	long it;
	bool tty = isatty(STDOUT_FILENO);

	for (it = 0; o->count <= 0 || it < o->count; it++) {
		f = read_flows(&n);
		if (!f || read_hists(&h)) {
			free(f);
			free(old);
			return -ENOENT;
		}
		t = now_s();
		qsort(f, n, sizeof(*f), cmp_flow);
		if (tty)
			printf("\033[H\033[2J");
		printf("gradnet-stat top: %zu flows, every %.1f s%s\n", n,
		       o->interval, old ? "" : " (first view: totals)");
		print_flows(f, n, old, nold, old ? t - t0 : 0, &h, o);
		print_refused();
		free(h.rec);
		fflush(stdout);
		free(old);
		old = f;
		nold = n;
		t0 = t;
		if (o->count <= 0 || it + 1 < o->count)
			usleep((useconds_t)(o->interval * 1e6));
	}
	free(old);
	return 0;
}
