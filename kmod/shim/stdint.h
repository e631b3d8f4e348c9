/* SPDX-License-Identifier: MIT */
/*
 * stdint.h - kernel module stand-in for the C library header: the kernel's
 * types already provide uint8_t to uint64_t and int8_t to int64_t, and
 * the compiler's own stdint.h would define uint64_t differently. Only the
 * module build sees this directory.
 */
#ifndef GN_KMOD_SHIM_STDINT_H
#define GN_KMOD_SHIM_STDINT_H

#include <linux/types.h>
#include <linux/limits.h>

#endif /* GN_KMOD_SHIM_STDINT_H */
