#!/usr/bin/env bash
# A real single-node Apache Kafka broker for end-to-end tests: KRaft mode, one
# JVM that is both broker and controller, from Maven Central jars (no Docker,
# no tarball). Transactions work (all internal topics have replication 1).
#
#   scripts/kafka.sh start  [DIR]   # format DIR if new, start, wait until it answers
#   scripts/kafka.sh stop   [DIR]   # SIGTERM, wait (SIGKILL after 30 s)
#   scripts/kafka.sh status [DIR]   # exit 0 and print the variables if running
#   scripts/kafka.sh setup          # only resolve the jars; prints the lib dir
#
# `start` prints, on stdout, lines meant for eval:
#   KAFKA_BOOTSTRAP=127.0.0.1:PORT
#   KAFKA_DIR=/abs/dir   KAFKA_PID=1234   KAFKA_CLUSTER_ID=...   KAFKA_LOG=...
# e.g.  eval "$(scripts/kafka.sh start)"; ...; scripts/kafka.sh stop "$KAFKA_DIR"
# Progress and errors go to stderr.
#
# DIR (created if missing) holds everything of this broker: server.properties,
# data/ (the log dirs and the KRaft metadata log), kafka.log, kafka.pid. It is
# formatted (kafka.tools.StorageTool format, random cluster id) only once: a
# later `start DIR` restarts the same broker with its topics and offsets, and
# on the same ports when they are still free. Without DIR, `start` makes a
# temporary directory, remembered in ${TARN_RUN_DIR:-${TMPDIR:-/tmp}}/tarn-kafka.current
# so that `stop`/`status` without DIR find it; `stop` deletes such a temporary
# directory (not a DIR you named). Several brokers can run at once in
# different DIRs.
#
# Listeners: PLAINTEXT on 127.0.0.1:<free port> (the bootstrap), CONTROLLER on
# 127.0.0.1:<another free port>. Set KAFKA_PORT to choose the client port.
# Readiness: the broker answers an ApiVersions request on the client port
# (sent from bash, no JVM), and the log says the server started.
#
# Env:
#   JAVA_HOME            Java 17+ (default: java on PATH)
#   KAFKA_HEAP_OPTS      default "-Xmx512m -Xms128m"
#   KAFKA_JVM_OPTS       extra JVM options
#   KAFKA_OVERRIDES      extra broker properties, whitespace-separated k=v
#                        (passed as `--override k=v`, on top of server.properties)
#   KAFKA_START_TIMEOUT  seconds to wait for readiness (default 120)
#   TARN_CACHE           cache root (default $HOME/.cache/tarn)
#
# Jars: scripts/kafka/pom.xml (kafka_2.13 + Log4j 2) resolved by Maven into
# $TARN_CACHE/kafka/<version>/lib, local repository $TARN_CACHE/m2. Idempotent:
# a stamp holding the pom's checksum makes reruns a no-op. Nothing is written
# into the repository.
set -euo pipefail
shopt -s inherit_errexit

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pom="$here/kafka/pom.xml"
cache="${TARN_CACHE:-$HOME/.cache/tarn}"
run_dir="${TARN_RUN_DIR:-${TMPDIR:-/tmp}}"
current_file="$run_dir/tarn-kafka.current"
java="${JAVA_HOME:+$JAVA_HOME/bin/}java"

log() { echo "kafka: $*" >&2; }
die() { log "$*"; exit 1; }
usage() { echo "usage: $0 start|stop|status [DIR] | setup" >&2; exit 2; }

# --- jars -------------------------------------------------------------------

