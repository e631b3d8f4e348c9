// SPDX-License-Identifier: MIT
/*
 * ctx.c - contexts: options and environment, the handshake wait, close,
 * error messages and counters.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define CWND_START_SSTHRESH (4096 * GN_CWND_ONE)

static __thread char open_errmsg[GN_ERRMSG_LEN];

u64 gn_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000ull + (u64)ts.tv_nsec;
}

void gn_set_err(struct gn_ctx *ctx, char *buf, const char *fmt, ...)
{
	va_list ap;

	(void)ctx;
	va_start(ap, fmt);
	vsnprintf(buf, GN_ERRMSG_LEN, fmt, ap);
	va_end(ap);
}

static int open_fail(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int open_fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(open_errmsg, sizeof(open_errmsg), fmt, ap);
	va_end(ap);
	return err;
}

const char *gn_last_errmsg(void)
{
	return open_errmsg;
}

const char *gn_ctx_errmsg(struct gn_ctx *ctx)
{
	return ctx ? ctx->api_errmsg : "";
}

const char *gn_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case -EDOM:
		return "a gradient held NaN or infinity; the step was skipped";
	case -ETIMEDOUT:
		return "a peer went silent";
	case -EPROTO:
		return "peers disagree on protocol or parameters";
	case -EKEYREJECTED:
		return "peer packets fail authentication (job keys differ)";
	case -EBUSY:
		return "an allreduce of this tensor is already in flight";
	case -ENOENT:
		return "no such tensor";
	case -EEXIST:
		return "tensor id already registered";
	case -EINVAL:
		return "invalid argument";
	case -E2BIG:
		return "options set fields this library does not know";
	default:
		/* strerror() may write a shared or per-thread buffer that the
		 * next call overwrites; the descriptions are static. */
		return strerrordesc_np(err < 0 ? -err : err) ?: "unknown error";
	}
}

const char *gn_drop_name(int reason)
{
	static const char *const names[GN_DROP_COUNT] = {
		[GN_DROP_MALFORMED] = "malformed",
		[GN_DROP_VERSION] = "version",
		[GN_DROP_JOB] = "job",
		[GN_DROP_SOURCE] = "source",
		[GN_DROP_MAC] = "mac",
		[GN_DROP_REPLAY] = "replay",
		[GN_DROP_DUPLICATE] = "duplicate",
		[GN_DROP_TENSOR] = "tensor",
		[GN_DROP_EARLY] = "early",
	};

	return reason >= 0 && reason < GN_DROP_COUNT ? names[reason] : "?";
}

void gn_count_drop(struct gn_ctx *ctx, struct gn_peer *p, int reason)
{
	ctx->stats.drops[reason]++;
	if (p)
		p->stats.drops[reason]++;
}

int gn_ctx_rank(const struct gn_ctx *ctx)
{
	return ctx ? ctx->rank : -EINVAL;
}

int gn_ctx_world_size(const struct gn_ctx *ctx)
{
	return ctx ? ctx->world : -EINVAL;
}

/* ---- options ------------------------------------------------------------ */

/*
 * Options from an older or newer caller: @sz must cover the size field,
 * and bytes past the @known size this library understands must be zero.
 * Return: 0, -EINVAL (too small) or -E2BIG (unknown nonzero bytes).
 */
int gn_opts_check(const void *opts, size_t sz, size_t known)
{
	const u8 *p = opts;
	size_t i;

	if (sz < sizeof(size_t))
		return -EINVAL;
	for (i = known; i < sz; i++)
		if (p[i])
			return -E2BIG;
	return 0;
}

#define OPT(o, field)                                                         \
	((o) && (o)->sz >= offsetof(typeof(*(o)), field) + sizeof((o)->field) \
		 ? (o)->field : (typeof((o)->field))0)

/* The first of several environment variables that is set. */
static const char *env_any(const char *const *names)
{
	for (; *names; names++) {
		const char *v = getenv(*names);

		if (v && *v)
			return v;
	}
	return NULL;
}

