// SPDX-License-Identifier: MIT
/*
 * stapsdt_test.c - gradnet-stat's ELF note reader (tools/stat/stapsdt.c)
 * on files built by tests/fuzz/stapsdt_elf.h, each in an exact-size
 * buffer (ASan sees any read past it), and on a real probed binary:
 *  - the sites of the six gradnet probes: offsets, argument registers,
 *    the count slot of a probe with fewer arguments; another provider's
 *    probe left out
 *  - a site relative to a .stapsdt.base that moved
 *  - a note whose provider string fills its descriptor to the end (the
 *    file a traced process could map to overflow a reader that trusts
 *    strlen()) is refused as malformed, without reading past it
 *  - every prefix of a good file, and sections or notes that claim more
 *    than the file holds, are refused, never read past
 *  - arguments that are not 64-bit registers are refused with the probe
 *  - GN_PROBED_BINARY (gn-rank-test) read from its descriptor: the six
 *
 * usage: stapsdt_test [harness options]
 *        stapsdt_test --write-overflow FILE   (for probed_file_test.sh)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stapsdt.h"
#include "stapsdt_elf.h"

#include "kselftest_harness.h"

#define SLOT_RDI		14
#define SLOT_RSI		13
#define SLOT_R12		3

/* The sites of @len bytes of @img, parsed from an exact-size copy. */
static int sites_of(const uint8_t *img, size_t len, struct usdt_site *s,
		    int cap, char *why)
{
	uint8_t *copy = malloc(len ? len : 1);
	struct gn_elf_mem m = { copy, len };
	struct elf_src src = { gn_elf_mem_read, &m, len };
	int n;

	if (!copy)
		return -ENOMEM;
	memcpy(copy, img, len);
	n = stapsdt_sites(&src, "gradnet", s, cap, why);
	free(copy);
	return n;
}

/* A file with the six probes, one of another provider between them. */
static size_t six_probes(uint8_t *img, size_t cap, const char *args2)
{
	uint8_t notes[2048];
	size_t len = gn_elf_six_probes(notes, sizeof(notes), args2);

	return len ? gn_elf_image(img, cap, notes, len) : 0;
}

TEST(six_sites)
{
	struct usdt_site s[8];
	char why[STAPSDT_WHY];
	uint8_t img[4096];
	size_t len = six_probes(img, sizeof(img), NULL);
	int n, i;

	ASSERT_NE(0, len);
	n = sites_of(img, len, s, 8, why);
	ASSERT_EQ(6, n) TH_LOG("%s", why);
	for (i = 0; i < 6; i++) {
		EXPECT_STREQ(gn_elf_probes[i][0], s[i].name);
		EXPECT_EQ((long)(GN_ELF_CODE + i), s[i].off);
	}
	EXPECT_EQ(9, s[0].nargs);
	EXPECT_EQ(SLOT_RDI, s[0].cookie & 31);
	EXPECT_EQ(SLOT_RSI, (s[0].cookie >> 5) & 31);
	EXPECT_EQ(SLOT_R12, (s[0].cookie >> 40) & 31);
	/* drop has 5 of its 6: the sixth slot names no register. */
	EXPECT_EQ(5, s[4].nargs);
	EXPECT_EQ(ARG_NONE, (s[4].cookie >> 25) & 31);
	/* Room for 3: the first three, no more. */
	EXPECT_EQ(3, sites_of(img, len, s, 3, why));
}

TEST(moved_base)
{
	uint8_t notes[256], desc[64], img[1024];
	uint64_t addr[3] = { 0x1000 + GN_ELF_CODE + 3, 0x1080, 0 };
	struct usdt_site s[2];
	char why[STAPSDT_WHY];
	size_t len;

	/* Linked at 0x1000, the base at 0x1080; the file says 0x400080. */
	memcpy(desc, addr, sizeof(addr));
	memcpy(desc + 24, "gradnet\0step\0", 14);	/* no arguments */
	len = gn_elf_note(notes, 0, sizeof(notes), "stapsdt", 8, 3, desc, 38);
	len = gn_elf_image(img, sizeof(img), notes, len);
	ASSERT_EQ(1, sites_of(img, len, s, 2, why)) TH_LOG("%s", why);
	EXPECT_EQ((long)GN_ELF_CODE + 3, s[0].off);
	EXPECT_EQ(0, s[0].nargs);
}

