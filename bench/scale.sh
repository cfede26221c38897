#!/usr/bin/env bash
# bench/scale.sh — ratekv's latency at a fixed offered load with many GCRA
# keys resident, and while millions of them expire (the targets: with 10M
# keys resident, p99.9 at most 2x the 100k-key figure; expiring 10M keys
# reclaims their memory without latency spikes).
#
# One ratekv server, `--appendonly no --save ''`, GOMAXPROCS=1, pinned to core
# $SERVER_CORE, on a free 127.0.0.1 port; the load generator pinned to core
# $CLIENT_CORE (GOMAXPROCS=1). Every measurement is the same open-loop run:
# `loadgen -workload throttle_cell -pipeline 1 -rate $RATE` over $CONNS
# connections, $WARMUP then $DURATION, CL.THROTTLE rl:<n> $MEASURE_ARGS on
# uniformly random keys, latency from each request's due time so that a
# stall counts for every request it delays (bench/loadgen/rate.go).
#
#   small    fill rl:0 .. rl:SMALL-1 (`loadgen -fill gcra_cell`: CL.THROTTLE
#            rl:<k> 10 1 3600 1, so each key lives an hour), measure over them
#   big      fill rl:0 .. rl:BIG-1 (the same names: the measured keys are
#            among them), measure over rl:0 .. rl:SMALL-1 again
#   big_all  the same keyspace, requests spread over all BIG keys
#   growth   FLUSHALL; fill SMALL keys, then measure over them while a
#            second loadgen (GROW_CONNS connections, pipeline GROW_PIPELINE)
#            writes new keys, up to BIG, for the window: the shards'
#            indexes grow meanwhile, all 16 at about the same time
#   expiry   FLUSHALL; fill BIG keys that expire EXPIRE_TTL after their write
#            (`-fill-ttl`); measure from the end of that fill until
#            EXPIRY_TAIL after the last deadline, sampling DBSIZE and VmRSS
#            every second. The tail covers the reclaim too: the last
#            expired keys, the compactions and the memory's return (some
#            25 s after the last deadline for 10M keys). The measured keys
#            that get called are given a one-hour period and stay; the
#            rest are left to active expiry.
#
# small, big and big_all are each measured in WINDOWS windows back to back,
# and the table shows each case's window with the lowest p99.9 (every
# window's p99.9 under it): on a shared machine the p99.9 of one window at
# pipeline 1 varies widely for the same case (bench/README.md, Method
# lessons), and the ratios hinge on it. The expiry window happens once.
#
# Writes a markdown table to $OUT (bench/results/scale.md) and the raw
# loadgen JSON, one line per case plus the expiry samples, to ${OUT%.md}.jsonl.
#
# Environment (defaults in brackets): SMALL [100000], BIG [10000000],
# RATE [50000] requests/s, DURATION [10s] and WARMUP [1s] per measurement
# (whole seconds or milliseconds: 10s, 1500ms), CONNS [50], MEASURE_ARGS
# ["-burst 100000 -count 1 -period 3600": every call allowed, every call a
# write], BIG_ALL [1] (0: skip big_all), GROWTH [1] (0: skip growth),
# GROW_CONNS [4], GROW_PIPELINE [16], WINDOWS [3], EXPIRE_TTL [0: the fill
# time the big step measured, +25 %, +6 s], EXPIRY_TAIL [30] and
# RECLAIM_LIMIT [30] seconds, FILL_LIMIT [75] seconds per fill,
# FILL_PIPELINE [64],
# SCALE_LIMIT [720] seconds, SERVER_CORE [0], CLIENT_CORE [1],
# OUT [bench/results/scale.md].
#
# Time: about 5 minutes with the defaults where the server fills ~350k
# keys/s (four fills, 3 x WINDOWS + 1 measurements of WARMUP+DURATION+2 s
# drain, the expiry window of EXPIRE_TTL+EXPIRY_TAIL, then up to
# RECLAIM_LIMIT more until the expired keys are gone). Every step has a limit; the log prints
# the total with every step at its limit (about 11 minutes with the
# defaults), and SCALE_LIMIT stops the run (and its server) whatever
# happens, builds included. A quick smoke test:
#   BIG=300000 DURATION=2s EXPIRY_TAIL=3 RECLAIM_LIMIT=10 OUT=/tmp/scale.md bench/scale.sh
set -euo pipefail

