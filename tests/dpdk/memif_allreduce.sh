#!/bin/bash
# SPDX-License-Identifier: MIT
#
# memif_allreduce.sh - gradnet jobs on the DPDK transport: two gradnet-rank
# processes, each with its own EAL (no hugepages, no PCI, a file prefix of
# its own) and a net_memif port, rank 0 the memif server and rank 1 the
# client, their poll loops on different CPUs where there are two.
#
#  clean  dense and 3LC, sum and average, 1, 5 and 1000003 floats, three
#         steps: both ranks end with exactly gn-ref's single-process
#         reference (tests/job.h), bit for bit; and one job also over UDP
#         on loopback, which gives the same bytes.
#  big    dense, 26214400 floats: the default tx pool holds a whole step
#  arp    no static neighbour list: the ranks resolve each other by ARP
#         (GN_DPDK_STATS shows the requests), results exact.
#  loss   loss, duplication and reordering in the sender (GN_TEST_FAULTS,
#         which wraps any transport): results still bit-identical to the
#         reference, and the ranks did retransmit.
#  codecs top-k, QSGD, top-k with QSGD values (under loss), CLT-k (its
#         leaders' index sets; with QSGD values under loss), and the
#         entropy stage on 3LC (under loss) and on QSGD: exact.
#  queues two queue pairs and two codec workers a rank: results exact, with
#         loss too; rank k receives on queue k, sends on the other.
#  replay packets recorded in one job and sent again during the next are
#         dropped and counted by the receiving DPDK rank; results exact.
#  race   the client connects while the server is still filling its mbuf
#         pool, before its port started, and is turned away: the job still
#         runs (the transport restarts a port whose link stays down).
#  reopen each rank opens, allreduces (3LC) and closes four contexts in
#         a row in one process (gn-reopen): the port stays up between
#         them; each context's results are those of the same program over
#         UDP on loopback, bit for bit.
#  app    gn-app-port: an application with its own EAL and a memif port
#         of two queue pairs hands gradnet queue 1 (GN_DPDK_QUEUE):
#         results exact, a missing or taken queue refused, and the port
#         still carries the application's frames on queue 0 afterwards.
#  idle   after its last step each rank stays open 2 s (gradnet-rank
#         --idle-ms): the poll loop spins only GN_DPDK_SPIN_US after the
#         last packet, then naps, so the CPU a rank uses meanwhile
#         (idle_cpu_s) is under a quarter of it; a loop that never stops
#         spinning uses most of it (GN_DPDK_POLL_US=0, shown, not asserted).
#  model  model tensors (gn-model-rank): DORE with its quantizer both ways
#         and momentum, the same with the entropy stage both ways (fewer
#         stream bytes than without it), and 3LC's push/pull with loss,
#         duplication and reordering: both ranks' parameters after every
#         step equal the numpy model's (tests/model/model_job.py expect),
#         loss repaired.
#  kill   SIGKILL rank 1 in the middle of a long run: rank 0 fails with
#         -ETIMEDOUT (gradnet-rank exits 3), not before the timeout (how
#         long after it is printed, not asserted: a loaded host delays
#         it); SIGKILL rank 0, the memif server: rank 1, whose port cannot
#         restart without a server, tries a restart (a second after the
#         link went down, well inside its longer timeout), fails the same
#         way and never polls the stopped port.
#
# usage: memif_allreduce.sh GN_RANK_TEST GN_REF GN_APP_PORT GN_MODEL_RANK GN_REOPEN
# Nothing skips: a machine that cannot run DPDK fails the test.

set -eu

here=$(cd "$(dirname "$0")" && pwd)
GN_SKIP_RC=1
# shellcheck source=tests/net/lib.sh
. "$here/../net/lib.sh"

