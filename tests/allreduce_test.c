// SPDX-License-Identifier: MIT
/*
 * allreduce_test.c - allreduce between real processes on loopback: every
 * rank's result, every step, equals the single-process reference computed
 * with the codec directly, bit for bit; and the failure modes (NaN, dead
 * peers, mismatched peers) end as they should on every rank, also while a
 * process on the same host attacks the job.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gradnet/wire.h>
#include "testlib.h"	/* gn_test_session_key() */

#include "kselftest_harness.h"
#include "job.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/*
 * Compare every rank and step with the reference. @skip: steps that fail
 * with @skip_err for tensor @skip_tensor, or for every tensor if it is -1
 * (the others go through).
 */
static void check_job(struct __test_metadata *_metadata,
		      const struct job_spec *s, struct job_out *out,
		      const bool *skip, int skip_err, int skip_tensor)
{
	char why[96];
	int k, r, step, isa = gn_test_isa(why, sizeof(why));
	size_t at = 0;

	ASSERT_LE(0, isa) TH_LOG("%s", why);
	for (r = 0; r < s->world; r++) {
		ASSERT_EQ(0, out->status[r]) TH_LOG("rank %d exit status %#x", r, out->status[r]);
		ASSERT_EQ(0, out->open_rc[r]) TH_LOG("rank %d open: %s", r, out->msg[r]);
		ASSERT_EQ(isa, out->isa[r]) TH_LOG("rank %d ran the %s kernels", r,
						   gn_codec_isa_name(out->isa[r]));
	}
	/* The reference is the specification: the scalar kernels. */
	ASSERT_EQ(0, gn_codec_isa_set_default(GN_ISA_SCALAR));
	for (r = 0; r < s->world; r++) {
		for (step = 0; step < s->steps; step++) {
			int want = skip && skip[step] ? skip_err : 0;

			ASSERT_EQ(want, out->rc[r][step]) {
				TH_LOG("rank %d step %d: %s", r, step, out->msg[r]);
			}
		}
	}
	for (k = 0; k < s->ntensors; k++) {
		const bool *sk = k == skip_tensor || skip_tensor < 0 ? skip : NULL;
		size_t n = s->elems[k];
		uint64_t hash[JOB_MAX_STEPS];
		float *ref = malloc(n * sizeof(float));

		job_reference(s, k, sk, hash, ref);
		for (r = 0; r < s->world; r++) {
			const float *got = out->data + (size_t)r * job_total(s) + at;

			for (step = 0; step < s->steps; step++) {
				if (sk && sk[step])
					continue;
				ASSERT_EQ(hash[step], out->hash[r][step][k]) {
					TH_LOG("tensor %d (%zu values) rank %d step %d",
					       k, n, r, step);
				}
			}
			ASSERT_EQ(0, memcmp(ref, got, n * sizeof(float))) {
				TH_LOG("tensor %d rank %d final result", k, r);
			}
		}
		at += n;
		free(ref);
	}
}

FIXTURE(loopback) {
	struct job_spec s;
	char env[192];
};

FIXTURE_VARIANT(loopback) {
	int world;
	int codec;
	unsigned int flags;
	float s;
	const char *faults;
	bool ipv6;
	const char *params;
	int workers;			/* codec workers per rank (0: 1) */
};

FIXTURE_VARIANT_ADD(loopback, r2_3lc) { .world = 2, .codec = GN_CODEC_3LC };
FIXTURE_VARIANT_ADD(loopback, r3_3lc) { .world = 3, .codec = GN_CODEC_3LC, .s = 1.5f };
FIXTURE_VARIANT_ADD(loopback, r4_3lc_avg) { .world = 4, .codec = GN_CODEC_3LC,
					     .flags = GN_TENSOR_AVERAGE, .s = 1.75f };
FIXTURE_VARIANT_ADD(loopback, r8_3lc) { .world = 8, .codec = GN_CODEC_3LC };
FIXTURE_VARIANT_ADD(loopback, r2_dense) { .world = 2, .codec = GN_CODEC_NONE };
FIXTURE_VARIANT_ADD(loopback, r3_dense_avg) { .world = 3, .codec = GN_CODEC_NONE,
					       .flags = GN_TENSOR_AVERAGE };
FIXTURE_VARIANT_ADD(loopback, r4_dense) { .world = 4, .codec = GN_CODEC_NONE };
FIXTURE_VARIANT_ADD(loopback, r8_dense) { .world = 8, .codec = GN_CODEC_NONE };
/* Loss, duplicates and reordering in the sender: same bits as clean. */
FIXTURE_VARIANT_ADD(loopback, r3_3lc_faults) {
	.world = 3, .codec = GN_CODEC_3LC,
	.faults = "loss=0.05,dup=0.05,reorder=0.1,seed=11" };
FIXTURE_VARIANT_ADD(loopback, r4_dense_faults) {
	.world = 4, .codec = GN_CODEC_NONE,
	.faults = "loss=0.02,dup=0.05,reorder=0.05,seed=5" };
/* QSGD and top-k (float32 and QSGD values, per chunk and per block). */
FIXTURE_VARIANT_ADD(loopback, r3_qsgd_avg) {
	.world = 3, .codec = GN_CODEC_QSGD, .flags = GN_TENSOR_AVERAGE };
FIXTURE_VARIANT_ADD(loopback, r2_qsgd2) {
	.world = 2, .codec = GN_CODEC_QSGD, .params = "bits=2,norm=max" };
FIXTURE_VARIANT_ADD(loopback, r3_topk) {
	.world = 3, .codec = GN_CODEC_TOPK, .params = "density=0.01" };
FIXTURE_VARIANT_ADD(loopback, r4_topk_qsgd_avg) {
	.world = 4, .codec = GN_CODEC_TOPK, .flags = GN_TENSOR_AVERAGE,
	.params = "density=0.01,bits=4" };
FIXTURE_VARIANT_ADD(loopback, r3_topk_block_faults) {
	.world = 3, .codec = GN_CODEC_TOPK, .params = "density=0.05,block=512,bits=8",
	.faults = "loss=0.05,dup=0.05,reorder=0.1,seed=7" };
/* Dense enough that results (and some contributions) go dense. */
FIXTURE_VARIANT_ADD(loopback, r2_topk_dense_switch) {
	.world = 2, .codec = GN_CODEC_TOPK, .params = "density=0.6" };
/*
 * CLT-k: leaders' sets rotating over chunks and steps, the low-pass
 * memory, QSGD values, a warm-up step; and with faults, lost, duplicated
 * and reordered index sets repaired as any message.
 */
FIXTURE_VARIANT_ADD(loopback, r3_cltk) {
	.world = 3, .codec = GN_CODEC_CLTK, .params = "density=0.01" };
FIXTURE_VARIANT_ADD(loopback, r4_cltk_qsgd_avg) {
	.world = 4, .codec = GN_CODEC_CLTK, .flags = GN_TENSOR_AVERAGE,
	.params = "density=0.01,beta=0.5,bits=4" };
FIXTURE_VARIANT_ADD(loopback, r2_cltk_warmup) {
	.world = 2, .codec = GN_CODEC_CLTK, .params = "density=0.02,warmup=1" };
FIXTURE_VARIANT_ADD(loopback, r8_cltk) {
	.world = 8, .codec = GN_CODEC_CLTK, .params = "density=0.01,beta=0.9" };
FIXTURE_VARIANT_ADD(loopback, r3_cltk_faults) {
	.world = 3, .codec = GN_CODEC_CLTK, .params = "density=0.05,beta=0.9",
	.faults = "loss=0.05,dup=0.05,reorder=0.1,seed=13" };
/* Only the index sets, a third of their packets lost. */
FIXTURE_VARIANT_ADD(loopback, r4_cltk_index_faults) {
	.world = 4, .codec = GN_CODEC_CLTK, .params = "density=0.2,bits=8",
	.faults = "loss=0.3,dup=0.1,reorder=0.2,phase=2,seed=17" };
/* Top-k's index and value codecs: Bloom groups, run lengths, float16. */
FIXTURE_VARIANT_ADD(loopback, r3_topk_bloom_qsgd) {
	.world = 3, .codec = GN_CODEC_TOPK,
	.params = "density=0.01,bits=4,idx=bloom" };
FIXTURE_VARIANT_ADD(loopback, r4_topk_bloom_p2_f16_avg_faults) {
	.world = 4, .codec = GN_CODEC_TOPK, .flags = GN_TENSOR_AVERAGE,
	.params = "density=0.05,idx=bloom-p2,fpr=0.01,val=f16",
	.faults = "loss=0.05,dup=0.05,reorder=0.1,seed=13" };
FIXTURE_VARIANT_ADD(loopback, r2_topk_auto) {
	.world = 2, .codec = GN_CODEC_TOPK, .params = "density=0.2,idx=auto" };
