/* SPDX-License-Identifier: MIT */
/*
 * user.h - the contexts each user holds (user.c), which OPEN counts
 * against max_contexts_per_user.
 */
#ifndef GN_KMOD_USER_H
#define GN_KMOD_USER_H

#include <linux/uidgid.h>

int gk_user_get(kuid_t uid, unsigned int max, unsigned int *held);
void gk_user_put(kuid_t uid);

#endif /* GN_KMOD_USER_H */
