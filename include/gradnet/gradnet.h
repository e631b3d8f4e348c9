/* SPDX-License-Identifier: MIT */
/*
 * gradnet/gradnet.h - the trainer's API: open a context for a job, register
 * each gradient tensor once, allreduce it every step; or register the
 * parameters as a model tensor and step it with their gradient.
 *
 * A job is world_size ranks, one context each. Allreduce sums (or averages)
 * a tensor over all ranks: a sharded reduce-scatter then allgather in which
 * every contribution that crosses the network is 3LC-compressed with error
 * feedback, the shard owner sums them with its own share and re-compresses
 * the sum with its own error feedback, and every rank decodes the same
 * bytes, so every rank ends with bit-identical values. Error-feedback buffers live here, one per
 * tensor and direction; a step that fails leaves them as they were.
 *
 * Every function returns 0 (or a count) on success and a negative errno on
 * failure; gn_ctx_errmsg() then says what went wrong: which peer, which
 * tensor, which parameter. A NULL context, options, stats or data pointer
 * is refused with -EINVAL, never dereferenced.
 *
 * Threads:
 *  - Calls on different contexts are independent and may run at once.
 *  - On one context, gn_tensor_register(), gn_model_register(),
 *    gn_allreduce_start(), gn_allreduce_wait(), gn_allreduce(),
 *    gn_model_step*() and gn_stats_*() may be called from several threads
 *    at once, as long as each tensor is driven by one thread at a time
 *    (its start and its wait are not raced).
 *  - gn_ctx_errmsg() describes the last failing call on the context by any
 *    thread; with several threads, read it in the thread that failed before
 *    another call can fail.
 *  - gn_ctx_close() must not race any other call on the same context, and
 *    the context must not be used after it.
 *  - gn_ctx_open() may run in several threads at once; gn_last_errmsg() is
 *    per thread. gn_ctx_open() reads the environment, and removes GN_KEY
 *    and GN_KEY_FD from it, so it must not race getenv(), setenv() or
 *    putenv() in another thread.
 *  - gn_strerror(), gn_drop_name(), gn_version() and gn_version_number()
 *    return static text or values and are safe from any thread.
 */
#ifndef GRADNET_GRADNET_H
#define GRADNET_GRADNET_H

#include <stddef.h>
#include <stdint.h>

#ifndef GN_EXPORT
#define GN_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* This header's version; gn_version_number() is the library's. */
#define GN_VERSION_MAJOR 0
#define GN_VERSION_MINOR 2
#define GN_VERSION_PATCH 0
#define GN_VERSION_NUMBER                                                     \
	((GN_VERSION_MAJOR << 16) | (GN_VERSION_MINOR << 8) | GN_VERSION_PATCH)

struct gn_ctx;

/*
 * Declare and fill an options struct: GN_OPTS(gn_ctx_opts, o, .rank = 1).
 * The first field of every options struct is its size, so the ABI can grow:
 * fields past a caller's sz (an older caller) take their defaults, and
 * nonzero bytes past the library's own size (a newer caller asking for
 * something this library cannot do) are refused with -E2BIG. A sz smaller
 * than the size field, or one that misses a required field, is -EINVAL.
 */
#define GN_OPTS(type, name, ...)                                              \
	struct type name = { .sz = sizeof(struct type), __VA_ARGS__ }

/*
 * Codecs a tensor can use: the compressors of the registry. The same
 * numbers name them on the wire and in the kernel module's ioctls;
 * gn_codec_id() and gn_codec_name() map the names ("none", "3lc", ...)
 * that GN_CODEC and the Python binding take. A codec's parameters are
 * given as text, "key=value,key=value" (gradnet(7) lists them per codec):
 * @params of gn_tensor_opts and gn_bucket_opts, @codec_params of
 * gn_ctx_opts, or GN_CODEC="name:key=value,...".
 */
enum gn_codec {
	GN_CODEC_DEFAULT = 0,	/* the job's codec (gn_ctx_opts.codec) */
	GN_CODEC_NONE = 1,	/* dense float32, the uncompressed baseline */
	GN_CODEC_3LC = 2,	/* three-value quantization, quartic, zero runs;
				   parameter s (1 <= s < 2, default 1) */
	GN_CODEC_TOPK = 3,	/* top-k with error feedback, SparCML's sparse
				   allreduce; density, block, bits (QSGD
				   values), bucket, norm */
	GN_CODEC_QSGD = 4,	/* QSGD: stochastic levels per bucket; bits,
				   bucket, norm */
	GN_CODEC_CLTK = 5,	/* ScaleCom's cyclic local top-k: a leader's
				   index set per chunk, low-pass memory;
				   density, beta, warmup, bits, bucket, norm */
};

