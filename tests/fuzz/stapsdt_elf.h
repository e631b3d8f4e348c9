/* SPDX-License-Identifier: MIT */
/*
 * stapsdt_elf.h - small x86-64 ELF images with a .note.stapsdt section,
 * for the seeds of fuzz_stapsdt and the tests of gradnet-stat's note
 * reader (tests/bpf/stapsdt_test.c): one executable PT_LOAD segment over
 * the whole file at GN_ELF_VADDR, the notes, a .stapsdt.base section at
 * GN_ELF_BASE, and a section name table, laid out as
 *	ELF header | program header | code | names | notes | section headers
 * Notes are written raw (gn_elf_note()), so a test can write ones whose
 * strings run past their descriptor. gn_elf_mem_read() reads such a file
 * from memory for struct elf_src (tools/stat/stapsdt.h).
 */
#ifndef GN_STAPSDT_ELF_H
#define GN_STAPSDT_ELF_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>

#define GN_ELF_VADDR	0x400000ull
#define GN_ELF_BASE	0x400080ull
/* Where the code lies: probe sites go at GN_ELF_VADDR + GN_ELF_CODE + i. */
#define GN_ELF_CODE	(sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr))
#define GN_ELF_CODE_LEN	16

static const char gn_elf_names[] = "\0.note.stapsdt\0.stapsdt.base\0.shstrtab";

/*
 * libgradnet's six probes and their argument specs; drop lacks its last
 * argument, the count, as in a library whose core does not coalesce.
 */
static const char *const gn_elf_probes[6][2] = {
	{ "msg", "8@%rdi 8@%rsi 8@%rdx 8@%rcx 8@%r8 8@%r9 8@%rax 8@%rbx 8@%r12" },
	{ "tx", "8@%rdi 8@%rsi 8@%rdx 8@%rcx 8@%r8 8@%r9 8@%rax 8@%rbx 8@%r12" },
	{ "tx_ctl", "8@%rdi 8@%rsi 8@%rdx 8@%rcx 8@%r8 -8@%r9" },
	{ "rx", "8@%rdi 8@%rsi 8@%rdx 8@%rcx 8@%r8 8@%r9 8@%rax 8@%rbx" },
	{ "drop", "8@%rdi 8@%rsi 8@%rdx 8@%rcx 8@%r8" },
	{ "step", "8@%rdi 8@%rsi 8@%rdx 8@%rcx 8@%r8 8@%r9" },
};

/* A file in memory, for struct elf_src's read. */
struct gn_elf_mem {
	const uint8_t *buf;
	size_t len;
};

/* Reads past the file are the parser's bug: abort, so the input is kept. */
static inline int gn_elf_mem_read(void *ctx, __u64 off, void *buf, size_t len)
{
	const struct gn_elf_mem *m = ctx;

	if (off > m->len || len > m->len - off) {
		fprintf(stderr, "read of %zu bytes at %llu in a file of %zu\n",
			len, (unsigned long long)off, m->len);
		abort();
	}
	memcpy(buf, m->buf + off, len);
	return 0;
}

/*
 * gn_elf_note() - append one note to @buf at @len (4-byte aligned)
 * Return: the new length, or 0 if @cap is too small.
 */
static inline size_t gn_elf_note(uint8_t *buf, size_t len, size_t cap,
				 const char *owner, uint32_t owner_len,
				 uint32_t type, const void *desc,
				 uint32_t desc_len)
{
	Elf64_Nhdr h = { owner_len, desc_len, type };
	size_t name = (owner_len + 3u) & ~3u, d = (desc_len + 3u) & ~3u;

	if (len + sizeof(h) + name + d > cap)
		return 0;
	memcpy(buf + len, &h, sizeof(h));
	memset(buf + len + sizeof(h), 0, name + d);
	memcpy(buf + len + sizeof(h), owner, owner_len);
	memcpy(buf + len + sizeof(h) + name, desc, desc_len);
	return len + sizeof(h) + name + d;
}

/*
 * gn_elf_probe() - append a well-formed stapsdt note of probe
 * @provider:@name at @pc (base GN_ELF_BASE) with argument spec @args
 * Return: the new length, or 0 if @cap is too small.
 */
static inline size_t gn_elf_probe(uint8_t *buf, size_t len, size_t cap,
				  uint64_t pc, const char *provider,
				  const char *name, const char *args)
{
	uint8_t desc[512];
	uint64_t addr[3] = { pc, GN_ELF_BASE, 0 };
	size_t p = strlen(provider) + 1, n = strlen(name) + 1;
	size_t a = strlen(args) + 1;

	if (sizeof(addr) + p + n + a > sizeof(desc))
		return 0;
	memcpy(desc, addr, sizeof(addr));
	memcpy(desc + sizeof(addr), provider, p);
	memcpy(desc + sizeof(addr) + p, name, n);
	memcpy(desc + sizeof(addr) + p + n, args, a);
	return gn_elf_note(buf, len, cap, "stapsdt", 8, 3, desc,
			   (uint32_t)(sizeof(addr) + p + n + a));
}

