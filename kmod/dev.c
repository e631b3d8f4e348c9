// SPDX-License-Identifier: MIT
/*
 * dev.c - the misc device /dev/gradnet: each open file is one context,
 * one rank of one job. The ioctls (include/uapi/linux/gradnet.h) join the
 * job, register tensors, start allreduces on the caller's buffers and
 * wait for them; poll() says when one finished. Closing the file leaves
 * the job and frees everything, also when the process was killed in the
 * middle of an allreduce.
 *
 * Every argument struct is read with copy_struct_from_user(); reserved
 * fields and unknown flags must be zero. A failed ioctl leaves its reason
 * for GRADNET_IOC_ERRMSG.
 *
 * What a context costs is charged to whoever asks for it and bounded:
 * its memory to the memory cgroup of the file's opener (the ioctls and
 * the worker allocate with that cgroup active), the core's share of it
 * also to max_context_mib, its tensors to max_tensors, its worker thread
 * and socket to the caller's max_contexts_per_user, and the pages START
 * pins to the caller's RLIMIT_MEMLOCK (pin.c).
 */
#include <linux/cred.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/memcontrol.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/nsproxy.h>
#include <linux/poll.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <net/net_namespace.h>

#include <gradnet/wire.h>
#include "collective.h"
#include "delivery.h"
#include "codec/entropy/entropy.h"
#include "context.h"
#include "dev.h"
#include "params.h"
#include "socket.h"
#include "user.h"
#include "../bpf/gradnet_stat.h"

/* The smallest struct each ioctl takes: every field but the reserved. */
#define GK_OPEN_MIN	offsetofend(struct gradnet_open, key)
#define GK_TENSOR_MIN	offsetofend(struct gradnet_tensor, entropy)
#define GK_START_MIN	offsetofend(struct gradnet_start, data)
#define GK_WAIT_MIN	offsetofend(struct gradnet_wait, errmsg)
#define GK_STATS_MIN	offsetofend(struct gradnet_stats, buf)
#define GK_ERRMSG_MIN	offsetofend(struct gradnet_errmsg, buf)
#define GK_INFO_MIN	offsetofend(struct gradnet_info, size)

/*
 * The core quantizes up to four chunks in one FPU section (ENCODE_BATCH),
 * with preemption off: 2^20 values, about a millisecond with AVX2.
 */
#define GK_MAX_CHUNK	(1u << 18)
/* Larger tensors are refused: the core allocates several times this. */
#define GK_MAX_ELEMS	(1ull << 30)
#define GK_STATS_MAX	4096
#define GK_PARAMS	"/sys/module/gradnet/parameters/"
/* Where STATS puts drops[GN_DROP_SOURCE]: the values start at tx_packets. */
#define GK_STATS_SOURCE	(offsetof(struct gn_stats, drops[GN_DROP_SOURCE]) - \
			 offsetof(struct gn_stats, tx_packets))

static_assert(sizeof(struct gradnet_peer) == 24, "uapi gradnet_peer");
static_assert(sizeof(struct gradnet_open) == 144, "uapi gradnet_open");
static_assert(sizeof(struct gradnet_tensor) == 160, "uapi gradnet_tensor");
static_assert(sizeof(struct gradnet_start) == 32, "uapi gradnet_start");
static_assert(sizeof(struct gradnet_wait) == 40, "uapi gradnet_wait");
static_assert(sizeof(struct gradnet_stats) == 40, "uapi gradnet_stats");
static_assert(sizeof(struct gradnet_errmsg) == 32, "uapi gradnet_errmsg");
static_assert(sizeof(struct gradnet_info) == 64, "uapi gradnet_info");
static_assert(GRADNET_KEY_LEN == GN_MAC_KEY_LEN, "uapi key length");
static_assert(GRADNET_ERRMSG_LEN >= GN_ERRMSG_LEN, "uapi message length");
static_assert(GRADNET_PARAM_WORDS == GN_CODEC_PARAM_WORDS,
	      "uapi parameter block");
static_assert(GRADNET_TENSOR_AVERAGE == GN_TENSOR_AVERAGE, "uapi flags");
static_assert(GRADNET_MODEL_DORE == GN_MODEL_DORE, "uapi model flags");
static_assert(GRADNET_GIVEN_ENTROPY == 1u << (GN_CODEC_PARAM_WORDS + GN_STAGE_CODER) &&
	      GRADNET_GIVEN_ENTROPY_LEVEL == 1u << (GN_CODEC_PARAM_WORDS + GN_STAGE_LEVEL),
	      "uapi given bits of the entropy stage");

/* A block from the ABI's parameter words and entropy word. */
static void codec_block(struct gn_codec_params *p, const __u32 *params,
			__u32 entropy)
{
	memcpy(p->w, params, sizeof(p->w));
	gn_entropy_unpack(p, entropy);
}

