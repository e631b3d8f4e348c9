// SPDX-License-Identifier: MIT
/*
 * api_test.c - the public API's contract on its own: argument checks,
 * options and stats structs of other sizes, the version, the key sources.
 * Contexts here are single-rank jobs on loopback.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gradnet/gradnet.h>
#include <gradnet/wire.h>

#include "kselftest_harness.h"

/* A one-rank insecure job on @port: needs no peer to answer. */
static int open_one(struct gn_ctx **ctx, int port)
{
	char peers[32];
	GN_OPTS(gn_ctx_opts, o, .world_size = 1, .peers = peers,
		.flags = GN_CTX_INSECURE);

	snprintf(peers, sizeof(peers), "127.0.0.1:%d", port);
	return gn_ctx_open(&o, ctx);
}

/* Every entry point refuses a NULL pointer with -EINVAL instead of crashing. */
TEST(null_pointers)
{
	GN_OPTS(gn_tensor_opts, t, .id = 1, .elems = 8);
	GN_OPTS(gn_stats, st);
	GN_OPTS(gn_ctx_opts, o, .world_size = 1, .peers = "127.0.0.1:29911",
		.flags = GN_CTX_INSECURE);
	struct gn_ctx *ctx;
	float x[8] = { 0 };

	ASSERT_EQ(-EINVAL, gn_ctx_open(&o, NULL));
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "NULL"));
	ASSERT_EQ(-EINVAL, gn_ctx_rank(NULL));
	ASSERT_EQ(-EINVAL, gn_ctx_world_size(NULL));
	ASSERT_EQ(-EINVAL, gn_tensor_register(NULL, &t));
	ASSERT_EQ(-EINVAL, gn_allreduce(NULL, 1, x));
	ASSERT_EQ(-EINVAL, gn_allreduce_start(NULL, 1, x));
	ASSERT_EQ(-EINVAL, gn_allreduce_wait(NULL, 1));
	ASSERT_EQ(-EINVAL, gn_stats_ctx(NULL, &st));
	ASSERT_EQ(-EINVAL, gn_stats_peer(NULL, 0, &st));
	ASSERT_EQ(-EINVAL, gn_stats_tensor(NULL, 1, &st));
	ASSERT_STREQ("", gn_ctx_errmsg(NULL));
	gn_ctx_close(NULL);

	ASSERT_EQ(0, open_one(&ctx, 29912)) TH_LOG("%s", gn_last_errmsg());
	ASSERT_EQ(-EINVAL, gn_tensor_register(ctx, NULL));
	ASSERT_NE(NULL, strstr(gn_ctx_errmsg(ctx), "bad options"));
	ASSERT_EQ(0, gn_tensor_register(ctx, &t));
	ASSERT_EQ(-EINVAL, gn_allreduce(ctx, 1, NULL));
	ASSERT_EQ(-EINVAL, gn_allreduce_start(ctx, 1, NULL));
	ASSERT_EQ(-EINVAL, gn_stats_ctx(ctx, NULL));
	ASSERT_EQ(-EINVAL, gn_stats_peer(ctx, 0, NULL));
	ASSERT_EQ(-EINVAL, gn_stats_tensor(ctx, 1, NULL));
	ASSERT_EQ(0, gn_stats_tensor(ctx, 1, &st));
	gn_ctx_close(ctx);
}

/*
 * A zeroed options struct means "the launcher's environment": rank 0 in it
 * is not an explicit rank 0, so every process does not become rank 0.
 */
TEST(zeroed_opts_take_rank_from_env)
{
	GN_OPTS(gn_ctx_opts, o, .world_size = 2,
		.peers = "127.0.0.1:29921,127.0.0.1:29922",
		.flags = GN_CTX_INSECURE, .timeout_ms = 300);
	struct gn_ctx *ctx;

	/* No rank anywhere: refused, naming the variable. */
	unsetenv("GN_RANK");
	unsetenv("OMPI_COMM_WORLD_RANK");
	unsetenv("PMI_RANK");
	unsetenv("PMIX_RANK");
	unsetenv("SLURM_PROCID");
	unsetenv("RANK");
	ASSERT_EQ(-EINVAL, gn_ctx_open(&o, &ctx));
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "GN_RANK")) TH_LOG("%s", gn_last_errmsg());

	/* GN_RANK=1 binds rank 1's address; rank 0 never answers. */
	setenv("GN_RANK", "1", 1);
	ASSERT_EQ(-ETIMEDOUT, gn_ctx_open(&o, &ctx)) TH_LOG("%s", gn_last_errmsg());
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "rank 0")) TH_LOG("%s", gn_last_errmsg());

	/* An explicit rank 0 wins over the environment. */
	o.flags |= GN_CTX_RANK;
	ASSERT_EQ(-ETIMEDOUT, gn_ctx_open(&o, &ctx)) TH_LOG("%s", gn_last_errmsg());
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "rank 1")) TH_LOG("%s", gn_last_errmsg());
	unsetenv("GN_RANK");

	/* A job of one rank needs no rank at all. */
	o.flags = GN_CTX_INSECURE;
	o.world_size = 1;
	o.peers = "127.0.0.1:29923";
	ASSERT_EQ(0, gn_ctx_open(&o, &ctx)) TH_LOG("%s", gn_last_errmsg());
	ASSERT_EQ(0, gn_ctx_rank(ctx));
	ASSERT_EQ(1, gn_ctx_world_size(ctx));
	gn_ctx_close(ctx);
}

