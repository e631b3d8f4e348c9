// SPDX-License-Identifier: MIT
/*
 * api.c - libgradnet's API around the protocol core: options and the
 * environment, keys and peer addresses, opening a context (the UDP
 * transport, the core, the progress thread), tensors and allreduce as the
 * caller's thread sees them, close, error messages and counters. The
 * public calls check their arguments and go to the context's backend:
 * the core in this process (here), or the kernel module's (kmod.c).
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

#include "api.h"
#include "gn_dpdk.h"
#include "gradnet_stat.h"

static __thread char open_errmsg[GN_ERRMSG_LEN];

enum gn_tp_kind { GN_TP_KIND_UDP, GN_TP_KIND_DPDK, GN_TP_KIND_KMOD };

/* What gn_ctx_open() learns before there is a context. */
struct open_args {
	struct gn_core_conf conf;
	u8 key[GN_MAC_KEY_LEN];
	bool insecure;
	struct gn_addr *addrs;
	char (*names)[GN_NAME_LEN];
	enum gn_tp_kind transport;
	u32 workers;			/* codec workers, 1.. */
	/* dpdk: from gn_ctx_opts, else NULL and -1 (the variables say) */
	const char *dpdk_eal;
	long dpdk_port, dpdk_queue;
};

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
	return ctx ? gn_core_api_errmsg(ctx) : "";
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

static int parse_peers(struct open_args *a, const char *list)
{
	const char *p = list;
	int n = 0;

	while (*p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char where[80];

		if (n >= a->conf.world)
			return open_fail(-EINVAL,
					 "GN_PEERS lists more than world size %d addresses",
					 a->conf.world);
		if (parse_addr(p, len, &a->addrs[n], where, sizeof(where)))
			return open_fail(-EINVAL,
					 "GN_PEERS entry %d \"%.*s\" is not a resolvable host:port",
					 n, (int)len, p);
		snprintf(a->names[n], GN_NAME_LEN, "rank %d (%.80s)", n, where);
		n++;
		p += len + (end != NULL);
	}
	if (n != a->conf.world)
		return open_fail(-EINVAL,
				 "GN_PEERS lists %d addresses, world size is %d",
				 n, a->conf.world);
	return 0;
}

static const char *const rank_vars[] = { "GN_RANK", "OMPI_COMM_WORLD_RANK",
	"PMI_RANK", "PMIX_RANK", "SLURM_PROCID", "RANK", NULL };
static const char *const world_vars[] = { "GN_WORLD_SIZE",
	"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", "WORLD_SIZE", NULL };

static int read_basics(struct gn_core_conf *c, const struct gn_ctx_opts *o,
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
	c->rank = (int)rank;
	c->world = (int)world;
	c->mtu = mtu ? (unsigned int)mtu : 1500;
	c->timeout_ns = (u64)(to ? to : 10000) * 1000000ull;
	c->step_timeout_ns = (u64)(step ? step : 600000) * 1000000ull;
	c->chunk = chunk ? (unsigned int)chunk : 65536;
	c->job = (u32)OPT(o, job_id);
	if (!c->job && (r = env_int(job_vars, 0, 0x7fffffffl, &job)) < 0)
		return r;
	if (!c->job)
		c->job = (u32)job;
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

static int read_codec(struct gn_core_conf *conf, const struct gn_ctx_opts *o)
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
	conf->codec = codec == GN_CODEC_NONE ? GN_WIRE_CODEC_NONE :
					       GN_WIRE_CODEC_3LC;
	if (codec && codec != GN_CODEC_NONE && codec != GN_CODEC_3LC)
		return open_fail(-EINVAL, "codec %d is unknown", codec);
	s = s == 0.0f ? 1.0f : s;
	if (!(s >= 1.0f && s < 2.0f))
		return open_fail(-EINVAL, "3LC s = %g is outside [1, 2)",
				 (double)s);
	memcpy(&conf->s_bits, &s, sizeof(conf->s_bits));
	return read_isa();
}

