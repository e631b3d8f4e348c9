// SPDX-License-Identifier: MIT
/*
 * digits.c - load the digits CSV (64 pixel values 0..16, then the label,
 * per line) through zlib, and split it into train and test sets.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "digits.h"
#include "rng.h"

#define DIGITS_MAX_PIXEL 16.0
#define DIGITS_MAX_ROWS 1000000u

static int fail(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return ret;
}

static int digits_alloc(struct digits *d, uint32_t n)
{
	d->x = malloc((size_t)n * DIGITS_FEATURES * sizeof(*d->x) + 1);
	d->y = malloc(n + 1);
	d->n = n;
	if (d->x && d->y)
		return 0;
	digits_free(d);
	return -ENOMEM;
}

static int digits_grow(struct digits *d, uint32_t *cap)
{
	uint32_t n = *cap ? *cap * 2 : 2048;
	float *x;
	uint8_t *y;

	if (n > DIGITS_MAX_ROWS)
		return -EFBIG;
	x = realloc(d->x, (size_t)n * DIGITS_FEATURES * sizeof(*x));
	if (!x)
		return -ENOMEM;
	d->x = x;
	y = realloc(d->y, n);
	if (!y)
		return -ENOMEM;
	d->y = y;
	*cap = n;
	return 0;
}

/* Parse one CSV line into @x and @y. Return: 0, or -EBADMSG. */
static int parse_row(const char *line, float *x, uint8_t *y)
{
	const char *p = line;
	char *end;
	double v;
	int i;

	for (i = 0; i <= DIGITS_FEATURES; i++) {
		v = strtod(p, &end);
		if (end == p)
			return -EBADMSG;
		p = end;
		if (i < DIGITS_FEATURES) {
			if (*p++ != ',' || !(v >= 0 && v <= DIGITS_MAX_PIXEL))
				return -EBADMSG;
			x[i] = (float)(v / DIGITS_MAX_PIXEL);
		} else {
			if (v < 0 || v >= DIGITS_CLASSES || v != (int)v)
				return -EBADMSG;
			*y = (uint8_t)v;
		}
	}
	while (*p == '\r' || *p == '\n' || *p == ' ')
		p++;
	return *p ? -EBADMSG : 0;
}

static int read_rows(gzFile gz, const char *path, struct digits *d,
		     char *err, size_t errlen)
{
	char line[1024];
	uint32_t cap = 0;
	int ret;

	while (gzgets(gz, line, sizeof(line))) {
		if (line[0] == '\n' || line[0] == '\0')
			continue;
		if (d->n == cap && (ret = digits_grow(d, &cap)))
			return fail(err, errlen, ret, "%s: too many rows", path);
		if (parse_row(line, d->x + (size_t)d->n * DIGITS_FEATURES,
			      &d->y[d->n]))
			return fail(err, errlen, -EBADMSG,
				    "%s: line %u is not 64 pixels in 0..16 and a label in 0..9",
				    path, d->n + 1);
		d->n++;
	}
	if (!gzeof(gz))
		return fail(err, errlen, -EIO, "%s: %s", path,
			    gzerror(gz, &ret));
	if (!d->n)
		return fail(err, errlen, -EBADMSG, "%s: no rows", path);
	return 0;
}

/**
 * digits_load() - read the digits data set
 * @path: digits.csv.gz (DIGITS_PATH), gzip-compressed or plain
 * @d: out, every image in file order; free with digits_free()
 * @err: out, why it failed
 * @errlen: bytes at @err
 *
 * Return: 0; -ENOENT (or another -errno) if the file cannot be opened, the
 * message naming the Debian package that provides it; -EBADMSG for a
 * malformed line; -EIO for a damaged gzip stream; -ENOMEM.
 */
int digits_load(const char *path, struct digits *d, char *err, size_t errlen)
{
	gzFile gz;
	int ret;

	memset(d, 0, sizeof(*d));
	errno = 0;
	gz = gzopen(path, "rb");
	if (!gz) {
		ret = errno ? -errno : -ENOMEM;
		return fail(err, errlen, ret,
			    "cannot open %s: %s (the digits data set comes with Debian's %s package: apt-get install %s)",
			    path, strerror(-ret), DIGITS_PACKAGE, DIGITS_PACKAGE);
	}
	ret = read_rows(gz, path, d, err, errlen);
	gzclose(gz);
	if (ret)
		digits_free(d);
	return ret;
}

static void copy_row(const struct digits *from, uint32_t i, struct digits *to)
{
	memcpy(to->x + (size_t)to->n * DIGITS_FEATURES,
	       from->x + (size_t)i * DIGITS_FEATURES,
	       DIGITS_FEATURES * sizeof(*from->x));
	to->y[to->n++] = from->y[i];
}

/*
 * Mark @n_test images for the test set: shuffle, order by class (stably),
 * then take every (n / n_test)-th image of that order, so each class is
 * represented in proportion, to within one image.
 */
static void mark_test(const struct digits *all, const uint32_t *perm,
		      uint32_t n_test, uint8_t *is_test)
{
	uint32_t start[DIGITS_CLASSES + 1] = { 0 };
	uint32_t c, i, p;

	for (i = 0; i < all->n; i++)
		start[all->y[i] + 1]++;
	for (c = 0; c < DIGITS_CLASSES; c++)
		start[c + 1] += start[c];
	for (i = 0; i < all->n; i++) {
		p = start[all->y[perm[i]]]++;
		is_test[perm[i]] = (uint64_t)(p + 1) * n_test / all->n >
				   (uint64_t)p * n_test / all->n;
	}
}

/**
 * digits_split() - a stratified, seeded train/test split
 * @all: the data set
 * @n_test: images for the test set, below @all->n
 * @seed: fixes which images go where, and their order
 * @train: out, the other images in shuffled order; free with digits_free()
 * @test: out, @n_test images in shuffled order; free with digits_free()
 *
 * Return: 0; -EINVAL for a bad @n_test; -ENOMEM.
 */
int digits_split(const struct digits *all, uint32_t n_test, uint64_t seed,
		 struct digits *train, struct digits *test)
{
	struct demo_rng rng = { seed };
	uint8_t *is_test = NULL;
	uint32_t *perm = NULL;
	uint32_t i;
	int ret = -ENOMEM;

	memset(train, 0, sizeof(*train));
	memset(test, 0, sizeof(*test));
	if (!n_test || n_test >= all->n)
		return -EINVAL;
	perm = malloc(all->n * sizeof(*perm));
	is_test = malloc(all->n);
	if (!perm || !is_test)
		goto out_free;
	for (i = 0; i < all->n; i++)
		perm[i] = i;
	demo_rng_shuffle(&rng, perm, all->n);
	mark_test(all, perm, n_test, is_test);
	if (digits_alloc(train, all->n - n_test) ||
	    digits_alloc(test, n_test))
		goto out_free_sets;
	train->n = 0;
	test->n = 0;
	for (i = 0; i < all->n; i++)
		copy_row(all, perm[i], is_test[perm[i]] ? test : train);
	ret = 0;
	goto out_free;

out_free_sets:
	digits_free(train);
	digits_free(test);
out_free:
	free(is_test);
	free(perm);
	return ret;
}

/**
 * digits_free() - free a set's arrays
 * @d: a set from digits_load() or digits_split(); may be all zero
 */
void digits_free(struct digits *d)
{
	free(d->x);
	free(d->y);
	memset(d, 0, sizeof(*d));
}
