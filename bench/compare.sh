#!/usr/bin/env bash
# bench/compare.sh — ratekv vs redis-server under the same load generator.
#
# Builds bench/loadgen and ratekv, then for each server in turn (never both
# at once) starts it on a free 127.0.0.1 port pinned to core $SERVER_CORE
# (ratekv with GOMAXPROCS=1), runs every workload at every pipeline depth
# with the load generator pinned to core $CLIENT_CORE (GOMAXPROCS=1), stops
# it, and prints a markdown table. The table also goes to
# bench/results/latest.md (raw loadgen JSON: bench/results/latest.jsonl),
# with PNG charts of it beside (bench/chart: throughput.png, latency.png).
#
# Environment (defaults in brackets):
#   WORKLOADS   ["ping set get incr"; with PERSIST set: "set throttle"]
#               table rows. A loadgen workload runs on both servers; a pair
#               runs one workload on redis and another on ratekv:
#                 throttle           redis throttle_lua  vs ratekv throttle_cell
#                 sliding            redis sl_lua        vs ratekv sl_throttle
#                 recipe             redis zset_recipe   vs ratekv zset_recipe
#                 sliding_vs_recipe  redis zset_recipe   vs ratekv sl_throttle
#                 A/B                redis A             vs ratekv B (any two)
#   PERSIST     ["no"]       persistence modes, each run on both servers
#               configured alike: "no" (no AOF, no snapshots), "everysec",
#               "always" (AOF with that appendfsync), e.g. "no everysec always"
#   PIPELINES   ["1 32"]     pipeline depths
#   DURATION    [5s]         measured time per run;  WARMUP [1s]
#   CONNS       [50]         connections;  KEYS [100000];  DIST [uniform|zipf]
#   SERVERS     ["redis ratekv"]
#   LOADGEN_ARGS []          extra loadgen flags, e.g. "-burst 10 -datasize 64"
#   SERVER_ARGS  []          extra flags for both servers, in redis.conf
#               names, e.g. "--maxmemory 32mb --maxmemory-policy volatile-ttl"
#   SERVER_CORE [0]  CLIENT_CORE [1]   cores for taskset
#   ROUNDS      [1]          repeat redis-then-ratekv this many times and
#               report each cell's best round (by ops/s): on a shared,
#               noisy machine other jobs only ever slow a run down
#   OUT         [bench/results/latest.md]
#   CEILING     [1 when WORKLOADS has ping and PERSIST has no] 1: also run
#               PING on bench/noop, a redcon server that does no work (the
#               "no-op ceiling"), and print ratekv's throughput
#               against it under the table
#   FLOOR       [1 when PERSIST has no and WORKLOADS has ping or set] 1:
#               also run those two rows (persistence no) on bench/noop
#               -loop epoll, the floor (the least a server can do per
#               request), and print each server against it: where both
#               are near it, the load generator sets the pace, not the
#               servers
#   CHARTS      [1]          0: no charts. Otherwise bench/chart draws
#               throughput.png and latency.png beside OUT (OUT=x/persist.md:
#               x/persist-throughput.png, …); a failure only adds a note
#
# Every step is bounded in time; servers are killed on exit.
set -euo pipefail

START_TS=$(date +%s)
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -n "${PERSIST:-}" ]]; then
	WORKLOADS=${WORKLOADS:-"set throttle"}
else
	WORKLOADS=${WORKLOADS:-"ping set get incr"}
fi
PERSIST=${PERSIST:-no}
PIPELINES=${PIPELINES:-"1 32"}
DURATION=${DURATION:-5s}
WARMUP=${WARMUP:-1s}
CONNS=${CONNS:-50}
KEYS=${KEYS:-100000}
DIST=${DIST:-uniform}
SERVERS=${SERVERS:-"redis ratekv"}
LOADGEN_ARGS=${LOADGEN_ARGS:-}
SERVER_ARGS=${SERVER_ARGS:-}
SERVER_CORE=${SERVER_CORE:-0}
CLIENT_CORE=${CLIENT_CORE:-1}
ROUNDS=${ROUNDS:-1}
OUT=${OUT:-$ROOT/bench/results/latest.md}
OUT_JSONL=${OUT%.md}.jsonl
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "ROUNDS must be a positive integer" >&2; exit 1; }
for m in $PERSIST; do
	[[ $m == no || $m == everysec || $m == always ]] || { echo "PERSIST: unknown mode $m (want no, everysec, always)" >&2; exit 1; }
