#!/usr/bin/env bash
# moto's server mode (PyPI `moto[server]`): an S3- and STS-compatible
# endpoint for the object-storage tests (S3 warehouses, vended credentials,
# remote signing). One process serves every AWS service on one port.
#
#   scripts/moto.sh start  [DIR]   # start, wait until it answers
#   scripts/moto.sh stop   [DIR]   # SIGTERM, wait (SIGKILL after 30 s)
#   scripts/moto.sh status [DIR]   # exit 0 and print the variables if running
#   scripts/moto.sh setup          # only create the venv; prints its path
#
# `start` prints, on stdout, lines meant for eval:
#   MOTO_ENDPOINT=http://127.0.0.1:PORT
#   MOTO_DIR=/abs/dir   MOTO_PID=1234   MOTO_LOG=...
# e.g.  eval "$(scripts/moto.sh start)"; ...; scripts/moto.sh stop "$MOTO_DIR"
# Progress and errors go to stderr.
#
# moto keeps its state in memory: a restart starts empty. It accepts any
# access key; it answers STS AssumeRole with fresh keys but does NOT
# enforce IAM or session policies, so tests that need the scoping checked
# assert the policy document Tarn builds (storage/vend_test.go).
#
# Without DIR, `start` makes a temporary directory, remembered in
# ${TARN_RUN_DIR:-${TMPDIR:-/tmp}}/tarn-moto.current so that `stop`/`status`
# without DIR find it; `stop` deletes such a temporary directory.
# Set MOTO_PORT to choose the port.
#
# Venv: $TARN_CACHE/moto-venv (default $HOME/.cache/tarn/moto-venv) with the
# pinned moto[server] below; a stamp makes reruns a no-op. Nothing is
# written into the repository.
set -euo pipefail
shopt -s inherit_errexit

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache="${TARN_CACHE:-$HOME/.cache/tarn}"
venv="$cache/moto-venv"
run_dir="${TARN_RUN_DIR:-${TMPDIR:-/tmp}}"
current_file="$run_dir/tarn-moto.current"
# Pinned: moto 5.2.5 (server extra: flask, werkzeug, ...).
requirement="moto[server]==5.2.5"

log() { echo "moto: $*" >&2; }
die() { log "$*"; exit 1; }
usage() { echo "usage: $0 start|stop|status [DIR] | setup" >&2; exit 2; }

# shellcheck source=lib/service.sh
source "$here/lib/service.sh"

setup() {
  if [[ -f $venv/.stamp && "$(cat "$venv/.stamp")" == "$requirement" ]] && "$venv/bin/python" -c 'import moto.server' 2>/dev/null; then
    echo "$venv"
    return
  fi
  mkdir -p "$cache"
  exec 9>"$cache/moto-venv.lock"
  flock 9
  if [[ -f $venv/.stamp && "$(cat "$venv/.stamp")" == "$requirement" ]] && "$venv/bin/python" -c 'import moto.server' 2>/dev/null; then
    exec 9>&-
    echo "$venv"
    return
  fi
  log "creating $venv with $requirement"
  rm -rf "$venv"
  "${TARN_PYTHON:-python3}" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$requirement" >&2
  "$venv/bin/python" -c 'import moto.server' || die "moto.server does not import"
  echo "$requirement" >"$venv/.stamp"
  exec 9>&-
  echo "$venv"
}

running() { [[ -f $dir/moto.pid ]] && kill -0 "$(cat "$dir/moto.pid")" 2>/dev/null; }
# moto of $dir answers its API (service.sh).
ready() { curl -fsS -o /dev/null "http://127.0.0.1:$(cat "$dir/moto.port")/moto-api/" 2>/dev/null; }

print_vars() {
  echo "MOTO_ENDPOINT=http://127.0.0.1:$(cat "$dir/moto.port")"
  echo "MOTO_DIR=$dir"
  echo "MOTO_PID=$(cat "$dir/moto.pid")"
  echo "MOTO_LOG=$dir/moto.log"
}

cmd_start() {
  local v port pid started
  v=$(setup)
  resolve_dir "${1:-}"
  if [[ -z ${1:-} ]]; then
    dir=$(mktemp -d "$run_dir/tarn-moto.XXXXXX")
    touch "$dir/.tarn-temporary"
  fi
  if running; then
    log "already running in $dir"
    print_vars
    return
  fi
  port=${MOTO_PORT:-$(free_port)}
  echo "$port" >"$dir/moto.port"
  started=$(date +%s%3N)
  # setsid: its own process group, so a test's Ctrl-C does not reach it.
  setsid "$v/bin/moto_server" -H 127.0.0.1 -p "$port" >"$dir/moto.log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$dir/moto.pid"
  watch_owner "$here/moto.sh"
  echo "$dir" >"$current_file"
  await_ready moto "$pid" "${MOTO_START_TIMEOUT:-30}" "$dir/moto.log"
  log "ready on 127.0.0.1:$port in $(elapsed "$started")s (pid $pid)"
  print_vars
}

pid_file=moto.pid
service_main "$@"
