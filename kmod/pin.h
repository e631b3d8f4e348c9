/* SPDX-License-Identifier: MIT */
/*
 * pin.h - a user buffer pinned and mapped into the kernel for the time
 * of one allreduce (pin.c), so the core reads and writes it in place.
 */
#ifndef GN_KMOD_PIN_H
#define GN_KMOD_PIN_H

#include <linux/types.h>

struct page;

struct gk_pin {
	struct page **pages;
	unsigned long npages;
	void *vaddr;			/* the pages' mapping */
	float *data;			/* the user's first byte in it */
};

int gk_pin_user(struct gk_pin *p, u64 uaddr, u64 bytes);
void gk_unpin(struct gk_pin *p);

#endif /* GN_KMOD_PIN_H */
