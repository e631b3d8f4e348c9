// SPDX-License-Identifier: MIT
/*
 * fuzz_stapsdt.c - libFuzzer target for gradnet-stat's ELF note reader
 * (tools/stat/stapsdt.c), which attach --pid runs on a file the traced
 * process chose. The first input byte picks what the rest is:
 *	0	a whole ELF file, read through struct elf_src
 *	1, 2	a .note.stapsdt section whose notes are aligned to 4 or 8
 *		bytes, walked note by note with stapsdt_next()
 * The bytes are an exact-size heap copy, so ASan reports any read past
 * them. Checked: a file is read only inside its size; the result is a
 * site count within the room given or an error with a reason; each site
 * lies in the file, has a short name and a cookie that names a register
 * for each of its arguments and none past them; each note's strings lie
 * inside the section, back to back, and the walk moves forward.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stapsdt.h"
#include "stapsdt_elf.h"
#include "fuzz_check.h"

#define CAP 8

static void check_sites(const struct usdt_site *s, int n, size_t size,
			const char *why)
{
	int i, a;

	GN_FZ_CHECK(memchr(why, 0, STAPSDT_WHY), "reason not terminated");
	GN_FZ_CHECK(n <= CAP, "%d sites in room for %d", n, CAP);
	if (n < 0) {
		GN_FZ_CHECK(n == -ENOEXEC || n == -EBADMSG || n == -EINVAL,
			    "error %d", n);
		GN_FZ_CHECK(why[0], "error %d without a reason", n);
		return;
	}
	for (i = 0; i < n; i++) {
		GN_FZ_CHECK(memchr(s[i].name, 0, sizeof(s[i].name)),
			    "site %d: name not terminated", i);
		GN_FZ_CHECK(s[i].off >= 0 && (size_t)s[i].off < size,
			    "site %d at offset %ld of %zu", i, s[i].off, size);
		GN_FZ_CHECK(s[i].nargs >= 0 && s[i].nargs <= MAX_ARGS,
			    "site %d: %d arguments", i, s[i].nargs);
		for (a = 0; a < MAX_ARGS; a++) {
			unsigned int slot = (s[i].cookie >> (5 * a)) & 31;

			GN_FZ_CHECK(a < s[i].nargs ? slot < ARG_REGS :
				    slot == ARG_NONE,
				    "site %d argument %d: slot %u", i, a, slot);
		}
	}
}

static void check_notes(const uint8_t *sec, size_t len, size_t align)
{
	const char *end = (const char *)sec + len;
	struct stapsdt_note n;
	size_t pos = 0, was;
	__u64 cookie;
	int r;

	for (;;) {
		was = pos;
		r = stapsdt_next(sec, len, align, &pos, &n);
		if (r <= 0) {
			GN_FZ_CHECK(r == 0 || r == -EBADMSG, "returned %d", r);
			return;
		}
		GN_FZ_CHECK(pos > was && pos <= len, "moved from %zu to %zu of %zu",
			    was, pos, len);
		GN_FZ_CHECK(n.provider > (const char *)sec && n.provider < end,
			    "provider outside the section");
		GN_FZ_CHECK(n.name == n.provider + strlen(n.provider) + 1 &&
			    n.args == n.name + strlen(n.name) + 1 &&
			    n.args + strlen(n.args) < end,
			    "strings not back to back inside the section");
		args_cookie(n.args, &cookie);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct usdt_site sites[CAP];
	char why[STAPSDT_WHY];
	struct elf_src src;
	struct gn_elf_mem m;
	uint8_t *buf;
	int n;

	if (size < 1)
		return 0;
	m.len = size - 1;
	buf = malloc(m.len ? m.len : 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, m.len);
	m.buf = buf;
	switch (data[0] % 3) {
	case 0:
		src = (struct elf_src){ .read = gn_elf_mem_read, .ctx = &m,
					.size = m.len };
		memset(sites, 0xa5, sizeof(sites));
		n = stapsdt_sites(&src, "gradnet", sites, CAP, why);
		check_sites(sites, n, m.len, why);
		break;
	default:
		check_notes(buf, m.len, data[0] % 3 == 1 ? 4 : 8);
		break;
	}
	free(buf);
	return 0;
}