/* IPv6 peers, with faults so that retransmissions find them too. */
FIXTURE_VARIANT_ADD(loopback, r3_3lc_ipv6) {
	.world = 3, .codec = GN_CODEC_3LC, .ipv6 = true,
	.faults = "loss=0.02,dup=0.02,reorder=0.05,seed=3" };
/*
 * The entropy stage on every codec: the values are the codec's alone (the
 * reference has no stage), the stage has to pay (fewer bytes on the wire
 * than the same job without it, entropy_pays), and coded packets survive
 * loss and reordering, held out of turn and decoded by several workers.
 */
FIXTURE_VARIANT_ADD(loopback, r2_3lc_zstd) {
	.world = 2, .codec = GN_CODEC_3LC, .params = "entropy=zstd" };
FIXTURE_VARIANT_ADD(loopback, r3_3lc_zstd_faults) {
	.world = 3, .codec = GN_CODEC_3LC, .params = "entropy=zstd,entropy_level=3",
	.faults = "loss=0.05,dup=0.05,reorder=0.1,seed=13" };
FIXTURE_VARIANT_ADD(loopback, r4_3lc_zstd_workers) {
	.world = 4, .codec = GN_CODEC_3LC, .params = "entropy=zstd",
	.faults = "loss=0.02,dup=0.02,reorder=0.1,seed=17", .workers = 3 };
FIXTURE_VARIANT_ADD(loopback, r3_dense_zstd_avg) {
	.world = 3, .codec = GN_CODEC_NONE, .flags = GN_TENSOR_AVERAGE,
	.params = "entropy=zstd" };
FIXTURE_VARIANT_ADD(loopback, r3_qsgd_zstd) {
	.world = 3, .codec = GN_CODEC_QSGD, .params = "entropy=zstd" };
FIXTURE_VARIANT_ADD(loopback, r3_topk_qsgd_zstd) {
	.world = 3, .codec = GN_CODEC_TOPK,
	.params = "density=0.01,bits=4,entropy=zstd" };
FIXTURE_VARIANT_ADD(loopback, r2_topk_dense_switch_zstd) {
	.world = 2, .codec = GN_CODEC_TOPK, .params = "density=0.6,entropy=zstd",
	.workers = 2 };

FIXTURE_SETUP(loopback)
{
	static const size_t sizes[] = { 1, 4, 5, 1000003 };
	size_t k;

	memset(&self->s, 0, sizeof(self->s));
	self->s.world = variant->world;
	self->s.steps = 3;
	self->s.s = variant->s;
	self->s.nan_rank = self->s.die_rank = -1;
	self->s.keyed = true;
	self->s.ipv6 = variant->ipv6;
	self->s.ntensors = ARRAY_LEN(sizes);
	/* The generator's draws depend on the job: the reference needs it. */
	self->s.job_id = (uint32_t)getpid() * 7919u + 0x51u;
	for (k = 0; k < ARRAY_LEN(sizes); k++) {
		self->s.elems[k] = sizes[k];
		self->s.codec[k] = variant->codec;
		self->s.flags[k] = variant->flags;
		self->s.params[k] = variant->params;
	}
	if (variant->faults || variant->workers) {
		int r, at = 0;

		/* job_env() takes NAME=VALUE pairs: the faults are one value. */
		if (variant->faults)
			at = snprintf(self->env, sizeof(self->env),
				      "GN_TEST_FAULTS=%s;", variant->faults);
		if (variant->workers)
			snprintf(self->env + at, sizeof(self->env) - (size_t)at,
				 "GN_CODEC_WORKERS=%d", variant->workers);
		for (r = 0; r < variant->world; r++)
			self->s.env[r] = self->env;
	}
}

FIXTURE_TEARDOWN(loopback)
{
}

/* Can a UDP socket bind [::1]? */
static bool ipv6_loopback(void)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6,
				  .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int fd = socket(AF_INET6, SOCK_DGRAM, 0);
	bool ok = fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a));

	if (fd >= 0)
		close(fd);
	return ok;
}

/* Sizes 1, 4, 5 and 1000003 at once, three steps, against the reference. */
TEST_F(loopback, matches_reference)
{
	struct job_out *out;

	if (self->s.ipv6 && !ipv6_loopback())
		SKIP(return, "no IPv6 loopback here ([::1] cannot be bound)");
	out = job_run(&self->s, 240);

	ASSERT_NE(NULL, out);
	check_job(_metadata, &self->s, out, NULL, 0, -1);
	if (variant->faults) {
		unsigned long long rtx = 0;
		int r;

		/* The faults were there, and repaired. */
		for (r = 0; r < self->s.world; r++)
			rtx += out->stats[r].retransmits;
		TH_LOG("%llu retransmissions under %s", rtx, variant->faults);
		EXPECT_LT(0, rtx);
	}
	job_free(&self->s, out);
}

/* Twenty tensors of mixed codecs and sizes in flight together. */
TEST(many_tensors)
{
	struct job_spec s = { .world = 3, .steps = 2, .nan_rank = -1,
			      .die_rank = -1, .chunk = 4096 };
	struct job_out *out;
	int k;

	s.ntensors = 20;
	for (k = 0; k < s.ntensors; k++) {
		s.elems[k] = (size_t)(k * k * 397 + k + 1);
		s.codec[k] = k % 3 ? GN_CODEC_3LC : GN_CODEC_NONE;
		s.flags[k] = k % 4 == 1 ? GN_TENSOR_AVERAGE : 0;
	}
	out = job_run(&s, 120);
	ASSERT_NE(NULL, out);
	check_job(_metadata, &s, out, NULL, 0, -1);
	job_free(&s, out);
}

/*
 * A NaN in the gradient of rank @s->nan_rank at step @s->nan_step: that
 * step fails with -EDOM everywhere and leaves error feedback alone, so the
 * other steps still match a reference that skipped it; every rank's
 * message names the rank.
 */
static void nan_job(struct __test_metadata *_metadata, struct job_spec *s)
{
	bool skip[JOB_MAX_STEPS] = { false };
	char who[16];
	struct job_out *out;
	int r;

	skip[s->nan_step] = true;
	s->die_rank = -1;
	out = job_run(s, 120);
	ASSERT_NE(NULL, out);
	check_job(_metadata, s, out, skip, -EDOM, 0);
	snprintf(who, sizeof(who), "rank %d", s->nan_rank);
	for (r = 0; r < s->world; r++) {
		TH_LOG("rank %d: %s", r, out->msg[r]);
		EXPECT_NE(NULL, strstr(out->msg[r], who));
		EXPECT_NE(NULL, strstr(out->msg[r], "NaN"));
	}
	job_free(s, out);
}

/* The NaN lies in another rank's shard: the quantizer sees it at start. */
TEST(nan_skips_step_everywhere)
{
	struct job_spec s = { .world = 3, .steps = 4, .ntensors = 2,
			      .elems = { 70001, 9 },
			      .codec = { GN_CODEC_3LC, GN_CODEC_3LC },
			      .nan_rank = 2, .nan_step = 1, .nan_tensor = 0 };

	nan_job(_metadata, &s);
}

/*
 * The NaN lies in the owner's own share (n / 2 starts rank 1's shard of
 * two), which never crosses the network: it shows when the sum is quantized.
 */
TEST(nan_in_own_share_skips_step)
{
	struct job_spec s = { .world = 2, .steps = 3, .ntensors = 2,
			      .elems = { 70001, 9 },
			      .codec = { GN_CODEC_3LC, GN_CODEC_3LC },
			      .nan_rank = 1, .nan_step = 1, .nan_tensor = 0 };

	nan_job(_metadata, &s);
}

/* A dense tensor: its values would go out as they are. */
TEST(nan_dense_skips_step)
{
	struct job_spec s = { .world = 2, .steps = 3, .ntensors = 2,
			      .elems = { 5000, 70001 },
			      .codec = { GN_CODEC_NONE, GN_CODEC_3LC },
			      .nan_rank = 1, .nan_step = 1, .nan_tensor = 0 };

	nan_job(_metadata, &s);
}

/* The abort reaches the others before they even start that step. */
TEST(nan_abort_before_start)
{
	struct job_spec s = { .world = 3, .steps = 4, .ntensors = 2,
			      .elems = { 70001, 9 },
			      .codec = { GN_CODEC_3LC, GN_CODEC_NONE },
			      .nan_rank = 0, .nan_step = 2, .nan_tensor = 0,
			      .late_ms = 300 };

	nan_job(_metadata, &s);
}

/*
 * CLT-k: the NaN in a chunk its rank does not lead (its values wait for
 * the leader's set), in the chunk it leads (the selection sees it), in
 * the owner's own share; and the abort before the others start.
 * Tensor 0: 70001 values on 2 or 3 ranks, one chunk a shard, the NaN at
 * n / 2 in chunk 1 (shard 1); tensor 1 nine values, sets of one entry.
 * The leader of chunk 1 at step 1 is (1 + 1) mod W.
 */