done

LOG_PREFIX=compare
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

# seconds in a Go duration like 5s, 500ms, 1m, 1.5s (rounded up)
dur_secs() {
	awk -v d="$1" 'BEGIN {
		if (d ~ /ms$/) { v = substr(d, 1, length(d)-2) / 1000 }
		else if (d ~ /s$/) { v = substr(d, 1, length(d)-1) }
		else if (d ~ /m$/) { v = substr(d, 1, length(d)-1) * 60 }
		else { v = 60 }
		printf "%d\n", (v == int(v)) ? v : int(v) + 1
	}'
}
# the loadgen stops itself well before this; get also populates KEYS keys
RUN_LIMIT=$(($(dur_secs "$DURATION") + $(dur_secs "$WARMUP") + 60 + KEYS / 50000))

# --- build -----------------------------------------------------------------

build_tools
CEILING_DEFAULT=0
[[ " $WORKLOADS " == *" ping "* && " $PERSIST " == *" no "* ]] && CEILING_DEFAULT=1
CEILING=${CEILING:-$CEILING_DEFAULT}
if ((CEILING)); then
	(cd "$ROOT" && timeout 300 go build -o "$TMP/noop" ./bench/noop) || die "building bench/noop failed"
fi

FLOOR_DEFAULT=0
FLOOR_ROWS=""
for w in ping set; do
	[[ " $WORKLOADS " == *" $w "* ]] && FLOOR_ROWS+="$w "
done
[[ -n "$FLOOR_ROWS" && " $PERSIST " == *" no "* ]] && FLOOR_DEFAULT=1
FLOOR=${FLOOR:-$FLOOR_DEFAULT}
if ((FLOOR)) && ! ((CEILING)); then
	(cd "$ROOT" && timeout 300 go build -o "$TMP/noop" ./bench/noop) || die "building bench/noop failed"
fi

# --- servers ---------------------------------------------------------------

free_port() { "$TMP/loadgen" -free-port; }

# wait_ready PORT: PONG within 10 s while the server lives
wait_ready() {
	local port=$1
	for _ in $(seq 100); do
		kill -0 "$SERVER_PID" 2>/dev/null || return 1
		if [[ $(timeout 2 redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null) == PONG ]]; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# persist_flags MODE: the persistence flags, the same for both servers
# (ratekv takes redis.conf's names). Snapshots are off in every mode.
persist_flags() {
	case $1 in
	no) echo "--save '' --appendonly no" ;;
	*) echo "--save '' --appendonly yes --appendfsync $1" ;;
	esac
}

# start_server NAME MODE: sets PORT and SERVER_PID, or returns 1. The data
# directory is new for each start (DATA_DIR; removed by stop_server).
start_server() {
	local name=$1 mode=$2 attempt
	for attempt in 1 2 3; do
		PORT=$(free_port)
		DATA_DIR=$(mktemp -d "$TMP/$name-$mode-data.XXXX")
		local aof=(--appendonly no)
		[[ $mode != no ]] && aof=(--appendonly yes --appendfsync "$mode")
		local extra
		read -r -a extra <<<"$SERVER_ARGS"
		case $name in
		redis)
			"${PIN_SERVER[@]}" redis-server --port "$PORT" --bind 127.0.0.1 --save '' "${aof[@]}" \
				--dir "$DATA_DIR" --logfile "$TMP/redis.log" "${extra[@]}" >/dev/null 2>&1 &
			;;
		ratekv)
			GOMAXPROCS=1 "${PIN_SERVER[@]}" "$TMP/ratekv" --bind 127.0.0.1 --port "$PORT" --dir "$DATA_DIR" \
				--save '' "${aof[@]}" --loglevel warning "${extra[@]}" >"$TMP/ratekv.log" 2>&1 &
			;;
		noop)
			GOMAXPROCS=1 "${PIN_SERVER[@]}" "$TMP/noop" -addr "127.0.0.1:$PORT" >"$TMP/noop.log" 2>&1 &
			;;
		floor)
			GOMAXPROCS=1 "${PIN_SERVER[@]}" "$TMP/noop" -loop epoll -addr "127.0.0.1:$PORT" >"$TMP/floor.log" 2>&1 &
			;;
		esac
		SERVER_PID=$!
		# (a PONG from someone else on a port we lost the race for would
		# not keep our process alive)
		if wait_ready "$PORT" && sleep 0.3 && kill -0 "$SERVER_PID" 2>/dev/null; then
			log "$name listening on 127.0.0.1:$PORT (pid $SERVER_PID, persistence $mode: $(persist_flags "$mode"))"
			return 0
		fi
		log "$name did not answer PING on port $PORT (attempt $attempt)"
		tail -n 5 "$TMP/$name.log" >&2 2>/dev/null || true
		stop_server
	done
	return 1
}

