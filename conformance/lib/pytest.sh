# Shared tail of the pytest-based suites' run.sh (pyiceberg, duckdb, spark),
# sourced by them; needs $repo set to the repository root.

# run_pytest_suite SUITE VERSION PYTHON TEST_DIR RUN_DIR TIMEOUT_SECONDS
#
# Runs pytest on TEST_DIR (its pytest.ini makes it the rootdir; no
# .pytest_cache or __pycache__ in the work tree) from RUN_DIR with a timeout
# (pyiceberg sets no HTTP timeout, so a hung server would hang the run),
# writes RUN_DIR/SUITE-junit.xml, turns it into conformance/results/SUITE.json
# and prints `SUITE: N passed, M failed, K skipped` (conformance/junit_report.py).
# Returns non-zero when a test failed or pytest itself did not complete
# (exit 2-5: interrupted, internal error, usage error, no tests; 124/137: timeout).
run_pytest_suite() {
  local suite=$1 version=$2 py=$3 tests=$4 run_dir=$5 timeout=$6
  local junit="$run_dir/$suite-junit.xml" rc=0 report_rc=0 start=$SECONDS
  local reports=()
  rm -f "$junit"
  (cd "$run_dir" && PYTHONDONTWRITEBYTECODE=1 timeout -k 15 "$timeout" \
    "$py" -m pytest "$tests" -p no:cacheprovider -c "$tests/pytest.ini" --rootdir "$tests" \
    --junitxml="$junit" </dev/null >&2) || rc=$?
  echo "$suite: pytest exited $rc after $((SECONDS - start))s; JUnit XML: $junit" >&2
  [[ -s $junit ]] && reports+=("$junit")
  "$py" "$repo/conformance/junit_report.py" --suite "$suite" --version "$version" \
    --out "$repo/conformance/results/$suite.json" "${reports[@]}" || report_rc=$?
  [[ $report_rc == 0 && $rc == 0 ]]
}