static int read_key(struct open_args *a, const struct gn_ctx_opts *o)
{
	const char *ins = getenv("GN_INSECURE"), *file = getenv("GN_KEY_FILE");
	const char *fd = getenv("GN_KEY_FD"), *enc = getenv("GN_ENCRYPT");
	char *hex = getenv("GN_KEY");
	u8 *key = a->key;
	const u8 *given;
	int r = 0;

	a->insecure = (OPT(o, flags) & GN_CTX_INSECURE) ||
			(ins && !strcmp(ins, "1"));
	if (enc && *enc && strcmp(enc, "0") && strcmp(enc, "1"))
		return open_fail(-EINVAL, "GN_ENCRYPT=%s: use 1 (encrypt packet bodies, the default) or 0 (authenticate only)",
				 enc);
	a->conf.clear = (OPT(o, flags) & GN_CTX_CLEAR) ||
			(enc && !strcmp(enc, "0"));
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
	} else if (a->insecure) {
		return 0;
	} else {
		return open_fail(-EINVAL,
				 "no job key: set GN_KEY (32 hex digits), GN_KEY_FILE, GN_KEY_FD or gn_ctx_opts.key; GN_INSECURE=1 (or GN_CTX_INSECURE) runs without authentication");
	}
	if (!r && a->insecure)
		r = open_fail(-EINVAL, "a key and GN_INSECURE are both set; pick one");
	if (r)
		explicit_bzero(a->key, sizeof(a->key));
	else
		a->conf.key = a->key;	/* the session key comes at the handshake */
	return r;
}

/* Set by the test library (tests/lib) in its processes only. */
const struct gn_test_hooks *gn_test_hooks;

static struct gn_env_libc *libc_of(struct gn_ctx *ctx)
{
	return &((struct gn_drv *)ctx->drv)->env;
}

static const struct gn_env *env_of(struct gn_ctx *ctx)
{
	return &libc_of(ctx)->env;
}

static void lock(struct gn_ctx *ctx)
{
	gn_env_lock(env_of(ctx));
}

static void unlock(struct gn_ctx *ctx)
{
	gn_env_unlock(env_of(ctx));
}

static void args_free(struct open_args *a)
{
	explicit_bzero(a->key, sizeof(a->key));
	free(a->addrs);
	free(a->names);
}

static int read_transport(struct open_args *a, const struct gn_ctx_opts *o)
{
	const char *t = OPT(o, transport) ? OPT(o, transport) :
					    getenv("GN_TRANSPORT");

	if (!t || !*t || !strcmp(t, "udp"))
		a->transport = GN_TP_KIND_UDP;
	else if (!strcmp(t, "dpdk"))
		a->transport = GN_TP_KIND_DPDK;
	else if (!strcmp(t, "kmod"))
		a->transport = GN_TP_KIND_KMOD;
	else
		return open_fail(-EINVAL, "transport \"%s\" (gn_ctx_opts.transport or GN_TRANSPORT): use udp or dpdk (or kmod, the gradnet kernel module)",
				 t);
	a->dpdk_eal = OPT(o, dpdk_eal);
	a->dpdk_port = OPT(o, flags) & GN_CTX_DPDK_PORT ?
		       (long)OPT(o, dpdk_port) : -1;
	a->dpdk_queue = OPT(o, flags) & GN_CTX_DPDK_QUEUE ?
			(long)OPT(o, dpdk_queue) : -1;
	if ((a->dpdk_eal || a->dpdk_port >= 0 || a->dpdk_queue >= 0) &&
	    a->transport != GN_TP_KIND_DPDK)
		return open_fail(-EINVAL, "gn_ctx_opts.dpdk_eal, GN_CTX_DPDK_PORT or GN_CTX_DPDK_QUEUE given for the %s transport: they are the dpdk transport's",
				 t && *t ? t : "udp");
	if (a->dpdk_port > 65535 || a->dpdk_queue > 65535)
		return open_fail(-EINVAL, "gn_ctx_opts.dpdk_port %ld or dpdk_queue %ld is not in 0..65535",
				 a->dpdk_port, a->dpdk_queue);
	return 0;
}

