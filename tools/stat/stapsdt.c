// SPDX-License-Identifier: MIT
/*
 * stapsdt.c - the gradnet probe sites of an ELF file: its .note.stapsdt
 * notes, each a probe's address, provider, name and argument spec, turned
 * into a file offset for the uprobe and a BPF cookie naming the register
 * of each argument.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "stapsdt.h"

/* uapi x86-64 struct pt_regs, in slot order. */
static const char *const pt_regs_names[] = {
	"r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8",
	"rax", "rcx", "rdx", "rsi", "rdi",
};

/*
 * "8@%rdx 8@%rcx ..." as a cookie: 5 bits of pt_regs slot per argument.
 * Return: how many arguments, or -EINVAL.
 */
static int args_cookie(const char *args, __u64 *cookie)
{
	char copy[256], *tok, *save = NULL;
	unsigned int i = 0, r;

	*cookie = 0;
	for (r = 0; r < MAX_ARGS; r++)
		*cookie |= (__u64)ARG_NONE << (5 * r);
	snprintf(copy, sizeof(copy), "%s", args);
	for (tok = strtok_r(copy, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save), i++) {
		const char *reg = strstr(tok, "@%");

		if (i >= MAX_ARGS || !reg || (strncmp(tok, "8@", 2) &&
					      strncmp(tok, "-8@", 3)))
			return -EINVAL;
		for (r = 0; r < sizeof(pt_regs_names) / sizeof(*pt_regs_names); r++)
			if (!strcmp(reg + 2, pt_regs_names[r]))
				break;
		if (r == sizeof(pt_regs_names) / sizeof(*pt_regs_names))
			return -EINVAL;
		*cookie &= ~((__u64)31 << (5 * i));
		*cookie |= (__u64)r << (5 * i);
	}
	return (int)i;
}

/* A probe site's virtual address as a file offset, for the uprobe. */
static long vaddr_to_off(Elf *e, __u64 addr)
{
	size_t n, i;
	GElf_Phdr ph;

	if (elf_getphdrnum(e, &n))
		return -1;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X))
			continue;
		if (addr >= ph.p_vaddr && addr < ph.p_vaddr + ph.p_memsz)
			return (long)(addr - ph.p_vaddr + ph.p_offset);
	}
	return -1;
}

/* The gradnet probe sites of @path: notes in .note.stapsdt. */
int usdt_sites(const char *path, struct usdt_site *out, int cap)
{
	__u64 base_addr = 0;
	bool have_base = false;
	Elf_Scn *scn = NULL, *notes = NULL;
	int fd, n = 0, err = 0;
	size_t shstr;
	Elf *e;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_getshdrstrndx(e, &shstr)) {
		err = -ENOEXEC;
		goto out_close;
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(e, shstr, sh.sh_name);
		if (!name)
			continue;
		if (!strcmp(name, ".note.stapsdt") && sh.sh_type == SHT_NOTE)
			notes = scn;
		/* Prelinking moves the code: sites are relative to this. */
		if (!strcmp(name, ".stapsdt.base")) {
			base_addr = sh.sh_addr;
			have_base = true;
		}
	}
	if (notes) {
		Elf_Data *d = elf_getdata(notes, NULL);
		size_t off = 0, name_off, desc_off;
		GElf_Nhdr nh;

		while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off))) {
			const char *desc = (const char *)d->d_buf + desc_off;
			const char *prov, *probe, *args;
			__u64 pc, base;

			if (nh.n_type != 3 || nh.n_descsz < 3 * 8 + 3)
				continue;
			memcpy(&pc, desc, 8);
			memcpy(&base, desc + 8, 8);
			prov = desc + 24;
			probe = prov + strlen(prov) + 1;
			args = probe + strlen(probe) + 1;
			if (strcmp(prov, "gradnet") || n >= cap)
				continue;
			if (have_base)
				pc += base_addr - base;
			snprintf(out[n].name, sizeof(out[n].name), "%s", probe);
			out[n].off = vaddr_to_off(e, pc);
			out[n].nargs = args_cookie(args, &out[n].cookie);
			if (out[n].off < 0 || out[n].nargs < 0) {
				fprintf(stderr, "gradnet-stat: %s: probe %s has arguments '%s' that are not all 64-bit registers (build with -DSTAP_SDT_ARG_CONSTRAINT=nr)\n",
					path, probe, args);
				err = -EINVAL;
				break;
			}
			n++;
		}
	}
	elf_end(e);
out_close:
	close(fd);
	return err ? err : n;
}