/*
 * An older caller's short struct: only the fields its sz covers are read,
 * the rest are defaults, whatever lies in memory after it.
 */
TEST(opts_fields_past_sz_are_defaults)
{
	struct gn_ctx_opts o;
	struct gn_tensor_opts t;
	struct gn_ctx *ctx;

	/* Garbage past sz: a bad codec, s and flags if they were read. */
	memset(&o, 0xff, sizeof(o));
	o.sz = offsetof(struct gn_ctx_opts, rank) + sizeof(o.rank);
	o.rank = 0;
	setenv("GN_WORLD_SIZE", "1", 1);
	setenv("GN_PEERS", "127.0.0.1:29931", 1);
	setenv("GN_INSECURE", "1", 1);
	ASSERT_EQ(0, gn_ctx_open(&o, &ctx)) TH_LOG("%s", gn_last_errmsg());
	unsetenv("GN_WORLD_SIZE");
	unsetenv("GN_PEERS");
	unsetenv("GN_INSECURE");

	memset(&t, 0xff, sizeof(t));
	t.sz = offsetof(struct gn_tensor_opts, elems) + sizeof(t.elems);
	t.id = 7;
	t.elems = 100;
	ASSERT_EQ(0, gn_tensor_register(ctx, &t)) TH_LOG("%s", gn_ctx_errmsg(ctx));
	/* Too short to hold elems. */
	t.id = 8;
	t.sz = offsetof(struct gn_tensor_opts, elems);
	ASSERT_EQ(-EINVAL, gn_tensor_register(ctx, &t));
	ASSERT_NE(NULL, strstr(gn_ctx_errmsg(ctx), "tensor 8"));
	gn_ctx_close(ctx);

	/* Too short to hold sz. */
	o.sz = 4;
	ASSERT_EQ(-EINVAL, gn_ctx_open(&o, &ctx));
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "too small"));
}

/* A newer caller's longer struct: zero tail accepted, nonzero is -E2BIG. */
TEST(opts_unknown_tail_is_e2big)
{
	struct {
		struct gn_ctx_opts o;
		uint64_t future;
	} big = { .o = { .sz = sizeof(big), .world_size = 1,
			 .peers = "127.0.0.1:29941", .flags = GN_CTX_INSECURE } };
	struct {
		struct gn_tensor_opts t;
		uint64_t future;
	} tbig = { .t = { .sz = sizeof(tbig), .id = 3, .elems = 10 } };
	struct gn_ctx *ctx;

	big.future = 1;
	ASSERT_EQ(-E2BIG, gn_ctx_open(&big.o, &ctx));
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "not zero"));
	big.future = 0;
	/* Unknown flags too. */
	big.o.flags |= 1u << 20;
	ASSERT_EQ(-EINVAL, gn_ctx_open(&big.o, &ctx));
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "flags 0x100001")) TH_LOG("%s", gn_last_errmsg());
	big.o.flags = GN_CTX_INSECURE;
	ASSERT_EQ(0, gn_ctx_open(&big.o, &ctx)) TH_LOG("%s", gn_last_errmsg());
	tbig.future = 1;
	ASSERT_EQ(-E2BIG, gn_tensor_register(ctx, &tbig.t));
	ASSERT_NE(NULL, strstr(gn_ctx_errmsg(ctx), "tensor 3"));
	tbig.future = 0;
	ASSERT_EQ(0, gn_tensor_register(ctx, &tbig.t));
	gn_ctx_close(ctx);
}

/*
 * gn_model_opts keeps GN_OPTS()'s promises: fields past sz are defaults, a
 * nonzero unknown tail is -E2BIG, sz short of elems and NULLs are -EINVAL;
 * a one-rank model step is plain SGD, x - lr g, and leaves both buffers
 * alone when it is refused.
 */