# --- runs ------------------------------------------------------------------

declare -A RES       # RES[server|persistence|row|pipeline|field]: the best round
declare -A ROUND_OPS # ROUND_OPS[server|persistence|row|pipeline|round]: ops/s
NOTES=()
: >"$TMP/results.jsonl"

jfield() { # jfield JSON NAME -> scalar value
	sed -n "s/.*\"$2\":\([^,}]*\).*/\1/p" <<<"$1" | tr -d '"'
}

# row_pair ROW -> "redis-workload ratekv-workload"
row_pair() {
	case $1 in
	throttle) echo "throttle_lua throttle_cell" ;;
	sliding) echo "sl_lua sl_throttle" ;;
	recipe) echo "zset_recipe zset_recipe" ;;
	sliding_vs_recipe) echo "zset_recipe sl_throttle" ;;
	*/*) echo "${1%%/*} ${1#*/}" ;;
	*) echo "$1 $1" ;;
	esac
}
loadgen_workload() { # server, table row -> loadgen workload
	local pair
	read -r -a pair <<<"$(row_pair "$2")"
	[[ $1 == redis ]] && echo "${pair[0]}" || echo "${pair[1]}"
}
row_label() { # the row's name in the table
	local pair
	read -r -a pair <<<"$(row_pair "$1")"
	if [[ ${pair[0]} == "$1" && ${pair[1]} == "$1" ]]; then
		echo "$1"
	elif [[ ${pair[0]} == "${pair[1]}" ]]; then
		echo "$1 (${pair[0]})"
	else
		echo "${1/\//:} (redis ${pair[0]} vs ratekv ${pair[1]})"
	fi
}

