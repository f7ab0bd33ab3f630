#!/usr/bin/env bash
# A real Kafka Connect worker for the change-data-capture end-to-end tests
# (issue 15): one distributed-mode worker of Kafka 4.3.1, from Maven Central
# jars, with the Debezium 3.6.1 PostgreSQL connector and Apicurio Registry's
# Avro converter on its plugin path, and Kafka's JsonConverter built in. It
# works against the 4.4 broker of scripts/kafka.sh; why not a 4.4 worker:
# scripts/kafka-connect/worker/pom.xml.
#
#   scripts/kafka-connect.sh start  [DIR]  # start, wait until /health says healthy
#   scripts/kafka-connect.sh stop   [DIR]  # SIGTERM, wait (SIGKILL after 30 s)
#   scripts/kafka-connect.sh status [DIR]  # exit 0 and print the variables if running
#   scripts/kafka-connect.sh setup         # only resolve the jars; prints the cache dir
#
# `start` needs the broker: KAFKA_BOOTSTRAP=host:port (as printed by
# scripts/kafka.sh start). It prints, on stdout, lines meant for eval:
#   CONNECT_URL=http://127.0.0.1:PORT      the REST API (POST /connectors ...)
#   CONNECT_DIR=/abs/dir   CONNECT_PID=1234   CONNECT_LOG=...
#   CONNECT_GROUP_ID=tarn-connect-<id>     the worker group; its internal topics
#   are _tarn-connect-<id>-{configs,offsets,status}
# e.g.  eval "$(scripts/kafka.sh start)"; export KAFKA_BOOTSTRAP
#       eval "$(scripts/kafka-connect.sh start)"
#       curl -X POST -H 'Content-Type: application/json' -d @connector.json "$CONNECT_URL/connectors"
# Progress and errors go to stderr.
#
# Why distributed mode: connectors are created, changed and deleted over the
# REST API (as Debezium's docs do it), and their configs, source offsets and
# status live in Kafka topics, so a worker restarted on the same DIR (also
# after a kill -9) resumes its connectors where their offsets say, like a
# production deployment. A standalone worker keeps offsets in a file and
# forgets connectors created over REST when it restarts.
#
# DIR (created if missing) holds worker.properties, log4j2.properties,
# connect.log, connect.pid, connect.port and connect.id (the random id in
# the group and topic names, drawn once: a later `start DIR` joins the same
# group and finds its connectors again, on the same port when still free).
# Without DIR, `start` makes a temporary directory, remembered in
# ${TARN_RUN_DIR:-${TMPDIR:-/tmp}}/tarn-kafka-connect.current for
# `stop`/`status` without DIR; `stop` deletes such a temporary directory.
#
# Worker settings: internal topics with replication 1 (one broker), offsets
# flushed every second (offset.flush.interval.ms=1000; Debezium confirms the
# replication slot's LSN to Postgres on each flush), and
# scheduled.rebalance.max.delay.ms=0 so a worker restarted after a kill -9
# gets its connectors back at once instead of after 5 minutes. The worker's
# default converters are JsonConverter with schemas.enable=true; connectors
# set their own (see internal/testconnect). Readiness: GET /health answers
# 200 (the worker joined its group and read its config topic) and
# GET /connector-plugins lists the Debezium PostgreSQL connector.
#
# Env:
#   KAFKA_BOOTSTRAP           the broker (required for start)
#   JAVA_HOME                 Java 17+ (default: java on PATH)
#   CONNECT_PORT              REST port (default: DIR's previous port, else a free one)
#   CONNECT_HEAP_OPTS         default "-Xmx512m -Xms128m"
#   CONNECT_JVM_OPTS          extra JVM options
#   CONNECT_OVERRIDES         extra worker properties, whitespace-separated k=v
#                             (appended to worker.properties, so they win)
#   CONNECT_START_TIMEOUT     seconds to wait for readiness (default 120)
#   TARN_CACHE                cache root (default $HOME/.cache/tarn)
#
# Jars: the poms under scripts/kafka-connect/ resolved by Maven (local
# repository $TARN_CACHE/m2, shared with scripts/kafka.sh and bench/) into
# $TARN_CACHE/kafka-connect/<sha>/lib (worker/pom.xml: the worker) and
# .../plugins/<name> (each other pom: one plugin directory; those poms
# exclude the org.apache.kafka and org.slf4j jars the worker provides,
# with everything they bring), plus a jar of the ServiceLoader manifests in
# scripts/kafka-connect/<name>/services for a plugin that ships none
# (Apicurio's converter). Idempotent: the
# directory is named by the poms' checksum. Nothing is written into the
# repository.
set -euo pipefail
shopt -s inherit_errexit

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
poms="$here/kafka-connect"
cache="${TARN_CACHE:-$HOME/.cache/tarn}"
run_dir="${TARN_RUN_DIR:-${TMPDIR:-/tmp}}"
current_file="$run_dir/tarn-kafka-connect.current"
java="${JAVA_HOME:+$JAVA_HOME/bin/}java"

