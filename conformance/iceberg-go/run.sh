#!/usr/bin/env bash
# Hold a running Tarn against iceberg-go's REST client (conformance/iceberg-go/icebergo_test.go):
# iceberg-go's catalog/catalogtest suite, flights data written in two appends and
# read back (totals, time travel, row filters, schema evolution), a view.
#
#   TARN_URI=http://127.0.0.1:8181 TARN_WAREHOUSE=file:///path/to/warehouse conformance/iceberg-go/run.sh
#
# Env in:  TARN_URI        the catalog's base URI (the tests fail, not skip, without it)
#          TARN_WAREHOUSE  file:// URI of the server's warehouse directory
#          TARN_TOKEN      optional bearer token for the REST client
#          TARN_ICEBERGO_TIMEOUT  go test -timeout (default 10m)
# Out:     conformance/results/iceberg-go.json  (see conformance/junit_report.py); its
#          version is iceberg-go's, as pinned in go.mod
#          the JUnit XML in $TARN_RUN_DIR (default a temp dir), path printed on stderr
#          last stdout line: `iceberg-go: N passed, M failed, K skipped` (subtests are
#          counted; a parent test only when it failed on its own account)
# Exit:    non-zero when a test failed or go test itself did not complete.
#
# The tests are Go files behind the `integration` build tag, compiled against this
# module's go.mod (iceberg-go, arrow-go). gotestsum, pinned below, writes the JUnit
# XML; `go run` fetches it once from the Go module proxy into the module cache.
set -euo pipefail

gotestsum_version=v1.13.0

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
results="$repo/conformance/results"
mkdir -p "$results"

if [[ -z ${TARN_URI:-} ]]; then
  echo "iceberg-go: TARN_URI is not set; every test will fail" >&2
fi

version=$(cd "$repo" && go list -m -f '{{.Version}}' github.com/apache/iceberg-go)
version=${version#v}

run_dir="${TARN_RUN_DIR:-}"
if [[ -z $run_dir ]]; then
  run_dir=$(mktemp -d "${TMPDIR:-/tmp}/tarn-iceberg-go.XXXXXX")
fi
mkdir -p "$run_dir"
junit="$run_dir/iceberg-go-junit.xml"
rm -f "$junit"

echo "iceberg-go: iceberg-go $version against ${TARN_URI:-<unset>} (warehouse ${TARN_WAREHOUSE:-<unset>})" >&2
rc=0
# The summary goes to stderr: stdout's last line is the suite's count line.
(cd "$repo" && go run "gotest.tools/gotestsum@$gotestsum_version" \
  --junitfile "$junit" --junitfile-testsuite-name short --junitfile-testcase-classname short \
  --format testname -- \
  -tags integration -count=1 -timeout "${TARN_ICEBERGO_TIMEOUT:-10m}" ./conformance/iceberg-go/) </dev/null >&2 || rc=$?
echo "iceberg-go: gotestsum exited $rc; JUnit XML: $junit" >&2

reports=()
if [[ -s $junit ]]; then
  python3 "$here/junit_tidy.py" "$junit"
  reports+=("$junit")
fi
report_rc=0
python3 "$repo/conformance/junit_report.py" --suite iceberg-go --version "$version" \
  --out "$results/iceberg-go.json" "${reports[@]}" || report_rc=$?

if [[ $report_rc != 0 || $rc != 0 ]]; then
  exit 1
fi
