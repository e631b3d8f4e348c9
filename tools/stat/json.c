// SPDX-License-Identifier: MIT
/*
 * json.c - dump --json: every flow, every wire counter of the tc program
 * and every step-latency histogram, as one JSON document.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <gradnet/gradnet.h>

#include "stat.h"

static void print_rank(__u64 r)
{
	if (r == GN_STAT_RANK_ALL)
		printf("\"all\"");
	else if (r == GN_STAT_RANK_NONE)
		printf("\"none\"");
	else
		printf("%llu", (unsigned long long)r);
}

static void dump_flow_json(const struct flow *f)
{
	const struct gn_stat_key *k = &f->k;
	const struct gn_stat_flow *v = &f->v;
	int i;

	printf("{\"job\": %llu, \"src\": ", (unsigned long long)k->job);
	print_rank(k->src);
	printf(", \"dst\": ");
	print_rank(k->dst);
	printf(", \"tensor\": %llu, \"phase\": \"%s\", \"transport\": \"%s\", "
	       "\"tx_packets\": %llu, \"tx_wire_bytes\": %llu, \"retransmits\": %llu, "
	       "\"messages\": %llu, \"raw_bytes\": %llu, \"stream_bytes\": %llu, "
	       "\"ctl_packets\": %llu, \"ctl_bytes\": %llu, \"rx_packets\": %llu, "
	       "\"rx_wire_bytes\": %llu, \"steps\": %llu, \"last_step\": %llu, "
	       "\"step_ns\": %llu, \"drops\": {",
	       (unsigned long long)k->tensor, phase_name(k->phase),
	       transport_name(k->transport),
	       (unsigned long long)v->tx_packets,
	       (unsigned long long)v->tx_wire_bytes,
	       (unsigned long long)v->retransmits,
	       (unsigned long long)v->messages,
	       (unsigned long long)v->raw_bytes,
	       (unsigned long long)v->stream_bytes,
	       (unsigned long long)v->ctl_packets,
	       (unsigned long long)v->ctl_bytes,
	       (unsigned long long)v->rx_packets,
	       (unsigned long long)v->rx_wire_bytes,
	       (unsigned long long)v->steps,
	       (unsigned long long)v->last_step,
	       (unsigned long long)v->step_ns);
	for (i = 0; i < GN_STAT_DROPS; i++)
		printf("%s\"%s\": %llu", i ? ", " : "", gn_drop_name(i),
		       (unsigned long long)v->drops[i]);
	printf("}}");
}

static void dump_wire_json(const struct wire *w)
{
	printf("{\"job\": %llu, \"src\": ", (unsigned long long)w->k.job);
	print_rank(w->k.src);
	printf(", \"dst\": ");
	print_rank(w->k.dst);
	printf(", \"tensor\": %llu, \"phase\": \"%s\", \"ifindex\": %llu, "
	       "\"netns\": %llu, \"dir\": \"%s\", \"packets\": %llu, "
	       "\"bytes\": %llu, \"skbs\": %llu}",
	       (unsigned long long)w->k.tensor, phase_name(w->k.phase),
	       (unsigned long long)w->k.ifindex, (unsigned long long)w->k.netns,
	       w->k.egress ? "egress" : "ingress",
	       (unsigned long long)w->v.packets, (unsigned long long)w->v.bytes,
	       (unsigned long long)w->v.skbs);
}

static void dump_hist_json(const struct gn_stat_hist_key *k,
			   const struct gn_stat_hist *h)
{
	int i, last = 0;

	for (i = 0; i < GN_STAT_HIST_BUCKETS; i++)
		if (h->count[i])
			last = i + 1;
	printf("{\"job\": %llu, \"rank\": %llu, \"tensor\": %llu, "
	       "\"transport\": \"%s\", \"log2_us\": [",
	       (unsigned long long)k->job, (unsigned long long)k->rank,
	       (unsigned long long)k->tensor, transport_name(k->transport));
	for (i = 0; i < last; i++)
		printf("%s%llu", i ? ", " : "", (unsigned long long)h->count[i]);
	printf("]}");
}

static void dump_refused_json(const struct refused *r)
{
	printf("{\"ifindex\": %llu, \"netns\": %llu, \"dir\": \"%s\", "
	       "\"reason\": \"%s\", \"packets\": %llu, \"bytes\": %llu}",
	       (unsigned long long)r->k.ifindex, (unsigned long long)r->k.netns,
	       r->k.egress ? "egress" : "ingress", refuse_name(r->k.reason),
	       (unsigned long long)r->v.packets, (unsigned long long)r->v.bytes);
}

static void dump_tc_job_json(const struct tc_job *j)
{
	printf("{\"job\": %llu, \"given\": %s, \"seen\": %s, \"flows\": %llu}",
	       (unsigned long long)j->job,
	       j->v.from & GN_STAT_JOB_GIVEN ? "true" : "false",
	       j->v.from & GN_STAT_JOB_SEEN ? "true" : "false",
	       (unsigned long long)j->v.flows);
}

int dump_json(void)
{
	struct stat_maps m;
	size_t i;

	if (read_maps(&m))
		return -ENOENT;
	printf("{\"flows\": [");
	for (i = 0; i < m.nf; i++) {
		printf(i ? ",\n  " : "\n  ");
		dump_flow_json(&m.f[i]);
	}
	printf("],\n\"wire\": [");
	for (i = 0; i < m.nw; i++) {
		printf(i ? ",\n  " : "\n  ");
		dump_wire_json(&m.w[i]);
	}
	printf("],\n\"step_hist\": [");
	for (i = 0; i < m.h.n; i++) {
		printf(i ? ",\n  " : "\n  ");
		dump_hist_json((void *)(m.h.rec + i * HIST_REC),
			       (void *)(m.h.rec + i * HIST_REC +
					sizeof(struct gn_stat_hist_key)));
	}
	printf("],\n\"tc_refused\": [");
	for (i = 0; i < m.nr; i++) {
		printf(i ? ",\n  " : "\n  ");
		dump_refused_json(&m.r[i]);
	}
	printf("],\n\"tc_jobs\": [");
	for (i = 0; i < m.nj; i++) {
		printf(i ? ",\n  " : "\n  ");
		dump_tc_job_json(&m.j[i]);
	}
	printf("]}\n");
	free_maps(&m);
	return 0;
}
