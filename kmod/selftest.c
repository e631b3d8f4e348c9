// SPDX-License-Identifier: MIT
/*
 * selftest.c - runs the codec's golden vectors (tests/golden/vectors.h) in
 * the kernel, for every instruction set the CPU has: encode, decode, and
 * the malformed streams that must be refused. Buffers are kernel
 * allocations of exactly the golden sizes, made before and freed after
 * each FPU section. Integer-only: the one call that passes a float goes
 * through codec_fp.c.
 *
 * Log lines, one per instruction set and one per failure, then a summary:
 *   gradnet: selftest <isa>: <passed>/<total> golden vectors passed
 *   gradnet: selftest <isa>: skipped, CPU lacks it
 *   gradnet: selftest FAIL <isa> <vector>: <what went wrong>
 *   gradnet: selftest summary: PASS|FAIL, <passed>/<total> vector runs ...
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/printk.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/types.h>
#include <asm/fpu/api.h>

#include <gradnet/codec.h>
#include "golden/vectors.h"
#include "codec_fp.h"
#include "selftest.h"

#define ST_VECTORS (ARRAY_SIZE(gn_golden) + ARRAY_SIZE(gn_golden_bad))

/* Bits of the accumulators a malformed stream must leave alone. */
#define ST_ACC_FILL 0x3f800000u

/* The run of one instruction set. */
struct st_run {
	int isa;
	const char *isa_name;
	unsigned int passed;
	unsigned int failed;
};

static __printf(3, 4) void st_fail(const struct st_run *run,
				   const char *vector, const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	pr_info("selftest FAIL %s %s: %pV\n", run->isa_name, vector, &vaf);
	va_end(args);
}

/*
 * A kernel copy of golden data of exactly its size, so that a read past its
 * end leaves the allocation.
 */
static void *st_dup(const void *src, size_t bytes)
{
	void *p = kvmalloc(bytes ? bytes : 1, GFP_KERNEL);

	if (p)
		memcpy(p, src, bytes);
	return p;
}

/* Compares n floats with golden bits; 1 and a log line if they differ. */
static int st_check_floats(const struct st_run *run, const char *vector,
			   const char *what, const float *got,
			   const u32 *want, size_t n)
{
	size_t i;
	u32 bits;

	for (i = 0; i < n; i++) {
		memcpy(&bits, &got[i], sizeof(bits));
		if (bits != want[i]) {
			st_fail(run, vector, "%s[%zu] is 0x%08x, expected 0x%08x",
				what, i, bits, want[i]);
			return 1;
		}
	}
	return 0;
}

static int st_check_encode(const struct st_run *run,
			   const struct gn_golden *v, long len,
			   const u8 *out, const float *e)
{
	long want = v->ret ? v->ret : (long)v->stream_len;

	if (len != want) {
		st_fail(run, v->name, "encode returned %ld, expected %ld",
			len, want);
		return 1;
	}
	if (!v->ret && memcmp(out, v->stream, v->stream_len)) {
		st_fail(run, v->name, "encoded stream differs");
		return 1;
	}
	/* On an error return e must be left as it was. */
	return st_check_floats(run, v->name, "e", e,
			       v->ret ? v->e_in : v->e_out, v->n);
}

/* Return: 0 if the encode matches, 1 if not (logged), or -ENOMEM. */
static int st_encode(const struct st_run *run, const struct gn_golden *v)
{
	size_t cap = gn_tlc_encode_bound(v->n);
	float *x, *e;
	long len;
	u8 *out;
	int ret = -ENOMEM;

	x = st_dup(v->x, v->n * sizeof(*x));
	if (!x)
		goto out;
	e = st_dup(v->e_in, v->n * sizeof(*e));
	if (!e)
		goto out_free_x;
	out = kvzalloc(cap, GFP_KERNEL);
	if (!out)
		goto out_free_e;

	kernel_fpu_begin();
	len = gn_kmod_tlc_encode(run->isa, x, e, v->n, v->s, out, cap);
	kernel_fpu_end();

	ret = st_check_encode(run, v, len, out, e);
	kvfree(out);
out_free_e:
	kvfree(e);
out_free_x:
	kvfree(x);
out:
	return ret;
}

