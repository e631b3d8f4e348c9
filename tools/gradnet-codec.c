// SPDX-License-Identifier: MIT
/*
 * gradnet-codec.c - any registered codec on files, for scripts and for
 * looking at what a codec does to real gradients:
 *
 *   gradnet-codec encode [--codec SPEC] [-s S] [--seed K] [--step T] [--ef FILE] IN.f32 OUT
 *	IN.f32 (raw little-endian float32) as one chunk stream of the codec
 *	(its word, then its slice over the whole chunk; for 3LC the stream
 *	of gn_tlc_encode()); with --ef, FILE is the float32 error-feedback
 *	buffer, zeros if it does not exist, and is replaced by the new one
 *	once OUT is written. K keys the generator of stochastic codecs;
 *	T is the step (CLT-k's warm-up; the encoder leads the chunk).
 *   gradnet-codec decode [--codec SPEC] -n N IN OUT.f32
 *	the chunk stream IN of N values, decoded as float32.
 *   gradnet-codec packets [--codec SPEC] [-s S] [--seed K] [--mtu M]
 *	[--chunk C] [--span K] IN.f32...
 *	each IN.f32 a step of one tensor: encoded in chunks of C values
 *	(default 65536) with error feedback carried from step to step,
 *	cut into packets as lib/collective/pack.c cuts them at MTU M
 *	(default 1500, IPv4), through SPEC's entropy stage if it has one
 *	(--span K: its raw budget in packet bodies, default and most 4; 1
 *	codes each slice as the codec cuts it), every packet decoded back
 *	alone and checked against the codec's own decode. Prints per step
 *	and in total: values, the codec's stream bytes, those streams each
 *	coded whole by zstd (SPEC's level, else 1), packets, coded packets,
 *	body and wire (UDP payload) bytes, and raw bytes per wire byte.
 *   gradnet-codec list
 *	every codec and its parameters (the entropy stage's are every
 *	codec's).
 *
 * Outputs are written to a temporary file and renamed into place, so a
 * failure never leaves a half-written output or error buffer.
 * Exit: 0 done, 1 error, 2 usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gradnet/codec.h>
#include <gradnet/wire.h>

#include "codec/codec.h"
#include "codec/entropy/entropy.h"
#include "spec.h"

#define EXIT_USAGE 2

static const char *cmd = "gradnet-codec";

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "%s: ", cmd);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: gradnet-codec encode [--codec SPEC] [-s S] [--seed K] [--step T] [--ef FILE] IN.f32 OUT\n"
		"       gradnet-codec decode [--codec SPEC] -n N IN OUT.f32\n"
		"       gradnet-codec packets [--codec SPEC] [-s S] [--seed K] [--mtu M]\n"
		"                     [--chunk C] [--span K] IN.f32...   (steps of a tensor)\n"
		"       gradnet-codec list   (the codecs and their parameters)\n"
		"       gradnet-codec isa    (the instruction sets this CPU runs)\n"
		"  SPEC: NAME[:KEY=VALUE,...], as GN_CODEC takes it (default 3lc)\n"
		"  S: 3LC's sparsity multiplier, 1 <= S < 2 (SPEC's s=S)\n"
		"  K: the generator's key for stochastic codecs (default 0)\n"
		"  T: steps before this one (cltk's warm-up; default 0)\n"
		"  --ef FILE: float32 error-feedback buffer, read (zeros if the\n"
		"             file does not exist) and replaced after encoding\n"
		"  N: number of values the stream holds\n"
		"  env GN_CODEC_ISA=scalar|avx2|avx512 forces the codec's kernels\n");
}

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt,
								 ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "%s: ", cmd);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	usage();
	return EXIT_USAGE;
}

/*
 * Read a whole file. Return: a malloc'd buffer (never NULL on success, even
 * for an empty file) with its size in *@len, or NULL with errno set.
 */
