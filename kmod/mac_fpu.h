/* SPDX-License-Identifier: MIT */
/*
 * mac_fpu.h - the packet MAC as the module calls it: one packet per FPU
 * section (include/gradnet/wire.h, "FPU rule").
 */
#ifndef GN_KMOD_MAC_FPU_H
#define GN_KMOD_MAC_FPU_H

#include <linux/types.h>

struct gn_mac;

int gn_kmod_mac_tag(const struct gn_mac *m, const u8 *buf, size_t len,
		    u64 *tag);
long gn_kmod_mac_seal(const struct gn_mac *m, u8 *pkt, size_t len);
int gn_kmod_mac_check(const struct gn_mac *m, const u8 *pkt, size_t len);

#endif /* GN_KMOD_MAC_FPU_H */