RANK_BIN=$1
REF_BIN=$2
APP_BIN=$3
MODEL_BIN=$4
REOPEN_BIN=$5
WORLD=2
STEPS=3
# GN_TIMEOUT_MS also bounds the opening handshake, which waits for the
# other rank's EAL: under a load of 10 on two CPUs rank 1's took over 2 s
# and rank 0 gave up before the kill (exit 1, "handshake: no answer").
KILL_TIMEOUT_MS=6000
SERVER_KILL_TIMEOUT_MS=6000	# room for the restart a second after link down
RUN_LIMIT=120
KEY=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
MAC0=02:00:00:00:00:01
MAC1=02:00:00:00:00:02
tmp=$(mktemp -d)
prefix=gnmemif$$
mem=1024		# MB of EAL memory per rank
testno=0
failed=0
pids=()
rcs=()
case=0

# teardown: kill the ranks of a case cut short, remove the files and the
# EAL's; lib.sh's cleanup runs it first (it has no namespaces to undo here).
teardown() {
	local pid

	for pid in "${pids[@]}"; do
		kill -9 "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$tmp" /var/run/dpdk/"$prefix"* \
		"${XDG_RUNTIME_DIR:-/nonexistent}"/dpdk/"$prefix"* 2>/dev/null || true
}
gn_on_cleanup teardown
trap cleanup EXIT

# The first two CPUs this process may run on (one twice if it has one).
cpus=$(sed -n 's/^Cpus_allowed_list:\s*//p' /proc/self/status | tr ',' '\n' |
	while IFS=- read -r a b; do seq "$a" "${b:-$a}"; done | head -2 | tr '\n' ' ')
read -r CPU0 CPU1 <<<"$cpus"
CPU1=${CPU1:-$CPU0}

# The key from a file: a process that opens a second context has no
# GN_KEY left (gradnet takes it out of the environment).
(umask 077 && echo "$KEY" >"$tmp/key")

