// SPDX-License-Identifier: MIT
/*
 * mpi-allreduce.c - the baseline gradnet is measured against: Open MPI's
 * MPI_Allreduce (float, sum, in place) over real gradients, timed per call.
 *
 *   mpi-allreduce [--elems N] [--iters K] [--warmup W] [--iface DEV]
 *                 [--data DIR]
 *
 * The buffer tiles the *.f32 gradient files of DIR (default: the repo's
 * data/gradients/mlp-digits), each rank from a different offset, and is
 * refilled before every call so each one reduces real values. Every timed
 * call starts after a barrier; its time is the slowest rank's. With --iface
 * the bytes each rank sent and received are read from that interface's
 * counters around the timed calls, TCP/IP/Ethernet overhead included;
 * without it bytes_per_rank is the ring allreduce's 2(P-1)/P * 4N.
 * Prints one JSON line on rank 0.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "paths.h"

#define CHECK_SAMPLES	4096

struct mpi_args {
	long elems;
	int iters;
	int warmup;
	const char *iface;
	const char *data;
};

/* The gradient values, concatenated in file-name order. */
struct grad_pool {
	float *v;
	size_t n;
};

static int f32_filter(const struct dirent *d)
{
	size_t len = strlen(d->d_name);

	return len > 4 && !strcmp(d->d_name + len - 4, ".f32");
}

static int pool_load(struct grad_pool *pool, const char *dir)
{
	struct dirent **names;
	char path[2 * PATH_MAX];
	int i, nr, err = 0;

	pool->v = NULL;
	pool->n = 0;
	nr = scandir(dir, &names, f32_filter, alphasort);
	if (nr < 0)
		return -errno;
	for (i = 0; i < nr && !err; i++) {
		FILE *f;
		long bytes;
		float *v;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		f = fopen(path, "rb");
		if (!f) {
			err = -errno;
			break;
		}
		if (fseek(f, 0, SEEK_END) || (bytes = ftell(f)) < 0 ||
		    fseek(f, 0, SEEK_SET)) {
			err = -EIO;
		} else {
			v = realloc(pool->v, (pool->n + bytes / 4) * sizeof(float));
			if (!v)
				err = -ENOMEM;
			else if (fread(v + pool->n, 4, bytes / 4, f) !=
				 (size_t)bytes / 4)
				err = -EIO;
			if (v) {
				pool->v = v;
				if (!err)
					pool->n += bytes / 4;
			}
		}
		fclose(f);
	}
	for (i = 0; i < nr; i++)
		free(names[i]);
	free(names);
	if (!err && !pool->n)
		err = -ENOENT;
	return err;
}

/* Rank @rank's start in the pool: the ranks' buffers differ. */
static size_t pool_offset(const struct grad_pool *pool, int rank)
{
	return (size_t)rank * (pool->n / 7 + 1) % pool->n;
}

static void fill(float *buf, long n, const struct grad_pool *pool, int rank)
{
	size_t off = pool_offset(pool, rank), chunk;
	long i = 0;

	while (i < n) {
		chunk = pool->n - off;
		if (chunk > (size_t)(n - i))
			chunk = n - i;
		memcpy(buf + i, pool->v + off, chunk * sizeof(float));
		i += chunk;
		off = 0;
	}
}

/* The sum every rank should get at @i, in double; *abs gets sum |x|. */
static double expected_at(const struct grad_pool *pool, int nranks, long i,
			  double *abs)
{
	double s = 0, x;
	int r;

	*abs = 0;
	for (r = 0; r < nranks; r++) {
		x = pool->v[(pool_offset(pool, r) + i) % pool->n];
		s += x;
		*abs += fabs(x);
	}
	return s;
}

/*
 * Return how many sampled elements differ from the exact sum by more than
 * float summation in any order can: (P - 1) roundings of at most sum |x|.
 */
static long check(const float *buf, long n, const struct grad_pool *pool,
		  int nranks)
{
	long k, i, bad = 0;
	double want, abs;

	for (k = 0; k < CHECK_SAMPLES; k++) {
		i = (long)((uint64_t)k * 2654435761u % (uint64_t)n);
		want = expected_at(pool, nranks, i, &abs);
		if (fabs(buf[i] - want) > nranks * 0x1p-23 * abs)
			bad++;
	}
	return bad;
}