run_server() {
	local server=$1 mode=$2 w p lw out json
	if ! start_server "$server" "$mode"; then
		NOTES+=("$server ($mode) skipped: it did not start (see its log)")
		return
	fi
	local rows=$WORKLOADS
	[[ $server == noop ]] && rows=ping # the ceiling answers PING only
	[[ $server == floor ]] && rows=$FLOOR_ROWS # the floor answers PONG and OK, as these do
	for w in $rows; do
		lw=$(loadgen_workload "$server" "$w")
		for p in $PIPELINES; do
			log "$server ($mode): $lw pipeline $p ($DURATION)"
			out="$TMP/$server-$mode-${w//\//_}-$p"
			# shellcheck disable=SC2086 # LOADGEN_ARGS is a list of flags
			GOMAXPROCS=1 timeout "$RUN_LIMIT" "${PIN_CLIENT[@]}" "$TMP/loadgen" -addr "127.0.0.1:$PORT" \
				-workload "$lw" -pipeline "$p" -duration "$DURATION" -warmup "$WARMUP" -conns "$CONNS" \
				-keys "$KEYS" -dist "$DIST" -json $LOADGEN_ARGS >"$out.json" 2>"$out.err" || true
			json=$(head -n 1 "$out.json")
			if [[ -z "$json" ]]; then
				NOTES+=("$server ($mode) $lw p$p: no result: $(head -n 1 "$out.err" | cut -c1-160)")
				log "  failed: $(head -n 1 "$out.err")"
				if ! kill -0 "$SERVER_PID" 2>/dev/null; then
					NOTES+=("$server ($mode) exited during $lw p$p; remaining runs skipped")
					SERVER_PID=""
					return
				fi
				continue
			fi
			printf '{"server":"%s","persistence":"%s","row":"%s","round":%d,%s\n' "$server" "$mode" "$w" "$round" "${json#\{}" >>"$TMP/results.jsonl"
			local f ops prev
			ops=$(jfield "$json" ops_per_sec)
			ROUND_OPS[$server|$mode|$w|$p|$round]=$ops
			prev=${RES[$server|$mode|$w|$p|ops_per_sec]-}
			# With ROUNDS > 1 keep the best round: noise only slows a run down.
			if [[ -z "$prev" ]] || awk -v a="$ops" -v b="$prev" 'BEGIN { exit !(a > b) }'; then
				for f in ops_per_sec p99_us p999_us errors limited conn_errors; do
					RES[$server|$mode|$w|$p|$f]=$(jfield "$json" "$f")
				done
			fi
			log "  $(jfield "$json" ops_per_sec) ops/s, p99 $(jfield "$json" p99_us) us, errors $(jfield "$json" errors)"
			if [[ $(jfield "$json" errors) != 0 ]]; then
				NOTES+=("$server ($mode) $lw p$p: $(jfield "$json" errors) error replies, e.g. $(grep -m1 'error reply' "$out.err" | cut -c1-160 || true)")
			fi
			if [[ $(jfield "$json" conn_errors) != 0 ]]; then
				NOTES+=("$server ($mode) $lw p$p: $(jfield "$json" conn_errors) connections failed: $(grep -m1 'connection error' "$out.err" | cut -c1-160 || true)")
			fi
			# Start each run from an empty keyspace (best effort).
			timeout 5 redis-cli -h 127.0.0.1 -p "$PORT" flushall >/dev/null 2>&1 || true
		done
	done
	stop_server
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")
for round in $(seq "$ROUNDS"); do
	((ROUNDS == 1)) || log "round $round of $ROUNDS"
	for mode in $PERSIST; do
		for s in $SERVERS; do
			case $s in
			redis) run_server redis "$mode" ;;
			ratekv)
				if ((HAVE_RATEKV)); then
					run_server ratekv "$mode"
				elif ((round == 1)) && [[ $mode == "${PERSIST%% *}" ]]; then
					NOTES+=("$RATEKV_NOTE")
				fi
				;;
			*) die "unknown server $s (want redis and/or ratekv)" ;;
			esac
		done
		if ((CEILING)) && [[ $mode == no ]]; then
			run_server noop no
		fi
		if ((FLOOR)) && [[ $mode == no ]]; then
			run_server floor no
		fi
	done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")

# --- table -----------------------------------------------------------------

lat_cell() { # lat_cell server mode row pipeline field -> whole microseconds
	local v=${RES[$1|$2|$3|$4|$5]-}
	if [[ -n "$v" ]]; then printf '%.0f' "$v"; else echo "n/a"; fi
}
ops_cell() { # ops_cell server mode row pipeline
	local v e
	v=${RES[$1|$2|$3|$4|ops_per_sec]-}
	[[ -z "$v" ]] && { echo "n/a"; return; }
	e=${RES[$1|$2|$3|$4|errors]}
	if [[ $e != 0 ]]; then printf '%.0f (%s err)' "$v" "$e"; else printf '%.0f' "$v"; fi
}
median() { # median RATIO... -> the median of those that are not n/a, 2 decimals
	printf '%s\n' "$@" | grep -v n/a | sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print "n/a"; else if (NR % 2) printf "%.2f", v[(NR + 1) / 2]; else printf "%.2f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
div() { # div A B -> A/B with 2 decimals, or n/a
	if [[ -n "$1" && -n "$2" ]]; then awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; else echo "n/a"; fi
}
ratio() { # ratio mode row pipeline -> ratekv / redis
	div "${RES[ratekv|$1|$2|$3|ops_per_sec]-}" "${RES[redis|$1|$2|$3|ops_per_sec]-}"
}

ELAPSED=$(($(date +%s) - START_TS))
RUN_DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "no commit")
REDIS_VER=$(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')
CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)
PINNING="server core $SERVER_CORE, loadgen core $CLIENT_CORE, GOMAXPROCS=1"
((PIN)) || PINNING="unpinned"

# --- charts ----------------------------------------------------------------

