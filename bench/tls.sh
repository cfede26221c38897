#!/usr/bin/env bash
# bench/tls.sh — ratekv vs redis-server, both over TLS with the same
# certificates, under redis-benchmark --tls (the load generator speaks
# plaintext only).
#
# Makes a CA, a server and a client certificate with openssl, builds
# ratekv, then for each round starts redis-server, runs every workload at
# every pipeline depth, stops it, and does the same with ratekv (never
# both at once; the servers pinned to core $SERVER_CORE, ratekv with
# GOMAXPROCS=1; redis-benchmark pinned to core $CLIENT_CORE). Each cell
# is the median of the rounds, which interleave the servers so that a
# slow spell of a shared machine hits both. Clients present their
# certificate (tls-auth-clients yes, both servers' default).
#
# Workloads (table rows):
#   throttle  redis: EVALSHA of bench/gcra.lua (CL.THROTTLE as a script)
#             ratekv: CL.THROTTLE rl:<k> 100 1000 60 1
#   set       SET key:<k> with 3 bytes (redis-benchmark -t set)
#
# Environment (defaults in brackets):
#   WORKLOADS ["throttle set"]   PIPELINES ["1 32"]   ROUNDS [5]
#   REQUESTS  [1000000]  requests per run at pipeline 32; at pipeline 1 a
#             fifth of them (a run then lasts seconds on either server)
#   CONNS [50]   KEYS [100000]   SERVER_CORE [0]   CLIENT_CORE [1]
#   OUT [bench/results/tls.md]   the table, also printed
#
# A quick check that everything runs: REQUESTS=2000 ROUNDS=1 bench/tls.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORKLOADS=${WORKLOADS:-"throttle set"}
PIPELINES=${PIPELINES:-"1 32"}
ROUNDS=${ROUNDS:-5}
REQUESTS=${REQUESTS:-1000000}
CONNS=${CONNS:-50}
KEYS=${KEYS:-100000}
SERVER_CORE=${SERVER_CORE:-0}
CLIENT_CORE=${CLIENT_CORE:-1}
OUT=${OUT:-$ROOT/bench/results/tls.md}
SERVERS="redis ratekv"
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "ROUNDS must be a positive integer" >&2; exit 1; }
[[ "$REQUESTS" =~ ^[1-9][0-9]*$ ]] || { echo "REQUESTS must be a positive integer" >&2; exit 1; }

LOG_PREFIX=tls
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
command -v redis-benchmark >/dev/null || die "redis-benchmark not found (apt-get install redis-tools)"
command -v openssl >/dev/null || die "openssl not found"
redis-server --version | grep -q . || die "redis-server does not run"

# --- certificates ----------------------------------------------------------

CERTS=$TMP/certs
mkdir -p "$CERTS"
(
	cd "$CERTS"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj /CN=bench-ca -keyout ca.key -out ca.crt 2>/dev/null
	for name in server client; do
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$name" \
			-keyout "$name.key" -out "$name.csr" 2>/dev/null
		printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' >"$name.ext"
		openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
			-extfile "$name.ext" -out "$name.crt" 2>/dev/null
	done
) || die "openssl could not make the certificates"
SERVER_TLS=(--tls-cert-file "$CERTS/server.crt" --tls-key-file "$CERTS/server.key" --tls-ca-cert-file "$CERTS/ca.crt")
CLIENT_TLS=(--tls --cacert "$CERTS/ca.crt" --cert "$CERTS/client.crt" --key "$CERTS/client.key")

log "building ratekv"
(cd "$ROOT" && timeout 300 go build -o "$TMP/ratekv" .) || die "ratekv does not build"
timeout 300 go build -o "$TMP/loadgen" "$ROOT/bench/loadgen" 2>/dev/null || true # for -free-port only

free_port() {
	if [[ -x "$TMP/loadgen" ]]; then
		"$TMP/loadgen" -free-port
	else
		echo $((20000 + RANDOM % 20000))
	fi
}

cli() { timeout 5 redis-cli "${CLIENT_TLS[@]}" -h 127.0.0.1 -p "$PORT" "$@"; }

# start_server NAME: TLS only (port 0) on a free port; sets PORT, SERVER_PID.
start_server() {
	local name=$1 attempt
	for attempt in 1 2 3; do
		PORT=$(free_port)
		DATA_DIR=$(mktemp -d "$TMP/$name-data.XXXX")
		case $name in
		redis)
			"${PIN_SERVER[@]}" redis-server --port 0 --tls-port "$PORT" --bind 127.0.0.1 "${SERVER_TLS[@]}" \
				--save '' --appendonly no --dir "$DATA_DIR" --logfile "$TMP/redis.log" >/dev/null 2>&1 &
			;;
		ratekv)
			GOMAXPROCS=1 "${PIN_SERVER[@]}" "$TMP/ratekv" --port 0 --tls-port "$PORT" --bind 127.0.0.1 "${SERVER_TLS[@]}" \
				--save '' --appendonly no --dir "$DATA_DIR" --loglevel warning >"$TMP/ratekv.log" 2>&1 &
			;;
		esac
		SERVER_PID=$!
		for _ in $(seq 100); do
			kill -0 "$SERVER_PID" 2>/dev/null || break
			if [[ $(cli ping 2>/dev/null) == PONG ]]; then
				log "$name listening with TLS on 127.0.0.1:$PORT (pid $SERVER_PID)"
				return 0
			fi
			sleep 0.1
		done
		log "$name did not answer PING over TLS on port $PORT (attempt $attempt)"
		tail -n 5 "$TMP/$name.log" >&2 2>/dev/null || true
		stop_server
	done
	return 1
}