START_TS=$(date +%s)
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SMALL=${SMALL:-100000}
BIG=${BIG:-10000000}
RATE=${RATE:-50000}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-1s}
CONNS=${CONNS:-50}
MEASURE_ARGS=${MEASURE_ARGS:-"-burst 100000 -count 1 -period 3600"}
BIG_ALL=${BIG_ALL:-1}
GROWTH=${GROWTH:-1}
GROW_CONNS=${GROW_CONNS:-4}
GROW_PIPELINE=${GROW_PIPELINE:-16}
WINDOWS=${WINDOWS:-3}
EXPIRE_TTL=${EXPIRE_TTL:-0}
EXPIRY_TAIL=${EXPIRY_TAIL:-30}
RECLAIM_LIMIT=${RECLAIM_LIMIT:-30}
FILL_LIMIT=${FILL_LIMIT:-75}
SCALE_LIMIT=${SCALE_LIMIT:-720}
FILL_PIPELINE=${FILL_PIPELINE:-64}
SERVER_CORE=${SERVER_CORE:-0}
CLIENT_CORE=${CLIENT_CORE:-1}
OUT=${OUT:-$ROOT/bench/results/scale.md}
OUT_JSONL=${OUT%.md}.jsonl

for v in SMALL BIG RATE CONNS WINDOWS EXPIRE_TTL EXPIRY_TAIL RECLAIM_LIMIT FILL_LIMIT FILL_PIPELINE SCALE_LIMIT; do
	[[ ${!v} =~ ^[0-9]+$ ]] || { echo "$v must be a whole number, not '${!v}'" >&2; exit 2; }
done
((SMALL >= 1 && BIG >= SMALL && RATE >= 1 && CONNS >= 1 && WINDOWS >= 1 && FILL_LIMIT >= 1)) ||
	{ echo "want 1 <= SMALL <= BIG, RATE, CONNS, WINDOWS, FILL_LIMIT >= 1" >&2; exit 2; }

# ms_of DURATION -> milliseconds, for the forms 10s, 1500ms, 2m
ms_of() {
	case $1 in
	*ms) echo "${1%ms}" ;;
	*s) echo $((${1%s} * 1000)) ;;
	*m) echo $((${1%m} * 60000)) ;;
	*) return 1 ;;
	esac
}
for v in DURATION WARMUP; do
	[[ ${!v} =~ ^[0-9]+(ms|s|m)$ ]] || { echo "$v: want whole ms, s or m (10s, 1500ms), not '${!v}'" >&2; exit 2; }
done
DUR_MS=$(ms_of "$DURATION")
WARM_MS=$(ms_of "$WARMUP")
# one measurement: warm-up, window, loadgen's 2 s drain, a few seconds spare
RUN_S=$(((WARM_MS + DUR_MS + 999) / 1000 + 2))

SERVERS=ratekv
LOG_PREFIX=scale
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

# The longest a run takes with every step at its limit (the loadgen stops
# itself; a fill at FILL_LIMIT, or 10 s later when the server hangs): three
# fills, three cases of WINDOWS measurements, the expiry window (EXPIRE_TTL
# is at most the fill limit + 25 % + 6 s), the reclaim wait, starting,
# FLUSHALL, stopping.
TTL_MAX=$EXPIRE_TTL
((TTL_MAX > 0)) || TTL_MAX=$((FILL_LIMIT * 5 / 4 + 6))
WORST=$((4 * (FILL_LIMIT + 10) + 3 * WINDOWS * RUN_S + RUN_S + TTL_MAX + EXPIRY_TAIL + RECLAIM_LIMIT + 30))
log "at most ${WORST}s after the build (${BIG} keys, ${RATE}/s for ${DURATION}); stopped at ${SCALE_LIMIT}s whatever happens"