TEST(model_opts_and_step)
{
	struct {
		struct gn_model_opts m;
		uint64_t future;
	} big = { .m = { .sz = sizeof(big), .id = 5, .elems = 4,
			 .codec = GN_CODEC_NONE } };
	struct gn_model_opts m;
	float g[4] = { 1, 2, 3, 4 }, x[4] = { 1, 1, 1, 1 };
	struct gn_ctx *ctx;

	ASSERT_EQ(-EINVAL, gn_model_register(NULL, &big.m));
	ASSERT_EQ(-EINVAL, gn_model_step(NULL, 5, g, x, 0.5f));
	ASSERT_EQ(-EINVAL, gn_model_step_wait(NULL, 5));
	ASSERT_EQ(0, open_one(&ctx, 29951)) TH_LOG("%s", gn_last_errmsg());
	ASSERT_EQ(-EINVAL, gn_model_register(ctx, NULL));
	big.future = 1;
	ASSERT_EQ(-E2BIG, gn_model_register(ctx, &big.m));
	ASSERT_NE(NULL, strstr(gn_ctx_errmsg(ctx), "model tensor 5"));
	big.future = 0;
	ASSERT_EQ(0, gn_model_register(ctx, &big.m)) TH_LOG("%s", gn_ctx_errmsg(ctx));
	/* Garbage past sz: bad codecs, flags and floats if they were read. */
	memset(&m, 0xff, sizeof(m));
	m.sz = offsetof(struct gn_model_opts, elems) + sizeof(m.elems);
	m.id = 6;
	m.elems = 4;
	ASSERT_EQ(0, gn_model_register(ctx, &m)) TH_LOG("%s", gn_ctx_errmsg(ctx));
	m.id = 7;
	m.sz = offsetof(struct gn_model_opts, elems);
	ASSERT_EQ(-EINVAL, gn_model_register(ctx, &m));
	ASSERT_EQ(-EEXIST, gn_model_register(ctx, &big.m));
	/* CLT-k's index round has no place in a model step, either way. */
	memset(&m, 0, sizeof(m));
	m.sz = sizeof(m);
	m.id = 8;
	m.elems = 4;
	m.codec = GN_CODEC_CLTK;
	ASSERT_EQ(-EINVAL, gn_model_register(ctx, &m));
	ASSERT_NE(NULL, strstr(gn_ctx_errmsg(ctx), "cltk has an index round"));
	m.codec = GN_CODEC_NONE;
	m.down_codec = GN_CODEC_CLTK;
	ASSERT_EQ(-EINVAL, gn_model_register(ctx, &m));
	ASSERT_NE(NULL, strstr(gn_ctx_errmsg(ctx), "cltk has an index round"));
	ASSERT_EQ(-EINVAL, gn_model_step(ctx, 5, NULL, x, 0.5f));
	ASSERT_EQ(-EINVAL, gn_model_step(ctx, 5, g, NULL, 0.5f));
	ASSERT_EQ(-EINVAL, gn_model_step(ctx, 5, x, x, 0.5f));
	ASSERT_EQ(-EINVAL, gn_model_step(ctx, 5, g, x, -1.0f));
	ASSERT_EQ(-ENOENT, gn_model_step(ctx, 9, g, x, 0.5f));
	ASSERT_EQ(1.0f, x[0]);
	ASSERT_EQ(2.0f, g[1]);
	ASSERT_EQ(0, gn_model_step(ctx, 5, g, x, 0.5f)) TH_LOG("%s", gn_ctx_errmsg(ctx));
	ASSERT_EQ(0.5f, x[0]);
	ASSERT_EQ(0.0f, x[1]);
	ASSERT_EQ(-1.0f, x[3]);
	gn_ctx_close(ctx);
}

/*
 * struct gn_stats is ABI: its counters stay where they are when a drop
 * reason is added, and the struct is filled only as far as sz says.
 */
