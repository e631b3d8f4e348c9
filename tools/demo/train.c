// SPDX-License-Identifier: MIT
/*
 * train.c - gradnet-demo: data-parallel training of a small MLP on the
 * digits data set, once with dense gradients and once with a codec (3LC by
 * default). Each rank is a process with its own gradnet context on
 * loopback; every step each rank's gradients are averaged with
 * gn_allreduce(). --codec SPEC names the codec, "name" or
 * "name:key=value,...", handed to libgradnet as GN_CODEC: the library, not
 * the demo, knows which codecs and parameters exist, and its refusal is
 * printed. With --local the ranks
 * are threads of one process with an exact in-process average instead
 * (and, with --simulate-3lc, a simulation of the 3LC allreduce built from
 * the codec), for studying the training without the network.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "digits.h"
#include "gn_reducer.h"
#include "rank.h"
#include "reducer.h"

#define DEMO_TEST_IMAGES 360
#define DEMO_LOG_TIMES 5

struct demo_opts {
	struct demo_cfg cfg;
	unsigned int ranks;
	const char *data;
	int local;
	int simulate_3lc;
	int no_bucket;
	int shared_scale;
	const char *codec;
	float s;
	int s_given;
	int quiet;
};

struct demo_data {
	struct digits train;
	struct digits test;
};

/* What one rank thread is given and gives back. */
struct rank_thread {
	pthread_t tid;
	const struct demo_opts *o;
	const struct demo_data *d;
	unsigned int rank;
	struct demo_reducer *red;
	struct demo_result res;
	int ret;
};

/* A phase's outcome, as rank 0 saw it. */
struct phase_result {
	struct demo_result res;
	struct local_traffic traffic;
	double seconds;
	int replicas_agree;
	/* gradnet phases: all ranks together */
	struct gn_stats total, steady;
};

/* What each rank process reports back, in shared memory. */
struct rank_report {
	int ret;
	struct demo_result res;
	struct gn_stats total, steady;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *rank_main(void *arg)
{
	struct rank_thread *rt = arg;

	rt->ret = demo_rank_train(&rt->o->cfg, &rt->d->train, &rt->d->test,
				  rt->rank, rt->o->ranks, rt->red, &rt->res);
	return NULL;
}

static int run_threads(const struct demo_opts *o, const struct demo_data *d,
		       struct local_group *g, struct rank_thread *rt,
		       struct phase_result *pr)
{
	unsigned int r, started;
	int ret = 0;

	for (started = 0; started < o->ranks; started++) {
		rt[started] = (struct rank_thread){
			.o = o, .d = d, .rank = started,
			.red = local_group_reducer(g, started),
		};
		ret = -pthread_create(&rt[started].tid, NULL, rank_main,
				      &rt[started]);
		if (ret)
			break;
	}
	/* A group missing a thread would wait at its barrier forever. */
	if (ret) {
		fprintf(stderr, "gradnet-demo: cannot start rank %u: %s\n",
			started, strerror(-ret));
		exit(1);
	}
	for (r = 0; r < o->ranks; r++)
		pthread_join(rt[r].tid, NULL);
	pr->res = rt[0].res;
	pr->replicas_agree = 1;
	for (r = 0; r < o->ranks; r++) {
		if (rt[r].ret)
			return rt[r].ret;
		pr->replicas_agree &= rt[r].res.hash == rt[0].res.hash;
	}
	return 0;
}

static int run_phase(const struct demo_opts *o, const struct demo_data *d,
		     enum local_codec codec, const char *tag,
		     struct phase_result *pr)
{
	struct demo_opts po = *o;
	size_t elems[MLP_MAX_TENSORS];
	struct local_group *g;
	struct rank_thread *rt;
	unsigned int tensors;
	double t0;
	int ret;