/* gn_ctx_opts.flags */
#define GN_CTX_INSECURE (1u << 0)	/* run without a key: no authentication */
#define GN_CTX_RANK	(1u << 1)	/* gn_ctx_opts.rank is set, even if 0 */
#define GN_CTX_DPDK_PORT (1u << 2)	/* gn_ctx_opts.dpdk_port is set, even if 0 */
#define GN_CTX_DPDK_QUEUE (1u << 3)	/* gn_ctx_opts.dpdk_queue is set: the
					   application's port, this queue ours */
#define GN_CTX_CLEAR	(1u << 4)	/* authenticate bodies, do not encrypt
					   them (as GN_ENCRYPT=0) */

/* gn_tensor_opts.flags (and gn_bucket_opts.flags) */
#define GN_TENSOR_AVERAGE (1u << 0)	/* result is the mean, not the sum */

/* gn_bucket_opts.flags only */
#define GN_BUCKET_SHARED_SCALE (1u << 8) /* chunks span members: one 3LC
					    scale for neighbours */

/* Most members a bucket may have. */
#define GN_BUCKET_MAX_MEMBERS 65536u

/*
 * struct gn_ctx_opts - how to join a job. Fields left zero or NULL are
 * taken from the environment, so a zeroed struct (or NULL) joins the job
 * the launcher describes:
 *	GN_RANK, GN_WORLD_SIZE, GN_PEERS (host:port,... in rank order),
 *	GN_KEY (32 hex digits), or GN_KEY_FILE (a file holding them, which
 *	only its owner may access: mode 0600 or stricter, else -EACCES), or
 *	GN_KEY_FD (a descriptor to read them from, a launcher's pipe; at
 *	most one of the three), GN_ENCRYPT (1, the default: packet bodies
 *	are encrypted; 0: only authenticated), GN_JOB (job id, decimal or
 *	0x hex), GN_MTU, GN_TIMEOUT_MS, GN_STEP_TIMEOUT_MS, GN_CODEC (a
 *	codec's name and parameters: "3lc", "3lc:s=1.5", "none"), GN_S
 *	(3LC's s, as "3lc:s=..." says it), GN_INSECURE=1, GN_TRANSPORT (udp
 *	or dpdk); for dpdk also
 *	GN_DPDK_EAL (EAL arguments, space-separated), GN_DPDK_PORT (port id,
 *	default 0), GN_DPDK_PEERS (every rank's MAC address, rank order,
 *	comma-separated; "-" for this rank: the port's), GN_DPDK_MBUFS (tx
 *	mbufs), GN_DPDK_POLL_US (longest idle sleep of the poll loop, default
 *	1000; 0 polls without sleeping), GN_DPDK_SPIN_US (how long it polls
 *	after the last packet before it sleeps, default 1000), GN_DPDK_LCORE
 *	(the lcore whose CPUs the progress thread polls on), GN_DPDK_RTC (1:
 *	a thread that waits for an allreduce polls the port itself until
 *	its step is done, the default unless GN_DPDK_LCORE is set; 0: the
 *	progress thread always polls).
 *	GN_CODEC_WORKERS (1..64) sets
 *	@codec_workers.
 * @sz: sizeof(struct gn_ctx_opts)
 * @rank: this process, 0..world_size-1. Zero (or negative) without
 *	GN_CTX_RANK in @flags takes GN_RANK (or the MPI, PMI, Slurm or torch
 *	launcher's rank variable), or 0 in a job of one rank; to give rank 0
 *	explicitly, set GN_CTX_RANK.
 * @world_size: ranks in the job
 * @peers: every rank's UDP address, "host:port,host:port,...", rank order;
 *	this rank binds its own entry
 * @key: the job's 16-byte authentication key, the same on every rank;
 *	it takes precedence over the key variables
 * @key_len: 16
 * @job_id: tells concurrent jobs apart; packets of other jobs are dropped
 * @mtu: IP MTU of the path, 576..9000 (default 1500); packets fit in it
 * @timeout_ms: a peer silent for this long fails the call with -ETIMEDOUT
 *	(default 10000)
 * @flags: GN_CTX_*; other bits are refused with -EINVAL
 * @codec: job default codec for tensors (default GN_CODEC_3LC)
 * @s: job default 3LC sparsity multiplier, 1 <= s < 2 (default 1.0);
 *	the same as "s=..." in @codec_params
 * @codec_params: the job default codec's parameters, "key=value,...";
 *	tensors of that codec take them unless they set their own (NULL:
 *	GN_CODEC's, else the codec's defaults)
 * @chunk: values per 3LC chunk, each with its own scale (default 65536)
 * @step_timeout_ms: an allreduce still waiting this long after it started
 *	for a peer's share (a peer that is alive but never calls allreduce
 *	for the tensor) fails with -ETIMEDOUT on every rank, naming that
 *	peer (default 600000, ten minutes, so that one rank may pause for
 *	evaluation or a checkpoint while the others wait)
 * @transport: the data path, "udp" (the default) or "dpdk" (a DPDK port
 *	polled by the progress thread; the same packets on the wire, so
 *	ranks on either path share a job); NULL takes GN_TRANSPORT. A
 *	library built without DPDK refuses "dpdk" with -EOPNOTSUPP.
 * @codec_workers: threads that share the codec work of a step, 1..64
 *	(0 takes GN_CODEC_WORKERS, default 1): encoding at start, the
 *	owner's adds and re-encoding, and decoding what arrives are split by
 *	chunk (or packet) over this thread, the progress thread and
 *	@codec_workers - 1 threads started when the context opens. The
 *	results are the same bytes whatever the count. Worth it when the
 *	link is faster than one core's codec (10 Gbit/s and up,
 *	doc/codec-workers.md).
 * @dpdk_eal: for the dpdk transport, the EAL arguments, space-separated;
 *	NULL takes GN_DPDK_EAL. The EAL comes up once per process, with the
 *	first context's; an EAL the application brought up is used as it is.
 * @dpdk_port: with GN_CTX_DPDK_PORT in @flags, the ethdev port of a
 *	dpdk context, 0..65535; without it GN_DPDK_PORT (default 0)
 * @dpdk_queue: with GN_CTX_DPDK_QUEUE in @flags, the application
 *	configured and started @dpdk_port itself and hands gradnet this rx
 *	and tx queue of it, 0..65535; without it GN_DPDK_QUEUE (unset:
 *	gradnet configures the port). With these two, several contexts of
 *	one process each take their own port or queue, which one set of
 *	environment variables cannot say. Either flag on another transport
 *	is -EINVAL.
 * @bind_addr: for gn_ctx_bind() (and gn_ctx_open() when the launcher
 *	exchanges the addresses), where this rank's socket binds: "host" or
 *	"host:port" ("[v6 host]:port"), port 0 or none for any free port.
 *	NULL takes GN_HOST; without either, 127.0.0.1 when the launcher says
 *	every rank runs on this host, else the address this host routes
 *	other networks by. gn_ctx_open() with a peer list ignores it.
 */