static void nan_cltk(struct __test_metadata *_metadata, int world, int rank,
		     int step, int late_ms)
{
	struct job_spec s = { .world = world, .steps = 4, .ntensors = 2,
			      .elems = { 70001, 9 },
			      .codec = { GN_CODEC_CLTK, GN_CODEC_CLTK },
			      .params = { "density=0.01,beta=0.5", NULL },
			      .nan_rank = rank, .nan_step = step, .nan_tensor = 0,
			      .late_ms = late_ms,
			      .job_id = (uint32_t)getpid() * 31u + (uint32_t)rank };

	nan_job(_metadata, &s);
}

/* Three ranks: rank 2 leads chunk 1; rank 0's values wait for its set. */
TEST(nan_cltk_not_leader)
{
	nan_cltk(_metadata, 3, 0, 1, 0);
}

/* Two ranks: rank 0 leads chunk 1: its selection meets the NaN. */
TEST(nan_cltk_leader)
{
	nan_cltk(_metadata, 2, 0, 1, 0);
}

/* Two ranks: rank 1 owns chunk 1 (rank 0 leads it): its own share. */
TEST(nan_cltk_own_share)
{
	nan_cltk(_metadata, 2, 1, 1, 0);
}

/* Rank 1's own share at step 2; the others start 300 ms late. */
TEST(nan_cltk_abort_before_start)
{
	nan_cltk(_metadata, 3, 1, 2, 300);
}

/* ---- attackers on the same host ------------------------------------------ */

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

#define ATTACK_SECONDS 120	/* the job kills its attacker long before */

/*
 * An unauthenticated local process floods every rank with UDP GSO
 * super-datagrams of 128 segments (Linux >= 6.9 allows 128), in bursts so
 * that one receive batch holds many of them.
 */
static void gso_flood(const struct job_spec *s, int base, uint32_t job,
		      const uint8_t *key)
{
	static uint8_t buf[128 * 16];
	int fd = socket(AF_INET, SOCK_DGRAM, 0), seg = 16, r, i;
	double until = job_now() + ATTACK_SECONDS;

	(void)job;
	(void)key;
	if (fd < 0 || setsockopt(fd, IPPROTO_UDP, UDP_SEGMENT, &seg, sizeof(seg)))
		_exit(1);
	/* Each segment starts like a DATA header, as a confused peer's would. */
	for (i = 0; i < 128; i++)
		memcpy(buf + i * seg, "GN\x01\x02", 4);
	while (job_now() < until) {
		for (r = 0; r < s->world; r++) {
			struct sockaddr_in to = {
				.sin_family = AF_INET,
				.sin_port = htons((uint16_t)(base + r)),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
			};

			for (i = 0; i < 48; i++)
				(void)!sendto(fd, buf, sizeof(buf), MSG_DONTWAIT,
					      (struct sockaddr *)&to, sizeof(to));
		}
		usleep(20000);
	}
	_exit(0);
}

/* A UDP datagram with any source port on loopback, over a raw socket. */
static void send_as(int fd, int from_port, int to_port, const uint8_t *payload,
		    size_t len)
{
	uint8_t dgram[sizeof(struct iphdr) + sizeof(struct udphdr) + GN_WIRE_MAX_PKT];
	struct iphdr *ip = (struct iphdr *)dgram;
	struct udphdr *udp = (struct udphdr *)(dgram + sizeof(*ip));
	size_t hdrs = sizeof(*ip) + sizeof(*udp);
	struct sockaddr_in to = {
		.sin_family = AF_INET,
		.sin_port = htons((uint16_t)to_port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};

	memset(dgram, 0, hdrs);
	ip->version = 4;
	ip->ihl = sizeof(*ip) / 4;
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->tot_len = htons((uint16_t)(hdrs + len));
	ip->saddr = ip->daddr = htonl(INADDR_LOOPBACK);
	udp->source = htons((uint16_t)from_port);
	udp->dest = htons((uint16_t)to_port);
	udp->len = htons((uint16_t)(sizeof(*udp) + len));
	udp->check = 0;		/* none: allowed for UDP over IPv4 */
	memcpy(dgram + hdrs, payload, len);
	(void)!sendto(fd, dgram, hdrs + len, 0, (struct sockaddr *)&to, sizeof(to));
}

struct insider {
	const struct job_spec *s;
	int fd, base;
	uint32_t job;
	uint8_t key[GN_SEAL_KEY_LEN];	/* rank 1's, whom it poses as */
	uint64_t pn;
};

/* Where rank 0 of an attacked job writes what its session key binds. */
static void session_file(char *path, size_t len, pid_t test)
{
	snprintf(path, len, "/tmp/gn-session-%d", (int)test);
}

/*
 * An insider holds the job key and, as any rank could, learns the
 * instances of this run: it derives the session key as the ranks do, and
 * from it rank 1's sender key.
 */
static int insider_open(struct insider *in, const struct job_spec *s, int base,
			uint32_t job, const uint8_t *key)
{
	uint8_t session[GN_SEAL_KEY_LEN];
	char path[64];
	int r;

	in->s = s;
	in->base = base;
	in->job = job;
	in->pn = 0;
	session_file(path, sizeof(path), getppid());
	r = gn_test_session_key(path, key, session);
	unlink(path);
	if (!r)
		r = gn_wire_sender_key(in->key, session, 1);
	if (r)
		return -1;
	in->fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	return in->fd;
}

/* Chunk @c of shard @j of tensor @k: first element and length (0: none). */
static uint32_t insider_chunk(const struct insider *in, int k, int j, uint32_t c,
			      uint64_t *off)
{
	size_t n = in->s->elems[k];
	unsigned int chunk = in->s->chunk ? in->s->chunk : 65536;
	unsigned int w = (unsigned int)in->s->world;
	uint64_t lo = (uint64_t)((unsigned __int128)n * (unsigned int)j / w);
	uint64_t hi = (uint64_t)((unsigned __int128)n * (unsigned int)(j + 1) / w);

	*off = lo + (uint64_t)c * chunk;
	if (*off >= hi)
		return 0;
	return hi - *off < chunk ? (uint32_t)(hi - *off) : chunk;
}

/*
 * Rank 1 (as the insider poses) sends rank 0 a sealed DATA packet of
 * tensor @k, step @step: a contribution to shard 0 (REDUCE) or its own
 * result (GATHER).
 */
static void insider_data(struct insider *in, int k, uint32_t step, uint8_t phase,
			 const struct gn_wire_data *d, const uint8_t *body,
			 uint16_t blen)
{
	uint8_t pkt[GN_WIRE_MAX_PKT];
	struct gn_wire_hdr h = {
		.magic = GN_WIRE_MAGIC, .version = GN_WIRE_VERSION,
		.type = GN_PKT_DATA, .src = 1,
		.dst = phase == GN_PHASE_REDUCE ? 0 : GN_RANK_ALL,
		.job = in->job, .tensor = 100 + (uint32_t)k, .step = step,
		.body_len = blen, .phase = phase,
		.codec = (uint8_t)in->s->codec[k],
	};
	size_t len;

	gn_wire_hdr_put(&h, pkt);
	gn_wire_data_put(d, pkt);
	memcpy(pkt + GN_WIRE_DATA_HDR, body, blen);
	/*
	 * Low numbers, which rank 1 used long ago: DATA may repeat a number
	 * (a retransmission does), and rank 0's window of rank 1's numbers
	 * stays where rank 1 put it.
	 */
	len = gn_wire_seal(in->key, pkt, GN_WIRE_DATA_HDR + blen,
			   1 + in->pn++ % 64, 0);
	send_as(in->fd, in->base + 1, in->base, pkt, len);
}

static uint32_t float_bits(float f)
{
	uint32_t b;

	memcpy(&b, &f, sizeof(b));
	return b;
}

/*
 * Send what @forge makes of every chunk rank 0 receives from rank 1, in
 * every step and phase, in rounds until the job kills the insider.
 */
static void insider_run(const struct job_spec *s, int base, uint32_t job,
			const uint8_t *key,
			void (*forge)(struct insider *in, int k, uint32_t step,
				      uint8_t phase, unsigned int round))
{
	double until = job_now() + ATTACK_SECONDS;
	unsigned int round;
	struct insider in;
	int k, step, ph;

	if (insider_open(&in, s, base, job, key) < 0)
		_exit(1);
	for (round = 0; job_now() < until; round++) {
		for (k = 0; k < s->ntensors; k++)
			for (step = 1; step <= s->steps; step++)
				for (ph = 0; ph < 2; ph++)
					forge(&in, k, (uint32_t)step, (uint8_t)ph,
					      round);
		usleep(2000);
	}
	_exit(0);
}

/* One packet per chunk claiming npkts 0xffffffff or 2^31, first or last. */
static void forge_npkts(struct insider *in, int k, uint32_t step, uint8_t phase,
			unsigned int round)
{
	bool dense = in->s->codec[k] == GN_CODEC_NONE;
	float one = 1.0f;
	uint32_t c, len, np = round % 2 ? 0x80000000u : 0xffffffffu;
	struct gn_wire_data d = {
		.first = 0, .count = 1,
		.aux = dense ? 0 : float_bits(one),
		.pkt = round / 2 % 2 ? np - 1 : 0, .npkts = np,
	};
	uint8_t body[4];

	memcpy(body, &one, sizeof(one));
	for (c = 0; (len = insider_chunk(in, k, phase, c, &d.chunk_off)); c++) {
		d.chunk_len = len;
		insider_data(in, k, step, phase, &d, body, dense ? 4 : 1);
	}
}

/*
 * An insider holding the key, posing as rank 1, sends DATA whose npkts
 * is 0xffffffff or 2^31 (first or last packet) for every chunk of every
 * step that rank 0 receives from rank 1, again and again.
 */
static void npkts_insider(const struct job_spec *s, int base, uint32_t job,
			  const uint8_t *key)
{
	insider_run(s, base, job, key, forge_npkts);
}

/* Dense chunks as rank 1 cuts them (MTU 1500), every value a NaN. */
static void forge_nan(struct insider *in, int k, uint32_t step, uint8_t phase,
		      unsigned int round)
{
	uint32_t per = (1500 - GN_WIRE_IPUDP - GN_WIRE_DATA_OVERHEAD) / 4;
	static uint8_t body[GN_WIRE_MAX_PKT];
	struct gn_wire_data d = { 0 };
	uint32_t c, len, i;

	(void)round;
	if (in->s->codec[k] != GN_CODEC_NONE)
		return;
	for (i = 0; i + 4 <= sizeof(body); i += 4)
		memcpy(body + i, "\x00\x00\xc0\x7f", 4);	/* quiet NaN */
	for (c = 0; (len = insider_chunk(in, k, phase, c, &d.chunk_off)); c++) {
		d.chunk_len = len;
		d.npkts = (len + per - 1) / per;
		for (i = 0; i < d.npkts; i++) {
			d.pkt = i;
			d.first = i * per;
			d.count = len - d.first < per ? len - d.first : per;
			insider_data(in, k, step, phase, &d, body,
				     (uint16_t)(d.count * 4));
		}
	}
}

/*
 * An insider, posing as rank 1, sends dense packets full of NaN, shaped
 * as rank 1 cuts its real ones: contributions to shard 0, and results of
 * shard 1.
 */
static void nan_insider(const struct job_spec *s, int base, uint32_t job,
			const uint8_t *key)
{
	insider_run(s, base, job, key, forge_nan);
}

static void attack_spec(struct job_spec *s,
			void (*attack)(const struct job_spec *, int, uint32_t,
				       const uint8_t *))
{
	static char path[96] = "GN_TEST_SESSION_FILE=";

	memset(s, 0, sizeof(*s));
	s->world = 3;
	s->steps = 3;
	s->nan_rank = s->die_rank = -1;
	s->keyed = true;
	s->ntensors = 3;
	s->elems[0] = 1000003;
	s->codec[0] = GN_CODEC_3LC;
	s->elems[1] = 3001;
	s->codec[1] = GN_CODEC_NONE;
	s->elems[2] = 200003;
	s->codec[2] = GN_CODEC_NONE;
	s->attack = attack;
	/* Rank 0 tells the insiders what its session key binds. */
	session_file(path + strlen("GN_TEST_SESSION_FILE="),
		     sizeof(path) - strlen("GN_TEST_SESSION_FILE="), getpid());
	s->env[0] = path;
}

/*
 * Unauthenticated 4-byte "HELLO of protocol version 1" packets from every
 * peer's address to every rank, from before the handshake to the end: a
 * version packet cannot be authenticated, so it must change nothing
 * (it used to fail gn_ctx_open 300 ms later).
 */
static void version_spoofer(const struct job_spec *s, int base, uint32_t job,
			    const uint8_t *key)
{
	static const uint8_t pkt[4] = { 0x47, 0x4e, 0x01, 0x01 };
	double until = job_now() + ATTACK_SECONDS;
	int fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW), from, to;

	(void)job;
	(void)key;
	if (fd < 0)
		_exit(1);
	while (job_now() < until) {
		for (from = 0; from < s->world; from++)
			for (to = 0; to < s->world; to++)
				if (from != to)
					send_as(fd, base + from, base + to, pkt,
						sizeof(pkt));
		usleep(1000);
	}
	_exit(0);
}

