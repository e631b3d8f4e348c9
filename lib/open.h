/* SPDX-License-Identifier: MIT */
/*
 * open.h - what the parts of gn_ctx_open() share: the arguments it
 * gathers before there is a context (options.c, keys.c), the DPDK glue
 * (dpdk_open.c), and the open error message (open.c) they all report to.
 */
#ifndef GN_OPEN_H
#define GN_OPEN_H

#include "driver.h"

struct gn_ctx_opts;

enum gn_tp_kind { GN_TP_KIND_UDP, GN_TP_KIND_DPDK, GN_TP_KIND_KMOD };

/* What gn_ctx_open() learns before there is a context. */
struct open_args {
	struct gn_core_conf conf;
	u8 key[GN_MAC_KEY_LEN];
	bool insecure;
	const char *peers;		/* the peer list as given, or NULL */
	const char *bind_addr;		/* gn_ctx_bind(): as given, or NULL */
	struct gn_addr self;		/* gn_ctx_bind(): where to bind */
	struct gn_addr *addrs;		/* [world]: the peer list, parsed */
	char (*names)[GN_NAME_LEN];
	enum gn_tp_kind transport;
	u32 workers;			/* codec workers, 1.. */
	/* dpdk: from gn_ctx_opts, else NULL and -1 (the variables say) */
	const char *dpdk_eal;
	long dpdk_port, dpdk_queue;
};

/* A field of an options struct the caller's sz covers, else 0. */
#define OPT(o, field)                                                         \
	((o) && (o)->sz >= offsetof(typeof(*(o)), field) + sizeof((o)->field) \
		 ? (o)->field : (typeof((o)->field))0)

/* open.c: set gn_last_errmsg() and return @err. */
int gn_open_fail(int err, const char *fmt, ...) GN_HIDDEN
	__attribute__((format(printf, 2, 3)));

/* options.c */
int gn_open_env_int(const char *const *names, long lo, long hi, long *out)
	GN_HIDDEN;
int gn_open_hexval(char c) GN_HIDDEN;
int gn_open_read_args(struct open_args *a, const struct gn_ctx_opts *o)
	GN_HIDDEN;
void gn_open_args_free(struct open_args *a) GN_HIDDEN;
int gn_open_parse_peers(struct open_args *a, const char *list,
			const char *what) GN_HIDDEN;
int gn_open_read_bind(struct open_args *a) GN_HIDDEN;

/* keys.c */
int gn_open_read_key(struct open_args *a, const struct gn_ctx_opts *o)
	GN_HIDDEN;

/* dpdk_open.c */
int gn_open_dpdk(struct open_args *a, struct gn_drv *d, u32 max_pkt)
	GN_HIDDEN;

/*
 * launcher.c: gn_ctx_open() without a peer list: the launcher's exchange
 * (PMIx) when there is one, else -EINVAL saying how to give the list.
 */
int gn_open_launcher(const struct gn_ctx_opts *o, struct gn_ctx **out)
	GN_HIDDEN;

/* open.c: the core backend's close (drain, stop, free). */
void gn_open_close_core(struct gn_ctx *ctx) GN_HIDDEN;

#endif /* GN_OPEN_H */
