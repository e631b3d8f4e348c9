#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tc_refuse_test.sh - the tc program counts only gradnet datagrams whose
# header holds together, of a job it knows, on a port of the job's, and a
# stranger cannot crowd the real flows out of its map. Three hosts on a
# bridge (tests/net/lib.sh): ranks 0 and 1 of real jobs on hosts 0 and 1,
# a stranger on host 2 (tests/bpf/forge_gn.py, plain UDP sockets).
# gradnet-stat is attached to the ranks' USDT probes, to host 0's eth0
# with its jobs and port given (--job, --port), and to host 1's eth0 with
# its jobs given and its ports learnt from what its rank sends. Then:
#  - a real job: each rank's egress equals what it sent; what host 1
#    received is what host 0 sent, less what came before host 1's rank
#    had sent from its port (refused as port)
#  - the stranger sends "GN" and random bytes, headers of protocol
#    version 2, headers whose lengths do not add up, well-formed headers
#    of an unknown job, of a known job to a port no rank uses (on both
#    hosts): each kind is refused, counted by reason, and makes no flow
#  - a flood of well-formed datagrams of a known job, each of another
#    flow: the job gets its share of flow records, the rest refused as full
#  - a real job after the flood is counted exactly, on both hosts
#  - dump --openmetrics and top show the refused counts the JSON has
#  - detach leaves nothing pinned
#
# usage: tc_refuse_test.sh GRADNET_STAT GN_RANK_TEST
# Nothing skips: a missing capability fails the test (GN_SKIP_RC=1).

set -eu

here=$(cd "$(dirname "$0")" && pwd)
GN_SKIP_RC=${GN_SKIP_RC:-1}
# shellcheck source=tests/net/lib.sh
. "$here/../net/lib.sh"
# shellcheck source=tests/bpf/stat_lib.sh
. "$here/stat_lib.sh"

STAT=$1
RANK_TEST=$2
WORLD=2
PORT=7000
OTHER_PORT=7001
ELEMS=400000
STEPS=4
# bpf/gradnet_stat.h: GN_STAT_WIRE_PER_JOB
SHARE=4096
FLOOD=5000
testno=0
failed=0
pids=()

for b in "$STAT" "$RANK_TEST"; do
	[ -x "$b" ] || gn_skip "$b not built"
done
command -v python3 >/dev/null || gn_skip "python3 missing"
gn_require_net

tmp=$(mktemp -d)
export GN_STAT_PIN_DIR=/sys/fs/bpf/gradnet-test-$$
gn_on_cleanup "'$STAT' detach --dev eth0 --netns '$(gn_host_ns 0)' >/dev/null 2>&1 || true"
gn_on_cleanup "'$STAT' detach --dev eth0 --netns '$(gn_host_ns 1)' >/dev/null 2>&1 || true"
gn_on_cleanup "'$STAT' detach >/dev/null 2>&1 || true"
gn_on_cleanup "rm -rf '$tmp'"
gn_net_setup 3

KEY=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
JOB=$((RANDOM * 32768 + RANDOM + 1))
JOB2=$((JOB + 1))
JOBF=$((JOB + 2))
PEERS="$(gn_host_addr 0):$PORT,$(gn_host_addr 1):$PORT"

echo "TAP version 13"
echo "1..19"

# dump FILE: the maps as JSON.
dump() {
	"$STAT" dump --json >"$1" 2>"$tmp/dump.err" || gn_diag "dump: $(cat "$tmp/dump.err")"
}

# forge HOST PORT KIND COUNT [JOB]: the stranger's datagrams to HOST:PORT,
# with the maps dumped before ($tmp/before.json) and after ($tmp/after.json).
forge() {
	dump "$tmp/before.json"
	sent=$(gn_host_exec 2 python3 "$here/forge_gn.py" "$3" \
		"$(gn_host_addr "$1")" "$2" "$4" ${5:+"$5"})
	# What is in flight has reached tc by the time the stranger is done;
	# a short wait covers the bridge's queue.
	sleep 0.2
	dump "$tmp/after.json"
}

