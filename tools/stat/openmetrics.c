// SPDX-License-Identifier: MIT
/*
 * openmetrics.c - dump --openmetrics: the maps in the text format a
 * Prometheus scrape or node exporter's textfile collector reads.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <gradnet/gradnet.h>

#include "stat.h"

/*
 * The counters of struct gn_stat_flow, one metric family each. TYPE and
 * HELP name the samples themselves (the _total included), as the
 * Prometheus text format that node exporter's textfile collector parses
 * wants; the closing # EOF is a comment to that parser.
 */
static const struct om_family {
	const char *name, *type, *help;
	size_t off;
} om_flow_families[] = {
	{ "gradnet_tx_packets_total", "counter",
	  "Data packets sent, retransmissions included.",
	  offsetof(struct gn_stat_flow, tx_packets) },
	{ "gradnet_tx_wire_bytes_total", "counter",
	  "UDP payload bytes of the data packets sent.",
	  offsetof(struct gn_stat_flow, tx_wire_bytes) },
	{ "gradnet_retransmits_total", "counter",
	  "Data packets sent again.",
	  offsetof(struct gn_stat_flow, retransmits) },
	{ "gradnet_messages_total", "counter",
	  "Chunk messages started.",
	  offsetof(struct gn_stat_flow, messages) },
	{ "gradnet_raw_bytes_total", "counter",
	  "Float32 bytes the chunk messages stand for.",
	  offsetof(struct gn_stat_flow, raw_bytes) },
	{ "gradnet_stream_bytes_total", "counter",
	  "Chunk-stream bytes of the messages.",
	  offsetof(struct gn_stat_flow, stream_bytes) },
	{ "gradnet_ctl_packets_total", "counter",
	  "Control packets sent.",
	  offsetof(struct gn_stat_flow, ctl_packets) },
	{ "gradnet_ctl_bytes_total", "counter",
	  "UDP payload bytes of the control packets sent.",
	  offsetof(struct gn_stat_flow, ctl_bytes) },
	{ "gradnet_rx_packets_total", "counter",
	  "Data packets taken by the receiver.",
	  offsetof(struct gn_stat_flow, rx_packets) },
	{ "gradnet_rx_wire_bytes_total", "counter",
	  "UDP payload bytes of the data packets taken.",
	  offsetof(struct gn_stat_flow, rx_wire_bytes) },
	{ "gradnet_steps_total", "counter",
	  "Allreduces finished.",
	  offsetof(struct gn_stat_flow, steps) },
	{ "gradnet_step_seconds_total", "counter",
	  "Durations of the allreduces finished, summed.",
	  offsetof(struct gn_stat_flow, step_ns) },
	{ "gradnet_last_step", "gauge",
	  "Number of the last allreduce finished.",
	  offsetof(struct gn_stat_flow, last_step) },
}, om_wire_families[] = {
	{ "gradnet_wire_packets_total", "counter",
	  "Gradnet datagrams tc saw on the interface.",
	  offsetof(struct gn_stat_wire, packets) },
	{ "gradnet_wire_bytes_total", "counter",
	  "UDP payload bytes of those datagrams.",
	  offsetof(struct gn_stat_wire, bytes) },
	{ "gradnet_wire_skbs_total", "counter",
	  "Socket buffers the datagrams came in.",
	  offsetof(struct gn_stat_wire, skbs) },
}, om_refused_families[] = {
	{ "gradnet_wire_refused_packets_total", "counter",
	  "Datagrams with the gradnet magic that tc did not count, by reason.",
	  offsetof(struct gn_stat_refused, packets) },
	{ "gradnet_wire_refused_bytes_total", "counter",
	  "UDP payload bytes of those datagrams.",
	  offsetof(struct gn_stat_refused, bytes) },
};

static const char *rank_label(char *buf, size_t len, __u64 r)
{
	if (r == GN_STAT_RANK_ALL)
		return "all";
	if (r == GN_STAT_RANK_NONE)
		return "none";
	snprintf(buf, len, "%llu", (unsigned long long)r);
	return buf;
}

static void om_flow_labels(const struct gn_stat_key *k)
{
	char s[24], d[24];

	printf("{job=\"%llu\",src=\"%s\",dst=\"%s\",tensor=\"%llu\",phase=\"%s\",transport=\"%s\"",
	       (unsigned long long)k->job, rank_label(s, sizeof(s), k->src),
	       rank_label(d, sizeof(d), k->dst), (unsigned long long)k->tensor,
	       phase_name(k->phase), transport_name(k->transport));
}

static void om_header(const struct om_family *fam)
{
	printf("# HELP %s %s\n# TYPE %s %s\n", fam->name, fam->help, fam->name,
	       fam->type);
}