/* How many threads share the codec work: the option, GN_CODEC_WORKERS, 1. */
static int read_workers(struct open_args *a, const struct gn_ctx_opts *o)
{
	static const char *const vars[] = { "GN_CODEC_WORKERS", NULL };
	long n = 1;
	int r;

	a->workers = OPT(o, codec_workers);
	if (a->workers > GN_WORKERS_MAX)
		return open_fail(-EINVAL, "gn_ctx_opts.codec_workers %u is not in 1..%d",
				 a->workers, GN_WORKERS_MAX);
	if (a->workers)
		return 0;
	r = env_int(vars, 1, GN_WORKERS_MAX, &n);
	a->workers = (u32)n;
	return r < 0 ? r : 0;
}

static int read_args(struct open_args *a, const struct gn_ctx_opts *o)
{
	const char *peers;
	int r;

	r = read_basics(&a->conf, o, &peers);
	if (!r)
		r = read_transport(a, o);
	if (!r)
		r = read_workers(a, o);
	if (r)
		return r;
	a->addrs = calloc((size_t)a->conf.world, sizeof(*a->addrs));
	a->names = calloc((size_t)a->conf.world, sizeof(*a->names));
	if (!a->addrs || !a->names)
		return open_fail(-ENOMEM, "out of memory");
	r = parse_peers(a, peers);
	if (!r)
		r = read_codec(&a->conf, o);
	if (!r)
		r = read_key(a, o);
	return r;
}

/* "aa:bb:cc:dd:ee:ff" of @len characters into @mac. */
static int parse_mac(const char *s, size_t len, u8 mac[6])
{
	size_t i;

	if (len != 17)
		return -EINVAL;
	for (i = 0; i < 6; i++) {
		int hi = hexval(s[3 * i]), lo = hexval(s[3 * i + 1]);

		if (hi < 0 || lo < 0 || (i < 5 && s[3 * i + 2] != ':'))
			return -EINVAL;
		mac[i] = (u8)(hi << 4 | lo);
	}
	return 0;
}

/*
 * The static neighbour list: GN_DPDK_PEERS, one MAC per rank in rank
 * order, "-" (or nothing) for this rank, whose MAC is its port's, "arp"
 * for a rank to resolve. Without GN_DPDK_PEERS every peer is resolved by
 * ARP when the transport opens.
 */
static int dpdk_peers(const struct open_args *a, struct gn_dpdk_peer *dp)
{
	const char *p = getenv("GN_DPDK_PEERS");
	int n = 0, i;

	for (i = 0; i < a->conf.world; i++) {
		const struct sockaddr_in *in = (const void *)&a->addrs[i].sa;

		if (in->sin_family != AF_INET)
			return open_fail(-EAFNOSUPPORT,
					 "the DPDK transport speaks IPv4 only: GN_PEERS entry %d is %s",
					 i, a->names[i]);
		dp[i].ip = in->sin_addr.s_addr;
		dp[i].port = in->sin_port;
	}
	if (!p || !*p)
		return 0;
	while (*p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (n >= a->conf.world)
			return open_fail(-EINVAL, "GN_DPDK_PEERS lists more than world size %d MAC addresses",
					 a->conf.world);
		if (!(n == a->conf.rank && (!len || (len == 1 && *p == '-'))) &&
		    !(len == 3 && !strncmp(p, "arp", 3)) &&
		    parse_mac(p, len, dp[n].mac))
			return open_fail(-EINVAL, "GN_DPDK_PEERS entry %d \"%.*s\" is not a MAC address (aa:bb:cc:dd:ee:ff) nor \"arp\"",
					 n, (int)len, p);
		n++;
		p += len + (end != NULL);
	}
	if (n != a->conf.world)
		return open_fail(-EINVAL, "GN_DPDK_PEERS lists %d MAC addresses, world size is %d",
				 n, a->conf.world);
	return 0;
}