TEST(stats_layout_and_sz)
{
	struct {
		struct gn_stats st;
		uint64_t future[2];
	} big;
	struct gn_stats st;
	struct gn_ctx *ctx;
	float x[16] = { 1 };
	GN_OPTS(gn_tensor_opts, t, .id = 1, .elems = 16);

	ASSERT_EQ(8, offsetof(struct gn_stats, tx_packets));
	ASSERT_EQ(48, offsetof(struct gn_stats, retransmits));
	ASSERT_EQ(56, offsetof(struct gn_stats, allreduces));
	ASSERT_EQ(64, offsetof(struct gn_stats, ctl_packets));
	ASSERT_EQ(72, offsetof(struct gn_stats, ctl_bytes));
	ASSERT_EQ(80, offsetof(struct gn_stats, messages));
	ASSERT_EQ(88, offsetof(struct gn_stats, stream_bytes));
	ASSERT_EQ(96, offsetof(struct gn_stats, drops));
	ASSERT_EQ(96 + 8 * GN_DROP_MAX, sizeof(struct gn_stats));
	ASSERT_GE(GN_DROP_MAX, GN_DROP_COUNT);

	ASSERT_EQ(0, open_one(&ctx, 29951)) TH_LOG("%s", gn_last_errmsg());
	ASSERT_EQ(0, gn_tensor_register(ctx, &t));
	ASSERT_EQ(0, gn_allreduce(ctx, 1, x));

	/* An older caller's struct that ends before allreduces. */
	memset(&st, 0xab, sizeof(st));
	st.sz = offsetof(struct gn_stats, allreduces);
	ASSERT_EQ(0, gn_stats_ctx(ctx, &st));
	ASSERT_EQ(0, st.retransmits);
	ASSERT_EQ(0xababababababababull, st.allreduces);

	/* A newer caller's: counters this version lacks read 0. */
	memset(&big, 0xab, sizeof(big));
	big.st.sz = sizeof(big);
	ASSERT_EQ(0, gn_stats_tensor(ctx, 1, &big.st));
	ASSERT_EQ(1, big.st.allreduces);
	ASSERT_EQ(0, big.st.drops[GN_DROP_MAX - 1]);
	ASSERT_EQ(0, big.future[0]);
	ASSERT_EQ(0, big.future[1]);

	st.sz = 4;
	ASSERT_EQ(-EINVAL, gn_stats_ctx(ctx, &st));
	gn_ctx_close(ctx);
}

/* The header's version macros, the string and the run-time number agree. */
TEST(version)
{
	char want[32];

	snprintf(want, sizeof(want), "%d.%d.%d", GN_VERSION_MAJOR,
		 GN_VERSION_MINOR, GN_VERSION_PATCH);
	ASSERT_STREQ(want, gn_version());
	ASSERT_EQ(GN_VERSION_NUMBER, gn_version_number());
	ASSERT_EQ((unsigned int)GN_VERSION_MAJOR, gn_version_number() >> 16);
}

static void *strerror_thread(void *arg)
{
	return (void *)gn_strerror(-(int)(intptr_t)arg);
}

/*
 * gn_strerror()'s text is static: a later call, in this thread or another,
 * does not overwrite what an earlier one returned.
 */
TEST(strerror_static)
{
	const char *a = gn_strerror(-ENOTCONN), *u = gn_strerror(-4000);
	char a_copy[128], u_copy[128];
	pthread_t th;
	void *other;

	snprintf(a_copy, sizeof(a_copy), "%s", a);
	snprintf(u_copy, sizeof(u_copy), "%s", u);
	ASSERT_NE(NULL, strstr(a, "connected")) TH_LOG("%s", a);
	ASSERT_STRNE("", u);
	gn_strerror(-4001);
	ASSERT_STREQ(u_copy, u);
	ASSERT_STREQ("unknown error", gn_strerror(-4001));
	ASSERT_EQ(0, pthread_create(&th, NULL, strerror_thread, (void *)(intptr_t)4002));
	ASSERT_EQ(0, pthread_join(th, &other));
	ASSERT_STREQ("unknown error", (const char *)other);
	gn_strerror(-ENOSPC);
	ASSERT_STREQ(a_copy, a);
	ASSERT_STREQ(u_copy, u);
	ASSERT_NE(NULL, strstr(gn_strerror(-E2BIG), "does not know"));
}

/* ---- keys ---------------------------------------------------------------- */

#define TEST_KEY "gradnet test key"
/* @key in hex, as a file or a pipe would hold it. */
static void key_hex(char *out, const char *key)
{
	int i;

	for (i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", (unsigned char)key[i]);
}

static void clear_key_env(void)
{
	unsetenv("GN_KEY");
	unsetenv("GN_KEY_FILE");
	unsetenv("GN_KEY_FD");
	unsetenv("GN_INSECURE");
}

/*
 * A keyed job of two ranks on @port, @port + 1: rank 1 (a child) takes
 * TEST_KEY from the options, rank 0 (this process) whatever the
 * environment says. Return: rank 0's gn_ctx_open().
 */
static int open_pair(int port)
{
	static const uint8_t key[16] = TEST_KEY;
	char peers[64];
	GN_OPTS(gn_ctx_opts, o, .rank = 0, .world_size = 2, .peers = peers,
		.timeout_ms = 1500, .flags = GN_CTX_RANK, .job_id = 77);
	struct gn_ctx *ctx;
	pid_t pid;
	int r;

	snprintf(peers, sizeof(peers), "127.0.0.1:%d,127.0.0.1:%d", port, port + 1);
	pid = fork();
	if (pid == 0) {
		o.rank = 1;
		o.key = key;
		o.key_len = sizeof(key);
		clear_key_env();
		r = gn_ctx_open(&o, &ctx);
		gn_ctx_close(ctx);
		_exit(r ? 1 : 0);
	}
	r = gn_ctx_open(&o, &ctx);
	gn_ctx_close(ctx);
	if (r)	/* the child waits for a peer that is not coming */
		kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return r;
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd >= 0) {
		if (write(fd, text, strlen(text)) < 0)
			perror("write");
		fchmod(fd, mode);
		close(fd);
	}
}

