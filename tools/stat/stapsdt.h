/* SPDX-License-Identifier: MIT */
/*
 * stapsdt.h - the probe sites of an ELF file, read from its .note.stapsdt
 * notes (the format of systemtap's sys/sdt.h), and the BPF cookie that
 * tells gradnet_stat.bpf.c which register holds each probe argument.
 */
#ifndef GN_STAT_STAPSDT_H
#define GN_STAT_STAPSDT_H

#include <linux/types.h>

/* An unused argument slot: past struct pt_regs, reads as 0. */
#define ARG_NONE		31
/* A slot that reads as 1: the count of a probe that carries none. */
#define ARG_ONE			30
#define MAX_ARGS		9

struct usdt_site {
	char name[32];
	long off;		/* file offset of the probe site */
	__u64 cookie;		/* 5 bits of pt_regs slot per argument */
	int nargs;
};

int usdt_sites(const char *path, struct usdt_site *out, int cap);

#endif /* GN_STAT_STAPSDT_H */