static int env_int(const char *const *names, long lo, long hi, long *out)
{
	const char *v = env_any(names);
	char *end;
	long x;

	if (!v)
		return 0;
	errno = 0;
	x = strtol(v, &end, 0);
	if (errno || *end || x < lo || x > hi)
		return open_fail(-EINVAL, "%s=%s is not a number in %ld..%ld",
				 names[0], v, lo, hi);
	*out = x;
	return 1;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* 32 hex digits, from the variable @var; a final newline is allowed. */
static int parse_key(const char *var, const char *hex, size_t len, u8 *key)
{
	size_t i;

	if (len && hex[len - 1] == '\n')
		len--;
	if (len && hex[len - 1] == '\r')
		len--;
	if (len != 2 * GN_MAC_KEY_LEN)
		return open_fail(-EINVAL, "%s: the key must be %d hex digits, got %zu characters",
				 var, 2 * GN_MAC_KEY_LEN, len);
	for (i = 0; i < GN_MAC_KEY_LEN; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return open_fail(-EINVAL, "%s: the key has a non-hex digit at %zu",
					 var, 2 * i);
		key[i] = (u8)(hi << 4 | lo);
	}
	return 0;
}

/*
 * The key from a file descriptor: read to end of file (a pipe from a
 * launcher, or an open file), then parse. @var names the source.
 */
static int read_key_fd(const char *var, int fd, u8 *key)
{
	char buf[2 * GN_MAC_KEY_LEN + 3];
	size_t have = 0;
	int r;

	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = open_fail(-errno, "%s: cannot read the key: %s", var,
				      strerror(errno));
			goto out;
		}
		if (!n)
			break;
		have += (size_t)n;
		if (have == sizeof(buf)) {
			r = open_fail(-EINVAL, "%s: more than a key (%d hex digits and a newline)",
				      var, 2 * GN_MAC_KEY_LEN);
			goto out;
		}
	}
	r = parse_key(var, buf, have, key);
out:
	explicit_bzero(buf, sizeof(buf));
	return r;
}

/*
 * GN_KEY_FILE: like an ssh private key, a file that others than its owner
 * may read or write is refused, so a key does not leak by a loose umask.
 */
static int key_from_file(const char *path, u8 *key)
{
	struct stat st;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return open_fail(-errno, "GN_KEY_FILE=%s: %s", path, strerror(errno));
	if (fstat(fd, &st)) {
		r = open_fail(-errno, "GN_KEY_FILE=%s: %s", path, strerror(errno));
	} else if (!S_ISREG(st.st_mode)) {
		r = open_fail(-EINVAL, "GN_KEY_FILE=%s is not a regular file", path);
	} else if (st.st_mode & 077) {
		r = open_fail(-EACCES,
			      "GN_KEY_FILE=%s has mode %03o: group and others must have no access (chmod 600)",
			      path, (unsigned int)(st.st_mode & 0777));
	} else {
		r = read_key_fd("GN_KEY_FILE", fd, key);
	}
	close(fd);
	return r;
}

/*
 * GN_KEY_FD: a descriptor the launcher opened (a pipe, say). It is read
 * once and closed, and the variable removed, so children inherit neither.
 */
static int key_from_fd(const char *num, u8 *key)
{
	char *end;
	long fd;
	int r;

	errno = 0;
	fd = strtol(num, &end, 10);
	if (errno || *end || end == num || fd < 0 || fd > 0x7fffffff)
		return open_fail(-EINVAL, "GN_KEY_FD=%s is not a file descriptor", num);
	r = read_key_fd("GN_KEY_FD", (int)fd, key);
	if (r == -EBADF)
		return open_fail(r, "GN_KEY_FD=%ld is not an open file descriptor", fd);
	close((int)fd);
	unsetenv("GN_KEY_FD");
	return r;
}

/*
 * GN_KEY: read, then wiped from the environment (the string itself, which
 * /proc/PID/environ shows for the initial environment, then the variable),
 * so processes this one starts do not inherit the key.
 */
static int key_from_env(char *hex, u8 *key)
{
	int r = parse_key("GN_KEY", hex, strlen(hex), key);

	explicit_bzero(hex, strlen(hex));
	unsetenv("GN_KEY");
	return r;
}