TEST(spoofed_version_packets)
{
	struct job_out *out;
	struct job_spec s;
	int r;

	attack_spec(&s, version_spoofer);
	s.env[0] = NULL;
	out = job_run(&s, 120);
	ASSERT_NE(NULL, out);
	check_job(_metadata, &s, out, NULL, 0, -1);
	for (r = 0; r < s.world; r++)
		ASSERT_LT(0, out->stats[r].drops[GN_DROP_VERSION]) TH_LOG("rank %d", r);
	job_free(&s, out);
}

/* A GSO flood from a local process: no crash, every result exact. */
TEST(gso_flood_128_segments)
{
	struct job_out *out;
	struct job_spec s;

	attack_spec(&s, gso_flood);
	out = job_run(&s, 120);
	ASSERT_NE(NULL, out);
	check_job(_metadata, &s, out, NULL, 0, -1);
	/* The flood did reach the ranks. */
	ASSERT_LT(0, out->stats[0].drops[GN_DROP_SOURCE]);
	job_free(&s, out);
}

static bool can_raw(void)
{
	int fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* npkts = 0xffffffff and 2^31 from an insider: dropped, results exact. */
TEST(insider_huge_npkts)
{
	struct job_out *out;
	struct job_spec s;

	if (!can_raw())
		SKIP(return, "no raw socket (CAP_NET_RAW) to pose as a peer");
	attack_spec(&s, npkts_insider);
	s.await_malformed = true;
	out = job_run(&s, 120);
	ASSERT_NE(NULL, out);
	check_job(_metadata, &s, out, NULL, 0, -1);
	ASSERT_LT(0, out->stats[0].drops[GN_DROP_MALFORMED]);
	job_free(&s, out);
}

/* Dense NaN contributions and results from an insider: dropped, exact. */
TEST(insider_dense_nan)
{
	struct job_out *out;
	struct job_spec s;

	if (!can_raw())
		SKIP(return, "no raw socket (CAP_NET_RAW) to pose as a peer");
	attack_spec(&s, nan_insider);
	s.await_malformed = true;
	out = job_run(&s, 120);
	ASSERT_NE(NULL, out);
	check_job(_metadata, &s, out, NULL, 0, -1);
	ASSERT_LT(0, out->stats[0].drops[GN_DROP_MALFORMED]);
	job_free(&s, out);
}

/*
 * A rank that dies mid-job: the others fail with -ETIMEDOUT, naming it.
 * With CLT-k it is a leader too: every rank leads chunks.
 */
static void dead_peer_job(struct __test_metadata *_metadata, int codec)
{
	struct job_spec s = { .world = 3, .steps = 3, .ntensors = 1,
			      .elems = { 300000 }, .codec = { codec },
			      .nan_rank = -1, .die_rank = 1, .die_step = 1,
			      .timeout_ms = 1500 };
	struct job_out *out = job_run(&s, 60);
	int r;

	ASSERT_NE(NULL, out);
	for (r = 0; r < 3; r += 2) {
		ASSERT_EQ(0, out->rc[r][0]);
		ASSERT_EQ(-ETIMEDOUT, out->rc[r][1]) TH_LOG("rank %d: %s", r, out->msg[r]);
		ASSERT_NE(NULL, strstr(out->msg[r], "rank 1")) TH_LOG("%s", out->msg[r]);
		/* The peer's liveness timeout ended it, not the step's (600 s
		 * by default): gn_dl_peer_dead()'s message, or begin_step()'s
		 * once the peer is known dead. */
		ASSERT_TRUE(strstr(out->msg[r], "went silent") ||
			    strstr(out->msg[r], "is gone")) TH_LOG("%s", out->msg[r]);
	}
	job_free(&s, out);
}

TEST(dead_peer_times_out)
{
	dead_peer_job(_metadata, GN_CODEC_3LC);
}

TEST(dead_cltk_leader_times_out)
{
	dead_peer_job(_metadata, GN_CODEC_CLTK);
}

/*
 * Rank 2 alive but idle at step 1 of @s until the others have given up
 * on it (GN_STEP_TIMEOUT_MS=800 on every rank): step 1 fails with
 * -ETIMEDOUT on every rank, each message naming rank 2, and the other
 * steps match a reference that skipped step 1. Return: the job's results
 * for more checks (job_free() them), or NULL after a failed assertion.
 */
static struct job_out *idle_job(struct __test_metadata *_metadata,
				struct job_spec *s)
{
	static const bool skip[JOB_MAX_STEPS] = { false, true };
	struct job_out *out;
	int r;

	s->nan_rank = s->die_rank = -1;
	s->idle = true;
	s->idle_rank = 2;
	s->idle_step = 1;
	for (r = 0; r < 3; r++)
		s->env[r] = "GN_STEP_TIMEOUT_MS=800";
	out = job_run(s, 60);
	EXPECT_NE(NULL, out);
	if (!out)
		return NULL;
	check_job(_metadata, s, out, skip, -ETIMEDOUT, -1);
	for (r = 0; r < s->world; r++) {
		TH_LOG("rank %d: %s", r, out->msg[r]);
		EXPECT_NE(NULL, strstr(out->msg[r], "rank 2"));
		EXPECT_NE(NULL, strstr(out->msg[r], "step 2"));
	}
	return out;
}

/*
 * A CLT-k leader idle at step 1: the others wait for its index sets, and
 * the step timeout names it as the leader they wait for.
 */
TEST(idle_cltk_leader_times_out_step)
{
	struct job_spec s = { .world = 3, .steps = 4, .ntensors = 1,
			      .elems = { 200001 }, .codec = { GN_CODEC_CLTK },
			      .params = { "density=0.02,beta=0.5" },
			      .job_id = (uint32_t)getpid() * 13u + 1u };
	struct job_out *out = idle_job(_metadata, &s);

	ASSERT_NE(NULL, out);
	/* One of ranks 0 and 1 timed out on its own (the other may have had
	 * its abort first): waiting for rank 2's index sets. */
	EXPECT_TRUE(strstr(out->msg[0], "no index set from its leader rank 2") ||
		    strstr(out->msg[1], "no index set from its leader rank 2"));
	job_free(&s, out);
}

/*
 * Rank 2 idle at step 1 (idle_job()). Tensor 0 has a share missing at
 * ranks 0 and 1; tensor 1 (one value, rank 2's shard) only lacks rank 2's
 * result.
 */
TEST(idle_peer_times_out_step)
{
	struct job_spec s = { .world = 3, .steps = 4, .ntensors = 2,
			      .elems = { 70001, 1 },
			      .codec = { GN_CODEC_3LC, GN_CODEC_3LC } };
	struct job_out *out = idle_job(_metadata, &s);
	int r;

	ASSERT_NE(NULL, out);
	/* Within the step timeout (and half again for tensor 1), plus
	 * scheduling slack. */
	for (r = 0; r < 2; r++)
		EXPECT_GT(1.2 + 1.0, out->seconds[r][1]);
	job_free(&s, out);
}

/* Open with one rank's setting changed: -EPROTO on every rank. */
static void expect_open_mismatch(struct __test_metadata *_metadata,
				 const char *env1, const char *word)
{
	struct job_spec s = { .world = 2, .steps = 1, .ntensors = 1,
			      .elems = { 10 }, .codec = { GN_CODEC_3LC },
			      .nan_rank = -1, .die_rank = -1, .timeout_ms = 3000 };
	struct job_out *out;
	int r;

	s.env[1] = env1;
	out = job_run(&s, 30);
	ASSERT_NE(NULL, out);
	for (r = 0; r < 2; r++) {
		ASSERT_EQ(-EPROTO, out->open_rc[r]) TH_LOG("rank %d: %s", r, out->msg[r]);
		ASSERT_NE(NULL, strstr(out->msg[r], word)) TH_LOG("%s", out->msg[r]);
	}
	job_free(&s, out);
}

TEST(version_mismatch)
{
	expect_open_mismatch(_metadata, "GN_TEST_WIRE_VERSION=1", "version");
}

/*
 * A tensor registered with another codec or other parameters on one rank:
 * the handshake has nothing to say about it (codecs are the tensors'), and
 * the first allreduce fails with -EPROTO on every rank, naming the peer and
 * what differs.
 */
static void expect_tensor_mismatch(struct __test_metadata *_metadata,
				   const char *env1, const char *word0,
				   const char *word1)
{
	struct job_spec s = { .world = 2, .steps = 1, .ntensors = 1,
			      .elems = { 10 }, .codec = { GN_CODEC_DEFAULT },
			      .nan_rank = -1, .die_rank = -1, .timeout_ms = 3000 };
	struct job_out *out;
	int r;

	s.env[1] = env1;
	out = job_run(&s, 30);
	ASSERT_NE(NULL, out);
	for (r = 0; r < 2; r++) {
		const char *word = r ? word1 : word0;

		ASSERT_EQ(0, out->open_rc[r]) TH_LOG("rank %d: %s", r, out->msg[r]);
		ASSERT_EQ(-EPROTO, out->rc[r][0]) TH_LOG("rank %d: %s", r, out->msg[r]);
		ASSERT_NE(NULL, strstr(out->msg[r], word)) TH_LOG("%s", out->msg[r]);
		ASSERT_NE(NULL, strstr(out->msg[r], r ? "rank 0" : "rank 1"))
			TH_LOG("%s", out->msg[r]);
	}
	job_free(&s, out);
}

TEST(codec_param_mismatch)
{
	expect_tensor_mismatch(_metadata, "GN_S=1.5", "s=1.5 there, s=1 here",
			       "s=1 there, s=1.5 here");
	expect_tensor_mismatch(_metadata, "GN_CODEC=3lc:s=1.25",
			       "s=1.25 there", "s=1.25 here");
}

/*
 * CLT-k tensors whose beta or density differ: -EPROTO at the first
 * allreduce on both ranks, naming the peer and the parameter.
 */
TEST(cltk_param_mismatch)
{
	static const char *const env1[] = { "GN_CODEC=cltk:beta=0.5",
					     "GN_CODEC=cltk:density=0.02" };
	static const char *const word[][2] = {
		{ "beta=0.5 there, beta=1 here", "beta=1 there, beta=0.5 here" },
		{ "density=0.02 there, density=0.01 here",
		  "density=0.01 there, density=0.02 here" },
	};
	size_t i;
	int r;

	for (i = 0; i < ARRAY_LEN(env1); i++) {
		struct job_spec s = { .world = 2, .steps = 1, .ntensors = 1,
				      .elems = { 1000 }, .codec = { GN_CODEC_CLTK },
				      .nan_rank = -1, .die_rank = -1,
				      .timeout_ms = 3000 };
		struct job_out *out;

		s.env[1] = env1[i];
		out = job_run(&s, 30);
		ASSERT_NE(NULL, out);
		for (r = 0; r < 2; r++) {
			ASSERT_EQ(-EPROTO, out->rc[r][0]) TH_LOG("rank %d: %s", r, out->msg[r]);
			ASSERT_NE(NULL, strstr(out->msg[r], word[i][r])) TH_LOG("%s", out->msg[r]);
			ASSERT_NE(NULL, strstr(out->msg[r], r ? "rank 0" : "rank 1"))
				TH_LOG("%s", out->msg[r]);
		}
		job_free(&s, out);
	}
}

/* The entropy stage is part of the block ranks agree on. */
TEST(entropy_mismatch)
{
	expect_tensor_mismatch(_metadata, "GN_CODEC=3lc:entropy=zstd",
			       "entropy=zstd there, entropy=none here",
			       "entropy=none there, entropy=zstd here");
}

/*
 * The entropy stage codes packets only where that makes them smaller:
 * with it, the same job ends with the same bits and sends fewer bytes
 * (3LC's zero-run stream of these gradients is far from random bytes).
 */
TEST(entropy_pays)
{
	struct job_spec s = { .world = 3, .steps = 3, .ntensors = 2,
			      .elems = { 1000003, 70001 },
			      .codec = { GN_CODEC_3LC, GN_CODEC_QSGD },
			      .nan_rank = -1, .die_rank = -1, .keyed = true,
			      .job_id = 0x3e7 + (uint32_t)getpid() };
	uint64_t plain = 0, coded = 0, hash[JOB_MAX_STEPS][2];
	struct job_out *out;
	int r, k, step;

	out = job_run(&s, 240);
	ASSERT_NE(NULL, out);
	check_job(_metadata, &s, out, NULL, 0, -1);
	for (r = 0; r < s.world; r++)
		plain += out->stats[r].wire_bytes;
	for (step = 0; step < s.steps; step++)
		for (k = 0; k < 2; k++)
			hash[step][k] = out->hash[0][step][k];
	job_free(&s, out);

	s.params[0] = s.params[1] = "entropy=zstd";
	out = job_run(&s, 240);
	ASSERT_NE(NULL, out);
	check_job(_metadata, &s, out, NULL, 0, -1);
	for (r = 0; r < s.world; r++)
		coded += out->stats[r].wire_bytes;
	for (step = 0; step < s.steps; step++)
		for (k = 0; k < 2; k++)
			ASSERT_EQ(hash[step][k], out->hash[0][step][k]);
	job_free(&s, out);
	ksft_print_msg("wire bytes: %llu without the entropy stage, %llu with it (%.2fx)\n",
		       (unsigned long long)plain, (unsigned long long)coded,
		       (double)plain / (double)coded);
	ASSERT_LT(coded, plain);
}

TEST(codec_mismatch)
{
	expect_tensor_mismatch(_metadata, "GN_CODEC=none",
			       "uses codec none on rank 1", "3lc on rank 0");
}

TEST(chunk_mismatch)
{
	expect_open_mismatch(_metadata, "GN_CHUNK=4096", "chunk 4096");
}

TEST(world_size_mismatch)
{
	struct job_spec s = { .world = 2, .steps = 1, .ntensors = 1,
			      .elems = { 10 }, .codec = { GN_CODEC_3LC },
			      .nan_rank = -1, .die_rank = -1, .timeout_ms = 3000 };
	struct job_out *out;
	int r;

	/* Rank 1 believes in a third rank; its list has one more address. */
	s.env[1] = "GN_WORLD_SIZE=3";
	out = job_run(&s, 30);
	ASSERT_NE(NULL, out);
	for (r = 0; r < 2; r++)
		ASSERT_NE(0, out->open_rc[r]) TH_LOG("rank %d", r);
	ASSERT_EQ(-EPROTO, out->open_rc[0]) TH_LOG("%s", out->msg[0]);
	ASSERT_NE(NULL, strstr(out->msg[0], "world size 3"));
	job_free(&s, out);
}

/* Rank 1 registers tensor 0 with one element more: -EPROTO at step 0. */
TEST(tensor_size_mismatch)
{
	struct job_spec s = { .world = 3, .steps = 1, .ntensors = 1,
			      .elems = { 1000 }, .codec = { GN_CODEC_3LC },
			      .nan_rank = -1, .die_rank = -1,
			      .register_elems_rank1 = 1001 };
	struct job_out *out = job_run(&s, 30);
	int r;

	ASSERT_NE(NULL, out);
	for (r = 0; r < 3; r++) {
		ASSERT_EQ(0, out->open_rc[r]) TH_LOG("rank %d: %s", r, out->msg[r]);
		ASSERT_EQ(-EPROTO, out->rc[r][0]) TH_LOG("rank %d: %s", r, out->msg[r]);
		ASSERT_NE(NULL, strstr(out->msg[r], "elements"));
	}
	job_free(&s, out);
}

/*
 * Record every packet of one run, then run the same job again (same key,
 * same job id) with each rank also sending its recording of the first run
 * to the same peers: HELLOs, DATA of every step, ACKs, control, PINGs and
 * PONGs of a run whose steps are numbered alike. Every rank must finish
 * with the reference's results, the replays dropped as stale or
 * unauthentic, never acted on.
 */
TEST(replay_across_runs)
{
	struct job_spec s = { .world = 3, .steps = 4, .ntensors = 2,
			      .elems = { 300007, 5 },
			      .codec = { GN_CODEC_3LC, GN_CODEC_NONE },
			      .nan_rank = -1, .die_rank = -1, .keyed = true,
			      .job_id = 0x5e55 + (uint32_t)getpid() };
	char dir[] = "/tmp/gn-replay-XXXXXX", env[3][256], path[3][64];
	uint64_t mac = 0, stale = 0;
	struct job_out *out;
	int r;

	ASSERT_NE(NULL, mkdtemp(dir));
	for (r = 0; r < 3; r++) {
		snprintf(path[r], sizeof(path[r]), "%s/rank%d", dir, r);
		snprintf(env[r], sizeof(env[r]), "GN_TEST_FAULTS=record=%s", path[r]);
		s.env[r] = env[r];
	}
	out = job_run(&s, 120);
	ASSERT_NE(NULL, out);
	check_job(_metadata, &s, out, NULL, 0, -1);
	job_free(&s, out);

	for (r = 0; r < 3; r++)
		snprintf(env[r], sizeof(env[r]), "GN_TEST_FAULTS=replay=%s", path[r]);
	out = job_run(&s, 120);
	ASSERT_NE(NULL, out);
	check_job(_metadata, &s, out, NULL, 0, -1);
	for (r = 0; r < 3; r++) {
		mac += out->stats[r].drops[GN_DROP_MAC];
		stale += out->stats[r].drops[GN_DROP_REPLAY];
		unlink(path[r]);
	}
	rmdir(dir);
	ksft_print_msg("replayed packets dropped: %llu unauthentic (the old session key), %llu stale\n",
		       (unsigned long long)mac, (unsigned long long)stale);
	fflush(stdout);
	ASSERT_LT(0, mac);
	ASSERT_LT(0, stale);
	job_free(&s, out);
}

/*
 * How many packets of the recording at @path (fault.c's record=: le16
 * peer, le16 length, the bytes) say GN_SEAL_CLEAR, and how many not;
 * -1 if it cannot be read or a packet does not parse.
 */
static int count_clear(const char *path, int *clear, int *sealed)
{
	static uint8_t pkt[GN_WIRE_MAX_PKT];
	struct gn_wire_hdr h;
	uint8_t hdr[4];
	FILE *f = fopen(path, "rb");
	size_t len;

	*clear = *sealed = 0;
	if (!f)
		return -1;
	while (fread(hdr, 1, 4, f) == 4) {
		len = (size_t)hdr[2] | (size_t)hdr[3] << 8;
		if (len > sizeof(pkt) || fread(pkt, 1, len, f) != len ||
		    gn_wire_hdr_get(pkt, len, &h)) {
			fclose(f);
			return -1;
		}
		if (h.seal & GN_SEAL_CLEAR)
			(*clear)++;
		else
			(*sealed)++;
	}
	fclose(f);
	return 0;
}

/*
 * GN_ENCRYPT is each rank's: rank 0 sends its bodies authenticated only,
 * rank 1 encrypted too, and the job gives the reference's results; every
 * packet each sent says which.
 */
TEST(encrypt_setting_per_rank)
{
	struct job_spec s = { .world = 2, .steps = 2, .ntensors = 2,
			      .elems = { 100003, 5 },
			      .codec = { GN_CODEC_NONE, GN_CODEC_3LC },
			      .nan_rank = -1, .die_rank = -1, .keyed = true };
	char dir[] = "/tmp/gn-clear-XXXXXX", env[2][256], path[2][64];
	int clear[2], sealed[2], r;
	struct job_out *out;

	ASSERT_NE(NULL, mkdtemp(dir));
	for (r = 0; r < 2; r++) {
		snprintf(path[r], sizeof(path[r]), "%s/rank%d", dir, r);
		snprintf(env[r], sizeof(env[r]), "GN_TEST_FAULTS=record=%s%s",
			 path[r], r ? "" : ";GN_ENCRYPT=0");
		s.env[r] = env[r];
	}
	out = job_run(&s, 120);
	ASSERT_NE(NULL, out);
	check_job(_metadata, &s, out, NULL, 0, -1);
	for (r = 0; r < 2; r++) {
		ASSERT_EQ(0, count_clear(path[r], &clear[r], &sealed[r]));
		unlink(path[r]);
	}
	rmdir(dir);
	ASSERT_LT(0, clear[0]);
	ASSERT_EQ(0, sealed[0]);
	ASSERT_EQ(0, clear[1]);
	ASSERT_LT(0, sealed[1]);
	job_free(&s, out);
}

/* Different keys: nobody authenticates anybody. */
TEST(key_mismatch)
{
	struct job_spec s = { .world = 2, .steps = 1, .ntensors = 1,
			      .elems = { 10 }, .codec = { GN_CODEC_3LC },
			      .nan_rank = -1, .die_rank = -1, .timeout_ms = 1500,
			      .keyed = true };
	struct job_out *out;
	int r;

	s.env[1] = "GN_KEY=00112233445566778899aabbccddeeff";
	out = job_run(&s, 30);
	ASSERT_NE(NULL, out);
	for (r = 0; r < 2; r++) {
		ASSERT_EQ(-EKEYREJECTED, out->open_rc[r]) TH_LOG("rank %d: %s", r, out->msg[r]);
		ASSERT_NE(NULL, strstr(out->msg[r], "authentication"));
	}
	job_free(&s, out);
}

/* Without a key the library refuses, unless asked for an insecure job. */
TEST(no_key_refused)
{
	GN_OPTS(gn_ctx_opts, o, .rank = 0, .world_size = 1,
		.peers = "127.0.0.1:29999");
	struct gn_ctx *ctx = (void *)1;

	unsetenv("GN_KEY");
	unsetenv("GN_INSECURE");
	ASSERT_EQ(-EINVAL, gn_ctx_open(&o, &ctx));
	ASSERT_EQ(NULL, ctx);
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "GN_KEY"));
	o.flags = GN_CTX_INSECURE;
	ASSERT_EQ(0, gn_ctx_open(&o, &ctx));
	gn_ctx_close(ctx);
}