/* The DPDK transport's receive rounds, a part per queue, on the workers. */
static void dpdk_run(void *arg, void (*fn)(void *, u32), void *fn_arg,
		     u32 parts)
{
	gn_env_run(arg, fn, fn_arg, parts);
}

/* The EAL (once per process) and the DPDK transport on its port. */
static int dpdk_start(struct open_args *a, struct gn_drv *d, u32 max_pkt)
{
	static const char *const port_vars[] = { "GN_DPDK_PORT", NULL };
	static const char *const mbuf_vars[] = { "GN_DPDK_MBUFS", NULL };
	static const char *const poll_vars[] = { "GN_DPDK_POLL_US", NULL };
	static const char *const spin_vars[] = { "GN_DPDK_SPIN_US", NULL };
	static const char *const queue_vars[] = { "GN_DPDK_QUEUE", NULL };
	static const char *const lcore_vars[] = { "GN_DPDK_LCORE", NULL };
	static const char *const rtc_vars[] = { "GN_DPDK_RTC", NULL };
	static const char *const queues_vars[] = { "GN_DPDK_QUEUES", NULL };
	struct gn_dpdk_conf c = { .world = a->conf.world, .rank = a->conf.rank,
				  .mtu = a->conf.mtu, .max_pkt = max_pkt };
	long port = 0, mbufs = 0, poll_us = 1000, queue = -1, lcore = -1;
	long rtc = -1, queues = 0;
	long spin_us = GN_DPDK_SPIN_US_DEFAULT;
	char msg[GN_ERRMSG_LEN] = "";
	struct gn_dpdk_peer *dp;
	int r;

	if ((r = env_int(port_vars, 0, 65535, &port)) < 0 ||
	    (r = env_int(mbuf_vars, 1023, 1 << 24, &mbufs)) < 0 ||
	    (r = env_int(poll_vars, 0, 1000000, &poll_us)) < 0 ||
	    (r = env_int(spin_vars, 0, 1000000, &spin_us)) < 0 ||
	    (r = env_int(queue_vars, 0, 65535, &queue)) < 0 ||
	    (r = env_int(lcore_vars, 0, 65535, &lcore)) < 0 ||
	    (r = env_int(rtc_vars, 0, 1, &rtc)) < 0 ||
	    (r = env_int(queues_vars, 1, 1024, &queues)) < 0)
		return r;
	/* Run to completion, unless the poll loop has a core of its own. */
	d->rtc = rtc < 0 ? lcore < 0 : rtc;
	if (a->dpdk_port >= 0)
		port = a->dpdk_port;
	if (a->dpdk_queue >= 0)
		queue = a->dpdk_queue;
	dp = calloc((size_t)a->conf.world, sizeof(*dp));
	if (!dp)
		return open_fail(-ENOMEM, "out of memory");
	/* First, so a library without DPDK says so before anything else. */
	r = gn_dpdk_eal_init(a->dpdk_eal ? a->dpdk_eal : getenv("GN_DPDK_EAL"),
			     msg, sizeof(msg));
	if (r) {
		r = open_fail(r, "DPDK: %s", msg);
		goto out;
	}
	r = dpdk_peers(a, dp);
	if (r)
		goto out;
	c.port_id = (u16)port;
	c.peers = dp;
	c.mbufs = (u32)mbufs;
	c.poll_us = (u32)poll_us;
	c.spin_us = (u32)spin_us;
	c.arp_timeout_ms = (u32)(a->conf.timeout_ns / 1000000);
	c.stats_path = getenv("GN_DPDK_STATS");
	/* GN_DPDK_QUEUE: the application's port, this queue gradnet's. */
	c.queue = (int)queue;
	c.lcore = (int)lcore;
	/* On a port of its own: a queue pair per codec worker where RSS. */
	c.queues = (u32)queues;
	c.workers = a->workers;
	c.run = dpdk_run;
	c.run_arg = (void *)&d->env.env;
	r = gn_dpdk_open(&d->tp, &c, msg, sizeof(msg));
	if (r)
		r = open_fail(r, "DPDK: %s", msg);
	else
		d->dpdk = d->tp.state;
out:
	free(dp);
	return r;
}

