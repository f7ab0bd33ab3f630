#!/usr/bin/env bash
# Resolve Apache Iceberg's REST Compatibility Kit (RCK) and REST fixture server
# classpath from Maven Central into the cache (outside the repo):
#   $TARN_CACHE/rck/<iceberg version>/lib/*.jar     (TARN_CACHE defaults to $HOME/.cache/tarn)
#   $TARN_CACHE/m2/                                 (Maven local repository)
# The jar list comes from conformance/rck/pom.xml (iceberg-open-api :tests and
# :test-fixtures, iceberg-core/api :tests, Hadoop, Jetty, JUnit console launcher ...).
# Idempotent: a stamp holding the pom's checksum makes reruns a no-op.
# Prints the resolved directory as the last line of stdout, e.g.
#   rck_dir=$(scripts/setup-rck.sh) && java -cp "$rck_dir/lib/*" ...
# Env: ICEBERG_VERSION (default: iceberg.version in the pom), TARN_CACHE, JAVA_HOME.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pom="$repo/conformance/rck/pom.xml"
cache="${TARN_CACHE:-$HOME/.cache/tarn}"
version="${ICEBERG_VERSION:-$(sed -n 's:.*<iceberg.version>\(.*\)</iceberg.version>.*:\1:p' "$pom")}"
out="$cache/rck/$version"
stamp="$(sha256sum "$pom" | cut -c1-64) $version"

if [[ -f "$out/.stamp" && "$(cat "$out/.stamp")" == "$stamp" ]]; then
  echo "$out"
  exit 0
fi

command -v mvn >/dev/null || { echo "setup-rck: mvn not found (apt-get install maven)" >&2; exit 1; }

echo "setup-rck: resolving Iceberg $version RCK classpath into $out" >&2
start=$SECONDS
mkdir -p "$cache/rck"
tmp=$(mktemp -d "$cache/rck/.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Run from a copy of the pom so Maven never writes into the repo.
cp "$pom" "$tmp/pom.xml"
if ! (cd "$tmp" && mvn -B -q -Dmaven.repo.local="$cache/m2" -Diceberg.version="$version" \
  org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
  -DoutputDirectory="$tmp/lib" -DincludeScope=runtime) >"$tmp/mvn.log" 2>&1; then
  cat "$tmp/mvn.log" >&2
  echo "setup-rck: mvn failed (see above)" >&2
  exit 1
fi

rm -f "$tmp/pom.xml" "$tmp/mvn.log"
echo "$stamp" >"$tmp/.stamp"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "setup-rck: $(find "$out/lib" -name '*.jar' | wc -l) jars in $((SECONDS - start))s" >&2
echo "$out"
