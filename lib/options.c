// SPDX-License-Identifier: MIT
/*
 * options.c - what gn_ctx_open() reads before there is a context: the
 * options struct and the environment (rank and world from the launcher's
 * variables, the peers' addresses, timeouts, codec, transport, workers).
 * The key is keys.c's.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gradnet/codec.h>

#include "backend.h"
#include "open.h"

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

int gn_open_env_int(const char *const *names, long lo, long hi, long *out)
{
	const char *v = env_any(names);
	char *end;
	long x;

	if (!v)
		return 0;
	errno = 0;
	x = strtol(v, &end, 0);
	if (errno || *end || x < lo || x > hi)
		return gn_open_fail(-EINVAL, "%s=%s is not a number in %ld..%ld",
				    names[0], v, lo, hi);
	*out = x;
	return 1;
}

int gn_open_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
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

/*
 * @list, "host:port,..." in rank order, into @a->addrs and @a->names;
 * @what names the list in messages.
 */
int gn_open_parse_peers(struct open_args *a, const char *list,
			const char *what)
{
	const char *p = list;
	int n = 0;

	while (*p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char where[80];

		if (n >= a->conf.world)
			return gn_open_fail(-EINVAL,
					    "%s lists more than world size %d addresses",
					    what, a->conf.world);
		if (parse_addr(p, len, &a->addrs[n], where, sizeof(where)))
			return gn_open_fail(-EINVAL,
					    "%s entry %d \"%.*s\" is not a resolvable host:port",
					    what, n, (int)len, p);
		snprintf(a->names[n], GN_NAME_LEN, "rank %d (%.80s)", n, where);
		n++;
		p += len + (end != NULL);
	}
	if (n != a->conf.world)
		return gn_open_fail(-EINVAL,
				    "%s lists %d addresses, world size is %d",
				    what, n, a->conf.world);
	return 0;
}

static const char *const rank_vars[] = { "GN_RANK", "OMPI_COMM_WORLD_RANK",
	"PMI_RANK", "PMIX_RANK", "SLURM_PROCID", "RANK", NULL };
static const char *const world_vars[] = { "GN_WORLD_SIZE",
	"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", "WORLD_SIZE", NULL };

static int read_basics(struct gn_core_conf *c, const struct gn_ctx_opts *o)
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

	if (!world && (r = gn_open_env_int(world_vars, 1, 65534, &world)) < 0)
		return r;
	/* Rank 0 is also what a zeroed struct holds: it counts only with
	 * GN_CTX_RANK, else the launcher's variables say. */
	if (rank < 0 || (!rank && !(OPT(o, flags) & GN_CTX_RANK))) {
		rank = -1;
		if ((r = gn_open_env_int(rank_vars, 0, 65534, &rank)) < 0)
			return r;
		if (!r && world == 1)
			rank = 0;
	}
	if (rank < 0 || world < 1 || rank >= world)
		return gn_open_fail(-EINVAL,
				    "rank %ld and world size %ld: set gn_ctx_opts (.rank, with GN_CTX_RANK for rank 0) or GN_RANK and GN_WORLD_SIZE (0 <= rank < world)",
				    rank, world);
	if (!mtu && (r = gn_open_env_int(mtu_vars, 576, 9000, &mtu)) < 0)
		return r;
	if (!to && (r = gn_open_env_int(to_vars, 1, 86400000, &to)) < 0)
		return r;
	if (!step && (r = gn_open_env_int(step_vars, 1, 86400000, &step)) < 0)
		return r;
	if (!chunk && (r = gn_open_env_int(chunk_vars, 1, 1 << 24, &chunk)) < 0)
		return r;
	if (mtu && (mtu < 576 || mtu > 9000))
		return gn_open_fail(-EINVAL, "mtu %ld is outside 576..9000", mtu);
	c->rank = (int)rank;
	c->world = (int)world;
	c->mtu = mtu ? (unsigned int)mtu : 1500;
	c->timeout_ns = (u64)(to ? to : 10000) * 1000000ull;
	c->step_timeout_ns = (u64)(step ? step : 600000) * 1000000ull;
	c->chunk = chunk ? (unsigned int)chunk : 65536;
	c->job = (u32)OPT(o, job_id);
	if (!c->job && (r = gn_open_env_int(job_vars, 0, 0x7fffffffl, &job)) < 0)
		return r;
	if (!c->job)
		c->job = (u32)job;
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
		return gn_open_fail(r, "GN_CODEC_ISA=%s: use scalar, avx2, avx512 or best", v);
	if (r)
		return gn_open_fail(r, "GN_CODEC_ISA=%s: this CPU lacks %s (it runs %s at best)",
				    v, v, gn_codec_isa_name(gn_codec_isa_best()));
	return 0;
}

