#!/usr/bin/env bash
# Hold Tarn's Delta Lake output (docs/delta.md) against the Delta readers
# nobody here wrote: delta-rs (deltalake, its DataFusion path), DuckDB 1.4's
# delta extension and Spark 4.0 with Delta's own connector (delta-spark, jars
# from Maven Central), by running the delta package's end-to-end tests
# (TestE2EDelta*) through gotestsum:
#
#   TestE2EDeltaReaders             delta-rs and DuckDB: every value at the latest
#                                   version after a compaction, time travel to 0
#   TestE2EDeltaSpark               Spark: the same, and DESCRIBE HISTORY
#   TestE2EDeltaTimeTravelAfterExpiry  delta-rs time travel after an Iceberg expiry
#   TestE2EDeltaLogCleanup          delta-rs history and checkpoint read, DuckDB,
#                                   after the log cleanup removed old commits
#   TestE2EDeltaVacuum              Spark's VACUUM RETAIN 0 HOURS is refused and
#                                   pyiceberg reads every retained snapshot after
#
# The tests make their Tarn tables in process (Tarn's catalog, its ingest sink
# and its Delta publisher over a file:// warehouse), so the server
# conformance/run starts for the suite is not used. TestE2EDeltaOutput (a topic
# through `tarn serve` with real Kafka, kill -9 while publishing) runs in
# scripts/test's end-to-end step.
#
#   conformance/run delta            (or directly: conformance/delta/run.sh)
#
# Env in:  TARN_DELTA_TIMEOUT  go test timeout (default 30m)
# Out:     conformance/results/delta.json (conformance/junit_report.py); version
#          "deltalake <v>, duckdb <v> (delta <ext>), delta-spark <v>"
#          last stdout line: `delta: N passed, M failed, K skipped`
# Exit:    non-zero when a test failed or did not complete.
#
# The venvs: scripts/setup-python.sh's with scripts/requirements-delta.txt
# ($HOME/.cache/tarn/venv-delta), its main one (pyiceberg), and
# scripts/setup-spark-delta.sh's; the tests set them up. Under CI=true a missing
# tool fails the test instead of skipping it.
set -euo pipefail

gotestsum_version=v1.13.0

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
results="$repo/conformance/results"
mkdir -p "$results"

run_dir="${TARN_RUN_DIR:-}"
if [[ -z $run_dir ]]; then
  run_dir=$(mktemp -d "${TMPDIR:-/tmp}/tarn-delta.XXXXXX")
fi
mkdir -p "$run_dir"
junit="$run_dir/delta-junit.xml"
rm -f "$junit"

deltalake=$(sed -n 's/^deltalake==//p' "$repo/scripts/requirements-delta.txt")
duckdb=$(sed -n 's/^duckdb==//p' "$repo/scripts/requirements-delta.txt")
ext=$(sed -n 's/^duckdb-ext-delta==//p' "$repo/scripts/requirements-delta.txt")
version="deltalake $deltalake, duckdb $duckdb (delta $ext), delta-spark ${TARN_DELTA_SPARK_VERSION:-4.0.0}"

echo "delta: $version" >&2
rc=0
(cd "$repo" && TARN_E2E=1 go run "gotest.tools/gotestsum@$gotestsum_version" \
  --junitfile "$junit" --junitfile-testsuite-name short --junitfile-testcase-classname short \
  --format testname -- \
  -count=1 -timeout "${TARN_DELTA_TIMEOUT:-30m}" -run '^TestE2EDelta' ./delta/) </dev/null >&2 || rc=$?
echo "delta: gotestsum exited $rc; JUnit XML: $junit" >&2

reports=()
if [[ -s $junit ]]; then
  python3 "$repo/conformance/iceberg-go/junit_tidy.py" "$junit"
  reports+=("$junit")
fi
report_rc=0
python3 "$repo/conformance/junit_report.py" --suite delta --version "$version" \
  --out "$results/delta.json" "${reports[@]}" || report_rc=$?

if [[ $report_rc != 0 || $rc != 0 ]]; then
  exit 1
fi
