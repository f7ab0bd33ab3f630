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

echo "pyiceberg: pyiceberg $version against ${TARN_URI:-<unset>} (warehouse ${TARN_WAREHOUSE:-<unset>})" >&2

# shellcheck source=../lib/pytest.sh
. "$repo/conformance/lib/pytest.sh"
run_pytest_suite pyiceberg "$version" "$py" "$here" "$run_dir" "${TARN_PYICEBERG_TIMEOUT:-900}"
