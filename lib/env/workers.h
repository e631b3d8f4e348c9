/* SPDX-License-Identifier: MIT */
/*
 * workers.h - a pool of codec workers for a process: threads started
 * once, when a context opens, that run the parts of the core's
 * gn_env_run() batches alongside the thread that hands them out.
 */
#ifndef GN_ENV_WORKERS_H
#define GN_ENV_WORKERS_H

#include <pthread.h>

#include "env.h"

/* The most workers a context may ask for (GN_CODEC_WORKERS). */
#define GN_WORKERS_MAX 64

struct gn_workers;

int gn_workers_new(u32 n, struct gn_workers **out);
void gn_workers_free(struct gn_workers *w);
void gn_workers_run(struct gn_workers *w, void (*fn)(void *arg, u32 part),
		    void *arg, u32 parts);

#endif /* GN_ENV_WORKERS_H */
