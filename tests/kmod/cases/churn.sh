#!/bin/bash
# SPDX-License-Identifier: MIT
# churn.sh - short jobs back to back (KT_CHURN_JOBS, default 12): two
# kmod ranks and a UDP rank (the slowest to finish under TCG) open,
# allreduce once and close at once, so a kmod rank's close races its
# worker's last sends and the peers' last packets. Every job gives the
# reference; afterwards no file is left open.
# ref: churn 3 1 5:3lc:sum,100003:none:avg
# shellcheck source=tests/kmod/guest_lib.sh
. /gn/lib.sh

gn_net_setup 3
jobs=${KT_CHURN_JOBS:-12}
bad=0
for ((j = 0; j < jobs; j++)); do
	if ! kt_job churn /tmp/c kmod udp kmod; then
		bad=$((bad + 1))
		kt_show /tmp/c.0 /tmp/c.1 /tmp/c.2
		continue
	fi
	for k in 0 1 2; do
		kt_same_as_ref "/tmp/c.$k" churn || bad=$((bad + 1))
	done
done
ok "$bad" "$jobs short jobs (kmod, udp, kmod) opened, gave the reference and closed ($bad failures)"
kt_refcnt_zero
ok $? "every file closed: gradnet's refcnt is 0"
