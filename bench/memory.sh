#!/usr/bin/env bash
# bench/memory.sh — memory per key / per entry, ratekv vs redis-server.
#
# For each case and each server alone (never both at once; a fresh server
# per measurement, no persistence), measures the memory before, writes the
# state with `loadgen -fill` (one connection, pipeline $PIPELINE), waits
# $SETTLE, measures again, and prints a markdown table of bytes per key or
# per entry and the ratio ratekv / redis.
#
#   redis-server: INFO memory used_memory (what Redis's own accounting says
#                 the data takes; used_memory_rss growth is shown too)
#   ratekv:       the process's RSS growth (VmRSS in /proc/PID/status),
#                 which is what the machine pays for a Go heap (its
#                 fragmentation included); INFO used_memory growth (the
#                 live heap) is shown too
#
# Both readings, before and after, follow a MEMORY PURGE (see purge).
#
# Cases (CASES, default all):
#   gcra      GCRA_KEYS keys rl:<n> with one allowed call each (burst 10, 1
#             per 3600 s, so each key lives an hour): CL.THROTTLE on ratekv,
#             bench/gcra.lua (EVALSHA) on redis
#   zset100   10,000 keys x 100 entries: ZADD z:<k> <us timestamp> <UUID>
#   zset1000  1,000 keys x 1,000 entries, the same (Redis: skiplist encoding)
#   sl100     SL.THROTTLE sl:<k> 100 3600000, 100 calls on each of 10,000 keys
#             (ratekv), against redis's zset100 (the same entries in the
#             sorted set the recipe or sliding.lua would keep)
#   sl1000    the same with 1,000 keys x 1,000 calls, against zset1000
#
# Environment (defaults in brackets): CASES ["gcra zset100 zset1000 sl100
# sl1000"], GCRA_KEYS [1000000], PIPELINE [64], FILL_LIMIT [60s] (each fill
# stops there; the table then says how much it wrote), SETTLE [3]
# seconds, SERVERS ["redis ratekv"], SERVER_CORE [0], CLIENT_CORE [1],
# OUT [bench/results/memory.md]; the raw numbers go beside it, one JSON line
# per case and server (OUT with .jsonl for .md), for bench/targets.
set -euo pipefail

START_TS=$(date +%s)
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CASES=${CASES:-"gcra zset100 zset1000 sl100 sl1000"}
GCRA_KEYS=${GCRA_KEYS:-1000000}
PIPELINE=${PIPELINE:-64}
FILL_LIMIT=${FILL_LIMIT:-60s}
SETTLE=${SETTLE:-3}
SERVERS=${SERVERS:-"redis ratekv"}
SERVER_CORE=${SERVER_CORE:-0}
CLIENT_CORE=${CLIENT_CORE:-1}
OUT=${OUT:-$ROOT/bench/results/memory.md}

LOG_PREFIX=memory
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

NOTES=()
build_tools
[[ -z $RATEKV_NOTE ]] || NOTES+=("$RATEKV_NOTE")

# info_field PORT FIELD -> value from INFO memory
info_field() {
	timeout 5 redis-cli -h 127.0.0.1 -p "$1" info memory 2>/dev/null | tr -d '\r' | sed -n "s/^$2://p"
}
rss_bytes() { # rss_bytes PID -> VmRSS in bytes
	awk '/^VmRSS:/ { print $2 * 1024 }' "/proc/$1/status"
}

# start_server NAME: sets PORT and SERVER_PID, or returns 1
start_server() {
	local name=$1 attempt dir
	for attempt in 1 2 3; do
		PORT=$("$TMP/loadgen" -free-port)
		dir=$(mktemp -d "$TMP/$name-data.XXXX")
		case $name in
		redis)
			"${PIN_SERVER[@]}" redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no \
				--dir "$dir" --logfile "$TMP/redis.log" >/dev/null 2>&1 &
			;;
		ratekv)
			GOMAXPROCS=1 "${PIN_SERVER[@]}" "$TMP/ratekv" --bind 127.0.0.1 --port "$PORT" --dir "$dir" \
				--save '' --appendonly no --loglevel warning >"$TMP/ratekv.log" 2>&1 &
			;;
		esac
		SERVER_PID=$!
		for _ in $(seq 100); do
			kill -0 "$SERVER_PID" 2>/dev/null || break
			if [[ $(timeout 2 redis-cli -h 127.0.0.1 -p "$PORT" ping 2>/dev/null) == PONG ]]; then
				sleep 0.3
				kill -0 "$SERVER_PID" 2>/dev/null && return 0
			fi
			sleep 0.1
		done
		log "$name did not answer PING on port $PORT (attempt $attempt)"
		stop_server
	done
	return 1
}

