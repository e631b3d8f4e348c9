/* SPDX-License-Identifier: MIT */
/*
 * collective.h - the protocol core as a driver sees it: open a context
 * over an environment (lib/env) and a transport (lib/transport), poll it,
 * register tensors and run allreduces. libgradnet's progress thread, the
 * DPDK poll loop and the kernel module are such drivers.
 *
 * Locking: a driver calls every function here with the env's lock held,
 * except gn_core_open(), gn_core_free() and gn_core_allreduce_start(),
 * which compresses the caller's gradient with the lock dropped and takes
 * it where it touches shared state.
 */
#ifndef GN_COLLECTIVE_H
#define GN_COLLECTIVE_H

#include <gradnet/gradnet.h>

#include "codec/codec.h"
#include "env.h"
#include "transport.h"

struct gn_ctx;
struct gn_event;
struct gn_peer_addr;

struct gn_core_conf {
	int rank, world;
	u32 job;
	u32 mtu;			/* the job's MTU, the same on every rank */
	u32 chunk;			/* values per chunk */
	struct gn_codec_spec codec;	/* tensors' default codec (never 0) */
	u64 timeout_ns;			/* a silent peer is dead after this */
	u64 step_timeout_ns;		/* 0: steps wait for shares forever */
	const u8 *key;			/* GN_MAC_KEY_LEN bytes; NULL: insecure */
	bool clear;			/* bodies authenticated only (GN_ENCRYPT=0) */
	u8 version;			/* wire version; 0: GN_WIRE_VERSION */
	/* Told what the session key binds when the handshake is done (optional). */
	void (*on_session)(const u8 *info, size_t len);
	/*
	 * Every packet event, after the core counted it (optional): where a
	 * driver hangs its probes (USDT in libgradnet, tracepoints in the
	 * module). @ev is a struct gn_event (delivery.h).
	 */
	void (*account)(void *arg, const struct gn_event *ev);
	void *account_arg;
};

/*
 * gn_core_open() - a context that starts its handshake at the first poll
 * @conf: the job's parameters, checked by the caller
 * @env: memory, time, lock, wake and randomness; kept by reference
 * @tp: an opened transport; kept by reference, closed by the caller after
 *	gn_core_free()
 * Return: 0 or -ENOMEM, -EINVAL (max packet too small for the MTU).
 */
int gn_core_open(const struct gn_core_conf *conf, const struct gn_env *env,
		 struct gn_transport *tp, struct gn_ctx **out);
void gn_core_free(struct gn_ctx *ctx);

/* Peer @rank's name in messages ("rank 2 (10.0.0.3:7000)"); "rank N" by default. */
void gn_core_set_name(struct gn_ctx *ctx, int rank, const char *name);

/*
 * gn_core_set_peers() - the peer list this rank was given, every rank's
 * address in rank order, before the first poll: the handshake compares
 * its digest with every peer's (delivery.h) and refuses a difference.
 * Without it the digest is that of no list, which only such ranks share.
 * Return: 0, or the environment's error from hashing the list.
 */
int gn_core_set_peers(struct gn_ctx *ctx, const struct gn_peer_addr *addrs);

/*
 * gn_core_poll() - everything due: receive, reduce, acknowledge, retransmit,
 * the handshake, liveness and step deadlines
 * Return: when to poll again at the latest (an absolute time of the env's
 * clock); a time not after now means there is more to do at once.
 */
u64 gn_core_poll(struct gn_ctx *ctx);

/* 0 while the handshake runs, 1 once it is done, -errno if it failed. */
int gn_core_status(const struct gn_ctx *ctx);
/* Why the open failed, the last API call failed, or a step failed. */
const char *gn_core_errmsg(const struct gn_ctx *ctx);
const char *gn_core_api_errmsg(const struct gn_ctx *ctx);

