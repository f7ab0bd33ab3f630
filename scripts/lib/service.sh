# Shared helpers of the test-service scripts (scripts/kafka.sh,
# scripts/schema-registry.sh, scripts/moto.sh, scripts/postgres.sh,
# scripts/kafka-connect.sh), sourced by them. The caller
# defines log, die, running (is the service in $dir alive?), ready (does it
# answer?), print_vars and the globals dir and current_file (the file
# naming the service's last DIR).

# missing MESSAGE: a precondition of the script is missing (a tool that
# is not installed and that it cannot install): says so and exits with
# status 3, which internal/testservice turns into testenv.Missing (the test
# skips on a developer's machine and fails under CI=true). Every other
# failure exits 1 and fails the test.
missing() {
  log "missing: $*"
  exit 3
}

# need CMD HINT: missing (above) unless CMD is on PATH; HINT says how to
# get it.
need() { command -v "$1" >/dev/null 2>&1 || missing "$1 not found ($2)"; }

# watch_owner SCRIPT: when TARN_OWNER_LOCK names a file that the process
# owning this service holds an exclusive flock(2) on for as long as it
# lives (internal/testservice does, for the Go test binary), starts a
# watchdog in a session of its own that waits for a shared lock on it,
# removes it and runs `SCRIPT stop $dir` if $dir still exists. A test
# binary that is killed (SIGKILL, Ctrl-C, go test's -timeout) runs no
# cleanup, and services started with setsid would otherwise outlive it.
# The kernel drops the owner's lock when the owner exits however it exits,
# so the watchdog needs no polling and cannot mistake a reused pid for the
# owner; a shared lock lets every watchdog of the owner go at once. The
# owner never removes the file, so a missing one means the owner is gone
# (flock(1) creates it, gets the lock at once, and the service stops).
# One watchdog per DIR and owner (DIR/watchdog.pid, DIR/watchdog.owner): a
# DIR restarted many times (kill -9 tests) keeps one.
watch_owner() {
  local script=$1 pid
  [[ -n ${TARN_OWNER_LOCK:-} ]] || return 0
  if [[ -f $dir/watchdog.pid && -f $dir/watchdog.owner &&
    "$(cat "$dir/watchdog.owner")" == "$TARN_OWNER_LOCK" ]]; then
    pid=$(cat "$dir/watchdog.pid")
    if [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "tarn-watchdog $TARN_OWNER_LOCK $script $dir"; then
      return 0
    fi
  fi
  # shellcheck disable=SC2016 # expanded by the watchdog's bash
  setsid nohup bash -c 'flock -s "$1" true; rm -f "$1"; if [[ -d $3 ]]; then exec "$2" stop "$3"; fi' \
    tarn-watchdog "$TARN_OWNER_LOCK" "$script" "$dir" </dev/null >/dev/null 2>&1 &
  echo $! >"$dir/watchdog.pid"
  echo "$TARN_OWNER_LOCK" >"$dir/watchdog.owner"
}

# A TCP port on 127.0.0.1 that nothing listens on right now and that no
# other start of these scripts picked in the last 10 minutes. The kernel's
# choice alone (bind to port 0) can hand two parallel runs the same port
# in the seconds before either service binds it (a JVM takes up to a
# minute to start on a busy machine), so each pick is recorded as a file
# in ${TARN_RUN_DIR:-${TMPDIR:-/tmp}}/tarn-ports-<uid>, under a lock, and
# records older than 10 minutes are dropped.
free_port() {
  python3 - "${TARN_RUN_DIR:-${TMPDIR:-/tmp}}/tarn-ports-$(id -u)" <<'EOF'
import fcntl, os, socket, sys, time
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
with open(os.path.join(d, ".lock"), "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    now = time.time()
    for name in os.listdir(d):
        if name.isdigit() and now - os.stat(os.path.join(d, name)).st_mtime > 600:
            os.remove(os.path.join(d, name))
    for _ in range(1000):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        if not os.path.exists(os.path.join(d, str(port))):
            open(os.path.join(d, str(port)), "w").close()
            print(port)
            break
    else:
        sys.exit("no free port")
EOF
}

# Nothing listens on port $1. SO_REUSEADDR as the JVM's server sockets use it,
# so connections in TIME_WAIT from before a restart do not count.
port_free() {
  python3 -c 'import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1",int(sys.argv[1])))' "$1" 2>/dev/null
}

# start_dir NAME [DIR]: sets dir to DIR (created if missing), or without
# DIR to a new temporary directory $run_dir/tarn-NAME.XXXXXX that `stop`
# removes.
start_dir() {
  if [[ -n ${2:-} ]]; then
    resolve_dir "$2"
  else
    mkdir -p "$run_dir"
    dir=$(mktemp -d "$run_dir/tarn-$1.XXXXXX")
    touch "$dir/.tarn-temporary"
  fi
}

# pick_port WANTED_VAR PORT_FILE: prints the service's port and records it
# in PORT_FILE: the port in the environment variable named WANTED_VAR (dies
# when it is in use), else the one PORT_FILE recorded on an earlier start
# if it is still free, else a free one.
pick_port() {
  local var=$1 file=$2 port
  port=${!var:-}
  [[ -n $port || ! -f $file ]] || port=$(cat "$file")
  if [[ -z $port ]] || ! port_free "$port"; then
    [[ -z ${!var:-} ]] || die "$var=${!var} is in use"
    port=$(free_port)
  fi
  echo "$port" >"$file"
  echo "$port"
}

# Seconds since $1 (epoch milliseconds), one decimal.
elapsed() { local ms=$(($(date +%s%3N) - $1)); printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100)); }

