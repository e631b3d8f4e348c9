// SPDX-License-Identifier: MIT
/*
 * bench_mac.c - `gradnet-bench mac`: packet authentication speed, the tag
 * gradnet uses against SipHash-2-4 over the whole packet, on packet sizes
 * of a 1500 and a 9000 byte MTU.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gradnet/wire.h>
#include "bench.h"

static volatile uint64_t sink;

int bench_mac(int argc, char **argv)
{
	static const size_t sizes[] = { 64, 1472, 8972 };
	static struct gn_mac mac;
	uint8_t key[GN_MAC_KEY_LEN] = "0123456789abcdef";
	uint64_t k[2] = { 1, 2 };
	size_t total = 64u << 20, i, z;
	uint8_t *buf = bench_alloc(total);
	int json = argc > 1 && !strcmp(argv[1], "--json");

	for (i = 0; i < total; i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	gn_mac_init(&mac, key);
	if (!json)
		printf("%-8s %14s %14s %8s\n", "packet", "gradnet GB/s",
		       "siphash GB/s", "ratio");
	else
		printf("[");
	for (z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		size_t len = sizes[z], n = total / len, p;
		double tag_gbps, sip_gbps;

		BENCH_TIME(tag_gbps, n * len, 0.3,
			   for (p = 0; p < n; p++)
				   sink += gn_mac_tag(&mac, buf + p * len, len));
		BENCH_TIME(sip_gbps, n * len, 0.3,
			   for (p = 0; p < n; p++)
				   sink += gn_siphash(k, buf + p * len, len));
		if (json)
			printf("%s{\"packet\": %zu, \"mac_gbps\": %.3f, \"siphash_gbps\": %.3f}",
			       z ? ", " : "", len, tag_gbps, sip_gbps);
		else
			printf("%-8zu %14.2f %14.2f %8.2f\n", len, tag_gbps,
			       sip_gbps, tag_gbps / sip_gbps);
	}
	if (json)
		printf("]\n");
	free(buf);
	return 0;
}
