// SPDX-License-Identifier: MIT
/*
 * gradnet-codec.c - the 3LC codec on files, for scripts and for looking at
 * what the codec does to real gradients:
 *
 *   gradnet-codec encode -s S [--ef FILE] IN.f32 OUT
 *	IN.f32 (raw little-endian float32) as one chunk stream (gn_tlc_encode);
 *	with --ef, FILE is the float32 error-feedback buffer, zeros if it does
 *	not exist, and is replaced by the new one once OUT is written.
 *   gradnet-codec decode -n N IN OUT.f32
 *	the chunk stream IN of N values, dequantized (q*M) as float32.
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
		"usage: gradnet-codec encode -s S [--ef FILE] IN.f32 OUT\n"
		"       gradnet-codec decode -n N IN OUT.f32\n"
		"       gradnet-codec isa    (the instruction sets this CPU runs)\n"
		"  S: sparsity multiplier, 1 <= S < 2\n"
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

/* Say why gn_tlc_encode() gave -EDOM: the first value that is not finite. */
static void explain_edom(const char *in, const float *x, const float *e,
			 size_t n, const char *ef, float s)
{
	size_t i;

	for (i = 0; i < n; i++) {
		float t = x[i] + e[i];

		if (isfinite(t))
			continue;
		if (!isfinite(x[i]))
			say("%s: value %zu is %g; only finite values can be encoded",
			    in, i, x[i]);
		else if (!isfinite(e[i]))
			say("%s: error-feedback value %zu is %g", ef, i, e[i]);
		else
			say("%s: value %zu plus its error feedback (%g + %g) "
			    "overflows", in, i, x[i], e[i]);
		return;
	}
	say("%s: the scale M = %g * max|x + e| overflows float32", in, s);
}

static int cmd_encode(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "ef", required_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *ef = NULL, *s_arg = NULL, *in, *out;
	float *x = NULL, *e = NULL, s;
	size_t n, ne, cap;
	uint8_t *stream = NULL;
	int c, ret = 1;
	char *end;
	long len;

	while ((c = getopt_long(argc, argv, "s:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			s_arg = optarg;
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
	if (!s_arg)
		return usage_error("encode needs -s S");
	errno = 0;
	s = strtof(s_arg, &end);
	if (errno || end == s_arg || *end)
		return usage_error("-s '%s' is not a number", s_arg);
	if (!(s >= 1.0f && s < 2.0f))
		return usage_error("-s %s: the sparsity multiplier must be "
				   "at least 1 and below 2", s_arg);

	x = read_f32(in, "input", &n);
	if (!x)
		goto out;
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
		e = calloc(n ? n : 1, sizeof(float));
		if (!e) {
			say("%s: %s", in, strerror(ENOMEM));
			goto out;
		}
	}

	cap = gn_tlc_encode_bound(n);
	stream = malloc(cap);
	if (!stream) {
		say("%s: %s", in, strerror(ENOMEM));
		goto out;
	}
	len = gn_tlc_encode(x, e, n, s, stream, cap);
	if (len == -EDOM) {
		explain_edom(in, x, e, n, ef ? ef : "(zeros)", s);
		goto out;
	}
	if (len < 0) {
		say("%s: encoding failed: %s", in, strerror((int)-len));
		goto out;
	}
	/* The stream first: an error buffer without its stream is useless. */
	if (write_file_atomic(out, "output", stream, (size_t)len))
		goto out;
	if (ef && write_file_atomic(ef, "error-feedback file", e,
				    n * sizeof(float)))
		goto out;
	ret = 0;
out:
	free(x);
	free(e);
	free(stream);
	return ret;
}

static int cmd_decode(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *n_arg = NULL, *in, *out;
	uint8_t *stream = NULL;
	float *acc = NULL;
	size_t n, len;
	int c, ret = 1, err;

	while ((c = getopt_long(argc, argv, "n:h", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			n_arg = optarg;
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
	if (!parse_size(n_arg, &n))
		return usage_error("-n '%s' is not a value count", n_arg);

	stream = read_file(in, &len);
	if (!stream) {
		say("stream %s: %s", in, strerror(errno));
		goto out;
	}
	acc = calloc(n ? n : 1, sizeof(float));
	if (!acc) {
		say("-n %zu: %s", n, strerror(ENOMEM));
		goto out;
	}
	err = gn_tlc_decode(stream, len, acc, n);
	if (err == -EBADMSG) {
		say("stream %s: malformed, or not a chunk of %zu values (%zu bytes; "
		    "a chunk stream is a 4-byte scale and zero-run coded groups "
		    "covering exactly %zu groups)",
		    in, n, len, gn_tlc_groups(n));
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
	return usage_error("unknown command '%s'", argv[1]);
}