# Sets dir from the DIR argument $1, else from $current_file, else "".
resolve_dir() {
  if [[ -n ${1:-} ]]; then
    mkdir -p "$1"
    dir=$(cd "$1" && pwd)
  elif [[ -f $current_file ]]; then
    dir=$(cat "$current_file")
  else
    dir=""
  fi
}

# Stops the service of DIR $2 whose pid is in $dir/$1: the signal named by
# the caller's $stop_signal (default TERM), up to 30 s, then SIGKILL; forgets the DIR and removes it if start made it temporary.
stop_service() {
  local pidfile=$1 pid
  resolve_dir "${2:-}"
  if [[ -z $dir ]] || ! running; then
    log "not running${dir:+ in $dir}"
    [[ -z $dir ]] || rm -f "$dir/$pidfile"
  else
    pid=$(cat "$dir/$pidfile")
    kill -s "${stop_signal:-TERM}" "$pid" 2>/dev/null || true
    for _ in $(seq 150); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "pid $pid still alive after 30s, SIGKILL"
      kill -9 "$pid" 2>/dev/null || true
      while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    fi
    rm -f "$dir/$pidfile"
    log "stopped (pid $pid)"
  fi
  if [[ -n $dir && -f $current_file && "$(cat "$current_file")" == "$dir" ]]; then
    rm -f "$current_file"
  fi
  if [[ -n $dir && -f $dir/.tarn-temporary ]]; then
    rm -rf "$dir"
  fi
}

# await_ready WHAT PID TIMEOUT LOG...: waits (polling every 0.2 s, up to
# TIMEOUT seconds) until the caller's `ready` function succeeds for the
# service started as PID. When the process exits or the time runs out it
# shows the last 40 lines of each LOG and dies (killing PID on a timeout).
await_ready() {
  local what=$1 pid=$2 timeout=$3
  shift 3
  local deadline=$((SECONDS + timeout))
  while ((SECONDS < deadline)); do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 40 "$@" >&2
      die "$what exited during startup (logs above: $*)"
    fi
    if ready; then
      return 0
    fi
    sleep 0.2
  done
  tail -n 40 "$@" >&2
  kill "$pid" 2>/dev/null || true
  die "$what did not answer within ${timeout}s (logs above: $*)"
}

# status_service DIR: prints the caller's print_vars when the service of
# DIR (or the last one started) runs and is ready; else says it is not
# running and returns 1.
status_service() {
  resolve_dir "${1:-}"
  if [[ -n $dir ]] && running && ready; then
    print_vars
  else
    log "not running${dir:+ in $dir}"
    return 1
  fi
}

# service_main ARG...: the command line every service script takes:
# start|stop|status [DIR], or setup. The caller defines cmd_start, setup,
# usage and its pid file name in $pid_file.
service_main() {
  [[ $# -ge 1 && $# -le 2 ]] || usage
  dir=""
  case $1 in
  start)
    need python3 "apt-get install python3; it finds free ports"
    cmd_start "${2:-}"
    ;;
  stop) stop_service "$pid_file" "${2:-}" ;;
  status) status_service "${2:-}" ;;
  setup) setup ;;
  *) usage ;;
  esac
}
