#!/bin/bash
# SPDX-License-Identifier: MIT
# kill.sh - rank 2 of three kmod ranks is killed with SIGKILL in the middle
# of step 1's allreduce (rank 1 holds back, so nobody can finish it); the
# other two then fail that step with -ETIMEDOUT naming rank 2, close, and
# the module unloads. Without the module, GN_TRANSPORT=kmod fails with
# -ENODEV and says how to load it; then the module is loaded again.
# ref: kill 3 3 1000003:3lc:sum,5:none:sum
# shellcheck source=tests/kmod/guest_lib.sh
. /gn/lib.sh

KT_TIMEOUT_MS=3000
gn_net_setup 3
kt_ref kill
kt_rank 0 kmod /tmp/k.0
pids=("$!")
kt_rank 1 kmod /tmp/k.1 --hold 1:/tmp/kill.go
pids+=("$!")
kt_rank 2 kmod /tmp/k.2
p2=$!
for ((i = 0; i < 1200; i++)); do
	grep -qs '^started 1' /tmp/k.0 && grep -qs '^started 1' /tmp/k.2 && break
	sleep 0.1
done
ok $((i == 1200)) "ranks 0 and 2 finished step 0 and started step 1's allreduce"
grep '^hash 0 ' /tmp/k.0 | sort >/tmp/k.step0
grep '^hash 0 ' "/gn/ref/kill.hash" >/tmp/ref.step0
cmp -s /tmp/k.step0 /tmp/ref.step0
ok $? "step 0 was bit-identical to the reference"
sleep 0.5
comm=$(cat "/proc/$p2/comm" 2>/dev/null)
[ "$comm" = kmod_job ]
ok $? "rank 2's PID $p2 is the rank itself ($comm)"
kill -9 "$p2"
wait "$p2"
st=$?
ok $((st != 137)) "rank 2 died of SIGKILL mid-allreduce (status $st)"
touch /tmp/kill.go
for k in 0 1; do
	kt_wait "${pids[$k]}" 120
	st=$?
	ok $((st != 1)) "rank $k failed (status $st, want 1)"
	line=$(grep '^error 1 ' "/tmp/k.$k")
	echo "# rank $k: $line"
	case $line in
	"error 1 110 "*"rank 2"*) r=0 ;;
	*) r=1 ;;
	esac
	ok "$r" "rank $k: step 1 failed with -ETIMEDOUT naming rank 2"
done
grep -q '^error 1 ' /tmp/k.0 /tmp/k.1 || kt_show /tmp/k.0 /tmp/k.1 /tmp/k.2
kt_refcnt_zero
ok $? "every file closed: gradnet's refcnt is 0"
rmmod gradnet
ok $? "rmmod gradnet after the kill"
GN_TRANSPORT=kmod GN_RANK=0 GN_WORLD_SIZE=2 GN_PEERS=127.0.0.1:7300,127.0.0.1:7301 \
	GN_KEY=$KT_KEY /gn/bin/kmod_job rank --tensors 4:3lc:sum --steps 1 >/tmp/nodev 2>&1
line=$(grep '^error open' /tmp/nodev)
echo "# without the module: $line"
case $line in
"error open 19 "*modprobe*|"error open 19 "*insmod*) r=0 ;;
*) r=1 ;;
esac
ok "$r" "without the module GN_TRANSPORT=kmod fails with -ENODEV and says how to load it"
insmod /gn/gradnet.ko
ok $? "gradnet loads again"