/* "host:port" or "[v6 host]:port" */
static int parse_addr(const char *s, size_t len, struct gn_addr *a,
		      char *name, size_t name_len)
{
	char host[256], port[16];
	struct addrinfo hints = { .ai_socktype = SOCK_DGRAM }, *res;
	const char *colon;
	size_t hl;
	int r;

	if (len >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, len);
	host[len] = 0;
	colon = strrchr(host, ':');
	if (!colon || colon == host || strlen(colon + 1) >= sizeof(port))
		return -EINVAL;
	snprintf(port, sizeof(port), "%s", colon + 1);
	hl = (size_t)(colon - host);
	if (host[0] == '[' && hl >= 2 && host[hl - 1] == ']') {
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = 0;
	} else {
		host[hl] = 0;
	}
	r = getaddrinfo(host, port, &hints, &res);
	if (r)
		return -EINVAL;
	memcpy(&a->sa, res->ai_addr, res->ai_addrlen);
	a->len = res->ai_addrlen;
	freeaddrinfo(res);
	snprintf(name, name_len, "%.*s", (int)len, s);
	return 0;
}

int gn_ctx_parse_peers(struct gn_ctx *ctx, const char *list)
{
	const char *p = list;
	int n = 0;

	while (*p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		struct gn_peer *peer;
		char where[80];

		if (n >= ctx->world)
			return open_fail(-EINVAL,
					 "GN_PEERS lists more than world size %d addresses",
					 ctx->world);
		peer = &ctx->peers[n];
		if (parse_addr(p, len, &ctx->addrs[n], where, sizeof(where)))
			return open_fail(-EINVAL,
					 "GN_PEERS entry %d \"%.*s\" is not a resolvable host:port",
					 n, (int)len, p);
		peer->addr = ctx->addrs[n];
		peer->rank = n;
		snprintf(peer->name, sizeof(peer->name), "rank %d (%.80s)", n, where);
		n++;
		p += len + (end != NULL);
	}
	if (n != ctx->world)
		return open_fail(-EINVAL,
				 "GN_PEERS lists %d addresses, world size is %d",
				 n, ctx->world);
	return 0;
}

static const char *const rank_vars[] = { "GN_RANK", "OMPI_COMM_WORLD_RANK",
	"PMI_RANK", "PMIX_RANK", "SLURM_PROCID", "RANK", NULL };
static const char *const world_vars[] = { "GN_WORLD_SIZE",
	"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", "WORLD_SIZE", NULL };

static int read_basics(struct gn_ctx *ctx, const struct gn_ctx_opts *o,
		       const char **peers)
{
	static const char *const mtu_vars[] = { "GN_MTU", NULL };
	static const char *const to_vars[] = { "GN_TIMEOUT_MS", NULL };
	static const char *const step_vars[] = { "GN_STEP_TIMEOUT_MS", NULL };
	static const char *const chunk_vars[] = { "GN_CHUNK", NULL };
	static const char *const job_vars[] = { "GN_JOB", NULL };
	long rank = OPT(o, rank), world = OPT(o, world_size);
	long mtu = OPT(o, mtu), to = OPT(o, timeout_ms), chunk = OPT(o, chunk);
	long step = OPT(o, step_timeout_ms), job = 0;
	int r;

	if (!world && (r = env_int(world_vars, 1, 65534, &world)) < 0)
		return r;
	/* Rank 0 is also what a zeroed struct holds: it counts only with
	 * GN_CTX_RANK, else the launcher's variables say. */
	if (rank < 0 || (!rank && !(OPT(o, flags) & GN_CTX_RANK))) {
		rank = -1;
		if ((r = env_int(rank_vars, 0, 65534, &rank)) < 0)
			return r;
		if (!r && world == 1)
			rank = 0;
	}
	if (rank < 0 || world < 1 || rank >= world)
		return open_fail(-EINVAL,
				 "rank %ld and world size %ld: set gn_ctx_opts (.rank, with GN_CTX_RANK for rank 0) or GN_RANK and GN_WORLD_SIZE (0 <= rank < world)",
				 rank, world);
	if (!mtu && (r = env_int(mtu_vars, 576, 9000, &mtu)) < 0)
		return r;
	if (!to && (r = env_int(to_vars, 1, 86400000, &to)) < 0)
		return r;
	if (!step && (r = env_int(step_vars, 1, 86400000, &step)) < 0)
		return r;
	if (!chunk && (r = env_int(chunk_vars, 1, 1 << 24, &chunk)) < 0)
		return r;
	if (mtu && (mtu < 576 || mtu > 9000))
		return open_fail(-EINVAL, "mtu %ld is outside 576..9000", mtu);
	ctx->rank = (int)rank;
	ctx->world = (int)world;
	ctx->mtu = mtu ? (unsigned int)mtu : 1500;
	ctx->max_pkt = ctx->mtu - GN_WIRE_IPUDP;
	ctx->timeout_ns = (u64)(to ? to : 10000) * 1000000ull;
	ctx->step_timeout_ns = (u64)(step ? step : 600000) * 1000000ull;
	ctx->chunk = chunk ? (unsigned int)chunk : 65536;
	ctx->job = (u32)OPT(o, job_id);
	if (!ctx->job && (r = env_int(job_vars, 0, 0x7fffffffl, &job)) < 0)
		return r;
	if (!ctx->job)
		ctx->job = (u32)job;
	*peers = OPT(o, peers) ? OPT(o, peers) : getenv("GN_PEERS");
	if (!*peers)
		return open_fail(-EINVAL,
				 "no peer addresses: set gn_ctx_opts.peers or GN_PEERS=host:port,... (rank order)");
	return 0;
}

