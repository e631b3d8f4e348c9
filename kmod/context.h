/* SPDX-License-Identifier: MIT */
/*
 * context.h - one open file of /dev/gradnet: one rank of one job. The
 * core's context, its environment, the tunnel socket, the worker that
 * drives the core (worker.c), and the tensors as the ioctls see them
 * (dev.c).
 */
#ifndef GN_KMOD_CONTEXT_H
#define GN_KMOD_CONTEXT_H

#include <linux/atomic.h>
#include <linux/spinlock.h>
#include <linux/uidgid.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include <uapi/linux/gradnet.h>
#include "kernel.h"
#include "account.h"
#include "pin.h"

struct gn_ctx;
struct gk_sock;
struct mem_cgroup;
struct task_struct;

/*
 * A registered tensor. Its fields and the map that holds it are under the
 * env's lock, as the core's own state is.
 */
struct gk_tensor {
	u32 id;
	u64 elems;
	bool started;			/* START took it; WAIT or close ends it */
	bool starting;			/* START is in the core, the lock dropped */
	bool finished;			/* the core gave its outcome: @err, @msg */
	bool retiring;			/* UNREGISTER runs */
	bool unpinning;			/* its pin is being released */
	bool model;			/* a model tensor: START pins @ppin too */
	int err;
	struct gk_pin pin;
	struct gk_pin ppin;		/* a model tensor's parameters */
	char msg[GRADNET_ERRMSG_LEN];
};

enum gk_state {
	GK_NEW,				/* no OPEN yet */
	GK_OPENING,			/* an OPEN runs */
	GK_OPEN,			/* the job is joined */
	GK_FAILED,			/* OPEN failed past its checks */
};

struct gk_ctx {
	atomic_t state;			/* enum gk_state */
	struct gn_env_kernel env;
	struct gn_ctx *core;
	struct gk_sock *ks;
	struct gn_kmod_flow flow;	/* the tracepoints' flow */
	int rank, world;
	u64 timeout_ns;
	struct xarray tensors;		/* struct gk_tensor by id */
	unsigned int ntensors;		/* in @tensors; under the env's lock */
	unsigned int max_tensors;	/* max_tensors at OPEN */

	/* Pays for everything the context allocates: the file's opener's. */
	struct mem_cgroup *memcg;
	kuid_t uid;			/* OPEN's caller, counted in user.c */
	bool user_counted;

	struct task_struct *worker;
	wait_queue_head_t worker_wq;
	atomic_t kicked;		/* work came since the last poll */
	int reaped;			/* env wakes at the worker's last reap */

	spinlock_t msg_lock;
	char errmsg[GRADNET_ERRMSG_LEN];	/* the last failed ioctl's */
};

/* dev.c */
void gk_reap(struct gk_ctx *c);

/* worker.c */
void gk_kick(void *ctx);
int gk_worker_start(struct gk_ctx *c);
void gk_worker_stop(struct gk_ctx *c);

#endif /* GN_KMOD_CONTEXT_H */