jfield() { sed -n "s/.*\"$2\":\([^,}]*\).*/\1/p" <<<"$1" | tr -d '"'; }

declare -A RES # RES[case|server|field]

# purge: MEMORY PURGE on the server on $PORT before a reading. On ratekv
# it runs a garbage collection and returns the free heap pages, so that its
# RSS is the data (plus the heap's fragmentation) and not the garbage the
# fill left, whose amount depends on when the runtime last collected. On
# redis it asks jemalloc to return its dirty pages; used_memory, the figure
# redis is judged by, does not change.
purge() {
	local r
	r=$(timeout 30 redis-cli -h 127.0.0.1 -p "$PORT" memory purge 2>&1 || true)
	[[ $r == OK ]] || NOTES+=("MEMORY PURGE on $PORT answered: ${r:0:120}")
}

# measure CASE SERVER KIND KEYS ENTRIES: one fresh server, one fill
measure() {
	local c=$1 server=$2 kind=$3 keys=$4 entries=$5 json units
	if ! start_server "$server"; then
		NOTES+=("$c $server: the server did not start")
		return
	fi
	local rss0 used0 rss1 used1
	purge
	rss0=$(rss_bytes "$SERVER_PID")
	used0=$(info_field "$PORT" used_memory)
	log "$c: $server fill $kind, $keys keys x $entries (at most $FILL_LIMIT)"
	json=$(GOMAXPROCS=1 timeout 200 "${PIN_CLIENT[@]}" "$TMP/loadgen" -addr "127.0.0.1:$PORT" -fill "$kind" \
		-keys "$keys" -fill-entries "$entries" -pipeline "$PIPELINE" -duration "$FILL_LIMIT" 2>"$TMP/fill.err" || true)
	if [[ -z "$json" ]]; then
		NOTES+=("$c $server: fill failed: $(head -n 1 "$TMP/fill.err" | cut -c1-160)")
		stop_server
		return
	fi
	sleep "$SETTLE"
	purge
	rss1=$(rss_bytes "$SERVER_PID")
	used1=$(info_field "$PORT" used_memory)
	RES[$c|$server|dbsize]=$(timeout 5 redis-cli -h 127.0.0.1 -p "$PORT" dbsize 2>/dev/null || echo "?")
	stop_server
	# Units: keys for gcra (one entry each), entries otherwise; refused or
	# failed calls stored nothing.
	units=$(($(jfield "$json" sent) - $(jfield "$json" errors) - $(jfield "$json" limited)))
	RES[$c|$server|units]=$units
	RES[$c|$server|rss]=$((rss1 - rss0))
	RES[$c|$server|used]=$((used1 - used0))
	RES[$c|$server|secs]=$(jfield "$json" seconds)
	log "  $units units in $(jfield "$json" seconds)s: used_memory +$((used1 - used0)) B, RSS +$((rss1 - rss0)) B, dbsize ${RES[$c|$server|dbsize]}"
	[[ $(jfield "$json" complete) == true ]] || NOTES+=("$c $server: the fill stopped after $FILL_LIMIT: $units of $((keys * entries)) written")
	[[ $(jfield "$json" errors) == 0 ]] || NOTES+=("$c $server: $(jfield "$json" errors) error replies, e.g. $(jfield "$json" first_error | cut -c1-120)")
	[[ $(jfield "$json" limited) == 0 ]] || NOTES+=("$c $server: $(jfield "$json" limited) calls refused (not stored)")
	[[ ${RES[$c|$server|dbsize]} == "$keys" ]] || NOTES+=("$c $server: DBSIZE ${RES[$c|$server|dbsize]} after the fill, want $keys (keys expired or missing?)")
}

for c in $CASES; do
	for s in $SERVERS; do
		[[ $s == ratekv ]] && ((!HAVE_RATEKV)) && continue
		case $c in
		gcra)
			if [[ $s == redis ]]; then measure gcra redis gcra_lua "$GCRA_KEYS" 1; else measure gcra ratekv gcra_cell "$GCRA_KEYS" 1; fi
			;;
		zset100) measure zset100 "$s" zset 10000 100 ;;
		zset1000) measure zset1000 "$s" zset 1000 1000 ;;
		sl100 | sl1000)
			local_k=10000 local_e=100
			[[ $c == sl1000 ]] && local_k=1000 local_e=1000
			if [[ $s == ratekv ]]; then
				measure "$c" ratekv sl "$local_k" "$local_e"
			elif [[ " $CASES " != *" zset${c#sl} "* ]]; then
				# the redis side of this row is the same entries in a ZSET
				measure "zset${c#sl}" redis zset "$local_k" "$local_e"
			fi
			;;
		*) die "unknown case $c (want gcra zset100 zset1000 sl100 sl1000)" ;;
		esac
	done
