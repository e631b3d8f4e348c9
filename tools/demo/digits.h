/* SPDX-License-Identifier: MIT */
/*
 * digits.h - scikit-learn's 8x8 handwritten digits (1797 images), read from
 * the copy Debian's python3-sklearn package installs, and a deterministic
 * stratified train/test split of it.
 */
#ifndef GN_DEMO_DIGITS_H
#define GN_DEMO_DIGITS_H

#include <stddef.h>
#include <stdint.h>

#define DIGITS_FEATURES 64
#define DIGITS_CLASSES 10
#define DIGITS_PATH \
	"/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
#define DIGITS_PACKAGE "python3-sklearn"

/*
 * struct digits - a set of labelled images.
 * @x: @n rows of DIGITS_FEATURES pixels scaled to [0, 1]
 * @y: @n labels, 0..DIGITS_CLASSES-1
 * @n: images
 */
struct digits {
	float *x;
	uint8_t *y;
	uint32_t n;
};

int digits_load(const char *path, struct digits *d, char *err, size_t errlen);
int digits_split(const struct digits *all, uint32_t n_test, uint64_t seed,
		 struct digits *train, struct digits *test);
void digits_free(struct digits *d);

#endif /* GN_DEMO_DIGITS_H */