# bench/chart is a module of its own (gonum/plot stays out of the server's
# go.mod). Drawn before the table so that a failure can be noted under it;
# never fatal.
CHART_PREFIX=$(basename "$OUT" .md)-
[[ $CHART_PREFIX == latest- ]] && CHART_PREFIX=""
CHART_FILES=()
if [[ ${CHARTS:-1} != 0 ]]; then
	log "drawing charts"
	if (cd "$ROOT/bench/chart" && timeout 300 go build -o "$TMP/chart" .) >"$TMP/chart.log" 2>&1 &&
		timeout 120 "$TMP/chart" -in "$TMP/results.jsonl" -out-dir "$(dirname "$OUT")" -prefix "$CHART_PREFIX" \
			-title-suffix "$RUN_DATE, commit $COMMIT, redis $REDIS_VER, $(nproc) CPUs, $CONNS connections, $DURATION per run" \
			>>"$TMP/chart.log" 2>&1; then
		CHART_FILES=("${CHART_PREFIX}throughput.png" "${CHART_PREFIX}latency.png")
	else
		log "warning: charts not drawn (the table is unaffected):"
		tail -n 5 "$TMP/chart.log" >&2
		NOTES+=("charts not drawn: $( (grep -v '^#' "$TMP/chart.log" || true) | head -n 1 | cut -c1-160)")
	fi
fi