/* The transport, the core and the progress thread. */
static int ctx_start(struct open_args *a, struct gn_drv *d, struct gn_ctx **out)
{
	struct gn_ctx *ctx;
	u32 max_pkt;
	int i, r;

	if (a->addrs[a->conf.rank].sa.ss_family == AF_INET6)
		a->conf.mtu -= GN_WIRE_IP6UDP - GN_WIRE_IPUDP;
	max_pkt = a->conf.mtu - GN_WIRE_IPUDP;

	if (a->transport == GN_TP_KIND_DPDK) {
		r = dpdk_start(a, d, max_pkt);
		if (r)
			return r;
	} else {
		r = gn_udp_open(&d->tp, a->addrs, a->conf.world, a->conf.rank,
				max_pkt);
		if (r)
			return open_fail(r, "cannot bind %s: %s",
					 a->names[a->conf.rank], strerror(-r));
	}
	/* Every packet event fires a USDT probe (lib/probes.c). */
	d->probe = (struct gn_probe_flow){ .job = a->conf.job,
					   .rank = (u64)a->conf.rank,
					   .transport = a->transport == GN_TP_KIND_DPDK ?
							GN_STAT_TRANSPORT_DPDK :
							GN_STAT_TRANSPORT_UDP };
	a->conf.account = gn_probe_account;
	a->conf.account_arg = &d->probe;
	if (gn_test_hooks && gn_test_hooks->open) {
		char msg[GN_ERRMSG_LEN] = "";

		a->conf.on_session = gn_test_hooks->session;
		r = gn_test_hooks->open(&a->conf, &d->tp, msg, sizeof(msg));
		if (r)
			return open_fail(r, "%s", msg);
	}
	r = gn_core_open(&a->conf, &d->env.env, &d->tp, &ctx);
	if (r)
		return open_fail(r, "cannot open the context: %s", strerror(-r));
	ctx->drv = d;
	*out = ctx;
	for (i = 0; i < a->conf.world; i++)
		gn_core_set_name(ctx, i, a->names[i]);
	r = gn_drv_start(ctx);
	if (r)
		return open_fail(r, "cannot start the progress thread");
	lock(ctx);
	while (!(r = gn_core_status(ctx)))
		gn_env_libc_wait(&d->env, 0);
	if (r < 0)
		open_fail(r, "%s", gn_core_errmsg(ctx));
	unlock(ctx);
	return r < 0 ? r : 0;
}

static void ctx_destroy(struct gn_ctx *ctx, struct gn_drv *d)
{
	if (ctx)
		gn_drv_stop(ctx);
	if (ctx && gn_test_hooks && gn_test_hooks->closed)
		gn_test_hooks->closed(ctx);
	gn_core_free(ctx);
	if (d->tp.ops)
		d->tp.ops->close(d->tp.state);
	gn_env_libc_destroy(&d->env);
	free(d);
}