/*
 * The job's default codec: gn_ctx_opts.codec, s and codec_params, else
 * GN_CODEC ("name[:key=value,...]") and GN_S (3LC's s), else 3LC with its
 * defaults. Values are checked against the job's chunk and MTU here, so a
 * bad default fails the open, not the first registration.
 */
static int read_codec(struct gn_core_conf *conf, const struct gn_ctx_opts *o)
{
	const char *c = getenv("GN_CODEC"), *sv = getenv("GN_S");
	const char *params = OPT(o, codec_params);
	struct gn_codec_spec job = { .codec = GN_CODEC_3LC }, spec, full;
	char msg[GN_ERRMSG_LEN - 32];
	int codec = OPT(o, codec);
	float s = OPT(o, s);
	int r;

	if (!codec && c && *c) {
		r = gn_spec_parse(c, &job, msg, sizeof(msg));
		if (r)
			return gn_open_fail(r, "GN_CODEC=%s: %s", c, msg);
		codec = (int)job.codec;
	}
	if (s == 0.0f && sv && *sv) {
		char *end;

		s = strtof(sv, &end);
		if (*end || end == sv)
			return gn_open_fail(-EINVAL, "GN_S=%s is not a number", sv);
	}
	r = gn_spec_for(job.codec, codec, s, params, &spec, msg, sizeof(msg));
	if (r)
		return gn_open_fail(r, "the job's codec: %s", msg);
	/* GN_CODEC's parameters, where the options set none of their own. */
	if (spec.codec == job.codec)
		for (r = 0; r < GN_PARAM_WORDS_ALL; r++)
			if (!(spec.given & 1u << r) && job.given & 1u << r) {
				*gn_param_word(&spec.p, (u32)r) =
					gn_param_get(&job.p, (u32)r);
				spec.given |= 1u << r;
			}
	r = gn_codec_resolve(&spec, &spec, &full, msg, sizeof(msg));
	if (!r)
		r = gn_codec_params_check(gn_codec_find(full.codec), &full.p,
					  conf->chunk,
					  conf->mtu - GN_WIRE_IPUDP -
						  GN_WIRE_DATA_OVERHEAD,
					  msg, sizeof(msg));
	if (r)
		return gn_open_fail(r, "the job's codec: %s", msg);
	conf->codec = spec;
	return read_isa();
}

void gn_open_args_free(struct open_args *a)
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
		return gn_open_fail(-EINVAL, "transport \"%s\" (gn_ctx_opts.transport or GN_TRANSPORT): use udp or dpdk (or kmod, the gradnet kernel module)",
				    t);
	a->dpdk_eal = OPT(o, dpdk_eal);
	a->dpdk_port = OPT(o, flags) & GN_CTX_DPDK_PORT ?
		       (long)OPT(o, dpdk_port) : -1;
	a->dpdk_queue = OPT(o, flags) & GN_CTX_DPDK_QUEUE ?
			(long)OPT(o, dpdk_queue) : -1;
	if ((a->dpdk_eal || a->dpdk_port >= 0 || a->dpdk_queue >= 0) &&
	    a->transport != GN_TP_KIND_DPDK)
		return gn_open_fail(-EINVAL, "gn_ctx_opts.dpdk_eal, GN_CTX_DPDK_PORT or GN_CTX_DPDK_QUEUE given for the %s transport: they are the dpdk transport's",
				    t && *t ? t : "udp");
	if (a->dpdk_port > 65535 || a->dpdk_queue > 65535)
		return gn_open_fail(-EINVAL, "gn_ctx_opts.dpdk_port %ld or dpdk_queue %ld is not in 0..65535",
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
		return gn_open_fail(-EINVAL, "gn_ctx_opts.codec_workers %u is not in 1..%d",
				    a->workers, GN_WORKERS_MAX);
	if (a->workers)
		return 0;
	r = gn_open_env_int(vars, 1, GN_WORKERS_MAX, &n);
	a->workers = (u32)n;
	return r < 0 ? r : 0;
}

/*
 * Everything gn_ctx_open() and gn_ctx_bind() read before there is a
 * context. The peer list, if any, is left in @a->peers for
 * gn_open_parse_peers(); @a->addrs and @a->names have room for it.
 */
