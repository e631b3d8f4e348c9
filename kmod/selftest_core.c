// SPDX-License-Identifier: MIT
/*
 * selftest_core.c - runs the protocol core in the kernel: the scenario of
 * tests/core/scenario.c (three cores, one thread, the in-memory fabric
 * losing, duplicating and reordering 5% of packets each) with the kernel
 * environment, and compares its results with the hashes libgradnet gave
 * in userspace (tests/golden/core_hashes.h). The core brackets its own
 * FPU work, so this file and the scenario are integer-only.
 *
 * Log lines, one per case, one per failure, then a summary:
 *   gradnet: selftest core <case>: <n>/<n> steps match the golden hashes
 *   gradnet: selftest core <case>: sent .. lost .. duplicated .. reordered ..
 *   gradnet: selftest FAIL core <case> step <k>: <what went wrong>
 *   gradnet: selftest core summary: PASS|FAIL, <m>/<n> step hashes match ...
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/build_bug.h>
#include <linux/delay.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/minmax.h>
#include <linux/printk.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>

#include <gradnet/gradnet.h>
#include "kernel.h"
#include "core/scenario.h"
#include "account.h"
#include "../bpf/gradnet_stat.h"
#include "golden/core_hashes.h"
#include "selftest.h"

static_assert(ARRAY_SIZE(gn_core_golden) == GN_SCN_CASES,
	      "the golden header has a hash line per case of the scenario");
static_assert(GN_CORE_GOLDEN_STEPS == GN_SCN_STEPS,
	      "the golden header has a hash per step of the scenario");

/* Longest sleep between polls: the cores asked for a time, not an event. */
#define SC_MAX_IDLE_US 10000

/*
 * Nothing due before @until_ns: sleep that long (at most 10 ms). Else
 * only a chance to reschedule, so that a scenario that takes seconds under
 * emulation does not trip the soft-lockup watchdog.
 */
static void sc_idle(void *arg, u64 until_ns)
{
	u64 now = ktime_get_ns(), us;

	if (until_ns <= now) {
		cond_resched();
		return;
	}
	us = min_t(u64, (until_ns - now) / NSEC_PER_USEC, SC_MAX_IDLE_US);
	if (us < 10)
		cond_resched();
	else
		usleep_range(us, us + us / 8);
}

static void sc_log_case(const struct gn_scn_result *res, int k)
{
	const struct gn_mem_counts *n = &res->counts[k];

	pr_info("selftest core %s: sent %llu delivered %llu lost %llu duplicated %llu reordered %llu, %llu retransmits, %llu duplicates dropped, %llu ms, %llu poll rounds\n",
		gn_scn_cases[k].name, n->sent, n->delivered, n->lost,
		n->duplicated, n->reordered, res->retransmits[k],
		res->dup_drops[k], res->ns[k] / NSEC_PER_MSEC, res->rounds[k]);
}

/* Return: how many of case @k's steps match their golden hash. */
static unsigned int sc_check_case(const struct gn_scn_result *res, int k)
{
	const struct gn_core_golden *g = &gn_core_golden[k];
	unsigned int step, ok = 0;

	if (strcmp(g->name, gn_scn_cases[k].name)) {
		pr_info("selftest FAIL core %s: the golden header names it %s\n",
			gn_scn_cases[k].name, g->name);
		return 0;
	}
	for (step = 0; step < GN_SCN_STEPS; step++) {
		if (res->hash[k][step] == g->hash[step]) {
			ok++;
			continue;
		}
		pr_info("selftest FAIL core %s step %u: hash 0x%016llx, expected 0x%016llx\n",
			g->name, step, res->hash[k][step], g->hash[step]);
	}
	pr_info("selftest core %s: %u/%u steps match the golden hashes\n",
		g->name, ok, GN_SCN_STEPS);
	/* The kernel's zstd made the twin's packets smaller, or it failed. */
	if (gn_scn_cases[k].twin) {
		int t = gn_scn_cases[k].twin - 1;

		pr_info("selftest core %s: %llu body bytes, %s %llu\n", g->name,
			res->stream_bytes[k], gn_scn_cases[t].name,
			res->stream_bytes[t]);
		if (res->stream_bytes[k] >= res->stream_bytes[t]) {
			pr_info("selftest FAIL core %s: the entropy stage saved nothing\n",
				g->name);
			ok = 0;
		}
	}
	return ok;
}

struct sc_state {
	struct gn_env_kernel env;
	struct gn_scn_result res;
	struct gn_kmod_flow flow[GN_SCN_WORLD];
};

/**
 * gn_selftest_core_run() - run the core's scenario and check its hashes
 *
 * Runs in process context: the kernel env sleeps (mutex, allocations)
 * and the scenario sleeps while the cores wait for their timers.
 *
 * Return: 0 if every step of every case gave its golden hash; -EIO if
 * the scenario failed or a hash differs; -ENOMEM.
 */
int gn_selftest_core_run(void)
{
	const unsigned int total = GN_SCN_CASES * GN_SCN_STEPS;
	struct gn_scn_hooks hooks = { .idle = sc_idle };
	unsigned int passed = 0;
	struct sc_state *st;
	int k, err;

	st = kzalloc(sizeof(*st), GFP_KERNEL);
	if (!st)
		return -ENOMEM;
	gn_env_kernel_init(&st->env);
	/* The scenario's packets fire the gradnet tracepoints, as a job's do. */
	hooks.account = gn_kmod_account;
	for (k = 0; k < GN_SCN_WORLD; k++) {
		st->flow[k] = (struct gn_kmod_flow){
			.job = GN_SCN_JOB, .rank = k,
			.transport = GN_STAT_TRANSPORT_KMOD,
		};
		hooks.account_arg[k] = &st->flow[k];
	}
	if (strcmp(GN_SCN_DESC, GN_CORE_GOLDEN_DESC)) {
		pr_info("selftest FAIL core: the golden hashes are of another scenario (%s)\n",
			GN_CORE_GOLDEN_DESC);
		err = -EIO;
		goto out;
	}
	err = gn_scn_run(&st->env.env, &hooks, &st->res);
	if (err) {
		const struct gn_scn_result *r = &st->res;

		pr_info("selftest FAIL core %s step %d rank %d: %s: %d%s%s\n",
			r->kase >= 0 ? gn_scn_cases[r->kase].name : "-",
			r->step, r->rank, r->what ? r->what : "?", err,
			r->msg[0] ? ": " : "", r->msg);
		err = -EIO;
		goto out;
	}
	for (k = 0; k < GN_SCN_CASES; k++) {
		sc_log_case(&st->res, k);
		passed += sc_check_case(&st->res, k);
	}
	if (passed != total)
		err = -EIO;
out:
	pr_info("selftest core summary: %s, %u/%u step hashes match the golden ones, %d ranks bit-identical\n",
		err ? "FAIL" : "PASS", passed, total, GN_SCN_WORLD);
	gn_env_kernel_destroy(&st->env);
	kfree(st);
	return err;
}