/* GN_KEY_FILE: the key is used; loose modes and bad contents are refused. */
TEST(key_file)
{
	char dir[] = "/tmp/gn-api-key-XXXXXX", path[64], hex[40];

	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/key", dir);
	clear_key_env();
	setenv("GN_KEY_FILE", path, 1);

	/* Missing. */
	ASSERT_EQ(-ENOENT, open_pair(29961));
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "GN_KEY_FILE")) TH_LOG("%s", gn_last_errmsg());

	/* The right key, with a newline: both ranks authenticate. */
	key_hex(hex, TEST_KEY);
	strcat(hex, "\n");
	write_file(path, hex, 0600);
	ASSERT_EQ(0, open_pair(29963)) TH_LOG("%s", gn_last_errmsg());
	ASSERT_STREQ(path, getenv("GN_KEY_FILE"));

	/* Another key: the peers reject each other. */
	write_file(path, "00112233445566778899aabbccddeeff", 0400);
	ASSERT_EQ(-EKEYREJECTED, open_pair(29965)) TH_LOG("%s", gn_last_errmsg());

	/* Readable by the group or by others: refused, naming the mode. */
	write_file(path, hex, 0640);
	ASSERT_EQ(-EACCES, open_pair(29967));
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "GN_KEY_FILE")) TH_LOG("%s", gn_last_errmsg());
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "640")) TH_LOG("%s", gn_last_errmsg());
	write_file(path, hex, 0604);
	ASSERT_EQ(-EACCES, open_pair(29969));

	/* Not a key. */
	write_file(path, "0011", 0600);
	ASSERT_EQ(-EINVAL, open_pair(29971));
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "GN_KEY_FILE: the key must be 32 hex digits"))
		TH_LOG("%s", gn_last_errmsg());
	write_file(path, "0011223344556677889900112233445566", 0600);
	ASSERT_EQ(-EINVAL, open_pair(29973));
	write_file(path, "zz112233445566778899aabbccddeeff", 0600);
	ASSERT_EQ(-EINVAL, open_pair(29975));
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "non-hex")) TH_LOG("%s", gn_last_errmsg());

	/* Two sources at once. */
	write_file(path, hex, 0600);
	setenv("GN_KEY", "00112233445566778899aabbccddeeff", 1);
	ASSERT_EQ(-EINVAL, open_pair(29977));
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "pick one")) TH_LOG("%s", gn_last_errmsg());

	clear_key_env();
	unlink(path);
	rmdir(dir);
}

/* GN_KEY_FD: read from a launcher's pipe, then closed and unset. */
TEST(key_fd)
{
	char hex[40], num[16];
	int p[2];

	clear_key_env();
	key_hex(hex, TEST_KEY);
	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(32, write(p[1], hex, 32));
	close(p[1]);
	snprintf(num, sizeof(num), "%d", p[0]);
	setenv("GN_KEY_FD", num, 1);
	ASSERT_EQ(0, open_pair(29981)) TH_LOG("%s", gn_last_errmsg());
	ASSERT_EQ(NULL, getenv("GN_KEY_FD"));
	ASSERT_EQ(-1, fcntl(p[0], F_GETFD));
	ASSERT_EQ(EBADF, errno);

	/* Not an open descriptor, or not a number. */
	setenv("GN_KEY_FD", num, 1);
	ASSERT_EQ(-EBADF, open_pair(29983));
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "GN_KEY_FD")) TH_LOG("%s", gn_last_errmsg());
	setenv("GN_KEY_FD", "three", 1);
	ASSERT_EQ(-EINVAL, open_pair(29985));
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "GN_KEY_FD=three")) TH_LOG("%s", gn_last_errmsg());
	clear_key_env();
}

/*
 * GN_KEY is gone from the environment after gn_ctx_open(): a child does
 * not inherit it, and the string it was is wiped.
 */
TEST(key_env_removed)
{
	char hex[40], out[64] = "";
	const char *was;
	FILE *child;

	clear_key_env();
	key_hex(hex, TEST_KEY);
	setenv("GN_KEY", hex, 1);
	was = getenv("GN_KEY");
	ASSERT_EQ(0, open_pair(29991)) TH_LOG("%s", gn_last_errmsg());
	ASSERT_EQ(NULL, getenv("GN_KEY"));
	ASSERT_EQ(0, was[0]);
	child = popen("echo \"${GN_KEY-unset}\"", "r");
	ASSERT_NE(NULL, child);
	ASSERT_NE(NULL, fgets(out, sizeof(out), child));
	pclose(child);
	ASSERT_STREQ("unset\n", out);

	/* A bad GN_KEY names the variable, and is removed all the same. */
	setenv("GN_KEY", "12345", 1);
	ASSERT_EQ(-EINVAL, open_pair(29993));
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "GN_KEY: the key must be 32 hex digits"))
		TH_LOG("%s", gn_last_errmsg());
	ASSERT_EQ(NULL, getenv("GN_KEY"));
}

