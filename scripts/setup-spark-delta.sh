#!/usr/bin/env bash
# Print the python of conformance/spark's venv (pyspark 4.0) and, on a
# second line, the comma-separated jars of Delta Lake's Spark connector
# (io.delta:delta-spark_2.13 and io.delta:delta-storage), setting both up
# first (cached in "$HOME/.cache/tarn", as scripts/setup-spark.sh does).
# For the readers of Tarn's Delta output (scripts/read-delta-spark.py).
#
# TARN_DELTA_SPARK_VERSION (default 4.0.0): Delta's 4.0 line is built for
# Spark 4.0, the line conformance/spark/requirements.txt holds pyspark on;
# bump them together.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=../conformance/lib/spark.sh
. "$repo/conformance/lib/spark.sh"
spark_setup setup-spark-delta "$repo"
v="${TARN_DELTA_SPARK_VERSION:-4.0.0}"
cache="$HOME/.cache/tarn"
delta_jars=()
exec 8>"$cache/spark/jars.lock"
flock 8
for a in delta-spark_2.13 delta-storage; do
  delta_jars+=("$(spark_fetch_maven setup-spark-delta "$py" "$cache" "$cache/spark/jars" io.delta "$a" "$v")")
done
flock -u 8
echo "$py"
(IFS=,; echo "${delta_jars[*]}")