int gn_ctx_open(const struct gn_ctx_opts *o, struct gn_ctx **out)
{
	struct gn_ctx_opts copy = { 0 };
	struct open_args a = { 0 };
	struct gn_ctx *ctx = NULL;
	struct gn_drv *d;
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
		if (o->flags & ~(GN_CTX_INSECURE | GN_CTX_RANK |
				 GN_CTX_DPDK_PORT | GN_CTX_DPDK_QUEUE |
				 GN_CTX_CLEAR))
			return open_fail(-EINVAL, "gn_ctx_opts.flags %#x has bits this library does not know",
					 o->flags);
	}
	r = read_args(&a, o);
	if (!r && a.transport == GN_TP_KIND_KMOD) {
		char msg[GN_ERRMSG_LEN] = "";

		r = gn_kmod_open(&a.conf, a.addrs, msg, sizeof(msg), out);
		args_free(&a);
		return r ? open_fail(r, "%s", msg) : 0;
	}
	d = r ? NULL : calloc(1, sizeof(*d));
	if (!r && !d)
		r = open_fail(-ENOMEM, "out of memory");
	if (r) {
		args_free(&a);
		return r;
	}
	gn_env_libc_init(&d->env);
	r = gn_env_libc_workers(&d->env, a.workers);
	if (r)
		r = open_fail(r, "cannot start %u codec workers: %s", a.workers,
			      strerror(-r));
	else
		r = ctx_start(&a, d, &ctx);
	args_free(&a);
	if (r) {
		ctx_destroy(ctx, d);
		return r;
	}
	*out = ctx;
	return 0;
}

static const struct gn_backend_ops core_backend;

/* The backend of @ctx: the core in this process unless drv says otherwise. */
static const struct gn_backend_ops *backend(struct gn_ctx *ctx)
{
	const struct gn_drv *d = ctx->drv;

	return d && d->backend ? d->backend : &core_backend;
}

void gn_ctx_close(struct gn_ctx *ctx)
{
	if (ctx)
		backend(ctx)->close(ctx);
}

static void core_close(struct gn_ctx *ctx)
{
	u64 until;

	/* Let peers collect what this rank still owes them. */
	until = gn_env_libc_now() + (ctx->dl.timeout_ns < 2000000000ull ?
				     ctx->dl.timeout_ns : 2000000000ull);
	lock(ctx);
	while (gn_core_owes(ctx) && gn_env_libc_now() < until) {
		struct timespec ts = { 0, 5000000 };

		unlock(ctx);
		nanosleep(&ts, NULL);
		lock(ctx);
	}
	gn_core_ack_now(ctx);
	unlock(ctx);
	ctx_destroy(ctx, ctx->drv);
}

/* ---- tensors and allreduce -------------------------------------------------- */

static int api_err(struct gn_ctx *ctx, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int api_err(struct gn_ctx *ctx, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ctx->api_errmsg, sizeof(ctx->api_errmsg), fmt, ap);
	va_end(ap);
	return err;
}

int gn_tensor_register(struct gn_ctx *ctx, const struct gn_tensor_opts *opts)
{
	struct gn_tensor_opts copy = { 0 }, *o = &copy;
	int r;

	if (!ctx)
		return -EINVAL;
	r = opts ? gn_opts_check(opts, opts->sz, sizeof(*opts)) : -EINVAL;
	if (r == -E2BIG)
		return api_err(ctx, r,
			       "tensor %u: gn_tensor_opts sz %zu is larger than this library's %zu and the extra bytes are not zero",
			       opts->id, opts->sz, sizeof(*opts));
	if (!r) {
		/* Fields past the caller's sz are zero, the defaults. */
		memcpy(&copy, opts, opts->sz < sizeof(copy) ? opts->sz : sizeof(copy));
		if (opts->sz < offsetof(struct gn_tensor_opts, elems) + sizeof(opts->elems))
			r = -EINVAL;
	}
	if (r || !o->elems || o->elems > (1ull << 40) ||
	    (o->codec != GN_CODEC_DEFAULT && o->codec != GN_CODEC_NONE &&
	     o->codec != GN_CODEC_3LC) ||
	    (o->s != 0.0f && !(o->s >= 1.0f && o->s < 2.0f)) ||
	    (o->flags & ~GN_TENSOR_AVERAGE))
		return api_err(ctx, -EINVAL,
			       "tensor %u: bad options (sz, elems 1..2^40, codec, s in [1, 2), flags)",
			       o->id);
	return backend(ctx)->tensor_register(ctx, o);
}

static int core_tensor_register(struct gn_ctx *ctx,
				const struct gn_tensor_opts *o)
{
	int r;

	lock(ctx);
	r = gn_core_tensor_register(ctx, o);
	unlock(ctx);
	return r;
}