/*
 * GN_CODEC_ISA forces the codec's kernels for the whole process: the
 * results are the same bit for bit, so it is for tests and benchmarks.
 */
static int read_isa(void)
{
	const char *v = getenv("GN_CODEC_ISA");
	int r = gn_codec_isa_select(v);

	if (r == -EINVAL)
		return open_fail(r, "GN_CODEC_ISA=%s: use scalar, avx2, avx512 or best", v);
	if (r)
		return open_fail(r, "GN_CODEC_ISA=%s: this CPU lacks %s (it runs %s at best)",
				 v, v, gn_codec_isa_name(gn_codec_isa_best()));
	return 0;
}

static int read_codec(struct gn_ctx *ctx, const struct gn_ctx_opts *o)
{
	const char *c = getenv("GN_CODEC"), *sv = getenv("GN_S");
	int codec = OPT(o, codec);
	float s = OPT(o, s);

	if (!codec && c) {
		if (!strcmp(c, "none"))
			codec = GN_CODEC_NONE;
		else if (!strcmp(c, "3lc"))
			codec = GN_CODEC_3LC;
		else
			return open_fail(-EINVAL, "GN_CODEC=%s: use none or 3lc", c);
	}
	if (s == 0.0f && sv) {
		char *end;

		s = strtof(sv, &end);
		if (*end)
			return open_fail(-EINVAL, "GN_S=%s is not a number", sv);
	}
	ctx->codec = codec == GN_CODEC_NONE ? GN_WIRE_CODEC_NONE :
					      GN_WIRE_CODEC_3LC;
	if (codec && codec != GN_CODEC_NONE && codec != GN_CODEC_3LC)
		return open_fail(-EINVAL, "codec %d is unknown", codec);
	ctx->s = s == 0.0f ? 1.0f : s;
	if (!(ctx->s >= 1.0f && ctx->s < 2.0f))
		return open_fail(-EINVAL, "3LC s = %g is outside [1, 2)",
				 (double)ctx->s);
	memcpy(&ctx->s_bits, &ctx->s, sizeof(ctx->s_bits));
	return read_isa();
}

