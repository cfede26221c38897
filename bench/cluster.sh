#!/usr/bin/env bash
# bench/cluster.sh — throughput of a ratekv cluster of 1, 2 and 3 primaries,
# and of one node standalone, under the same load.
#
# Each round runs every (layout, workload, pipeline) cell on fresh
# processes, in an order that alternates between rounds. Layouts:
#   standalone  one ratekv, cluster-enabled no
#   N (1, 2, 3) N ratekv nodes in cluster mode, each given an equal share
#               of the 16384 slots with CLUSTER ADDSLOTSRANGE and joined
#               with CLUSTER MEET (redis-cli --cluster create wants 3)
# Every node runs with GOMAXPROCS=1 pinned to $SERVER_CORE, the load
# generator to $CLIENT_CORE: on a machine with more cores, set NODE_CORES
# to one core per node ("0 2 3") to see the nodes scale. The load generator
# runs with -cluster: its connections are dealt out over the primaries and
# each sends only keys its node serves, so nothing is redirected.
# It prints per-round numbers and the medians of N nodes / 1 node and of
# 1 node / standalone (the cost of cluster mode), with the core count.
#
# Environment (defaults in brackets):
#   WORKLOADS ["throttle_cell set"]  PIPELINES ["32"]  NODES ["1 2 3"]
#   ROUNDS [5]  DURATION [5s]  WARMUP [1s]  CONNS [48]  KEYS [100000]
#   SERVER_CORE [0]  CLIENT_CORE [1]  NODE_CORES [all on SERVER_CORE]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORKLOADS=${WORKLOADS:-"throttle_cell set"}
PIPELINES=${PIPELINES:-32}
NODES=${NODES:-"1 2 3"}
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5s}
WARMUP=${WARMUP:-1s}
CONNS=${CONNS:-48}
KEYS=${KEYS:-100000}
SERVER_CORE=${SERVER_CORE:-0}
CLIENT_CORE=${CLIENT_CORE:-1}
NODE_CORES=${NODE_CORES:-}
LOG_PREFIX=cluster
SERVERS="ratekv"
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
cd "$ROOT"
build_tools
((HAVE_RATEKV)) || die "$RATEKV_NOTE"

trap 'stop_all; cleanup' EXIT

# start PORT CORE ARGS...: one ratekv on a fresh directory.
start() {
	local port=$1 core=$2 dir
	shift 2
	dir=$(mktemp -d "$TMP/d.XXXXXX")
	GOMAXPROCS=1 pin "$core" "$TMP/ratekv" --bind 127.0.0.1 --port "$port" --dir "$dir" \
		--save '' --appendonly no --loglevel warning "$@" >"$dir/log" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 100); do
		redis-cli -p "$port" ping >/dev/null 2>&1 && return
		sleep 0.05
	done
	die "ratekv on port $port did not start: $(tail -n 3 "$dir/log")"
}

