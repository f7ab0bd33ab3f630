#!/usr/bin/env bash
# Hold a running Tarn against Apache Spark with Apache Iceberg's Spark runtime
# (conformance/spark/test_spark.py): Spark SQL DDL and DML through Iceberg's
# REST catalog client, on a local SparkSession (local[2], no UI, loopback only).
#
#   TARN_URI=http://127.0.0.1:8181 TARN_WAREHOUSE=file:///path/to/warehouse conformance/spark/run.sh
#
# Env in:  TARN_URI        the catalog's base URI (the tests fail, not skip, without it)
#          TARN_WAREHOUSE  file:// URI of the server's warehouse directory (Spark
#                          reads and writes data files there; the tests look at it)
#          TARN_SPARK_TIMEOUT  seconds for the whole pytest run (default 900)
#          TARN_SPARK_DRIVER_MEMORY  driver heap (default 1g; local mode runs
#                          executors inside the driver)
#          TARN_ICEBERG_VERSION  iceberg-spark-runtime-4.0_2.13 version (default 1.11.0,
#                          the newest with a Spark 4.0 runtime)
#          PYTEST_ADDOPTS  extra pytest options (e.g. "-k views -x")
# Out:     conformance/results/spark.json  (see conformance/junit_report.py)
#          the JUnit XML and Spark's log in $TARN_RUN_DIR (default a temp dir)
#          last stdout line: `spark: N passed, M failed, K skipped`
# Exit:    non-zero when a test failed or pytest itself did not complete.
#
# Setup (cached, outside the repo; the first run downloads about 500 MB):
#   "$HOME/.cache/tarn/venv-spark"  pyspark + pyiceberg + pytest, from
#       conformance/spark/requirements.txt via scripts/setup-python.sh
#       (TARN_VENV / TARN_REQUIREMENTS; override the path with
#       TARN_SPARK_VENV); a warm run skips pip. pip's download cache:
#       "$HOME/.cache/tarn/pip" (unless PIP_CACHE_DIR is set).
#   "$HOME/.cache/tarn/spark/jars/iceberg-spark-runtime-4.0_2.13-<v>.jar"
#       fetched once from Maven Central with maven-dependency-plugin:copy
#       (Maven's local repository: "$HOME/.cache/tarn/m2"); a warm run only
#       checks that the file is there.
# Needs:   Java 17 or 21 (java on PATH, or JAVA_HOME), mvn for the first run.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
results="$repo/conformance/results"
cache="${HOME:?HOME must be set}/.cache/tarn"
mkdir -p "$results" "$cache"

# Newest iceberg-spark-runtime-4.0_2.13 on Maven Central (1.12.0 publishes no
# Spark 4.0 runtime); keep pyspark in requirements.txt on the 4.0 line with it.
iceberg_version="${TARN_ICEBERG_VERSION:-1.11.0}"
runtime="iceberg-spark-runtime-4.0_2.13"

if [[ -z ${TARN_URI:-} ]]; then
  echo "spark: TARN_URI is not set; every test will fail" >&2
fi

setup_start=$SECONDS
# pip's download cache goes to the cache too (the pyspark wheel alone is over
# 400 MB), so nothing lands outside "$HOME/.cache/tarn".
venv=$(PIP_CACHE_DIR="${PIP_CACHE_DIR:-$cache/pip}" TARN_VENV="${TARN_SPARK_VENV:-$cache/venv-spark}" \
  TARN_REQUIREMENTS="$here/requirements.txt" "$repo/scripts/setup-python.sh" </dev/null | tail -n 1)
py="$venv/bin/python"

# The Iceberg runtime jar. One fetch at a time (two runs may start together);
# the jar appears under its final name only once it is complete.
jar_dir="$cache/spark/jars"
jar="$jar_dir/$runtime-$iceberg_version.jar"
mkdir -p "$jar_dir"
exec 8>"$cache/spark/jars.lock"
command -v flock >/dev/null 2>&1 && flock 8
if [[ ! -s $jar ]]; then
  command -v mvn >/dev/null || { echo "spark: mvn not found (apt-get install maven)" >&2; exit 1; }
  echo "spark: fetching org.apache.iceberg:$runtime:$iceberg_version into $jar_dir" >&2
  tmp=$(mktemp -d "$jar_dir/.tmp.XXXXXX")
  # Run where there is no pom, so Maven never reads or writes the repo; -C
  # fails on a checksum mismatch instead of warning.
  if ! (cd "$tmp" && mvn -B -q -C -Dmaven.repo.local="$cache/m2" \
    org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
    -Dartifact="org.apache.iceberg:$runtime:$iceberg_version" -DoutputDirectory="$tmp") >"$tmp/mvn.log" 2>&1; then
    cat "$tmp/mvn.log" >&2
    rm -rf "$tmp"
    echo "spark: mvn failed (see above)" >&2
    exit 1
  fi
  "$py" -c 'import sys, zipfile; assert zipfile.ZipFile(sys.argv[1]).testzip() is None' "$tmp/$runtime-$iceberg_version.jar"
  mv "$tmp/$runtime-$iceberg_version.jar" "$jar"
  rm -rf "$tmp"
fi
flock -u 8 2>/dev/null || true
exec 8>&-

spark_version=$("$py" -c 'import pyspark; print(pyspark.__version__)')
version="pyspark $spark_version, $runtime $iceberg_version"
echo "spark: setup took $((SECONDS - setup_start))s" >&2

run_dir="${TARN_RUN_DIR:-}"
if [[ -z $run_dir ]]; then
  run_dir=$(mktemp -d "${TMPDIR:-/tmp}/tarn-spark.XXXXXX")
fi
mkdir -p "$run_dir"

echo "spark: $version against ${TARN_URI:-<unset>} (warehouse ${TARN_WAREHOUSE:-<unset>}; run dir $run_dir)" >&2
# Spark from the venv only, on loopback only; its scratch files (spark-warehouse,
# derby, spark-* temp dirs) go to the run dir, never the work tree.
unset SPARK_HOME PYSPARK_SUBMIT_ARGS
export SPARK_LOCAL_IP=127.0.0.1 SPARK_LOCAL_DIRS="$run_dir/spark-local"
export PYSPARK_PYTHON="$py" PYSPARK_DRIVER_PYTHON="$py"
export TARN_SPARK_JAR="$jar" TARN_SPARK_RUN_DIR="$run_dir"
mkdir -p "$SPARK_LOCAL_DIRS"

# shellcheck source=../lib/pytest.sh
. "$repo/conformance/lib/pytest.sh"
run_pytest_suite spark "$version" "$py" "$here" "$run_dir" "${TARN_SPARK_TIMEOUT:-900}"