# Memory: ~300 B of RSS per GCRA key (bench/results/memory.md), and the keys
# FLUSHALL drops are garbage while the expiry fill writes new ones.
need_mb=$((BIG * 700 / 1048576))
avail_mb=$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo)
if ((need_mb > avail_mb * 8 / 10)); then
	die "BIG=$BIG needs about ${need_mb} MiB, only ${avail_mb} MiB available"
fi

# The backstop: TERM after SCALE_LIMIT s (lib.sh's trap then stops the
# server; bash runs it once the current step's command returns, and each
# of those is bounded). The watchdog ends by itself once the script has.
(
	for _ in $(seq "$SCALE_LIMIT"); do
		sleep 1
		kill -0 "$$" 2>/dev/null || exit 0
	done
	log "SCALE_LIMIT: ${SCALE_LIMIT}s are up, stopping"
	kill -TERM "$$" 2>/dev/null
) >/dev/null &

build_tools
((HAVE_RATEKV)) || die "$RATEKV_NOTE"

rcli() { timeout 10 redis-cli -h 127.0.0.1 -p "$PORT" "$@" 2>/dev/null | tr -d '\r'; }
rss_kb() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB$/\1/p' "/proc/$SERVER_PID/status" 2>/dev/null || echo 0; }
mib() { echo $(($1 / 1024)); } # kB -> MiB
# jnum FILE FIELD -> the first value of "FIELD": in the JSON line in FILE
# (empty when it is not there: loadgen omits zero counts)
jnum() { { grep -o "\"$2\":[^,}]*" "$1" || true; } | head -n 1 | cut -d: -f2- | tr -d '"'; }
keys_count() { rcli info keyspace | sed -n 's/^db0:keys=\([0-9]*\),.*/\1/p' | grep . || echo 0; }

# start_ratekv: sets PORT and SERVER_PID (three tries at a free port)
start_ratekv() {
	local try
	for try in 1 2 3; do
		PORT=$("$TMP/loadgen" -free-port)
		DATA_DIR=$(mktemp -d "$TMP/data.XXXX")
		GOMAXPROCS=1 "${PIN_SERVER[@]}" "$TMP/ratekv" --bind 127.0.0.1 --port "$PORT" --dir "$DATA_DIR" \
			--appendonly no --save '' --loglevel warning >"$TMP/ratekv.log" 2>&1 &
		SERVER_PID=$!
		for _ in $(seq 50); do
			sleep 0.2
			kill -0 "$SERVER_PID" 2>/dev/null || break
			[[ $(rcli ping) == PONG ]] && return 0
		done
		log "ratekv did not come up on port $PORT (try $try): $(tail -n 1 "$TMP/ratekv.log")"
		stop_server
	done
	return 1
}

NOTES=()
declare -A R # R[case|field]
: >"$TMP/scale.jsonl"

# fill KEYS [loadgen flags]: write rl:0 .. rl:KEYS-1 with CL.THROTTLE;
# sets FILL_JSON (the loadgen line, or empty)
fill() {
	local keys=$1
	shift
	log "fill: $keys keys $* (at most ${FILL_LIMIT}s)"
	FILL_JSON=$(GOMAXPROCS=1 timeout $((FILL_LIMIT + 40)) "${PIN_CLIENT[@]}" "$TMP/loadgen" -addr "127.0.0.1:$PORT" \
		-fill gcra_cell -keys "$keys" -pipeline "$FILL_PIPELINE" -duration "${FILL_LIMIT}s" "$@" 2>"$TMP/fill.err" || true)
	echo "$FILL_JSON" >"$TMP/fill.json"
	if [[ -z $FILL_JSON ]]; then
		NOTES+=("fill of $keys keys failed: $(head -n 1 "$TMP/fill.err" | cut -c1-160)")
	elif [[ $(jnum "$TMP/fill.json" complete) != true ]]; then
		NOTES+=("fill of $keys keys stopped after ${FILL_LIMIT}s at $(jnum "$TMP/fill.json" sent) (FILL_LIMIT)")
	fi
	[[ -z $FILL_JSON || $(jnum "$TMP/fill.json" errors) == 0 ]] ||
		NOTES+=("fill of $keys keys: $(jnum "$TMP/fill.json" errors) error replies, e.g. $(jnum "$TMP/fill.json" first_error | cut -c1-120)")
	log "  $(jnum "$TMP/fill.json" sent) calls in $(jnum "$TMP/fill.json" seconds)s"
}

