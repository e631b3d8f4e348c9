/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * gradnet.h - the user interface of the gradnet kernel module: the misc
 * device /dev/gradnet and its ioctls. Each open file is one context (one
 * rank of one job); closing the file leaves the job and frees everything.
 *
 * Every argument struct starts with its own size, which the caller sets
 * to sizeof() of the struct it was built with. The module accepts a
 * shorter struct (fields it lacks read as zero) and a longer one whose
 * extra bytes are all zero (copy_struct_from_user); anything else is
 * -E2BIG. Reserved fields and unknown flag bits must be zero (-EINVAL).
 * Pointers travel as __u64 (u64_to_user_ptr). Only fixed-size __u* fields,
 * so 32- and 64-bit callers share one layout.
 *
 * The module dispatches on the ioctl's type and number and reads the size
 * from the struct itself, so a struct that grows keeps its ioctl number.
 *
 * Order of calls: GRADNET_IOC_INFO at any time; GRADNET_IOC_OPEN once
 * (-EALREADY after, -EBUSY while another thread's OPEN runs), then
 * tensors and allreduces (-ENOTCONN before OPEN, -EPIPE after an OPEN that
 * failed). An allreduce is started with START and finished with WAIT (or
 * poll(): POLLIN when some started allreduce has finished and WAIT will not
 * block for it). ERRMSG says why the last failed ioctl failed.
 *
 * What a context costs is charged and bounded (module parameters, read
 * at OPEN): its kernel memory to the memory cgroup of the process that
 * opened the file (-ENOMEM when that cgroup or the host is short, never
 * an OOM kill) and its core's share to max_context_mib (-EDQUOT); its
 * tensors to max_tensors (-EMFILE); the context itself, a kernel thread
 * and a socket, to the caller's max_contexts_per_user (-EMFILE); the
 * pages an allreduce pins to the caller's RLIMIT_MEMLOCK (-ENOMEM, -EPERM
 * at 0), unless it has CAP_IPC_LOCK.
 */
#ifndef _UAPI_LINUX_GRADNET_H
#define _UAPI_LINUX_GRADNET_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* GRADNET_IOC_OPEN refuses any other abi with -EPROTONOSUPPORT. */
#define GRADNET_ABI_VERSION	2

/* gradnet_info.features: what this module does beyond ABI version 1's base. */
#define GRADNET_FEAT_IPV4	(1ull << 0)	/* IPv4 peers */
#define GRADNET_FEAT_IPV6	(1ull << 1)	/* IPv6 peers */
#define GRADNET_FEAT_POLL	(1ull << 2)	/* poll() on the file */
#define GRADNET_FEAT_FAULTS	(1ull << 3)	/* fault injection is on (test) */
#define GRADNET_FEAT_MODEL	(1ull << 4)	/* model tensors (TENSOR_MODEL) */
#define GRADNET_FEAT_ENTROPY	(1ull << 5)	/* the entropy stage (zstd) */
#define GRADNET_FEAT_DOWN_ENTROPY (1ull << 6)	/* a model tensor's changes
						   through it (down_entropy) */

/*
 * struct gradnet_info - what the loaded module speaks (any time, even
 * before OPEN): the kernel fills the fields its @size covers.
 * @abi: GRADNET_ABI_VERSION of the module
 * @features: GRADNET_FEAT_*
 * @max_world, @key_len, @errmsg_len: the module's GRADNET_MAX_WORLD,
 *	GRADNET_KEY_LEN and GRADNET_ERRMSG_LEN
 * @wire_version: the gradnet wire version it sends
 */
struct gradnet_info {
	__u32 size;
	__u32 abi;
	__u64 features;
	__u32 max_world;
	__u32 key_len;
	__u32 errmsg_len;
	__u32 wire_version;
	__u64 reserved[4];
};

#define GRADNET_KEY_LEN		16	/* GN_MAC_KEY_LEN, a job key */
#define GRADNET_MAX_WORLD	256
#define GRADNET_ERRMSG_LEN	320	/* the core's GN_ERRMSG_LEN */

/*
 * struct gradnet_peer - one rank's UDP endpoint, in network byte order.
 * @family: 2 (AF_INET) or 10 (AF_INET6)
 * @port: UDP port, network byte order
 * @addr: IPv4 in the first 4 bytes, or IPv6
 */
struct gradnet_peer {
	__u16 family;
	__u16 port;
	__u32 reserved;
	__u8 addr[16];
};

/* gradnet_open.flags */
#define GRADNET_OPEN_INSECURE	(1u << 0)	/* no key: no authentication */
#define GRADNET_OPEN_CLEAR	(1u << 1)	/* bodies authenticated, not
						   encrypted (GN_ENCRYPT=0) */
#define GRADNET_OPEN_FLAGS	(GRADNET_OPEN_INSECURE | GRADNET_OPEN_CLEAR)

