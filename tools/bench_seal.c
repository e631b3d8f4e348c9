// SPDX-License-Identifier: MIT
/*
 * bench_seal.c - `gradnet-bench seal`: what sealing costs one core, per
 * packet size: gn_wire_seal() with the body encrypted and in the clear
 * (GN_ENCRYPT=0), gn_wire_open(), and memcpy() of the same bytes, the
 * copy the dense path makes of every value anyway. The packets stream
 * through 64 MiB, out of the caches, as a step's do. Opening is timed
 * with a seal before it (it decrypts in place) and reported less the
 * seal's time.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

#include <gradnet/wire.h>
#include "bench.h"

#define SEAL_TOTAL (64u << 20)

/*
 * Packets of @len bytes in @buf, numbered from 1: DATA headers, or ACK
 * headers where a DATA packet would not fit (the smallest rows).
 */
static void packets_init(uint8_t *buf, size_t len, size_t n)
{
	bool data = len > GN_WIRE_DATA_OVERHEAD;
	struct gn_wire_hdr h = {
		.magic = GN_WIRE_MAGIC, .version = GN_WIRE_VERSION,
		.type = data ? GN_PKT_DATA : GN_PKT_ACK, .src = 1, .job = 7,
		.body_len = (uint16_t)(len - GN_WIRE_TAG - GN_WIRE_HDR_LEN -
				       (data ? GN_WIRE_DATA_LEN : GN_WIRE_ACK_LEN)),
	};
	size_t p;

	for (p = 0; p < n; p++) {
		h.pn = p + 1;
		gn_wire_hdr_put(&h, buf + p * len);
	}
}

/* TSC ticks per second, over 0.2 s of the clock bench_now() reads. */
static double tsc_hz(void)
{
	double t0 = bench_now(), t;
	unsigned long long c0 = __rdtsc();

	while ((t = bench_now()) - t0 < 0.2)
		;
	return (double)(__rdtsc() - c0) / (t - t0);
}

int bench_seal(int argc, char **argv)
{
	static const size_t sizes[] = { 64, 128, 256, 512, 1472, 4096, 8972 };
	uint8_t key[GN_SEAL_KEY_LEN] = "0123456789abcdef0123456789abcde";
	uint8_t *buf = bench_alloc(SEAL_TOTAL), *copy = bench_alloc(SEAL_TOTAL);
	int json = argc > 1 && !strcmp(argv[1], "--json");
	double hz = tsc_hz();
	size_t i, z;

	for (i = 0; i < SEAL_TOTAL; i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	if (!json)
		printf("# TSC %.3f GHz; c/B: TSC cycles per packet byte, sealing\n"
		       "%-8s %10s %10s %10s %10s %8s %8s\n", hz / 1e9, "packet",
		       "seal GB/s", "open GB/s", "clear GB/s", "memcpy", "seal c/B",
		       "seal/cp");
	else
		printf("{\"tsc_ghz\": %.3f, \"rows\": [", hz / 1e9);
	for (z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		size_t len = sizes[z], n = SEAL_TOTAL / len, body = len - GN_WIRE_TAG;
		double seal, open, clear, cp;
		size_t p, bad = 0;

		packets_init(buf, len, n);
		BENCH_TIME(seal, n * len, 0.3,
			   for (p = 0; p < n; p++)
				   bad += !gn_wire_seal(key, buf + p * len, body,
							p + 1, 0));
		BENCH_TIME(open, n * len, 0.3,
			   for (p = 0; p < n; p++) {
				   /* Sealed again each round: opening decrypts. */
				   gn_wire_seal(key, buf + p * len, body, p + 1, 0);
				   bad += !!gn_wire_open(key, buf + p * len, len);
			   });
		BENCH_TIME(clear, n * len, 0.3,
			   for (p = 0; p < n; p++)
				   bad += !gn_wire_seal(key, buf + p * len, body,
							p + 1, GN_SEAL_CLEAR));
		BENCH_TIME(cp, n * len, 0.3,
			   for (p = 0; p < n; p++)
				   memcpy(copy + p * len, buf + p * len, len));
		if (bad)
			bench_die("%zu packets of %zu bytes failed", bad, len);
		/* Open ran a seal too: take the seal's share out. */
		open = 1.0 / (1.0 / open - 1.0 / seal);
		if (json)
			printf("%s{\"packet\": %zu, \"seal_gbps\": %.3f, \"open_gbps\": %.3f, "
			       "\"clear_gbps\": %.3f, \"memcpy_gbps\": %.3f, \"seal_cpb\": %.3f}",
			       z ? ", " : "", len, seal, open, clear, cp,
			       hz / 1e9 / seal);
		else
			printf("%-8zu %10.2f %10.2f %10.2f %10.2f %8.2f %8.1f\n", len,
			       seal, open, clear, cp, hz / 1e9 / seal, cp / seal);
	}
	if (json)
		printf("]}\n");
	free(buf);
	free(copy);
	return 0;
}
