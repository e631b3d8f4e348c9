/* SPDX-License-Identifier: MIT */
/* dev.h - the misc device /dev/gradnet (dev.c). */
#ifndef GN_KMOD_DEV_H
#define GN_KMOD_DEV_H

int gk_dev_register(void);
void gk_dev_unregister(void);

#endif /* GN_KMOD_DEV_H */
