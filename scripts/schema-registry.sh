#!/usr/bin/env bash
# A real Confluent-compatible Schema Registry for end-to-end tests: Apicurio
# Registry 2.4.2.Final (Apache 2.0), built from Maven Central jars (see
# scripts/schema-registry/pom.xml for how and why that version), serving the
# Confluent API at /apis/ccompat/v7. No Kafka needed: it stores schemas in an
# H2 database file under DIR.
#
#   scripts/schema-registry.sh start  [DIR]  # start, wait until GET /subjects answers
#   scripts/schema-registry.sh stop   [DIR]  # SIGTERM, wait (SIGKILL after 30 s)
#   scripts/schema-registry.sh status [DIR]  # exit 0 and print the variables if running
#   scripts/schema-registry.sh setup         # only build; prints the quarkus-app dir
#
# `start` prints, on stdout, lines meant for eval:
#   SCHEMA_REGISTRY_URL=http://127.0.0.1:PORT/apis/ccompat/v7
#   SCHEMA_REGISTRY_DIR=/abs/dir   SCHEMA_REGISTRY_PID=1234   SCHEMA_REGISTRY_LOG=...
# SCHEMA_REGISTRY_URL is the Confluent API root: give it as is to franz-go's
# sr.URLs, confluent-kafka's SchemaRegistryClient, or curl ($URL/subjects).
# Progress and errors go to stderr.
#
# DIR (created if missing) holds the H2 database (h2/), registry.log and
# registry.pid; a later `start DIR` finds the same schemas and ids again, on
# the same port when it is still free. Without DIR, `start` makes a temporary
# directory, remembered in ${TARN_RUN_DIR:-${TMPDIR:-/tmp}}/tarn-schema-registry.current
# for `stop`/`status` without DIR; `stop` deletes such a temporary directory.
#
# How it differs from Confluent's registry, as seen by a client:
#   - default compatibility is NONE (Confluent: BACKWARD); set it per subject
#     or globally with PUT /config if a test needs checks;
#   - schema ids are Apicurio content ids: the same schema text registered
#     under two subjects gets one id (as in Confluent); ids start at 1;
#   - GET /schemas/ids/{id}/subjects is missing (use .../ids/{id}/versions);
#   - some error codes differ (incompatible: 409 with error_code 0).
# More in docs/e2e-services.md. The H2 file is written with WRITE_DELAY=0, so
# registered schemas survive a kill -9 of the registry. One database
# connection (quarkus.datasource.jdbc.max-size=1), so requests reach H2 one
# at a time: with Apicurio's pool, clients registering schemas at once (two
# Kafka Connect converters) fail with HTTP 500 "Timeout trying to lock
# table" / "Concurrent update in table SEQUENCES" (its id sequences under
# H2's row locks), and most such requests fail, not just one.
#
# Env:
#   JAVA_HOME                   Java 11+ (default: java on PATH)
#   SCHEMA_REGISTRY_PORT        port to use (default: a free one)
#   SCHEMA_REGISTRY_HEAP_OPTS   default "-Xmx256m -Xms64m"
#   SCHEMA_REGISTRY_JVM_OPTS    extra JVM options (e.g. -Dquarkus.log.level=DEBUG)
#   SCHEMA_REGISTRY_START_TIMEOUT  seconds (default 120)
#   TARN_CACHE                  cache root (default $HOME/.cache/tarn)
set -euo pipefail
shopt -s inherit_errexit

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pom="$here/schema-registry/pom.xml"
cache="${TARN_CACHE:-$HOME/.cache/tarn}"
run_dir="${TARN_RUN_DIR:-${TMPDIR:-/tmp}}"
current_file="$run_dir/tarn-schema-registry.current"
java="${JAVA_HOME:+$JAVA_HOME/bin/}java"
api=/apis/ccompat/v7

log() { echo "schema-registry: $*" >&2; }
die() { log "$*"; exit 1; }
usage() { echo "usage: $0 start|stop|status [DIR] | setup" >&2; exit 2; }

# --- build ------------------------------------------------------------------

