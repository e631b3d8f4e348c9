/* SPDX-License-Identifier: MIT */
/*
 * scenario.h - a whole allreduce job of the protocol core in one thread:
 * three core contexts over the in-memory fabric, which loses, duplicates
 * and reorders packets, twenty cases (3LC and dense, sum and average;
 * QSGD, top-k per chunk and per block, top-k with QSGD values; CLT-k;
 * model tensors: DORE, and 3LC's push/pull; top-k's Bloom indices under
 * each policy, float16 and curve-fitted values, the index codec chosen
 * per chunk; the entropy stage on two of them and on DORE's changes) of
 * three steps each.
 * Freestanding and integer-only, so the same file runs
 * in a process (tests/core_test.c) and in the kernel module
 * (kmod/selftest_core.c); both compare its hashes with
 * tests/golden/core_hashes.h.
 */
#ifndef GN_TEST_SCENARIO_H
#define GN_TEST_SCENARIO_H

#include "env.h"
#include "mem.h"
#include "codec/codec.h"

struct gn_event;

#define GN_SCN_WORLD	3
#define GN_SCN_CASES	20
#define GN_SCN_STEPS	3
/* Not a multiple of the chunk or of the world: shards are uneven. */
#define GN_SCN_ELEMS	10000u
#define GN_SCN_CHUNK	4096u
#define GN_SCN_MTU	1500u
#define GN_SCN_S_BITS	0x3fc00000u	/* s = 1.5 */
#define GN_SCN_JOB	0x5c3e0001u
#define GN_SCN_TENSOR	7u
#define GN_SCN_KEY	"gradnet core key"	/* GN_MAC_KEY_LEN bytes */
/* Faults of the fabric, in 1/65536 per packet: 5% each. */
#define GN_SCN_FAULT	3277u
/*
 * What the golden hashes were made from; the golden header repeats it, so
 * a change here without a new header fails by name, not by hash.
 */
#define GN_SCN_DESC "3 ranks, 10000 values, chunk 4096, s 1.5, mtu 1500, " \
		    "3 steps, xorshift64 inputs exponent 115..130, " \
		    "model lr 2^-3..2^-5, v3"

/*
 * A case: its tensor's codec, with the parameters it sets, and flags; a
 * model tensor's case has @model, and its result is the parameters;
 * @twin, 1 + the case whose inputs it takes (0: its own), for a case
 * that must end with that case's results and send fewer body bytes (the
 * entropy stage's).
 */
struct gn_scn_case {
	const char *name;
	struct gn_codec_spec codec;	/* codec 0: the job's (3LC, s 1.5) */
	unsigned int flags;		/* GN_TENSOR_* */
	const struct gn_core_model *model;
	int twin;
};

/* A model case's learning rate at @step, float32 bits: 2^-(3 + step). */
#define GN_SCN_LR(step) ((u32)(124 - (step)) << 23)

extern const struct gn_scn_case gn_scn_cases[GN_SCN_CASES];

/* How the caller lets time pass between polls (sleep, reschedule). */
struct gn_scn_hooks {
	/*
	 * Nothing is due before @until_ns (an env time); 0: something may be
	 * due at once, only give the CPU away if others want it.
	 */
	void (*idle)(void *arg, u64 until_ns);
	/* Optional: step @step of case @kase ended on every rank. */
	void (*step_end)(void *arg, int kase, int step);
	void *arg;
	/* Optional: rank r's core's accounting hook, with account_arg[r]. */
	void (*account)(void *arg, const struct gn_event *ev);
	void *account_arg[GN_SCN_WORLD];
};

struct gn_scn_result {
	u64 hash[GN_SCN_CASES][GN_SCN_STEPS];	/* FNV-1a 64 of the result */
	struct gn_mem_counts counts[GN_SCN_CASES];
	u64 retransmits[GN_SCN_CASES];	/* summed over the ranks */
	u64 dup_drops[GN_SCN_CASES];
	u64 stream_bytes[GN_SCN_CASES];	/* packet bodies sent, over the ranks */
	u64 ns[GN_SCN_CASES];		/* env time, open to free */
	u64 rounds[GN_SCN_CASES];	/* poll rounds over every rank */
	/* Messages the ranks had to replace (gn_core_orphans()), by step end. */
	u64 orphans[GN_SCN_CASES][GN_SCN_STEPS];
	/* On failure: what, where (-1: not that far), and the core's word. */
	const char *what;
	int kase, step, rank, err;
	char msg[160];
};

void gn_scn_input(float *x, u32 n, int kase, int rank, int step);
u64 gn_scn_hash(const void *p, size_t bytes);
int gn_scn_run(const struct gn_env *env, const struct gn_scn_hooks *hooks,
	       struct gn_scn_result *res);

#endif /* GN_TEST_SCENARIO_H */