int gn_allreduce_start(struct gn_ctx *ctx, u32 id, float *data)
{
	if (!ctx || !data)
		return -EINVAL;
	return backend(ctx)->allreduce_start(ctx, id, data);
}

int gn_allreduce_wait(struct gn_ctx *ctx, u32 id)
{
	if (!ctx)
		return -EINVAL;
	return backend(ctx)->allreduce_wait(ctx, id);
}

static int core_allreduce_wait(struct gn_ctx *ctx, u32 id)
{
	bool mine = false;
	int r, err = 0;

	lock(ctx);
	while (!(r = gn_core_allreduce_done(ctx, id, &err)))
		mine = gn_drv_wait(ctx, mine);
	gn_drv_done(ctx, mine);
	unlock(ctx);
	return r < 0 ? r : err;
}

int gn_allreduce(struct gn_ctx *ctx, u32 id, float *data)
{
	int r = gn_allreduce_start(ctx, id, data);

	return r ? r : gn_allreduce_wait(ctx, id);
}

int gn_tensor_unregister(struct gn_ctx *ctx, u32 id)
{
	if (!ctx)
		return -EINVAL;
	return backend(ctx)->tensor_unregister(ctx, id);
}

static int core_tensor_unregister(struct gn_ctx *ctx, u32 id)
{
	u64 until;
	int r;

	lock(ctx);
	r = gn_core_tensor_retire(ctx, id);
	if (r) {
		unlock(ctx);
		return r;
	}
	/* A dead peer's messages are dropped after the timeout: this ends. */
	until = gn_env_libc_now() + 2 * ctx->dl.timeout_ns + 1000000000ull;
	while (gn_core_tensor_owes(ctx, id) && gn_env_libc_now() < until)
		gn_env_libc_wait(libc_of(ctx), gn_env_libc_now() + 1000000);
	r = gn_core_tensor_remove(ctx, id, gn_core_tensor_owes(ctx, id));
	unlock(ctx);
	return r;
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

static int core_stats(struct gn_ctx *ctx, enum gn_stats_scope scope, u32 key,
		      struct gn_stats *st)
{
	const struct gn_stats *src;
	int r = -ENOENT;

	lock(ctx);
	src = scope == GN_SCOPE_TENSOR ? gn_core_tensor_stats(ctx, key) :
	      gn_core_stats(ctx, scope == GN_SCOPE_CTX ? -1 : (int)key);
	if (src)
		r = stats_copy(st, src);
	unlock(ctx);
	return r;
}

static bool stats_ok(const struct gn_stats *st)
{
	return st && st->sz >= offsetof(struct gn_stats, tx_packets);
}

int gn_stats_ctx(struct gn_ctx *ctx, struct gn_stats *st)
{
	if (!ctx || !stats_ok(st))
		return -EINVAL;
	return backend(ctx)->stats(ctx, GN_SCOPE_CTX, 0, st);
}

int gn_stats_peer(struct gn_ctx *ctx, int peer, struct gn_stats *st)
{
	if (!ctx || peer < 0 || peer >= ctx->world || !stats_ok(st))
		return -EINVAL;
	return backend(ctx)->stats(ctx, GN_SCOPE_PEER, (u32)peer, st);
}

int gn_stats_tensor(struct gn_ctx *ctx, u32 id, struct gn_stats *st)
{
	if (!ctx || !stats_ok(st))
		return -EINVAL;
	return backend(ctx)->stats(ctx, GN_SCOPE_TENSOR, id, st);
}

/* The core in this process, driven by the progress thread (driver.c). */
static const struct gn_backend_ops core_backend = {
	.close = core_close,
	.tensor_register = core_tensor_register,
	.tensor_unregister = core_tensor_unregister,
	.allreduce_start = gn_core_allreduce_start,
	.allreduce_wait = core_allreduce_wait,
	.stats = core_stats,
};
