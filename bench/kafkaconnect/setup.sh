#!/usr/bin/env bash
# bench/kafkaconnect/setup.sh — resolve the Kafka Connect side of
# bench/ingest and print its lib directory: Kafka Connect standalone
# (connect-runtime 4.4.0, the Kafka release of scripts/kafka.sh) and Apache
# Iceberg's Kafka Connect sink 1.11.0 with its dependencies, from Maven
# Central (bench/kafkaconnect/pom.xml; local repository
# $TARN_CACHE/m2), plus WireAvroConverter (src/, compiled with javac) in
# tarn-bench-converter.jar. Cached in $TARN_CACHE/kafkaconnect/<sha>/lib
# (TARN_CACHE defaults to $HOME/.cache/tarn); reruns are a no-op.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache="${TARN_CACHE:-$HOME/.cache/tarn}"
sum=$(cat "$here/pom.xml" "$here"/src/tarn/bench/*.java | sha256sum | cut -c1-16)
out="$cache/kafkaconnect/$sum"
if [[ -f $out/.done ]]; then
  echo "$out/lib"
  exit 0
fi
command -v mvn >/dev/null || { echo "kafkaconnect: mvn not found" >&2; exit 1; }
command -v javac >/dev/null || { echo "kafkaconnect: javac not found (a JDK 17+)" >&2; exit 1; }
echo "kafkaconnect: resolving jars into $out (Maven Central)" >&2
rm -rf "$out"
mkdir -p "$out/build"
cp "$here/pom.xml" "$out/build/pom.xml"
if ! (cd "$out/build" && mvn -B -q -Dmaven.repo.local="$cache/m2" \
  org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
  -DoutputDirectory="$out/lib" -DincludeScope=runtime) >"$out/mvn.log" 2>&1; then
  cat "$out/mvn.log" >&2
  exit 1
fi
javac -nowarn -d "$out/build/classes" -cp "$out/lib/*" "$here"/src/tarn/bench/*.java
jar cf "$out/lib/tarn-bench-converter.jar" -C "$out/build/classes" .
touch "$out/.done"
echo "$out/lib"