static int read_key(struct gn_ctx *ctx, const struct gn_ctx_opts *o)
{
	const char *ins = getenv("GN_INSECURE"), *file = getenv("GN_KEY_FILE");
	const char *fd = getenv("GN_KEY_FD");
	char *hex = getenv("GN_KEY");
	u8 key[GN_MAC_KEY_LEN];
	const u8 *given;
	int r = 0;

	ctx->insecure = (OPT(o, flags) & GN_CTX_INSECURE) ||
			(ins && !strcmp(ins, "1"));
	given = OPT(o, key);
	if (!given && (!!(hex && *hex) + !!(file && *file) + !!(fd && *fd)) > 1)
		return open_fail(-EINVAL,
				 "more than one of GN_KEY, GN_KEY_FILE and GN_KEY_FD is set; pick one");
	if (given) {
		if (OPT(o, key_len) != GN_MAC_KEY_LEN)
			return open_fail(-EINVAL, "key_len is %zu, must be %d",
					 OPT(o, key_len), GN_MAC_KEY_LEN);
		memcpy(key, given, GN_MAC_KEY_LEN);
	} else if (fd && *fd) {
		r = key_from_fd(fd, key);
	} else if (file && *file) {
		r = key_from_file(file, key);
	} else if (hex && *hex) {
		r = key_from_env(hex, key);
	} else if (ctx->insecure) {
		return 0;
	} else {
		return open_fail(-EINVAL,
				 "no job key: set GN_KEY (32 hex digits), GN_KEY_FILE, GN_KEY_FD or gn_ctx_opts.key; GN_INSECURE=1 (or GN_CTX_INSECURE) runs without authentication");
	}
	if (r)
		goto out;
	if (ctx->insecure) {
		r = open_fail(-EINVAL, "a key and GN_INSECURE are both set; pick one");
		goto out;
	}
	/* The session key is derived when the handshake is done. */
	ctx->job_mac = malloc(sizeof(*ctx->job_mac));
	ctx->mac = malloc(sizeof(*ctx->mac));
	if (!ctx->job_mac || !ctx->mac) {
		r = open_fail(-ENOMEM, "out of memory");
		goto out;
	}
	gn_mac_init(ctx->job_mac, key);
out:
	explicit_bzero(key, sizeof(key));
	return r;
}

int gn_ctx_alloc(struct gn_ctx **out, int world)
{
	struct gn_ctx *ctx = calloc(1, sizeof(*ctx));
	int i;

	if (!ctx)
		return -ENOMEM;
	ctx->peers = calloc((size_t)world, sizeof(*ctx->peers));
	ctx->addrs = calloc((size_t)world, sizeof(*ctx->addrs));
	/* Batches live here, not on the stack: the core's frames stay small. */
	ctx->rx_batch = calloc(GN_RX_BATCH, sizeof(*ctx->rx_batch));
	ctx->tx_batch = gn_tx_batch_new();
	if (!ctx->peers || !ctx->addrs || !ctx->rx_batch || !ctx->tx_batch) {
		free(ctx->peers);
		free(ctx->addrs);
		free(ctx->rx_batch);
		free(ctx->tx_batch);
		free(ctx);
		return -ENOMEM;
	}
	for (i = 0; i < world; i++) {
		ctx->peers[i].rto_ns = 20000000;
		ctx->peers[i].cwnd = 256 * GN_CWND_ONE;
		ctx->peers[i].ssthresh = CWND_START_SSTHRESH;
	}
	*out = ctx;
	return 0;
}

void gn_ctx_free(struct gn_ctx *ctx)
{
	struct gn_tensor *t;
	int i;

	while ((t = ctx->tensors)) {
		ctx->tensors = t->next;
		gn_tensor_destroy(ctx, t);
	}
	free(ctx->tensor_tab);
	while (ctx->pending) {
		struct gn_pending_desc *d = ctx->pending;

		ctx->pending = d->next;
		free(d);
	}
	while (ctx->retired) {
		struct gn_retired *rt = ctx->retired;

		ctx->retired = rt->next;
		free(rt);
	}
	while (ctx->tx) {
		struct gn_txmsg *m = ctx->tx;

		ctx->tx = m->next;
		gn_txmsg_free(m);
	}
	for (i = 0; ctx->peers && i < ctx->world; i++) {
		while (ctx->peers[i].ctrl_q) {
			struct gn_ctrl_out *c = ctx->peers[i].ctrl_q;

			ctx->peers[i].ctrl_q = c->next;
			free(c);
		}
	}
	free(ctx->ackq);
	free(ctx->peers);
	free(ctx->addrs);
	free(ctx->rx_batch);
	free(ctx->tx_batch);
	/* The MAC state is the key, expanded: leave none of it in the heap. */
	if (ctx->mac)
		explicit_bzero(ctx->mac, sizeof(*ctx->mac));
	free(ctx->mac);
	if (ctx->job_mac)
		explicit_bzero(ctx->job_mac, sizeof(*ctx->job_mac));
	free(ctx->job_mac);
	free(ctx);
}