/* Read tx and rx byte counters of @iface; 0 on success. */
static int iface_bytes(const char *iface, unsigned long long *tx,
		       unsigned long long *rx)
{
	static const char *const which[2] = { "tx_bytes", "rx_bytes" };
	unsigned long long *out[2] = { tx, rx };
	char path[256];
	int i, ok;
	FILE *f;

	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "/sys/class/net/%s/statistics/%s",
			 iface, which[i]);
		f = fopen(path, "r");
		if (!f)
			return -errno;
		ok = fscanf(f, "%llu", out[i]) == 1;
		fclose(f);
		if (!ok)
			return -EIO;
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int parse_args(int argc, char **argv, struct mpi_args *a)
{
	static const struct option longopts[] = {
		{ "elems", required_argument, NULL, 'n' },
		{ "iters", required_argument, NULL, 'k' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "iface", required_argument, NULL, 'i' },
		{ "data", required_argument, NULL, 'd' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			a->elems = atol(optarg);
			break;
		case 'k':
			a->iters = atoi(optarg);
			break;
		case 'w':
			a->warmup = atoi(optarg);
			break;
		case 'i':
			a->iface = optarg;
			break;
		case 'd':
			a->data = optarg;
			break;
		default:
			return -EINVAL;
		}
	}
	if (optind != argc || a->elems < 1 || a->elems > INT32_MAX ||
	    a->iters < 1 || a->warmup < 0)
		return -EINVAL;
	return 0;
}

int main(int argc, char **argv)
{
	struct mpi_args a = { .elems = 1 << 20, .iters = 10, .warmup = 2,
			      .data = "data/gradients/mlp-digits" };
	static char digits[PATH_MAX + 16];
	struct gn_tool_paths paths;
	unsigned long long tx0 = 0, rx0 = 0, tx1 = 0, rx1 = 0;
	double *times = NULL, bytes[2], sum_bytes[2], t0, t, tmax;
	struct grad_pool pool;
	int rank, nranks, it, err, bad_args, have_bytes = 0;
	long bad = 0, all_bad = 0;
	float *buf = NULL;
	double ring;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);

	if (!gn_tool_paths(&paths)) {
		snprintf(digits, sizeof(digits), "%s/mlp-digits", paths.data);
		a.data = digits;
	}
	bad_args = parse_args(argc, argv, &a);
	if (bad_args) {
		if (!rank)
			fprintf(stderr, "usage: mpi-allreduce [--elems N] [--iters K] [--warmup W] [--iface DEV] [--data DIR]\n");
		MPI_Finalize();
		return 2;
	}
	err = pool_load(&pool, a.data);
	if (err) {
		fprintf(stderr, "mpi-allreduce: rank %d: %s: %s\n", rank, a.data,
			strerror(-err));
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	buf = malloc(a.elems * sizeof(float));
	times = calloc(a.iters, sizeof(double));
	if (!buf || !times) {
		fprintf(stderr, "mpi-allreduce: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}

	for (it = 0; it < a.warmup + a.iters; it++) {
		fill(buf, a.elems, &pool, rank);
		if (it == a.warmup && a.iface &&
		    !iface_bytes(a.iface, &tx0, &rx0))
			have_bytes = 1;
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		MPI_Allreduce(MPI_IN_PLACE, buf, (int)a.elems, MPI_FLOAT,
			      MPI_SUM, MPI_COMM_WORLD);
		t = MPI_Wtime() - t0;
		MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
		if (it >= a.warmup)
			times[it - a.warmup] = tmax;
		if (it == 0)
			bad = check(buf, a.elems, &pool, nranks);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (have_bytes && iface_bytes(a.iface, &tx1, &rx1))
		have_bytes = 0;
	MPI_Allreduce(MPI_IN_PLACE, &have_bytes, 1, MPI_INT, MPI_MIN,
		      MPI_COMM_WORLD);
	bytes[0] = (double)(tx1 - tx0) / a.iters;
	bytes[1] = (double)(rx1 - rx0) / a.iters;
	MPI_Reduce(bytes, sum_bytes, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
	MPI_Reduce(&bad, &all_bad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);

	if (!rank) {
		qsort(times, a.iters, sizeof(double), cmp_double);
		ring = 2.0 * (nranks - 1) / nranks * 4.0 * a.elems;
		printf("{\"ranks\":%d,\"elems\":%ld,\"iters\":%d,\"warmup\":%d,"
		       "\"mpi_s\":%.6f,\"min_s\":%.6f,\"max_s\":%.6f,",
		       nranks, a.elems, a.iters, a.warmup,
		       a.iters % 2 ? times[a.iters / 2] :
			(times[a.iters / 2 - 1] + times[a.iters / 2]) / 2,
		       times[0], times[a.iters - 1]);
		if (have_bytes)
			printf("\"bytes_per_rank\":%.0f,\"rx_bytes_per_rank\":%.0f,"
			       "\"bytes_source\":\"%s tx_bytes\",",
			       sum_bytes[0] / nranks, sum_bytes[1] / nranks,
			       a.iface);
		else
			printf("\"bytes_per_rank\":%.0f,"
			       "\"bytes_source\":\"ring formula\",", ring);
		printf("\"ring_bytes_per_rank\":%.0f,\"check_mismatches\":%ld}\n",
		       ring, all_bad);
	}
	free(times);
	free(buf);
	free(pool.v);
	MPI_Finalize();
	return all_bad ? 1 : 0;
}