static void *read_file(const char *path, size_t *len)
{
	size_t cap = 1 << 16, got = 0;
	char *buf = malloc(cap), *more;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;
	ssize_t r;

	if (fd < 0 || !buf)
		goto out_err;
	for (;;) {
		if (got == cap) {
			more = realloc(buf, cap * 2);
			if (!more)
				goto out_err;
			buf = more;
			cap *= 2;
		}
		r = read(fd, buf + got, cap - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			goto out_err;
		if (!r)
			break;
		got += (size_t)r;
	}
	close(fd);
	*len = got;
	return buf;

out_err:
	err = errno ? errno : ENOMEM;
	if (fd >= 0)
		close(fd);
	free(buf);
	errno = err;
	return NULL;
}

/* A float32 file: its values and their count, or NULL after a message. */
static float *read_f32(const char *path, const char *what, size_t *n)
{
	size_t len;
	void *buf = read_file(path, &len);

	if (!buf) {
		say("%s %s: %s", what, path, strerror(errno));
		return NULL;
	}
	if (len % sizeof(float)) {
		say("%s %s: %zu bytes is not a whole number of float32 values",
		    what, path, len);
		free(buf);
		return NULL;
	}
	*n = len / sizeof(float);
	return buf;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/*
 * Replace @path by @len bytes: write a temporary file next to it, flush it
 * and rename it over @path, so readers see the old file or the new one.
 * Return: 0, or -errno after a message.
 */
static int write_file_atomic(const char *path, const char *what,
			     const void *buf, size_t len)
{
	size_t plen = strlen(path);
	char *tmp = malloc(plen + sizeof(".XXXXXX"));
	struct stat st;
	int fd, ret;

	if (!tmp) {
		say("%s %s: %s", what, path, strerror(ENOMEM));
		return -ENOMEM;
	}
	memcpy(tmp, path, plen);
	memcpy(tmp + plen, ".XXXXXX", sizeof(".XXXXXX"));
	fd = mkstemp(tmp);
	if (fd < 0) {
		ret = -errno;
		say("%s %s: cannot create a temporary file next to it: %s",
		    what, path, strerror(-ret));
		goto out_free;
	}
	/* mkstemp() makes it 0600; give it what a new file would get. */
	if (stat(path, &st) == 0) {
		fchmod(fd, st.st_mode & 07777);
	} else {
		mode_t mask = umask(0);

		umask(mask);
		fchmod(fd, 0666 & ~mask);
	}
	ret = write_all(fd, buf, len);
	if (!ret && fsync(fd))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret) {
		say("%s %s: %s", what, path, strerror(-ret));
		unlink(tmp);
	}
out_free:
	free(tmp);
	return ret;
}

/* A whole number in C's notation (0x.. too). Return: false if it is none. */
static bool number_of(const char *s, unsigned long long *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return !errno && end != s && !*end && *s != '-';
}

/* Parse a size for -n. Return: false if it is not a whole number. */
static bool parse_size(const char *s, size_t *v)
{
	unsigned long long u;
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	u = strtoull(s, &end, 10);
	if (errno || *end || u > SIZE_MAX / sizeof(float))
		return false;
	*v = (size_t)u;
	return true;
}

/* Say why encoding gave -EDOM: the first value that is not finite. */
static void explain_edom(const char *in, const float *x, const float *e,
			 size_t n, const char *ef)
{
	size_t i;

	for (i = 0; i < n; i++) {
		float t = x[i] + (e ? e[i] : 0.0f);

		if (isfinite(t))
			continue;
		if (!isfinite(x[i]))
			say("%s: value %zu is %g; only finite values can be encoded",
			    in, i, x[i]);
		else if (e && !isfinite(e[i]))
			say("%s: error-feedback value %zu is %g", ef, i, e[i]);
		else
			say("%s: value %zu plus its error feedback (%g + %g) "
			    "overflows", in, i, x[i], e ? e[i] : 0.0f);
		return;
	}
	say("%s: the codec's scale of these values overflows float32", in);
}

/*
 * The codec and every parameter from --codec and -s (3LC's s, added to
 * the spec), checked as a tensor of @n values in one chunk is (a stream
 * has no packet limit). Return: 0, or EXIT_USAGE after a message.
 */
static int codec_of(const char *spec_arg, const char *s_arg, size_t n,
		    struct gn_codec_spec *out, const struct gn_codec_ops **c)
{
	const char *text = spec_arg ? spec_arg : "3lc";
	struct gn_codec_spec spec;
	char msg[256], full[512];
	char *end;

	if (s_arg) {
		errno = 0;
		strtof(s_arg, &end);
		if (errno || end == s_arg || *end)
			return usage_error("-s '%s' is not a number", s_arg);
		snprintf(full, sizeof(full), "%s%ss=%s", text,
			 strchr(text, ':') ? "," : ":", s_arg);
		text = full;
	}
	if (gn_spec_parse(text, &spec, msg, sizeof(msg)) ||
	    gn_codec_resolve(&spec, &spec, out, msg, sizeof(msg)))
		return usage_error("%s%s%s%s", s_arg ? "-s " : "",
				   s_arg ? s_arg : "", s_arg ? ": " : "", msg);
	*c = gn_codec_find(out->codec);
	if (gn_codec_params_check(*c, &out->p, n > 0xffffffffu ? 0xffffffffu :
						  (u32)n, 0xffffffffu, msg,
				  sizeof(msg)))
		return usage_error("%s%s%s%s", s_arg ? "-s " : "",
				   s_arg ? s_arg : "", s_arg ? ": " : "", msg);
	return 0;
}

static int cmd_encode(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "codec", required_argument, NULL, 'c' },
		{ "seed", required_argument, NULL, 'k' },
		{ "step", required_argument, NULL, 't' },
		{ "ef", required_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *ef = NULL, *s_arg = NULL, *spec_arg = NULL, *in, *out;
	unsigned long long seed = 0, step = 0;
	const struct gn_codec_ops *codec;
	struct gn_codec_spec spec;
	struct gn_codec_call call = { .p = &spec.p, .world = 1 };
	float *x = NULL, *e = NULL, *e_out = NULL;
	size_t n, ne;
	u64 cap;
	uint8_t *stream = NULL, *scratch = NULL;
	int c, ret = 1;
	long len;

	while ((c = getopt_long(argc, argv, "s:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			s_arg = optarg;
			break;
		case 'c':
			spec_arg = optarg;
			break;
		case 'k':
			if (!number_of(optarg, &seed))
				return usage_error("--seed '%s' is not a number",
						   optarg);
			break;
		case 't':
			if (!number_of(optarg, &step) || step > 0xffffffffu)
				return usage_error("--step '%s' is not a step number (0 to 2^32 - 1)",
						   optarg);
			break;
		case 'e':
			ef = optarg;
			break;
		case 'h':
			usage();
			return 0;
		default:
			usage();
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 2)
		return usage_error("encode needs IN.f32 and OUT");
	in = argv[optind];
	out = argv[optind + 1];
	if (!s_arg && !spec_arg)
		return usage_error("encode needs -s S (3LC) or --codec SPEC");
	/* The parameters first: a bad one is a usage error, files aside. */
	ret = codec_of(spec_arg, s_arg, 1, &spec, &codec);
	if (ret)
		return ret;
	ret = 1;

	x = read_f32(in, "input", &n);
	if (!x)
		goto out;
	if (!n || n > 0xffffffffu) {
		say("input %s: %zu values; a chunk stream holds 1 to 2^32 - 1",
		    in, n);
		goto out;
	}
	if (codec_of(spec_arg, s_arg, n, &spec, &codec)) {
		ret = EXIT_USAGE;
		goto out;
	}
	if (codec->flags & GN_CODEC_EF_REDUCE) {
		if (ef && access(ef, F_OK) == 0) {
			e = read_f32(ef, "error-feedback file", &ne);
			if (!e)
				goto out;
			if (ne != n) {
				say("error-feedback file %s holds %zu values, input %s holds %zu",
				    ef, ne, in, n);
				goto out;
			}
		} else if (ef && errno != ENOENT) {
			say("error-feedback file %s: %s", ef, strerror(errno));
			goto out;
		} else {
			e = calloc(n, sizeof(float));
		}
		e_out = malloc(n * sizeof(float));
		if (!e || !e_out) {
			say("%s: %s", in, strerror(ENOMEM));
			goto out;
		}
	} else if (ef) {
		say("--ef %s: codec %s keeps no error feedback", ef, codec->name);
		ret = EXIT_USAGE;
		goto out;
	}
	call.seed = seed;
	call.step = (u32)step;
	call.ef_len = n;
	cap = gn_codec_stream_bound(codec, &spec.p, (u32)n);
	stream = cap < SIZE_MAX ? malloc((size_t)cap) : NULL;
	scratch = malloc(codec->scratch(&spec.p, (u32)n) + 1);
	if (!stream || !scratch) {
		say("%s: %s", in, strerror(ENOMEM));
		goto out;
	}
	len = gn_codec_stream_encode(codec, &call, x, e, e_out, (u32)n, scratch,
				     stream, (size_t)cap);
	if (len == -EDOM) {
		explain_edom(in, x, e, n, ef ? ef : "(zeros)");
		goto out;
	}
	if (len < 0) {
		say("%s: encoding failed: %s", in, strerror((int)-len));
		goto out;
	}
	/* The stream first: an error buffer without its stream is useless. */
	if (write_file_atomic(out, "output", stream, (size_t)len))
		goto out;
	if (ef && write_file_atomic(ef, "error-feedback file", e_out,
				    n * sizeof(float)))
		goto out;
	ret = 0;
out:
	free(x);
	free(e);
	free(e_out);
	free(stream);
	free(scratch);
	return ret;
}

static int cmd_decode(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "codec", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *n_arg = NULL, *spec_arg = NULL, *in, *out;
	const struct gn_codec_ops *codec;
	struct gn_codec_spec spec;
	struct gn_codec_call call = { .p = &spec.p, .world = 1 };
	uint8_t *stream = NULL;
	float *acc = NULL;
	size_t n, len;
	int c, ret = 1, err;
	char units[64];

	while ((c = getopt_long(argc, argv, "n:h", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			n_arg = optarg;
			break;
		case 'c':
			spec_arg = optarg;
			break;
		case 'h':
			usage();
			return 0;
		default:
			usage();
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 2)
		return usage_error("decode needs IN and OUT.f32");
	in = argv[optind];
	out = argv[optind + 1];
	if (!n_arg)
		return usage_error("decode needs -n N");
	if (!parse_size(n_arg, &n) || !n || n > 0xffffffffu)
		return usage_error("-n '%s' is not a value count (1 to 2^32 - 1)",
				   n_arg);
	ret = codec_of(spec_arg, NULL, n, &spec, &codec);
	if (ret)
		return ret;
	ret = 1;

	stream = read_file(in, &len);
	if (!stream) {
		say("stream %s: %s", in, strerror(errno));
		goto out;
	}
	acc = calloc(n, sizeof(float));
	if (!acc) {
		say("-n %zu: %s", n, strerror(ENOMEM));
		goto out;
	}
	err = gn_codec_stream_decode(codec, &call, stream, len, acc, (u32)n);
	if (err == -EBADMSG) {
		snprintf(units, sizeof(units), "%u %s", codec->units((u32)n),
			 codec->units((u32)n) == n ? "values" : "groups");
		say("stream %s: malformed, or not a %s chunk of %zu values (%zu bytes; "
		    "a chunk stream is the codec's 4-byte word and its slice "
		    "covering exactly %s)",
		    in, codec->name, n, len, units);
		goto out;
	}
	if (err) {
		say("stream %s: %s", in, strerror(-err));
		goto out;
	}
	if (write_file_atomic(out, "output", acc, n * sizeof(float)))
		goto out;
	ret = 0;
out:
	free(stream);
	free(acc);
	return ret;
}

/* ---- packets: a tensor's steps as the packer cuts them ------------------ */

/* What the packets of the steps so far cost, and what their streams were. */
struct pk_sum {
	unsigned long long values, stream, stream_z, pkts, coded, body, wire;
};

struct pk_job {
	const struct gn_codec_ops *c;
	struct gn_codec_params *p;
	struct gn_codec_call call;
	u32 chunk, data_cap, whole_cap;
	struct gn_entropy_enc *z;	/* NULL: the codec's slices as they are */
	struct gn_entropy_dec dec;
	uint8_t *scratch, *stream, *zbuf, *pkt;
	size_t zcap;
	float *out, *ref;
	u32 *hint;			/* [chunk]: as the tensor's in pack.c */
};

/*
 * One packet of chunk [@x, @len) from unit @at into @j->pkt, decoded back
 * into @j->out as a receiver would. Return: its body's bytes, or -1.
 */
static long pk_cut(struct pk_job *j, const float *x, u32 len, u32 aux, u32 at,
		   u32 cap, u32 *next, u32 *used, bool *coded, u64 off)
{
	const uint8_t *body = j->pkt;
	long n, b;

	*coded = false;
	n = j->z ? gn_entropy_slice(j->c, j->p, j->scratch, aux, x, len, at, j->z,
				    j->pkt, cap, used, coded, next) :
		   j->c->slice(j->p, j->scratch, aux, x, len, at, j->pkt, cap, used);
	if (n < 0)
		return -1;
	b = n;
	if (*coded) {
		b = gn_entropy_open(&j->dec, j->c, j->p, len, j->pkt, (u32)n);
		if (b < 0)
			return -1;
		body = j->dec.raw;
	}
	if (j->c->check_slice(j->p, len, at, *used, aux, body, (u32)b))
		return -1;
	j->c->decode(&j->call, j->out + off, len, at, *used, aux, body, (u32)b);
	return n;
}

/*
 * A chunk's message, shaped as gn_pack() shapes it: one WHOLE packet when
 * the codec's bound fits one, else DATA packets (a stage's single one sent
 * WHOLE). Return: 0, or -1 when a packet did not decode to the codec's own.
 */
static int pk_chunk(struct pk_job *j, const float *x, u32 len, u32 aux, u64 off,
		    struct pk_sum *s)
{
	u32 *hint = &j->hint[off / j->chunk];
	u32 units = j->c->units(len), at = 0, used, next, npk = 0;
	u32 whole = j->c->whole_bytes(j->p, j->scratch, aux, len) <= j->whole_cap;
	unsigned long long body = 0;
	bool coded;
	long n;

	next = j->z ? (*hint ? *hint : j->z->raw_max) : 0;
	while (at < units) {
		n = pk_cut(j, x, len, aux, at, whole ? j->whole_cap : j->data_cap,
			   &next, &used, &coded, off);
		if (n < 0 || (whole && used != units))
			return -1;
		if (!npk && !whole)
			*hint = next;
		body += (unsigned long long)n;
		s->coded += coded;
		at += used;
		npk++;
	}
	s->pkts += npk;
	s->body += body;
	s->wire += body + (whole || (j->z && npk == 1) ? GN_WIRE_WHOLE_OVERHEAD :
			   (unsigned long long)npk * GN_WIRE_DATA_OVERHEAD);
	return 0;
}

/* A step: chunk by chunk, its stream, packets and decode. Return: 0 or -1. */
static int pk_step(struct pk_job *j, const float *x, float *e_in, float *e_out,
		   size_t n, const char *in, struct pk_sum *s)
{
	bool ef = j->c->flags & GN_CODEC_EF_REDUCE;
	int level = (int)j->p->stage[GN_STAGE_LEVEL];
	size_t off, zl;
	u32 aux, used, len;
	long sl;
	int r;

	for (off = 0; off < n; off += len) {
		len = (u32)(n - off < j->chunk ? n - off : j->chunk);
		r = j->c->encode(&j->call, x + off, ef ? e_in + off : NULL,
				 ef ? e_out + off : NULL, len, len, off, j->scratch,
				 j->c->scratch(j->p, len), &aux);
		if (r) {
			say("%s: encoding failed: %s", in, strerror(-r));
			return -1;
		}
		sl = j->c->slice(j->p, j->scratch, aux, x + off, len, 0, j->stream,
				 (u32)j->c->bound(j->p, len), &used);
		if (sl < 0)
			return -1;
		zl = ZSTD_compress(j->zbuf, j->zcap, j->stream, (size_t)sl,
				   level ? level : 1);
		s->stream += j->c->stream_extra + (unsigned long long)sl;
		s->stream_z += j->c->stream_extra +
			       (ZSTD_isError(zl) || zl > (size_t)sl ? (size_t)sl : zl);
		j->c->decode(&j->call, j->ref + off, len, 0, used, aux, j->stream,
			     (u32)sl);
		if (pk_chunk(j, x + off, len, aux, off, s)) {
			say("%s: a packet of the chunk at %zu did not decode to the codec's slice",
			    in, off);
			return -1;
		}
	}
	s->values += n;
	if (memcmp(j->out, j->ref, n * sizeof(float))) {
		say("%s: the packets decode to other values than the codec's stream",
		    in);
		return -1;
	}
	return 0;
}

static void pk_print(const char *name, const struct pk_sum *s)
{
	printf("%-44s %9llu %9llu %9llu %6llu %6llu %9llu %9llu %8.1f\n", name,
	       s->values, s->stream, s->stream_z, s->pkts, s->coded, s->body,
	       s->wire, (double)s->values * 4 / (double)s->wire);
}

static int cmd_packets(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "codec", required_argument, NULL, 'c' },
		{ "seed", required_argument, NULL, 'k' },
		{ "mtu", required_argument, NULL, 'm' },
		{ "chunk", required_argument, NULL, 'C' },
		{ "span", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *s_arg = NULL, *spec_arg = NULL;
	unsigned long long mtu = 1500, chunk = 65536, span = GN_ENTROPY_SPAN;
	unsigned long long seed = 0;
	struct gn_codec_spec spec;
	struct pk_job j = { 0 };
	struct pk_sum tot = { 0 };
	float *x = NULL, *e = NULL, *e2 = NULL, *t;
	void *zmem = NULL, *dmem = NULL;
	size_t n = 0, nx, sz;
	u32 raw_max;
	int c, i, ret = 1;

	while ((c = getopt_long(argc, argv, "s:h", opts, NULL)) != -1) {
		unsigned long long *v = c == 'm' ? &mtu : c == 'C' ? &chunk :
				       c == 'S' ? &span : &seed;

		switch (c) {
		case 's':
			s_arg = optarg;
			break;
		case 'c':
			spec_arg = optarg;
			break;
		case 'k':
		case 'm':
		case 'C':
		case 'S':
			if (!number_of(optarg, v))
				return usage_error("'%s' is not a whole number", optarg);
			break;
		case 'h':
			usage();
			return 0;
		default:
			usage();
			return EXIT_USAGE;
		}
	}
	if (mtu < 576 || mtu > GN_WIRE_MAX_PKT + GN_WIRE_IPUDP)
		return usage_error("--mtu %llu: 576..%d", mtu,
				   GN_WIRE_MAX_PKT + GN_WIRE_IPUDP);
	if (!chunk || chunk > 1u << 24 || !span || span > GN_ENTROPY_SPAN)
		return usage_error("--chunk 1..2^24, --span 1..%d", GN_ENTROPY_SPAN);
	if (optind == argc)
		return usage_error("packets needs IN.f32 files, one per step");
	ret = codec_of(spec_arg, s_arg, chunk, &spec, &j.c);
	if (ret)
		return ret;
	ret = 1;
	j.p = &spec.p;
	j.chunk = (u32)chunk;
	j.data_cap = (u32)(mtu - GN_WIRE_IPUDP - GN_WIRE_DATA_OVERHEAD);
	j.whole_cap = (u32)(mtu - GN_WIRE_IPUDP - GN_WIRE_WHOLE_OVERHEAD);
	j.call = (struct gn_codec_call){ .p = &spec.p, .world = 1 };
	raw_max = gn_entropy_raw_max(j.whole_cap);
	sz = gn_entropy_dec_size(raw_max);
	dmem = aligned_alloc(64, sz);
	if (!dmem || gn_entropy_dec_init(&j.dec, dmem, sz, raw_max))
		goto out_oom;
	if (gn_entropy_on(&spec.p)) {
		static struct gn_entropy_enc z;
		u32 zmax = (u32)span * j.whole_cap;

		sz = gn_entropy_enc_size(zmax, spec.p.stage[GN_STAGE_LEVEL]);
		zmem = aligned_alloc(64, sz);
		if (!zmem || gn_entropy_enc_init(&z, zmem, sz, zmax,
						 spec.p.stage[GN_STAGE_LEVEL]))
			goto out_oom;
		j.z = &z;
	}
	j.scratch = malloc(j.c->scratch(&spec.p, j.chunk) + 1);
	j.stream = malloc(j.c->bound(&spec.p, j.chunk) + 1);
	j.zcap = ZSTD_compressBound(j.c->bound(&spec.p, j.chunk));
	j.zbuf = malloc(j.zcap);
	j.pkt = malloc(GN_WIRE_MAX_PKT);
	if (!j.scratch || !j.stream || !j.zbuf || !j.pkt)
		goto out_oom;
	printf("# gradnet-codec packets --codec %s%s%s --mtu %llu --chunk %llu --span %llu (%d files)\n",
	       spec_arg ? spec_arg : "3lc", s_arg ? " -s " : "", s_arg ? s_arg : "",
	       mtu, chunk, span, argc - optind);
	printf("%-44s %9s %9s %9s %6s %6s %9s %9s %8s\n", "# step", "values",
	       "stream", "stream_z", "pkts", "coded", "body", "wire", "ratio");
	for (i = optind; i < argc; i++) {
		struct pk_sum s = { 0 };

		free(x);
		x = read_f32(argv[i], "input", &nx);
		if (!x)
			goto out;
		if (i == optind) {
			n = nx;
			e = calloc(n ? n : 1, sizeof(float));
			e2 = calloc(n ? n : 1, sizeof(float));
			j.out = calloc(n ? n : 1, sizeof(float));
			j.ref = calloc(n ? n : 1, sizeof(float));
			j.hint = calloc(n / j.chunk + 1, sizeof(u32));
			if (!e || !e2 || !j.out || !j.ref || !j.hint)
				goto out_oom;
		}
		if (!nx || nx != n) {
			say("input %s: %zu values, the first file has %zu", argv[i],
			    nx, n);
			goto out;
		}
		j.call.seed = seed + (unsigned long long)(i - optind);
		j.call.ef_len = n;
		if (pk_step(&j, x, e, e2, n, argv[i], &s))
			goto out;
		t = e;
		e = e2;
		e2 = t;
		pk_print(strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i], &s);
		tot.values += s.values;
		tot.stream += s.stream;
		tot.stream_z += s.stream_z;
		tot.pkts += s.pkts;
		tot.coded += s.coded;
		tot.body += s.body;
		tot.wire += s.wire;
	}
	pk_print("total", &tot);
	ret = 0;
	goto out;
out_oom:
	say("%s", strerror(ENOMEM));
out:
	free(x);
	free(e);
	free(e2);
	free(j.out);
	free(j.ref);
	free(j.hint);
	free(j.scratch);
	free(j.stream);
	free(j.zbuf);
	free(j.pkt);
	free(zmem);
	free(dmem);
	return ret;
}

/* Every codec, its flags and its parameters with defaults and ranges. */
static int cmd_list(void)
{
	const struct gn_codec_ops *c;
	char v[32];
	u32 i, k;

	for (i = 0; (c = gn_codec_at(i)); i++) {
		printf("%s (%u)%s%s\n", c->name, c->id,
		       c->flags & GN_CODEC_EF_REDUCE ? " error-feedback" : "",
		       c->flags & GN_CODEC_STOCHASTIC ? " stochastic" : "");
		for (k = 0; k < c->nparams; k++) {
			const struct gn_codec_param *d = &c->params[k];

			gn_codec_param_text(d, d->def, v, sizeof(v));
			printf("  %s=%s: %s\n", d->name, v, d->what);
		}
	}
	printf("every codec's entropy stage:\n");
	for (k = 0; k < gn_stage_nparams; k++) {
		const struct gn_codec_param *d = &gn_stage_params[k];

		gn_codec_param_text(d, d->def, v, sizeof(v));
		printf("  %s=%s: %s\n", d->name, v, d->what);
	}
	return 0;
}

/* One line: every instruction set the CPU runs, narrowest first. */
static int cmd_isa(void)
{
	int isa;

	for (isa = 0; isa < GN_ISA_COUNT; isa++)
		if (gn_codec_isa_supported(isa))
			printf("%s%s", isa ? " " : "", gn_codec_isa_name(isa));
	printf("\n");
	return 0;
}

/* GN_CODEC_ISA, as libgradnet reads it; 0 or a message and EXIT_FAILURE. */
static int use_env_isa(void)
{
	const char *v = getenv("GN_CODEC_ISA");
	int r = gn_codec_isa_select(v);

	if (r == -EINVAL)
		say("GN_CODEC_ISA=%s: use scalar, avx2, avx512 or best", v);
	else if (r)
		say("GN_CODEC_ISA=%s: this CPU lacks %s", v, v);
	return r ? EXIT_FAILURE : 0;
}

int main(int argc, char **argv)
{
	int r;

	if (argc < 2) {
		usage();
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage();
		return 0;
	}
	if (!strcmp(argv[1], "isa"))
		return cmd_isa();
	if (!strcmp(argv[1], "list"))
		return cmd_list();
	r = use_env_isa();
	if (r)
		return r;
	if (!strcmp(argv[1], "encode")) {
		cmd = "gradnet-codec encode";
		return cmd_encode(argc - 1, argv + 1);
	}
	if (!strcmp(argv[1], "decode")) {
		cmd = "gradnet-codec decode";
		return cmd_decode(argc - 1, argv + 1);
	}
	if (!strcmp(argv[1], "packets")) {
		cmd = "gradnet-codec packets";
		return cmd_packets(argc - 1, argv + 1);
	}
	return usage_error("unknown command '%s'", argv[1]);
}
