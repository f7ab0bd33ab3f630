# Apache Iceberg's REST Compatibility Kit (RESTCompatibilityKitCatalogTests and
# RESTCompatibilityKitViewCatalogTests) against a running REST catalog; sourced
# by the RCK suites' run.sh (rck, rck-oauth2); needs $repo set to the
# repository root.
#
# run_rck_suite SUITE
#
# Env in:
#   TARN_URI        the catalog (required)
#   TARN_WAREHOUSE  sent as the `warehouse` catalog property. The RCK's Java
#                   client writes manifests and moves metadata files itself, so
#                   the server's warehouse must be a file:// path on this
#                   machine (or storage the client can reach).
#   RCK_PROPERTIES  key=value file of RCK flags describing the server
#                   (default conformance/rck/tarn.properties; /dev/null = RCK defaults)
#   RCK_OPTS        space-separated key=value RCK/catalog properties added after
#                   it, e.g. "supports-names-with-dot=true"
#     Each property goes to the JVM as -Drck.key=value and -Dkey=value, like
#     Iceberg's gradle `test` task does for -Drck.* (the catalog client reads
#     the unprefixed ones, the RCK flags the rck.* ones). They are on the
#     command line: put secrets in CATALOG_* instead.
#   CATALOG_*       catalog properties the RCK reads from its environment
#                   (RCKUtils.environmentCatalogConfig: CATALOG_ dropped, `__`
#                   becomes `-`, `_` becomes `.`, lower-cased; e.g.
#                   CATALOG_CREDENTIAL=id:secret is `credential`); -D wins over them.
#   RCK_ARGS        extra JUnit console launcher arguments, e.g.
#                   "--include-methodname .*Namespace.*"
#   RCK_VERBOSE=1   stream the launcher's output (otherwise kept in a log file)
#
# Writes conformance/results/SUITE.json, JUnit XML to a temp dir (printed),
# failing tests to stderr, and `SUITE: N passed, M failed, K skipped` as the
# last stdout line; returns non-zero on failures or when no report was written.
run_rck_suite() {
  local suite=$1
  : "${TARN_URI:?set TARN_URI, e.g. http://127.0.0.1:8181}"
  local rck_dir version java work rck_properties kv rc=0 start
  rck_dir=$("$repo/scripts/setup-rck.sh")
  version=$(basename "$rck_dir")
  java="${JAVA_HOME:+$JAVA_HOME/bin/}java"
  work=$(mktemp -d "${TMPDIR:-/tmp}/tarn-$suite.XXXXXX")

  local props=(-Drck.local=false "-Drck.uri=$TARN_URI" "-Duri=$TARN_URI")
  if [[ -n ${TARN_WAREHOUSE:-} ]]; then
    props+=("-Drck.warehouse=$TARN_WAREHOUSE" "-Dwarehouse=$TARN_WAREHOUSE")
  fi
  rck_properties="${RCK_PROPERTIES:-$repo/conformance/rck/tarn.properties}"
  for kv in $(grep -v '^[[:space:]]*\(#\|$\)' "$rck_properties") ${RCK_OPTS:-}; do
    props+=("-Drck.$kv" "-D$kv")
  done

  echo "$suite: Iceberg $version RCK against $TARN_URI, flags from $rck_properties${RCK_OPTS:+ and RCK_OPTS}" \
    "(reports in $work)" >&2

  local launcher=(
    "$java" -Xmx1g "${props[@]}" -cp "$rck_dir/lib/*"
    org.junit.platform.console.ConsoleLauncher execute
    --disable-banner --disable-ansi-colors --details=tree --include-engine=junit-jupiter
    --reports-dir="$work/reports"
    --select-class=org.apache.iceberg.rest.RESTCompatibilityKitCatalogTests
    --select-class=org.apache.iceberg.rest.RESTCompatibilityKitViewCatalogTests
  )
  # shellcheck disable=SC2206 # RCK_ARGS is meant to be split into words
  launcher+=(${RCK_ARGS:-})

  start=$SECONDS
  if [[ ${RCK_VERBOSE:-} == 1 ]]; then
    (cd "$work" && "${launcher[@]}") 2>&1 | tee "$work/console.log" >&2 || rc=$?
  else
    (cd "$work" && "${launcher[@]}") >"$work/console.log" 2>&1 || rc=$?
  fi
  echo "$suite: launcher exited $rc after $((SECONDS - start))s (log: $work/console.log)" >&2

  local reports=()
  shopt -s nullglob
  reports=("$work"/reports/TEST-*.xml)
  shopt -u nullglob
  if [[ ${#reports[@]} -eq 0 ]]; then
    tail -n 40 "$work/console.log" >&2
  elif grep -q "Namespaces list should not contain" "${reports[@]}"; then
    echo "$suite: the catalog must start without namespaces ns, newdb, ns1, ns2, other_ns" \
      "(the RCK leaves some behind): restart the server on an empty catalog" >&2
  fi
  mkdir -p "$repo/conformance/results"
  python3 "$repo/conformance/junit_report.py" --suite "$suite" --version "$version" \
    --out "$repo/conformance/results/$suite.json" "${reports[@]}"
}