struct gn_ctx_opts {
	size_t sz;
	int rank;
	int world_size;
	const char *peers;
	const uint8_t *key;
	size_t key_len;
	uint64_t job_id;
	unsigned int mtu;
	unsigned int timeout_ms;
	unsigned int flags;
	int codec;
	float s;
	unsigned int chunk;
	unsigned int step_timeout_ms;
	const char *transport;
	unsigned int codec_workers;
	const char *dpdk_eal;
	unsigned int dpdk_port;
	unsigned int dpdk_queue;
	const char *codec_params;
	const char *bind_addr;
};

/*
 * struct gn_tensor_opts - a gradient tensor, registered once per context
 * with the same id, size and codec on every rank.
 * @sz: sizeof(struct gn_tensor_opts)
 * @id: the caller's name for it, unique in the context
 * @elems: float32 values
 * @codec: enum gn_codec
 * @s: 3LC sparsity multiplier, 0 for the job default ("s=" of @params)
 * @flags: GN_TENSOR_*
 * @params: the codec's parameters, "key=value,...", or NULL; a parameter
 *	left out takes the job's value when the tensor runs the job's codec,
 *	else the codec's default
 */
struct gn_tensor_opts {
	size_t sz;
	uint32_t id;
	size_t elems;
	int codec;
	float s;
	unsigned int flags;
	const char *params;
};