setup() {
  local version out stamp tmp start
  version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom")
  out="$cache/kafka/$version"
  stamp="$(sha256sum "$pom" | cut -c1-64) $version"
  if [[ -f "$out/.stamp" && "$(cat "$out/.stamp")" == "$stamp" ]]; then
    echo "$out/lib"
    return
  fi
  need mvn "apt-get install maven"
  mkdir -p "$cache/kafka"
  # Serialise concurrent first runs (e.g. parallel test packages).
  exec 9>"$cache/kafka/.lock"
  flock 9
  if [[ -f "$out/.stamp" && "$(cat "$out/.stamp")" == "$stamp" ]]; then
    exec 9>&-
    echo "$out/lib"
    return
  fi
  log "resolving Kafka $version jars into $out (Maven, repository $cache/m2)"
  start=$SECONDS
  tmp=$(mktemp -d "$cache/kafka/.tmp.XXXXXX")
  cp "$pom" "$tmp/pom.xml" # run from a copy so Maven never writes into the repo
  if ! (cd "$tmp" && mvn -B -q -Dmaven.repo.local="$cache/m2" \
    org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
    -DoutputDirectory="$tmp/lib" -DincludeScope=runtime) >"$tmp/mvn.log" 2>&1; then
    cat "$tmp/mvn.log" >&2
    rm -rf "$tmp"
    die "mvn failed (see above)"
  fi
  rm -f "$tmp/pom.xml" "$tmp/mvn.log"
  echo "$stamp" >"$tmp/.stamp"
  rm -rf "$out"
  mv "$tmp" "$out"
  exec 9>&-
  log "$(find "$out/lib" -name '*.jar' | wc -l) jars in $((SECONDS - start))s"
  echo "$out/lib"
}

# --- helpers ----------------------------------------------------------------

# shellcheck source=lib/service.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/service.sh"