/*
 * gn_elf_six_probes() - the notes of gn_elf_probes, probe i at
 * GN_ELF_VADDR + GN_ELF_CODE + i, with a probe of another provider after
 * the fourth; tx_ctl's arguments are @tx_ctl_args if not NULL
 * Return: the notes' length, or 0 if @cap is too small.
 */
static inline size_t gn_elf_six_probes(uint8_t *notes, size_t cap,
				       const char *tx_ctl_args)
{
	size_t len = 0, i;

	for (i = 0; i < 6; i++) {
		len = gn_elf_probe(notes, len, cap, GN_ELF_VADDR + GN_ELF_CODE + i,
				   "gradnet", gn_elf_probes[i][0],
				   i == 2 && tx_ctl_args ? tx_ctl_args :
				   gn_elf_probes[i][1]);
		if (i == 3 && len)
			len = gn_elf_probe(notes, len, cap,
					   GN_ELF_VADDR + GN_ELF_CODE, "other",
					   "tx", "4@%edi");
	}
	return len;
}

/*
 * gn_elf_image() - an ELF file around the note section @notes
 * @out: the file
 * @cap: room in @out
 * Return: the file's length, or 0 if @cap is too small.
 */
static inline size_t gn_elf_image(uint8_t *out, size_t cap,
				  const uint8_t *notes, size_t notes_len)
{
	size_t names = GN_ELF_CODE + GN_ELF_CODE_LEN;
	size_t note_off = (names + sizeof(gn_elf_names) + 3) & ~(size_t)3;
	size_t shoff = (note_off + notes_len + 7) & ~(size_t)7;
	size_t len = shoff + 4 * sizeof(Elf64_Shdr);
	Elf64_Ehdr eh = {
		.e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64,
			     ELFDATA2LSB, EV_CURRENT },
		.e_type = ET_DYN, .e_machine = EM_X86_64,
		.e_version = EV_CURRENT, .e_phoff = sizeof(Elf64_Ehdr),
		.e_shoff = shoff, .e_ehsize = sizeof(Elf64_Ehdr),
		.e_phentsize = sizeof(Elf64_Phdr), .e_phnum = 1,
		.e_shentsize = sizeof(Elf64_Shdr), .e_shnum = 4,
		.e_shstrndx = 3,
	};
	Elf64_Phdr ph = {
		.p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = 0,
		.p_vaddr = GN_ELF_VADDR, .p_paddr = GN_ELF_VADDR,
		.p_filesz = len, .p_memsz = len, .p_align = 0x1000,
	};
	Elf64_Shdr sh[4] = {
		{ 0 },
		{ .sh_name = 1, .sh_type = SHT_NOTE, .sh_offset = note_off,
		  .sh_size = notes_len, .sh_addralign = 4 },
		{ .sh_name = 15, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC,
		  .sh_addr = GN_ELF_BASE, .sh_offset = GN_ELF_BASE - GN_ELF_VADDR,
		  .sh_size = 1, .sh_addralign = 1 },
		{ .sh_name = 29, .sh_type = SHT_STRTAB, .sh_offset = names,
		  .sh_size = sizeof(gn_elf_names), .sh_addralign = 1 },
	};

	if (len > cap)
		return 0;
	memset(out, 0, len);
	memcpy(out, &eh, sizeof(eh));
	memcpy(out + sizeof(eh), &ph, sizeof(ph));
	memset(out + GN_ELF_CODE, 0x90, GN_ELF_CODE_LEN);	/* nop */
	memcpy(out + names, gn_elf_names, sizeof(gn_elf_names));
	memcpy(out + note_off, notes, notes_len);
	memcpy(out + shoff, sh, sizeof(sh));
	return len;
}

/*
 * gn_elf_overflow() - a file whose only note is a gradnet probe whose
 * provider string fills its descriptor to the end, with no NUL: the name
 * and arguments a reader finds by strlen() lie past the note section.
 * Return: the file's length, or 0 if @cap is too small.
 */
static inline size_t gn_elf_overflow(uint8_t *out, size_t cap)
{
	uint8_t desc[24 + 7], notes[64];
	uint64_t addr[3] = { GN_ELF_VADDR + GN_ELF_CODE, GN_ELF_BASE, 0 };
	size_t len;

	memcpy(desc, addr, sizeof(addr));
	memcpy(desc + sizeof(addr), "gradnet", 7);
	len = gn_elf_note(notes, 0, sizeof(notes), "stapsdt", 8, 3, desc,
			  sizeof(desc));
	return len ? gn_elf_image(out, cap, notes, len) : 0;
}

#endif /* GN_STAPSDT_ELF_H */