/*
 * GN_ENCRYPT: 0 and 1 are taken, and a rank of each setting share a job
 * (rank 0 authenticates its bodies only, rank 1 encrypts them too);
 * anything else is refused, naming the variable. GN_CTX_CLEAR is a flag
 * this library knows.
 */
TEST(encrypt_setting)
{
	static const uint8_t key[16] = TEST_KEY;
	GN_OPTS(gn_ctx_opts, o, .world_size = 1, .peers = "127.0.0.1:29955",
		.key = key, .key_len = sizeof(key), .flags = GN_CTX_CLEAR);
	struct gn_ctx *ctx;
	char hex[40];

	clear_key_env();
	key_hex(hex, TEST_KEY);
	setenv("GN_KEY", hex, 1);
	setenv("GN_ENCRYPT", "2", 1);
	ASSERT_EQ(-EINVAL, open_pair(29941));
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "GN_ENCRYPT=2"))
		TH_LOG("%s", gn_last_errmsg());
	setenv("GN_KEY", hex, 1);
	setenv("GN_ENCRYPT", "0", 1);
	ASSERT_EQ(0, open_pair(29953)) TH_LOG("%s", gn_last_errmsg());
	unsetenv("GN_ENCRYPT");
	clear_key_env();
	ASSERT_EQ(0, gn_ctx_open(&o, &ctx)) TH_LOG("%s", gn_last_errmsg());
	gn_ctx_close(ctx);
}

/*
 * Nothing freed by the library holds the job key or a key derived from
 * it: free() is wrapped (-Wl,--wrap=free) to look for the job key in
 * every block freed while key_wiped_on_close runs (the keys the core
 * derives live in one block with it, wiped whole).
 */
static uint8_t wipe_key[16];
static volatile int wipe_watch, wipe_found;

void __real_free(void *p);
void __wrap_free(void *p);

void __wrap_free(void *p)
{
	if (wipe_watch && p &&
	    memmem(p, malloc_usable_size(p), wipe_key, sizeof(wipe_key)))
		wipe_found++;
	__real_free(p);
}

TEST(key_wiped_on_close)
{
	static const uint8_t key[16] = TEST_KEY;
	GN_OPTS(gn_ctx_opts, o, .world_size = 1, .peers = "127.0.0.1:29995",
		.key = key, .key_len = sizeof(key));
	struct gn_ctx *ctx;

	clear_key_env();
	memcpy(wipe_key, key, sizeof(key));
	ASSERT_EQ(0, gn_ctx_open(&o, &ctx)) TH_LOG("%s", gn_last_errmsg());
	wipe_watch = 1;
	gn_ctx_close(ctx);
	wipe_watch = 0;
	ASSERT_EQ(0, wipe_found);
}

/* One rank of a two-rank job opened in two steps; -errno of the first failure. */
struct half {
	struct gn_ctx *ctx;
	char addr[64];
};

static int bind_rank(struct half *h, int rank, const char *bind_addr)
{
	GN_OPTS(gn_ctx_opts, o, .rank = rank, .world_size = 2,
		.flags = GN_CTX_RANK | GN_CTX_INSECURE, .job_id = 5,
		.timeout_ms = 3000, .bind_addr = bind_addr);
	int r = gn_ctx_bind(&o, &h->ctx);

	if (r)
		return r;
	r = gn_ctx_local_addr(h->ctx, h->addr, sizeof(h->addr));
	return r < 0 ? r : 0;
}

/* Sum of (rank + 1) * i over two ranks, in place: 0 if it is right. */
static int allreduce_check(struct gn_ctx *ctx)
{
	GN_OPTS(gn_tensor_opts, t, .id = 3, .elems = 1000, .codec = GN_CODEC_NONE);
	float x[1000];
	int i, r;

	for (i = 0; i < 1000; i++)
		x[i] = (float)((gn_ctx_rank(ctx) + 1) * i);
	r = gn_tensor_register(ctx, &t);
	if (!r)
		r = gn_allreduce(ctx, 3, x);
	for (i = 0; !r && i < 1000; i++)
		if (x[i] != (float)(3 * i))
			r = -EBADMSG;
	return r;
}

/*
 * gn_ctx_bind(), gn_ctx_local_addr(), gn_ctx_join(): each rank binds port
 * 0, publishes what its socket holds (here through a pipe), and joins with
 * both addresses; the context works as one of gn_ctx_open().
 */