	po.cfg.tag = tag;
	po.cfg.log_every = o->quiet ? 0 : (o->cfg.steps + DEMO_LOG_TIMES - 1) /
					  DEMO_LOG_TIMES;
	tensors = demo_shape(&po.cfg, NULL, elems);
	/* The steady state: traffic of the second half of the steps. */
	ret = local_group_create(&g, o->ranks, elems, tensors, codec, o->s,
				 o->cfg.steps / 2);
	if (ret)
		return ret;
	rt = calloc(o->ranks, sizeof(*rt));
	if (!rt) {
		local_group_destroy(g);
		return -ENOMEM;
	}
	t0 = now();
	ret = run_threads(&po, d, g, rt, pr);
	pr->seconds = now() - t0;
	local_group_traffic(g, &pr->traffic);
	free(rt);
	local_group_destroy(g);
	return ret;
}

static void add_stats(struct gn_stats *sum, const struct gn_stats *one)
{
	unsigned int k;

	sum->tx_packets += one->tx_packets;
	sum->raw_bytes += one->raw_bytes;
	sum->wire_bytes += one->wire_bytes;
	sum->stream_bytes += one->stream_bytes;
	sum->ctl_bytes += one->ctl_bytes;
	sum->ctl_packets += one->ctl_packets;
	sum->retransmits += one->retransmits;
	for (k = 0; k < GN_DROP_COUNT; k++)
		sum->drops[k] += one->drops[k];
}

/* One rank process: its own gradnet context, the training loop, report. */
static void rank_process(const struct demo_opts *o, const struct demo_data *d,
			 const struct gn_ctx_opts *co, int codec,
			 struct rank_report *rep)
{
	size_t elems[MLP_MAX_TENSORS];
	unsigned int tensors = demo_shape(&o->cfg, NULL, elems);
	struct gn_reducer g;

	rep->ret = gn_reducer_open(&g, co, codec, elems, tensors,
				   o->cfg.steps / 2,
				   o->no_bucket ? 0 : o->shared_scale ?
				   GN_BUCKET_SHARED_SCALE | 1 : 1);
	if (rep->ret)
		_exit(1);
	rep->ret = demo_rank_train(&o->cfg, &d->train, &d->test,
				   (unsigned int)co->rank, o->ranks, &g.red,
				   &rep->res);
	gn_reducer_traffic(&g, &rep->total, &rep->steady);
	gn_reducer_close(&g);
	_exit(rep->ret ? 1 : 0);
}

/*
 * A phase over gradnet: one process per rank on 127.0.0.1, a fresh job
 * key and job id, the steady-state traffic counted from half way.
 * @codec: an enum gn_codec, or GN_CODEC_DEFAULT for the one GN_CODEC names;
 * @phase: 0 or 1, so the two phases use different ports and job ids.
 */
static int run_gradnet_phase(const struct demo_opts *o,
			     const struct demo_data *d, int codec, int phase,
			     const char *tag, struct phase_result *pr)
{
	size_t bytes = o->ranks * sizeof(struct rank_report);
	struct rank_report *rep = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
				       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int base = 20000 + (int)(getpid() % 2000) * 16 + phase * 8;
	struct demo_opts po = *o;
	char peers[64 * 24] = "";
	uint8_t key[16];
	unsigned int r;
	double t0;
	int ret = 0;

	if (rep == MAP_FAILED)
		return -errno;
	if (getrandom(key, sizeof(key), 0) != sizeof(key))
		return -EIO;
	po.cfg.tag = tag;
	po.cfg.log_every = o->quiet ? 0 : (o->cfg.steps + DEMO_LOG_TIMES - 1) /
					  DEMO_LOG_TIMES;
	for (r = 0; r < o->ranks; r++) {
		char one[24];

		snprintf(one, sizeof(one), "%s127.0.0.1:%d", r ? "," : "",
			 base + (int)r);
		strcat(peers, one);
	}
	fflush(stdout);
	t0 = now();
	for (r = 0; r < o->ranks; r++) {
		GN_OPTS(gn_ctx_opts, co, .rank = (int)r, .world_size = (int)o->ranks,
			.peers = peers, .key = key, .key_len = sizeof(key),
			.job_id = (uint64_t)getpid() * 2 + (uint64_t)phase,
			.codec = codec, .s = o->s_given ? o->s : 0.0f,
			.flags = GN_CTX_RANK);

		rep[r].ret = -ECHILD;
		if (fork() == 0)
			rank_process(&po, d, &co, codec, &rep[r]);
	}
	while (wait(NULL) > 0)
		;
	pr->seconds = now() - t0;
	memset(&pr->traffic, 0, sizeof(pr->traffic));
	memset(&pr->total, 0, sizeof(pr->total));
	memset(&pr->steady, 0, sizeof(pr->steady));
	pr->res = rep[0].res;
	pr->replicas_agree = 1;
	for (r = 0; r < o->ranks; r++) {
		if (rep[r].ret)
			ret = rep[r].ret;
		pr->replicas_agree &= rep[r].res.hash == rep[0].res.hash;
		add_stats(&pr->total, &rep[r].total);
		add_stats(&pr->steady, &rep[r].steady);
	}
	munmap(rep, bytes);
	return ret;
}

static double percent(const struct demo_result *r)
{
	return 100.0 * r->correct / r->total;
}

static void print_phase(const struct demo_opts *o, const char *tag,
			const struct phase_result *pr)
{
	printf("[%s] test accuracy %.2f%% (%u/%u) after %u steps, %.2f s, %s\n",
	       tag, percent(&pr->res), pr->res.correct, pr->res.total,
	       o->cfg.steps, pr->seconds,
	       pr->replicas_agree ? "all replicas bit-identical" :
				    "REPLICAS DIFFER");
	if (!pr->traffic.wire_bytes)
		return;
	printf("[%s] steps %u..%u sent %.3f MB for %.3f MB of float32: %.1fx%s\n",
	       tag, o->cfg.steps / 2, o->cfg.steps - 1,
	       pr->traffic.wire_bytes / 1e6, pr->traffic.raw_bytes / 1e6,
	       (double)pr->traffic.raw_bytes / pr->traffic.wire_bytes,
	       strcmp(tag, "dense") ? " (codec payload only, no packet headers)" :
				      "");
}

static void print_gradnet(const struct demo_opts *o, const char *tag,
			  const struct phase_result *pr)
{
	const struct gn_stats *st = &pr->steady;

	printf("[%s] on the wire, all ranks, all steps: %.3f MB of data packets (headers and tags included) + %.3f MB of acknowledgements and control (%.1f%% of data, %llu packets), %llu retransmissions\n",
	       tag, pr->total.wire_bytes / 1e6, pr->total.ctl_bytes / 1e6,
	       100.0 * (double)pr->total.ctl_bytes / (double)pr->total.wire_bytes,
	       (unsigned long long)pr->total.ctl_packets,
	       (unsigned long long)pr->total.retransmits);
	printf("[%s] steady state, steps %u..%u: %.3f MB of data packets for %.3f MB of float32: %.1fx; the codec's own chunk streams %.1fx (wire / streams %.3f); acknowledgements and control %.1f%% of data\n",
	       tag, o->cfg.steps / 2, o->cfg.steps - 1,
	       st->wire_bytes / 1e6, st->raw_bytes / 1e6,
	       (double)st->raw_bytes / (double)st->wire_bytes,
	       (double)st->raw_bytes / (double)st->stream_bytes,
	       (double)st->wire_bytes / (double)st->stream_bytes,
	       100.0 * (double)st->ctl_bytes / (double)st->wire_bytes);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gradnet-demo [--ranks N] [--steps K] [--batch B] [--lr X] [--seed S]\n"
		"                    [--hidden H] [--momentum M] [--weight-decay W]\n"
		"                    [--codec SPEC] [--s S] [--local [--simulate-3lc]]\n"
		"                    [--data digits.csv.gz] [--no-bucket | --shared-scale] [--quiet]\n"
		"  ranks are processes exchanging gradients with gradnet on 127.0.0.1,\n"
		"  the model's tensors fused into one bucket (--no-bucket: one gradnet\n"
		"  tensor each; --shared-scale: one 3LC scale may span tensors); --local\n"
		"  runs them as threads with an in-process average. The run is dense,\n"
		"  then the codec SPEC (default 3lc): \"name\" or \"name:key=value,...\",\n"
		"  as GN_CODEC takes it\n");
}