log() { echo "kafka-connect: $*" >&2; }
die() { log "$*"; exit 1; }
usage() { echo "usage: $0 start|stop|status [DIR] | setup" >&2; exit 2; }

# --- jars -------------------------------------------------------------------

# copy_deps POM OUT [MAVEN_ARG...]: the runtime dependencies of POM into OUT.
copy_deps() {
  local pom=$1 out=$2 tmp
  shift 2
  tmp=$(mktemp -d "$cache/kafka-connect/.mvn.XXXXXX")
  cp "$pom" "$tmp/pom.xml" # run from a copy so Maven never writes into the repo
  if ! (cd "$tmp" && mvn -B -q -Dmaven.repo.local="$cache/m2" \
    org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
    -DoutputDirectory="$out" -DincludeScope=runtime "$@") >"$tmp/mvn.log" 2>&1; then
    cat "$tmp/mvn.log" >&2
    rm -rf "$tmp"
    die "mvn failed for $pom (see above)"
  fi
  rm -rf "$tmp"
}

# service_manifests DIR JAR: a jar holding DIR's files as
# META-INF/services/*, the ServiceLoader manifests that let the worker find
# a plugin's classes with plugin.discovery=service_load (KIP-898) instead of
# scanning every class of every jar (a minute on a busy 2-core machine).
service_manifests() {
  local src=$1 jar=$2 tmp
  tmp=$(mktemp -d "$cache/kafka-connect/.svc.XXXXXX")
  mkdir -p "$tmp/META-INF/services"
  cp "$src"/* "$tmp/META-INF/services/"
  (cd "$tmp" && python3 -m zipfile -c "$jar" META-INF)
  rm -rf "$tmp"
}

setup() {
  local sum out tmp start p name
  sum=$(cat "$poms"/*/pom.xml "$poms"/*/services/* | sha256sum | cut -c1-16)
  out="$cache/kafka-connect/$sum"
  if [[ -f $out/.done ]]; then
    echo "$out"
    return
  fi
  need mvn "apt-get install maven"
  mkdir -p "$cache/kafka-connect"
  # Serialise concurrent first runs (e.g. parallel test packages).
  exec 9>"$cache/kafka-connect/.lock"
  flock 9
  if [[ -f $out/.done ]]; then
    exec 9>&-
    echo "$out"
    return
  fi
  log "resolving the Kafka Connect worker and plugins into $out (Maven, repository $cache/m2)"
  start=$SECONDS
  tmp=$(mktemp -d "$cache/kafka-connect/.tmp.XXXXXX")
  copy_deps "$poms/worker/pom.xml" "$tmp/lib"
  for p in "$poms"/*/pom.xml; do
    name=$(basename "$(dirname "$p")")
    [[ $name != worker ]] || continue
    copy_deps "$p" "$tmp/plugins/$name"
    if [[ -d $poms/$name/services ]]; then
      service_manifests "$poms/$name/services" "$tmp/plugins/$name/tarn-service-manifests.jar"
    fi
  done
  touch "$tmp/.done"
  rm -rf "$out"
  mv "$tmp" "$out"
  exec 9>&-
  log "$(find "$out" -name '*.jar' | wc -l) jars in $((SECONDS - start))s"
  echo "$out"
}

# --- helpers ----------------------------------------------------------------

# shellcheck source=lib/service.sh
. "$here/lib/service.sh"

