// SPDX-License-Identifier: MIT
/*
 * workers.c - the pool behind the libc environment's run(): n - 1
 * threads, started when the context opens and parked on a condition
 * variable between batches, plus the thread that hands a batch out. A
 * batch's parts are claimed one at a time from a shared counter, so a
 * thread that the scheduler delays simply claims fewer. Nothing is
 * allocated and no thread is created per batch.
 *
 * One batch at a time: the caller's thread (encoding at start) and the
 * progress thread (decoding) may both have one; the second finds the pool
 * busy and runs its parts itself, which gives the same bytes.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "workers.h"

struct gn_workers {
	pthread_mutex_t lock;
	pthread_cond_t go;		/* a batch was posted, or stop */
	pthread_cond_t idle;		/* a thread left its batch */
	pthread_t *threads;
	u32 nthreads;
	bool stop;
	bool busy;			/* a caller owns the batch slot */
	u64 gen;			/* batches posted so far */
	u32 active;			/* threads inside the current batch */
	/* The batch: written under the lock while active is 0. */
	void (*fn)(void *arg, u32 part);
	void *arg;
	u32 parts;
	u32 next;			/* next unclaimed part (atomic) */
};

/* Claim and run parts until none is left. */
static void claim_parts(struct gn_workers *w, void (*fn)(void *, u32),
			void *arg, u32 parts)
{
	u32 i;

	while ((i = __atomic_fetch_add(&w->next, 1, __ATOMIC_RELAXED)) < parts)
		fn(arg, i);
}

static void *worker_main(void *p)
{
	struct gn_workers *w = p;
	u64 seen = 0;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		void (*fn)(void *, u32);
		void *arg;
		u32 parts;

		while (!w->stop && w->gen == seen)
			pthread_cond_wait(&w->go, &w->lock);
		if (w->stop)
			break;
		seen = w->gen;
		fn = w->fn;
		arg = w->arg;
		parts = w->parts;
		w->active++;
		pthread_mutex_unlock(&w->lock);
		claim_parts(w, fn, arg, parts);
		pthread_mutex_lock(&w->lock);
		if (!--w->active)
			pthread_cond_broadcast(&w->idle);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/**
 * gn_workers_run() - run @fn(@arg, part) for parts 0..@parts-1 on the pool
 * @w: the pool
 * @fn: called once per part, from any of the pool's threads or this one
 * @arg: passed to @fn
 * @parts: how many
 *
 * Returns when every call has returned; the calls' writes are visible to
 * the caller then (the pool's lock orders them). If another batch holds
 * the pool, the parts run here, in order.
 */
void gn_workers_run(struct gn_workers *w, void (*fn)(void *arg, u32 part),
		    void *arg, u32 parts)
{
	u32 i;

	pthread_mutex_lock(&w->lock);
	if (w->busy) {
		pthread_mutex_unlock(&w->lock);
		for (i = 0; i < parts; i++)
			fn(arg, i);
		return;
	}
	w->busy = true;
	/* A thread still leaving the last batch must not see this one's counter. */
	while (w->active)
		pthread_cond_wait(&w->idle, &w->lock);
	w->fn = fn;
	w->arg = arg;
	w->parts = parts;
	__atomic_store_n(&w->next, 0, __ATOMIC_RELAXED);
	w->gen++;
	pthread_cond_broadcast(&w->go);
	pthread_mutex_unlock(&w->lock);

	claim_parts(w, fn, arg, parts);

	/* Every part is claimed; those the threads took end when they leave. */
	pthread_mutex_lock(&w->lock);
	while (w->active)
		pthread_cond_wait(&w->idle, &w->lock);
	w->busy = false;
	pthread_mutex_unlock(&w->lock);
}

/**
 * gn_workers_new() - a pool of @n workers: the caller and @n - 1 threads
 * @n: 2..GN_WORKERS_MAX
 * @out: the pool, for gn_workers_free()
 *
 * Return: 0, -EINVAL for @n out of range, or -errno from pthread_create()
 * (the threads already started are stopped again).
 */
int gn_workers_new(u32 n, struct gn_workers **out)
{
	struct gn_workers *w;
	int r = 0;

	*out = NULL;
	if (n < 2 || n > GN_WORKERS_MAX)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->threads = calloc(n - 1, sizeof(*w->threads));
	if (!w->threads) {
		free(w);
		return -ENOMEM;
	}
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->go, NULL);
	pthread_cond_init(&w->idle, NULL);
	for (; w->nthreads < n - 1; w->nthreads++) {
		r = -pthread_create(&w->threads[w->nthreads], NULL, worker_main, w);
		if (r)
			break;
	}
	if (r) {
		gn_workers_free(w);
		return r;
	}
	*out = w;
	return 0;
}

/**
 * gn_workers_free() - stop the pool's threads and free it
 * @w: a pool no batch runs on, or NULL
 */
void gn_workers_free(struct gn_workers *w)
{
	u32 i;

	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_broadcast(&w->go);
	pthread_mutex_unlock(&w->lock);
	for (i = 0; i < w->nthreads; i++)
		pthread_join(w->threads[i], NULL);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->go);
	pthread_cond_destroy(&w->idle);
	free(w->threads);
	free(w);
}