static void om_flows(const struct flow *f, size_t n)
{
	size_t i, j;
	int d;

	for (j = 0; j < sizeof(om_flow_families) / sizeof(*om_flow_families); j++) {
		const struct om_family *fam = &om_flow_families[j];
		bool ns = fam->off == offsetof(struct gn_stat_flow, step_ns);

		om_header(fam);
		for (i = 0; i < n; i++) {
			__u64 v = *(const __u64 *)((const char *)&f[i].v + fam->off);

			printf("%s", fam->name);
			om_flow_labels(&f[i].k);
			if (ns)
				printf("} %llu.%09llu\n", (unsigned long long)(v / 1000000000),
				       (unsigned long long)(v % 1000000000));
			else
				printf("} %llu\n", (unsigned long long)v);
		}
	}
	printf("# HELP gradnet_drops_total Packets the receiver dropped, by reason.\n"
	       "# TYPE gradnet_drops_total counter\n");
	for (i = 0; i < n; i++)
		for (d = 0; d < GN_STAT_DROPS; d++) {
			printf("gradnet_drops_total");
			om_flow_labels(&f[i].k);
			printf(",reason=\"%s\"} %llu\n", gn_drop_name(d),
			       (unsigned long long)f[i].v.drops[d]);
		}
}

static void om_wire(const struct wire *w, size_t n)
{
	char s[24], d[24];
	size_t i, j;

	for (j = 0; j < sizeof(om_wire_families) / sizeof(*om_wire_families); j++) {
		const struct om_family *fam = &om_wire_families[j];

		om_header(fam);
		for (i = 0; i < n; i++) {
			const struct gn_stat_wire_key *k = &w[i].k;

			printf("%s{job=\"%llu\",src=\"%s\",dst=\"%s\",tensor=\"%llu\",phase=\"%s\",ifindex=\"%llu\",netns=\"%llu\",direction=\"%s\"} %llu\n",
			       fam->name, (unsigned long long)k->job,
			       rank_label(s, sizeof(s), k->src),
			       rank_label(d, sizeof(d), k->dst),
			       (unsigned long long)k->tensor, phase_name(k->phase),
			       (unsigned long long)k->ifindex,
			       (unsigned long long)k->netns,
			       k->egress ? "egress" : "ingress",
			       (unsigned long long)*(const __u64 *)((const char *)&w[i].v + fam->off));
		}
	}
}

static void om_refused(const struct refused *r, size_t n)
{
	size_t i, j;

	for (j = 0; j < sizeof(om_refused_families) / sizeof(*om_refused_families); j++) {
		const struct om_family *fam = &om_refused_families[j];

		om_header(fam);
		for (i = 0; i < n; i++)
			printf("%s{ifindex=\"%llu\",netns=\"%llu\",direction=\"%s\",reason=\"%s\"} %llu\n",
			       fam->name, (unsigned long long)r[i].k.ifindex,
			       (unsigned long long)r[i].k.netns,
			       r[i].k.egress ? "egress" : "ingress",
			       refuse_name(r[i].k.reason),
			       (unsigned long long)*(const __u64 *)((const char *)&r[i].v + fam->off));
	}
}

/*
 * Step latency as a histogram: bucket k of gn_step_hist holds steps of
 * [2^k, 2^(k+1)) microseconds, so its cumulative count is that of le =
 * 2^(k+1) us. The sum comes from the rank's step flow, when there is one.
 */
static void om_hist(const struct hists *h, const struct flow *f, size_t nf)
{
	size_t i;
	int b;

	printf("# HELP gradnet_step_latency_seconds Allreduce durations.\n"
	       "# TYPE gradnet_step_latency_seconds histogram\n");
	for (i = 0; i < h->n; i++) {
		const struct gn_stat_hist_key *k = (const void *)(h->rec + i * HIST_REC);
		const struct gn_stat_hist *v = (const void *)(h->rec + i * HIST_REC +
							      sizeof(*k));
		struct gn_stat_key fk = {
			.job = k->job, .src = k->rank, .dst = GN_STAT_RANK_ALL,
			.tensor = k->tensor, .phase = GN_STAT_PHASE_NONE,
			.transport = k->transport,
		};
		const struct flow *sf = find_flow(f, nf, &fk);
		char labels[160];
		__u64 cum = 0;

		snprintf(labels, sizeof(labels),
			 "job=\"%llu\",rank=\"%llu\",tensor=\"%llu\",transport=\"%s\"",
			 (unsigned long long)k->job, (unsigned long long)k->rank,
			 (unsigned long long)k->tensor, transport_name(k->transport));
		for (b = 0; b < GN_STAT_HIST_BUCKETS; b++) {
			cum += v->count[b];
			printf("gradnet_step_latency_seconds_bucket{%s,le=\"%.10g\"} %llu\n",
			       labels, (double)(1ULL << (b + 1)) * 1e-6,
			       (unsigned long long)cum);
		}
		printf("gradnet_step_latency_seconds_bucket{%s,le=\"+Inf\"} %llu\n",
		       labels, (unsigned long long)cum);
		printf("gradnet_step_latency_seconds_count{%s} %llu\n", labels,
		       (unsigned long long)cum);
		if (sf)
			printf("gradnet_step_latency_seconds_sum{%s} %llu.%09llu\n",
			       labels,
			       (unsigned long long)(sf->v.step_ns / 1000000000),
			       (unsigned long long)(sf->v.step_ns % 1000000000));
	}
}

int dump_openmetrics(void)
{
	struct stat_maps m;
	int err;

	if (read_maps(&m))
		return -ENOENT;
	qsort(m.f, m.nf, sizeof(*m.f), cmp_flow);
	om_flows(m.f, m.nf);
	om_wire(m.w, m.nw);
	om_refused(m.r, m.nr);
	om_hist(&m.h, m.f, m.nf);
	printf("# EOF\n");
	err = fflush(stdout) ? -errno : 0;
	free_maps(&m);
	return err;
}
