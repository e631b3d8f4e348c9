// SPDX-License-Identifier: MIT
/*
 * simd_sections_test.c - the kernel's rule for the core's SIMD, held in a
 * process: every codec call that may run a SIMD kernel comes inside one of
 * the core's FPU sections (gn_simd_begin() .. gn_simd_end()).
 *
 * In the kernel module those sections are kernel_fpu_begin() and _end(),
 * and the codec's own sections are empty. A SIMD kernel run outside one
 * writes the vector registers of whatever task last used them on that
 * CPU: the kernel saved them when it switched away and, finding itself
 * still their owner, does not load them again, so that task goes on with
 * wrong values (a 3LC slice cut by the zero-run encoder from pack.c did
 * this to a UDP-path rank sharing a CPU with the module's worker).
 *
 * Every SIMD kernel of the codecs is picked through gn_codec_isa_default()
 * (3LC, QSGD and top-k alike), a call into lib/codec/isa.c; the test links
 * with --wrap for it and for the section calls, counts the picks made
 * outside a section on each thread, and runs the core's scenario
 * (tests/core/scenario.c: every codec, loss, duplicates, reordering) with
 * one codec worker and with three.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <gradnet/gradnet.h>
#include "libc.h"
#include "mem.h"
#include "core/scenario.h"
#include "core/libc_idle.h"

#include "kselftest_harness.h"

void __real_gn_simd_begin(void);
void __real_gn_simd_end(void);
int __real_gn_codec_isa_default(void);
void __wrap_gn_simd_begin(void);
void __wrap_gn_simd_end(void);
int __wrap_gn_codec_isa_default(void);

static __thread int depth;
static unsigned long picks_inside, picks_outside;
static void *first_outside;

void __wrap_gn_simd_begin(void)
{
	depth++;
	__real_gn_simd_begin();
}

void __wrap_gn_simd_end(void)
{
	__real_gn_simd_end();
	depth--;
}

int __wrap_gn_codec_isa_default(void)
{
	if (depth > 0) {
		__atomic_add_fetch(&picks_inside, 1, __ATOMIC_RELAXED);
	} else {
		void *none = NULL;

		__atomic_add_fetch(&picks_outside, 1, __ATOMIC_RELAXED);
		__atomic_compare_exchange_n(&first_outside, &none,
					    __builtin_return_address(0), false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	}
	return __real_gn_codec_isa_default();
}

/* The scenario with @workers codec workers; the picks it made, counted. */
static void run_with(struct __test_metadata *_metadata, u32 workers)
{
	struct gn_scn_result *res = calloc(1, sizeof(*res));
	struct gn_scn_hooks hooks = { .idle = gn_scn_libc_idle };
	struct gn_env_libc libc;
	int err;

	ASSERT_NE(NULL, res);
	picks_inside = picks_outside = 0;
	first_outside = NULL;
	gn_env_libc_init(&libc);
	if (workers > 1)
		ASSERT_EQ(0, gn_env_libc_workers(&libc, workers));
	err = gn_scn_run(&libc.env, &hooks, res);
	gn_env_libc_destroy(&libc);
	ASSERT_EQ(0, err) TH_LOG("%s (case %d, step %d, rank %d): %s",
				 res->what ? res->what : "?", res->kase,
				 res->step, res->rank, res->msg);
	/* The scenario did reach the kernels: the count means something. */
	ASSERT_LT(0, picks_inside);
	EXPECT_EQ(0, picks_outside)
		TH_LOG("%lu SIMD kernel picks outside an FPU section (%lu inside), the first from %p",
		       picks_outside, picks_inside, first_outside);
	free(res);
}

TEST(one_worker)
{
	run_with(_metadata, 1);
}

TEST(three_workers)
{
	run_with(_metadata, 3);
}

TEST_HARNESS_MAIN