{
	echo "## ratekv vs redis-server"
	echo
	echo "$RUN_DATE, commit $COMMIT, redis $REDIS_VER, $(go version | cut -d' ' -f3), $(nproc) CPUs ($CPU)."
	echo "$CONNS connections, $DURATION per run after $WARMUP warm-up, $KEYS keys ($DIST), $PINNING.${LOADGEN_ARGS:+ loadgen args: $LOADGEN_ARGS.}${SERVER_ARGS:+ Both servers: $SERVER_ARGS.}"
	echo "Best of $ROUNDS round(s). Load average before: $LOAD_BEFORE, after: $LOAD_AFTER (other jobs on this machine skew results; compare ratios, re-run)."
	echo "ops/s: higher is better; ratio = ratekv / redis; latencies in microseconds (per request; a batch's latency for each request in it)."
	echo
	echo "Persistence, both servers alike, snapshots off: no = \`--appendonly no\`; everysec/always = \`--appendonly yes --appendfsync everysec/always\`."
	echo "Rows pairing two workloads run the first on redis and the second on ratekv; see bench/README.md for what each sends."
	echo
	echo "| workload | persistence | pipeline | redis ops/s | ratekv ops/s | ratio | redis p99 | ratekv p99 | redis p99.9 | ratekv p99.9 |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
	for w in $WORKLOADS; do
		label=$(row_label "$w")
		for mode in $PERSIST; do
			for p in $PIPELINES; do
				echo "| $label | $mode | $p | $(ops_cell redis "$mode" "$w" "$p") | $(ops_cell ratekv "$mode" "$w" "$p") | $(ratio "$mode" "$w" "$p") | $(lat_cell redis "$mode" "$w" "$p" p99_us) | $(lat_cell ratekv "$mode" "$w" "$p" p99_us) | $(lat_cell redis "$mode" "$w" "$p" p999_us) | $(lat_cell ratekv "$mode" "$w" "$p" p999_us) |"
			done
		done
	done
	# The no-op ceiling: ratekv against a server that does no work.
	if ((CEILING)); then
		echo
		echo "Against the no-op ceiling (bench/noop: redcon answering PING, GOMAXPROCS=1, same pinning; persistence no):"
		echo
		echo "| pipeline | no-op PING ops/s | redis PING / no-op | ratekv PING / no-op | ratekv CL.THROTTLE / no-op |"
		echo "|---:|---:|---:|---:|---:|"
		for p in $PIPELINES; do
			ceil=${RES[noop|no|ping|$p|ops_per_sec]-}
			echo "| $p | $(printf '%.0f' "${ceil:-0}") | $(div "${RES[redis|no|ping|$p|ops_per_sec]-}" "$ceil") | $(div "${RES[ratekv|no|ping|$p|ops_per_sec]-}" "$ceil") | $(div "${RES[ratekv|no|throttle|$p|ops_per_sec]-}" "$ceil") |"
		done
	fi
	# The cost of persistence: each server against itself without it.
	if [[ " $PERSIST " == *" no "* && $PERSIST != no ]]; then
		echo
		echo "Throughput with persistence relative to the same server with \`appendonly no\` (same run):"
		echo
		echo "| workload | persistence | pipeline | redis / redis-no | ratekv / ratekv-no |"
		echo "|---|---|---:|---:|---:|"
		for w in $WORKLOADS; do
			label=$(row_label "$w")
			for mode in $PERSIST; do
				[[ $mode == no ]] && continue
				for p in $PIPELINES; do
					echo "| $label | $mode | $p | $(div "${RES[redis|$mode|$w|$p|ops_per_sec]-}" "${RES[redis|no|$w|$p|ops_per_sec]-}") | $(div "${RES[ratekv|$mode|$w|$p|ops_per_sec]-}" "${RES[ratekv|no|$w|$p|ops_per_sec]-}") |"
				done
			done
		done
	fi
	# The client's ceiling: each server against the floor.
	if ((FLOOR)); then
		echo
		echo "Against the floor (bench/noop -loop epoll: one thread, a read and a write per turn and socket, no work; same pinning; persistence no). Near 1.00 the load generator, not the server, sets the pace:"
		echo
		echo "| workload | pipeline | floor ops/s | redis / floor | ratekv / floor |"
		echo "|---|---:|---:|---:|---:|"
		for w in $FLOOR_ROWS; do
			for p in $PIPELINES; do
				fl=${RES[floor|no|$w|$p|ops_per_sec]-}
				echo "| $w | $p | $(printf '%.0f' "${fl:-0}") | $(div "${RES[redis|no|$w|$p|ops_per_sec]-}" "$fl") | $(div "${RES[ratekv|no|$w|$p|ops_per_sec]-}" "$fl") |"
			done
		done
	fi
	# Round by round: the spread behind each best-of cell.
	if ((ROUNDS > 1)); then
		echo
		echo "Round by round, ratekv / redis within each round (the table above compares each server's best round):"
		echo
		echo "| workload | persistence | pipeline | rounds | median |"
		echo "|---|---|---:|---|---:|"
		for w in $WORKLOADS; do
			label=$(row_label "$w")
			for mode in $PERSIST; do
				for p in $PIPELINES; do
					rs=()
					for r in $(seq "$ROUNDS"); do
						rs+=("$(div "${ROUND_OPS[ratekv|$mode|$w|$p|$r]-}" "${ROUND_OPS[redis|$mode|$w|$p|$r]-}")")
					done
					echo "| $label | $mode | $p | ${rs[*]} | $(median "${rs[@]}") |"
				done
			done
		done
		# And each server against itself without persistence, round by
		# round: the two runs of a round are minutes apart at most, where
		# the best-of cells may come from different rounds.
		if [[ " $PERSIST " == *" no "* && $PERSIST != no ]]; then
			echo
			echo "Round by round, each server with persistence / the same server with \`appendonly no\` within each round:"
			echo
			echo "| workload | persistence | pipeline | ratekv rounds | ratekv median | redis rounds | redis median |"
			echo "|---|---|---:|---|---:|---|---:|"
			for w in $WORKLOADS; do
				label=$(row_label "$w")
				for mode in $PERSIST; do
					[[ $mode == no ]] && continue
					for p in $PIPELINES; do
						rk=() rr=()
						for r in $(seq "$ROUNDS"); do
							rk+=("$(div "${ROUND_OPS[ratekv|$mode|$w|$p|$r]-}" "${ROUND_OPS[ratekv|no|$w|$p|$r]-}")")
							rr+=("$(div "${ROUND_OPS[redis|$mode|$w|$p|$r]-}" "${ROUND_OPS[redis|no|$w|$p|$r]-}")")
						done
						echo "| $label | $mode | $p | ${rk[*]} | $(median "${rk[@]}") | ${rr[*]} | $(median "${rr[@]}") |"
					done
				done
			done
		fi
	fi
	if ((${#NOTES[@]})); then
		echo
		for n in "${NOTES[@]}"; do echo "- $n"; done
	fi
	if ((${#CHART_FILES[@]})); then
		echo
		for f in "${CHART_FILES[@]}"; do echo "![${f%.png}]($f)"; done
	fi
	echo
	echo "Total runtime: ${ELAPSED}s."
} >"$TMP/table.md"

mkdir -p "$(dirname "$OUT")"
cp "$TMP/table.md" "$OUT"
cp "$TMP/results.jsonl" "$OUT_JSONL"
cat "$TMP/table.md"
log "wrote $OUT and $OUT_JSONL${CHART_FILES[*]:+ and charts ${CHART_FILES[*]}} (total ${ELAPSED}s)"
