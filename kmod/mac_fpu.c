// SPDX-License-Identifier: MIT
/*
 * mac_fpu.c - the module's only way into the packet MAC. With a key whose
 * NH pass is AVX2 (struct gn_mac isa), lib/wire/mac.c touches YMM
 * registers and opens no FPU section itself, so each call here opens one
 * around exactly one packet: at most GN_WIRE_MAX_PKT bytes, a few
 * microseconds with preemption and softirqs off, never a batch. A scalar
 * key or none (an insecure job) is integer-only and takes no section.
 * Process and softirq context are fine; where the FPU is not usable
 * (a hard interrupt that came in over another section) the calls refuse
 * with -EBUSY rather than clobber someone's registers.
 */
#include <linux/errno.h>
#include <linux/types.h>
#include <asm/fpu/api.h>
#include <asm/simd.h>

#include <gradnet/wire.h>
#include "mac_fpu.h"

/* Whether @m's NH pass needs an FPU section. */
static bool mac_uses_fpu(const struct gn_mac *m)
{
	return m && m->isa;
}

/**
 * gn_kmod_mac_tag() - gn_mac_tag() of one packet, inside an FPU section
 * if its key needs one
 * @m: expanded key
 * @buf: bytes to authenticate
 * @len: their length, at most GN_WIRE_MAX_PKT
 * @tag: out, the tag
 *
 * Return: 0; -EMSGSIZE if @len is over GN_WIRE_MAX_PKT; -EBUSY if the
 * key needs the FPU and this context cannot have it.
 */
int gn_kmod_mac_tag(const struct gn_mac *m, const u8 *buf, size_t len,
		    u64 *tag)
{
	if (len > GN_WIRE_MAX_PKT)
		return -EMSGSIZE;
	if (!mac_uses_fpu(m)) {
		*tag = gn_mac_tag(m, buf, len);
		return 0;
	}
	if (!may_use_simd())
		return -EBUSY;
	kernel_fpu_begin();
	*tag = gn_mac_tag(m, buf, len);
	kernel_fpu_end();
	return 0;
}

/**
 * gn_kmod_mac_seal() - gn_mac_seal() of one packet, inside an FPU section
 * if its key needs one
 * @m: expanded key, or NULL for an insecure job (tag 0)
 * @pkt: packet, with GN_WIRE_TAG bytes of room after @len
 * @len: bytes before the tag, at most GN_WIRE_MAX_PKT - GN_WIRE_TAG
 *
 * Return: the packet length with the tag; -EMSGSIZE if @len is over the
 * limit, -EBUSY if the key needs the FPU and this context cannot have it
 * (in both cases nothing is written).
 */
long gn_kmod_mac_seal(const struct gn_mac *m, u8 *pkt, size_t len)
{
	size_t sealed;

	if (len > GN_WIRE_MAX_PKT - GN_WIRE_TAG)
		return -EMSGSIZE;
	if (!mac_uses_fpu(m))
		return gn_mac_seal(m, pkt, len);
	if (!may_use_simd())
		return -EBUSY;
	kernel_fpu_begin();
	sealed = gn_mac_seal(m, pkt, len);
	kernel_fpu_end();
	return sealed;
}

/**
 * gn_kmod_mac_check() - gn_mac_check() of one received packet, inside an
 * FPU section if its key needs one
 * @m: expanded key, or NULL for an insecure job (tag must be 0)
 * @pkt: the packet
 * @len: its length, tag included
 *
 * Return: 0; -EBADMSG if the tag is wrong or @len out of range; -EBUSY if
 * the key needs the FPU and this context cannot have it (nothing checked:
 * the packet must not be taken).
 */
int gn_kmod_mac_check(const struct gn_mac *m, const u8 *pkt, size_t len)
{
	int ret;

	if (!mac_uses_fpu(m))
		return gn_mac_check(m, pkt, len);
	if (!may_use_simd())
		return -EBUSY;
	kernel_fpu_begin();
	ret = gn_mac_check(m, pkt, len);
	kernel_fpu_end();
	return ret;
}