/**
 * gn_ctx_open() - join a job: bind, then handshake with every peer
 * @opts: options, or NULL to take everything from the environment
 * @ctx: out, the context
 *
 * Every rank must call this; it returns once all peers have answered and
 * agree on protocol version, job id, world size, codec parameters and
 * the peer list itself (every rank's address, in rank order: ranks given
 * different lists refuse each other with -EPROTO). A job without a key
 * is refused unless GN_CTX_INSECURE is set.
 *
 * Keys from the environment are read once: GN_KEY is wiped and removed
 * from the environment, and GN_KEY_FD closed and removed, so processes
 * started later do not inherit the key (a second gn_ctx_open() in the
 * same process needs GN_KEY_FILE or @opts->key). The library wipes its
 * copies of the key, and the MAC state on gn_ctx_close().
 *
 * Return: 0; -EINVAL for bad options or a NULL @ctx; -E2BIG if @opts
 * sets fields this library does not know; -EPROTO if a peer disagrees (the
 * message names the peer and the difference); -ETIMEDOUT if a peer never
 * answered; -EKEYREJECTED if a peer's packets fail authentication; other
 * -errno from the socket layer. *@ctx is NULL on failure, with the reason
 * in gn_last_errmsg().
 *
 * Without a peer list (@opts->peers NULL and GN_PEERS unset), a rank
 * started by a PMIx launcher (mpirun of Open MPI, srun --mpi=pmix)
 * finds the others through the launcher: gn_ctx_bind(), its address put
 * into the launcher's key-value store, a fence, every rank's address
 * read back, gn_ctx_join(). Nothing else (no key) goes through the
 * launcher. Without a launcher that offers it, or in a library built
 * without PMIx, no peer list is -EINVAL.
 */
GN_EXPORT int gn_ctx_open(const struct gn_ctx_opts *opts, struct gn_ctx **ctx);

/**
 * gn_ctx_bind() - the first half of gn_ctx_open(): bind this rank's socket
 * before the other ranks' addresses are known
 * @opts: as for gn_ctx_open(); @opts->peers and GN_PEERS are not read,
 *	@opts->bind_addr (or GN_HOST) says where to bind
 * @ctx: out, a context that is bound but not yet in the job
 *
 * For launchers whose ranks publish their addresses to each other (a
 * PMIx server, an MPI communicator, torch's store): bind, publish what
 * gn_ctx_local_addr() says, collect every rank's, then gn_ctx_join().
 * The address published is the socket's own, held from here on, so no
 * other process can take the port between publishing and joining. Until
 * gn_ctx_join() succeeds, the calls on tensors and counters fail with
 * -ENOTCONN; gn_ctx_rank(), gn_ctx_world_size(), gn_ctx_local_addr()
 * and gn_ctx_close() work.
 *
 * Return: 0; as gn_ctx_open() for the options and the socket;
 * -EOPNOTSUPP for the dpdk and kmod transports, whose address is their
 * port's or the module's (give them a peer list and call gn_ctx_open());
 * -EADDRNOTAVAIL if no address was given and none could be found. *@ctx
 * is NULL on failure, with the reason in gn_last_errmsg().
 */
GN_EXPORT int gn_ctx_bind(const struct gn_ctx_opts *opts, struct gn_ctx **ctx);

/**
 * gn_ctx_local_addr() - where a context's socket is bound
 * @ctx: a context of gn_ctx_bind() or gn_ctx_open() on the udp transport
 * @buf: out, "host:port" or "[v6 host]:port", NUL-terminated
 * @len: bytes of @buf; 64 is always enough
 *
 * Return: the length of the text; -EINVAL for NULL arguments or a
 * context of another transport; -ENOSPC if @len is too small.
 */
GN_EXPORT int gn_ctx_local_addr(const struct gn_ctx *ctx, char *buf,
				size_t len);

/**
 * gn_ctx_join() - the second half of gn_ctx_open(): the peers, then the
 * handshake
 * @ctx: a context of gn_ctx_bind(), not yet joined
 * @peers: every rank's address, "host:port,host:port,...", rank order, as
 *	@opts->peers of gn_ctx_open(); this rank's entry must be the address
 *	the context is bound at (gn_ctx_local_addr())
 *
 * Returns when every peer has answered, as gn_ctx_open() does. The peer
 * list itself is part of what the ranks agree on: a rank that was given
 * another list (another address for some rank) is refused with -EPROTO.
 * A context whose join failed can only be closed.
 *
 * Return: 0; -EINVAL for a NULL argument, a bad list or one whose entry
 * for this rank is not the bound address; -EALREADY if @ctx was joined
 * (or tried to) before; otherwise as gn_ctx_open(). The reason is in
 * gn_ctx_errmsg() and gn_last_errmsg().
 */
GN_EXPORT int gn_ctx_join(struct gn_ctx *ctx, const char *peers);