done

# per UNITS -> bytes per unit, one decimal
per() {
	if [[ -n "$1" && -n "$2" && "$2" -gt 0 ]]; then awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; else echo "n/a"; fi
}
ratio() {
	if [[ "$1" != n/a && "$2" != n/a ]]; then awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; else echo "n/a"; fi
}
row() { # row LABEL UNIT REDIS-CASE RATEKV-CASE
	local rc=$3 kc=$4 r_used r_rss k_rss k_used
	r_used=$(per "${RES[$rc|redis|used]-}" "${RES[$rc|redis|units]-}")
	r_rss=$(per "${RES[$rc|redis|rss]-}" "${RES[$rc|redis|units]-}")
	k_rss=$(per "${RES[$kc|ratekv|rss]-}" "${RES[$kc|ratekv|units]-}")
	k_used=$(per "${RES[$kc|ratekv|used]-}" "${RES[$kc|ratekv|units]-}")
	echo "| $1 | $2 | ${RES[$rc|redis|units]-n/a} | $r_used | $r_rss | ${RES[$kc|ratekv|units]-n/a} | $k_rss | $k_used | $(ratio "$k_rss" "$r_used") | $(ratio "$k_rss" "$r_rss") |"
}

ELAPSED=$(($(date +%s) - START_TS))
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "no commit")
{
	echo "## Memory: ratekv vs redis-server"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), commit $COMMIT, redis $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p'), $(go version | cut -d' ' -f3)."
	echo "Each cell: one fresh server, no persistence, filled over one connection (pipeline $PIPELINE), measured ${SETTLE}s after the fill."
	echo "redis: INFO used_memory growth (RSS growth beside it); ratekv: RSS growth (VmRSS; INFO used_memory, the live Go heap, beside it). Both read after MEMORY PURGE."
	echo "Bytes per unit (key or entry). ratio = ratekv RSS / redis used_memory; RSS ratio = ratekv RSS / redis RSS: lower is better. ZSET members are 36-byte UUIDs, scores microsecond timestamps."
	echo
	echo "| data | per | redis units | redis used_memory B | redis RSS B | ratekv units | ratekv RSS B | ratekv used_memory B | ratio | RSS ratio |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
	for c in $CASES; do
		case $c in
		gcra) row "GCRA state, $GCRA_KEYS keys (redis gcra.lua vs ratekv CL.THROTTLE)" key gcra gcra ;;
		zset100) row "ZSET 10k keys x 100 (ZADD on both)" entry zset100 zset100 ;;
		zset1000) row "ZSET 1k keys x 1000 (ZADD on both)" entry zset1000 zset1000 ;;
		sl100) row "sliding log 10k keys x 100 (redis ZSET vs ratekv SL.THROTTLE)" entry zset100 sl100 ;;
		sl1000) row "sliding log 1k keys x 1000 (redis ZSET vs ratekv SL.THROTTLE)" entry zset1000 sl1000 ;;
		esac
	done
	if ((${#NOTES[@]})); then
		echo
		for n in "${NOTES[@]}"; do echo "- $n"; done
	fi
	echo
	echo "Total runtime: ${ELAPSED}s."
} >"$TMP/table.md"
# The measurements, one JSON line per case and server, for bench/targets.
for c in $CASES zset100 zset1000; do
	for s in redis ratekv; do
		[[ -n ${RES[$c|$s|units]-} ]] || continue
		printf '{"case":"%s","server":"%s","units":%s,"used_bytes":%s,"rss_bytes":%s}\n' \
			"$c" "$s" "${RES[$c|$s|units]}" "${RES[$c|$s|used]:-0}" "${RES[$c|$s|rss]:-0}"
	done
done | awk '!seen[$0]++' >"$TMP/memory.jsonl"
mkdir -p "$(dirname "$OUT")"
cp "$TMP/table.md" "$OUT"
cp "$TMP/memory.jsonl" "${OUT%.md}.jsonl"
cat "$TMP/table.md"
log "wrote $OUT and ${OUT%.md}.jsonl (total ${ELAPSED}s)"
