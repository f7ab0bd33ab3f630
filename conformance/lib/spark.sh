# run_spark_suite SUITE LABEL [ARTIFACT...]: the body of every Spark suite's
# run.sh (spark, spark-s3, spark-oauth2). Sourced, then called with the
# suite's name, a label added to its version string ("" for none) and the
# Iceberg artifacts it needs besides iceberg-spark-runtime-4.0_2.13 (e.g.
# iceberg-aws-bundle), all at TARN_ICEBERG_VERSION (default 1.11.0, the
# newest with a Spark 4.0 runtime; keep pyspark in
# conformance/spark/requirements.txt on the 4.0 line with it).
#
# Setup (cached, outside the repo; the first run downloads about 500 MB):
#   "$HOME/.cache/tarn/venv-spark"  pyspark + pyiceberg + pytest, from
#       conformance/spark/requirements.txt via scripts/setup-python.sh
#       (override the path with TARN_SPARK_VENV); pip's download cache:
#       "$HOME/.cache/tarn/pip" (unless PIP_CACHE_DIR is set).
#   "$HOME/.cache/tarn/spark/jars/<artifact>-<v>.jar"  fetched once from
#       Maven Central with maven-dependency-plugin:copy (Maven's local
#       repository: "$HOME/.cache/tarn/m2"), one fetch at a time; a jar
#       appears under its final name only once complete.
# Env out to the tests: TARN_SPARK_JARS (comma-separated), TARN_SPARK_JAR
# (the runtime), TARN_SPARK_RUN_DIR; Spark on loopback only, its scratch
# files in the run dir ($TARN_RUN_DIR, default a temp dir).
# Needs: Java 17 or 21, mvn for the first run.

run_spark_suite() {
  local suite=$1 label=$2
  shift 2
  local here repo cache iceberg_version setup_start py jars=() run_dir version
  here="$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)"
  repo="$(cd "$here/../.." && pwd)"
  cache="${HOME:?HOME must be set}/.cache/tarn"
  iceberg_version="${TARN_ICEBERG_VERSION:-1.11.0}"
  mkdir -p "$repo/conformance/results" "$cache"
  [[ -n ${TARN_URI:-} ]] || echo "$suite: TARN_URI is not set; every test will fail" >&2

  setup_start=$SECONDS
  spark_setup "$suite" "$repo" "$@"

  version="pyspark $("$py" -c 'import pyspark; print(pyspark.__version__)'), iceberg-spark-runtime-4.0_2.13 $iceberg_version${label:+ $label}"
  echo "$suite: setup took $((SECONDS - setup_start))s" >&2
  run_dir="${TARN_RUN_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/tarn-$suite.XXXXXX")}"
  mkdir -p "$run_dir/spark-local"
  echo "$suite: $version against ${TARN_URI:-<unset>} (warehouse ${TARN_WAREHOUSE:-<unset>}; run dir $run_dir)" >&2
  unset SPARK_HOME PYSPARK_SUBMIT_ARGS
  export SPARK_LOCAL_IP=127.0.0.1 SPARK_LOCAL_DIRS="$run_dir/spark-local" PYSPARK_PYTHON="$py" PYSPARK_DRIVER_PYTHON="$py"
  export TARN_SPARK_JAR="${jars[0]}" TARN_SPARK_JARS TARN_SPARK_RUN_DIR="$run_dir"
  TARN_SPARK_JARS=$(IFS=,; echo "${jars[*]}")
  # shellcheck source=pytest.sh
  . "$repo/conformance/lib/pytest.sh"
  run_pytest_suite "$suite" "$version" "$py" "$here" "$run_dir" "${TARN_SPARK_TIMEOUT:-900}"
}

# spark_setup SUITE REPO [ARTIFACT...]: the venv (pyspark + pyiceberg) and
# the Iceberg jars (iceberg-spark-runtime-4.0_2.13 first, then the
# ARTIFACTs) of a Spark run, cached in "$HOME/.cache/tarn"; sets py (the
# venv's python) and jars (their paths) in the caller's scope.
spark_setup() {
  local suite=$1 repo=$2
  shift 2
  local cache iceberg_version venv jar_dir a
  cache="${HOME:?HOME must be set}/.cache/tarn"
  iceberg_version="${TARN_ICEBERG_VERSION:-1.11.0}"
  venv=$(PIP_CACHE_DIR="${PIP_CACHE_DIR:-$cache/pip}" TARN_VENV="${TARN_SPARK_VENV:-$cache/venv-spark}" \
    TARN_REQUIREMENTS="$repo/conformance/spark/requirements.txt" "$repo/scripts/setup-python.sh" </dev/null | tail -n 1)
  py="$venv/bin/python"
  jar_dir="$cache/spark/jars"
  mkdir -p "$jar_dir"
  jars=()
  exec 8>"$cache/spark/jars.lock"
  flock 8
  for a in iceberg-spark-runtime-4.0_2.13 "$@"; do
    jars+=("$(spark_fetch_jar "$suite" "$py" "$cache" "$jar_dir" "$a" "$iceberg_version")") || exit 1
  done
  flock -u 8
  exec 8>&-
}

# spark_fetch_jar SUITE PY CACHE DIR ARTIFACT VERSION: prints the path of
# org.apache.iceberg:ARTIFACT:VERSION in DIR, fetching it first if absent.
spark_fetch_jar() {
  spark_fetch_maven "$1" "$2" "$3" "$4" org.apache.iceberg "$5" "$6"
}

# spark_fetch_maven SUITE PY CACHE DIR GROUP ARTIFACT VERSION: prints the
# path of GROUP:ARTIFACT:VERSION in DIR, fetching it first if absent.
spark_fetch_maven() {
  local suite=$1 py=$2 cache=$3 dir=$4 group=$5 artifact=$6 v=$7 jar tmp
  jar="$dir/$artifact-$v.jar"
  if [[ ! -s $jar ]]; then
    command -v mvn >/dev/null || { echo "$suite: mvn not found (apt-get install maven)" >&2; return 1; }
    echo "$suite: fetching $group:$artifact:$v into $dir" >&2
    tmp=$(mktemp -d "$dir/.tmp.XXXXXX")
    # Run where there is no pom, so Maven never reads or writes the repo; -C
    # fails on a checksum mismatch instead of warning.
    if ! (cd "$tmp" && mvn -B -q -C -Dmaven.repo.local="$cache/m2" \
      org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
      -Dartifact="$group:$artifact:$v" -DoutputDirectory="$tmp") >"$tmp/mvn.log" 2>&1; then
      cat "$tmp/mvn.log" >&2
      rm -rf "$tmp"
      echo "$suite: mvn failed (see above)" >&2
      return 1
    fi
    "$py" -c 'import sys, zipfile; assert zipfile.ZipFile(sys.argv[1]).testzip() is None' "$tmp/$artifact-$v.jar"
    mv "$tmp/$artifact-$v.jar" "$jar"
    rm -rf "$tmp"
  fi
  echo "$jar"
}