/* A letter or digit; after the first, '-' and '_' too. */
static int is_name_char(char c, size_t at)
{
	return isalnum((unsigned char)c) || (at && (c == '_' || c == '-'));
}

/*
 * codec_spec_check() - the syntax of a codec spec, "name" or
 * "name:key=value,...": names of letters, digits, '-' and '_', each value
 * non-empty. Which codecs and parameters exist is the library's to say.
 * Returns 0, or -EINVAL after printing what is wrong.
 */
static int codec_spec_check(const char *spec)
{
	const char *p = spec, *item;
	size_t n;

	for (n = 0; is_name_char(p[n], n); n++)
		;
	p += n;
	if (!n || (*p && *p != ':'))
		goto out_bad;
	if (!*p)
		return 0;
	do {
		item = ++p;
		for (n = 0; is_name_char(p[n], n); n++)
			;
		if (!n || p[n] != '=' || !p[n + 1] || p[n + 1] == ',')
			goto out_item;
		p += n + 1 + strcspn(p + n + 1, ",");
	} while (*p == ',');
	return 0;

out_item:
	fprintf(stderr, "gradnet-demo: --codec %s: \"%.*s\" is not key=value\n",
		spec, (int)strcspn(item, ","), item);
	return -EINVAL;
out_bad:
	fprintf(stderr, "gradnet-demo: --codec %s: not \"name\" or \"name:key=value,...\" (names of letters, digits, - and _)\n",
		spec);
	return -EINVAL;
}