# refused_port FILE: datagrams refused as port, in all.
refused_port() {
	python3 -c 'import json, sys
print(sum(e["packets"] for e in json.load(open(sys.argv[1]))["tc_refused"]
          if e["reason"] == "port"))' "$1"
}

# ---- attach ----------------------------------------------------------------------

ok=1
"$STAT" attach --lib "$RANK_TEST" >"$tmp/attach" 2>&1 || ok=0
"$STAT" attach --dev eth0 --netns "$(gn_host_ns 0)" --job "$JOB,$JOB2,$JOBF" \
	--port "$PORT" >>"$tmp/attach" 2>&1 || ok=0
"$STAT" attach --dev eth0 --netns "$(gn_host_ns 1)" --job "$JOB,$JOB2" \
	>>"$tmp/attach" 2>&1 || ok=0
[ "$ok" -eq 1 ] || sed 's/^/# /' "$tmp/attach"
gn_result "$ok" "attach: USDT on gn-rank-test, tc on host 0 (jobs and port given) and host 1 (jobs given, ports learnt)"

# ---- a real job --------------------------------------------------------------------

ok=1
run_job real "$RANK_TEST" "$JOB" || ok=0
gn_result "$ok" "a 2-rank job, $ELEMS floats, $STEPS steps"
dump "$tmp/real.json"
early=$(refused_port "$tmp/real.json")
gn_diag "host 1 refused $early datagrams that came before its rank had sent from port $PORT"
check wire "$tmp/real.json" "$JOB" "$([ "$early" -eq 0 ] && echo clean || echo "$early")" \
	"$tmp"/real.*.stats

# ---- a stranger --------------------------------------------------------------------

forge 0 "$PORT" junk 500
check refused "$tmp/before.json" "$tmp/after.json" header,version "$sent"
forge 0 "$PORT" version 300 "$JOB"
check refused "$tmp/before.json" "$tmp/after.json" version "$sent"
forge 0 "$PORT" header 300 "$JOB"
check refused "$tmp/before.json" "$tmp/after.json" header "$sent"
forge 0 "$PORT" job 300
check refused "$tmp/before.json" "$tmp/after.json" job "$sent"
forge 0 "$OTHER_PORT" job 300 "$JOB"
check refused "$tmp/before.json" "$tmp/after.json" port "$sent"
forge 1 "$OTHER_PORT" job 300 "$JOB"
check refused "$tmp/before.json" "$tmp/after.json" port "$sent"

forge 0 "$PORT" flood "$FLOOD" "$JOBF"
check budget "$tmp/before.json" "$tmp/after.json" "$JOBF" "$sent" "$SHARE" "$(nproc)"

# ---- real flows after all that -------------------------------------------------------

ok=1
run_job after "$RANK_TEST" "$JOB2" || ok=0
gn_result "$ok" "a second 2-rank job after the flood"
dump "$tmp/after-job.json"
check wire "$tmp/after-job.json" "$JOB2" clean "$tmp"/after.*.stats

# ---- what operators see ----------------------------------------------------------------

"$STAT" dump --openmetrics >"$tmp/dump.om" 2>&1 || gn_diag "dump --openmetrics failed"
"$STAT" top --count 1 >"$tmp/top" 2>&1 || gn_diag "top failed"
dump "$tmp/views.json"
check refused-views "$tmp/dump.om" "$tmp/top" "$tmp/views.json"

ok=1
for ((k = 0; k < 2; k++)); do
	"$STAT" detach --dev eth0 --netns "$(gn_host_ns "$k")" >/dev/null || ok=0
done
"$STAT" detach >"$tmp/detach" 2>&1 || { ok=0; sed 's/^/# /' "$tmp/detach"; }
[ ! -e "$GN_STAT_PIN_DIR" ] || ok=0
gn_result "$ok" "detach leaves nothing pinned"

echo "# $((testno - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
