#!/usr/bin/env bash
# Hold a running Tarn against schemathesis (property-based API testing from
# the OpenAPI document): every operation of the pinned Iceberg REST document
# (spec/rest-catalog-open-api.yaml) gets generated requests, valid and
# invalid, in schemathesis' four phases (examples, coverage, fuzzing,
# stateful); each response must not be a 5xx (not_a_server_error) and must
# match the document's schema for its status (response_schema_conformance).
# The document's own defects are corrected in memory by hooks.py and listed
# in README.md beside this file.
#
#   TARN_URI=http://127.0.0.1:8181 conformance/schemathesis/run.sh
#
# Env in:  TARN_URI  the catalog's base URI (required)
#          TARN_SCHEMATHESIS_MAX_EXAMPLES  examples per operation and phase
#                    (default: schemathesis.toml's, 10)
#          TARN_SCHEMATHESIS_MAX_TIME  the run's time budget in seconds
#                    (default: schemathesis.toml's, 240)
#          TARN_SCHEMATHESIS_SEED  the run's seed (default 13, so CI runs are
#                    reproducible; any failure prints its `curl` reproducer)
#          TARN_SCHEMATHESIS_TIMEOUT  seconds after which the run is killed (default
#                    600; a safety net behind the time budget)
#          TARN_RUN_DIR  where the reports go (default a temp dir)
# Out:     conformance/results/schemathesis.json (conformance/junit_report.py; one
#          test per operation); the JUnit XML and schemathesis' NDJSON event log
#          in $TARN_RUN_DIR; last stdout line `schemathesis: N passed, M failed, K skipped`.
# Exit:    non-zero when an operation failed a check or schemathesis did not complete.
#
# Before the run, a few resources the document's examples name are created
# (namespaces accounting and accounting.tax, table accounting.tax.sales, view
# accounting.sales) so that generated requests reach existing objects and
# their 200 responses are checked too, not only 404s.
#
# The venv comes from scripts/setup-python.sh with this folder's
# requirements.txt ($HOME/.cache/tarn/venv-schemathesis-<python version>); nothing is
# downloaded on a warm run.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
suite=schemathesis
: "${TARN_URI:?TARN_URI must point at a running catalog, e.g. http://127.0.0.1:8181}"
mkdir -p "$repo/conformance/results"

# The interpreter: CPython 3.11.7 and 3.12.0-3.12.1 raise "SystemError: AST
# constructor recursion depth mismatch" from ast.parse under Hypothesis
# (CPython gh-106905, fixed in 3.11.8 and 3.12.2), which schemathesis reports as
# an error of the operation it was generating for. The first interpreter without
# that bug is used (TARN_PYTHON overrides), and the venv is named after its
# version so that a change of interpreter builds a fresh one.
fixed='import sys; v = sys.version_info[:3]; sys.exit(0 if (3, 11, 8) <= v < (3, 12) or v >= (3, 12, 2) else 1)'
if [[ -z ${TARN_PYTHON:-} ]]; then
  for cand in python3 python3.13 python3.12 python3.11 "$(pyenv root 2>/dev/null)"/versions/3.1[1-9]*/bin/python3; do
    if command -v "$cand" >/dev/null 2>&1 && "$cand" -c "$fixed" 2>/dev/null; then
      TARN_PYTHON=$(command -v "$cand")
      break
    fi
  done
  [[ -n ${TARN_PYTHON:-} ]] || echo "$suite: no Python >= 3.11.8 found; schemathesis may hit CPython gh-106905" >&2
fi
export TARN_PYTHON
pyver=$("${TARN_PYTHON:-python3}" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
venv=$(TARN_VENV="${TARN_SCHEMATHESIS_VENV:-${HOME:?}/.cache/tarn/venv-schemathesis-$pyver}" \
  TARN_REQUIREMENTS="$here/requirements.txt" TARN_VENV_PROBE='import schemathesis' \
  "$repo/scripts/setup-python.sh" </dev/null | tail -n 1)
py="$venv/bin/python"
version=$("$py" -c 'import importlib.metadata as m; print(m.version("schemathesis"))')

run_dir="${TARN_RUN_DIR:-}"
if [[ -z $run_dir ]]; then
  run_dir=$(mktemp -d "${TMPDIR:-/tmp}/tarn-schemathesis.XXXXXX")
fi
mkdir -p "$run_dir"

# Seed the objects the document's examples name (see above).
seed() { # METHOD PATH BODY: must answer 200
  local code
  code=$(curl -s -o "$run_dir/seed.out" -w '%{http_code}' -X "$1" -H 'Content-Type: application/json' -d "$3" "$TARN_URI$2")
  [[ $code == 200 ]] || { echo "$suite: seeding $1 $2 answered $code: $(cat "$run_dir/seed.out")" >&2; exit 1; }
}
schema='{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true},{"id":2,"name":"data","type":"string","required":false}]}'
seed POST /v1/default/namespaces '{"namespace":["accounting"]}'
seed POST /v1/default/namespaces '{"namespace":["accounting","tax"]}'
seed POST /v1/default/namespaces/accounting%1Ftax/tables '{"name":"sales","schema":'"$schema"'}'
seed POST /v1/default/namespaces/accounting/views '{"name":"sales","schema":'"$schema"',"view-version":{"version-id":1,"schema-id":0,"timestamp-ms":1700000000000,"summary":{"engine-name":"tarn"},"representations":[{"type":"sql","sql":"select 1 as id, '"'"'x'"'"' as data","dialect":"spark"}],"default-namespace":["accounting"]},"properties":{}}'

echo "$suite: schemathesis $version against $TARN_URI; reports in $run_dir" >&2
args=()
[[ -n ${TARN_SCHEMATHESIS_MAX_EXAMPLES:-} ]] && args+=(--max-examples "$TARN_SCHEMATHESIS_MAX_EXAMPLES")
[[ -n ${TARN_SCHEMATHESIS_MAX_TIME:-} ]] && args+=(--max-time "$TARN_SCHEMATHESIS_MAX_TIME")
junit="$run_dir/$suite-junit.xml"
rm -f "$junit"
rc=0 start=$SECONDS
# Run from the run dir: schemathesis keeps no state in the work tree
# (--generation-database none; its reports go to $run_dir).
(cd "$run_dir" && SCHEMATHESIS_HOOKS="$here/hooks.py" timeout -k 15 "${TARN_SCHEMATHESIS_TIMEOUT:-600}" \
  "$venv/bin/schemathesis" --config-file "$here/schemathesis.toml" run "$repo/spec/rest-catalog-open-api.yaml" \
  --url "$TARN_URI" --checks not_a_server_error,response_schema_conformance \
  --seed "${TARN_SCHEMATHESIS_SEED:-13}" --workers 2 --generation-database none --no-color \
  --report junit,ndjson --report-dir "$run_dir" --report-junit-path "$junit" "${args[@]}" \
  </dev/null >&2) || rc=$?
echo "$suite: schemathesis exited $rc after $((SECONDS - start))s; JUnit XML: $junit" >&2

reports=()
[[ -s $junit ]] && reports+=("$junit")
report_rc=0
"$py" "$repo/conformance/junit_report.py" --suite "$suite" --version "$version" \
  --out "$repo/conformance/results/$suite.json" "${reports[@]}" || report_rc=$?
[[ $report_rc == 0 && $rc == 0 ]]