/*
 * codec_try() - whether libgradnet takes GN_CODEC=@spec: a one-rank
 * context registers a small tensor with it, before any training, so a
 * codec or a parameter the library refuses ends the demo at once, with
 * the library's message.
 */
static int codec_try(const char *spec)
{
	GN_OPTS(gn_ctx_opts, co, .rank = 0, .world_size = 1,
		.peers = "127.0.0.1:0", .flags = GN_CTX_RANK | GN_CTX_INSECURE);
	GN_OPTS(gn_tensor_opts, to, .id = 1, .elems = 64,
		.codec = GN_CODEC_DEFAULT);
	struct gn_ctx *ctx;
	int ret;

	if (setenv("GN_CODEC", spec, 1))
		return -errno;
	ret = gn_ctx_open(&co, &ctx);
	if (ret) {
		fprintf(stderr, "gradnet-demo: --codec %s: %s\n", spec,
			gn_last_errmsg());
		return ret;
	}
	ret = gn_tensor_register(ctx, &to);
	if (ret)
		fprintf(stderr, "gradnet-demo: --codec %s: %s\n", spec,
			gn_ctx_errmsg(ctx));
	gn_ctx_close(ctx);
	return ret;
}

static int parse_opts(int argc, char **argv, struct demo_opts *o)
{
	static const struct option longopts[] = {
		{ "ranks", required_argument, NULL, 'n' },
		{ "steps", required_argument, NULL, 'k' },
		{ "batch", required_argument, NULL, 'b' },
		{ "lr", required_argument, NULL, 'l' },
		{ "seed", required_argument, NULL, 'S' },
		{ "hidden", required_argument, NULL, 'H' },
		{ "momentum", required_argument, NULL, 'm' },
		{ "weight-decay", required_argument, NULL, 'w' },
		{ "simulate-3lc", no_argument, NULL, '3' },
		{ "local", no_argument, NULL, 'L' },
		{ "no-bucket", no_argument, NULL, 'B' },
		{ "shared-scale", no_argument, NULL, 'C' },
		{ "s", required_argument, NULL, 's' },
		{ "codec", required_argument, NULL, 'c' },
		{ "data", required_argument, NULL, 'd' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'n': o->ranks = strtoul(optarg, NULL, 0); break;
		case 'k': o->cfg.steps = strtoul(optarg, NULL, 0); break;
		case 'b': o->cfg.batch = strtoul(optarg, NULL, 0); break;
		case 'l': o->cfg.lr = strtof(optarg, NULL); break;
		case 'S': o->cfg.seed = strtoull(optarg, NULL, 0); break;
		case 'H': o->cfg.hidden = strtoul(optarg, NULL, 0); break;
		case 'm': o->cfg.momentum = strtof(optarg, NULL); break;
		case 'w': o->cfg.weight_decay = strtof(optarg, NULL); break;
		case '3': o->simulate_3lc = 1; break;
		case 'L': o->local = 1; break;
		case 'B': o->no_bucket = 1; break;
		case 'C': o->shared_scale = 1; break;
		case 's': o->s = strtof(optarg, NULL); o->s_given = 1; break;
		case 'c': o->codec = optarg; break;
		case 'd': o->data = optarg; break;
		case 'q': o->quiet = 1; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -EINVAL;
		}
	}
	if (optind != argc || !o->ranks || o->ranks > 64 || !o->cfg.steps ||
	    !o->cfg.batch || o->cfg.batch % o->ranks || !o->cfg.hidden ||
	    o->cfg.hidden > MLP_MAX_WIDTH || !(o->cfg.lr > 0) ||
	    !(o->cfg.momentum >= 0 && o->cfg.momentum < 1) ||
	    !(o->cfg.weight_decay >= 0 && o->cfg.weight_decay < 1) ||
	    !(o->s >= 1 && o->s < 2)) {
		fprintf(stderr, "gradnet-demo: bad arguments (the batch must be a multiple of the ranks, 1 <= s < 2)\n");
		usage(stderr);
		return -EINVAL;
	}
	return codec_spec_check(o->codec);
}