/*
 * Codecs are the values of enum gn_codec of <gradnet/gradnet.h>, the ids
 * the wire carries too (0: at OPEN 3LC, at REGISTER the job's); a codec's
 * parameters are its block of GRADNET_PARAM_WORDS words, laid out as the
 * codec defines (<gradnet/codec.h>), with a bit per word in a given mask:
 * words not given take the job's values (same codec) or the codec's
 * defaults. An unknown codec, a word the codec does not have or a value
 * outside its range is -EINVAL, and ERRMSG names it; so is a nonzero word
 * whose given bit is clear, and a given bit past the block.
 *
 * Every codec has the entropy stage besides (<gradnet/codec.h>): an
 * @entropy word of bits 0-7 the coder (0 none, 1 zstd) given by bit 8 of
 * the mask, bits 8-15 zstd's level (1..19) given by bit 9; its other bits
 * are 0.
 */
#define GRADNET_PARAM_WORDS	8
#define GRADNET_GIVEN_ENTROPY		(1u << 8)
#define GRADNET_GIVEN_ENTROPY_LEVEL	(1u << 9)

/*
 * struct gradnet_open - join a job: bind peers[rank] in the opener's
 * network namespace and handshake with every other rank. The ioctl
 * returns once the handshake is done (0), failed (-errno, GRADNET_IOC_ERRMSG
 * says why; the file can be closed, not opened again) or was interrupted
 * by a signal (-EINTR; the file is unusable then).
 * @abi: GRADNET_ABI_VERSION
 * @rank, @world: this rank, ranks in the job (1..GRADNET_MAX_WORLD)
 * @job_id: the job's id, the same on every rank (0..2^32-1: the wire
 *	carries 32 bits; larger is -EINVAL)
 * @mtu: the job's MTU (0: 1500; else 576..9000)
 * @chunk: values per chunk (0: 65536, libgradnet's default; at most 2^18,
 *	the kernel's bound on an FPU section)
 * @timeout_ms: a silent peer is dead after this (0: the module's
 *	default_timeout_ms parameter)
 * @step_timeout_ms: an allreduce fails after this (0: the module's
 *	default_step_timeout_ms parameter)
 * @codec: tensors' default codec, an enum gn_codec value (0: 3LC)
 * @codec_given: bit i: @codec_params[i] is set (else the default); bits
 *	8 and 9: @entropy's coder and level are
 * @flags: GRADNET_OPEN_*
 * @entropy: the default codec's entropy stage
 * @peers: user pointer to @world struct gradnet_peer, in rank order
 * @key: the job's key (all zero and GRADNET_OPEN_INSECURE: no key)
 * @codec_params: the default codec's parameter block
 */
struct gradnet_open {
	__u32 size;
	__u32 abi;
	__u32 rank;
	__u32 world;
	__u64 job_id;
	__u32 mtu;
	__u32 chunk;
	__u32 timeout_ms;
	__u32 step_timeout_ms;
	__u32 codec;
	__u32 codec_given;
	__u32 flags;
	__u32 entropy;
	__u64 peers;
	__u8 key[GRADNET_KEY_LEN];
	__u32 codec_params[GRADNET_PARAM_WORDS];
	__u64 reserved[4];
};

/* gradnet_tensor.flags: GN_TENSOR_* of <gradnet/gradnet.h>, and MODEL */
#define GRADNET_TENSOR_AVERAGE	(1u << 0)
#define GRADNET_TENSOR_MODEL	(1u << 16)	/* a model tensor: the fields
						   from @down_codec on count */
#define GRADNET_TENSOR_FLAGS	(GRADNET_TENSOR_AVERAGE | GRADNET_TENSOR_MODEL)

/* gradnet_tensor.model_flags: GN_MODEL_* of <gradnet/gradnet.h> */
#define GRADNET_MODEL_DORE	(1u << 0)
#define GRADNET_MODEL_FLAGS	GRADNET_MODEL_DORE

/*
 * struct gradnet_tensor - register (or, with UNREGISTER, forget) a tensor
 * @id: the caller's name for it, unique in the context
 * @codec: an enum gn_codec value (0: the job's)
 * @given: bit i: @params[i] is set (else the job's value for the job's
 *	codec, or the codec's default); bits 8 and 9: @entropy's coder and
 *	level are
 * @elems: float32 values, 1 and up to what the host's memory allows
 *	(UNREGISTER: must be 0, and so must @codec, @given, @params,
 *	@flags and @entropy)
 * @params: the codec's parameter block
 * @flags: GRADNET_TENSOR_*; with GRADNET_TENSOR_MODEL a model tensor
 *	(gn_model_register()), whose step (START with @params and @lr) takes
 *	a gradient and updates the parameters; AVERAGE does not go with it
 * @entropy: its entropy stage (a model tensor's: its gradients')
 * @down_codec, @down_given, @down_params: a model tensor's changes' codec
 *	(0: the gradients' codec, with their parameters unless @down_given)
 * @down_entropy: its entropy stage, as @entropy (bits 8 and 9 of
 *	@down_given say it is given)
 * @model_flags: GRADNET_MODEL_*
 * @momentum, @weight_decay, @alpha, @beta, @eta: a model tensor's
 *	optimizer, float32 bits, as gn_model_opts says (0: none, or DORE's
 *	defaults); all of them 0 without GRADNET_TENSOR_MODEL
 */