# measure CASE KEYS DURATION_MS [WINDOWS]: open-loop runs over rl:0 ..
# rl:KEYS-1, WINDOWS of them back to back [1]; R[CASE|…] gets the window
# with the lowest p99.9 (as compare.sh keeps each cell's best round: on a
# shared machine other jobs only ever add latency), R[CASE|windows] every
# window's p99.9. Each window is a line of the jsonl.
measure() {
	local c=$1 keys=$2 ms=$3 windows=${4:-1} out="$TMP/$1.json" w win best="" p all=""
	R[$c|resident]=$(keys_count)
	R[$c|rss]=$(rss_kb)
	rm -f "$out"
	for ((w = 1; w <= windows; w++)); do
		win="$TMP/$c.$w.json"
		log "$c: ${R[$c|resident]} keys resident, RSS $(mib "$(rss_kb)") MiB: $RATE/s over $keys keys for ${ms}ms (window $w of $windows)"
		# shellcheck disable=SC2086 # MEASURE_ARGS is a list of flags
		GOMAXPROCS=1 timeout $(((WARM_MS + ms) / 1000 + 40)) "${PIN_CLIENT[@]}" "$TMP/loadgen" -addr "127.0.0.1:$PORT" \
			-workload throttle_cell -pipeline 1 -conns "$CONNS" -rate "$RATE" -warmup "$WARMUP" -duration "${ms}ms" \
			-keys "$keys" $MEASURE_ARGS -json >"$win" 2>"$TMP/$c.err" || true
		if [[ ! -s $win ]]; then
			NOTES+=("$c: window $w: no result: $(head -n 1 "$TMP/$c.err" | cut -c1-160)")
			continue
		fi
		printf '{"case":"%s","window":%d,"keys_resident":%s,"rss_kb":%s,"measured_keys":%s,%s\n' \
			"$c" "$w" "${R[$c|resident]}" "${R[$c|rss]}" "$keys" "$(sed 's/^{//' "$win")" >>"$TMP/scale.jsonl"
		p=$(jnum "$win" p999_us)
		all+="${all:+, }$(printf '%.0f' "$p")"
		log "  achieved $(jnum "$win" achieved_rate)/s, p99 $(jnum "$win" p99_us) us, p99.9 $p us, max $(jnum "$win" max_us) us"
		if [[ -z $best ]] || awk -v a="$p" -v b="$best" 'BEGIN { exit !(a < b) }'; then
			best=$p
			cp "$win" "$out"
		fi
	done
	[[ -s $out ]] || return 0
	R[$c|windows]=$all
	local f
	for f in ops_per_sec achieved_rate p50_us p99_us p999_us max_us due_p999_us send_lag_p99_us kept_up unanswered errors limited conn_errors; do
		R[$c|$f]=$(jnum "$out" "$f")
	done
	[[ ${R[$c|kept_up]} == true ]] ||
		NOTES+=("$c: did not keep up with $RATE/s: achieved ${R[$c|achieved_rate]}/s, ${R[$c|unanswered]:-0} requests unanswered 2 s after the window")
	[[ ${R[$c|errors]} == 0 && ${R[$c|conn_errors]} == 0 ]] ||
		NOTES+=("$c: ${R[$c|errors]} error replies, ${R[$c|conn_errors]} failed connections: $(head -n 1 "$TMP/$c.err" | cut -c1-160)")
	[[ ${R[$c|limited]} == 0 ]] || NOTES+=("$c: ${R[$c|limited]} calls limited (MEASURE_ARGS)")
	# The client's own lateness (rate.go's send lag) is not in the latencies,
	# but when it is large the load generator's core was busy.
	awk -v l="${R[$c|send_lag_p99_us]:-0}" 'BEGIN { exit !(l > 500) }' &&
		NOTES+=("$c: the load generator was late: send lag p99 ${R[$c|send_lag_p99_us]} us (its core is busy; the offered load came in bursts)")
	return 0
}