/**
 * gn_ctx_close() - leave the job and free everything
 * @ctx: context, may be NULL
 *
 * Waits briefly for peers to acknowledge the last packets this rank owes.
 */
GN_EXPORT void gn_ctx_close(struct gn_ctx *ctx);

/**
 * gn_ctx_errmsg() - what the last failing call on @ctx went wrong with
 * @ctx: context
 *
 * Return: a message, valid until the next call on @ctx; "" if none.
 */
GN_EXPORT const char *gn_ctx_errmsg(struct gn_ctx *ctx);

/**
 * gn_last_errmsg() - why the last gn_ctx_open() of this thread failed
 *
 * Return: a message, valid until the next gn_ctx_open() on this thread.
 */
GN_EXPORT const char *gn_last_errmsg(void);

/**
 * gn_strerror() - a short text for a gradnet return value
 * @err: a negative errno returned by gradnet
 *
 * Safe from any thread, unlike strerror().
 *
 * Return: static text, never overwritten by a later call.
 */
GN_EXPORT const char *gn_strerror(int err);

/* Return: this context's rank, or its job's world size; -EINVAL if NULL. */
GN_EXPORT int gn_ctx_rank(const struct gn_ctx *ctx);
GN_EXPORT int gn_ctx_world_size(const struct gn_ctx *ctx);

/**
 * gn_tensor_register() - declare a tensor before its first allreduce
 * @ctx: context
 * @opts: the tensor
 *
 * Sizes, codec and codec parameters are compared with every peer at the
 * first allreduce; a difference fails it with -EPROTO on every rank, and
 * the message names the peer and the parameter.
 *
 * Return: 0; -EINVAL for bad options, an unknown codec, a parameter the
 * codec does not have or a value outside its range (the message says
 * which), or a NULL pointer; -E2BIG if @opts sets fields this library does
 * not know; -EEXIST if the id is taken; -ENOMEM.
 */
GN_EXPORT int gn_tensor_register(struct gn_ctx *ctx,
				 const struct gn_tensor_opts *opts);

/*
 * struct gn_bucket_opts - a bucket: several tensors (members) allreduced
 * as one, as PyTorch DDP and Horovod fuse small gradients. The members
 * lie back to back in one buffer of their total size, member i at the
 * sum of the sizes before it; that buffer is what gn_allreduce() and
 * gn_allreduce_start() take for the bucket's id.
 * @sz: sizeof(struct gn_bucket_opts)
 * @id: the bucket's id, from the same space as tensor ids
 * @members: how many, 1..GN_BUCKET_MAX_MEMBERS
 * @elems: the members' sizes in float32 values, each at least 1; their
 *	sum at most 2^40. The same on every rank, in the same order.
 * @codec: enum gn_codec, for every member
 * @s: 3LC sparsity multiplier, 0 for the job default
 * @flags: GN_TENSOR_AVERAGE; GN_BUCKET_SHARED_SCALE
 * @params: the codec's parameters, as gn_tensor_opts.params
 */
struct gn_bucket_opts {
	size_t sz;
	uint32_t id;
	unsigned int members;
	const size_t *elems;
	int codec;
	float s;
	unsigned int flags;
	const char *params;
};

/**
 * gn_bucket_register() - declare a bucket of tensors allreduced as one
 * @ctx: context
 * @opts: the bucket
 *
 * The bucket is sharded over the ranks as one tensor, so its members'
 * shards travel together: a model with many small tensors (biases,
 * norms) sends a few packets per step instead of one per tensor and
 * rank. Each member keeps its own error feedback, and, unless
 * GN_BUCKET_SHARED_SCALE is set, its own 3LC scale: chunks are cut at
 * member bounds, so a small member is not quantized against a larger
 * neighbour's values. With GN_BUCKET_SHARED_SCALE chunks may span
 * members, and the bucket behaves exactly as one tensor of the total
 * size (fewer packets, but a member whose values are much smaller than
 * its neighbours' is sent less often). A dense (GN_CODEC_NONE) bucket has
 * no scales and is laid out as a tensor too.
 *
 * A bucket is a tensor in every other call: gn_allreduce*() on the
 * buffer, gn_tensor_unregister(), gn_stats_tensor(). Its members are
 * compared with every peer's at the first allreduce; a difference
 * (other sizes, another order, a plain tensor with the id there) fails
 * it with -EPROTO on every rank, naming the peer.
 *
 * Return: 0; -EINVAL for a NULL pointer, no members or more than
 * GN_BUCKET_MAX_MEMBERS, a member of 0 values, a total above 2^40, or
 * bad codec, s or flags; -E2BIG if @opts sets fields this library does
 * not know; -EEXIST if the id is taken; -ENOMEM; -EOPNOTSUPP on a
 * context of the kernel module's path (GN_TRANSPORT=kmod).
 */