/*
 * Many tensors whose ids share their low bits (the id table's worst case),
 * some released and registered again: each id still finds its own tensor.
 */
TEST(many_ids_registered_and_released)
{
	GN_OPTS(gn_ctx_opts, o, .world_size = 1, .peers = "127.0.0.1:29996",
		.flags = GN_CTX_INSECURE);
	enum { N = 300 };
	struct gn_ctx *ctx;
	float x[3];
	int i, k;

	ASSERT_EQ(0, gn_ctx_open(&o, &ctx)) TH_LOG("%s", gn_last_errmsg());
	for (i = 0; i < N; i++) {
		GN_OPTS(gn_tensor_opts, t, .id = (uint32_t)i << 16,
			.elems = 1 + (size_t)i % 3, .codec = GN_CODEC_NONE);

		ASSERT_EQ(0, gn_tensor_register(ctx, &t)) TH_LOG("%d", i);
	}
	for (i = 0; i < N; i += 3)
		ASSERT_EQ(0, gn_tensor_unregister(ctx, (uint32_t)i << 16)) TH_LOG("%d", i);
	for (i = 0; i < N; i += 3)
		ASSERT_EQ(-ENOENT, gn_allreduce(ctx, (uint32_t)i << 16, x)) TH_LOG("%d", i);
	for (i = 0; i < N; i += 6) {
		GN_OPTS(gn_tensor_opts, t, .id = (uint32_t)i << 16,
			.elems = 1 + (size_t)(i + 1) % 3, .codec = GN_CODEC_NONE);

		ASSERT_EQ(0, gn_tensor_register(ctx, &t)) TH_LOG("%d", i);
	}
	for (i = 0; i < N; i++) {
		bool gone = i % 3 == 0 && i % 6 != 0;
		size_t n = 1 + (size_t)(i % 6 == 0 ? i + 1 : i) % 3;

		for (k = 0; k < 3; k++)
			x[k] = (float)(i * 3 + k);
		if (gone) {
			ASSERT_EQ(-ENOENT, gn_allreduce(ctx, (uint32_t)i << 16, x)) TH_LOG("%d", i);
			continue;
		}
		ASSERT_EQ(0, gn_allreduce(ctx, (uint32_t)i << 16, x)) TH_LOG("%d: %s", i, gn_ctx_errmsg(ctx));
		/* One rank's sum is its own values, and only n of them. */
		for (k = 0; k < 3; k++)
			ASSERT_EQ((float)(i * 3 + k), x[k]) TH_LOG("%d[%d], %zu values", i, k, n);
	}
	/* Each allreduce went to its own id's tensor: one each. */
	for (i = 0; i < N; i++) {
		GN_OPTS(gn_stats, st);

		if (i % 3 == 0 && i % 6 != 0)
			continue;
		ASSERT_EQ(0, gn_stats_tensor(ctx, (uint32_t)i << 16, &st)) TH_LOG("%d", i);
		ASSERT_EQ(1, st.allreduces) TH_LOG("%d", i);
	}
	gn_ctx_close(ctx);
}

