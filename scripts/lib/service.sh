# Shared helpers of the test-service scripts (scripts/kafka.sh,
# scripts/schema-registry.sh, scripts/moto.sh, scripts/postgres.sh,
# scripts/kafka-connect.sh), sourced by them. The caller
# defines log, die, running (is the service in $dir alive?), ready (does it
# answer?), print_vars and the globals dir and current_file (the file
# naming the service's last DIR).

# A TCP port on 127.0.0.1 that nothing listens on right now.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Nothing listens on port $1. SO_REUSEADDR as the JVM's server sockets use it,
# so connections in TIME_WAIT from before a restart do not count.
port_free() {
  python3 -c 'import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1",int(sys.argv[1])))' "$1" 2>/dev/null
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
  start) cmd_start "${2:-}" ;;
  stop) stop_service "$pid_file" "${2:-}" ;;
  status) status_service "${2:-}" ;;
  setup) setup ;;
  *) usage ;;
  esac
}
