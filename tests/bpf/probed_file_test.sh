#!/bin/bash
# SPDX-License-Identifier: MIT
#
# probed_file_test.sh - gradnet-stat reads ELF files that a traced process
# chose as untrusted input, and reads the right one:
#  - attach --lib on a crafted file whose stapsdt note's provider string
#    runs to the end of its descriptor (stapsdt_test --write-overflow)
#    fails with a message naming the malformed note, with no sanitizer
#    report (a reader that trusts strlen() reads past the section there)
#  - attach --pid on a process that maps that file executable: the same
#    file, read from the mapping, is refused the same way, and the tool
#    says the process maps no probed file
#  - attach --pid on a rank running in a private mount namespace, from a
#    path that in gradnet-stat's own namespace holds the crafted file:
#    the tool reads the file the rank mapped (/proc/PID/map_files), and
#    the rank's data and step counters reach the map exactly
#
# usage: probed_file_test.sh GRADNET_STAT GN_RANK_TEST STAPSDT_TEST DATA_DIR
# Nothing skips: without root, unshare or python3 the test fails.

set -u

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/net/lib.sh
. "$here/../net/lib.sh"
# shellcheck source=tests/bpf/stat_lib.sh
. "$here/stat_lib.sh"

STAT=$1
RANK=$2
STAPSDT_TEST=$3
DATA=$4
testno=0
failed=0


# clean FILE: no sanitizer spoke in FILE.
clean() {
	! grep -q 'Sanitizer\|runtime error' "$1"
}

echo "TAP version 13"
echo "1..5"
if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null ||
	! command -v python3 >/dev/null; then
	echo "Bail out! needs root, unshare (util-linux) and python3"
	exit 1
fi

tmp=$(mktemp -d)
export GN_STAT_PIN_DIR=/sys/fs/bpf/gradnet-test-$$
mapper=
job=
teardown() {
	[ -z "$mapper" ] || kill "$mapper" 2>/dev/null
	[ -z "$job" ] || kill "$job" 2>/dev/null
	wait 2>/dev/null
	"$STAT" detach >/dev/null 2>&1
	rm -rf "$tmp"
}
trap teardown EXIT

crafted=$tmp/crafted.so
"$STAPSDT_TEST" --write-overflow "$crafted" || echo "# cannot write $crafted"

# ---- a crafted file, named ------------------------------------------------------

r=1
"$STAT" attach --lib "$crafted" >"$tmp/out" 2>&1 && r=0
grep -q "cannot read $crafted: a malformed note" "$tmp/out" || r=0
clean "$tmp/out" || r=0
[ -z "$(ls -A "$GN_STAT_PIN_DIR/links" 2>/dev/null)" ] || r=0
[ "$r" -eq 1 ] || sed 's/^/# /' "$tmp/out"
gn_result $r "attach --lib on a note whose provider runs past its descriptor ($(stat -c %s "$crafted") bytes) fails naming the malformed note, no sanitizer report, nothing attached"

# ---- the same file, mapped by a process -------------------------------------

r=1
python3 -c '
import mmap, sys, time
f = open(sys.argv[1], "rb")
m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ | mmap.PROT_EXEC)
print("mapped", flush=True)
time.sleep(60)
' "$crafted" >"$tmp/mapper" &
mapper=$!
for _ in $(seq 100); do
	grep -q mapped "$tmp/mapper" && break
	sleep 0.05
done
grep -q " r-x. .*crafted.so" "/proc/$mapper/maps" || { echo "# the file is not mapped r-xp"; r=0; }
"$STAT" attach --pid "$mapper" >"$tmp/out" 2>&1 && r=0
grep -q "process $mapper maps no file with gradnet probes" "$tmp/out" || r=0
clean "$tmp/out" || r=0
[ "$r" -eq 1 ] || sed 's/^/# /' "$tmp/out"
gn_result $r "attach --pid on a process that maps the crafted file executable: read from the mapping, refused, no sanitizer report"
kill "$mapper" 2>/dev/null
wait "$mapper" 2>/dev/null
mapper=

# ---- a rank in its own mount namespace ---------------------------------------

# In gradnet-stat's namespace $tmp/bin/gn-rank is the crafted file; in the
# ranks' namespace a tmpfs over $tmp/bin holds gn-rank-test there. Rank 0
# starts alone and waits for rank 1, which starts once rank 0 is traced,
# so every data packet and step comes after the attach.
mkdir "$tmp/bin"
cp "$crafted" "$tmp/bin/gn-rank"
KEY=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
JOB=$((RANDOM * 32768 + RANDOM + 1))
cat >"$tmp/ranks.sh" <<'EOF'
set -e
mount -t tmpfs tmpfs "$T/bin"
cp "$RANK" "$T/bin/gn-rank"
ip link set lo up
rank() {
	exec env GN_RANK="$1" GN_WORLD_SIZE=2 \
		GN_PEERS=127.0.0.1:7000,127.0.0.1:7001 GN_KEY="$KEY" \
		GN_JOB="$JOB" GN_TIMEOUT_MS=20000 GN_DATA_DIR="$DATA" \
		GN_TEST_STATS_FILE="$T/rank.$1.stats" \
		"$T/bin/gn-rank" --warmup 0 --elems 300000 --steps 4 \
		>"$T/rank.$1.json" 2>"$T/rank.$1.err"
}
rank 0 &
echo $! >"$T/rank0.pid"
for _ in $(seq 400); do
	[ -e "$T/go" ] && break
	sleep 0.05
done
(rank 1)
wait
EOF
r=1
T=$tmp RANK=$RANK KEY=$KEY JOB=$JOB DATA=$DATA unshare --mount --net \
	--propagation private bash "$tmp/ranks.sh" >"$tmp/ranks.out" 2>&1 &
job=$!
pid=
for _ in $(seq 200); do
	pid=$(cat "$tmp/rank0.pid" 2>/dev/null) && [ -n "$pid" ] &&
		grep -q "gn-rank" "/proc/$pid/maps" 2>/dev/null && break
	pid=
	sleep 0.05
done
[ -n "$pid" ] || { echo "# rank 0 did not start"; r=0; }
[ -z "$pid" ] || "$STAT" attach --pid "$pid" >"$tmp/out" 2>&1 || r=0
grep -q "^attached 6 probe sites of $tmp/bin/gn-rank in process $pid" "$tmp/out" || r=0
clean "$tmp/out" || r=0
[ "$r" -eq 1 ] || sed 's/^/# /' "$tmp/out"
gn_result $r "attach --pid on a rank in its own mount namespace reads the file it mapped, not the crafted one at that path here"

touch "$tmp/go"
r=1
wait "$job" || { r=0; sed 's/^/# /' "$tmp/ranks.out" "$tmp"/rank.*.err; }
job=
gn_result $r "the 2-rank job in that namespace runs to the end"

"$STAT" dump --json >"$tmp/dump.json" 2>"$tmp/out" || sed 's/^/# /' "$tmp/out"
check usdt-data "$tmp/dump.json" "$JOB" "$tmp/rank.0.stats"

echo "# $((testno - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
