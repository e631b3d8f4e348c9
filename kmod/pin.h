/* SPDX-License-Identifier: MIT */
/*
 * pin.h - a user buffer pinned and mapped into the kernel for the time
 * of one allreduce (pin.c), so the core reads and writes it in place,
 * and charged as locked memory to whoever pinned it.
 */
#ifndef GN_KMOD_PIN_H
#define GN_KMOD_PIN_H

#include <linux/types.h>

struct mm_struct;
struct page;
struct user_struct;

struct gk_pin {
	struct page **pages;
	unsigned long npages;
	void *vaddr;			/* the pages' mapping */
	float *data;			/* the user's first byte in it */
	struct mm_struct *mm;		/* charged: pinned_vm */
	struct user_struct *user;	/* charged: locked_vm (none: exempt) */
};

int gk_pin_user(struct gk_pin *p, u64 uaddr, u64 bytes, char *msg,
		size_t len);
void gk_unpin(struct gk_pin *p);

#endif /* GN_KMOD_PIN_H */
