// SPDX-License-Identifier: MIT
/*
 * pin.c - the caller's tensor, used in place: START pins its pages
 * (FOLL_LONGTERM: they stay put for the whole allreduce, which may last
 * as long as the step timeout) and maps them contiguously with vmap(); the
 * end of the allreduce (its outcome, which the module takes as soon as the
 * core gives it, or the close of the file, also when the process was
 * killed and its memory is gone) unmaps them and unpins them dirty. So
 * there is no copy of the tensor per step, only this mapping.
 *
 * Pinned pages are locked memory. They are charged as io_uring charges
 * its registered buffers: to the caller's user (locked_vm, against
 * RLIMIT_MEMLOCK, unless the caller has CAP_IPC_LOCK), and to the
 * caller's mm (pinned_vm, VmPin in /proc/PID/status). A page pinned by
 * two tensors at once counts twice.
 *
 * Only anonymous memory, shmem and hugetlbfs are pinned. The module
 * writes the pages for the whole allreduce without the mapping's
 * knowledge, which a filesystem that writes dirty pages back must never
 * see: it would write back, or truncate, pages whose contents change
 * under it.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/hugetlb_inline.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/user.h>
#include <linux/shmem_fs.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "kernel.h"
#include "pin.h"

/* Charge @n pages to the caller's user (unless exempt) and mm. */
static int pin_charge(struct gk_pin *p, unsigned long n, char *msg,
		      size_t len)
{
	struct user_struct *user = NULL;

	if (!ns_capable_noaudit(&init_user_ns, CAP_IPC_LOCK)) {
		unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
		unsigned long cur, want;

		user = get_uid(current_user());
		cur = atomic_long_read(&user->locked_vm);
		do {
			want = cur + n;
			if (want > limit || want < cur) {
				snprintf(msg, len, limit ?
					 "pinning %lu KiB would pass RLIMIT_MEMLOCK (%lu KiB, of which uid %u has %lu KiB locked already): raise it (ulimit -l, systemd's LimitMEMLOCK=) or give the process CAP_IPC_LOCK" :
					 "pinning %lu KiB needs RLIMIT_MEMLOCK, which is %lu KiB for uid %u (%lu KiB locked): raise it (ulimit -l, systemd's LimitMEMLOCK=) or give the process CAP_IPC_LOCK",
					 n << (PAGE_SHIFT - 10),
					 limit << (PAGE_SHIFT - 10),
					 from_kuid_munged(current_user_ns(),
							  current_uid()),
					 cur << (PAGE_SHIFT - 10));
				free_uid(user);
				return limit ? -ENOMEM : -EPERM;
			}
		} while (!atomic_long_try_cmpxchg(&user->locked_vm, &cur, want));
	}
	mmgrab(current->mm);
	atomic64_add(n, &current->mm->pinned_vm);
	p->mm = current->mm;
	p->user = user;
	p->npages = n;
	return 0;
}

static void pin_uncharge(struct gk_pin *p)
{
	if (p->user) {
		atomic_long_sub(p->npages, &p->user->locked_vm);
		free_uid(p->user);
	}
	atomic64_sub(p->npages, &p->mm->pinned_vm);
	mmdrop(p->mm);
}

/* Memory that no filesystem writes back, which may be written for long. */
static bool vma_pinnable(struct vm_area_struct *vma)
{
	return vma_is_anonymous(vma) || is_vm_hugetlb_page(vma) ||
	       shmem_file(vma->vm_file);
}

/* Is [@start, @end) mapped, and all of it pinnable? mmap_lock held. */
static int vmas_check(struct mm_struct *mm, unsigned long start,
		      unsigned long end, char *msg, size_t len)
{
	struct vm_area_struct *vma;
	unsigned long addr;

	for (addr = start; addr < end; addr = vma->vm_end) {
		vma = vma_lookup(mm, addr);
		if (!vma) {
			snprintf(msg, len, "%#lx is not mapped", addr);
			return -EFAULT;
		}
		if (vma_pinnable(vma))
			continue;
		if (!vma->vm_file) {
			snprintf(msg, len, "%#lx is in a special mapping", addr);
			return -EFAULT;
		}
		snprintf(msg, len,
			 "%#lx is in a %s mapping of %pD (%s), which the allreduce would write behind the filesystem's back: use anonymous memory, shmem (memfd, /dev/shm) or hugetlbfs",
			 addr, vma->vm_flags & VM_SHARED ? "shared" : "private",
			 vma->vm_file, vma->vm_file->f_inode->i_sb->s_type->name);
		return -EOPNOTSUPP;
	}
	return 0;
}