TEST(two_phase_open)
{
	struct half me = { 0 }, child = { 0 };
	struct sockaddr_in sin = { .sin_family = AF_INET };
	char list[160], *colon;
	int up[2], down[2], fd, status;
	struct gn_stats st = { .sz = sizeof(st) };
	pid_t pid;

	ASSERT_EQ(0, pipe(up));
	ASSERT_EQ(0, pipe(down));
	pid = fork();
	if (pid == 0) {
		int r = bind_rank(&child, 1, "127.0.0.1");

		if (write(up[1], child.addr, sizeof(child.addr)) < 0 ||
		    read(down[0], list, sizeof(list)) <= 0)
			_exit(2);
		if (!r)
			r = gn_ctx_join(child.ctx, list);
		if (!r)
			r = allreduce_check(child.ctx);
		gn_ctx_close(child.ctx);
		_exit(r ? 1 : 0);
	}
	ASSERT_EQ(0, bind_rank(&me, 0, "127.0.0.1")) TH_LOG("%s", gn_last_errmsg());
	ASSERT_EQ(0, strncmp(me.addr, "127.0.0.1:", 10)) TH_LOG("%s", me.addr);
	ASSERT_NE(0, atoi(me.addr + 10));

	/* The port is the socket's from bind on: nobody else gets it. */
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons((uint16_t)atoi(me.addr + 10));
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(-1, bind(fd, (struct sockaddr *)&sin, sizeof(sin)));
	ASSERT_EQ(EADDRINUSE, errno);
	close(fd);

	/* Bound, not joined: rank and size work, tensors and stats wait. */
	ASSERT_EQ(0, gn_ctx_rank(me.ctx));
	ASSERT_EQ(2, gn_ctx_world_size(me.ctx));
	GN_OPTS(gn_tensor_opts, t, .id = 9, .elems = 10);
	ASSERT_EQ(-ENOTCONN, gn_tensor_register(me.ctx, &t));
	ASSERT_NE(NULL, strstr(gn_ctx_errmsg(me.ctx), "gn_ctx_join")) TH_LOG("%s", gn_ctx_errmsg(me.ctx));
	ASSERT_EQ(-ENOTCONN, gn_stats_ctx(me.ctx, &st));

	ASSERT_LT(0, read(up[0], child.addr, sizeof(child.addr)));
	snprintf(list, sizeof(list), "%s,%s", me.addr, child.addr);
	ASSERT_EQ(sizeof(list), (size_t)write(down[1], list, sizeof(list)));
	ASSERT_EQ(0, gn_ctx_join(me.ctx, list)) TH_LOG("%s", gn_last_errmsg());
	ASSERT_EQ(0, allreduce_check(me.ctx)) TH_LOG("%s", gn_ctx_errmsg(me.ctx));
	ASSERT_EQ(-EALREADY, gn_ctx_join(me.ctx, list));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, WEXITSTATUS(status));
	gn_ctx_close(me.ctx);

	/* A list that gives this rank another address than its socket's. */
	ASSERT_EQ(0, bind_rank(&me, 0, "127.0.0.1:0"));
	colon = strrchr(me.addr, ':');
	snprintf(list, sizeof(list), "127.0.0.1:%d,127.0.0.1:9",
		 atoi(colon + 1) == 65535 ? 1 : atoi(colon + 1) + 1);
	ASSERT_EQ(-EINVAL, gn_ctx_join(me.ctx, list));
	ASSERT_NE(NULL, strstr(gn_ctx_errmsg(me.ctx), me.addr)) TH_LOG("%s", gn_ctx_errmsg(me.ctx));
	ASSERT_EQ(-EALREADY, gn_ctx_join(me.ctx, list));
	ASSERT_EQ(-ENOTCONN, gn_tensor_register(me.ctx, &t));
	gn_ctx_close(me.ctx);
	close(up[0]);
	close(up[1]);
	close(down[0]);
	close(down[1]);
}