# bench_args NAME WORKLOAD: redis-benchmark's test for it
bench_args() {
	case $2 in
	set) echo "-t set" ;;
	throttle)
		if [[ $1 == redis ]]; then
			echo "EVALSHA $GCRA_SHA 1 rl:__rand_int__ 100 1000 60 1"
		else
			echo "CL.THROTTLE rl:__rand_int__ 100 1000 60 1"
		fi
		;;
	*) die "unknown workload $2 (want throttle, set)" ;;
	esac
}

declare -A OPS # OPS[server|workload|pipeline|round]: requests/s
NOTES=()
run_server() {
	local name=$1 round=$2 w p n args out rps
	start_server "$name" || { NOTES+=("$name did not start in round $round"); return; }
	GCRA_SHA=""
	if [[ $name == redis ]]; then
		GCRA_SHA=$(cli script load "$(cat "$ROOT/bench/gcra.lua")") || die "SCRIPT LOAD failed"
	fi
	for w in $WORKLOADS; do
		for p in $PIPELINES; do
			n=$REQUESTS
			((p > 1)) || n=$((REQUESTS / 5 > 0 ? REQUESTS / 5 : 1))
			read -r -a args <<<"$(bench_args "$name" "$w")"
			out="$TMP/$name-$w-$p-$round.csv"
			timeout 600 "${PIN_CLIENT[@]}" redis-benchmark "${CLIENT_TLS[@]}" -h 127.0.0.1 -p "$PORT" \
				-c "$CONNS" -n "$n" -P "$p" -r "$KEYS" --csv "${args[@]}" >"$out" 2>"$out.err" || true
			rps=$(tail -n 1 "$out" | cut -d, -f2 | tr -d '"')
			if [[ ! "$rps" =~ ^[0-9.]+$ ]]; then
				NOTES+=("$name $w p$p round $round: no result: $(head -c 160 "$out.err" "$out" | tr '\n' ' ')")
				continue
			fi
			OPS[$name|$w|$p|$round]=$rps
			log "$name $w p$p round $round: $rps requests/s"
			cli flushall >/dev/null 2>&1 || true
		done
	done
	errors=$(cli info errorstats 2>/dev/null | grep -c '^errorstat_' || true)
	((errors == 0)) || NOTES+=("$name round $round: error replies: $(cli info errorstats | grep '^errorstat_' | tr '\r\n' '  ')")
	stop_server
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")
for round in $(seq "$ROUNDS"); do
	for s in $SERVERS; do
		run_server "$s" "$round"
	done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")

median() { # median VALUE... -> the median of those given, whole numbers
	printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -n |
		awk '{ v[NR] = $1 } END { if (NR == 0) print "n/a"; else if (NR % 2) printf "%.0f", v[(NR + 1) / 2]; else printf "%.0f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
rounds_of() { # rounds_of server workload pipeline -> the values, space separated
	local r out=()
	for r in $(seq "$ROUNDS"); do out+=("${OPS[$1|$2|$3|$r]-n/a}"); done
	echo "${out[@]}"
}

mkdir -p "$(dirname "$OUT")"
{
	echo "# ratekv vs redis-server over TLS"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), $(redis-server --version | cut -d' ' -f3), redis-benchmark --tls with client certificates, $CONNS connections, $KEYS keys, servers on core $SERVER_CORE, client on core $CLIENT_CORE (pinning: $PIN), load $LOAD_BEFORE -> $LOAD_AFTER."
	echo "Requests/s, median of $ROUNDS interleaved rounds (each round's values in the last columns)."
	echo
	echo "| workload | pipeline | redis | ratekv | ratekv/redis | redis rounds | ratekv rounds |"
	echo "|---|---:|---:|---:|---:|---|---|"
	for w in $WORKLOADS; do
		for p in $PIPELINES; do
			# shellcheck disable=SC2046 # the rounds are separate values
			r=$(median $(rounds_of redis "$w" "$p"))
			# shellcheck disable=SC2046
			k=$(median $(rounds_of ratekv "$w" "$p"))
			ratio=$(awk -v a="$k" -v b="$r" 'BEGIN { if (a ~ /^[0-9.]+$/ && b > 0) printf "%.2f", a / b; else print "n/a" }')
			echo "| $w | $p | $r | $k | $ratio | $(rounds_of redis "$w" "$p") | $(rounds_of ratekv "$w" "$p") |"
		done
	done
	if ((${#NOTES[@]})); then
		echo
		printf -- '- %s\n' "${NOTES[@]}"
	fi
} | tee "$OUT"
