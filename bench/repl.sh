#!/usr/bin/env bash
# bench/repl.sh — throughput of a primary with 0 and with N replicas
# attached, ratekv against redis-server, and the replication lag under
# that load.
#
# Each round runs every (server, replicas, workload, pipeline) cell on
# fresh processes, in an order that alternates between rounds: the primary
# pinned to $SERVER_CORE (ratekv with GOMAXPROCS=1), its replicas (ratekv
# with GOMAXPROCS=1 too) and the load generator to $CLIENT_CORE, the
# replicas under SCHED_IDLE (REPLICA_SCHED=idle) so that the load
# generator goes first: on a 2-core machine this stands in for replicas
# on machines of their own, for both servers alike (their lag shows what
# they could not keep up with). Nice alone does not do that: a niced
# replica that is running when the load generator wakes keeps the core
# for part of its slice, and ratekv's replicas, which apply several times
# Redis's records, would be charged to ratekv's throughput.
# REPLICA_SCHED=nice runs them at nice $REPLICA_NICE instead.
# After each run with replicas it reads the primary's and the replicas'
# offsets (the lag, in bytes, while the load still runs) and times
# `WAIT 1 $WAIT_MAX_MS` on an idle connection (">…" when it timed out).
# It also reads, over the load generator's run, the idle share of both
# cores and the CPU time the replicas took: a load generator's core with
# no idle time left while the primary's has some is the client-bound case
# (the cell then measures what the replicas take from the load generator,
# not what they cost the primary).
# It prints per-round numbers and the medians: ratekv with N replicas
# against ratekv alone, and against redis-server with N replicas.
#
# Environment (defaults in brackets):
#   WORKLOADS ["throttle set"]  (throttle: ratekv CL.THROTTLE, redis gcra.lua)
#   PIPELINES ["1 32"]  REPLICAS [2]  ROUNDS [5]  DURATION [5s]  WARMUP [1s]
#   CONNS [50]  KEYS [100000]  SERVER_CORE [0]  CLIENT_CORE [1]
#   WAIT_MAX_MS [10000]  REPLICA_SCHED [idle] (idle: chrt --idle 0; nice: nice -n REPLICA_NICE)  REPLICA_NICE [19]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORKLOADS=${WORKLOADS:-"throttle set"}
PIPELINES=${PIPELINES:-"1 32"}
REPLICAS=${REPLICAS:-2}
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5s}
WARMUP=${WARMUP:-1s}
CONNS=${CONNS:-50}
KEYS=${KEYS:-100000}
SERVER_CORE=${SERVER_CORE:-0}
CLIENT_CORE=${CLIENT_CORE:-1}
REPLICA_NICE=${REPLICA_NICE:-19}
WAIT_MAX_MS=${WAIT_MAX_MS:-10000}
REPLICA_SCHED=${REPLICA_SCHED:-idle}
LOG_PREFIX=repl
SERVERS="ratekv redis"
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
build_tools
((HAVE_RATEKV)) || die "$RATEKV_NOTE"

trap 'stop_all; cleanup' EXIT

# start SERVER PORT CORE [replicaof-port]: one process on a fresh directory.
start() {
	local dir
	dir=$(mktemp -d "$TMP/d.XXXXXX")
	local of=() nice=()
	if [[ -n ${4:-} ]]; then
		of=(--replicaof 127.0.0.1 "$4")
		case $REPLICA_SCHED in
		idle) nice=(chrt --idle 0) ;;
		nice) nice=(nice -n "$REPLICA_NICE") ;;
		*) die "REPLICA_SCHED is idle or nice, not $REPLICA_SCHED" ;;
		esac
	fi
	if [[ $1 == ratekv ]]; then
		GOMAXPROCS=1 pin "$3" "${nice[@]}" "$TMP/ratekv" --bind 127.0.0.1 --port "$2" --dir "$dir" \
			--save '' --appendonly no --loglevel warning "${of[@]}" >"$dir/log" 2>&1 &
	else
		pin "$3" "${nice[@]}" redis-server --bind 127.0.0.1 --port "$2" --dir "$dir" \
			--save '' --appendonly no --loglevel warning --repl-diskless-sync-delay 0 "${of[@]}" >"$dir/log" 2>&1 &
	fi
	PIDS+=($!)
	for _ in $(seq 100); do
		redis-cli -p "$2" ping >/dev/null 2>&1 && return
		sleep 0.05
	done
	die "$1 on port $2 did not start"
}

# idle CORE: that core's idle and total ticks so far (/proc/stat).
idle() { awk -v c="cpu$1" '$1 == c { t = 0; for (i = 2; i <= NF; i++) t += $i; print $5 + $6, t }' /proc/stat; }
# cputime PID...: their and their descendants' user and system ticks so
# far (a pid in PIDS may be the subshell that runs the server).
cputime() {
	local t=0 p
	for p in "$@"; do
		t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)))
		# shellcheck disable=SC2046
		t=$((t + $(cputime $(pgrep -P "$p"))))
	done
	echo "$t"
}
# share I0 T0 I1 T1: the idle percentage between two idle readings.
share() { python3 -c "import sys; a=[int(x) for x in sys.argv[1:]]; print('%.0f' % (100 * (a[2] - a[0]) / max(a[3] - a[1], 1)))" "$@"; }

# online PORT: how many replicas the primary at PORT streams to.
online() { redis-cli -p "$1" info replication | grep -c 'state=online' || true; }

field() { redis-cli -p "$1" info replication | tr -d '\r' | sed -n "s/^$2://p"; }