GN_EXPORT int gn_bucket_register(struct gn_ctx *ctx,
				 const struct gn_bucket_opts *opts);

/**
 * gn_tensor_unregister() - forget a tensor and free its buffers
 * @ctx: context
 * @id: a registered tensor with no allreduce in flight
 *
 * For a trainer whose tensors change shape (a DDP job rebuilding its
 * buckets): unregister, then register the id again with another size or
 * codec. Every rank must do the same, after the same number of allreduces
 * of the tensor; the error feedback starts from zero again. Packets of the
 * old registration still on their way are dropped, never added to the new
 * one: the new registration's steps are numbered after the old ones.
 * Waits until the peers have acknowledged this rank's last results for
 * the tensor (they may still be decoding them), or a peer is found dead.
 *
 * Return: 0; -EINVAL for a NULL @ctx; -ENOENT if @id is not registered;
 * -EBUSY if an allreduce of it was started and not yet waited for;
 * -ETIMEDOUT if peers did not acknowledge those results within twice the
 * context's timeout (the tensor stays registered); -ENOMEM.
 */
GN_EXPORT int gn_tensor_unregister(struct gn_ctx *ctx, uint32_t id);

/**
 * gn_allreduce_start() - start an allreduce of tensor @id, in place
 * @ctx: context
 * @id: a registered tensor with no allreduce in flight
 * @data: the tensor's values: this rank's gradient now, the result after
 *	gn_allreduce_wait(); the caller leaves it alone until then
 *
 * Compresses this rank's contribution before returning and leaves the
 * network work to the context's progress thread, so the caller can go on
 * computing (the next layer's backward pass) while the exchange runs.
 *
 * Return: 0; -EINVAL, -ENOENT (unknown id), -EBUSY (already in flight).
 * A NaN or infinity in @data is reported by gn_allreduce_wait().
 */
GN_EXPORT int gn_allreduce_start(struct gn_ctx *ctx, uint32_t id, float *data);

/**
 * gn_allreduce_wait() - finish the allreduce of tensor @id
 * @ctx: context
 * @id: a tensor started with gn_allreduce_start()
 *
 * Return: 0 with the sum (or mean) in the data, bit-identical on every
 * rank; -EDOM if some rank's gradient held a NaN or infinity (every rank
 * fails the step); -ETIMEDOUT if a peer went silent (the message names
 * it); -EPROTO if a peer registered the tensor differently. On failure the
 * data is unspecified and the error-feedback buffers are unchanged, so the
 * caller can skip the step.
 */
GN_EXPORT int gn_allreduce_wait(struct gn_ctx *ctx, uint32_t id);

/**
 * gn_allreduce() - gn_allreduce_start() then gn_allreduce_wait()
 * @ctx, @id, @data: as gn_allreduce_start()
 *
 * Return: as gn_allreduce_wait().
 */
GN_EXPORT int gn_allreduce(struct gn_ctx *ctx, uint32_t id, float *data);

/* gn_model_opts.flags */
#define GN_MODEL_DORE	(1u << 0)	/* DORE: residuals compressed both ways
					   (alpha, beta, eta) */

