#!/usr/bin/env bash
# Hold a Tarn with an S3 warehouse (moto, started by conformance/run for
# this suite: conformance/pyiceberg-s3/server says `s3`) against pyiceberg:
# pyiceberg has no AWS keys of its own and reads and writes with the
# credentials Tarn vends; remote signing is refused outside the table.
#
#   conformance/run pyiceberg-s3
#
# Env in:  TARN_URI, TARN_WAREHOUSE (s3://...), TARN_S3_TEST_ENDPOINT (moto),
#          TARN_SERVER_LOG (Tarn's log, checked for leaked credentials)
# Out:     conformance/results/pyiceberg-s3.json; last stdout line
#          `pyiceberg-s3: N passed, M failed, K skipped`
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
mkdir -p "$repo/conformance/results"

venv=$("$repo/scripts/setup-python.sh" </dev/null | tail -n 1)
py="$venv/bin/python"
version=$("$py" -c 'import pyiceberg; print(pyiceberg.__version__)')
run_dir="${TARN_RUN_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/tarn-pyiceberg-s3.XXXXXX")}"
mkdir -p "$run_dir"

# No AWS credentials of the client's own: whatever works, works with
# what Tarn vends (no env keys, no shared config, no instance metadata).
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_PROFILE
export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_EC2_METADATA_DISABLED=true

echo "pyiceberg-s3: pyiceberg $version against ${TARN_URI:-<unset>} (warehouse ${TARN_WAREHOUSE:-<unset>})" >&2
# shellcheck source=../lib/pytest.sh
. "$repo/conformance/lib/pytest.sh"
run_pytest_suite pyiceberg-s3 "$version" "$py" "$here" "$run_dir" "${TARN_PYICEBERG_TIMEOUT:-600}"
