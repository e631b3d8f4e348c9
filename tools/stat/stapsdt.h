/* SPDX-License-Identifier: MIT */
/*
 * stapsdt.h - the probe sites of an ELF file, read from its .note.stapsdt
 * notes (the format of systemtap's sys/sdt.h), and the BPF cookie that
 * tells gradnet_stat.bpf.c which register holds each probe argument.
 *
 * The file may be one a traced process chose (attach --pid), so the
 * parser treats it as hostile: it never reads past what the file, a
 * section or a note says it holds, and reads the file only through
 * struct elf_src, so a fuzzer can hand it bytes in memory.
 */
#ifndef GN_STAT_STAPSDT_H
#define GN_STAT_STAPSDT_H

#include <stddef.h>
#include <linux/types.h>

/* An unused argument slot: past struct pt_regs, reads as 0. */
#define ARG_NONE		31
/* A slot that reads as 1: the count of a probe that carries none. */
#define ARG_ONE			30
#define MAX_ARGS		9
/* Registers an argument may be in: the slots of uapi x86-64 pt_regs. */
#define ARG_REGS		15

struct usdt_site {
	char name[32];
	long off;		/* file offset of the probe site */
	__u64 cookie;		/* 5 bits of pt_regs slot per argument */
	int nargs;
};

/*
 * struct elf_src - where the ELF bytes come from: @read fills @len bytes
 * at @off, or fails (a short read is a failure); @size bounds every
 * offset the parser asks for.
 */
struct elf_src {
	int (*read)(void *ctx, __u64 off, void *buf, size_t len);
	void *ctx;
	__u64 size;
};

/*
 * struct stapsdt_note - one note of a .note.stapsdt section: the strings
 * point into the section's bytes and end inside the note's descriptor.
 */
struct stapsdt_note {
	__u64 pc, base, semaphore;
	const char *provider, *name, *args;
};

/* Longest reason stapsdt_sites() gives. */
#define STAPSDT_WHY	256

int stapsdt_next(const __u8 *sec, size_t len, size_t align, size_t *pos,
		 struct stapsdt_note *n);
int args_cookie(const char *args, __u64 *cookie);
int stapsdt_sites(const struct elf_src *src, const char *provider,
		  struct usdt_site *out, int cap, char *why);
int usdt_sites_fd(int fd, struct usdt_site *out, int cap, char *why);

#endif /* GN_STAT_STAPSDT_H */
