# bench/lib.sh — what compare.sh and memory.sh share. Source it after
# setting LOG_PREFIX, SERVERS, SERVER_CORE and CLIENT_CORE; it creates TMP,
# installs the cleanup trap, makes sure redis-server is installed, sets the
# core pinning (PIN, PIN_SERVER, PIN_CLIENT) and defines log, die and
# stop_server. build_tools then builds the load generator and ratekv.

log() { printf '[%s] %s\n' "$LOG_PREFIX" "$*" >&2; }
die() { log "error: $*"; exit 1; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/ratekv-$LOG_PREFIX.XXXXXX")
SERVER_PID=""
DATA_DIR=""

# stop_server: TERM, up to 5 s of grace, then KILL; removes DATA_DIR if set.
stop_server() {
	if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
		kill "$SERVER_PID" 2>/dev/null || true
		for _ in $(seq 50); do
			kill -0 "$SERVER_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
	fi
	SERVER_PID=""
	[[ -n "$DATA_DIR" ]] && rm -rf "$DATA_DIR"
	DATA_DIR=""
}
cleanup() {
	stop_server
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
	log "redis-server/redis-cli not found: installing with apt-get"
	SUDO=""
	[[ $(id -u) -eq 0 ]] || SUDO=sudo
	timeout 600 $SUDO apt-get update -qq >&2 || die "apt-get update failed"
	timeout 600 $SUDO apt-get install -y -qq redis-server redis-tools >&2 || die "apt-get install redis-server failed"
fi

PIN=1
if ! command -v taskset >/dev/null; then
	log "warning: taskset not found: running unpinned"
	PIN=0
elif (($(nproc) < 2)); then
	log "warning: fewer than 2 CPUs: running unpinned (server and client share the CPU)"
	PIN=0
fi
PIN_SERVER=()
PIN_CLIENT=()
if ((PIN)); then
	PIN_SERVER=(taskset -c "$SERVER_CORE")
	PIN_CLIENT=(taskset -c "$CLIENT_CORE")
fi

# build_tools: builds $TMP/loadgen (or dies) and, when SERVERS names it,
# $TMP/ratekv; HAVE_RATEKV is 1 when that worked, else RATEKV_NOTE says why.
build_tools() {
	cd "$ROOT"
	log "building bench/loadgen"
	timeout 300 go build -o "$TMP/loadgen" ./bench/loadgen || die "loadgen does not build"
	HAVE_RATEKV=0
	RATEKV_NOTE=""
	if [[ " $SERVERS " == *" ratekv "* ]]; then
		log "building ratekv"
		if timeout 300 go build -o "$TMP/ratekv" . 2>"$TMP/ratekv-build.log"; then
			HAVE_RATEKV=1
		else
			RATEKV_NOTE="ratekv skipped: \`go build .\` failed: $( (grep -v '^#' "$TMP/ratekv-build.log" || true) | head -n 1 | cut -c1-120)"
			log "$RATEKV_NOTE"
			sed -n '1,10p' "$TMP/ratekv-build.log" >&2
		fi
	fi
}

# For scripts that run several processes at once (repl.sh, cluster.sh):
# they add each pid to PIDS, and stop_all stops them; set the trap
# 'stop_all; cleanup' EXIT. A function that starts processes must not run
# in a command substitution, whose PIDS the caller never sees.
PIDS=()
stop_all() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	PIDS=()
}

# port: a free TCP port on 127.0.0.1 (after build_tools).
port() { "$TMP/loadgen" -free-port; }

# pin CORE CMD...: runs CMD on CORE when pinning is available. It execs:
# run it in the background (&) or a subshell, so that the pid ($!) is the
# command's.
pin() {
	local core=$1
	shift
	if ((PIN)); then exec taskset -c "$core" "$@"; else exec "$@"; fi
}
