// SPDX-License-Identifier: MIT
/*
 * pmix.c - every rank's address through the launcher's PMIx server, the
 * exchange Open MPI's mpirun and Slurm's srun --mpi=pmix both offer: put
 * this rank's, commit, fence with data collection, get each rank's.
 *
 * Each context a process opens this way takes the next key
 * (gradnet.addr.N), so the ranks' Nth contexts meet, as every rank opens
 * its contexts in the same order. PMIx_Init and PMIx_Finalize count
 * their calls, so an MPI program's own use of PMIx is untouched.
 */
#include <errno.h>
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher.h"

const bool gn_pmix_built = true;

static unsigned int contexts;

/*
 * A pmix_proc_t is 260 bytes: the helpers that make one stay out of line,
 * so that no frame holds several (the library keeps frames under 1 KB).
 */
#define OUT_OF_LINE __attribute__((noinline))

bool gn_pmix_present(void)
{
	const char *ns = getenv("PMIX_NAMESPACE"), *rank = getenv("PMIX_RANK");

	return ns && *ns && rank && *rank;
}

/* The job's size as PMIx knows it, or 0. */
static OUT_OF_LINE u32 job_size(const pmix_proc_t *me)
{
	pmix_value_t *v = NULL;
	pmix_proc_t job;
	u32 n = 0;

	PMIX_LOAD_PROCID(&job, me->nspace, PMIX_RANK_WILDCARD);
	if (PMIx_Get(&job, PMIX_JOB_SIZE, NULL, 0, &v) != PMIX_SUCCESS || !v)
		return 0;
	if (v->type == PMIX_UINT32)
		n = v->data.uint32;
	PMIX_VALUE_RELEASE(v);
	return n;
}

/* Put @mine under @key, commit, and wait for every rank of the job. */
static OUT_OF_LINE int publish(const pmix_proc_t *me, const char *key, const char *mine,
		   char *msg, size_t len)
{
	pmix_value_t val;
	pmix_info_t info;
	pmix_proc_t all;
	bool collect = true;
	pmix_status_t rc;

	PMIX_VALUE_CONSTRUCT(&val);
	val.type = PMIX_STRING;
	val.data.string = (char *)mine;
	rc = PMIx_Put(PMIX_GLOBAL, key, &val);
	if (rc == PMIX_SUCCESS)
		rc = PMIx_Commit();
	if (rc != PMIX_SUCCESS) {
		snprintf(msg, len, "cannot publish this rank's address: %s",
			 PMIx_Error_string(rc));
		return -EIO;
	}
	PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
	PMIX_LOAD_PROCID(&all, me->nspace, PMIX_RANK_WILDCARD);
	rc = PMIx_Fence(&all, 1, &info, 1);
	PMIX_INFO_DESTRUCT(&info);
	if (rc != PMIX_SUCCESS) {
		snprintf(msg, len, "the fence with the other ranks failed: %s",
			 PMIx_Error_string(rc));
		return -EIO;
	}
	return 0;
}

/* Rank @r's address under @key, appended to @buf (@at bytes so far). */
static OUT_OF_LINE int collect(const pmix_proc_t *me, u32 r, const char *key,
		   char *buf, size_t *at, size_t cap, char *msg, size_t len)
{
	pmix_value_t *v = NULL;
	pmix_proc_t peer;
	pmix_status_t rc;
	int n, err = 0;

	PMIX_LOAD_PROCID(&peer, me->nspace, r);
	rc = PMIx_Get(&peer, key, NULL, 0, &v);
	if (rc != PMIX_SUCCESS || !v) {
		snprintf(msg, len, "rank %u published no address (%s)", r,
			 PMIx_Error_string(rc));
		return -EIO;
	}
	if (v->type != PMIX_STRING || !v->data.string ||
	    strchr(v->data.string, ',')) {
		snprintf(msg, len, "rank %u's address is not a host:port", r);
		err = -EINVAL;
	} else {
		n = snprintf(buf + *at, cap - *at, "%s%s", r ? "," : "",
			     v->data.string);
		if (n < 0 || (size_t)n >= cap - *at) {
			snprintf(msg, len, "rank %u's address is too long", r);
			err = -EINVAL;
		} else {
			*at += (size_t)n;
		}
	}
	PMIX_VALUE_RELEASE(v);
	return err;
}

int gn_pmix_exchange(int rank, int world, const char *mine, char **list,
		     char *msg, size_t len)
{
	char key[32];
	size_t at = 0, cap = (size_t)world * 64 + 1;
	pmix_proc_t me;
	pmix_status_t rc;
	u32 size, r;
	int err;

	*list = NULL;
	rc = PMIx_Init(&me, NULL, 0);
	if (rc != PMIX_SUCCESS) {
		snprintf(msg, len, "cannot reach the launcher's PMIx server: %s",
			 PMIx_Error_string(rc));
		return -ENOTCONN;
	}
	size = job_size(&me);
	if (me.rank != (pmix_rank_t)rank || size != (u32)world) {
		snprintf(msg, len, "the launcher says rank %u of %u, gradnet was given rank %d of %d",
			 me.rank, size, rank, world);
		err = -EINVAL;
		goto out_fini;
	}
	snprintf(key, sizeof(key), "gradnet.addr.%u", contexts++);
	err = publish(&me, key, mine, msg, len);
	if (err)
		goto out_fini;
	*list = malloc(cap);
	if (!*list) {
		snprintf(msg, len, "out of memory");
		err = -ENOMEM;
		goto out_fini;
	}
	for (r = 0; r < (u32)world && !err; r++)
		err = collect(&me, r, key, *list, &at, cap, msg, len);
	if (err) {
		free(*list);
		*list = NULL;
	}
out_fini:
	PMIx_Finalize(NULL, 0);
	return err;
}