int gn_open_read_args(struct open_args *a, const struct gn_ctx_opts *o)
{
	int r;

	r = read_basics(&a->conf, o);
	if (!r)
		r = read_transport(a, o);
	if (!r)
		r = read_workers(a, o);
	if (r)
		return r;
	a->peers = OPT(o, peers) ? OPT(o, peers) : getenv("GN_PEERS");
	if (a->peers && !*a->peers)
		a->peers = NULL;
	a->bind_addr = OPT(o, bind_addr) ? OPT(o, bind_addr) : getenv("GN_HOST");
	a->addrs = calloc((size_t)a->conf.world, sizeof(*a->addrs));
	a->names = calloc((size_t)a->conf.world, sizeof(*a->names));
	if (!a->addrs || !a->names)
		return gn_open_fail(-ENOMEM, "out of memory");
	r = read_codec(&a->conf, o);
	if (!r)
		r = gn_open_read_key(a, o);
	return r;
}

/* Launchers' count of ranks on this host, and of hosts in the job. */
static const char *const local_size_vars[] = { "OMPI_COMM_WORLD_LOCAL_SIZE",
	"MPI_LOCALNRANKS", "LOCAL_WORLD_SIZE", NULL };
static const char *const nodes_vars[] = { "SLURM_JOB_NUM_NODES",
	"SLURM_NNODES", NULL };

/* Does the launcher say every rank runs on this host? */
static bool one_host(int world)
{
	long local = 0, nodes = 0;

	if (gn_open_env_int(local_size_vars, 1, 65535, &local) > 0 &&
	    local == world)
		return true;
	return gn_open_env_int(nodes_vars, 1, 65535, &nodes) > 0 && nodes == 1;
}

/*
 * The source address of this host's route to other networks: connect()
 * of a UDP socket only looks the route up, and sends nothing. The
 * destinations are documentation prefixes (RFC 5737, RFC 3849), which
 * no host answers, routed like any address beyond the local networks.
 */
static int route_source(struct gn_addr *out)
{
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(9),
				  .sin_addr.s_addr = htonl(0xc0000201) };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6,
				    .sin6_port = htons(9),
				    .sin6_addr.s6_addr = { 0x20, 0x01, 0x0d, 0xb8,
							   [15] = 1 } };
	const struct sockaddr *to[] = { (const void *)&in, (const void *)&in6 };
	const socklen_t len[] = { sizeof(in), sizeof(in6) };
	int i;

	for (i = 0; i < 2; i++) {
		int fd = socket(to[i]->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		bool ok;

		if (fd < 0)
			continue;
		out->len = sizeof(out->sa);
		ok = !connect(fd, to[i], len[i]) &&
		     !getsockname(fd, (struct sockaddr *)&out->sa, &out->len);
		close(fd);
		if (ok) {
			/* Any free port, as for a "host" without one. */
			if (out->sa.ss_family == AF_INET)
				((struct sockaddr_in *)&out->sa)->sin_port = 0;
			else
				((struct sockaddr_in6 *)&out->sa)->sin6_port = 0;
			return 0;
		}
	}
	return -EADDRNOTAVAIL;
}

/*
 * Where gn_ctx_bind() binds: @a->bind_addr ("host", "host:port",
 * "[v6 host]:port" or a bare IPv6 address), else 127.0.0.1 for a job on
 * this host only, else the route's source address. Into @a->self.
 */
int gn_open_read_bind(struct open_args *a)
{
	const char *b = a->bind_addr;
	char spec[300], where[80];
	size_t len;

	if (!b || !*b) {
		if (one_host(a->conf.world))
			b = "127.0.0.1";
		else if (route_source(&a->self))
			return gn_open_fail(-EADDRNOTAVAIL,
					    "no address to bind: this host has no route to other networks; set GN_HOST (or gn_ctx_opts.bind_addr) to its address on the job's network");
		else
			return 0;
	}
	len = strlen(b);
	/* A port-less host gets port 0; a bare IPv6 address has colons. */
	if (b[0] == '[' ? b[len - 1] == ']' :
	    (!strchr(b, ':') || strchr(b, ':') != strrchr(b, ':')))
		snprintf(spec, sizeof(spec), "%s%s%s:0", b[0] == '[' ? "" : "[",
			 b, b[0] == '[' ? "" : "]");
	else
		snprintf(spec, sizeof(spec), "%s", b);
	if (strlen(spec) >= sizeof(spec) - 1 ||
	    parse_addr(spec, strlen(spec), &a->self, where, sizeof(where)))
		return gn_open_fail(-EINVAL,
				    "bind address \"%s\" (gn_ctx_opts.bind_addr or GN_HOST) is not a resolvable host or host:port",
				    b);
	return 0;
}