static int load_data(const struct demo_opts *o, struct demo_data *d)
{
	struct digits all;
	char err[512];
	int ret;

	ret = digits_load(o->data, &all, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "gradnet-demo: %s\n", err);
		return ret;
	}
	/* The split is fixed, whatever --seed says, so runs compare. */
	ret = digits_split(&all, DEMO_TEST_IMAGES, 0, &d->train, &d->test);
	digits_free(&all);
	if (ret)
		fprintf(stderr, "gradnet-demo: cannot split the data: %s\n",
			strerror(-ret));
	return ret;
}

static void print_setup(const struct demo_opts *o, const struct demo_data *d)
{
	unsigned int width[DEMO_HIDDEN_LAYERS + 2], l;
	size_t elems[MLP_MAX_TENSORS], params = 0;
	unsigned int tensors = demo_shape(&o->cfg, width, elems);

	for (l = 0; l < tensors; l++)
		params += elems[l];
	printf("gradnet-demo: digits %u train / %u test images, MLP %u",
	       d->train.n, d->test.n, width[0]);
	for (l = 1; l < DEMO_HIDDEN_LAYERS + 2; l++)
		printf("-%u", width[l]);
	printf(" (%zu parameters in %u tensors)\n", params, tensors);
	printf("gradnet-demo: %u ranks, %u steps, batch %u (%u per rank), lr %g cosine to 0, momentum %g, weight decay %g, seed %llu\n",
	       o->ranks, o->cfg.steps, o->cfg.batch, o->cfg.batch / o->ranks,
	       o->cfg.lr, o->cfg.momentum, o->cfg.weight_decay,
	       (unsigned long long)o->cfg.seed);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct demo_opts o = {
		.cfg = {
			.steps = 1000, .batch = 64, .hidden = 128,
			.lr = 0.05f, .momentum = 0.9f, .weight_decay = 3e-3f,
			.seed = 1,
		},
		.ranks = 4,
		.data = DIGITS_PATH,
		.codec = "3lc",
		.s = 1.0f,
	};
	struct phase_result dense, tlc;
	struct demo_data d;
	char tag[96];
	int ret;

	if (parse_opts(argc, argv, &o) || (!o.local && codec_try(o.codec)) ||
	    load_data(&o, &d))
		return 1;
	print_setup(&o, &d);
	if (!o.local) {
		if (o.s_given)
			snprintf(tag, sizeof(tag), "%s s=%.2f", o.codec, o.s);
		else
			snprintf(tag, sizeof(tag), "%s", o.codec);
		printf("gradnet-demo: %u processes, gradnet over UDP on 127.0.0.1, authenticated, %s\n",
		       o.ranks, o.no_bucket ? "one gradnet tensor per model tensor" :
		       o.shared_scale ? "the model's tensors in one bucket, scales shared" :
		       "the model's tensors in one bucket");
		ret = run_gradnet_phase(&o, &d, GN_CODEC_NONE, 0, "dense", &dense);
		if (ret)
			goto out_fail;
		print_phase(&o, "dense", &dense);
		print_gradnet(&o, "dense", &dense);
		/* The ranks' contexts take the spec from GN_CODEC (codec_try()). */
		ret = run_gradnet_phase(&o, &d, GN_CODEC_DEFAULT, 1, tag, &tlc);
		if (ret)
			goto out_fail;
		print_phase(&o, tag, &tlc);
		print_gradnet(&o, tag, &tlc);
		printf("%s minus dense: %+.2f percentage points; %s sent %.1fx fewer data bytes\n",
		       tag, percent(&tlc.res) - percent(&dense.res), tag,
		       (double)dense.total.wire_bytes / (double)tlc.total.wire_bytes);
		goto out;
	}
	ret = run_phase(&o, &d, LOCAL_DENSE, "dense", &dense);
	if (ret)
		goto out_fail;
	print_phase(&o, "dense", &dense);
	if (o.simulate_3lc) {
		snprintf(tag, sizeof(tag), "3lc-sim s=%.2f", o.s);
		ret = run_phase(&o, &d, LOCAL_TLC, tag, &tlc);
		if (ret)
			goto out_fail;
		print_phase(&o, tag, &tlc);
		printf("3LC minus dense: %+.2f percentage points\n",
		       percent(&tlc.res) - percent(&dense.res));
	}
out:
	digits_free(&d.train);
	digits_free(&d.test);
	return 0;

out_fail:
	fprintf(stderr, "gradnet-demo: training failed: %s\n", strerror(-ret));
	digits_free(&d.train);
	digits_free(&d.test);
	return 1;
}
