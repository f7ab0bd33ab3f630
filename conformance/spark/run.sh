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

# shellcheck source=../lib/spark.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/spark.sh"
run_spark_suite spark ""