# start_pair NAME ENV ARGS...: the two ranks of one job over a fresh memif
# pair, in the background; JSON to $tmp/NAME.K.json, results to .out.
# env execs, so pids[] are gradnet-rank's own ($RUN_BIN's, if set).
start_pair() {
	local name=$1 extra=$2 k role cpu mac sock
	local -a bin=("$RANK_BIN" --warmup 0)

	[ -z "${RUN_BIN:-}" ] || bin=("$RUN_BIN")

	sock=$tmp/$name.sock
	shift 2
	case=$((case + 1))
	for k in 0 1; do
		if [ "$k" -eq 0 ]; then
			role=server cpu=$CPU0 mac=$MAC0
		else
			role=client cpu=$CPU1 mac=$MAC1
			# The client connects to a socket the server made.
			for _ in $(seq 100); do
				[ -S "$sock" ] && break
				sleep 0.1
			done
		fi
		# shellcheck disable=SC2086
		env GN_RANK=$k GN_WORLD_SIZE=2 GN_KEY_FILE="$tmp/key" GN_TRANSPORT=dpdk \
			GN_PEERS=10.77.0.1:7000,10.77.0.2:7000 \
			GN_DPDK_PEERS=$MAC0,$MAC1 \
			GN_DPDK_EAL="--no-huge -m $mem --no-pci --no-telemetry -l $cpu --file-prefix=$prefix.$case.$k --vdev=net_memif0,role=$role,socket=$sock,socket-abstract=no,mac=$mac --log-level=*:warning" \
			${extra//%k/$k} "${bin[@]}" \
			--out "$tmp/$name.$k.out" "$@" \
			>"$tmp/$name.$k.json" 2>"$tmp/$name.$k.err" &
		pids[k]=$!
	done
}

field() {
	sed -n "s/.*\"$1\": *\([0-9]*\).*/\1/p" "$2"
}

# same_as_ref NAME REF: both ranks' results are REF's bytes.
same_as_ref() {
	cmp -s "$2" "$tmp/$1.0.out" && cmp -s "$2" "$tmp/$1.1.out"
}

ref() {
	local out=$1

	shift
	"$REF_BIN" --world 2 --steps "$STEPS" --out "$out" "$@"
}

echo "TAP version 13"
echo "1..36"
gn_diag "ranks on CPUs $CPU0 and $CPU1"

for codec in none 3lc; do
	for op in sum average; do
		avg=
		[ "$op" = average ] && avg=--average
		for n in 1 5 1000003; do
			name=clean-$codec-$op-$n
			ok=1
			ref "$tmp/$name.ref" --elems "$n" --codec "$codec" $avg
			start_pair "$name" "" --elems "$n" --steps "$STEPS" \
				--codec "$codec" $avg
			gn_wait_ranks "$name" || ok=0
			[ "$ok" -eq 1 ] && same_as_ref "$name" "$tmp/$name.ref" || ok=0
			gn_result "$ok" "memif, $codec, $op, $n floats: both ranks bit-identical to the reference"
		done
	done
done

# A dense step of 25 M floats: ~71 k packets per rank, all packed before
# the first is acknowledged; the default tx pool holds them.
name=big-none
ok=1
ref "$tmp/$name.ref" --elems 26214400 --codec none
start_pair "$name" "" --elems 26214400 --steps "$STEPS" --codec none
gn_wait_ranks "$name" || ok=0
[ "$ok" -eq 1 ] && same_as_ref "$name" "$tmp/$name.ref" || ok=0
gn_result "$ok" "memif, none, 26214400 floats (the default tx pool): bit-identical to the reference"

# No neighbour list: the ranks find each other's MAC by ARP at open.
name=arp
ok=1
start_pair "$name" "GN_DPDK_PEERS=arp,arp GN_DPDK_STATS=$tmp/arp.%k.stats" \
	--elems 1000003 --steps "$STEPS" --codec 3lc
gn_wait_ranks "$name" || ok=0
[ "$ok" -eq 1 ] && same_as_ref "$name" "$tmp/clean-3lc-sum-1000003.ref" || ok=0
for k in 0 1; do
	gn_diag "$name: rank $k $(cat "$tmp/arp.$k.stats" 2>/dev/null)"
	n=$(field arp_asked "$tmp/arp.$k.stats")
	[ "${n:-0}" -gt 0 ] || ok=0
done
gn_result "$ok" "memif, no GN_DPDK_PEERS: peers resolved by ARP, bit-identical to the reference"

# The same job over the UDP socket path on loopback: the same bytes.
name=udp-3lc
ok=1
port=$((20000 + $$ % 20000))
for k in 0 1; do
	env GN_RANK=$k GN_WORLD_SIZE=2 GN_KEY="$KEY" GN_TRANSPORT=udp \
		GN_PEERS=127.0.0.1:$port,127.0.0.1:$((port + 1)) \
		"$RANK_BIN" --warmup 0 \
		--out "$tmp/$name.$k.out" --elems 1000003 --steps "$STEPS" \
		--codec 3lc >"$tmp/$name.$k.json" 2>"$tmp/$name.$k.err" &
	pids[k]=$!
done
gn_wait_ranks "$name" || ok=0
[ "$ok" -eq 1 ] && same_as_ref "$name" "$tmp/clean-3lc-sum-1000003.0.out" || ok=0
gn_result "$ok" "UDP on loopback, 3lc, 1000003 floats: the same bytes as over memif"

# Loss, duplication and reordering in both senders.
for codec in none 3lc; do
	name=faults-$codec
	ok=1
	start_pair "$name" "GN_TEST_FAULTS=loss=0.05,dup=0.02,reorder=0.05" \
		--elems 1000003 --steps "$STEPS" --codec "$codec"
	gn_wait_ranks "$name" || ok=0
	r0=$(field retransmits "$tmp/$name.0.json")
	r1=$(field retransmits "$tmp/$name.1.json")
	rtx=$((${r0:-0} + ${r1:-0}))
	gn_diag "$name: the ranks retransmitted $rtx packets"
	[ "$ok" -eq 1 ] && same_as_ref "$name" "$tmp/clean-$codec-sum-1000003.ref" || ok=0
	[ "$rtx" -gt 0 ] || ok=0
	gn_result "$ok" "memif, $codec, 5% loss, duplication, reordering: bit-identical, loss repaired"
done

# The seam's other codecs, each with the generator keyed by one job id
# (GN_JOB, gn-ref --job) so that QSGD's rounding is the reference's: top-k
# (SparCML's sparse allreduce, the owner's switch to dense included), QSGD
# alone, and top-k with QSGD values under loss, duplication and reordering;
# CLT-k, clean and with QSGD values under the same faults; then the
# entropy stage (zstd packets, the reference without it) on 3LC under
# loss and on QSGD.
job=$((4000 + $$ % 1000))
for spec in topk:density=0.01 qsgd:bits=4 topk:density=0.05,bits=8 \
	cltk:density=0.01,beta=0.5 cltk:density=0.05,bits=4 \
	3lc:entropy=zstd qsgd:bits=4,entropy=zstd; do
	job=$((job + 1))
	name=codec-${spec//[:=,]/-}
	ok=1
	faults=
	case $spec in
	topk:density=0.05,bits=8 | cltk:density=0.05,bits=4 | 3lc:entropy=zstd)
		faults=GN_TEST_FAULTS=loss=0.05,dup=0.02,reorder=0.05 ;;
	esac
	ref "$tmp/$name.ref" --elems 1000003 --codec "$spec" --job "$job"
	start_pair "$name" "GN_JOB=$job $faults" --elems 1000003 \
		--steps "$STEPS" --codec "$spec"
	gn_wait_ranks "$name" || ok=0
	[ "$ok" -eq 1 ] && same_as_ref "$name" "$tmp/$name.ref" || ok=0
	gn_result "$ok" "memif, $spec${faults:+, 5% loss}: both ranks bit-identical to the reference"
done

# Model tensors: each rank's "step" lines (its parameters' hash after
# every step) are the numpy model's, for the job of 2 ranks under JOB.
model_same() {
	local name=$1 k

	for k in 0 1; do
		awk '$1 == "step" { if ($3 == 0) print $1, $2, $3, $4; else print $1, $2, $3 }' \
			"$tmp/$name.$k.json" | cmp -s - "$tmp/$name.model" || return 1
	done
}
# Chunk-stream bytes both ranks of model job NAME sent.
model_sent() {
	sed -n 's/^sent //p' "$tmp/$1.0.json" "$tmp/$1.1.json" |
		awk '{ s += $1 } END { print s + 0 }'
}
for m in dore dorez pp; do
	name=model-$m
	ok=1
	job=$((0x6d656d00 + $$ % 256))
	if [ "$m" = dore ]; then
		faults=""
		args="--up default --down default --opts dore,momentum=0.9"
	elif [ "$m" = dorez ]; then
		faults=""
		args="--up default:entropy=zstd --down default:entropy=zstd --opts dore,momentum=0.9"
	else
		faults=GN_TEST_FAULTS=loss=0.05,dup=0.02,reorder=0.05
		args="--up 3lc --down 3lc"
	fi
	# shellcheck disable=SC2086 # ARGS are words
	"$here/../model/model_job.py" expect --world 2 --job "$job" \
		--elems 300007 --steps 4 $args >"$tmp/$name.model" || ok=0
	# shellcheck disable=SC2086
	RUN_BIN=$MODEL_BIN start_pair "$name" "GN_JOB=$job $faults" --elems 300007 --steps 4 $args
	gn_wait_ranks "$name" || ok=0
	[ "$ok" -eq 1 ] && model_same "$name" || ok=0
	if [ -n "$faults" ]; then
		rtx=$(cat "$tmp/$name.0.json" "$tmp/$name.1.json" |
			sed -n 's/^retransmits //p' | awk '{ s += $1 } END { print s + 0 }')
		gn_diag "$name: the ranks retransmitted $rtx packets"
		[ "$rtx" -gt 0 ] || ok=0
	fi
	if [ "$m" = dorez ]; then
		gn_diag "$name: $(model_sent "$name") stream bytes, model-dore $(model_sent model-dore)"
		[ "$(model_sent "$name")" -lt "$(model_sent model-dore)" ] || ok=0
	fi
	gn_result "$ok" "memif, model tensor ($m${faults:+, 5% loss}): both ranks' parameters equal the numpy model's after every step"
done

# Two queue pairs a rank (GN_DPDK_QUEUES=2) and two codec workers: each
# receive round reads both queues at once, a part per worker, and a
# peer's frames keep to queue peer % 2, which memif carries to the same
# queue of the other end: rank k receives on queue k only and sends on
# queue 1 - k only. Dense clean, 3LC with loss, duplication and
# reordering: results exact either way.
for codec in none 3lc; do
	name=queues-$codec
	ok=1
	faults=
	[ "$codec" = 3lc ] && faults=GN_TEST_FAULTS=loss=0.05,dup=0.02,reorder=0.05
	start_pair "$name" "GN_CODEC_WORKERS=2 GN_DPDK_QUEUES=2 GN_DPDK_STATS=$tmp/$name.%k.stats $faults" \
		--elems 1000003 --steps "$STEPS" --codec "$codec"
	gn_wait_ranks "$name" || ok=0
	[ "$ok" -eq 1 ] && same_as_ref "$name" "$tmp/clean-$codec-sum-1000003.ref" || ok=0
	for k in 0 1; do
		q=$(gn_dpdk_queues "$tmp/$name.$k.stats")
		gn_diag "$name: rank $k queues (rx, tx) $q"
		read -r rx0 tx0 rx1 tx1 rest <<<"$q"
		if [ "$k" -eq 0 ]; then
			[ "${rx0:-0}" -gt 0 ] && [ "${tx1:-0}" -gt 0 ] &&
				[ "${tx0:-1}" -eq 0 ] && [ "${rx1:-1}" -eq 0 ] || ok=0
		else
			[ "${rx1:-0}" -gt 0 ] && [ "${tx0:-0}" -gt 0 ] &&
				[ "${tx1:-1}" -eq 0 ] && [ "${rx0:-1}" -eq 0 ] || ok=0
		fi
		[ -z "${rest:-}" ] || ok=0
	done
	gn_result "$ok" "memif, $codec, two queue pairs and two workers a rank${faults:+, 5% loss}: bit-identical, each peer's frames on its own queue"
done

# Replay across runs: what each rank sent in one job, recorded, is sent
# again from its port during the next job (GN_TEST_FAULTS record= and
# replay=, around the DPDK table): the session keys are new, so the other
# rank drops every replayed packet by reason and the results stay exact.
name=record
ok=1
start_pair "$name" "GN_TEST_FAULTS=record=$tmp/rec.%k" --elems 1000003 \
	--steps "$STEPS" --codec 3lc
gn_wait_ranks "$name" || ok=0
name=replay
start_pair "$name" "GN_TEST_FAULTS=replay=$tmp/rec.%k" --elems 1000003 \
	--steps "$STEPS" --codec 3lc
gn_wait_ranks "$name" || ok=0
[ "$ok" -eq 1 ] && same_as_ref "$name" "$tmp/clean-3lc-sum-1000003.0.out" || ok=0
dropped=0
for k in 0 1; do
	for why in mac replay; do
		n=$(field "$why" "$tmp/$name.$k.json")
		dropped=$((dropped + ${n:-0}))
	done
done
recorded=$(( $(stat -c %s "$tmp/rec.0" 2>/dev/null || echo 0) + \
	     $(stat -c %s "$tmp/rec.1" 2>/dev/null || echo 0) ))
gn_diag "$name: $recorded bytes recorded, $dropped replayed packets dropped (mac or replay)"
[ "$recorded" -gt 0 ] && [ "$dropped" -gt 0 ] || ok=0
gn_result "$ok" "memif: packets of an earlier job replayed into a DPDK rank are dropped and counted, results exact"

# A server slow to start its port: 400000 mbufs take it a second or so
# to fill, and the client, started as soon as the socket exists, gets
# "ID not found" from it; memif itself never connects again.
name=race
ok=1
mem=1800
start_pair "$name" "GN_DPDK_MBUFS=400000" --elems 5 --steps "$STEPS" --codec none
mem=1024
gn_wait_ranks "$name" || ok=0
[ "$ok" -eq 1 ] && same_as_ref "$name" "$tmp/clean-none-sum-5.ref" || ok=0
gn_result "$ok" "memif: a client turned away before the server's port started still joins"

# Contexts one after another in each rank's process, over one memif
# pair, each taking the port as the one before left it. (A context of
# another MTU closes the port and probes it again; then a memif client
# that probes before its server listens again fails to open: a client
# must start after its server, doc/limitations.md, and two processes'
# reopens are not ordered here.)
name=reopen
ok=1
reopen=(--contexts 4 --elems 100003 --codec 3lc)
RUN_BIN=$REOPEN_BIN start_pair "$name" "" "${reopen[@]}"
gn_wait_ranks "$name" || ok=0
port=$((20000 + ($$ + 7) % 20000))
for k in 0 1; do
	env GN_RANK=$k GN_WORLD_SIZE=2 GN_KEY_FILE="$tmp/key" GN_TRANSPORT=udp \
		GN_PEERS=127.0.0.1:$port,127.0.0.1:$((port + 1)) \
		"$REOPEN_BIN" "${reopen[@]}" \
		--out "$tmp/$name-udp.$k.out" \
		>"$tmp/$name-udp.$k.json" 2>"$tmp/$name-udp.$k.err" &
	pids[k]=$!
done
gn_wait_ranks "$name-udp" || ok=0
for k in 0 1; do
	gn_diag "$name: rank $k: $(tr '\n' ' ' <"$tmp/$name.$k.json")"
	for i in 0 1 2 3; do
		cmp -s "$tmp/$name.$k.out.$i" "$tmp/$name-udp.$k.out.$i" &&
			cmp -s "$tmp/$name.$k.out.$i" "$tmp/$name.0.out.$i" || ok=0
	done
done
gn_result "$ok" "memif: four contexts in a row in each rank's process: every allreduce bit-identical to the UDP path's"

# An application's own port, one queue of it gradnet's.
name=app
ok=1
case=$((case + 1))
for k in 0 1; do
	if [ "$k" -eq 1 ]; then
		for _ in $(seq 100); do
			[ -S "$tmp/$name.sock" ] && break
			sleep 0.1
		done
	fi
	cpu=$CPU0
	[ "$k" -eq 1 ] && cpu=$CPU1
	env GN_PEERS=10.77.0.1:7000,10.77.0.2:7000 GN_DPDK_PEERS=$MAC0,$MAC1 \
		"$APP_BIN" "$k" "$tmp/$name.sock" "$cpu" "$prefix.$case.$k" \
		>"$tmp/$name.$k.json" 2>"$tmp/$name.$k.err" &
	pids[k]=$!
done
gn_wait_ranks "$name" || ok=0
gn_result "$ok" "memif: an application's port, queue 1 handed to gradnet: results exact, the port the application's after"

# Idle between steps: naps, not a spinning core. Contention can only
# lower a thread's CPU time, so the bound holds on a busy host too.
IDLE_MS=2000
idle_cpu() {
	sed -n 's/.*"idle_cpu_s": *\([0-9.]*\).*/\1/p' "$1"
}
name=idle
ok=1
start_pair "$name" "" --elems 65536 --steps "$STEPS" --codec none \
	--idle-ms "$IDLE_MS"
gn_wait_ranks "$name" || ok=0
for k in 0 1; do
	c=$(idle_cpu "$tmp/$name.$k.json")
	gn_diag "$name: rank $k used ${c:-?} CPU seconds in ${IDLE_MS} ms idle"
	awk -v c="${c:-9}" -v t="$IDLE_MS" 'BEGIN { exit !(c < t / 4000) }' || ok=0
done
name=idle-poll
start_pair "$name" "GN_DPDK_POLL_US=0" --elems 65536 --steps "$STEPS" \
	--codec none --idle-ms "$IDLE_MS"
gn_wait_ranks "$name" || ok=0
gn_diag "$name: never sleeping, rank 0 used $(idle_cpu "$tmp/$name.0.json") CPU seconds in ${IDLE_MS} ms idle"
gn_result "$ok" "memif: a rank idle between steps naps (its CPU time under a quarter of the idle time)"

# joined NAME: both ranks of NAME hold their session (GN_TEST_SESSION_FILE
# written), then a second of steps; under load the EAL alone can take
# seconds, and a rank killed before the other joined tests the handshake.
joined() {
	local k

	for k in 0 1; do
		for _ in $(seq 600); do
			[ -s "$tmp/$1.$k.session" ] && break
			sleep 0.1
		done
	done
	sleep 1
}

# A killed rank: the other one gives up with -ETIMEDOUT.
name=kill
ok=1
start_pair "$name" "GN_TIMEOUT_MS=$KILL_TIMEOUT_MS GN_TEST_SESSION_FILE=$tmp/$name.%k.session" \
	--elems 1000003 --steps 100000 --codec 3lc
joined "$name"
t0=$(date +%s.%N)
kill -9 "${pids[1]}" 2>/dev/null || ok=0
wait "${pids[1]}" 2>/dev/null || true
rc=0
wait "${pids[0]}" || rc=$?
t1=$(date +%s.%N)
pids=()
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
gn_diag "$name: rank 0 exited $rc after ${secs}s: $(tr '\n' ' ' <"$tmp/$name.0.json")"
[ "$rc" -eq 3 ] || gn_diag "$name: rank 0: $(grep -v '^EAL' "$tmp/$name.0.err" | tail -3 | tr '\n' ' ')"
[ "$rc" -eq 3 ] || ok=0
grep -q '"error": "a peer went silent"' "$tmp/$name.0.json" || ok=0
awk -v s="$secs" -v t="$KILL_TIMEOUT_MS" 'BEGIN { exit !(s >= t / 2000) }' || ok=0
gn_result "$ok" "memif: rank 1 killed, rank 0 fails with -ETIMEDOUT, not before the timeout"

# The server killed: the client's port stays down, its restarts fail.
name=kill-server
ok=1
start_pair "$name" "GN_TIMEOUT_MS=$SERVER_KILL_TIMEOUT_MS GN_TEST_SESSION_FILE=$tmp/$name.%k.session" \
	--elems 1000003 --steps 100000 --codec 3lc
joined "$name"
kill -9 "${pids[0]}" 2>/dev/null || ok=0
wait "${pids[0]}" 2>/dev/null || true
rc=0
wait "${pids[1]}" || rc=$?
pids=()
gn_diag "$name: rank 1 exited $rc: $(tr '\n' ' ' <"$tmp/$name.1.json")"
[ "$rc" -eq 3 ] || ok=0
# The restart was tried (a second after the link went down) and failed.
grep -q "does not restart" "$tmp/$name.1.err" || ok=0
if grep -q "not ready port" "$tmp/$name.1.err"; then
	gn_diag "$name: rank 1 polled its stopped port: $(grep -m1 "not ready" "$tmp/$name.1.err")"
	ok=0
fi
gn_result "$ok" "memif: rank 0 (the server) killed, rank 1 fails with -ETIMEDOUT and leaves its stopped port alone"

[ "$failed" -eq 0 ]