/*
 * struct gn_model_opts - a model tensor: a parameter tensor that the owner
 * of each shard updates with SGD. Every rank sends its gradient (shard j
 * to rank j, compressed), the owner averages the contributions, applies
 * SGD to its shard and sends the shard's change, compressed again, to
 * every rank; every rank adds that change to its parameters. So the
 * parameters stay bit-identical on every rank, and the optimizer's state
 * lives only with the owner of each shard (memory per rank: one shard's).
 * Register it with the same options on every rank, with parameters that
 * are equal on every rank (broadcast them first).
 * @sz: sizeof(struct gn_model_opts)
 * @id: the caller's name for it, from the same space as tensor ids
 * @elems: float32 values, 1 to 2^40
 * @flags: GN_MODEL_*; other bits are refused with -EINVAL
 * @codec: the gradients' codec (enum gn_codec); GN_CODEC_DEFAULT is the
 *	job's, or with GN_MODEL_DORE DORE's ternary quantizer (QSGD at 2
 *	bits with the largest magnitude of each 256 values as its norm,
 *	"qsgd:bits=2,bucket=256,norm=max"; <gradnet/codec.h>)
 * @params: its parameters, "key=value,...", or NULL
 * @down_codec: the codec of the model's change, owners to every rank;
 *	GN_CODEC_DEFAULT takes @codec's (with @params unless @down_params
 *	is set; with GN_MODEL_DORE and GN_CODEC_DEFAULT @codec, DORE's
 *	quantizer with @down_params on top)
 * @down_params: its parameters, or NULL; "entropy=zstd" codes the changes
 *	with the entropy stage as @params' codes the gradients
 * @momentum: SGD's momentum mu, 0 <= mu < 1 (0: none): the owner keeps
 *	m = mu m + d and steps along m, as torch.optim.SGD does
 * @weight_decay: lambda >= 0 (0: none): the owner adds lambda x to the
 *	gradient
 * @alpha: DORE's residual step, 0 < alpha <= 1 (0: 0.1)
 * @beta: DORE's model step, 0 < beta <= 1 (0: 1)
 * @eta: DORE's error compensation, 0 < eta <= 1 (0: 0.5); @alpha,
 *	@beta and @eta must be 0 without GN_MODEL_DORE
 *
 * Without GN_MODEL_DORE each direction keeps its codec's own error
 * feedback (3LC's push and pull); with it, DORE's residuals replace the
 * codecs' error feedback. <gradnet/codec.h> ("The model-updating step")
 * says what an owner computes, to the bit.
 */
struct gn_model_opts {
	size_t sz;
	uint32_t id;
	size_t elems;
	unsigned int flags;
	int codec;
	const char *params;
	int down_codec;
	const char *down_params;
	float momentum;
	float weight_decay;
	float alpha;
	float beta;
	float eta;
};

/**
 * gn_model_register() - declare a model tensor before its first step
 * @ctx: context
 * @opts: the model tensor
 *
 * Sizes the optimizer's state: with GN_MODEL_DORE a residual of the whole
 * tensor on every rank, and on the owner of each shard its residual, its
 * model error and (with momentum) its momentum, each for the shard only;
 * error feedback for the codecs that keep it. All of it starts at zero,
 * and again after gn_tensor_unregister() and a new registration. Every
 * rank's registration is compared with every peer's at the first step: a
 * difference fails it with -EPROTO on every rank, naming the peer.
 *
 * Return: 0; -EINVAL for bad options, an unknown codec, a parameter a
 * codec does not have or a value outside its range (the message says
 * which), or a NULL pointer; -E2BIG if @opts sets fields this library does
 * not know; -EEXIST if the id is taken; -ENOMEM.
 */
GN_EXPORT int gn_model_register(struct gn_ctx *ctx,
				const struct gn_model_opts *opts);

/**
 * gn_model_step_start() - start a step of model tensor @id
 * @ctx: context
 * @id: a model tensor with no step in flight
 * @grad: this rank's gradient, elems values; the step works in this
 *	buffer, so its contents are unspecified from here on
 * @params: the parameters, elems values, equal on every rank; updated in
 *	place when the step ends, before gn_model_step_wait() returns 0
 * @lr: the learning rate of this step, finite and >= 0; it may change
 *	from step to step (a schedule), the same on every rank
 *
 * Compresses this rank's gradient before returning, as
 * gn_allreduce_start() does; the caller leaves both buffers alone until
 * gn_model_step_wait().
 *
 * Return: 0; -EINVAL (a NULL pointer, a bad @lr, a tensor that is not a
 * model tensor), -ENOENT (unknown id), -EBUSY (already in flight).
 */
GN_EXPORT int gn_model_step_start(struct gn_ctx *ctx, uint32_t id, float *grad,
				  float *params, float lr);

/**
 * gn_model_step_wait() - finish the step of model tensor @id
 * @ctx: context
 * @id: a model tensor started with gn_model_step_start()
 *
 * Return: 0 with the parameters updated, bit-identical on every rank;
 * -EDOM if some rank's gradient (or an owner's update) held a NaN or
 * infinity: the step is skipped on every rank, the parameters and every
 * state of the optimizer and the codecs as they were; -ETIMEDOUT,
 * -EPROTO as gn_allreduce_wait(), also with everything as it was.
 */
GN_EXPORT int gn_model_step_wait(struct gn_ctx *ctx, uint32_t id);

/**
 * gn_model_step() - gn_model_step_start() then gn_model_step_wait()
 * @ctx, @id, @grad, @params, @lr: as gn_model_step_start()
 *
 * Return: as gn_model_step_wait().
 */
