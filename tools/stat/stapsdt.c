// SPDX-License-Identifier: MIT
/*
 * stapsdt.c - the gradnet probe sites of an ELF file: its .note.stapsdt
 * notes, each a probe's address, provider, name and argument spec, turned
 * into a file offset for the uprobe and a BPF cookie naming the register
 * of each argument.
 *
 * The file can be one a traced process chose, so every offset, count and
 * length it holds is checked against what holds it (the file, the
 * section, the note) before it is used, and every string must end inside
 * its note's descriptor. The ELF reading is this file's own, not libelf's,
 * so that the whole path from file bytes to probe sites can be fuzzed
 * (tests/fuzz/fuzz_stapsdt.c). Only 64-bit little-endian x86-64 files are
 * read: the cookie names x86-64 registers.
 */
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stapsdt.h"

/* Bounds on what a file can make the parser read or hold. */
#define MAX_SECTIONS		65536
#define MAX_PHDRS		65536
#define MAX_NOTES_LEN		(16u << 20)
#define NT_STAPSDT		3

/* uapi x86-64 struct pt_regs, in slot order. */
static const char *const pt_regs_names[ARG_REGS] = {
	"r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8",
	"rax", "rcx", "rdx", "rsi", "rdi",
};

/*
 * "8@%rdx 8@%rcx ..." as a cookie: 5 bits of pt_regs slot per argument.
 * Return: how many arguments, or -EINVAL if one is not a 64-bit register.
 */
int args_cookie(const char *args, __u64 *cookie)
{
	char copy[256], *tok, *save = NULL;
	unsigned int i = 0, r;

	*cookie = 0;
	for (r = 0; r < MAX_ARGS; r++)
		*cookie |= (__u64)ARG_NONE << (5 * r);
	if (strlen(args) >= sizeof(copy))
		return -EINVAL;
	strcpy(copy, args);
	for (tok = strtok_r(copy, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save), i++) {
		const char *reg = strstr(tok, "@%");

		if (i >= MAX_ARGS || !reg || (strncmp(tok, "8@", 2) &&
					      strncmp(tok, "-8@", 3)))
			return -EINVAL;
		for (r = 0; r < ARG_REGS; r++)
			if (!strcmp(reg + 2, pt_regs_names[r]))
				break;
		if (r == ARG_REGS)
			return -EINVAL;
		*cookie &= ~((__u64)31 << (5 * i));
		*cookie |= (__u64)r << (5 * i);
	}
	return (int)i;
}

