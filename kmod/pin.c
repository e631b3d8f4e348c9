// SPDX-License-Identifier: MIT
/*
 * pin.c - the caller's tensor, used in place: START pins its pages
 * (FOLL_LONGTERM: they stay put for the whole allreduce, which may last
 * as long as the step timeout) and maps them contiguously with vmap(); the
 * end of the allreduce (WAIT, or the close of the file, also when the
 * process was killed and its memory is gone) unmaps them and unpins them
 * dirty. So there is no copy of the tensor per step, only this mapping.
 */
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "kernel.h"
#include "pin.h"

/**
 * gk_pin_user() - pin and map @bytes of user memory at @uaddr
 * @p: filled in; zeroed on failure
 * @uaddr: the buffer, 4-byte aligned (float32 values)
 * @bytes: its length, more than 0
 *
 * Return: 0, -EINVAL (misaligned, empty), -EFAULT (not the caller's
 * writable memory), -ENOMEM.
 */
int gk_pin_user(struct gk_pin *p, u64 uaddr, u64 bytes)
{
	unsigned long start, off, n, done = 0;
	int r;

	memset(p, 0, sizeof(*p));
	if (!bytes || (uaddr & 3) || uaddr + bytes < uaddr)
		return -EINVAL;
	if (!access_ok(u64_to_user_ptr(uaddr), bytes))
		return -EFAULT;
	start = uaddr & PAGE_MASK;
	off = uaddr - start;
	n = DIV_ROUND_UP(off + bytes, PAGE_SIZE);
	p->pages = kvmalloc_array(n, sizeof(*p->pages), GN_KERNEL_GFP);
	if (!p->pages)
		return -ENOMEM;
	while (done < n) {
		r = pin_user_pages_fast(start + done * PAGE_SIZE, n - done,
					FOLL_WRITE | FOLL_LONGTERM,
					p->pages + done);
		if (r <= 0) {
			r = r ? r : -EFAULT;
			goto out_unpin;
		}
		done += r;
	}
	p->npages = n;
	p->vaddr = vmap(p->pages, n, VM_MAP, PAGE_KERNEL);
	if (!p->vaddr) {
		r = -ENOMEM;
		goto out_unpin;
	}
	p->data = (float *)((u8 *)p->vaddr + off);
	return 0;

out_unpin:
	unpin_user_pages(p->pages, done);
	kvfree(p->pages);
	memset(p, 0, sizeof(*p));
	return r;
}

/**
 * gk_unpin() - unmap and unpin what gk_pin_user() pinned (dirty: the
 * allreduce wrote its result there); nothing if nothing is pinned
 * @p: zeroed after
 */
void gk_unpin(struct gk_pin *p)
{
	if (!p->pages)
		return;
	vunmap(p->vaddr);
	unpin_user_pages_dirty_lock(p->pages, p->npages, true);
	kvfree(p->pages);
	memset(p, 0, sizeof(*p));
}
