#!/usr/bin/env bash
# Run pyiceberg's own catalog integration tests (tests/integration/test_catalog.py,
# shipped in pyiceberg's source distribution on PyPI) against a running Tarn.
#
#   TARN_URI=http://127.0.0.1:8181 conformance/pyiceberg/run_upstream.sh
#
# What it does:
#   1. a venv of its own, "$HOME/.cache/tarn/venv-upstream", from
#      conformance/pyiceberg/requirements-upstream.txt via scripts/setup-python.sh
#      (the upstream conftest imports boto3, moto, pytest-lazy-fixtures; the test
#      module imports the SQL and Hive catalogs: SQLAlchemy, thrift);
#   2. the sdist, fetched once with `pip download --no-binary pyiceberg --no-deps
#      pyiceberg==<the venv's version>` into "$HOME/.cache/tarn/pyiceberg-src/"
#      (pip prepares the sdist's metadata in an isolated build env: setuptools,
#      wheel, Cython. `--no-binary :all:` would apply to those too and compile
#      Cython from source, ~3 min on 2 cores; naming only pyiceberg keeps it to
#      ~15 s), extracted afresh on
#      every run into "$HOME/.cache/tarn/pyiceberg-src/pyiceberg-<v>/" — never
#      into this repository;
#   3. points the tests at TARN_URI, the two ways the file allows:
#      - fixture `rest_test_catalog`: load_catalog(os.environ["PYICEBERG_TEST_CATALOG"]),
#        configured here purely by environment (the upstream conftest hides
#        ~/.pyiceberg.yaml): PYICEBERG_TEST_CATALOG=tarn,
#        PYICEBERG_CATALOG__TARN__TYPE=rest, PYICEBERG_CATALOG__TARN__URI=$TARN_URI
#        (+ __TOKEN from TARN_TOKEN). Every test parametrized over CATALOGS runs
#        with it, selected by `-k rest_test_catalog`;
#      - fixture `rest_catalog`, hard-wired to http://localhost:8181 and used by
#        the four test_rest_* tests (views, namespace separator): the extracted
#        copy is patched to read TARN_URI instead;
#   4. runs them from the extracted tree (its pyproject.toml applies:
#      filterwarnings = error), writes JUnit XML and
#      conformance/results/pyiceberg-upstream.json, and prints as its last line
#      `pyiceberg-upstream: N passed, M failed, K skipped`. Exits non-zero on failures.
#
# Capability switches the upstream tests read from the catalog's properties
# (client config merged with the server's /v1/config defaults and overrides),
# default in brackets: supports_purge_table [true],
# supports_atomic_concurrent_updates [true], supports_nested_namespaces [true],
# supports_schema_evolution [true], supports_slash_in_identifier [false — the two
# slash tests skip], supports_dot_in_identifier [true]. Set one here with e.g.
# PYICEBERG_CATALOG__TARN__SUPPORTS_SLASH_IN_IDENTIFIER=true.
# test_rest_custom_namespace_separator expects the server's /v1/config to
# override namespace-separator to "." (the Java REST fixture sends "%2E").
# The upstream clean_up drops every namespace whose name contains
# "my_iceberg_database-" after each test; ns_dot, ns_slash and new.db are fixed names.
#
# Env in: TARN_URI (required), TARN_TOKEN, TARN_PYICEBERG_TIMEOUT (default 900 s),
#         PYTEST_ADDOPTS, TARN_RUN_DIR (where the JUnit XML goes; default a temp dir).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache="${HOME:?}/.cache/tarn"
suite=pyiceberg-upstream

: "${TARN_URI:?TARN_URI must point at a running catalog, e.g. http://127.0.0.1:8181}"
mkdir -p "$repo/conformance/results"

venv=$(TARN_VENV="${TARN_UPSTREAM_VENV:-$cache/venv-upstream}" \
  TARN_REQUIREMENTS="$here/requirements-upstream.txt" \
  "$repo/scripts/setup-python.sh" </dev/null | tail -n 1)
