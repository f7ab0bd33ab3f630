#!/usr/bin/env bash
# Apache Iceberg's reference REST catalog (org.apache.iceberg.rest.RESTCatalogServer,
# a JdbcCatalog on in-memory SQLite behind Jetty) as a background process, for
# checking test scripts and benchmarks against the reference implementation.
#
#   scripts/iceberg-rest-fixture.sh start PORT WAREHOUSE_DIR   # waits until GET /v1/config answers
#   scripts/iceberg-rest-fixture.sh stop PORT
#   scripts/iceberg-rest-fixture.sh status PORT
#
# URI: http://127.0.0.1:PORT  warehouse: file://<absolute WAREHOUSE_DIR> (created if missing).
# Note: RESTCatalogServer has no bind-address setting; Jetty listens on all interfaces
# with SO_REUSEPORT, so a second server on the same port would silently share its
# traffic: start refuses a port where something already answers /v1/config.
# Catalog state is in memory: a restart forgets all namespaces/tables (the files stay).
# Pid and log: $TARN_RUN_DIR (default ${TMPDIR:-/tmp})/iceberg-rest-fixture-PORT.{pid,log}.
# Jars come from scripts/setup-rck.sh (cached under $HOME/.cache/tarn). Env: JAVA_HOME.
set -euo pipefail

usage() { echo "usage: $0 start PORT WAREHOUSE_DIR | stop PORT | status PORT" >&2; exit 2; }
[[ $# -ge 2 ]] || usage
cmd=$1 port=$2
[[ $port =~ ^[0-9]+$ ]] || usage

run_dir="${TARN_RUN_DIR:-${TMPDIR:-/tmp}}"
pid_file="$run_dir/iceberg-rest-fixture-$port.pid"
log_file="$run_dir/iceberg-rest-fixture-$port.log"
url="http://127.0.0.1:$port"

# the pid file's process is alive and is a RESTCatalogServer (not a reused pid)
running() { [[ -f $pid_file ]] && grep -qs RESTCatalogServer "/proc/$(cat "$pid_file")/cmdline"; }
answers() { curl -fsS -m 5 -o /dev/null "$url/v1/config" 2>/dev/null; }

case $cmd in
start)
  [[ $# -eq 3 ]] || usage
  if running && answers; then
    echo "iceberg-rest-fixture: already running on $url (pid $(cat "$pid_file"))"
    exit 0
  fi
  if answers; then
    echo "iceberg-rest-fixture: port $port is already taken by another server" >&2
    exit 1
  fi
  mkdir -p "$3" "$run_dir"
  warehouse="file://$(cd "$3" && pwd)"
  rck_dir=$("$(dirname "${BASH_SOURCE[0]}")/setup-rck.sh")
  java="${JAVA_HOME:+$JAVA_HOME/bin/}java"

  # RESTCatalogServer reads CATALOG_* env vars: CATALOG_REST_PORT -> rest.port,
  # CATALOG_WAREHOUSE -> warehouse (see RCKUtils.environmentCatalogConfig).
  CATALOG_REST_PORT="$port" CATALOG_WAREHOUSE="$warehouse" \
    nohup "$java" -Xmx1g -cp "$rck_dir/lib/*" org.apache.iceberg.rest.RESTCatalogServer \
    >"$log_file" 2>&1 </dev/null &
  echo $! >"$pid_file"

  for _ in $(seq 120); do
    if answers; then
      echo "iceberg-rest-fixture: $url warehouse $warehouse (pid $(cat "$pid_file"), log $log_file)"
      exit 0
    fi
    running || break
    sleep 0.5
  done
  echo "iceberg-rest-fixture: did not answer GET $url/v1/config within 60s; log:" >&2
  tail -n 50 "$log_file" >&2
  kill "$(cat "$pid_file")" 2>/dev/null || true
  rm -f "$pid_file"
  exit 1
  ;;
stop)
  if ! running; then
    echo "iceberg-rest-fixture: not running on port $port"
    rm -f "$pid_file"
    exit 0
  fi
  pid=$(cat "$pid_file")
  kill "$pid"
  for _ in $(seq 40); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.25
  done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$pid_file"
  echo "iceberg-rest-fixture: stopped (pid $pid)"
  ;;
status)
  if running && answers; then
    echo "iceberg-rest-fixture: running on $url (pid $(cat "$pid_file"))"
  else
    echo "iceberg-rest-fixture: not running on port $port"
    exit 1
  fi
  ;;
*) usage ;;
esac
