/* SPDX-License-Identifier: MIT */
/*
 * stddef.h - kernel module stand-in for the C library header: the public
 * headers include <stddef.h>, and in the kernel size_t, NULL and offsetof
 * come from the kernel's own headers. Only the module build sees this
 * directory.
 */
#ifndef GN_KMOD_SHIM_STDDEF_H
#define GN_KMOD_SHIM_STDDEF_H

#include <linux/stddef.h>
#include <linux/types.h>

#endif /* GN_KMOD_SHIM_STDDEF_H */