static size_t align_up(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* Just past the NUL that ends string @s, or NULL if none does before @end. */
static const char *after_nul(const char *s, const char *end)
{
	const char *nul;

	if (!s || s >= end)
		return NULL;
	nul = memchr(s, 0, (size_t)(end - s));
	return nul ? nul + 1 : NULL;
}

/*
 * stapsdt_next() - the next stapsdt note of a note section
 * @sec: the section's bytes
 * @len: how many
 * @align: the section's note alignment, 4 or 8
 * @pos: where to look, from 0; moved past the note returned
 * @n: out; its strings point into @sec
 *
 * Notes of other names or types are skipped.
 *
 * Return: 1 with a note, 0 at the end, -EBADMSG if a note does not fit
 * in the section or its strings do not end inside its descriptor.
 */
int stapsdt_next(const __u8 *sec, size_t len, size_t align, size_t *pos,
		 struct stapsdt_note *n)
{
	static const char owner[] = "stapsdt";

	while (*pos < len) {
		size_t at = *pos, desc;
		const char *d, *end;
		Elf64_Nhdr h;

		if (len - at < sizeof(h))
			return -EBADMSG;
		memcpy(&h, sec + at, sizeof(h));
		at += sizeof(h);
		if (h.n_namesz > len - at)
			return -EBADMSG;
		desc = align_up(at + h.n_namesz, align);
		if (desc > len || h.n_descsz > len - desc)
			return -EBADMSG;
		*pos = align_up(desc + h.n_descsz, align);
		if (*pos > len)
			*pos = len;
		if (h.n_type != NT_STAPSDT || h.n_namesz != sizeof(owner) ||
		    memcmp(sec + at, owner, sizeof(owner)))
			continue;
		/* Three addresses, then three strings of at least a NUL. */
		if (h.n_descsz < 3 * 8 + 3)
			return -EBADMSG;
		d = (const char *)sec + desc;
		end = d + h.n_descsz;
		memcpy(&n->pc, d, 8);
		memcpy(&n->base, d + 8, 8);
		memcpy(&n->semaphore, d + 16, 8);
		n->provider = d + 24;
		n->name = after_nul(n->provider, end);
		n->args = after_nul(n->name, end);
		if (!after_nul(n->args, end))
			return -EBADMSG;
		return 1;
	}
	return 0;
}

struct elf_file {
	const struct elf_src *src;
	Elf64_Ehdr eh;
	__u64 shnum, shstrndx, phnum;
};

/* @len bytes at @off, which must lie inside the file. */
static int src_read(const struct elf_src *src, __u64 off, void *buf,
		    size_t len)
{
	if (off > src->size || len > src->size - off)
		return -EBADMSG;
	return src->read(src->ctx, off, buf, len) ? -EBADMSG : 0;
}

static int read_shdr(const struct elf_file *f, __u64 i, Elf64_Shdr *sh)
{
	return src_read(f->src, f->eh.e_shoff + i * f->eh.e_shentsize, sh,
			sizeof(*sh));
}

/*
 * The ELF header, and the section and program header counts, which a
 * file with more than 0xfff0 of either keeps in section 0.
 */
static int read_ehdr(struct elf_file *f, char *why)
{
	Elf64_Ehdr *eh = &f->eh;
	Elf64_Shdr sh0;

	if (src_read(f->src, 0, eh, sizeof(*eh)) ||
	    memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh->e_machine != EM_X86_64) {
		snprintf(why, STAPSDT_WHY, "not a 64-bit x86-64 ELF file");
		return -ENOEXEC;
	}
	f->shnum = eh->e_shnum;
	f->shstrndx = eh->e_shstrndx;
	f->phnum = eh->e_phnum;
	if (!eh->e_shoff) {
		f->shnum = 0;
	} else if (eh->e_shoff > f->src->size ||
		   eh->e_shentsize < sizeof(Elf64_Shdr)) {
		snprintf(why, STAPSDT_WHY, "its section header table is malformed");
		return -EBADMSG;
	} else if (!f->shnum || f->shstrndx == SHN_XINDEX ||
		   f->phnum == PN_XNUM) {
		if (read_shdr(f, 0, &sh0)) {
			snprintf(why, STAPSDT_WHY, "its section 0 lies outside the file");
			return -EBADMSG;
		}
		if (!f->shnum)
			f->shnum = sh0.sh_size;
		if (f->shstrndx == SHN_XINDEX)
			f->shstrndx = sh0.sh_link;
		if (f->phnum == PN_XNUM)
			f->phnum = sh0.sh_info;
	}
	if (f->shnum > MAX_SECTIONS || (f->shnum && f->shstrndx >= f->shnum)) {
		snprintf(why, STAPSDT_WHY, "it has %llu sections, names in section %llu",
			 (unsigned long long)f->shnum,
			 (unsigned long long)f->shstrndx);
		return -EBADMSG;
	}
	if (f->phnum > MAX_PHDRS || (f->phnum &&
	    (eh->e_phoff > f->src->size ||
	     eh->e_phentsize < sizeof(Elf64_Phdr)))) {
		snprintf(why, STAPSDT_WHY, "its program header table is malformed");
		return -EBADMSG;
	}
	return 0;
}

/* Whether section @sh is called @name (with its NUL), in string table @strtab. */
static bool section_is(const struct elf_file *f, const Elf64_Shdr *strtab,
		       const Elf64_Shdr *sh, const char *name)
{
	size_t len = strlen(name) + 1;
	char buf[32];

	if (len > sizeof(buf) || sh->sh_name >= strtab->sh_size ||
	    strtab->sh_size - sh->sh_name < len || strtab->sh_offset > f->src->size)
		return false;
	return !src_read(f->src, strtab->sh_offset + sh->sh_name, buf, len) &&
	       !memcmp(buf, name, len);
}

/*
 * A probe site's virtual address as a file offset, for the uprobe: it
 * must lie in the file bytes of an executable PT_LOAD segment.
 * Return: the offset, or -1.
 */
static long vaddr_to_off(const struct elf_file *f, __u64 addr)
{
	const struct elf_src *src = f->src;
	Elf64_Phdr ph;
	__u64 i, off;

	for (i = 0; i < f->phnum; i++) {
		if (src_read(src, f->eh.e_phoff + i * f->eh.e_phentsize, &ph,
			     sizeof(ph)))
			return -1;
		if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) ||
		    addr < ph.p_vaddr || addr - ph.p_vaddr >= ph.p_filesz)
			continue;
		off = ph.p_offset + (addr - ph.p_vaddr);
		if (off < ph.p_offset || off >= src->size)
			return -1;
		return (long)off;
	}
	return -1;
}

