// SPDX-License-Identifier: MIT
/*
 * kmod.c - libgradnet's kernel backend (GN_TRANSPORT=kmod): the protocol
 * core runs in the gradnet kernel module, one context per open file of
 * /dev/gradnet, and the public calls become its ioctls
 * (include/uapi/linux/gradnet.h). The caller's tensor is used in place by
 * the kernel; nothing here copies it.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uapi/linux/gradnet.h>

#include "backend.h"
#include "codec/entropy/entropy.h"

#define GN_KMOD_DEV "/dev/gradnet"

_Static_assert(GRADNET_KEY_LEN == GN_MAC_KEY_LEN, "uapi key length");
_Static_assert(GRADNET_ERRMSG_LEN == GN_ERRMSG_LEN, "uapi message length");
_Static_assert(GRADNET_PARAM_WORDS == GN_CODEC_PARAM_WORDS,
	       "uapi parameter block");
_Static_assert(GRADNET_TENSOR_AVERAGE == GN_TENSOR_AVERAGE, "uapi flags");
_Static_assert(GRADNET_GIVEN_ENTROPY == 1u << (GN_CODEC_PARAM_WORDS + GN_STAGE_CODER) &&
	       GRADNET_GIVEN_ENTROPY_LEVEL == 1u << (GN_CODEC_PARAM_WORDS + GN_STAGE_LEVEL),
	       "uapi given bits of the entropy stage");

static int kfd(struct gn_ctx *ctx)
{
	return ((struct gn_drv *)ctx->drv)->kmod_fd;
}

/* The module's reason for the last failed ioctl on @fd, into @buf. */
static void module_errmsg(int fd, char *buf, size_t len)
{
	struct gradnet_errmsg e = { .size = sizeof(e), .len = (__u32)len,
				    .buf = (__u64)(uintptr_t)buf };

	if (ioctl(fd, GRADNET_IOC_ERRMSG, &e))
		snprintf(buf, len, "the module gave no reason (%s)",
			 strerror(errno));
}

/* An ioctl: 0, or -errno with the module's reason in api_errmsg. */
static int kioctl(struct gn_ctx *ctx, unsigned long cmd, void *arg)
{
	int err;

	if (!ioctl(kfd(ctx), cmd, arg))
		return 0;
	err = -errno;
	module_errmsg(kfd(ctx), ctx->api_errmsg, sizeof(ctx->api_errmsg));
	return err;
}

static int open_device(char *msg, size_t len)
{
	struct stat st;
	int fd = open(GN_KMOD_DEV, O_RDWR | O_CLOEXEC);

	if (fd >= 0)
		return fd;
	if (errno == EACCES || errno == EPERM) {
		snprintf(msg, len, "GN_TRANSPORT=kmod: cannot open %s: %s (it is root's by default; give this user access, e.g. a udev rule)",
			 GN_KMOD_DEV, strerror(errno));
		return -errno;
	}
	if (stat("/sys/module/gradnet", &st))
		snprintf(msg, len, "GN_TRANSPORT=kmod: the gradnet kernel module is not loaded: modprobe gradnet (or insmod gradnet.ko from the build; it needs udp_tunnel and ip6_udp_tunnel loaded first; see kmod/README)");
	else
		snprintf(msg, len, "GN_TRANSPORT=kmod: the gradnet module is loaded but %s cannot be opened (%s): is devtmpfs mounted on /dev?",
			 GN_KMOD_DEV, strerror(errno));
	return -ENODEV;
}

static int check_info(int fd, char *msg, size_t len)
{
	struct gradnet_info i = { .size = sizeof(i) };

	if (ioctl(fd, GRADNET_IOC_INFO, &i)) {
		snprintf(msg, len, "GN_TRANSPORT=kmod: %s does not answer GRADNET_IOC_INFO (%s): an older gradnet module? Load the one built with this library",
			 GN_KMOD_DEV, strerror(errno));
		return -EPROTONOSUPPORT;
	}
	if (i.abi != GRADNET_ABI_VERSION) {
		snprintf(msg, len, "GN_TRANSPORT=kmod: the loaded gradnet module speaks ABI %u, this library %d: load the module built with this library",
			 i.abi, GRADNET_ABI_VERSION);
		return -EPROTONOSUPPORT;
	}
	return 0;
}