/* Set by the test library (tests/lib) in its processes only. */
const struct gn_test_hooks *gn_test_hooks;

static int ctx_setup(struct gn_ctx *ctx, const struct gn_ctx_opts *o,
		     const char *peers)
{
	int r;

	r = gn_ctx_parse_peers(ctx, peers);
	if (r)
		return r;
	r = read_codec(ctx, o);
	if (r)
		return r;
	r = read_key(ctx, o);
	if (r)
		return r;
	/* The session key is only as fresh as these bytes are random. */
	do {
		if (getrandom(&ctx->instance, sizeof(ctx->instance), 0) !=
		    sizeof(ctx->instance) && errno != EINTR)
			return open_fail(-errno, "cannot read random bytes for the session: %s",
					 strerror(errno));
	} while (!ctx->instance);
	ctx->version = GN_WIRE_VERSION;
	ctx->dead_peer = -1;
	ctx->tp = &gn_udp_ops;
	if (gn_test_hooks && gn_test_hooks->open) {
		char msg[GN_ERRMSG_LEN] = "";

		r = gn_test_hooks->open(ctx, msg, sizeof(msg));
		if (r)
			return open_fail(r, "%s", msg);
	}
	r = ctx->tp->open(&ctx->addrs[ctx->rank], ctx->max_pkt, &ctx->tp_state);
	if (r)
		return open_fail(r, "cannot bind %s: %s", ctx->peers[ctx->rank].name,
				 strerror(-r));
	return 0;
}

static void ctx_stop(struct gn_ctx *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	ctx->stop = true;
	pthread_mutex_unlock(&ctx->lock);
	ctx->tp->wake(ctx->tp_state);
	pthread_join(ctx->thread, NULL);
	ctx->tp->close(ctx->tp_state);
	pthread_mutex_destroy(&ctx->lock);
	pthread_cond_destroy(&ctx->cond);
}

int gn_ctx_open(const struct gn_ctx_opts *o, struct gn_ctx **out)
{
	struct gn_ctx tmp = { 0 }, *ctx;
	struct gn_ctx_opts copy = { 0 };
	const char *peers;
	int r;

	open_errmsg[0] = 0;
	if (!out)
		return open_fail(-EINVAL, "gn_ctx_open: the context out-pointer is NULL");
	*out = NULL;
	if (o) {
		r = gn_opts_check(o, o->sz, sizeof(*o));
		if (r == -EINVAL)
			return open_fail(r, "gn_ctx_opts: sz %zu is too small; use GN_OPTS()",
					 o->sz);
		if (r)
			return open_fail(r, "gn_ctx_opts: sz %zu is larger than this library's %zu and the extra bytes are not zero",
					 o->sz, sizeof(*o));
		/* Fields past the caller's sz are zero, the defaults. */
		memcpy(&copy, o, o->sz < sizeof(copy) ? o->sz : sizeof(copy));
		o = &copy;
		if (o->flags & ~(GN_CTX_INSECURE | GN_CTX_RANK))
			return open_fail(-EINVAL, "gn_ctx_opts.flags %#x has bits this library does not know",
					 o->flags);
	}
	r = read_basics(&tmp, o, &peers);
	if (r)
		return r;
	if (gn_ctx_alloc(&ctx, tmp.world))
		return open_fail(-ENOMEM, "out of memory");
	ctx->rank = tmp.rank;
	ctx->world = tmp.world;
	ctx->mtu = tmp.mtu;
	ctx->max_pkt = tmp.max_pkt;
	ctx->timeout_ns = tmp.timeout_ns;
	ctx->step_timeout_ns = tmp.step_timeout_ns;
	ctx->chunk = tmp.chunk;
	ctx->job = tmp.job;
	r = ctx_setup(ctx, o, peers);
	if (r) {
		if (ctx->tp_state)
			ctx->tp->close(ctx->tp_state);
		gn_ctx_free(ctx);
		return r;
	}
	pthread_mutex_init(&ctx->lock, NULL);
	pthread_cond_init(&ctx->cond, NULL);
	r = pthread_create(&ctx->thread, NULL, gn_progress_main, ctx);
	if (r) {
		ctx->tp->close(ctx->tp_state);
		gn_ctx_free(ctx);
		return open_fail(-r, "cannot start the progress thread");
	}
	pthread_mutex_lock(&ctx->lock);
	while (!ctx->ready && !ctx->open_err)
		pthread_cond_wait(&ctx->cond, &ctx->lock);
	r = ctx->open_err;
	if (r)
		snprintf(open_errmsg, sizeof(open_errmsg), "%s", ctx->errmsg);
	pthread_mutex_unlock(&ctx->lock);
	if (r) {
		ctx_stop(ctx);
		gn_ctx_free(ctx);
		return r;
	}
	*out = ctx;
	return 0;
}