/**
 * gk_pin_user() - pin and map @bytes of the caller's memory at @uaddr
 * @p: filled in; zeroed on failure
 * @uaddr: the buffer, 4-byte aligned (float32 values)
 * @bytes: its length, more than 0
 * @msg, @len: why it failed, NUL-terminated
 *
 * Return: 0, -EINVAL (misaligned, empty), -EFAULT (not all of it the
 * caller's writable memory), -EOPNOTSUPP (a file mapping other than shmem
 * and hugetlbfs), -ENOMEM (over RLIMIT_MEMLOCK, or out of memory),
 * -EPERM (RLIMIT_MEMLOCK is 0), -EINTR (a fatal signal).
 */
int gk_pin_user(struct gk_pin *p, u64 uaddr, u64 bytes, char *msg,
		size_t len)
{
	struct mm_struct *mm = current->mm;
	unsigned long start, off, n, done = 0;
	long got;
	int r;

	memset(p, 0, sizeof(*p));
	msg[0] = 0;
	if (!bytes || (uaddr & 3) || uaddr + bytes < uaddr) {
		snprintf(msg, len, "empty, misaligned or wrapping around");
		return -EINVAL;
	}
	if (!mm || !access_ok(u64_to_user_ptr(uaddr), bytes)) {
		snprintf(msg, len, "not in the caller's address space");
		return -EFAULT;
	}
	start = uaddr & PAGE_MASK;
	off = uaddr - start;
	n = DIV_ROUND_UP(off + bytes, PAGE_SIZE);
	r = pin_charge(p, n, msg, len);
	if (r)
		return r;
	p->pages = kvmalloc_array(n, sizeof(*p->pages),
				  GN_KERNEL_GFP);
	if (!p->pages) {
		snprintf(msg, len, "out of memory for %lu page pointers", n);
		r = -ENOMEM;
		goto out_uncharge;
	}
	/* One hold of the lock: no mapping changes between check and pin. */
	mmap_read_lock(mm);
	r = vmas_check(mm, start, start + n * PAGE_SIZE, msg, len);
	while (!r && done < n) {
		got = pin_user_pages(start + done * PAGE_SIZE, n - done,
				     FOLL_WRITE | FOLL_LONGTERM,
				     p->pages + done, NULL);
		if (got > 0)
			done += got;
		else
			r = got ? (int)got : -EFAULT;
	}
	mmap_read_unlock(mm);
	if (r) {
		if (!msg[0])
			snprintf(msg, len, "%s at %#lx (error %d)",
				 r == -EINTR ? "interrupted" :
				 r == -ENOMEM ? "out of memory" :
				 "not writable memory of the caller",
				 start + done * PAGE_SIZE, r);
		goto out_unpin;
	}
	p->vaddr = vmap(p->pages, n, VM_MAP, PAGE_KERNEL);
	if (!p->vaddr) {
		snprintf(msg, len, "out of memory to map %lu pages", n);
		r = -ENOMEM;
		goto out_unpin;
	}
	p->data = (float *)((u8 *)p->vaddr + off);
	return 0;

out_unpin:
	unpin_user_pages(p->pages, done);
	kvfree(p->pages);
out_uncharge:
	pin_uncharge(p);
	memset(p, 0, sizeof(*p));
	return r;
}

/**
 * gk_unpin() - unmap and unpin what gk_pin_user() pinned (dirty: the
 * allreduce wrote its result there) and uncharge it; nothing if nothing
 * is pinned
 * @p: zeroed after
 */
void gk_unpin(struct gk_pin *p)
{
	if (!p->pages)
		return;
	vunmap(p->vaddr);
	unpin_user_pages_dirty_lock(p->pages, p->npages, true);
	kvfree(p->pages);
	pin_uncharge(p);
	memset(p, 0, sizeof(*p));
}