# The process in DIR/kafka.pid is alive and is this DIR's broker (not a reused pid).
running() {
  local pid
  [[ -f $dir/kafka.pid ]] || return 1
  pid=$(cat "$dir/kafka.pid")
  [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$dir/server.properties"
}


prop() { sed -n "s/^$1=//p" "$dir/server.properties" | tail -n1; }

# The broker of $dir has started and answers ApiVersions (service.sh).
ready() { grep -q 'Kafka Server started' "$dir/kafka.log" 2>/dev/null && api_versions_ok "$(prop tarn.client.port)"; }

# Send ApiVersions v0 (correlation id 7, client id "tarn") and expect a
# response with the same correlation id and error code 0.
api_versions_ok() {
  local port=$1 resp
  resp=$(timeout 3 bash -c '
    exec 3<>/dev/tcp/127.0.0.1/'"$port"' || exit 1
    printf "\x00\x00\x00\x0e\x00\x12\x00\x00\x00\x00\x00\x07\x00\x04tarn" >&3
    head -c 10 <&3 | od -An -tx1 | tr -d " \n"' 2>/dev/null) || return 1
  # 4-byte size, correlation id 00000007, error code 0000
  [[ ${resp:8:12} == 000000070000 ]]
}

print_vars() {
  echo "KAFKA_BOOTSTRAP=127.0.0.1:$(prop tarn.client.port)"
  echo "KAFKA_DIR=$dir"
  echo "KAFKA_PID=$(cat "$dir/kafka.pid")"
  echo "KAFKA_CLUSTER_ID=$(sed -n 's/^cluster.id=//p' "$dir/data/meta.properties")"
  echo "KAFKA_LOG=$dir/kafka.log"
}


write_config() {
  local port=$1 cport=$2
  cat >"$dir/server.properties" <<EOF
# written by scripts/kafka.sh; rewritten on every start
tarn.client.port=$port
tarn.controller.port=$cport
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
# single node: every internal topic with replication 1, so transactions and
# consumer groups work
offsets.topic.replication.factor=1
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=8
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
# after a kill -9 the restarted broker cannot register until the controller
# drops the old incarnation's session (default 9 s)
broker.heartbeat.interval.ms=500
broker.session.timeout.ms=2000
auto.create.topics.enable=true
delete.topic.enable=true
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
log.retention.hours=168
EOF
}

write_log4j() {
  cat >"$dir/log4j2.properties" <<'EOF'
# written by scripts/kafka.sh
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = ${sys:tarn.kafka.log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.controller.name = org.apache.kafka.controller
logger.controller.level = INFO
logger.state.name = state.change.logger
logger.state.level = WARN
logger.raft.name = org.apache.kafka.raft
logger.raft.level = INFO
EOF
}

# --- commands ---------------------------------------------------------------

cmd_start() {
  local lib port cport pid t0 overrides=() cid heap extra jvm_opts deadline
  t0=$(date +%s%3N)
  start_dir kafka "${1:-}"
  if running; then
    if api_versions_ok "$(prop tarn.client.port)"; then
      log "already running in $dir (pid $(cat "$dir/kafka.pid"))"
      print_vars
      return
    fi
    die "a broker is running in $dir (pid $(cat "$dir/kafka.pid")) but does not answer; stop it first"
  fi
  lib=$(setup)
  need "$java" "set JAVA_HOME; Kafka 4 needs Java 17+"

  # Ports: keep the previous ones across restarts if they are still free.
  port="${KAFKA_PORT:-}" cport=""
  if [[ -f $dir/server.properties ]]; then
    [[ -n $port ]] || port=$(prop tarn.client.port)
    cport=$(prop tarn.controller.port)
  fi
  if [[ -z $port ]] || ! port_free "$port"; then
    [[ -z ${KAFKA_PORT:-} ]] || die "KAFKA_PORT=$KAFKA_PORT is in use"
    port=$(free_port)
  fi
  if [[ -z $cport ]] || ! port_free "$cport" || [[ $cport == "$port" ]]; then
    cport=$(free_port)
    while [[ $cport == "$port" ]]; do cport=$(free_port); done
  fi
  write_config "$port" "$cport"
  write_log4j

  read -r -a heap <<<"${KAFKA_HEAP_OPTS:--Xmx512m -Xms128m}"
  read -r -a extra <<<"${KAFKA_JVM_OPTS:-}"
  jvm_opts=("${heap[@]}" -XX:+UseG1GC -XX:MaxGCPauseMillis=20
    -Djava.awt.headless=true -Dlog4j2.configurationFile="$dir/log4j2.properties"
    -Dtarn.kafka.log="$dir/kafka.log" "${extra[@]}")

  if [[ ! -f $dir/data/meta.properties ]]; then
    # A random cluster id: 16 random bytes, URL-safe base64 without padding,
    # not starting with '-' (the CLI would take it for an option; Kafka's own
    # Uuid.randomUuid, behind `kafka-storage random-uuid`, rejects those too).
    cid=-
    while [[ $cid == -* ]]; do
      cid=$(head -c16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')
    done
    log "formatting $dir/data (cluster id $cid)"
    if ! "$java" -Xmx256m -XX:TieredStopAtLevel=1 -Dlog4j2.configurationFile="$dir/log4j2.properties" \
      -Dtarn.kafka.log="$dir/format.log" -cp "$lib/*" kafka.tools.StorageTool \
      format -t "$cid" -c "$dir/server.properties" >"$dir/format.out" 2>&1; then
      cat "$dir/format.out" >&2
      die "storage format failed"
    fi
  fi

  if [[ -n ${KAFKA_OVERRIDES:-} ]]; then
    for kv in $KAFKA_OVERRIDES; do overrides+=(--override "$kv"); done
  fi
  # keep the previous run's log (e.g. of a broker that was killed) as kafka.log.1
  if [[ -s $dir/kafka.log ]]; then mv "$dir/kafka.log" "$dir/kafka.log.1"; fi
  : >"$dir/kafka.log"
  # setsid: its own session, so a Ctrl-C in the caller's terminal or the end
  # of a CI step's process group does not take it down half-way.
  setsid nohup "$java" "${jvm_opts[@]}" -cp "$lib/*" kafka.Kafka "$dir/server.properties" \
    "${overrides[@]}" >"$dir/kafka.out" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$dir/kafka.pid"
  watch_owner "$here/kafka.sh"
  mkdir -p "$run_dir"
  echo "$dir" >"$current_file"

  await_ready broker "$pid" "${KAFKA_START_TIMEOUT:-120}" "$dir/kafka.out" "$dir/kafka.log"
  log "ready on 127.0.0.1:$port in $(elapsed "$t0")s (pid $pid, dir $dir)"
  print_vars
}

pid_file=kafka.pid
service_main "$@"
