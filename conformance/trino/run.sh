#!/usr/bin/env bash
# Hold a running Tarn against Trino's Iceberg connector (REST catalog):
# installs Trino server 483 from Maven Central into a cache, starts a
# single-node Trino (one coordinator that schedules work on itself) with an
# `iceberg` catalog pointed at Tarn, runs conformance/trino/test_trino.py
# through Trino's HTTP client protocol (the `trino` Python client), stops Trino.
#
#   TARN_URI=http://127.0.0.1:8181 TARN_WAREHOUSE=file:///path/to/warehouse conformance/trino/run.sh
#
# Env in:  TARN_URI        the catalog's base URI (required)
#          TARN_WAREHOUSE  file:// URI of the server's warehouse (Trino reads and
#                          writes the data files there through its local file system)
#          TARN_TOPIC_TABLE  a table Tarn materializes from a topic (`tarn demo`;
#                          conformance/run sets it because of conformance/trino/server)
#          TARN_TRINO_JAVA_HOME  JDK for Trino (default /usr/lib/jvm/temurin-25-jdk-amd64;
#                          Trino 483 is built for Java 25)
#          TARN_TRINO_HEAP  Trino's -Xmx (default 2G)
#          TARN_TRINO_START_TIMEOUT  seconds to wait for Trino to start (default 240)
#          TARN_TRINO_TIMEOUT  seconds for the whole pytest run (default 600)
#          TARN_CACHE      cache root (default $HOME/.cache/tarn)
#          PYTEST_ADDOPTS  extra pytest options (e.g. "-k views -x")
# Out:     conformance/results/trino.json  (see conformance/junit_report.py)
#          Trino's config, data dir and log (trino/server.log) and the JUnit XML
#          in $TARN_RUN_DIR (default a temp dir), paths printed on stderr
#          last stdout line: `trino: N passed, M failed, K skipped`
# Exit:    non-zero when a test failed, Trino did not start, or pytest itself did
#          not complete. When Trino cannot run on this machine at all (no Java 25
#          JDK, Maven refuses the artifacts) the suite is reported as one skipped
#          test whose reason names the blocker, and exits 0; under CI=true that
#          is a failure (exit 1) instead: CI must not pass without Trino.
#
# Installing Trino: the server tarball (io.trino:trino-server:<v>:tar.gz) and
# trino-server-main (the jar with the launcher's main class) are not served by
# the Maven registry this machine reaches (404), while trino-main and the
# plugins' jars and poms are. So this script assembles the tarball's layout in
# "$TARN_CACHE/trino/<v>" with Maven (local repository "$TARN_CACHE/m2"):
#   lib/             trino-main and its runtime dependencies (pom-server.xml)
#   plugin/iceberg/  trino-iceberg and its runtime dependencies minus what the
#                    server provides (pom-iceberg.xml), plus a one-file jar with
#                    META-INF/services/io.trino.spi.Plugin, which trino-maven-plugin
#                    writes only into the plugin archive (not into the jar)
#   classes/         TarnTrinoServer, the main class (what TrinoServer does)
# A stamp holding the checksum of those three files and the version makes a
# warm run skip Maven entirely. First run: about 480 MB from Maven Central.
# The venv: "$TARN_CACHE/venv-trino" from conformance/trino/requirements.txt
# via scripts/setup-python.sh (pip's cache "$TARN_CACHE/pip").
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
results="$repo/conformance/results"
cache="${TARN_CACHE:-${HOME:?HOME must be set}/.cache/tarn}"
version=$(sed -n 's:.*<trino.version>\(.*\)</trino.version>.*:\1:p' "$here/pom-server.xml")
java_home="${TARN_TRINO_JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
java="$java_home/bin/java"
mkdir -p "$results" "$cache/trino"

log() { echo "trino: $*" >&2; }

run_dir="${TARN_RUN_DIR:-}"
if [[ -z $run_dir ]]; then
  run_dir=$(mktemp -d "${TMPDIR:-/tmp}/tarn-trino.XXXXXX")
fi
mkdir -p "$run_dir"
run_dir=$(cd "$run_dir" && pwd)

# report_one KIND MESSAGE: the suite as one test that was skipped (KIND=skipped:
# Trino cannot run here) or failed (KIND=failure: Trino did not start), through
# the same junit_report.py as the tests, so that results/trino.json and the
# summary line say why. Exits: 0 for a skip, 1 for a failure.
report_one() {
  local kind=$1 message=$2 junit="$run_dir/trino-junit.xml"
  if [[ $kind == skipped && ( ${CI:-} == true || ${CI:-} == 1 ) ]]; then
    kind=failure message="precondition missing (CI=true, so this fails instead of skipping): $message"
  fi
  python3 - "$junit" "$kind" "$message" <<'EOF'
import sys
from xml.sax.saxutils import quoteattr
path, kind, message = sys.argv[1:]
with open(path, "w") as f:
    f.write('<?xml version="1.0" encoding="utf-8"?>\n<testsuites><testsuite name="trino" tests="1">'
            '<testcase classname="test_trino" name="test_00_trino_server">'
            '<%s message=%s/></testcase></testsuite></testsuites>\n' % (kind, quoteattr(message)))
EOF
  python3 "$repo/conformance/junit_report.py" --suite trino --version "$version (did not run)" \
    --out "$results/trino.json" "$junit" || true
  if [[ $kind == skipped ]]; then exit 0; fi
  exit 1
}