TEST(provider_past_its_note)
{
	struct usdt_site s[2];
	char why[STAPSDT_WHY];
	uint8_t img[1024];
	size_t len = gn_elf_overflow(img, sizeof(img));

	ASSERT_NE(0, len);
	EXPECT_EQ(-EBADMSG, sites_of(img, len, s, 2, why));
	EXPECT_NE(NULL, strstr(why, "malformed note")) TH_LOG("%s", why);
}

TEST(every_prefix)
{
	struct usdt_site s[8];
	char why[STAPSDT_WHY];
	uint8_t img[4096];
	size_t len = six_probes(img, sizeof(img), NULL), cut;

	ASSERT_NE(0, len);
	/* The section headers come last: any cut loses them, or a note. */
	for (cut = 0; cut < len; cut++)
		ASSERT_GT(0, sites_of(img, cut, s, 8, why)) TH_LOG("cut %zu", cut);
}

TEST(lengths_past_the_file)
{
	struct usdt_site s[8];
	char why[STAPSDT_WHY];
	uint8_t img[4096], bad[4096];
	size_t len = six_probes(img, sizeof(img), NULL);
	Elf64_Ehdr eh;
	Elf64_Shdr sh;
	Elf64_Nhdr nh;

	ASSERT_NE(0, len);
	memcpy(&eh, img, sizeof(eh));
	/* The note section's size one past the file. */
	memcpy(bad, img, len);
	memcpy(&sh, bad + eh.e_shoff + sizeof(sh), sizeof(sh));
	sh.sh_size = len - sh.sh_offset + 1;
	memcpy(bad + eh.e_shoff + sizeof(sh), &sh, sizeof(sh));
	EXPECT_EQ(-EBADMSG, sites_of(bad, len, s, 8, why));
	/* The first note's descriptor longer than the section. */
	memcpy(bad, img, len);
	memcpy(&sh, img + eh.e_shoff + sizeof(sh), sizeof(sh));
	memcpy(&nh, bad + sh.sh_offset, sizeof(nh));
	nh.n_descsz = 0xfffffff0u;
	memcpy(bad + sh.sh_offset, &nh, sizeof(nh));
	EXPECT_EQ(-EBADMSG, sites_of(bad, len, s, 8, why));
	/* 2^32 sections, counted in section 0. */
	memcpy(bad, img, len);
	eh.e_shnum = 0;
	memcpy(bad, &eh, sizeof(eh));
	memcpy(&sh, bad + eh.e_shoff, sizeof(sh));
	sh.sh_size = 1ull << 32;
	memcpy(bad + eh.e_shoff, &sh, sizeof(sh));
	EXPECT_EQ(-EBADMSG, sites_of(bad, len, s, 8, why));
	/* Not x86-64. */
	memcpy(bad, img, len);
	bad[18] = EM_AARCH64;
	EXPECT_EQ(-ENOEXEC, sites_of(bad, len, s, 8, why));
}

TEST(memory_arguments)
{
	struct usdt_site s[8];
	char why[STAPSDT_WHY];
	uint8_t img[4096];
	size_t len = six_probes(img, sizeof(img), "8@(%rdi) 8@%rsi\x1b[2J");

	ASSERT_NE(0, len);
	EXPECT_EQ(-EINVAL, sites_of(img, len, s, 8, why));
	EXPECT_NE(NULL, strstr(why, "probe tx_ctl has arguments '8@(%rdi) 8@%rsi?[2J'"))
		TH_LOG("%s", why);
}

TEST(probed_binary)
{
	const char *path = getenv("GN_PROBED_BINARY");
	struct usdt_site s[16];
	char why[STAPSDT_WHY];
	int fd, n, i, j;

	ASSERT_NE(NULL, path) TH_LOG("GN_PROBED_BINARY is not set");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd) TH_LOG("%s: %s", path, strerror(errno));
	n = usdt_sites_fd(fd, s, 16, why);
	close(fd);
	ASSERT_EQ(6, n) TH_LOG("%s", why);
	for (i = 0; i < 6; i++) {
		for (j = 0; j < n && strcmp(s[j].name, gn_elf_probes[i][0]); j++)
			;
		EXPECT_GT(n, j) TH_LOG("no probe %s", gn_elf_probes[i][0]);
	}
}

int main(int argc, char **argv)
{
	uint8_t img[1024];
	size_t len;
	FILE *f;

	if (argc == 3 && !strcmp(argv[1], "--write-overflow")) {
		len = gn_elf_overflow(img, sizeof(img));
		f = fopen(argv[2], "wb");
		if (!f || fwrite(img, 1, len, f) != len || fclose(f)) {
			perror(argv[2]);
			return 1;
		}
		return 0;
	}
	return test_harness_run(argc, argv);
}
