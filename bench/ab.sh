#!/usr/bin/env bash
# bench/ab.sh — a paired A/B of two builds of ratekv.
#
# Builds ratekv at git revisions A and B (and the load generator from the
# working tree), then runs ROUNDS rounds; each round runs every workload at
# every pipeline depth on A and on B, in an order that alternates between
# rounds, each on a fresh server pinned to $SERVER_CORE (GOMAXPROCS=1),
# the load generator pinned to $CLIENT_CORE. It prints B/A round by round
# and the median of those ratios, which is the result.
#
# Usage: bench/ab.sh A B      e.g. bench/ab.sh 2d00ae5 HEAD
#
# A and B may be the same revision with different flags, to measure what a
# setting costs: ARGS_B="--cluster-enabled yes" bench/ab.sh HEAD HEAD.
#
# Environment (defaults in brackets):
#   WORKLOADS ["set throttle_cell"]  loadgen workloads
#   PIPELINES ["32"]   ROUNDS [5]   DURATION [5s]   WARMUP [1s]
#   CONNS [50]   KEYS [100000]   SERVER_CORE [0]   CLIENT_CORE [1]
#   ARGS ["--save '' --appendonly no"]  extra ratekv flags, both sides
#   ARGS_A [""]  ARGS_B [""]  extra flags of one side only
#   LOADGEN_A [""]  LOADGEN_B [""]  extra load generator flags of one side
#                  (e.g. -user app -pass pw, for an ACL user's cost)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
(($# == 2)) || { echo "usage: bench/ab.sh A B" >&2; exit 2; }
REV_A=$1 REV_B=$2
WORKLOADS=${WORKLOADS:-"set throttle_cell"}
PIPELINES=${PIPELINES:-32}
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5s}
WARMUP=${WARMUP:-1s}
CONNS=${CONNS:-50}
KEYS=${KEYS:-100000}
SERVER_CORE=${SERVER_CORE:-0}
CLIENT_CORE=${CLIENT_CORE:-1}
ARGS=${ARGS:-"--save '' --appendonly no"}
ARGS_A=${ARGS_A:-}
ARGS_B=${ARGS_B:-}
eval "EXTRA=($ARGS)"
eval "EXTRA_A=($ARGS_A)"
eval "EXTRA_B=($ARGS_B)"
eval "LG_A=(${LOADGEN_A:-})"
eval "LG_B=(${LOADGEN_B:-})"
LOG_PREFIX=ab
SERVERS=""
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

# build REV OUT: builds ratekv at REV into OUT from a temporary worktree.
build() {
	local wt="$TMP/src-$2"
	git -C "$ROOT" worktree add -q --detach "$wt" "$1" || die "no revision $1"
	(cd "$wt" && CGO_ENABLED=0 go build -o "$TMP/$2" .) || die "cannot build $1"
	git -C "$ROOT" worktree remove --force "$wt"
}
build "$REV_A" ratekv-a
build "$REV_B" ratekv-b
(cd "$ROOT/bench/loadgen" && go build -o "$TMP/loadgen" .) || die "cannot build the load generator"

# run BIN WORKLOAD PIPELINE: ops/s of one run on a fresh server.
run() {
	local port side lg
	if [[ $1 == ratekv-a ]]; then side=("${EXTRA_A[@]}") lg=("${LG_A[@]}"); else side=("${EXTRA_B[@]}") lg=("${LG_B[@]}"); fi
	# A port at most 55535, as cluster mode's bus port is 10000 above it.
	port=$(python3 -c '
import socket
while True:
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]
    if p <= 55535: print(p); break')
	DATA_DIR=$(mktemp -d "$TMP/data.XXXXXX")
	GOMAXPROCS=1 "${PIN_SERVER[@]}" "$TMP/$1" --bind 127.0.0.1 --port "$port" --dir "$DATA_DIR" \
		"${EXTRA[@]}" "${side[@]}" --loglevel warning >"$TMP/server.log" 2>&1 &
	SERVER_PID=$!
	for _ in $(seq 100); do
		redis-cli -p "$port" ping >/dev/null 2>&1 && break
		sleep 0.05
	done
	local json
	json=$(GOMAXPROCS=1 timeout 120 "${PIN_CLIENT[@]}" "$TMP/loadgen" -addr "127.0.0.1:$port" -workload "$2" \
		-pipeline "$3" -duration "$DURATION" -warmup "$WARMUP" -conns "$CONNS" -keys "$KEYS" "${lg[@]}" -json 2>/dev/null | head -n 1)
	stop_server
	python3 -c 'import json,sys; print(round(json.loads(sys.argv[1])["ops_per_sec"]))' "$json" 2>/dev/null || echo 0
}

declare -A ratios
echo "A = $REV_A ($(git -C "$ROOT" rev-parse --short "$REV_A")), B = $REV_B ($(git -C "$ROOT" rev-parse --short "$REV_B")); $ROUNDS rounds of $DURATION, $CONNS conns, $KEYS keys, ratekv $ARGS; A: ${ARGS_A:-(no more)}; B: ${ARGS_B:-(no more)}"
echo
echo "| workload | pipeline | round | A ops/s | B ops/s | B/A |"
echo "|---|---:|---:|---:|---:|---:|"
for r in $(seq "$ROUNDS"); do
	for w in $WORKLOADS; do
		for p in $PIPELINES; do
			if ((r % 2)); then
				a=$(run ratekv-a "$w" "$p"); b=$(run ratekv-b "$w" "$p")
			else
				b=$(run ratekv-b "$w" "$p"); a=$(run ratekv-a "$w" "$p")
			fi
			ratio=$(python3 -c "print(f'{$b/$a:.3f}' if $a else 'n/a')")
			ratios[$w/$p]+="$ratio "
			echo "| $w | $p | $r | $a | $b | $ratio |"
		done
	done
done
echo
echo "| workload | pipeline | median B/A |"
echo "|---|---:|---:|"
for k in "${!ratios[@]}"; do
	med=$(python3 -c "import statistics,sys; v=[float(x) for x in sys.argv[1:] if x!='n/a']; print(f'{statistics.median(v):.3f}' if v else 'n/a')" ${ratios[$k]})
	echo "| ${k%/*} | ${k#*/} | $med |"
done