if [[ -z ${TARN_URI:-} ]]; then
  report_one failure "TARN_URI is not set: conformance/run starts Tarn and sets it"
fi

# --- Java --------------------------------------------------------------------
if [[ ! -x $java ]]; then
  report_one skipped "Trino $version needs a Java 25 JDK: none at $java_home (set TARN_TRINO_JAVA_HOME)"
fi
java_version=$("$java" -version 2>&1 | sed -n 's/.*version "\([^"]*\)".*/\1/p' | head -n 1)
if [[ ${java_version%%.*} -lt 25 ]]; then
  report_one skipped "Trino $version needs Java 25; $java is $java_version (set TARN_TRINO_JAVA_HOME)"
fi

# --- Trino from Maven --------------------------------------------------------
setup_start=$SECONDS
install_dir="$cache/trino/$version"
want_stamp="$(cat "$here/pom-server.xml" "$here/pom-iceberg.xml" "$here/TarnTrinoServer.java" | sha256sum | cut -c1-64) $version"
installed() { [[ -f $install_dir/.stamp && "$(cat "$install_dir/.stamp")" == "$want_stamp" ]]; }

# resolve POM OUT: `mvn dependency:copy-dependencies` of a copy of POM (so Maven
# never reads or writes the repo) into OUT; -C fails on a checksum mismatch.
resolve() {
  local pom=$1 out=$2 work
  work=$(mktemp -d "$tmp/.mvn.XXXXXX")
  cp "$pom" "$work/pom.xml"
  if ! (cd "$work" && mvn -B -q -C -Dmaven.repo.local="$cache/m2" \
    org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
    -DoutputDirectory="$out" -DincludeScope=runtime) >"$work/mvn.log" 2>&1; then
    cat "$work/mvn.log" >&2
    # A registry's "no" (the artifact is not served) is a blocker of this
    # machine; anything else (a time-out, a broken download) is a failure.
    refused=$(grep -o -m 1 -E '(Could not find artifact|Could not resolve dependencies for|Failure to find) [^ ]+' "$work/mvn.log" || true)
    rm -rf "$tmp"
    if [[ -n $refused ]]; then
      report_one skipped "Trino $version from Maven Central: $refused (the Maven registry reachable here does not serve it)"
    fi
    report_one failure "mvn could not resolve $(basename "$pom") (log above)"
  fi
  rm -rf "$work"
}

if ! installed; then
  command -v mvn >/dev/null || report_one skipped "Trino $version is installed with Maven, and mvn is not on PATH"
  exec 8>"$cache/trino/.lock"
  flock 8 # one install at a time
  if ! installed; then
    log "installing Trino $version into $install_dir (Maven, repository $cache/m2)"
    tmp=$(mktemp -d "$cache/trino/.tmp.XXXXXX")
    resolve "$here/pom-server.xml" "$tmp/lib"
    resolve "$here/pom-iceberg.xml" "$tmp/plugin/iceberg"
    mkdir -p "$tmp/services/META-INF/services" "$tmp/classes"
    echo io.trino.plugin.iceberg.IcebergPlugin >"$tmp/services/META-INF/services/io.trino.spi.Plugin"
    "$java_home/bin/jar" cf "$tmp/plugin/iceberg/tarn-trino-iceberg-plugin-service.jar" -C "$tmp/services" META-INF
    rm -rf "$tmp/services"
    "$java_home/bin/javac" -nowarn -d "$tmp/classes" -cp "$tmp/lib/*" "$here/TarnTrinoServer.java"
    echo "$want_stamp" >"$tmp/.stamp"
    rm -rf "$install_dir"
    mv "$tmp" "$install_dir"
    log "installed: $(find "$install_dir" -name '*.jar' | wc -l) jars, $(du -sh "$install_dir" | cut -f1), in $((SECONDS - setup_start))s"
  fi
  flock -u 8
  exec 8>&-
fi

venv=$(PIP_CACHE_DIR="${PIP_CACHE_DIR:-$cache/pip}" TARN_VENV="${TARN_TRINO_VENV:-$cache/venv-trino}" \
  TARN_REQUIREMENTS="$here/requirements.txt" "$repo/scripts/setup-python.sh" </dev/null | tail -n 1)
py="$venv/bin/python"
client_version=$("$py" -c 'from importlib.metadata import version; print(version("trino"))')
log "setup took $((SECONDS - setup_start))s"