/* GN_CODEC_ISA picks the codec's kernels, and a CPU that lacks them refuses. */
TEST(codec_isa_from_env)
{
	GN_OPTS(gn_ctx_opts, o, .rank = 0, .world_size = 1,
		.peers = "127.0.0.1:29997", .flags = GN_CTX_INSECURE);
	struct gn_ctx *ctx;
	int isa;

	setenv("GN_CODEC_ISA", "avx9", 1);
	ASSERT_EQ(-EINVAL, gn_ctx_open(&o, &ctx));
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "GN_CODEC_ISA=avx9"));
	for (isa = 0; isa < GN_ISA_COUNT; isa++) {
		const char *name = gn_codec_isa_name(isa);

		setenv("GN_CODEC_ISA", name, 1);
		if (!gn_codec_isa_supported(isa)) {
			ksft_print_msg("%s: this CPU lacks it, refused\n", name);
			ASSERT_EQ(-EOPNOTSUPP, gn_ctx_open(&o, &ctx)) TH_LOG("%s", name);
			ASSERT_NE(NULL, strstr(gn_last_errmsg(), "lacks")) TH_LOG("%s", name);
			continue;
		}
		ASSERT_EQ(0, gn_ctx_open(&o, &ctx)) TH_LOG("%s: %s", name, gn_last_errmsg());
		ASSERT_EQ(isa, gn_codec_isa_default());
		gn_ctx_close(ctx);
	}
	unsetenv("GN_CODEC_ISA");
}

