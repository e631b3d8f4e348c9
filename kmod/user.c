// SPDX-License-Identifier: MIT
/*
 * user.c - the contexts each user holds, against max_contexts_per_user.
 * A joined context is a kernel thread and a socket that no rlimit sees
 * (kthreads are not the user's processes), so the module counts them
 * itself, per user id as the kernel knows it (the global kuid: a
 * container's root is not the host's).
 */
#include <linux/mutex.h>
#include <linux/uidgid.h>
#include <linux/xarray.h>

#include "user.h"

/* Contexts per kuid, as xarray values; a user with none has no entry. */
static DEFINE_XARRAY(gk_users);
static DEFINE_MUTEX(gk_users_lock);

/**
 * gk_user_get() - count one more context of @uid, if it has fewer than @max
 * @uid: the opener
 * @max: the bound
 * @held: set to the contexts @uid holds (before this one)
 *
 * Return: 0, -EMFILE if @uid holds @max already, -ENOMEM.
 */
int gk_user_get(kuid_t uid, unsigned int max, unsigned int *held)
{
	unsigned long key = __kuid_val(uid);
	unsigned int n;
	int r = 0;

	mutex_lock(&gk_users_lock);
	n = xa_to_value(xa_load(&gk_users, key) ?: xa_mk_value(0));
	*held = n;
	if (n >= max)
		r = -EMFILE;
	else
		r = xa_err(xa_store(&gk_users, key, xa_mk_value(n + 1),
				    GFP_KERNEL));
	mutex_unlock(&gk_users_lock);
	return r;
}

/**
 * gk_user_put() - one context of @uid is gone
 * @uid: as given to a gk_user_get() that returned 0
 */
void gk_user_put(kuid_t uid)
{
	unsigned long key = __kuid_val(uid);
	unsigned int n;

	mutex_lock(&gk_users_lock);
	n = xa_to_value(xa_load(&gk_users, key) ?: xa_mk_value(0));
	if (WARN_ON_ONCE(!n))
		goto out_unlock;
	if (n == 1)
		xa_erase(&gk_users, key);
	else
		xa_store(&gk_users, key, xa_mk_value(n - 1), GFP_KERNEL);
out_unlock:
	mutex_unlock(&gk_users_lock);
}
