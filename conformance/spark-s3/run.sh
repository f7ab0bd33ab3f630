#!/usr/bin/env bash
# Hold a Tarn with an S3 warehouse (moto, started by conformance/run: this
# folder's `server` file says `s3`) against Spark with Iceberg's S3FileIO
# and no AWS keys of its own: one catalog reads with vended credentials,
# another writes with remote signing.
#
#   conformance/run spark-s3
#
# Env in:  TARN_URI, TARN_WAREHOUSE (s3://...), TARN_S3_TEST_ENDPOINT
# Out:     conformance/results/spark-s3.json; last stdout line
#          `spark-s3: N passed, M failed, K skipped`
# Setup:   the venv and runtime jar of conformance/spark (see its run.sh),
#          plus org.apache.iceberg:iceberg-aws-bundle (same version) in
#          "$HOME/.cache/tarn/spark/jars", fetched once with Maven.
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
    command -v mvn >/dev/null || { echo "spark-s3: mvn not found" >&2; exit 1; }
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
bundle=$(fetch iceberg-aws-bundle)
flock -u 8
exec 8>&-

run_dir="${TARN_RUN_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/tarn-spark-s3.XXXXXX")}"
mkdir -p "$run_dir/spark-local"
unset SPARK_HOME PYSPARK_SUBMIT_ARGS AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_PROFILE
export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_EC2_METADATA_DISABLED=true
export SPARK_LOCAL_IP=127.0.0.1 SPARK_LOCAL_DIRS="$run_dir/spark-local" PYSPARK_PYTHON="$py" PYSPARK_DRIVER_PYTHON="$py"
export TARN_SPARK_JARS="$runtime,$bundle" TARN_SPARK_RUN_DIR="$run_dir"
version="pyspark $("$py" -c 'import pyspark; print(pyspark.__version__)'), iceberg $iceberg_version (S3FileIO)"
echo "spark-s3: $version against ${TARN_URI:-<unset>} (warehouse ${TARN_WAREHOUSE:-<unset>})" >&2
# shellcheck source=../lib/pytest.sh
. "$repo/conformance/lib/pytest.sh"
run_pytest_suite spark-s3 "$version" "$py" "$here" "$run_dir" "${TARN_SPARK_TIMEOUT:-900}"
