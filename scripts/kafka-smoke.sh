#!/usr/bin/env bash
# Smoke test of the end-to-end test services: starts a real Kafka broker
# (scripts/kafka.sh) and a real Confluent-compatible schema registry
# (scripts/schema-registry.sh, Apicurio), then runs scripts/kafka-smoke (Go,
# franz-go): a 6-partition topic, an Avro schema under "<topic>-value",
# records in the Confluent wire format in three transactions (commit, abort,
# commit), and a read_committed consumer that must see exactly the committed
# records. Stops what it started, also on failure.
#
#   scripts/kafka-smoke.sh            # exit 0 and a last line "kafka-smoke: OK ..."
#
# If KAFKA_BOOTSTRAP / SCHEMA_REGISTRY_URL are already set, that broker /
# registry is used and not started. SCHEMA_REGISTRY_URL=fake uses franz-go's
# in-process srfake. Needs Java 17+, Maven, Go, python3 (free ports).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
t0=$SECONDS
started_kafka="" started_registry="" bin=""

cleanup() {
  local rc=$?
  if [[ -n $started_registry ]]; then scripts/schema-registry.sh stop "$started_registry" || true; fi
  if [[ -n $started_kafka ]]; then scripts/kafka.sh stop "$started_kafka" || true; fi
  if [[ -n ${bin:-} ]]; then
    if ((rc == 0)); then rm -rf "$bin"; else echo "kafka-smoke.sh: FAILED; logs kept in $bin" >&2; fi
  fi
  exit "$rc"
}
trap cleanup EXIT

# Build first, so compile errors show before the services start.
bin=$(mktemp -d "${TMPDIR:-/tmp}/tarn-kafka-smoke.XXXXXX")
go build -o "$bin/kafka-smoke" ./scripts/kafka-smoke

if [[ -z ${KAFKA_BOOTSTRAP:-} ]]; then
  kdir="$bin/kafka"
  started_kafka=$kdir
  vars=$(scripts/kafka.sh start "$kdir")
  eval "$vars"
  ps -o rss= -p "$KAFKA_PID" | awk '{printf "kafka-smoke.sh: broker RSS after start %.0f MiB\n", $1/1024}'
fi
if [[ -z ${SCHEMA_REGISTRY_URL:-} ]]; then
  rdir="$bin/registry"
  started_registry=$rdir
  vars=$(scripts/schema-registry.sh start "$rdir")
  eval "$vars"
  ps -o rss= -p "$SCHEMA_REGISTRY_PID" | awk '{printf "kafka-smoke.sh: registry RSS after start %.0f MiB\n", $1/1024}'
fi

"$bin/kafka-smoke" -bootstrap "$KAFKA_BOOTSTRAP" -registry "$SCHEMA_REGISTRY_URL"

if [[ -n $started_kafka ]]; then
  ps -o rss= -p "$KAFKA_PID" | awk '{printf "kafka-smoke.sh: broker RSS after the test %.0f MiB\n", $1/1024}'
fi
if [[ -n $started_registry ]]; then
  ps -o rss= -p "$SCHEMA_REGISTRY_PID" | awk '{printf "kafka-smoke.sh: registry RSS after the test %.0f MiB\n", $1/1024}'
fi
echo "kafka-smoke.sh: done in $((SECONDS - t0))s"