# --- start Trino -------------------------------------------------------------
home="$run_dir/trino"
trino_log="$home/server.log"
mkdir -p "$home/etc/catalog" "$home/data"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# One node on loopback, sized for 2 cores and a 2 GB heap.
cat >"$home/etc/config.properties" <<EOF
coordinator=true
node-scheduler.include-coordinator=true
http-server.http.port=$port
discovery.uri=http://127.0.0.1:$port
query.max-memory=1GB
query.max-memory-per-node=512MB
plugin.dir=$install_dir/plugin
catalog.config-dir=$home/etc/catalog
EOF
# Tarn's warehouse is file://; Trino's local file system serves the `file`
# and `local` schemes below local.location.
cat >"$home/etc/catalog/iceberg.properties" <<EOF
connector.name=iceberg
iceberg.catalog.type=rest
iceberg.rest-catalog.uri=$TARN_URI
fs.local.enabled=true
local.location=/
EOF
echo "io.trino=INFO" >"$home/etc/log.properties"

read -r -a heap <<<"-Xmx${TARN_TRINO_HEAP:-2G}"
jvm=("${heap[@]}" -XX:+UseG1GC -XX:+ExplicitGCInvokesConcurrent -XX:+ExitOnOutOfMemoryError
  -XX:-OmitStackTraceInFastThrow -XX:ReservedCodeCacheSize=256M
  -XX:PerMethodRecompilationCutoff=10000 -XX:PerBytecodeRecompilationCutoff=10000
  -Djdk.attach.allowAttachSelf=true -Djdk.nio.maxCachedBufferSize=2000000
  -XX:+EnableDynamicAgentLoading -XX:+UnlockDiagnosticVMOptions -XX:G1NumCollectionsKeepPinned=10000000
  # Trino's checks at start: the Vector API must be linked
  --add-modules=jdk.incubator.vector --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow
  -Dfile.encoding=UTF-8 -Duser.timezone=UTC
  -Dnode.environment=tarn_conformance -Dnode.id=tarn-conformance -Dnode.data-dir="$home/data"
  -Dnode.internal-address=127.0.0.1 -Dnode.bind-ip=127.0.0.1
  -Dconfig="$home/etc/config.properties" -Dlog.levels-file="$home/etc/log.properties")

trino_pid=""
stop_trino() {
  [[ -n $trino_pid ]] || return 0
  kill "$trino_pid" 2>/dev/null || true
  for _ in $(seq 150); do
    kill -0 "$trino_pid" 2>/dev/null || break
    sleep 0.2
  done
  if kill -0 "$trino_pid" 2>/dev/null; then
    log "Trino (pid $trino_pid) still running 30s after SIGTERM; SIGKILL"
    kill -9 "$trino_pid" 2>/dev/null || true
  fi
  wait "$trino_pid" 2>/dev/null || true
  trino_pid=""
}
trap stop_trino EXIT

start=$SECONDS
(cd "$home" && exec "$java" "${jvm[@]}" -cp "$install_dir/classes:$install_dir/lib/*" TarnTrinoServer \
  >"$trino_log" 2>&1 </dev/null) &
trino_pid=$!
log "starting Trino $version on http://127.0.0.1:$port (pid $trino_pid, log $trino_log)"
deadline=$((SECONDS + ${TARN_TRINO_START_TIMEOUT:-240}))
ready=false
while ((SECONDS < deadline)); do
  if ! kill -0 "$trino_pid" 2>/dev/null; then
    break
  fi
  # /v1/info answers while the server starts; "starting":false once it serves queries
  if curl -s -m 2 "http://127.0.0.1:$port/v1/info" 2>/dev/null | grep -q '"starting":false'; then
    ready=true
    break
  fi
  sleep 0.5
done
if ! $ready; then
  tail -n 60 "$trino_log" | sed 's/\x1b\[[0-9;]*m//g' >&2
  why="Trino $version did not start within ${TARN_TRINO_START_TIMEOUT:-240}s"
  kill -0 "$trino_pid" 2>/dev/null || why="Trino $version exited during startup"
  stop_trino
  report_one failure "$why (log: $trino_log)"
fi
log "Trino ready in $((SECONDS - start))s"

version_line="$version (Temurin $java_version; trino client $client_version)"
export TARN_TRINO_URI="http://127.0.0.1:$port" TARN_TRINO_VERSION="$version" TARN_TRINO_LOG="$trino_log"
log "Trino $version against $TARN_URI (warehouse ${TARN_WAREHOUSE:-<unset>}; run dir $run_dir)"

# shellcheck source=../lib/pytest.sh
. "$repo/conformance/lib/pytest.sh"
rc=0
run_pytest_suite trino "$version_line" "$py" "$here" "$run_dir" "${TARN_TRINO_TIMEOUT:-600}" || rc=$?
stop_trino
exit "$rc"