/*
 * A job of one rank: the result is the reference's (its own share,
 * through the owner's 3LC error feedback), and every misuse gets its
 * errno and a message that names what was wrong.
 */
TEST(single_rank_and_api_errors)
{
	GN_OPTS(gn_ctx_opts, o, .world_size = 1,
		.peers = "127.0.0.1:29998", .flags = GN_CTX_INSECURE);
	GN_OPTS(gn_tensor_opts, t, .id = 1, .elems = 1000);
	GN_OPTS(gn_stats, st);
	struct job_spec s = { .world = 1, .steps = 1, .ntensors = 1,
			      .elems = { 1000 }, .codec = { GN_CODEC_3LC },
			      .nan_rank = -1, .die_rank = -1 };
	struct gn_ctx *ctx = NULL;
	float x[1000], ref[1000];
	uint64_t hash[JOB_MAX_STEPS];

	ASSERT_EQ(0, gn_ctx_open(&o, &ctx)) TH_LOG("%s", gn_last_errmsg());
	ASSERT_NE(NULL, ctx);
	ASSERT_STREQ("", gn_last_errmsg());
	ASSERT_EQ(0, gn_ctx_rank(ctx));
	ASSERT_EQ(1, gn_ctx_world_size(ctx));
	ASSERT_EQ(0, gn_tensor_register(ctx, &t));

	ASSERT_EQ(-EEXIST, gn_tensor_register(ctx, &t));
	ASSERT_STREQ("tensor 1 is already registered", gn_ctx_errmsg(ctx));
	ASSERT_STREQ("tensor id already registered", gn_strerror(-EEXIST));
	t.id = 2;
	t.s = 2.5f;
	ASSERT_EQ(-EINVAL, gn_tensor_register(ctx, &t));
	ASSERT_NE(NULL, strstr(gn_ctx_errmsg(ctx),
			       "tensor 2: 3lc: s=2.5 is outside [1, 2)"))
		TH_LOG("%s", gn_ctx_errmsg(ctx));
	ASSERT_EQ(-ENOENT, gn_stats_tensor(ctx, 2, &st));
	t.s = 0;
	t.elems = 0;
	ASSERT_EQ(-EINVAL, gn_tensor_register(ctx, &t));
	ASSERT_NE(NULL, strstr(gn_ctx_errmsg(ctx), "tensor 2: bad options"));
	ASSERT_EQ(-ENOENT, gn_allreduce(ctx, 9, x));
	ASSERT_STREQ("tensor 9 is not registered", gn_ctx_errmsg(ctx));
	ASSERT_STREQ("no such tensor", gn_strerror(-ENOENT));
	ASSERT_EQ(-ENOENT, gn_allreduce_wait(ctx, 9));
	ASSERT_STREQ("tensor 9: no allreduce in flight", gn_ctx_errmsg(ctx));
	ASSERT_EQ(-EINVAL, gn_stats_peer(ctx, 1, &st));

	job_grad(x, 1000, 0, 0, 0);
	ASSERT_EQ(0, gn_allreduce_start(ctx, 1, x));
	ASSERT_EQ(-EBUSY, gn_allreduce_start(ctx, 1, x));
	ASSERT_NE(NULL, strstr(gn_ctx_errmsg(ctx), "tensor 1: allreduce already in flight"))
		TH_LOG("%s", gn_ctx_errmsg(ctx));
	ASSERT_EQ(0, gn_allreduce_wait(ctx, 1)) TH_LOG("%s", gn_ctx_errmsg(ctx));
	ASSERT_STREQ("", gn_ctx_errmsg(ctx));
	job_reference(&s, 0, NULL, hash, ref);
	ASSERT_EQ(0, memcmp(ref, x, sizeof(x)));
	ASSERT_EQ(hash[0], job_fnv(x, 1000));
	ASSERT_EQ(-EINVAL, gn_allreduce_wait(ctx, 1));
	ASSERT_STREQ("tensor 1: no allreduce in flight", gn_ctx_errmsg(ctx));
	ASSERT_EQ(0, gn_stats_tensor(ctx, 1, &st));
	ASSERT_EQ(1, st.allreduces);
	ASSERT_EQ(0, gn_stats_ctx(ctx, &st));
	ASSERT_EQ(1, st.allreduces);
	gn_ctx_close(ctx);

	/* Unknown trailing option bytes are refused. */
	{
		struct {
			struct gn_ctx_opts o;
			uint64_t future;
		} big = { .o = o, .future = 1 };

		big.o.sz = sizeof(big);
		ctx = (void *)1;
		ASSERT_EQ(-E2BIG, gn_ctx_open(&big.o, &ctx));
		ASSERT_EQ(NULL, ctx);
		ASSERT_NE(NULL, strstr(gn_last_errmsg(), "gn_ctx_opts: sz"))
			TH_LOG("%s", gn_last_errmsg());
	}
}