static int fill_peers(struct gradnet_peer *p, const struct gn_addr *addrs,
		      int world, char *msg, size_t len)
{
	int i;

	for (i = 0; i < world; i++) {
		const struct sockaddr_storage *sa = &addrs[i].sa;

		memset(&p[i], 0, sizeof(p[i]));
		p[i].family = sa->ss_family;
		if (sa->ss_family == AF_INET) {
			const struct sockaddr_in *in = (const void *)sa;

			p[i].port = in->sin_port;
			memcpy(p[i].addr, &in->sin_addr, 4);
		} else if (sa->ss_family == AF_INET6) {
			const struct sockaddr_in6 *in6 = (const void *)sa;

			p[i].port = in6->sin6_port;
			memcpy(p[i].addr, &in6->sin6_addr, 16);
		} else {
			snprintf(msg, len, "GN_PEERS entry %d is neither IPv4 nor IPv6", i);
			return -EAFNOSUPPORT;
		}
	}
	return 0;
}

static __u32 ms_of(u64 ns)
{
	u64 ms = (ns + 999999) / 1000000;

	return ms > 0xffffffffu ? 0xffffffffu : (__u32)ms;
}

/* The module's OPEN: joins the job, returns once the handshake is done. */
static int join(int fd, const struct gn_core_conf *conf,
		const struct gradnet_peer *peers, char *msg, size_t len)
{
	struct gradnet_open o = {
		.size = sizeof(o),
		.abi = GRADNET_ABI_VERSION,
		.rank = (__u32)conf->rank,
		.world = (__u32)conf->world,
		.job_id = conf->job,
		.mtu = conf->mtu,
		.chunk = conf->chunk,
		.timeout_ms = ms_of(conf->timeout_ns),
		.step_timeout_ms = ms_of(conf->step_timeout_ns),
		.codec = conf->codec.codec,
		.codec_given = conf->codec.given,
		.flags = (conf->key ? 0 : GRADNET_OPEN_INSECURE) |
			 (conf->clear ? GRADNET_OPEN_CLEAR : 0),
		.entropy = gn_entropy_pack(&conf->codec.p),
		.peers = (__u64)(uintptr_t)peers,
	};
	int r = 0;

	if (conf->key)
		memcpy(o.key, conf->key, sizeof(o.key));
	memcpy(o.codec_params, conf->codec.p.w, sizeof(o.codec_params));
	while (ioctl(fd, GRADNET_IOC_OPEN, &o)) {
		r = -errno;
		module_errmsg(fd, msg, len);
		break;
	}
	explicit_bzero(o.key, sizeof(o.key));
	return r;
}

/**
 * gn_kmod_open() - join a job through /dev/gradnet
 * @conf: the job as gn_ctx_open() read it (conf->key NULL: insecure)
 * @addrs: every rank's address, rank order
 * @msg, @len: why it failed
 * @out: the context: no core in this process, the kernel backend's ops
 *
 * Return: 0; -ENODEV without the module (@msg says how to load it);
 * -EPROTONOSUPPORT for a module of another ABI; the OPEN's -errno.
 */
int gn_kmod_open(const struct gn_core_conf *conf, const struct gn_addr *addrs,
		 char *msg, size_t len, struct gn_ctx **out)
{
	struct gradnet_peer *peers = NULL;
	struct gn_ctx *ctx = NULL;
	struct gn_drv *d = NULL;
	int fd, r;

	fd = open_device(msg, len);
	if (fd < 0)
		return fd;
	r = check_info(fd, msg, len);
	if (r)
		goto out_close;
	peers = calloc((size_t)conf->world, sizeof(*peers));
	ctx = calloc(1, sizeof(*ctx));
	d = calloc(1, sizeof(*d));
	if (!peers || !ctx || !d) {
		snprintf(msg, len, "out of memory");
		r = -ENOMEM;
		goto out_close;
	}
	r = fill_peers(peers, addrs, conf->world, msg, len);
	if (!r)
		r = join(fd, conf, peers, msg, len);
	if (r)
		goto out_close;
	free(peers);
	d->backend = &gn_kmod_backend;
	d->kmod_fd = fd;
	ctx->drv = d;
	ctx->rank = conf->rank;
	ctx->world = conf->world;
	ctx->codec = conf->codec;
	*out = ctx;
	return 0;

out_close:
	free(peers);
	free(ctx);
	free(d);
	close(fd);
	return r;
}

/* Closing the file leaves the job; the module lets peers collect first. */
static void kmod_close(struct gn_ctx *ctx)
{
	struct gn_drv *d = ctx->drv;

	close(d->kmod_fd);
	free(d);
	free(ctx);
}

