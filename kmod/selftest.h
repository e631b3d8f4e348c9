/* SPDX-License-Identifier: MIT */
/*
 * selftest.h - the codec self-test the module runs when it loads.
 */
#ifndef GN_KMOD_SELFTEST_H
#define GN_KMOD_SELFTEST_H

int gn_selftest_run(void);

#endif /* GN_KMOD_SELFTEST_H */