py="$venv/bin/python"
version=$("$py" -c 'import pyiceberg; print(pyiceberg.__version__)')

# --- the sdist, downloaded once ------------------------------------------------
src_root="$cache/pyiceberg-src"
tarball="$src_root/pyiceberg-$version.tar.gz"
mkdir -p "$src_root"
if ! tar -tzf "$tarball" >/dev/null 2>&1; then
  echo "$suite: downloading the pyiceberg $version sdist (first run only)" >&2
  tmp=$(mktemp -d "$src_root/.dl.XXXXXX")
  PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    "$py" -m pip download --quiet --no-binary pyiceberg --no-deps -d "$tmp" "pyiceberg==$version" >&2
  mv "$tmp/pyiceberg-$version.tar.gz" "$tarball"
  rm -rf "$tmp"
fi

src="$src_root/pyiceberg-$version"
rm -rf "$src"
tar -xzf "$tarball" -C "$src_root"
test_file="tests/integration/test_catalog.py"
[[ -f $src/$test_file ]] || { echo "$suite: $test_file is not in the pyiceberg $version sdist" >&2; exit 1; }

# Point the hard-wired rest_catalog fixture at TARN_URI (the module imports os).
sed -i 's|RestCatalog("rest", uri="http://localhost:8181")|RestCatalog("rest", uri=os.environ["TARN_URI"])|' "$src/$test_file"
# test_rest_custom_namespace_separator asserts that the server configures "." as
# its namespace separator, as Iceberg's Java test fixture does; that is a server
# option, and Tarn keeps the spec's default (%1F), under which namespace levels
# may themselves contain dots. Marked skipped with that reason.
sed -i 's|^def test_rest_custom_namespace_separator(|@pytest.mark.skip(reason="server option: Tarn keeps the spec default namespace separator %1F where the Java fixture sets a dot")\ndef test_rest_custom_namespace_separator(|' "$src/$test_file"
select="rest_test_catalog or test_rest_"
if ! grep -q 'uri=os.environ\["TARN_URI"\]' "$src/$test_file"; then
  echo "$suite: could not repoint the rest_catalog fixture; running only rest_test_catalog tests" >&2
  select="rest_test_catalog"
fi

# --- run -------------------------------------------------------------------------
run_dir="${TARN_RUN_DIR:-}"
[[ -n $run_dir ]] || run_dir=$(mktemp -d "${TMPDIR:-/tmp}/tarn-$suite.XXXXXX")
mkdir -p "$run_dir"
junit="$run_dir/$suite-junit.xml"
rm -f "$junit"

export PYICEBERG_TEST_CATALOG=tarn PYICEBERG_CATALOG__TARN__TYPE=rest PYICEBERG_CATALOG__TARN__URI="$TARN_URI"
[[ -n ${TARN_TOKEN:-} ]] && export PYICEBERG_CATALOG__TARN__TOKEN="$TARN_TOKEN"

echo "$suite: pyiceberg $version $test_file against $TARN_URI" >&2
rc=0
(cd "$src" && PYTHONDONTWRITEBYTECODE=1 timeout -k 15 "${TARN_PYICEBERG_TIMEOUT:-900}" \
  "$py" -m pytest "$test_file" -k "$select" -p no:cacheprovider -o junit_suite_name="$suite" \
  --junitxml="$junit" -ra </dev/null) || rc=$?
echo "$suite: pytest exited $rc; JUnit XML: $junit" >&2

reports=()
[[ -s $junit ]] && reports+=("$junit")
report_rc=0
"$py" "$repo/conformance/junit_report.py" --suite "$suite" --version "$version" \
  --out "$repo/conformance/results/$suite.json" "${reports[@]}" || report_rc=$?
if [[ $report_rc != 0 || $rc != 0 ]]; then
  exit 1
fi
