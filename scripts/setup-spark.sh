#!/usr/bin/env bash
# Print the python of a venv with pyspark + pyiceberg and, on a second
# line, the comma-separated Iceberg Spark runtime jar(s), setting both up
# first (cached in "$HOME/.cache/tarn", as conformance/lib/spark.sh does
# for the Spark suites). Tests that drive Spark themselves use it, e.g.
# cmd/tarn's TestAuthEnginesE2E.
#
#   scripts/setup-spark.sh [ARTIFACT...]   # extra org.apache.iceberg artifacts
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=../conformance/lib/spark.sh
. "$repo/conformance/lib/spark.sh"
spark_setup setup-spark "$repo" "$@"
echo "$py"
(IFS=,; echo "${jars[*]}")