# cell SERVER REPLICAS WORKLOAD PIPELINE: prints "ops/s lag_bytes wait_us
# idle_server_core% idle_client_core% replicas_cpu_s".
cell() {
	local primary wl lag="-" wait="-" json ops
	primary=$(port)
	start "$1" "$primary" "$SERVER_CORE"
	for _ in $(seq "$2"); do start "$1" "$(port)" "$CLIENT_CORE" "$primary"; done
	if (($2)); then
		# Online, not only connected: a replica waiting for its full sync
		# (Redis's repl-diskless-sync-delay is 5 s by default) applies
		# nothing and would make the primary look free.
		for _ in $(seq 200); do
			(($(online "$primary") == $2)) && break
			sleep 0.1
		done
		(($(online "$primary") == $2)) || die "$1: replicas did not come online"
	fi
	wl=$3
	[[ $3 == throttle ]] && { [[ $1 == ratekv ]] && wl=throttle_cell || wl=throttle_lua; }
	local replicas=("${PIDS[@]:1}") s0 c0 s1 c1 r0
	read -r -a s0 <<<"$(idle "$SERVER_CORE")"
	read -r -a c0 <<<"$(idle "$CLIENT_CORE")"
	r0=$(cputime ${replicas[@]+"${replicas[@]}"})
	pin "$CLIENT_CORE" "$TMP/loadgen" -addr "127.0.0.1:$primary" -workload "$wl" -pipeline "$4" -duration "$DURATION" \
		-warmup "$WARMUP" -conns "$CONNS" -keys "$KEYS" -json >"$TMP/out.json" 2>/dev/null &
	local lg=$!
	if (($2)); then
		# The lag in the middle of the measured run: the primary's offset less
		# the slowest replica's.
		sleep "$(python3 -c "import re,sys; d=lambda s: float(re.sub('[a-z]+$','',s)) * (0.001 if s.endswith('ms') else 1); print(d('$WARMUP') + d('$DURATION') / 2)")"
		lag=$(redis-cli -p "$primary" info replication | tr -d '\r' | python3 -c '
import re, sys
text = sys.stdin.read()
mo = int(re.search(r"master_repl_offset:(\d+)", text).group(1))
offs = [int(x) for x in re.findall(r"slave\d+:.*?offset=(\d+)", text)]
print(mo - min(offs) if offs else "-")')
	fi
	wait "$lg" || true
	read -r -a s1 <<<"$(idle "$SERVER_CORE")"
	read -r -a c1 <<<"$(idle "$CLIENT_CORE")"
	local busy rcpu
	busy="$(share "${s0[@]}" "${s1[@]}") $(share "${c0[@]}" "${c1[@]}")"
	rcpu=$(python3 -c "print('%.1f' % (($(cputime ${replicas[@]+"${replicas[@]}"}) - $r0) / $(getconf CLK_TCK)))")
	if (($2)); then
		wait=$(python3 - "$primary" "$WAIT_MAX_MS" <<'EOF'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"SET repl:probe 1\r\n"); s.recv(64)
t = time.perf_counter()
s.sendall(b"WAIT 1 %d\r\n" % int(sys.argv[2])); acked = s.recv(64)
us = round((time.perf_counter() - t) * 1e6)
print(us if acked.startswith(b":1") else ">%d" % (int(sys.argv[2]) * 1000))
EOF
)
	fi
	ops=$(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["ops_per_sec"]))' "$TMP/out.json" 2>/dev/null || echo 0)
	stop_all
	echo "$ops $lag $wait $busy $rcpu"
}

declare -A ops
echo "$ROUNDS rounds of $DURATION, $CONNS conns, $KEYS keys, $REPLICAS replicas; primary on core $SERVER_CORE, replicas ($REPLICA_SCHED) and load on core $CLIENT_CORE"
echo
echo "| round | server | replicas | workload | pipeline | ops/s | lag bytes | WAIT 1 µs | idle % core $SERVER_CORE / $CLIENT_CORE | replicas' CPU s |"
echo "|---:|---|---:|---|---:|---:|---:|---:|---:|---:|"
cells=()
for s in ratekv redis; do for n in 0 "$REPLICAS"; do for w in $WORKLOADS; do for p in $PIPELINES; do
	cells+=("$s $n $w $p")
done; done; done; done
for r in $(seq "$ROUNDS"); do
	order=("${cells[@]}")
	((r % 2)) || mapfile -t order < <(printf '%s\n' "${cells[@]}" | tac)
	for c in "${order[@]}"; do
		read -r s n w p <<<"$c"
		read -r o lag wait i0 i1 rc <<<"$(cell "$s" "$n" "$w" "$p" || echo "0 - - - - -")"
		o=${o:-0}
		ops[$c]+="$o "
		echo "| $r | $s | $n | $w | $p | $o | $lag | $wait | $i0 / $i1 | $rc |"
	done
done

med() { python3 -c "import statistics,sys; v=[float(x) for x in sys.argv[1:] if float(x) > 0]; print(statistics.median(v) if v else 0)" "$@"; }
echo
echo "| workload | pipeline | ratekv $REPLICAS replicas / ratekv alone | ratekv / redis, both with $REPLICAS replicas |"
echo "|---|---:|---:|---:|"
for w in $WORKLOADS; do for p in $PIPELINES; do
	own=() vs=()
	read -ra r0 <<<"${ops[ratekv 0 $w $p]}"
	read -ra rn <<<"${ops[ratekv $REPLICAS $w $p]}"
	read -ra dn <<<"${ops[redis $REPLICAS $w $p]}"
	for i in "${!r0[@]}"; do
		own+=("$(python3 -c "print(${rn[$i]:-0}/max(${r0[$i]:-0},1))")")
		vs+=("$(python3 -c "print(${rn[$i]:-0}/max(${dn[$i]:-0},1))")")
	done
	printf '| %s | %s | %.3f | %.3f |\n' "$w" "$p" "$(med "${own[@]}")" "$(med "${vs[@]}")"
done; done
