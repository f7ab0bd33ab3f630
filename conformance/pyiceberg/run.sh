#!/usr/bin/env bash
# Hold a running Tarn against pyiceberg's RestCatalog (conformance/pyiceberg/test_*.py).
#
#   TARN_URI=http://127.0.0.1:8181 TARN_WAREHOUSE=file:///path/to/warehouse conformance/pyiceberg/run.sh
#
# Env in:  TARN_URI        the catalog's base URI (the tests fail, not skip, without it)
#          TARN_WAREHOUSE  file:// URI of the server's warehouse directory (the
#                          tests look at files on disk: table location, purge)
#          TARN_TOKEN      optional bearer token for pyiceberg
#          TARN_PYICEBERG_TIMEOUT  seconds for the whole pytest run (default 900;
#                          pyiceberg sets no HTTP timeout, so a hung server would hang)
#          PYTEST_ADDOPTS  extra pytest options (e.g. "-k e2e -x")
# Out:     conformance/results/pyiceberg.json  {"suite","version","date","passed","failed",
#                          "skipped","failures":[{test,message}],"skips":[{test,reason}]}
#          the JUnit XML in $TARN_RUN_DIR (default a temp dir), path printed on stderr
#          last stdout line: `pyiceberg: N passed, M failed, K skipped`
# Exit:    non-zero when a test failed or pytest itself did not complete.
#
# The venv comes from scripts/setup-python.sh ($HOME/.cache/tarn/venv).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
results="$repo/conformance/results"
mkdir -p "$results"

if [[ -z ${TARN_URI:-} ]]; then
  echo "pyiceberg: TARN_URI is not set; every test will fail" >&2
fi

venv=$("$repo/scripts/setup-python.sh" </dev/null | tail -n 1)
py="$venv/bin/python"
version=$("$py" -c 'import pyiceberg; print(pyiceberg.__version__)')

run_dir="${TARN_RUN_DIR:-}"
if [[ -z $run_dir ]]; then
  run_dir=$(mktemp -d "${TMPDIR:-/tmp}/tarn-pyiceberg.XXXXXX")
fi
mkdir -p "$run_dir"
junit="$run_dir/pyiceberg-junit.xml"
rm -f "$junit"

echo "pyiceberg: pyiceberg $version against ${TARN_URI:-<unset>} (warehouse ${TARN_WAREHOUSE:-<unset>})" >&2
rc=0
# No .pytest_cache or __pycache__ in the work tree; the folder's pytest.ini
# makes it the rootdir.
PYTHONDONTWRITEBYTECODE=1 timeout -k 15 "${TARN_PYICEBERG_TIMEOUT:-900}" \
  "$py" -m pytest "$here" -p no:cacheprovider -c "$here/pytest.ini" --rootdir "$here" \
  --junitxml="$junit" </dev/null || rc=$?
echo "pyiceberg: pytest exited $rc; JUnit XML: $junit" >&2

reports=()
[[ -s $junit ]] && reports+=("$junit")
report_rc=0
"$py" "$repo/conformance/junit_report.py" --suite pyiceberg --version "$version" \
  --out "$results/pyiceberg.json" "${reports[@]}" || report_rc=$?

# pytest exit codes: 0 all passed, 1 some failed; 2-5 (interrupted, internal
# error, usage error, no tests) and 124/137 (timeout) mean the run itself broke.
if [[ $report_rc != 0 || $rc != 0 ]]; then
  exit 1
fi
