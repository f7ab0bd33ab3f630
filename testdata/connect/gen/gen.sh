#!/usr/bin/env bash
# gen.sh — regenerate the Kafka Connect fixtures of testdata/connect
# (see Fixtures.java for what each file holds) with the real converters:
# Kafka 4.4's connect-api and connect-json, Debezium 3.6.1's
# debezium-connector-common (its schema builders and value conversions)
# and Apicurio Registry 2.4.2's AvroData (with Avro 1.11.1).
#
# Usage:  testdata/connect/gen/gen.sh JAR_DIR...
#
# JAR_DIR are directories whose *.jar files make the classpath: a Kafka
# Connect installation's lib/ and its Debezium Postgres and Apicurio
# converter plugin directories, e.g. the ones the project's Kafka Connect
# test setup caches under $HOME/.cache/tarn/kafka-connect/<hash>/{lib,
# plugins/debezium-connector-postgres,plugins/apicurio-converter}.
# Needs a JDK (javac, java) 17 or later. Writes into testdata/connect.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ $# -eq 0 ]]; then
  echo "usage: $0 JAR_DIR..." >&2
  exit 2
fi
cp=""
for d in "$@"; do
  for j in "$d"/*.jar; do cp="$cp:$j"; done
done
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
javac -nowarn -d "$build" -cp "$cp" "$here/Fixtures.java"
java -cp "$build$cp" Fixtures "$here/.."
echo "gen.sh: wrote $(cd "$here/.." && ls)" >&2