# node_core I: the core of the I-th node (0-based).
node_core() {
	local cores
	read -ra cores <<<"$NODE_CORES"
	if ((${#cores[@]})); then echo "${cores[$(($1 % ${#cores[@]}))]}"; else echo "$SERVER_CORE"; fi
}

# layout L: starts layout L and sets ADDR, the address the load generator
# uses, and LGFLAGS, its extra flags. Not in a subshell: PIDS must keep
# the processes it starts.
layout() {
	if [[ $1 == standalone ]]; then
		local p
		p=$(port)
		start "$p" "$(node_core 0)"
		ADDR="127.0.0.1:$p" LGFLAGS=""
		return
	fi
	local n=$1 ports=() i lo hi
	for ((i = 0; i < n; i++)); do
		ports+=("$(port)")
		start "${ports[$i]}" "$(node_core "$i")" --cluster-enabled yes --cluster-solo-owns-all-slots no \
			--cluster-port "$(port)"
	done
	for ((i = 0; i < n; i++)); do
		lo=$((16384 * i / n)) hi=$((16384 * (i + 1) / n - 1))
		redis-cli -p "${ports[$i]}" cluster addslotsrange "$lo" "$hi" >/dev/null
	done
	for ((i = 1; i < n; i++)); do
		redis-cli -p "${ports[$i]}" cluster meet 127.0.0.1 "${ports[0]}" >/dev/null
	done
	# Every node sees every slot served and n known nodes.
	for _ in $(seq 200); do
		local ok=1
		for p in "${ports[@]}"; do
			local info
			info=$(redis-cli -p "$p" cluster info | tr -d '\r')
			grep -q "^cluster_state:ok" <<<"$info" && grep -q "^cluster_known_nodes:$n$" <<<"$info" || ok=0
		done
		((ok)) && break
		sleep 0.1
	done
	((ok)) || die "the cluster of $n did not form: $(redis-cli -p "${ports[0]}" cluster nodes)"
	ADDR="127.0.0.1:${ports[0]}" LGFLAGS="-cluster"
}

# cell LAYOUT WORKLOAD PIPELINE: prints ops/s; run in a subshell, it
# stops what it started.
cell() {
	local ops
	layout "$1"
	# shellcheck disable=SC2086
	(pin "$CLIENT_CORE" "$TMP/loadgen" -addr "$ADDR" $LGFLAGS -workload "$2" -pipeline "$3" -duration "$DURATION" \
		-warmup "$WARMUP" -conns "$CONNS" -keys "$KEYS" -populate=false -json >"$TMP/out.json" 2>"$TMP/lg.err") || true
	ops=$(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["ops_per_sec"]))' "$TMP/out.json" 2>/dev/null || echo 0)
	((ops)) || log "$1 $2 p$3: no result: $(head -n 3 "$TMP/lg.err")"
	stop_all
	echo "$ops"
}

layouts=(standalone $NODES)
declare -A ops
echo "$ROUNDS rounds of $DURATION, $CONNS conns, $KEYS keys; $(nproc) cores; nodes on core(s) ${NODE_CORES:-$SERVER_CORE}, load on core $CLIENT_CORE"
echo
echo "| round | nodes | workload | pipeline | ops/s |"
echo "|---:|---|---|---:|---:|"
cells=()
for l in "${layouts[@]}"; do for w in $WORKLOADS; do for p in $PIPELINES; do
	cells+=("$l $w $p")
done; done; done
for r in $(seq "$ROUNDS"); do
	order=("${cells[@]}")
	((r % 2)) || mapfile -t order < <(printf '%s\n' "${cells[@]}" | tac)
	for c in "${order[@]}"; do
		read -r l w p <<<"$c"
		o=$(cell "$l" "$w" "$p" || echo 0)
		ops[$c]+="${o:-0} "
		echo "| $r | $l | $w | $p | ${o:-0} |"
	done
done

med() { python3 -c "import statistics,sys; v=[float(x) for x in sys.argv[1:] if float(x) > 0]; print(statistics.median(v) if v else 0)" "$@"; }
# ratio A B: the per-round ratios of cells A over B, one per line; none
# for a round where B did not run or measured nothing.
ratios() {
	local a b i
	read -ra a <<<"${ops[$1]:-}"
	read -ra b <<<"${ops[$2]:-}"
	for i in "${!a[@]}"; do
		((${b[$i]:-0} > 0)) && python3 -c "print(${a[$i]:-0}/${b[$i]})"
	done
	return 0
}
echo
echo "| workload | pipeline | layout | median ops/s | median ratio |"
echo "|---|---:|---|---:|---|"
for w in $WORKLOADS; do for p in $PIPELINES; do
	printf '| %s | %s | standalone | %.0f | |\n' "$w" "$p" "$(med ${ops[standalone $w $p]})"
	for n in $NODES; do
		if [[ $n == 1 ]]; then
			rat="1 node / standalone $(printf '%.3f' "$(med $(ratios "1 $w $p" "standalone $w $p"))")"
		else
			rat="$n nodes / 1 node $(printf '%.3f' "$(med $(ratios "$n $w $p" "1 $w $p"))")"
		fi
		printf '| %s | %s | %s | %.0f | %s |\n' "$w" "$p" "$n" "$(med ${ops[$n $w $p]})" "$rat"
	done
done; done