struct gradnet_tensor {
	__u32 size;
	__u32 id;
	__u32 codec;
	__u32 given;
	__u32 params[GRADNET_PARAM_WORDS];
	__u64 elems;
	__u32 flags;
	__u32 entropy;
	__u64 reserved[2];
	__u32 down_codec;
	__u32 down_given;
	__u32 down_params[GRADNET_PARAM_WORDS];
	__u32 model_flags;
	__u32 momentum;
	__u32 weight_decay;
	__u32 alpha;
	__u32 beta;
	__u32 eta;
	__u32 down_entropy;
	__u32 reserved1[3];
};

/*
 * struct gradnet_start - start an allreduce of tensor @id on @data, a user
 * buffer of the tensor's elems float32 values, 4-byte aligned, which the
 * module pins and uses in place until the allreduce ends (its outcome is
 * there for WAIT or poll, or the file is closed). The buffer must be
 * anonymous memory, shmem (memfd, /dev/shm, MAP_SHARED|MAP_ANONYMOUS) or
 * hugetlbfs: a file mapping of any other filesystem is -EOPNOTSUPP. Its
 * pages count as locked memory of the caller (VmPin).
 * A model tensor's step: @data is the gradient (the step's workspace),
 * @params the parameters, pinned the same way and updated in place when
 * the step ends, @lr the learning rate as float32 bits (finite, >= 0).
 * For any other tensor @params and @lr must be 0.
 */
struct gradnet_start {
	__u32 size;
	__u32 id;
	__u64 data;
	__u64 params;
	__u32 lr;
	__u32 reserved0;
};

/*
 * struct gradnet_wait - wait for tensor @id's allreduce to finish
 * @timeout_ms: at most this long (0: do not block; -1 (~0u): forever)
 * @result: out: 0, or the allreduce's -errno (then @errmsg says why)
 * @errmsg: user pointer to GRADNET_ERRMSG_LEN bytes, or 0
 * Return of the ioctl: 0 when it finished (whatever @result), -EAGAIN if it
 * has not within @timeout_ms, -EINTR on a signal (it goes on; wait again).
 */
struct gradnet_wait {
	__u32 size;
	__u32 id;
	__u32 timeout_ms;
	__s32 result;
	__u64 errmsg;
	__u64 reserved[2];
};

/* gradnet_stats.scope */
#define GRADNET_STATS_CTX	0	/* the context's counters */
#define GRADNET_STATS_PEER	1	/* rank @key's */
#define GRADNET_STATS_TENSOR	2	/* tensor @key's */

/*
 * struct gradnet_stats - read counters
 * @scope: GRADNET_STATS_*
 * @key: the peer's rank or the tensor's id
 * @buf: user pointer to @len bytes: struct gn_stats of <gradnet/gradnet.h>
 *	from its tx_packets on, as __u64 values in that order (the module
 *	fills what @len covers and what it knows, zero beyond)
 * @len: bytes at @buf (a multiple of 8, at most 4096)
 */
struct gradnet_stats {
	__u32 size;
	__u32 scope;
	__u32 key;
	__u32 len;
	__u64 buf;
	__u64 reserved[2];
};

/*
 * struct gradnet_errmsg - why the last failed ioctl on this file failed
 * (or the open's handshake) as text; @buf: user pointer to @len bytes
 * (1..4096), always NUL-terminated. ERRMSG itself does not change it.
 */
struct gradnet_errmsg {
	__u32 size;
	__u32 len;
	__u64 buf;
	__u64 reserved[2];
};

#define GRADNET_IOC_MAGIC	0xb6

#define GRADNET_IOC_OPEN	_IOW(GRADNET_IOC_MAGIC, 1, struct gradnet_open)
#define GRADNET_IOC_REGISTER	_IOW(GRADNET_IOC_MAGIC, 2, struct gradnet_tensor)
#define GRADNET_IOC_UNREGISTER	_IOW(GRADNET_IOC_MAGIC, 3, struct gradnet_tensor)
#define GRADNET_IOC_START	_IOW(GRADNET_IOC_MAGIC, 4, struct gradnet_start)
#define GRADNET_IOC_WAIT	_IOWR(GRADNET_IOC_MAGIC, 5, struct gradnet_wait)
#define GRADNET_IOC_STATS	_IOW(GRADNET_IOC_MAGIC, 6, struct gradnet_stats)
#define GRADNET_IOC_ERRMSG	_IOW(GRADNET_IOC_MAGIC, 7, struct gradnet_errmsg)
#define GRADNET_IOC_INFO	_IOWR(GRADNET_IOC_MAGIC, 8, struct gradnet_info)

#endif /* _UAPI_LINUX_GRADNET_H */
