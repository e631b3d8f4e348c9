// SPDX-License-Identifier: MIT
/*
 * ef_identity.c - checks files written by gradnet-codec against the
 * error-feedback identity of the specification, bit for bit:
 * e_new = (x + e_old) - q*M in float32, where q*M is the decoded value.
 * Used by codec_cli.sh.
 *
 * usage: ef_identity X.f32 E_OLD.f32|- DECODED.f32 E_NEW.f32
 * ("-" for an all-zero E_OLD). Exit: 0 holds, 1 does not, 2 bad files.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float *load(const char *path, size_t *n)
{
	float *buf = NULL;
	long size;
	FILE *f = fopen(path, "rb");

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) || size % 4)
		goto out;
	buf = calloc((size_t)size / 4 + 1, sizeof(float));
	if (buf && fread(buf, 1, (size_t)size, f) != (size_t)size) {
		free(buf);
		buf = NULL;
	}
	*n = (size_t)size / 4;
out:
	fclose(f);
	return buf;
}

static uint32_t bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

int main(int argc, char **argv)
{
	size_t n[4] = { 0 }, i, bad = 0, nonzero = 0;
	float *f[4];
	int k;

	if (argc != 5) {
		fprintf(stderr, "usage: ef_identity X E_OLD|- DECODED E_NEW\n");
		return 2;
	}
	for (k = 0; k < 4; k++) {
		if (k == 1 && !strcmp(argv[2], "-"))
			continue;
		f[k] = load(argv[k + 1], &n[k]);
		if (!f[k]) {
			fprintf(stderr, "ef_identity: cannot read %s as float32\n",
				argv[k + 1]);
			return 2;
		}
	}
	if (!strcmp(argv[2], "-")) {
		n[1] = n[0];
		f[1] = calloc(n[0] + 1, sizeof(float));
	}
	for (k = 1; k < 4; k++) {
		if (n[k] != n[0]) {
			fprintf(stderr, "ef_identity: %s has %zu values, %s has %zu\n",
				argv[k + 1], n[k], argv[1], n[0]);
			return 2;
		}
	}
	for (i = 0; i < n[0]; i++) {
		float t = f[0][i] + f[1][i], want = t - f[2][i];

		nonzero += f[2][i] != 0.0f;
		if (bits(want) != bits(f[3][i]) && bad++ < 5)
			fprintf(stderr, "ef_identity: value %zu: x %a + e_old %a - "
				"decoded %a is %a, e_new is %a\n", i, f[0][i],
				f[1][i], f[2][i], want, f[3][i]);
	}
	printf("ef_identity: %zu values, %zu nonzero decoded, %zu mismatches\n",
	       n[0], nonzero, bad);
	for (k = 0; k < 4; k++)
		free(f[k]);
	return bad ? 1 : 0;
}