/*
 * Re-registration, as a DDP job does when it rebuilds its buckets: tensor
 * 100 is allreduced with n1 values, unregistered and registered again with
 * n2 values (fresh error feedback), then allreduced again. Both phases
 * equal the reference bit for bit on every rank. With faults, packets of
 * the first registration are duplicated and held back past the rebuild;
 * they must be dropped (the results would differ if one were added).
 */
#define REREG_STEPS 3

struct rereg_out {
	int status[JOB_MAX_RANKS];
	int rc[JOB_MAX_RANKS][2][REREG_STEPS];
	uint64_t hash[JOB_MAX_RANKS][2][REREG_STEPS];
	int enoent[JOB_MAX_RANKS], ebusy[JOB_MAX_RANKS], unreg[JOB_MAX_RANKS];
	int eexist[JOB_MAX_RANKS];
	uint64_t replays[JOB_MAX_RANKS];
	char msg[JOB_MAX_RANKS][320];
};

FIXTURE(rereg) {
	struct rereg_out *out;
};

FIXTURE_VARIANT(rereg) {
	int world;
	size_t n1, n2;
	const char *faults;
	bool nan;	/* rank 0's first step after re-registering: a NaN */
};

FIXTURE_VARIANT_ADD(rereg, r2_grow) {
	.world = 2, .n1 = 5003, .n2 = 140001 };
FIXTURE_VARIANT_ADD(rereg, r2_same_size_faults) {
	.world = 2, .n1 = 70001, .n2 = 70001,
	.faults = "loss=0.05,dup=0.2,reorder=0.3,seed=9" };
/* Rank 0's NaN abort reaches the others before they register again. */
FIXTURE_VARIANT_ADD(rereg, r3_nan_first_step) {
	.world = 3, .n1 = 5003, .n2 = 7001, .nan = true };
FIXTURE_VARIANT_ADD(rereg, r3_shrink_faults) {
	.world = 3, .n1 = 140001, .n2 = 3001,
	.faults = "loss=0.05,dup=0.2,reorder=0.3,seed=4" };

FIXTURE_SETUP(rereg)
{
	self->out = mmap(NULL, sizeof(*self->out), PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->out);
	memset(self->out, 0, sizeof(*self->out));
}

FIXTURE_TEARDOWN(rereg)
{
	munmap(self->out, sizeof(*self->out));
}

static int rereg_phase(struct gn_ctx *ctx, struct rereg_out *out, int rank,
		       int phase, size_t n, bool nan)
{
	GN_OPTS(gn_tensor_opts, t, .id = 100, .elems = n, .codec = GN_CODEC_3LC,
		.flags = GN_TENSOR_AVERAGE);
	float *x = malloc(n * sizeof(float));
	int step, r;

	if (!x || gn_tensor_register(ctx, &t))
		return -1;
	out->eexist[rank] = gn_tensor_register(ctx, &t);
	for (step = 0; step < REREG_STEPS; step++) {
		job_grad(x, n, rank, 0, step);
		if (nan && rank == 0 && phase == 1 && step == 0)
			x[n / 2] = NAN;
		r = gn_allreduce_start(ctx, 100, x);
		if (!r && step == 1 && phase == 0)
			out->ebusy[rank] = gn_tensor_unregister(ctx, 100);
		if (!r)
			r = gn_allreduce_wait(ctx, 100);
		out->rc[rank][phase][step] = r;
		if (r)
			snprintf(out->msg[rank], sizeof(out->msg[rank]), "%s",
				 gn_ctx_errmsg(ctx));
		out->hash[rank][phase][step] = job_fnv(x, n);
	}
	free(x);
	return 0;
}

static void rereg_rank(const FIXTURE_VARIANT(rereg) *v, struct rereg_out *out,
		       int rank, const char *peers, uint32_t job)
{
	GN_OPTS(gn_ctx_opts, o, .rank = rank, .world_size = v->world,
		.peers = peers, .timeout_ms = 5000, .job_id = job,
		.step_timeout_ms = 5000,
		.flags = GN_CTX_INSECURE | GN_CTX_RANK);
	struct gn_stats st = { .sz = sizeof(st) };
	struct gn_ctx *ctx;

	if (v->faults)
		setenv("GN_TEST_FAULTS", v->faults, 1);
	if (gn_ctx_open(&o, &ctx)) {
		snprintf(out->msg[rank], sizeof(out->msg[rank]), "%s", gn_last_errmsg());
		_exit(2);
	}
	out->enoent[rank] = gn_tensor_unregister(ctx, 99);
	if (rereg_phase(ctx, out, rank, 0, v->n1, v->nan))
		_exit(3);
	out->unreg[rank] = gn_tensor_unregister(ctx, 100);
	if (out->unreg[rank])
		snprintf(out->msg[rank], sizeof(out->msg[rank]), "%s", gn_ctx_errmsg(ctx));
	/* Rank 0 comes back at once, the others a little later. */
	if (rank)
		usleep(20000);
	if (rereg_phase(ctx, out, rank, 1, v->n2, v->nan))
		_exit(4);
	gn_stats_ctx(ctx, &st);
	out->replays[rank] = st.drops[GN_DROP_REPLAY];
	gn_ctx_close(ctx);
	_exit(0);
}

TEST_F(rereg, unregister_and_register_again)
{
	static int calls;
	struct job_spec s = { .world = variant->world, .steps = REREG_STEPS,
			      .ntensors = 1, .codec = { GN_CODEC_3LC },
			      .flags = { GN_TENSOR_AVERAGE } };
	int base = 20000 + (int)((getpid() * 137 + calls * 16 + 8) % 40000);
	uint32_t job = (uint32_t)getpid() * 1000 + 500 + (uint32_t)calls++;
	uint64_t hash[2][JOB_MAX_STEPS];
	bool skip[2][JOB_MAX_STEPS] = { { false }, { variant->nan } };
	pid_t pid[JOB_MAX_RANKS];
	char peers[512] = "";
	int r, ph, step;
	float *res;

	for (r = 0; r < variant->world; r++) {
		char one[48];

		snprintf(one, sizeof(one), "%s127.0.0.1:%d", r ? "," : "", base + r);
		strcat(peers, one);
	}
	for (r = 0; r < variant->world; r++) {
		pid[r] = fork();
		if (pid[r] == 0)
			rereg_rank(variant, self->out, r, peers, job);
	}
	for (r = 0; r < variant->world; r++)
		waitpid(pid[r], &self->out->status[r], 0);

	ASSERT_EQ(0, gn_codec_isa_set_default(GN_ISA_SCALAR));
	for (ph = 0; ph < 2; ph++) {
		s.elems[0] = ph ? variant->n2 : variant->n1;
		res = malloc(s.elems[0] * sizeof(float));
		job_reference(&s, 0, skip[ph], hash[ph], res);
		free(res);
	}
	for (r = 0; r < variant->world; r++) {
		ASSERT_EQ(0, self->out->status[r]) TH_LOG("rank %d: %s", r, self->out->msg[r]);
		ASSERT_EQ(-ENOENT, self->out->enoent[r]);
		ASSERT_EQ(-EEXIST, self->out->eexist[r]);
		ASSERT_EQ(-EBUSY, self->out->ebusy[r]);
		ASSERT_EQ(0, self->out->unreg[r]) TH_LOG("rank %d: %s", r, self->out->msg[r]);
		for (ph = 0; ph < 2; ph++) {
			for (step = 0; step < REREG_STEPS; step++) {
				ASSERT_EQ(skip[ph][step] ? -EDOM : 0,
					  self->out->rc[r][ph][step]) {
					TH_LOG("rank %d phase %d step %d: %s", r, ph,
					       step, self->out->msg[r]);
				}
				if (skip[ph][step])
					continue;
				ASSERT_EQ(hash[ph][step], self->out->hash[r][ph][step]) {
					TH_LOG("rank %d phase %d step %d differs from the reference",
					       r, ph, step);
				}
			}
		}
		if (variant->faults)
			TH_LOG("rank %d dropped %llu stale or early packets", r,
			       (unsigned long long)self->out->replays[r]);
	}
}

TEST_HARNESS_MAIN