static __printf(3, 4) int gk_fail(struct gk_ctx *c, int err,
				  const char *fmt, ...)
{
	char buf[GRADNET_ERRMSG_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	spin_lock(&c->msg_lock);
	strscpy(c->errmsg, buf, sizeof(c->errmsg));
	spin_unlock(&c->msg_lock);
	return err;
}

/*
 * Read an argument struct that starts with its __u32 size: a shorter one
 * (down to @min) reads as zero beyond its end, a longer one must be zero
 * there (-E2BIG).
 */
static int gk_copy_in(struct gk_ctx *c, const char *what, void *dst,
		      size_t ksize, size_t min, void __user *uarg)
{
	u32 usize;
	int r;

	if (get_user(usize, (u32 __user *)uarg))
		return gk_fail(c, -EFAULT, "%s: the argument is not readable",
			       what);
	if (usize < min || usize > PAGE_SIZE)
		return gk_fail(c, usize < min ? -EINVAL : -E2BIG,
			       "%s: size %u, must be %zu..%lu", what, usize,
			       min, PAGE_SIZE);
	r = copy_struct_from_user(dst, ksize, uarg, usize);
	if (r == -E2BIG)
		return gk_fail(c, r, "%s: size %u is larger than the module's %zu and the extra bytes are not zero",
			       what, usize, ksize);
	if (r)
		return gk_fail(c, r, "%s: the argument is not readable", what);
	return 0;
}

static bool all_zero(const void *p, size_t len)
{
	return !memchr_inv(p, 0, len);
}

/* Refuse ioctls that need a joined job, with the reason for the state. */
static int gk_need_open(struct gk_ctx *c, const char *what)
{
	switch (atomic_read(&c->state)) {
	case GK_OPEN:
		return 0;
	case GK_FAILED:
		return gk_fail(c, -EPIPE, "%s: the OPEN of this file failed; close it",
			       what);
	case GK_OPENING:
		return gk_fail(c, -ENOTCONN, "%s: the OPEN is still running", what);
	default:
		return gk_fail(c, -ENOTCONN, "%s: no job yet: GRADNET_IOC_OPEN first",
			       what);
	}
}

/* ---- OPEN ---- */

/*
 * The job's default codec: registered, and its parameters in range for
 * this job's chunk and MTU (the registry's checks, integer-only).
 */
static int open_codec(struct gk_ctx *c, const struct gradnet_open *o)
{
	struct gn_codec_spec job = { .codec = o->codec ? o->codec : GN_CODEC_3LC,
				     .given = o->codec_given }, full;
	u32 mtu = o->mtu ? o->mtu : 1500;
	char msg[GRADNET_ERRMSG_LEN - 16];
	int r;

	codec_block(&job.p, o->codec_params, o->entropy);
	r = gn_codec_resolve(&job, &job, &full, msg, sizeof(msg));
	if (!r)
		r = gn_codec_params_check(gn_codec_find(full.codec), &full.p,
					  o->chunk ? o->chunk : 65536,
					  mtu - GN_WIRE_IPUDP -
						  GN_WIRE_DATA_OVERHEAD,
					  msg, sizeof(msg));
	return r ? gk_fail(c, r, "OPEN: %s", msg) : 0;
}

static int open_check(struct gk_ctx *c, const struct gradnet_open *o)
{
	bool insecure = o->flags & GRADNET_OPEN_INSECURE;
	int r;

	if (o->abi != GRADNET_ABI_VERSION)
		return gk_fail(c, -EPROTONOSUPPORT,
			       "OPEN: ABI version %u, this module speaks %u (load the module that matches libgradnet)",
			       o->abi, GRADNET_ABI_VERSION);
	if (o->flags & ~GRADNET_OPEN_FLAGS)
		return gk_fail(c, -EINVAL, "OPEN: flags %#x has unknown bits",
			       o->flags);
	if (o->entropy >> 16 || !all_zero(o->reserved, sizeof(o->reserved)))
		return gk_fail(c, -EINVAL, "OPEN: reserved fields (and entropy's bits 16-31) must be zero");
	if (o->world < 1 || o->world > GRADNET_MAX_WORLD || o->rank >= o->world)
		return gk_fail(c, -EINVAL, "OPEN: rank %u of world %u (1..%d ranks)",
			       o->rank, o->world, GRADNET_MAX_WORLD);
	if (o->job_id > U32_MAX)
		return gk_fail(c, -EINVAL, "OPEN: job id %llu is over 32 bits",
			       o->job_id);
	if (o->mtu && (o->mtu < 576 || o->mtu > 9000))
		return gk_fail(c, -EINVAL, "OPEN: mtu %u is outside 576..9000",
			       o->mtu);
	if (o->chunk > GK_MAX_CHUNK)
		return gk_fail(c, -EINVAL, "OPEN: chunk %u is over 2^18 values, which would keep preemption off too long in one FPU section",
			       o->chunk);
	r = open_codec(c, o);
	if (r)
		return r;
	if (insecure && !all_zero(o->key, sizeof(o->key)))
		return gk_fail(c, -EINVAL, "OPEN: a key and GRADNET_OPEN_INSECURE; pick one");
	if (!insecure && all_zero(o->key, sizeof(o->key)))
		return gk_fail(c, -EINVAL, "OPEN: no key: give the job's key, or GRADNET_OPEN_INSECURE");
	if (!o->peers)
		return gk_fail(c, -EFAULT, "OPEN: peers is NULL");
	return 0;
}

static int peers_check(struct gk_ctx *c, const struct gradnet_peer *p,
		       u32 world)
{
	u32 i;

	for (i = 0; i < world; i++) {
		if (p[i].reserved)
			return gk_fail(c, -EINVAL, "OPEN: peer %u: reserved is not zero",
				       i);
		if (p[i].family != AF_INET && p[i].family != AF_INET6)
			return gk_fail(c, -EAFNOSUPPORT, "OPEN: peer %u: family %u (AF_INET or AF_INET6)",
				       i, p[i].family);
		if (p[i].family != p[0].family)
			return gk_fail(c, -EAFNOSUPPORT, "OPEN: peers mix IPv4 and IPv6");
		if (!IS_ENABLED(CONFIG_IPV6) && p[i].family == AF_INET6)
			return gk_fail(c, -EAFNOSUPPORT, "OPEN: this kernel has no IPv6");
		if (!p[i].port)
			return gk_fail(c, -EINVAL, "OPEN: peer %u: port 0", i);
		if (p[i].family == AF_INET && !all_zero(p[i].addr + 4, 12))
			return gk_fail(c, -EINVAL, "OPEN: peer %u: IPv4 address with bytes after the first 4",
				       i);
	}
	return 0;
}

static void core_conf(const struct gradnet_open *o, struct gk_ctx *c,
		      struct gn_core_conf *conf, const u8 *key)
{
	u32 to = o->timeout_ms ? o->timeout_ms : READ_ONCE(gk_default_timeout_ms);
	u32 step = o->step_timeout_ms ? o->step_timeout_ms :
					READ_ONCE(gk_default_step_timeout_ms);

	memset(conf, 0, sizeof(*conf));
	conf->rank = o->rank;
	conf->world = o->world;
	conf->job = (u32)o->job_id;
	conf->mtu = o->mtu ? o->mtu : 1500;
	conf->chunk = o->chunk ? o->chunk : 65536;
	conf->codec.codec = o->codec ? o->codec : GN_CODEC_3LC;
	conf->codec.given = o->codec_given;
	codec_block(&conf->codec.p, o->codec_params, o->entropy);
	conf->timeout_ns = (u64)(to ? to : 1) * NSEC_PER_MSEC;
	conf->step_timeout_ns = (u64)step * NSEC_PER_MSEC;
	conf->key = key;
	conf->clear = o->flags & GRADNET_OPEN_CLEAR;
	conf->account = gn_kmod_account;
	conf->account_arg = &c->flow;
}

/*
 * The peer list as the core digests it (gn_core_set_peers()), the same
 * bytes libgradnet makes of its sockaddrs, so kernel and userspace ranks
 * agree on one list.
 */
static int set_peers(struct gk_ctx *c, const struct gradnet_peer *peers,
		     u32 world)
{
	struct gn_peer_addr *pa;
	u32 i;
	int r;

	pa = kvcalloc(world, sizeof(*pa), GFP_KERNEL_ACCOUNT);
	if (!pa)
		return -ENOMEM;
	for (i = 0; i < world; i++) {
		pa[i].family = peers[i].family == AF_INET6 ? 6 : 4;
		pa[i].port = ntohs((__force __be16)peers[i].port);
		memcpy(pa[i].addr, peers[i].addr, sizeof(pa[i].addr));
	}
	r = gn_core_set_peers(c->core, pa);
	kvfree(pa);
	return r;
}

/* The socket, the core, the names and the worker; the handshake starts. */
static int open_start(struct gk_ctx *c, const struct gradnet_open *o,
		      const struct gradnet_peer *peers)
{
	struct gn_core_conf conf;
	char msg[GRADNET_ERRMSG_LEN] = "";
	char name[96], addr[64];
	u32 i;
	int r;

	c->rank = o->rank;
	c->world = o->world;
	c->flow = (struct gn_kmod_flow){ .job = (u32)o->job_id, .rank = o->rank,
					 .transport = GN_STAT_TRANSPORT_KMOD };
	core_conf(o, c, &conf, (o->flags & GRADNET_OPEN_INSECURE) ? NULL : o->key);
	/* The core fits packets to an IPv4 MTU (GN_WIRE_IPUDP). */
	if (peers[o->rank].family == AF_INET6)
		conf.mtu -= GN_WIRE_IP6UDP - GN_WIRE_IPUDP;
	c->timeout_ns = conf.timeout_ns;
	r = gk_sock_open(&c->ks, current->nsproxy->net_ns, peers, o->world,
			 o->rank, conf.mtu - GN_WIRE_IPUDP, gk_kick, c, msg,
			 sizeof(msg));
	if (r)
		return gk_fail(c, r, "OPEN: %s", msg[0] ? msg : "cannot make the socket");
	r = gn_core_open(&conf, &c->env.env, &c->ks->tp, &c->core);
	if (r == -ENOMEM && READ_ONCE(c->env.refused))
		return gk_fail(c, -EDQUOT, "OPEN: the context's core would hold more than max_context_mib (%lu MiB) of kernel memory for %u ranks: raise " GK_PARAMS "max_context_mib",
			       c->env.max_bytes >> 20, o->world);
	if (r)
		return gk_fail(c, r, "OPEN: cannot open the context: error %d", r);
	for (i = 0; i < o->world; i++) {
		gk_peer_name(&peers[i], addr, sizeof(addr));
		snprintf(name, sizeof(name), "rank %u (%s)", i, addr);
		gn_core_set_name(c->core, i, name);
	}
	r = set_peers(c, peers, o->world);
	if (r)
		return gk_fail(c, r, "OPEN: no memory for the peer list's digest (%u ranks)",
			       o->world);
	r = gk_worker_start(c);
	if (r)
		return gk_fail(c, r, "OPEN: cannot start the worker thread");
	return 0;
}

/* Wait for the handshake: 1 done, -errno failed, -EINTR on a signal. */
static int open_wait(struct gk_ctx *c)
{
	const struct gn_env *env = &c->env.env;
	int r;

	gn_env_lock(env);
	while (!(r = gn_core_status(c->core))) {
		if (gn_env_kernel_wait(&c->env, 0)) {
			r = -EINTR;
			break;
		}
	}
	if (r < 0 && r != -EINTR)
		gk_fail(c, r, "OPEN: %s", gn_core_errmsg(c->core));
	gn_env_unlock(env);
	if (r == -EINTR)
		gk_fail(c, r, "OPEN: interrupted by a signal before the handshake was done; close the file");
	return r;
}

/*
 * Everything OPEN made, in the order that stops use before freeing: the
 * worker first, since it sends on the socket (a kick that comes after
 * only stirs its wait queue), then the socket and the receive callback.
 */
static void gk_teardown(struct gk_ctx *c)
{
	gk_worker_stop(c);
	if (c->ks)
		gk_sock_shutdown(c->ks);
	gn_core_free(c->core);
	c->core = NULL;
	gk_sock_free(c->ks);
	c->ks = NULL;
	if (c->user_counted)
		gk_user_put(c->uid);
	c->user_counted = false;
}

/* Count the caller's context and take the limits this context keeps. */
static int open_limits(struct gk_ctx *c)
{
	unsigned int max = READ_ONCE(gk_max_contexts_per_user), held;
	int r;

	c->uid = current_uid();
	r = gk_user_get(c->uid, max, &held);
	if (r == -EMFILE)
		return gk_fail(c, r, "OPEN: uid %u holds %u contexts of /dev/gradnet already, the module's max_contexts_per_user: close one, or raise " GK_PARAMS "max_contexts_per_user",
			       from_kuid_munged(current_user_ns(), c->uid), held);
	if (r)
		return gk_fail(c, r, "OPEN: out of memory");
	c->user_counted = true;
	c->max_tensors = READ_ONCE(gk_max_tensors);
	gn_env_kernel_limit(&c->env, gk_context_bytes_max());
	return 0;
}

static long ioc_open(struct gk_ctx *c, void __user *arg)
{
	struct gradnet_peer *peers;
	struct gradnet_open o;
	int r, was;

	r = gk_copy_in(c, "OPEN", &o, sizeof(o), GK_OPEN_MIN, arg);
	if (r)
		return r;
	was = atomic_cmpxchg(&c->state, GK_NEW, GK_OPENING);
	if (was != GK_NEW)
		return gk_fail(c, was == GK_OPENING ? -EBUSY : -EALREADY,
			       "OPEN: %s", was == GK_OPENING ?
			       "another OPEN of this file is running" :
			       "this file has already joined a job");
	r = open_check(c, &o);
	if (r)
		goto out_new;
	peers = memdup_user(u64_to_user_ptr(o.peers),
			    array_size(o.world, sizeof(*peers)));
	if (IS_ERR(peers)) {
		r = gk_fail(c, PTR_ERR(peers), "OPEN: cannot read %u peers", o.world);
		goto out_new;
	}
	r = peers_check(c, peers, o.world);
	if (!r)
		r = open_limits(c);
	if (r) {
		kfree(peers);
		goto out_new;
	}
	r = open_start(c, &o, peers);
	kfree(peers);
	memzero_explicit(o.key, sizeof(o.key));
	if (!r)
		r = open_wait(c);
	if (r < 0) {
		gk_teardown(c);
		atomic_set(&c->state, GK_FAILED);
		return r;
	}
	atomic_set(&c->state, GK_OPEN);
	return 0;

out_new:
	memzero_explicit(o.key, sizeof(o.key));
	atomic_set(&c->state, GK_NEW);
	return r;
}

/* ---- tensors ---- */

/*
 * Why the core refused @t: the context's bound (-EDQUOT), the memory
 * cgroup or the host (-ENOMEM), or its own reason. Called with the env's
 * lock.
 */
static void register_fail(struct gk_ctx *c, int *r,
			  const struct gradnet_tensor *t)
{
	unsigned long held = atomic_long_read(&c->env.bytes) >> 20;

	if (*r == -ENOMEM && READ_ONCE(c->env.refused))
		*r = gk_fail(c, -EDQUOT, "REGISTER tensor %u: %llu values would take the context's kernel memory (%lu MiB now) past the module's max_context_mib, %lu MiB: unregister some, or raise " GK_PARAMS "max_context_mib (for the next OPEN)",
			     t->id, t->elems, held, c->env.max_bytes >> 20);
	else if (*r == -ENOMEM)
		gk_fail(c, *r, "REGISTER tensor %u: out of memory for %llu values (the context holds %lu MiB): the kernel refused; a context's kernel memory is charged to the memory cgroup of the process that opened /dev/gradnet, whose memory.max or the host's memory is spent",
			t->id, t->elems, held);
	else
		gk_fail(c, *r, "REGISTER tensor %u: %s", t->id,
			gn_core_api_errmsg(c->core));
}

/*
 * A model tensor's block of REGISTER, for the core (which checks every
 * value); without GRADNET_TENSOR_MODEL it must be all zero.
 */
static int model_of(struct gk_ctx *c, const struct gradnet_tensor *t,
		    struct gn_core_model *m)
{
	const size_t at = offsetof(struct gradnet_tensor, down_codec);
	const size_t end = offsetof(struct gradnet_tensor, reserved1);

	if (!(t->flags & GRADNET_TENSOR_MODEL)) {
		if (!all_zero((const u8 *)t + at, end - at))
			return gk_fail(c, -EINVAL, "REGISTER tensor %u: a model block without GRADNET_TENSOR_MODEL",
				       t->id);
		return 0;
	}
	if (t->model_flags & ~GRADNET_MODEL_FLAGS)
		return gk_fail(c, -EINVAL, "REGISTER tensor %u: unknown model_flags %#x",
			       t->id, t->model_flags);
	m->down.codec = t->down_codec;
	m->down.given = t->down_given;
	codec_block(&m->down.p, t->down_params, t->down_entropy);
	m->flags = t->model_flags;
	m->momentum = t->momentum;
	m->weight_decay = t->weight_decay;
	m->alpha = t->alpha;
	m->beta = t->beta;
	m->eta = t->eta;
	return 0;
}

static long ioc_register(struct gk_ctx *c, void __user *arg)
{
	const struct gn_env *env = &c->env.env;
	struct gn_core_tensor o = { 0 };
	struct gn_core_model m = { 0 };
	struct gradnet_tensor t;
	struct gk_tensor *gt;
	bool model;
	int r;

	r = gk_copy_in(c, "REGISTER", &t, sizeof(t), GK_TENSOR_MIN, arg);
	if (r)
		return r;
	r = gk_need_open(c, "REGISTER");
	if (r)
		return r;
	if (t.entropy >> 16 || t.down_entropy >> 16 ||
	    !all_zero(t.reserved, sizeof(t.reserved)) ||
	    !all_zero(t.reserved1, sizeof(t.reserved1)) ||
	    (t.flags & ~GRADNET_TENSOR_FLAGS))
		return gk_fail(c, -EINVAL, "REGISTER tensor %u: unknown flags or reserved fields (or bits 16-31 of entropy or down_entropy) not zero",
			       t.id);
	r = model_of(c, &t, &m);
	if (r)
		return r;
	model = t.flags & GRADNET_TENSOR_MODEL;
	if (!t.elems || t.elems > GK_MAX_ELEMS ||
	    t.elems > (u64)totalram_pages() * PAGE_SIZE / 16)
		return gk_fail(c, -EINVAL, "REGISTER tensor %u: %llu elements: 1 up to 2^30 and a sixteenth of this host's memory in bytes",
			       t.id, t.elems);
	gt = kzalloc(sizeof(*gt), GN_KERNEL_GFP);
	if (!gt)
		return gk_fail(c, -ENOMEM, "REGISTER: out of memory");
	gt->id = t.id;
	gt->elems = t.elems;
	gt->model = model;
	o.id = t.id;
	o.elems = t.elems;
	o.flags = t.flags & ~GRADNET_TENSOR_MODEL;
	/* The core checks codec and parameters, and names what is wrong. */
	o.codec.codec = t.codec;
	o.codec.given = t.given;
	codec_block(&o.codec.p, t.params, t.entropy);
	gn_env_lock(env);
	if (xa_load(&c->tensors, t.id)) {
		r = gk_fail(c, -EEXIST, "REGISTER: tensor %u is already registered",
			    t.id);
		goto out_unlock;
	}
	if (c->ntensors >= c->max_tensors) {
		r = gk_fail(c, -EMFILE, "REGISTER tensor %u: the context has %u tensors, the module's max_tensors: unregister one, or raise " GK_PARAMS "max_tensors (for the next OPEN)",
			    t.id, c->ntensors);
		goto out_unlock;
	}
	r = xa_insert(&c->tensors, t.id, gt, GN_KERNEL_GFP);
	if (r) {
		r = gk_fail(c, r, "REGISTER tensor %u: error %d", t.id, r);
		goto out_unlock;
	}
	WRITE_ONCE(c->env.refused, false);
	r = model ? gn_core_model_register(c->core, &o, &m) :
		    gn_core_tensor_register(c->core, &o);
	if (r) {
		register_fail(c, &r, &t);
		xa_erase(&c->tensors, t.id);
		goto out_unlock;
	}
	c->ntensors++;
	gt = NULL;
out_unlock:
	gn_env_unlock(env);
	kfree(gt);
	return r;
}

/* Called with the env's lock: peers have a while to collect the last results. */
static int unregister_locked(struct gk_ctx *c, struct gk_tensor *gt)
{
	u64 until;
	int r;

	r = gn_core_tensor_retire(c->core, gt->id);
	if (r)
		return gk_fail(c, r, "UNREGISTER tensor %u: %s", gt->id,
			       gn_core_api_errmsg(c->core));
	gt->retiring = true;
	/* A dead peer's messages are dropped after the timeout: this ends. */
	until = ktime_get_ns() + 2 * c->timeout_ns + NSEC_PER_SEC;
	while (gn_core_tensor_owes(c->core, gt->id) && ktime_get_ns() < until)
		if (gn_env_kernel_wait(&c->env, ktime_get_ns() + NSEC_PER_MSEC))
			break;
	r = gn_core_tensor_remove(c->core, gt->id,
				  gn_core_tensor_owes(c->core, gt->id));
	xa_erase(&c->tensors, gt->id);
	c->ntensors--;
	return r;
}

static long ioc_unregister(struct gk_ctx *c, void __user *arg)
{
	const struct gn_env *env = &c->env.env;
	struct gk_tensor *gt = NULL;
	struct gradnet_tensor t;
	int r;

	r = gk_copy_in(c, "UNREGISTER", &t, sizeof(t), GK_TENSOR_MIN, arg);
	if (r)
		return r;
	r = gk_need_open(c, "UNREGISTER");
	if (r)
		return r;
	if (t.codec || t.given || t.elems || t.flags || t.entropy ||
	    !all_zero(t.params, sizeof(t.params)) ||
	    !all_zero(t.reserved, sizeof(t.reserved)) ||
	    !all_zero(&t.down_codec, sizeof(t) -
		      offsetof(struct gradnet_tensor, down_codec)))
		return gk_fail(c, -EINVAL, "UNREGISTER tensor %u: every field but size and id must be zero",
			       t.id);
	gn_env_lock(env);
	gt = xa_load(&c->tensors, t.id);
	if (!gt || gt->retiring) {
		gt = NULL;
		r = gk_fail(c, -ENOENT, "UNREGISTER: no tensor %u", t.id);
	} else if (gt->started) {
		gt = NULL;
		r = gk_fail(c, -EBUSY, "UNREGISTER tensor %u: an allreduce of it is in flight; WAIT for it first",
			    t.id);
	} else {
		r = unregister_locked(c, gt);
		if (r && xa_load(&c->tensors, t.id))
			gt = NULL;	/* the core kept it */
	}
	gn_env_unlock(env);
	kfree(gt);
	return r;
}

/* ---- allreduce ---- */

static long ioc_start(struct gk_ctx *c, void __user *arg)
{
	const struct gn_env *env = &c->env.env;
	struct gradnet_start s;
	struct gk_tensor *gt;
	struct gk_pin pin, ppin = { 0 };
	char why[256];
	int r;

	r = gk_copy_in(c, "START", &s, sizeof(s), GK_START_MIN, arg);
	if (r)
		return r;
	r = gk_need_open(c, "START");
	if (r)
		return r;
	if (s.reserved0)
		return gk_fail(c, -EINVAL, "START tensor %u: reserved fields must be zero",
			       s.id);
	gn_env_lock(env);
	gt = xa_load(&c->tensors, s.id);
	if (!gt || gt->retiring)
		r = gk_fail(c, -ENOENT, "START: no tensor %u", s.id);
	else if (gt->started)
		r = gk_fail(c, -EBUSY, "START tensor %u: an allreduce of it is in flight",
			    s.id);
	else if (!gt->model && (s.params || s.lr))
		r = gk_fail(c, -EINVAL, "START tensor %u: params and lr are a model tensor's (it is not one)",
			    s.id);
	else if (gt->model && !s.params)
		r = gk_fail(c, -EINVAL, "START tensor %u: a model tensor's step needs params",
			    s.id);
	else
		gt->started = gt->starting = true;
	gn_env_unlock(env);
	if (r)
		return r;
	/* The tensor stays while started: UNREGISTER refuses it. */
	r = gk_pin_user(&pin, s.data, gt->elems * sizeof(float), why,
			sizeof(why));
	if (r) {
		gk_fail(c, r, "START tensor %u: data %#llx, %llu floats: %s",
			s.id, s.data, gt->elems, why);
		goto out_unstart;
	}
	if (gt->model) {
		r = gk_pin_user(&ppin, s.params, gt->elems * sizeof(float), why,
				sizeof(why));
		if (r) {
			gk_fail(c, r, "START tensor %u: params %#llx, %llu floats: %s",
				s.id, s.params, gt->elems, why);
			gk_unpin(&pin);
			goto out_unstart;
		}
	}
	gn_env_lock(env);
	gt->pin = pin;
	gt->ppin = ppin;
	gn_env_unlock(env);
	/*
	 * The core compresses with its lock dropped; until it returns, no
	 * WAIT or poll may take the outcome (and free the tensor for another
	 * START or an UNREGISTER): @starting holds them off.
	 */
	r = gt->model ? gn_core_model_start(c->core, s.id, pin.data, ppin.data,
					    s.lr) :
			gn_core_allreduce_start(c->core, s.id, pin.data);
	gn_env_lock(env);
	gt->starting = false;
	if (!r) {
		gn_env_wake(env);
		gn_env_unlock(env);
		return 0;
	}
	gk_fail(c, r, "START tensor %u: %s", s.id, gn_core_api_errmsg(c->core));
	pin = gt->pin;
	ppin = gt->ppin;
	memset(&gt->pin, 0, sizeof(gt->pin));
	memset(&gt->ppin, 0, sizeof(gt->ppin));
	gn_env_unlock(env);
	gk_unpin(&pin);
	gk_unpin(&ppin);
out_unstart:
	gn_env_lock(env);
	gt->started = gt->starting = false;
	gn_env_wake(env);
	gn_env_unlock(env);
	return r;
}

/*
 * Has @gt's allreduce ended? Called with the env's lock. The core gives
 * an outcome once; it is kept in @gt until WAIT takes it, so poll() can
 * look without losing it. Return: 1 ended, 0 not yet (also while START
 * is still in the core, or gk_reap() is unpinning the buffer), -EINVAL
 * not started.
 */
static int collect(struct gk_ctx *c, struct gk_tensor *gt)
{
	int r, err = 0;

	/* An outcome is given once the buffer holds no pin. */
	if (gt->unpinning)
		return 0;
	if (gt->finished)
		return 1;
	if (!gt->started)
		return -EINVAL;
	if (gt->starting)
		return 0;
	r = gn_core_allreduce_done(c->core, gt->id, &err);
	if (r != 1)
		return 0;
	gt->finished = true;
	gt->err = err;
	strscpy(gt->msg, err ? gn_core_api_errmsg(c->core) : "", sizeof(gt->msg));
	return 1;
}

/**
 * gk_reap() - unpin the buffers of the allreduces whose outcome the core
 * has given, as soon as it gives it: a step that ended (or timed out)
 * holds no pages while nobody WAITs for it; the outcome stays for WAIT
 * @c: the context; its env's lock not held
 */
void gk_reap(struct gk_ctx *c)
{
	const struct gn_env *env = &c->env.env;
	unsigned long id = 0;
	struct gk_tensor *gt;
	struct gk_pin pin, ppin;
	bool found;

	for (;;) {
		found = false;
		gn_env_lock(env);
		xa_for_each_start(&c->tensors, id, gt, id) {
			if (gt->pin.pages && collect(c, gt) == 1) {
				pin = gt->pin;
				ppin = gt->ppin;
				memset(&gt->pin, 0, sizeof(gt->pin));
				memset(&gt->ppin, 0, sizeof(gt->ppin));
				gt->unpinning = true;
				found = true;
				break;
			}
		}
		gn_env_unlock(env);
		if (!found)
			return;
		/*
		 * Unpinning a large buffer takes a while: not under the
		 * lock, but WAIT and poll() see the outcome only after.
		 */
		gk_unpin(&pin);
		gk_unpin(&ppin);
		gn_env_lock(env);
		gt->unpinning = false;
		gn_env_wake(env);
		gn_env_unlock(env);
		id++;
	}
}

struct wait_out {
	int result;
	struct gk_pin pin, ppin;
	char msg[GRADNET_ERRMSG_LEN];
};

/* WAIT's loop, with the env's lock: 0 when it ended (into @out), or -errno. */
static int wait_locked(struct gk_ctx *c, const struct gradnet_wait *w,
		       struct wait_out *out)
{
	u64 deadline = 0;
	int r;

	if (w->timeout_ms && w->timeout_ms != ~0u)
		deadline = ktime_get_ns() + (u64)w->timeout_ms * NSEC_PER_MSEC;
	for (;;) {
		struct gk_tensor *gt = xa_load(&c->tensors, w->id);

		if (!gt)
			return gk_fail(c, -ENOENT, "WAIT: no tensor %u", w->id);
		r = collect(c, gt);
		if (r < 0)
			return gk_fail(c, r, "WAIT tensor %u: no allreduce of it was started",
				       w->id);
		if (r == 1) {
			out->result = gt->err;
			out->pin = gt->pin;
			out->ppin = gt->ppin;
			strscpy(out->msg, gt->msg, sizeof(out->msg));
			memset(&gt->pin, 0, sizeof(gt->pin));
			memset(&gt->ppin, 0, sizeof(gt->ppin));
			gt->started = false;
			gt->finished = false;
			return 0;
		}
		if (!w->timeout_ms || (deadline && ktime_get_ns() >= deadline))
			return gk_fail(c, -EAGAIN, "WAIT tensor %u: not finished yet",
				       w->id);
		if (gn_env_kernel_wait(&c->env, deadline))
			return gk_fail(c, -EINTR, "WAIT tensor %u: interrupted; the allreduce goes on, wait again",
				       w->id);
	}
}

static long ioc_wait(struct gk_ctx *c, void __user *arg)
{
	struct gradnet_wait w;
	struct wait_out *out;
	int r;

	r = gk_copy_in(c, "WAIT", &w, sizeof(w), GK_WAIT_MIN, arg);
	if (r)
		return r;
	r = gk_need_open(c, "WAIT");
	if (r)
		return r;
	if (w.result || !all_zero(w.reserved, sizeof(w.reserved)))
		return gk_fail(c, -EINVAL, "WAIT tensor %u: result and reserved must be zero",
			       w.id);
	out = kzalloc(sizeof(*out), GN_KERNEL_GFP);
	if (!out)
		return gk_fail(c, -ENOMEM, "WAIT: out of memory");
	gn_env_lock(&c->env.env);
	r = wait_locked(c, &w, out);
	gn_env_unlock(&c->env.env);
	if (r)
		goto out_free;
	gk_unpin(&out->pin);
	gk_unpin(&out->ppin);
	if (out->result)
		gk_fail(c, out->result, "%s", out->msg);
	w.result = out->result;
	if (put_user(w.result, &((struct gradnet_wait __user *)arg)->result) ||
	    (w.errmsg && copy_to_user(u64_to_user_ptr(w.errmsg), out->msg,
				      strlen(out->msg) + 1)))
		r = gk_fail(c, -EFAULT, "WAIT tensor %u: the allreduce ended (%d) but result or errmsg is not writable",
			    w.id, out->result);
out_free:
	kfree(out);
	return r;
}

/* ---- counters, messages, info ---- */

static long ioc_stats(struct gk_ctx *c, void __user *arg)
{
	const size_t first = offsetof(struct gn_stats, tx_packets);
	const struct gn_stats *src = NULL;
	struct gradnet_stats s;
	u64 *vals;
	size_t have;
	int r;

	r = gk_copy_in(c, "STATS", &s, sizeof(s), GK_STATS_MIN, arg);
	if (r)
		return r;
	r = gk_need_open(c, "STATS");
	if (r)
		return r;
	if (!all_zero(s.reserved, sizeof(s.reserved)) || !s.len ||
	    s.len % 8 || s.len > GK_STATS_MAX || s.scope > GRADNET_STATS_TENSOR)
		return gk_fail(c, -EINVAL, "STATS: scope 0..2, len a multiple of 8 in 8..4096, reserved zero");
	vals = kzalloc(s.len, GN_KERNEL_GFP);
	if (!vals)
		return gk_fail(c, -ENOMEM, "STATS: out of memory");
	have = min_t(size_t, s.len, sizeof(struct gn_stats) - first);
	gn_env_lock(&c->env.env);
	if (s.scope == GRADNET_STATS_TENSOR)
		src = gn_core_tensor_stats(c->core, s.key);
	else if (s.scope == GRADNET_STATS_CTX || s.key < (u32)c->world)
		src = gn_core_stats(c->core, s.scope == GRADNET_STATS_CTX ?
				    -1 : (int)s.key);
	if (src)
		memcpy(vals, (const u8 *)src + first, have);
	gn_env_unlock(&c->env.env);
	/* The socket drops strangers in softirq; the core never sees them. */
	if (src && s.scope == GRADNET_STATS_CTX && GK_STATS_SOURCE < have)
		vals[GK_STATS_SOURCE / 8] += atomic64_read(&c->ks->rx_strangers);
	if (!src)
		r = gk_fail(c, s.scope == GRADNET_STATS_TENSOR ? -ENOENT : -EINVAL,
			    "STATS: no %s %u", s.scope == GRADNET_STATS_TENSOR ?
			    "tensor" : "rank", s.key);
	else if (copy_to_user(u64_to_user_ptr(s.buf), vals, s.len))
		r = gk_fail(c, -EFAULT, "STATS: buf is not %u writable bytes", s.len);
	kfree(vals);
	return r;
}

static long ioc_errmsg(struct gk_ctx *c, void __user *arg)
{
	char msg[GRADNET_ERRMSG_LEN];
	struct gradnet_errmsg e;
	size_t n;
	int r;

	r = gk_copy_in(c, "ERRMSG", &e, sizeof(e), GK_ERRMSG_MIN, arg);
	if (r)
		return r;
	if (!e.len || e.len > 4096 || !all_zero(e.reserved, sizeof(e.reserved)))
		return -EINVAL;	/* the message stays the one asked for */
	spin_lock(&c->msg_lock);
	strscpy(msg, c->errmsg, sizeof(msg));
	spin_unlock(&c->msg_lock);
	n = min_t(size_t, strlen(msg), e.len - 1);
	msg[n] = 0;
	if (copy_to_user(u64_to_user_ptr(e.buf), msg, n + 1))
		return -EFAULT;
	return 0;
}

static long ioc_info(struct gk_ctx *c, void __user *arg)
{
	struct gradnet_info i;
	u32 usize;
	int r;

	r = gk_copy_in(c, "INFO", &i, sizeof(i), GK_INFO_MIN, arg);
	if (r)
		return r;
	usize = i.size;
	memset(&i, 0, sizeof(i));
	i.size = sizeof(i);
	i.abi = GRADNET_ABI_VERSION;
	i.features = GRADNET_FEAT_IPV4 | GRADNET_FEAT_POLL | GRADNET_FEAT_ENTROPY |
		     (IS_ENABLED(CONFIG_IPV6) ? GRADNET_FEAT_IPV6 : 0) |
		     GRADNET_FEAT_MODEL | GRADNET_FEAT_DOWN_ENTROPY |
		     (gk_faults_on() ? GRADNET_FEAT_FAULTS : 0);
	i.max_world = GRADNET_MAX_WORLD;
	i.key_len = GRADNET_KEY_LEN;
	i.errmsg_len = GRADNET_ERRMSG_LEN;
	i.wire_version = GN_WIRE_VERSION;
	if (copy_to_user(arg, &i, min_t(size_t, usize, sizeof(i))))
		return gk_fail(c, -EFAULT, "INFO: the argument is not writable");
	return 0;
}

/*
 * Dispatch on type and number only: the size in the command is the
 * caller's version of the struct, which the struct's own size field says.
 */
static long gk_dispatch(struct gk_ctx *c, unsigned int cmd, void __user *arg)
{
	switch (_IOC_NR(cmd)) {
	case _IOC_NR(GRADNET_IOC_OPEN):
		return ioc_open(c, arg);
	case _IOC_NR(GRADNET_IOC_REGISTER):
		return ioc_register(c, arg);
	case _IOC_NR(GRADNET_IOC_UNREGISTER):
		return ioc_unregister(c, arg);
	case _IOC_NR(GRADNET_IOC_START):
		return ioc_start(c, arg);
	case _IOC_NR(GRADNET_IOC_WAIT):
		return ioc_wait(c, arg);
	case _IOC_NR(GRADNET_IOC_STATS):
		return ioc_stats(c, arg);
	case _IOC_NR(GRADNET_IOC_ERRMSG):
		return ioc_errmsg(c, arg);
	case _IOC_NR(GRADNET_IOC_INFO):
		return ioc_info(c, arg);
	}
	return -ENOTTY;
}

/* The opener's memory cgroup pays, whoever holds the file now. */
static long gk_ioctl(struct file *f, unsigned int cmd, unsigned long uarg)
{
	struct gk_ctx *c = f->private_data;
	struct mem_cgroup *old;
	long r;

	if (_IOC_TYPE(cmd) != GRADNET_IOC_MAGIC)
		return -ENOTTY;
	old = set_active_memcg(c->memcg);
	r = gk_dispatch(c, cmd, (void __user *)uarg);
	set_active_memcg(old);
	return r;
}

/* POLLIN: some started allreduce has ended and WAIT will not block for it. */
static __poll_t gk_poll(struct file *f, poll_table *pt)
{
	struct gk_ctx *c = f->private_data;
	struct gk_tensor *gt;
	unsigned long id;
	__poll_t mask = 0;

	poll_wait(f, &c->env.wq, pt);
	if (atomic_read(&c->state) == GK_FAILED)
		return EPOLLERR;
	if (atomic_read(&c->state) != GK_OPEN)
		return 0;
	/*
	 * What poll() reports as ended holds no pins: it unpins what has
	 * ended, then reports only that. One that ends in between is the
	 * worker's to unpin, and its wake brings poll() back here.
	 */
	gk_reap(c);
	gn_env_lock(&c->env.env);
	xa_for_each(&c->tensors, id, gt)
		if (gt->started && collect(c, gt) == 1 && !gt->pin.pages) {
			mask = EPOLLIN | EPOLLRDNORM;
			break;
		}
	gn_env_unlock(&c->env.env);
	return mask;
}

static int gk_open(struct inode *inode, struct file *f)
{
	struct gk_ctx *c = kzalloc(sizeof(*c), GN_KERNEL_GFP);

	if (!c)
		return -ENOMEM;
	c->memcg = get_mem_cgroup_from_mm(current->mm);
	atomic_set(&c->state, GK_NEW);
	gn_env_kernel_init(&c->env);
	xa_init_flags(&c->tensors, XA_FLAGS_ACCOUNT);
	init_waitqueue_head(&c->worker_wq);
	spin_lock_init(&c->msg_lock);
	f->private_data = c;
	return stream_open(inode, f);
}

/* Let peers collect what this rank still owes them, for a little while. */
static void gk_linger(struct gk_ctx *c)
{
	u64 until = ktime_get_ns() + min_t(u64, c->timeout_ns, 2 * NSEC_PER_SEC);
	const struct gn_env *env = &c->env.env;

	gn_env_lock(env);
	while (gn_core_owes(c->core) && ktime_get_ns() < until) {
		gn_env_unlock(env);
		usleep_range(5000, 10000);
		gn_env_lock(env);
	}
	gn_core_ack_now(c->core);
	gn_env_unlock(env);
}

static int gk_release(struct inode *inode, struct file *f)
{
	struct gk_ctx *c = f->private_data;
	struct gk_tensor *gt;
	unsigned long id;

	if (atomic_read(&c->state) == GK_OPEN)
		gk_linger(c);
	gk_teardown(c);
	/* The core is gone: nothing writes into the pinned buffers now. */
	xa_for_each(&c->tensors, id, gt) {
		gk_unpin(&gt->pin);
		gk_unpin(&gt->ppin);
		kfree(gt);
	}
	xa_destroy(&c->tensors);
	gn_env_kernel_destroy(&c->env);
	mem_cgroup_put(c->memcg);
	kfree(c);
	return 0;
}

static const struct file_operations gk_fops = {
	.owner = THIS_MODULE,
	.open = gk_open,
	.release = gk_release,
	.unlocked_ioctl = gk_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.poll = gk_poll,
	.llseek = no_llseek,
};

static struct miscdevice gk_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "gradnet",
	.fops = &gk_fops,
};

/**
 * gk_dev_register() - create /dev/gradnet
 *
 * Return: 0 or the -errno of misc_register().
 */
int gk_dev_register(void)
{
	return misc_register(&gk_misc);
}

/**
 * gk_dev_unregister() - remove /dev/gradnet; no file is open (the
 * module's reference count saw to it)
 */
void gk_dev_unregister(void)
{
	misc_deregister(&gk_misc);
}
