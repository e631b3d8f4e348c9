/* SPDX-License-Identifier: MIT */
/*
 * selftest.h - the self-tests the module runs when it loads: the codec's
 * (selftest.c), lib/wire's and the cryptography's (selftest_wire.c), and the
 * protocol core's, a whole job over a lossy in-memory fabric
 * (selftest_core.c).
 */
#ifndef GN_KMOD_SELFTEST_H
#define GN_KMOD_SELFTEST_H

int gn_selftest_run(void);
int gn_selftest_wire_run(void);
int gn_selftest_core_run(void);

#endif /* GN_KMOD_SELFTEST_H */