/* Data or control messages still owed to a live peer? */
static bool owes(struct gn_ctx *ctx)
{
	int i;

	if (ctx->tx)
		return true;
	for (i = 0; i < ctx->world; i++)
		if (ctx->peers[i].ctrl_q && !ctx->peers[i].dead)
			return true;
	return false;
}

void gn_ctx_close(struct gn_ctx *ctx)
{
	u64 until;

	if (!ctx)
		return;
	/* Let peers collect what this rank still owes them. */
	until = gn_now_ns() + (ctx->timeout_ns < 2000000000ull ?
				       ctx->timeout_ns : 2000000000ull);
	pthread_mutex_lock(&ctx->lock);
	while (owes(ctx) && gn_now_ns() < until) {
		struct timespec ts = { 0, 5000000 };

		pthread_mutex_unlock(&ctx->lock);
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&ctx->lock);
	}
	pthread_mutex_unlock(&ctx->lock);
	ctx_stop(ctx);
	gn_ctx_free(ctx);
}

/* ---- counters ------------------------------------------------------------ */

/* The stats layout is ABI: a field that moves breaks every older caller. */
_Static_assert(offsetof(struct gn_stats, allreduces) == 56, "gn_stats ABI");
_Static_assert(offsetof(struct gn_stats, drops) == 96, "gn_stats ABI");
_Static_assert(GN_DROP_COUNT <= GN_DROP_MAX, "gn_stats.drops is full");

static int stats_copy(struct gn_stats *dst, const struct gn_stats *src)
{
	size_t sz;

	if (!dst || dst->sz < offsetof(struct gn_stats, tx_packets))
		return -EINVAL;
	sz = dst->sz < sizeof(*src) ? dst->sz : sizeof(*src);
	memcpy((u8 *)dst + sizeof(size_t), (const u8 *)src + sizeof(size_t),
	       sz - sizeof(size_t));
	/* A newer caller's counters this library does not keep read 0. */
	if (dst->sz > sizeof(*src))
		memset((u8 *)dst + sizeof(*src), 0, dst->sz - sizeof(*src));
	return 0;
}

int gn_stats_ctx(struct gn_ctx *ctx, struct gn_stats *st)
{
	int r;

	if (!ctx)
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	r = stats_copy(st, &ctx->stats);
	pthread_mutex_unlock(&ctx->lock);
	return r;
}

int gn_stats_peer(struct gn_ctx *ctx, int peer, struct gn_stats *st)
{
	int r;

	if (!ctx || peer < 0 || peer >= ctx->world)
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	r = stats_copy(st, &ctx->peers[peer].stats);
	pthread_mutex_unlock(&ctx->lock);
	return r;
}

int gn_stats_tensor(struct gn_ctx *ctx, u32 id, struct gn_stats *st)
{
	struct gn_tensor *t;
	int r = -ENOENT;

	if (!ctx)
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	t = gn_tensor_find(ctx, id);
	if (t)
		r = stats_copy(st, &t->stats);
	pthread_mutex_unlock(&ctx->lock);
	return r;
}