setup() {
  local version out stamp tmp start
  version=$(sed -n 's:.*<apicurio.version>\(.*\)</apicurio.version>.*:\1:p' "$pom")
  out="$cache/apicurio-registry/$version"
  stamp="$(sha256sum "$pom" | cut -c1-64) $version"
  if [[ -f "$out/.stamp" && "$(cat "$out/.stamp")" == "$stamp" ]]; then
    echo "$out/quarkus-app"
    return
  fi
  need mvn "apt-get install maven"
  mkdir -p "$cache/apicurio-registry"
  exec 9>"$cache/apicurio-registry/.lock"
  flock 9
  if [[ -f "$out/.stamp" && "$(cat "$out/.stamp")" == "$stamp" ]]; then
    exec 9>&-
    echo "$out/quarkus-app"
    return
  fi
  log "building Apicurio Registry $version into $out (Maven, repository $cache/m2)"
  start=$SECONDS
  tmp=$(mktemp -d "$cache/apicurio-registry/.tmp.XXXXXX")
  mkdir -p "$tmp/build"
  cp "$pom" "$tmp/build/pom.xml" # build from a copy so Maven never writes into the repo
  if ! (cd "$tmp/build" && mvn -B -Dmaven.repo.local="$cache/m2" \
    -Dquarkus.package.type=fast-jar package) >"$tmp/mvn.log" 2>&1; then
    grep -E '^\[(ERROR|WARNING)\]' "$tmp/mvn.log" | head -n 40 >&2 || true
    log "full Maven log: $tmp/mvn.log"
    die "mvn failed"
  fi
  [[ -f $tmp/build/target/quarkus-app/quarkus-run.jar ]] || die "no quarkus-app in the build (Maven log: $tmp/mvn.log)"
  mv "$tmp/build/target/quarkus-app" "$tmp/quarkus-app"
  rm -rf "$tmp/build" "$tmp/mvn.log"
  echo "$stamp" >"$tmp/.stamp"
  rm -rf "$out"
  mv "$tmp" "$out"
  exec 9>&-
  log "built in $((SECONDS - start))s"
  echo "$out/quarkus-app"
}

# --- helpers ----------------------------------------------------------------

# shellcheck source=lib/service.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/service.sh"


# The pid file's process is alive and is this DIR's registry (not a reused pid).
running() {
  local pid
  [[ -f $dir/registry.pid ]] || return 1
  pid=$(cat "$dir/registry.pid")
  [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "jdbc:h2:file:$dir/h2/"
}
answers() { curl -fsS -m 5 -o /dev/null "http://127.0.0.1:$1$api/subjects" 2>/dev/null; }
port_of() { cat "$dir/registry.port"; }
# The registry of $dir answers GET subjects (service.sh).
ready() { answers "$(port_of)"; }

print_vars() {
  echo "SCHEMA_REGISTRY_URL=http://127.0.0.1:$(port_of)$api"
  echo "SCHEMA_REGISTRY_DIR=$dir"
  echo "SCHEMA_REGISTRY_PID=$(cat "$dir/registry.pid")"
  echo "SCHEMA_REGISTRY_LOG=$dir/registry.log"
}


# --- commands ---------------------------------------------------------------

cmd_start() {
  local app port pid t0 deadline heap extra
  t0=$(date +%s%3N)
  start_dir schema-registry "${1:-}"
  if running; then
    answers "$(port_of)" || die "a registry is running in $dir (pid $(cat "$dir/registry.pid")) but does not answer; stop it first"
    log "already running in $dir (pid $(cat "$dir/registry.pid"))"
    print_vars
    return
  fi
  app=$(setup)
  need "$java" "set JAVA_HOME; Java 17+"
  need curl "apt-get install curl"

  port=$(pick_port SCHEMA_REGISTRY_PORT "$dir/registry.port")
  mkdir -p "$dir/h2"

  # -Dquarkus.*: Quarkus runtime config (host, port, datasource) overrides
  # the app's application.properties.
  read -r -a heap <<<"${SCHEMA_REGISTRY_HEAP_OPTS:--Xmx256m -Xms64m}"
  read -r -a extra <<<"${SCHEMA_REGISTRY_JVM_OPTS:-}"
  setsid nohup "$java" "${heap[@]}" -XX:+UseSerialGC \
    -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$port" \
    -Dquarkus.datasource.jdbc.url="jdbc:h2:file:$dir/h2/registry;WRITE_DELAY=0" \
    -Dquarkus.datasource.jdbc.min-size=1 -Dquarkus.datasource.jdbc.initial-size=1 \
    -Dquarkus.datasource.jdbc.max-size=1 \
    -Dquarkus.log.category.\"io.sentry\".level=ERROR \
    "${extra[@]}" \
    -jar "$app/quarkus-run.jar" >"$dir/registry.log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$dir/registry.pid"
  watch_owner "$here/schema-registry.sh"
  mkdir -p "$run_dir"
  echo "$dir" >"$current_file"

  await_ready registry "$pid" "${SCHEMA_REGISTRY_START_TIMEOUT:-120}" "$dir/registry.log"
  log "ready on http://127.0.0.1:$port$api in $(elapsed "$t0")s (pid $pid, dir $dir)"
  print_vars
}

pid_file=registry.pid
service_main "$@"