static int kmod_register(struct gn_ctx *ctx, const struct gn_core_tensor *o)
{
	struct gradnet_tensor t = {
		.size = sizeof(t), .id = o->id, .codec = o->codec.codec,
		.given = o->codec.given, .elems = o->elems, .flags = o->flags,
		.entropy = gn_entropy_pack(&o->codec.p),
	};

	memcpy(t.params, o->codec.p.w, sizeof(t.params));
	return kioctl(ctx, GRADNET_IOC_REGISTER, &t);
}

static int kmod_model_register(struct gn_ctx *ctx,
			       const struct gn_core_tensor *o,
			       const struct gn_core_model *m)
{
	struct gradnet_tensor t = {
		.size = sizeof(t), .id = o->id, .codec = o->codec.codec,
		.given = o->codec.given, .elems = o->elems,
		.flags = o->flags | GRADNET_TENSOR_MODEL,
		.entropy = gn_entropy_pack(&o->codec.p),
		.down_codec = m->down.codec, .down_given = m->down.given,
		.model_flags = m->flags, .momentum = m->momentum,
		.weight_decay = m->weight_decay, .alpha = m->alpha,
		.beta = m->beta, .eta = m->eta,
		.down_entropy = gn_entropy_pack(&m->down.p),
	};

	memcpy(t.params, o->codec.p.w, sizeof(t.params));
	memcpy(t.down_params, m->down.p.w, sizeof(t.down_params));
	return kioctl(ctx, GRADNET_IOC_REGISTER, &t);
}

static int kmod_unregister(struct gn_ctx *ctx, u32 id)
{
	struct gradnet_tensor t = { .size = sizeof(t), .id = id };

	return kioctl(ctx, GRADNET_IOC_UNREGISTER, &t);
}

static int kmod_start(struct gn_ctx *ctx, u32 id, float *data)
{
	struct gradnet_start s = { .size = sizeof(s), .id = id,
				   .data = (__u64)(uintptr_t)data };

	return kioctl(ctx, GRADNET_IOC_START, &s);
}

static int kmod_model_start(struct gn_ctx *ctx, u32 id, float *grad,
			    float *params, u32 lr)
{
	struct gradnet_start s = { .size = sizeof(s), .id = id,
				   .data = (__u64)(uintptr_t)grad,
				   .params = (__u64)(uintptr_t)params, .lr = lr };

	return kioctl(ctx, GRADNET_IOC_START, &s);
}

/* Waits as long as it takes; a signal only restarts the wait. */
static int kmod_wait(struct gn_ctx *ctx, u32 id)
{
	struct gradnet_wait w = {
		.size = sizeof(w), .id = id, .timeout_ms = ~0u,
		.errmsg = (__u64)(uintptr_t)ctx->api_errmsg,
	};
	int r;

	do {
		w.result = 0;
		r = ioctl(kfd(ctx), GRADNET_IOC_WAIT, &w) ? -errno : 0;
	} while (r == -EINTR || r == -EAGAIN);
	if (r) {
		module_errmsg(kfd(ctx), ctx->api_errmsg, sizeof(ctx->api_errmsg));
		return r;
	}
	return w.result;
}

/* The counters from tx_packets on, as many as the caller's struct has. */
static int kmod_stats(struct gn_ctx *ctx, enum gn_stats_scope scope, u32 key,
		      struct gn_stats *st)
{
	const size_t first = offsetof(struct gn_stats, tx_packets);
	size_t have = (st->sz < sizeof(*st) ? st->sz : sizeof(*st)) - first;
	struct gradnet_stats s = {
		.size = sizeof(s), .key = key,
		.scope = scope == GN_SCOPE_CTX ? GRADNET_STATS_CTX :
			 scope == GN_SCOPE_PEER ? GRADNET_STATS_PEER :
						  GRADNET_STATS_TENSOR,
		.buf = (__u64)(uintptr_t)((u8 *)st + first),
		.len = (__u32)(have & ~(size_t)7),
	};
	int r;

	if (!s.len)
		return 0;	/* a struct with no counters: nothing to read */
	r = kioctl(ctx, GRADNET_IOC_STATS, &s);
	if (!r && st->sz > sizeof(*st))
		memset((u8 *)st + sizeof(*st), 0, st->sz - sizeof(*st));
	return r;
}

const struct gn_backend_ops gn_kmod_backend = {
	.close = kmod_close,
	.tensor_register = kmod_register,
	.tensor_unregister = kmod_unregister,
	.allreduce_start = kmod_start,
	.allreduce_wait = kmod_wait,
	.model_register = kmod_model_register,
	.model_start = kmod_model_start,
	.stats = kmod_stats,
};
