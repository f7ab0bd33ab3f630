#!/usr/bin/env bash
# Hold a running Tarn against DuckDB 1.4 and its iceberg extension
# (conformance/duckdb/test_duckdb.py): pyiceberg writes tables, DuckDB attaches
# Tarn as an Iceberg REST catalog, lists and queries them (checked against pyarrow
# on the Parquet file), time-travels, then writes (CREATE SCHEMA/TABLE, INSERT,
# UPDATE, DELETE, DROP) and pyiceberg reads back what DuckDB wrote.
#
#   TARN_URI=http://127.0.0.1:8181 TARN_WAREHOUSE=file:///path/to/warehouse conformance/duckdb/run.sh
#
# Env in:  TARN_URI        the catalog's base URI (the tests fail, not skip, without it)
#          TARN_WAREHOUSE  file:// URI of the server's warehouse directory (DuckDB
#                          and pyiceberg read and write the data files there)
#          TARN_TOKEN      optional bearer token for pyiceberg
#          TARN_DUCKDB_TIMEOUT  seconds for the whole pytest run (default 900)
#          PYTEST_ADDOPTS  extra pytest options (e.g. "-x")
# Out:     conformance/results/duckdb.json  (see conformance/junit_report.py); its
#          version is "<duckdb> (iceberg <extension version>)"
#          the JUnit XML in $TARN_RUN_DIR (default a temp dir), path printed on stderr
#          last stdout line: `duckdb: N passed, M failed, K skipped`
# Exit:    non-zero when a test failed or pytest itself did not complete.
#
# The venv comes from scripts/setup-python.sh ($HOME/.cache/tarn/venv): duckdb 1.4.4
# and the duckdb-ext-iceberg/httpfs/avro wheels, whose extension binaries are loaded
# from the venv (duckdb_ext.init); nothing is downloaded at run time.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
results="$repo/conformance/results"
mkdir -p "$results"

if [[ -z ${TARN_URI:-} ]]; then
  echo "duckdb: TARN_URI is not set; every test will fail" >&2
fi

venv=$("$repo/scripts/setup-python.sh" </dev/null | tail -n 1)
py="$venv/bin/python"
version=$("$py" -c '
import duckdb, duckdb_ext
con = duckdb_ext.init(duckdb.connect())
con.execute("SET autoinstall_known_extensions = false")
con.execute("LOAD iceberg")
ext = con.execute("SELECT extension_version FROM duckdb_extensions() WHERE extension_name = '"'iceberg'"'").fetchone()[0]
print("%s (iceberg %s)" % (duckdb.__version__, ext))
')

run_dir="${TARN_RUN_DIR:-}"
if [[ -z $run_dir ]]; then
  run_dir=$(mktemp -d "${TMPDIR:-/tmp}/tarn-duckdb.XXXXXX")
fi
mkdir -p "$run_dir"

echo "duckdb: duckdb $version against ${TARN_URI:-<unset>} (warehouse ${TARN_WAREHOUSE:-<unset>})" >&2

# shellcheck source=../lib/pytest.sh
. "$repo/conformance/lib/pytest.sh"
run_pytest_suite duckdb "$version" "$py" "$here" "$run_dir" "${TARN_DUCKDB_TIMEOUT:-900}"