# sampler T0: every second, "seconds-since-T0 DBSIZE VmRSS-kB", until the
# server exits or 600 samples. It starts no process per sample: DBSIZE goes
# over one connection opened with bash's /dev/tcp, VmRSS is read with
# `read`, the clock is $EPOCHREALTIME in integer microseconds, and the
# pause is a `read -t` on a pipe that never delivers. Why: it runs on the
# load generator's core, and processes forked there every second make the
# open-loop load generator late, which shows as server latency
# (bench/README.md, Method lessons).
sampler() {
	local t0us=${1/./} i now db rss key val rest line pipe frac
	exec {pipe}<> <(:) || return 0
	exec 7<>"/dev/tcp/127.0.0.1/$PORT" || return 0
	for ((i = 1; i <= 600; i++)); do
		kill -0 "$SERVER_PID" 2>/dev/null || return 0
		now=${EPOCHREALTIME/./}
		printf 'DBSIZE\r\n' >&7
		db=""
		IFS= read -r -t 5 line <&7 && db=${line//[^0-9]/}
		rss=""
		while IFS=$' \t' read -r key val rest; do
			[[ $key == VmRSS: ]] && { rss=$val; break; }
		done <"/proc/$SERVER_PID/status"
		# tenths of a second since T0, signed
		local d=$(((now - t0us) / 100000))
		local sign=""
		((d < 0)) && { sign="-"; d=$((-d)); }
		printf '%s%d.%d %s %s\n' "$sign" $((d / 10)) $((d % 10)) "$db" "$rss"
		# samples at the start, then at whole seconds of the window: 0, 1, ...
		local wait=$((t0us + i * 1000000 - 1000000 - ${EPOCHREALTIME/./}))
		if ((wait > 0)); then
			printf -v frac '%06d' $((wait % 1000000))
			read -r -t "$((wait / 1000000)).$frac" -u "$pipe" _ || true # times out: the pause
		fi
	done
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
start_ratekv || die "ratekv did not start"
log "ratekv on 127.0.0.1:$PORT, pid $SERVER_PID"

# --- a. small --------------------------------------------------------------
fill "$SMALL"
measure small "$SMALL" "$DUR_MS" "$WINDOWS"

# --- b. big ----------------------------------------------------------------
fill "$BIG"
BIG_FILL_SECS=$(jnum "$TMP/fill.json" seconds)
BIG_FILL_SENT=$(jnum "$TMP/fill.json" sent)
R[big|info]=$(rcli info keyspace | grep '^db0' || true)
measure big "$SMALL" "$DUR_MS" "$WINDOWS"
((BIG_ALL)) && measure big_all "$BIG" "$DUR_MS" "$WINDOWS"

# --- c. growth -------------------------------------------------------------
if ((GROWTH)); then
	rcli flushall >/dev/null
	sleep 1
	fill "$SMALL"
	log "growth: $SMALL keys, then up to $BIG written by $GROW_CONNS connections at pipeline $GROW_PIPELINE during the window"
	# The writer starts with the window (after the warm-up) and stops with
	# it; it writes rl:0 .. in order, so the first SMALL calls update keys.
	(
		sleep "$(awk -v w="$WARM_MS" 'BEGIN { printf "%.3f", w / 1000 }')"
		GOMAXPROCS=1 timeout $((DUR_MS / 1000 + 40)) "${PIN_CLIENT[@]}" "$TMP/loadgen" -addr "127.0.0.1:$PORT" \
			-fill gcra_cell -keys "$BIG" -conns "$GROW_CONNS" -pipeline "$GROW_PIPELINE" -duration "${DUR_MS}ms" \
			>"$TMP/growfill.json" 2>"$TMP/growfill.err" || true
	) &
	GROW_PID=$!
	measure growth "$SMALL" "$DUR_MS"
	wait "$GROW_PID" || true
	R[growth|after]=$(keys_count)
	R[growth|rss_after]=$(rss_kb)
	R[growth|written]=$(jnum "$TMP/growfill.json" sent)
	[[ -s $TMP/growfill.json ]] && printf '{"case":"growth_writer",%s\n' "$(sed 's/^{//' "$TMP/growfill.json")" >>"$TMP/scale.jsonl"
	[[ -n ${R[growth|written]} ]] || NOTES+=("growth: the writer reported nothing: $(head -n 1 "$TMP/growfill.err" | cut -c1-160)")
fi

# --- d. expiry -------------------------------------------------------------
if ((EXPIRE_TTL == 0)); then
	# as long as the big fill took, +25 % and 6 s: nothing expires before
	# the fill ends
	EXPIRE_TTL=$(awk -v s="${BIG_FILL_SECS:-$FILL_LIMIT}" -v n="${BIG_FILL_SENT:-0}" -v big="$BIG" -v lim="$FILL_LIMIT" 'BEGIN {
		t = (n > 0) ? s * big / n : lim
		if (t > lim) t = lim
		printf "%d\n", t * 1.25 + 6 }')
fi
rcli flushall >/dev/null
sleep 1
R[expiry|rss_flushed]=$(rss_kb)
log "expiry: FLUSHALL (RSS now $(mib "${R[expiry|rss_flushed]}") MiB), then $BIG keys living ${EXPIRE_TTL}s each"
FILL_T0=$EPOCHREALTIME
fill "$BIG" -fill-ttl "${EXPIRE_TTL}s"
FILL_T1=$EPOCHREALTIME
FILL_S=$(awk -v a="$FILL_T1" -v b="$FILL_T0" 'BEGIN { printf "%.1f", a - b }')
awk -v f="$FILL_S" -v t="$EXPIRE_TTL" 'BEGIN { exit !(f < t) }' ||
	NOTES+=("expiry: the fill took ${FILL_S}s, longer than EXPIRE_TTL ${EXPIRE_TTL}s: the first keys expired during the fill")
# From the end of the fill, the keys expire over the next EXPIRE_TTL s (the
# first ones FILL_S earlier); the window runs EXPIRY_TAIL s past the last.
EXP_MS=$(((EXPIRE_TTL + EXPIRY_TAIL) * 1000 - WARM_MS))
((EXP_MS >= DUR_MS)) || EXP_MS=$DUR_MS
T0=$(awk -v a="$EPOCHREALTIME" -v w="$WARM_MS" 'BEGIN { printf "%.6f", a + w / 1000 }') # the window's start
(
	((PIN)) && taskset -cp "$CLIENT_CORE" "$BASHPID" >/dev/null
	sampler "$T0"
) >"$TMP/samples.txt" &
SAMPLER_PID=$!
measure expiry "$SMALL" "$EXP_MS"
# Active expiry may still be at work: wait (at most RECLAIM_LIMIT s) until
# 99 % of the expiring keys are gone.
target=$((SMALL + (BIG - SMALL) / 100))
for _ in $(seq "$RECLAIM_LIMIT"); do
	last=$(tail -n 1 "$TMP/samples.txt" | cut -d' ' -f2)
	[[ -n $last && $last -le $target ]] && break
	sleep 1
done
sleep 1.5 # one more sample
kill "$SAMPLER_PID" 2>/dev/null || true
wait "$SAMPLER_PID" 2>/dev/null || true
R[expiry|info_end]=$(rcli info memory | grep -E '^(used_memory|mem_gc_cycles):' | tr '\n' ' ')
stop_server
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# Deadlines relative to the window's start: the first key was written at
# about FILL_T0, the last at FILL_T1.
DL_FIRST=$(awk -v f="$FILL_T0" -v t="$EXPIRE_TTL" -v z="$T0" 'BEGIN { printf "%.1f", f + t - z }')
DL_LAST=$(awk -v f="$FILL_T1" -v t="$EXPIRE_TTL" -v z="$T0" 'BEGIN { printf "%.1f", f + t - z }')
while read -r t n kb; do
	printf '{"case":"expiry_sample","t_s":%s,"dbsize":%s,"rss_kb":%s}\n' "$t" "${n:-null}" "${kb:-null}"
done <"$TMP/samples.txt" >>"$TMP/scale.jsonl"
# summary of the samples: the first sample at or under target, RSS peak,
# last and lowest after the peak
read -r RECLAIMED_AT RSS_PEAK RSS_LAST RSS_LOW DB_LAST < <(awk -v target="$target" '
	$2 != "" && $2 <= target && at == "" { at = $1 }
	$3 > peak { peak = $3; low = $3 }
	$3 < low { low = $3 }
	{ last = $3; db = $2 }
	END { printf "%s %d %d %d %s\n", (at == "" ? "never" : at), peak, last, low, db }' "$TMP/samples.txt")

# --- table -----------------------------------------------------------------

cell() { echo "${R[$1|$2]:-n/a}"; }
whole() { [[ -n ${R[$1|$2]:-} ]] && printf '%.0f' "${R[$1|$2]}" || echo n/a; }
ratio() { # ratio CASE-A CASE-B FIELD -> A/B
	awk -v a="${R[$1|$3]:-}" -v b="${R[$2|$3]:-}" 'BEGIN { if (a != "" && b > 0) printf "%.2f", a / b; else print "n/a" }'
}
row() { # row CASE LABEL RESIDENT RSS
	echo "| $2 | $3 | $RATE | $(whole "$1" achieved_rate) | $(whole "$1" p50_us) | $(whole "$1" p99_us) | $(whole "$1" p999_us) | $(whole "$1" max_us) | $(whole "$1" due_p999_us) | $4 |"
}
ELAPSED=$(($(date +%s) - START_TS))
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "no commit")
CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
PINNING="ratekv on core $SERVER_CORE, loadgen on core $CLIENT_CORE, both GOMAXPROCS=1"
((PIN)) || PINNING="unpinned, GOMAXPROCS=1"
{
	echo "## ratekv at scale: latency with $BIG GCRA keys resident and while they expire"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), commit $COMMIT, $(go version | cut -d' ' -f3), $(nproc) CPUs ($CPU), $((avail_mb / 1024)) GiB available; $PINNING."
	echo "One ratekv (\`--appendonly no --save ''\`). Each row: \`loadgen -workload throttle_cell -pipeline 1 -rate $RATE -conns $CONNS $MEASURE_ARGS\`, $WARMUP warm-up, then the window: CL.THROTTLE rl:<n> on uniformly random keys."
	echo "Open loop: requests are sent on a fixed schedule whatever the server does, and timed from their due time when they had to wait for the previous answer (a stall counts for every request it delays); p99.9 from due also counts the client's own timer lateness. Latencies in microseconds; RSS is the server's VmRSS."
	echo "Load average before: $LOAD_BEFORE, after: $LOAD_AFTER (other jobs on this machine skew results: re-run when it is busy)."
	echo
	echo "| case | keys resident | offered/s | achieved/s | p50 | p99 | p99.9 | max | p99.9 from due | RSS MiB |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	row small "small: requests over $SMALL keys" "$(cell small resident)" "$(mib "${R[small|rss]:-0}")"
	row big "big: the same $SMALL keys" "$(cell big resident)" "$(mib "${R[big|rss]:-0}")"
	((BIG_ALL)) && row big_all "big_all: requests over all $BIG keys" "$(cell big_all resident)" "$(mib "${R[big_all|rss]:-0}")"
	((GROWTH)) && row growth "growth: $SMALL keys, new ones written meanwhile" "$(cell growth resident) → $(cell growth after)" "$(mib "${R[growth|rss]:-0}") → $(mib "${R[growth|rss_after]:-0}")"
	row expiry "expiry: $SMALL keys, the rest expiring" "$(cell expiry resident) → ${DB_LAST:-n/a}" "$(mib "${R[expiry|rss]:-0}") → $(mib "${RSS_LAST:-0}")"
	echo
	echo "small, big and big_all: the window with the lowest p99.9 of $WINDOWS back to back (p99.9 of each: small ${R[small|windows]:-n/a}; big ${R[big|windows]:-n/a}; big_all ${R[big_all|windows]:-n/a} us). growth and expiry: their one window."
	echo
	echo "**p99.9 ratio big / small: $(ratio big small p999_us)** (issue 6: at most 2). big_all / small: $(ratio big_all small p999_us); growth / small: $(ratio growth small p999_us) (${R[growth|written]:-n/a} calls of the writer in the window); expiry / small: $(ratio expiry small p999_us); max expiry / small: $(ratio expiry small max_us)."
	echo
	echo "After the big fill: \`${R[big|info]:-n/a}\`, RSS $(mib "${R[big|rss]:-0}") MiB ($(awk -v r="${R[big|rss]:-0}" -v n="${R[big|resident]:-0}" 'BEGIN { if (n > 0) printf "%.0f", r * 1024 / n; else print "n/a" }') B of RSS per key, the baseline included)."
	echo
	echo "Expiry: FLUSHALL (RSS $(mib "${R[expiry|rss_flushed]:-0}") MiB a second later), then $BIG keys written in ${FILL_S}s, each living ${EXPIRE_TTL}s, so their deadlines fall ${DL_FIRST}s to ${DL_LAST}s into the $((EXP_MS / 1000))s window."
	echo "99 % of them gone (DBSIZE <= $target): $([[ $RECLAIMED_AT == never ]] && echo "not within ${RECLAIM_LIMIT}s after the window" || echo "at ${RECLAIMED_AT}s, $(awk -v a="$RECLAIMED_AT" -v b="$DL_LAST" 'BEGIN { printf "%.1f", a - b }')s after the last deadline")."
	echo "RSS: $(mib "${R[expiry|rss]:-0}") MiB at the start, peak $(mib "$RSS_PEAK"), lowest after the peak $(mib "$RSS_LOW"), last $(mib "$RSS_LAST") MiB (Go frees the heap at its next GC and returns pages to the OS gradually); at the end INFO says: ${R[expiry|info_end]:-n/a}."
	echo
	echo "| t s | DBSIZE | RSS MiB | max latency us, requests due until the next row |"
	echo "|---:|---:|---:|---:|"
	# every sample, or every few when there are many, with the highest
	# latency of the requests due from then to the next row (loadgen's
	# max_us_per_s: second i of the window)
	tl=$(grep -o '"max_us_per_s":\[[^]]*\]' "$TMP/expiry.json" 2>/dev/null | sed 's/.*\[//; s/\]//' | tr ',' ' ' || true)
	awk -v tl="$tl" '
		BEGIN { n = split(tl, m, " ") } # m[s+1]: second s of the window
		{ t[NR] = $1; d[NR] = $2; r[NR] = $3 }
		END {
			step = int((NR + 44) / 45) # at most 45 rows
			for (i = 1; i <= NR; i += step) {
				lat = ""
				for (s = int(t[i]); s < int(t[i]) + step; s++)
					if (t[i] >= 0 && s < n && (lat == "" || m[s + 1] + 0 > lat + 0)) lat = m[s + 1]
				printf "| %s | %s | %d | %s |\n", t[i], d[i], r[i] / 1024, lat
			}
		}' "$TMP/samples.txt"
	if ((${#NOTES[@]})); then
		echo
		for n in "${NOTES[@]}"; do echo "- $n"; done
	fi
	echo
	echo "Total runtime: ${ELAPSED}s."
} >"$TMP/scale.md"

mkdir -p "$(dirname "$OUT")"
cp "$TMP/scale.md" "$OUT"
cp "$TMP/scale.jsonl" "$OUT_JSONL"
cat "$TMP/scale.md"
log "wrote $OUT and $OUT_JSONL (total ${ELAPSED}s)"