# The process in DIR/connect.pid is alive and is this DIR's worker.
running() {
  local pid
  [[ -f $dir/connect.pid ]] || return 1
  pid=$(cat "$dir/connect.pid")
  [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$dir/worker.properties"
}

port_of() { cat "$dir/connect.port"; }
url() { echo "http://127.0.0.1:$(port_of)"; }

# The worker of $dir is healthy and has loaded the Debezium connector (service.sh).
ready() {
  curl -fsS -m 5 -o /dev/null "$(url)/health" 2>/dev/null &&
    curl -fsS -m 5 "$(url)/connector-plugins" 2>/dev/null | grep -qF io.debezium.connector.postgresql.PostgresConnector
}

print_vars() {
  echo "CONNECT_URL=$(url)"
  echo "CONNECT_DIR=$dir"
  echo "CONNECT_PID=$(cat "$dir/connect.pid")"
  echo "CONNECT_LOG=$dir/connect.log"
  echo "CONNECT_GROUP_ID=tarn-connect-$(cat "$dir/connect.id")"
}

write_config() {
  local port=$1 id=$2 plugins=$3 kv
  cat >"$dir/worker.properties" <<EOF
# written by scripts/kafka-connect.sh; rewritten on every start
bootstrap.servers=$KAFKA_BOOTSTRAP
group.id=tarn-connect-$id
config.storage.topic=_tarn-connect-$id-configs
offset.storage.topic=_tarn-connect-$id-offsets
status.storage.topic=_tarn-connect-$id-status
config.storage.replication.factor=1
offset.storage.replication.factor=1
status.storage.replication.factor=1
offset.storage.partitions=1
status.storage.partitions=1
offset.flush.interval.ms=1000
scheduled.rebalance.max.delay.ms=0
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=true
value.converter.schemas.enable=true
listeners=http://127.0.0.1:$port
rest.advertised.host.name=127.0.0.1
rest.advertised.port=$port
plugin.path=$plugins
# every plugin has ServiceLoader manifests (scripts/kafka-connect/*/services
# adds the missing ones), so no class scanning at startup
plugin.discovery=service_load
EOF
  if [[ -n ${CONNECT_OVERRIDES:-} ]]; then
    for kv in $CONNECT_OVERRIDES; do echo "$kv" >>"$dir/worker.properties"; done
  fi
}

write_log4j() {
  cat >"$dir/log4j2.properties" <<'EOF'
# written by scripts/kafka-connect.sh
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = ${sys:tarn.connect.log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %X{connector.context}%m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.reflections.name = org.reflections
logger.reflections.level = ERROR
logger.kafkaclients.name = org.apache.kafka.clients
logger.kafkaclients.level = WARN
EOF
}

# --- commands ---------------------------------------------------------------

cmd_start() {
  local out port pid t0 id heap extra
  t0=$(date +%s%3N)
  start_dir kafka-connect "${1:-}"
  if running; then
    ready || die "a worker is running in $dir (pid $(cat "$dir/connect.pid")) but is not ready; stop it first"
    log "already running in $dir (pid $(cat "$dir/connect.pid"))"
    print_vars
    return
  fi
  [[ -n ${KAFKA_BOOTSTRAP:-} ]] || die "KAFKA_BOOTSTRAP is not set (the broker, e.g. from scripts/kafka.sh start)"
  out=$(setup)
  need "$java" "set JAVA_HOME; Kafka Connect 4 needs Java 17+"
  need curl "apt-get install curl"

  port=$(pick_port CONNECT_PORT "$dir/connect.port")
  [[ -s $dir/connect.id ]] || head -c6 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/connect.id"
  id=$(cat "$dir/connect.id")
  write_config "$port" "$id" "$out/plugins"
  write_log4j

  read -r -a heap <<<"${CONNECT_HEAP_OPTS:--Xmx512m -Xms128m}"
  read -r -a extra <<<"${CONNECT_JVM_OPTS:-}"
  # keep the previous run's log (e.g. of a worker that was killed)
  if [[ -s $dir/connect.log ]]; then mv "$dir/connect.log" "$dir/connect.log.1"; fi
  : >"$dir/connect.log"
  # setsid: its own session, so a Ctrl-C in the caller's terminal or the end
  # of a CI step's process group does not take it down half-way.
  setsid nohup "$java" "${heap[@]}" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
    -Djava.awt.headless=true -Dlog4j2.configurationFile="$dir/log4j2.properties" \
    -Dtarn.connect.log="$dir/connect.log" "${extra[@]}" \
    -cp "$out/lib/*" org.apache.kafka.connect.cli.ConnectDistributed "$dir/worker.properties" \
    >"$dir/connect.out" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$dir/connect.pid"
  watch_owner "$here/kafka-connect.sh"
  mkdir -p "$run_dir"
  echo "$dir" >"$current_file"

  await_ready worker "$pid" "${CONNECT_START_TIMEOUT:-120}" "$dir/connect.out" "$dir/connect.log"
  log "ready on $(url) in $(elapsed "$t0")s (pid $pid, dir $dir)"
  print_vars
}

pid_file=connect.pid
service_main "$@"