/* @s for a message: at most 40 characters, anything unprintable as '?'. */
static const char *shown(char *buf, size_t len, const char *s)
{
	size_t i;

	for (i = 0; i + 1 < len && i < 40 && s[i]; i++)
		buf[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	buf[i] = 0;
	return buf;
}

/* The sites of @provider in the note section @sec of @len bytes. */
static int note_sites(const struct elf_file *f, const __u8 *sec, size_t len,
		      size_t align, bool have_base, __u64 base_addr,
		      const char *provider, struct usdt_site *out, int cap,
		      char *why)
{
	struct stapsdt_note note;
	size_t pos = 0;
	char a[48], b[48];
	int n = 0, err;

	while ((err = stapsdt_next(sec, len, align, &pos, &note)) == 1) {
		struct usdt_site *s = &out[n];
		__u64 pc = note.pc;

		if (strcmp(note.provider, provider) || n >= cap ||
		    strlen(note.name) >= sizeof(s->name))
			continue;
		/* Prelinking moves the code: sites are relative to this. */
		if (have_base)
			pc += base_addr - note.base;
		strcpy(s->name, note.name);
		s->off = vaddr_to_off(f, pc);
		if (s->off < 0) {
			snprintf(why, STAPSDT_WHY, "probe %s at %#llx lies in no executable segment of the file",
				 shown(a, sizeof(a), note.name),
				 (unsigned long long)pc);
			return -EBADMSG;
		}
		s->nargs = args_cookie(note.args, &s->cookie);
		if (s->nargs < 0) {
			snprintf(why, STAPSDT_WHY, "probe %s has arguments '%s' that are not all 64-bit registers (build with -DSTAP_SDT_ARG_CONSTRAINT=nr)",
				 shown(a, sizeof(a), note.name),
				 shown(b, sizeof(b), note.args));
			return -EINVAL;
		}
		n++;
	}
	if (err < 0) {
		snprintf(why, STAPSDT_WHY, "a malformed note at byte %zu of .note.stapsdt: a length past the section, or a string that does not end inside its note",
			 pos);
		return err;
	}
	return n;
}

/**
 * stapsdt_sites() - the probe sites of one provider in an ELF file
 * @src: the file
 * @provider: whose probes ("gradnet")
 * @out: the sites, in note order
 * @cap: room in @out; sites past it are left out
 * @why: STAPSDT_WHY bytes, the reason if the file is refused
 *
 * Return: how many sites (0: none), or -ENOEXEC (not a 64-bit x86-64 ELF
 * file), -EBADMSG (malformed), -EINVAL (an argument not in a register),
 * -ENOMEM, with @why saying which.
 */
int stapsdt_sites(const struct elf_src *src, const char *provider,
		  struct usdt_site *out, int cap, char *why)
{
	struct elf_file f = { .src = src };
	Elf64_Shdr strtab, sh, notes = { 0 };
	bool have_notes = false, have_base = false;
	__u64 base_addr = 0, i;
	size_t align;
	__u8 *sec;
	int err;

	why[0] = 0;
	err = read_ehdr(&f, why);
	if (err)
		return err;
	if (!f.shnum)
		return 0;
	if (read_shdr(&f, f.shstrndx, &strtab)) {
		snprintf(why, STAPSDT_WHY, "its section name table lies outside the file");
		return -EBADMSG;
	}
	for (i = 1; i < f.shnum; i++) {
		if (read_shdr(&f, i, &sh)) {
			snprintf(why, STAPSDT_WHY, "section %llu lies outside the file",
				 (unsigned long long)i);
			return -EBADMSG;
		}
		if (!have_notes && sh.sh_type == SHT_NOTE &&
		    section_is(&f, &strtab, &sh, ".note.stapsdt")) {
			notes = sh;
			have_notes = true;
		} else if (section_is(&f, &strtab, &sh, ".stapsdt.base")) {
			base_addr = sh.sh_addr;
			have_base = true;
		}
	}
	if (!have_notes || !notes.sh_size)
		return 0;
	if (notes.sh_offset > src->size ||
	    notes.sh_size > src->size - notes.sh_offset) {
		snprintf(why, STAPSDT_WHY, ".note.stapsdt lies outside the file");
		return -EBADMSG;
	}
	if (notes.sh_size > MAX_NOTES_LEN) {
		snprintf(why, STAPSDT_WHY, ".note.stapsdt holds %llu bytes, more than %u",
			 (unsigned long long)notes.sh_size, MAX_NOTES_LEN);
		return -EBADMSG;
	}
	/* An exact-size copy: a read past it is a bug the fuzzer's ASan sees. */
	sec = malloc(notes.sh_size);
	if (!sec) {
		snprintf(why, STAPSDT_WHY, "no memory for .note.stapsdt");
		return -ENOMEM;
	}
	if (src_read(src, notes.sh_offset, sec, notes.sh_size)) {
		snprintf(why, STAPSDT_WHY, ".note.stapsdt cannot be read");
		err = -EBADMSG;
		goto out_free;
	}
	align = notes.sh_addralign == 8 ? 8 : 4;
	err = note_sites(&f, sec, notes.sh_size, align, have_base, base_addr,
			 provider, out, cap, why);
out_free:
	free(sec);
	return err;
}

static int fd_read(void *ctx, __u64 off, void *buf, size_t len)
{
	ssize_t got = pread(*(int *)ctx, buf, len, (off_t)off);

	return got == (ssize_t)len ? 0 : -EIO;
}

/**
 * usdt_sites_fd() - the gradnet probe sites of an open file
 * @fd: the file, a regular one
 * @out: the sites
 * @cap: room in @out
 * @why: STAPSDT_WHY bytes, the reason if the file is refused
 *
 * Reads with pread() only, so a file that shrinks meanwhile fails the
 * read instead of faulting, as a mapping of it would.
 *
 * Return: as stapsdt_sites(), or -errno if @fd cannot be read.
 */
int usdt_sites_fd(int fd, struct usdt_site *out, int cap, char *why)
{
	struct elf_src src = { .read = fd_read, .ctx = &fd };
	struct stat st;

	why[0] = 0;
	if (fstat(fd, &st)) {
		snprintf(why, STAPSDT_WHY, "%s", strerror(errno));
		return -errno;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, STAPSDT_WHY, "not a regular file");
		return -ENOEXEC;
	}
	src.size = (__u64)st.st_size;
	return stapsdt_sites(&src, "gradnet", out, cap, why);
}