/* Return: 0 if the decode matches, 1 if not (logged), or -ENOMEM. */
static int st_decode(const struct st_run *run, const struct gn_golden *v)
{
	float *acc;
	u8 *src;
	int ret = -ENOMEM, got;

	acc = st_dup(v->acc_in, v->n * sizeof(*acc));
	if (!acc)
		goto out;
	src = st_dup(v->stream, v->stream_len);
	if (!src)
		goto out_free_acc;

	kernel_fpu_begin();
	got = gn_tlc_decode_isa(run->isa, src, v->stream_len, acc, v->n);
	kernel_fpu_end();

	if (got) {
		st_fail(run, v->name, "decode returned %d, expected 0", got);
		ret = 1;
	} else {
		ret = st_check_floats(run, v->name, "acc", acc, v->acc_out,
				      v->n);
	}
	kvfree(src);
out_free_acc:
	kvfree(acc);
out:
	return ret;
}

/* Return: 0 if the vector passes, 1 if not (logged), or -ENOMEM. */
static int st_golden(const struct st_run *run, const struct gn_golden *v)
{
	int ret;

	ret = st_encode(run, v);
	/* Streams of the error cases are empty: nothing to decode. */
	if (ret || v->ret)
		return ret;
	return st_decode(run, v);
}

/* Return: 0 if the stream is refused untouched, 1 if not, or -ENOMEM. */
static int st_malformed(const struct st_run *run,
			const struct gn_golden_bad *b)
{
	size_t i, n = b->n ? b->n : 1;
	u32 *before;
	float *acc;
	u8 *src;
	int ret = -ENOMEM, got;

	before = kvmalloc_array(n, sizeof(*before), GFP_KERNEL);
	if (!before)
		goto out;
	for (i = 0; i < n; i++)
		before[i] = ST_ACC_FILL + i;
	acc = st_dup(before, b->n * sizeof(*acc));
	if (!acc)
		goto out_free_before;
	src = st_dup(b->stream, b->stream_len);
	if (!src)
		goto out_free_acc;

	kernel_fpu_begin();
	got = gn_tlc_decode_isa(run->isa, src, b->stream_len, acc, b->n);
	kernel_fpu_end();

	if (got != -EBADMSG) {
		st_fail(run, b->name, "decode returned %d, expected %d",
			got, -EBADMSG);
		ret = 1;
	} else {
		ret = st_check_floats(run, b->name, "acc", acc, before, b->n);
	}
	kvfree(src);
out_free_acc:
	kvfree(acc);
out_free_before:
	kvfree(before);
out:
	return ret;
}

static void st_count(struct st_run *run, int failed)
{
	if (failed)
		run->failed++;
	else
		run->passed++;
}

/* Return: 0 once every vector has run (failures are counted), or -ENOMEM. */
static int st_run_isa(struct st_run *run)
{
	size_t i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(gn_golden); i++) {
		ret = st_golden(run, &gn_golden[i]);
		if (ret < 0)
			return ret;
		st_count(run, ret);
	}
	for (i = 0; i < ARRAY_SIZE(gn_golden_bad); i++) {
		ret = st_malformed(run, &gn_golden_bad[i]);
		if (ret < 0)
			return ret;
		st_count(run, ret);
	}
	pr_info("selftest %s: %u/%zu golden vectors passed\n", run->isa_name,
		run->passed, ST_VECTORS);
	return 0;
}

/* Even these calls are bracketed: the codec is built with SSE enabled. */
static bool st_isa_supported(int isa, const char **name)
{
	bool yes;

	kernel_fpu_begin();
	yes = gn_codec_isa_supported(isa);
	*name = gn_codec_isa_name(isa);
	kernel_fpu_end();
	return yes;
}

/**
 * gn_selftest_run() - check the codec against its golden vectors
 *
 * Runs every golden vector for every instruction set the CPU supports and
 * logs one line per instruction set, one per failure and a summary. Runs
 * in process context: it sleeps to allocate between FPU sections.
 *
 * Return: 0 if all passed; -EIO if any vector failed; -ENOMEM.
 */
int gn_selftest_run(void)
{
	unsigned int passed = 0, total = 0, tested = 0, skipped = 0;
	int isa, ret;

	for (isa = 0; isa < GN_ISA_COUNT; isa++) {
		struct st_run run = { .isa = isa };

		if (!st_isa_supported(isa, &run.isa_name)) {
			pr_info("selftest %s: skipped, CPU lacks it\n",
				run.isa_name);
			skipped++;
			continue;
		}
		ret = st_run_isa(&run);
		if (ret) {
			pr_err("selftest %s: aborted: %d\n", run.isa_name, ret);
			return ret;
		}
		passed += run.passed;
		total += run.passed + run.failed;
		tested++;
	}
	pr_info("selftest summary: %s, %u/%u vector runs passed, %u ISAs tested, %u skipped\n",
		passed == total ? "PASS" : "FAIL", passed, total, tested,
		skipped);
	if (passed != total) {
		pr_err("selftest failed, refusing to load\n");
		return -EIO;
	}
	return 0;
}