/* The data paths whose address is not a socket of the library refuse it. */
TEST(bind_other_transports)
{
	static const char *const tps[] = { "dpdk", "kmod" };
	struct gn_ctx *ctx = (struct gn_ctx *)1;
	char buf[8];
	size_t i;

	for (i = 0; i < 2; i++) {
		GN_OPTS(gn_ctx_opts, o, .world_size = 2, .rank = 1,
			.flags = GN_CTX_INSECURE, .transport = tps[i]);

		ASSERT_EQ(-EOPNOTSUPP, gn_ctx_bind(&o, &ctx));
		ASSERT_EQ(NULL, ctx);
		ASSERT_NE(NULL, strstr(gn_last_errmsg(), tps[i])) TH_LOG("%s", gn_last_errmsg());
		ASSERT_NE(NULL, strstr(gn_last_errmsg(), "GN_PEERS")) TH_LOG("%s", gn_last_errmsg());
	}
	/* Too small a buffer, and bad bind addresses. */
	{
		struct half h = { 0 };

		ASSERT_EQ(0, bind_rank(&h, 0, "::1"));
		ASSERT_EQ(0, strncmp(h.addr, "[::1]:", 6)) TH_LOG("%s", h.addr);
		ASSERT_EQ(-ENOSPC, gn_ctx_local_addr(h.ctx, buf, sizeof(buf)));
		gn_ctx_close(h.ctx);
		ASSERT_EQ(-EINVAL, bind_rank(&h, 0, "no-such-host.invalid"));
		ASSERT_NE(NULL, strstr(gn_last_errmsg(), "GN_HOST")) TH_LOG("%s", gn_last_errmsg());
	}
	ASSERT_EQ(-EINVAL, gn_ctx_join(NULL, "x"));
	ASSERT_EQ(-EINVAL, gn_ctx_local_addr(NULL, buf, sizeof(buf)));
}

/*
 * A relay that stands between two ranks, as a store client that wrote
 * their addresses first could: rank 0 was told rank 1 is at @to1, rank 1
 * that rank 0 is at @to0. What reaches one socket goes out of the other.
 */
struct relay {
	int fd0, fd1;			/* faces rank 0 (as rank 1), rank 1 (as 0) */
	struct sockaddr_in rank0, rank1;
	volatile int stop;
};

static int udp_at(int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons((uint16_t)port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (fd >= 0 && bind(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static void *relay_main(void *arg)
{
	struct relay *rl = arg;
	unsigned char buf[9100];

	while (!rl->stop) {
		struct pollfd pf[2] = { { rl->fd0, POLLIN, 0 }, { rl->fd1, POLLIN, 0 } };
		ssize_t n;

		if (poll(pf, 2, 50) <= 0)
			continue;
		if (pf[0].revents & POLLIN) {
			n = recv(rl->fd0, buf, sizeof(buf), 0);
			if (n > 0)
				sendto(rl->fd1, buf, (size_t)n, 0,
				       (struct sockaddr *)&rl->rank1, sizeof(rl->rank1));
		}
		if (pf[1].revents & POLLIN) {
			n = recv(rl->fd1, buf, sizeof(buf), 0);
			if (n > 0)
				sendto(rl->fd0, buf, (size_t)n, 0,
				       (struct sockaddr *)&rl->rank0, sizeof(rl->rank0));
		}
	}
	return NULL;
}

/*
 * Ranks given different peer lists refuse each other at the handshake,
 * naming the peer, even when a relay would carry every packet between
 * them (and read it: nothing is encrypted) and the key is right.
 */
TEST(peer_lists_differ)
{
	static const uint8_t key[16] = TEST_KEY;
	struct relay rl = { .rank0 = { .sin_family = AF_INET },
			    .rank1 = { .sin_family = AF_INET } };
	GN_OPTS(gn_ctx_opts, o, .rank = 0, .world_size = 2, .key = key,
		.key_len = sizeof(key), .timeout_ms = 2000,
		.flags = GN_CTX_RANK, .job_id = 78);
	struct gn_ctx *ctx = NULL;
	pthread_t th;
	int status, r;
	pid_t pid;

	clear_key_env();
	rl.rank0.sin_addr.s_addr = rl.rank1.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	rl.rank0.sin_port = htons(29991);
	rl.rank1.sin_port = htons(29992);
	pid = fork();
	if (pid == 0) {
		o.rank = 1;
		o.peers = "127.0.0.1:29993,127.0.0.1:29992";
		r = gn_ctx_open(&o, &ctx);
		gn_ctx_close(ctx);
		_exit(r == -EPROTO ? 0 : 1);
	}
	rl.fd0 = udp_at(29994);
	rl.fd1 = udp_at(29993);
	ASSERT_LE(0, rl.fd0);
	ASSERT_LE(0, rl.fd1);
	ASSERT_EQ(0, pthread_create(&th, NULL, relay_main, &rl));
	o.peers = "127.0.0.1:29991,127.0.0.1:29994";
	r = gn_ctx_open(&o, &ctx);
	rl.stop = 1;
	pthread_join(th, NULL);
	close(rl.fd0);
	close(rl.fd1);
	gn_ctx_close(ctx);
	/* The child fails too, by itself: it heard rank 0's HELLO. */
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(-EPROTO, r) TH_LOG("%s", gn_last_errmsg());
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "rank 1")) TH_LOG("%s", gn_last_errmsg());
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "peer list")) TH_LOG("%s", gn_last_errmsg());
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST_HARNESS_MAIN
