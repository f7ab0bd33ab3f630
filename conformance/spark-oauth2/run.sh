#!/usr/bin/env bash
# Hold a Tarn in --auth oauth2 mode (conformance/run starts it with a root
# credential: this folder's `server` file says `oauth2`) against Spark with
# Iceberg's REST catalog configured with `credential=id:secret`: Spark
# fetches its token from Tarn's /v1/oauth/tokens. The tests create a
# principal with a role and grants through the management API and check
# what Spark may and may not do with its credential.
#
#   conformance/run spark-oauth2
#
# Env in:  TARN_URI, TARN_CREDENTIAL (root's id:secret)
# Out:     conformance/results/spark-oauth2.json; last stdout line
#          `spark-oauth2: N passed, M failed, K skipped`
# Setup:   the venv and runtime jar of conformance/spark (see its run.sh),
#          cached in "$HOME/.cache/tarn".
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache="${HOME:?HOME must be set}/.cache/tarn"
mkdir -p "$repo/conformance/results" "$cache/spark/jars"
iceberg_version="${TARN_ICEBERG_VERSION:-1.11.0}"

venv=$(PIP_CACHE_DIR="${PIP_CACHE_DIR:-$cache/pip}" TARN_VENV="${TARN_SPARK_VENV:-$cache/venv-spark}" \
  TARN_REQUIREMENTS="$repo/conformance/spark/requirements.txt" "$repo/scripts/setup-python.sh" </dev/null | tail -n 1)
py="$venv/bin/python"

fetch() { # $1: artifact id; prints the jar path
  local jar="$cache/spark/jars/$1-$iceberg_version.jar" tmp
  if [[ ! -s $jar ]]; then
    command -v mvn >/dev/null || { echo "spark-oauth2: mvn not found" >&2; exit 1; }
    tmp=$(mktemp -d "$cache/spark/jars/.tmp.XXXXXX")
    (cd "$tmp" && mvn -B -q -C -Dmaven.repo.local="$cache/m2" org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
      -Dartifact="org.apache.iceberg:$1:$iceberg_version" -DoutputDirectory="$tmp") >&2
    mv "$tmp/$1-$iceberg_version.jar" "$jar"
    rm -rf "$tmp"
  fi
  echo "$jar"
}
exec 8>"$cache/spark/jars.lock"
flock 8
runtime=$(fetch iceberg-spark-runtime-4.0_2.13)
flock -u 8
exec 8>&-

run_dir="${TARN_RUN_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/tarn-spark-oauth2.XXXXXX")}"
mkdir -p "$run_dir/spark-local"
unset SPARK_HOME PYSPARK_SUBMIT_ARGS
export SPARK_LOCAL_IP=127.0.0.1 SPARK_LOCAL_DIRS="$run_dir/spark-local" PYSPARK_PYTHON="$py" PYSPARK_DRIVER_PYTHON="$py"
export TARN_SPARK_JARS="$runtime" TARN_SPARK_RUN_DIR="$run_dir"
version="pyspark $("$py" -c 'import pyspark; print(pyspark.__version__)'), iceberg $iceberg_version"
echo "spark-oauth2: $version against ${TARN_URI:-<unset>} (warehouse ${TARN_WAREHOUSE:-<unset>})" >&2
# shellcheck source=../lib/pytest.sh
. "$repo/conformance/lib/pytest.sh"
run_pytest_suite spark-oauth2 "$version" "$py" "$here" "$run_dir" "${TARN_SPARK_TIMEOUT:-900}"