/*
 * A registration as the core takes it: @codec's codec 0 is the job's, and
 * its parameters left unset (given) are the job's (same codec) or the
 * codec's defaults. The core checks codec and parameters.
 */
struct gn_core_tensor {
	u32 id;
	u64 elems;
	unsigned int flags;		/* GN_TENSOR_* */
	struct gn_codec_spec codec;
};

/* As gn_tensor_register(). */
int gn_core_tensor_register(struct gn_ctx *ctx, const struct gn_core_tensor *o);

/*
 * As gn_bucket_register(): @o describes the whole bucket (its elems the
 * members' sum, checked by the caller with the members), @elems[0..@members)
 * the members' sizes; @shared lets chunks span members.
 */
int gn_core_bucket_register(struct gn_ctx *ctx, const struct gn_core_tensor *o,
			    const size_t *elems, u32 members, bool shared);

/*
 * A model tensor's optimizer and codecs as the core takes them (the
 * public gn_model_opts, floats as their bits): @down's codec 0 is the
 * gradients' codec with their parameters; @alpha, @beta, @eta 0 are
 * DORE's defaults. The core checks every field.
 */
struct gn_core_model {
	struct gn_codec_spec down;
	u32 flags;			/* GN_MODEL_* */
	u32 momentum, weight_decay;
	u32 alpha, beta, eta;
};

/* As gn_model_register(); @o->flags must be 0. */
int gn_core_model_register(struct gn_ctx *ctx, const struct gn_core_tensor *o,
			   const struct gn_core_model *m);

/*
 * gn_core_model_start() - a step of model tensor @id: compress @grad and
 * send it (lock NOT held); @params is updated when the step completes.
 * @lr: the learning rate's float32 bits
 * Return: as gn_core_allreduce_start(), and -EINVAL for a bad @lr or a
 * tensor that is not a model tensor; gn_core_allreduce_done() gives the
 * step's outcome.
 */
int gn_core_model_start(struct gn_ctx *ctx, u32 id, float *grad,
			float *params, u32 lr);

/*
 * gn_core_allreduce_start() - compress @data and send it (lock NOT held)
 * Return: 0 or -ENOENT, -EBUSY, -ENOMEM; the step's own outcome comes from
 * gn_core_allreduce_done().
 */
int gn_core_allreduce_start(struct gn_ctx *ctx, u32 id, float *data);
/*
 * gn_core_allreduce_done() - has tensor @id's step in flight ended?
 * Return: 0 not yet; 1 it has, *err holds its outcome (0 or -errno, the
 * message in gn_core_api_errmsg()) and the tensor is free for the next
 * start; -EINVAL/-ENOENT if there is no step in flight.
 */
int gn_core_allreduce_done(struct gn_ctx *ctx, u32 id, int *err);

/*
 * Unregistering: retire stops the tensor's steps (-ENOENT, -EBUSY);
 * owes says whether peers still have to acknowledge its last results;
 * remove forgets it (after owes turned false, or to give up).
 */
int gn_core_tensor_retire(struct gn_ctx *ctx, u32 id);
bool gn_core_tensor_owes(struct gn_ctx *ctx, u32 id);
int gn_core_tensor_remove(struct gn_ctx *ctx, u32 id, bool give_up);

/*
 * Messages replaced in their slot because a slow receiver still owed an
 * acknowledgement two steps later: the one allocation a step may make.
 */
u64 gn_core_orphans(const struct gn_ctx *ctx);

/* Does this rank still owe a live peer data or control messages? */
bool gn_core_owes(const struct gn_ctx *ctx);
void gn_core_ack_now(struct gn_ctx *ctx);

/* Counters: the context's (@peer -1), a peer's; a tensor's. NULL if none. */
const struct gn_stats *gn_core_stats(const struct gn_ctx *ctx, int peer);
const struct gn_stats *gn_core_tensor_stats(struct gn_ctx *ctx, u32 id);

#endif /* GN_COLLECTIVE_H */
