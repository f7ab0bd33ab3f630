#!/usr/bin/env bash
# pyiceberg's suite (conformance/pyiceberg/test_*.py) against a Tarn in
# --auth oauth2 mode: conformance/run starts it with a root credential
# (conformance/pyiceberg-oauth2/server says oauth2) and exports
# TARN_CREDENTIAL=id:secret, which conftest.py hands pyiceberg as
# `credential`, so every request carries a token pyiceberg fetched from
# Tarn's /v1/oauth/tokens.
#
# Out: conformance/results/pyiceberg-oauth2.json; last stdout line
#      `pyiceberg-oauth2: N passed, M failed, K skipped`.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
mkdir -p "$repo/conformance/results"
[[ -n ${TARN_CREDENTIAL:-} ]] || { echo "pyiceberg-oauth2: TARN_CREDENTIAL is not set (conformance/run sets it)" >&2; exit 1; }

venv=$("$repo/scripts/setup-python.sh" </dev/null | tail -n 1)
py="$venv/bin/python"
version=$("$py" -c 'import pyiceberg; print(pyiceberg.__version__)')
run_dir="${TARN_RUN_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/tarn-pyiceberg-oauth2.XXXXXX")}"
mkdir -p "$run_dir"
echo "pyiceberg-oauth2: pyiceberg $version with credential=${TARN_CREDENTIAL%%:*}:*** against ${TARN_URI:-<unset>}" >&2
# test_fuzz_metadata.py talks to no server (it loads the tables a Go fuzz run
# accepted); the pyiceberg suite runs it once.
export PYTEST_ADDOPTS="${PYTEST_ADDOPTS:+$PYTEST_ADDOPTS }--ignore=$repo/conformance/pyiceberg/test_fuzz_metadata.py"
# shellcheck source=../lib/pytest.sh
. "$repo/conformance/lib/pytest.sh"
run_pytest_suite pyiceberg-oauth2 "$version" "$py" "$repo/conformance/pyiceberg" "$run_dir" "${TARN_PYICEBERG_TIMEOUT:-900}"