GN_EXPORT int gn_model_step(struct gn_ctx *ctx, uint32_t id, float *grad,
			    float *params, float lr);

/* Why packets were dropped; indexes gn_stats.drops[]. */
enum gn_drop {
	GN_DROP_MALFORMED,	/* truncated, bad magic, bad lengths, bad payload */
	GN_DROP_VERSION,	/* another protocol version */
	GN_DROP_JOB,		/* another job id */
	GN_DROP_SOURCE,		/* not from a peer of this job */
	GN_DROP_MAC,		/* authentication failed */
	GN_DROP_REPLAY,		/* a step that is over, or too far ahead; a
				   HELLO that is not fresh; an ACK, PING or
				   PONG whose packet number came before */
	GN_DROP_DUPLICATE,	/* a packet already received */
	GN_DROP_TENSOR,		/* unknown tensor or mismatched parameters */
	GN_DROP_EARLY,		/* before this rank's handshake gave it the
				   session key; the sender repeats it */
	GN_DROP_COUNT,		/* reasons this version knows; may grow */
};

/* Room for drop reasons in gn_stats: GN_DROP_COUNT may grow up to it. */
#define GN_DROP_MAX 32

/*
 * struct gn_stats - traffic counters of a peer, a tensor or the context.
 * The layout only grows: new counters go after @drops, and @drops keeps
 * room for GN_DROP_MAX reasons, so a new drop reason moves nothing.
 * @sz: sizeof(struct gn_stats), set by the caller; the library fills the
 *	fields that sz covers and zeroes bytes of a longer struct it does not
 *	know
 * @tx_packets, @rx_packets: data packets sent and accepted
 * @raw_bytes: float32 bytes the packets stand for (4 per value)
 * @wire_bytes: UDP payload bytes sent (headers and tag included)
 * @rx_wire_bytes: UDP payload bytes received and accepted
 * @retransmits: data packets sent again
 * @allreduces: allreduces completed (tensor and context stats)
 * @ctl_packets, @ctl_bytes: acknowledgements, handshake, probes and control
 *	messages sent (not in @wire_bytes)
 * @messages: chunk messages sent (one per chunk and receiver)
 * @stream_bytes: what those chunks are as bare chunk streams (the codec's
 *	bytes plus a 4-byte scale per chunk), for the cost of packetization
 * @drops: received packets dropped, by enum gn_drop; entries from
 *	GN_DROP_COUNT on are 0 in this version
 */
struct gn_stats {
	size_t sz;
	uint64_t tx_packets;
	uint64_t rx_packets;
	uint64_t raw_bytes;
	uint64_t wire_bytes;
	uint64_t rx_wire_bytes;
	uint64_t retransmits;
	uint64_t allreduces;
	uint64_t ctl_packets;
	uint64_t ctl_bytes;
	uint64_t messages;
	uint64_t stream_bytes;
	uint64_t drops[GN_DROP_MAX];
};

/* Return: 0, -EINVAL (NULL, bad sz or peer), -ENOENT (unknown tensor). */
GN_EXPORT int gn_stats_ctx(struct gn_ctx *ctx, struct gn_stats *st);
GN_EXPORT int gn_stats_peer(struct gn_ctx *ctx, int peer, struct gn_stats *st);
GN_EXPORT int gn_stats_tensor(struct gn_ctx *ctx, uint32_t id,
			      struct gn_stats *st);
GN_EXPORT const char *gn_drop_name(int reason);

/**
 * gn_codec_id() - a codec's number from its name
 * @name: "none", "3lc", ... as GN_CODEC spells it (no parameters)
 *
 * Return: the enum gn_codec value; -EINVAL for NULL or an unknown name.
 */
GN_EXPORT int gn_codec_id(const char *name);

/**
 * gn_codec_name() - a codec's name from its number
 * @id: an enum gn_codec value other than GN_CODEC_DEFAULT
 *
 * Return: static text; NULL for a number no codec has.
 */
GN_EXPORT const char *gn_codec_name(int id);

/* Return: the library's version as text, "MAJOR.MINOR.PATCH". */
GN_EXPORT const char *gn_version(void);

/*
 * gn_version_number() - the version of the library running, which may be
 * newer than the header a program was built with
 *
 * Return: (major << 16) | (minor << 8) | patch, as GN_VERSION_NUMBER.
 */
GN_EXPORT unsigned int gn_version_number(void);

#ifdef __cplusplus
}
#endif

#endif /* GRADNET_GRADNET_H */
