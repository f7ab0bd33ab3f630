#!/usr/bin/env bash
# Run Apache Iceberg's REST Compatibility Kit (RESTCompatibilityKitCatalogTests and
# RESTCompatibilityKitViewCatalogTests) against a running REST catalog.
#
#   TARN_URI=http://127.0.0.1:8181 [TARN_WAREHOUSE=file:///...] conformance/rck/run.sh
#
# The RCK's Java client writes manifests and moves metadata files itself, so the
# server's warehouse must be a file:// path on this machine (or storage the client
# can reach). TARN_WAREHOUSE is sent as the `warehouse` catalog property.
# Optional env:
#   RCK_PROPERTIES  key=value file of RCK flags describing the server
#                   (default conformance/rck/tarn.properties; /dev/null = RCK defaults)
#   RCK_OPTS  space-separated key=value RCK/catalog properties added after it, e.g.
#             "supports-names-with-dot=true credential=id:secret"
#   Each property goes to the JVM as -Drck.key=value and -Dkey=value, like
#   Iceberg's gradle `test` task does for -Drck.* (the catalog client reads the
#   unprefixed ones, the RCK flags the rck.* ones).
#  RCK_ARGS   extra JUnit console launcher arguments, e.g.
#             "--include-methodname .*Namespace.*"
#  RCK_VERBOSE=1  stream the launcher's output (it is otherwise kept in a log file)
# Writes conformance/results/rck.json, JUnit XML to a temp dir (printed), failing tests
# to stderr, and `rck: N passed, M failed, K skipped` as the last line; exit 1 on failures.
set -euo pipefail

: "${TARN_URI:?set TARN_URI, e.g. http://127.0.0.1:8181}"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

rck_dir=$("$repo/scripts/setup-rck.sh")
version=$(basename "$rck_dir")
java="${JAVA_HOME:+$JAVA_HOME/bin/}java"

work=$(mktemp -d "${TMPDIR:-/tmp}/tarn-rck.XXXXXX")

props=(-Drck.local=false "-Drck.uri=$TARN_URI" "-Duri=$TARN_URI")
if [[ -n ${TARN_WAREHOUSE:-} ]]; then
  props+=("-Drck.warehouse=$TARN_WAREHOUSE" "-Dwarehouse=$TARN_WAREHOUSE")
fi
rck_properties="${RCK_PROPERTIES:-$here/tarn.properties}"
for kv in $(grep -v '^[[:space:]]*\(#\|$\)' "$rck_properties") ${RCK_OPTS:-}; do
  props+=("-Drck.$kv" "-D$kv")
done

echo "rck: Iceberg $version RCK against $TARN_URI, flags from $rck_properties${RCK_OPTS:+ and RCK_OPTS} (reports in $work)" >&2

launcher=(
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
rc=0
if [[ ${RCK_VERBOSE:-} == 1 ]]; then
  (cd "$work" && "${launcher[@]}") 2>&1 | tee "$work/console.log" || rc=$?
else
  (cd "$work" && "${launcher[@]}") >"$work/console.log" 2>&1 || rc=$?
fi
echo "rck: launcher exited $rc after $((SECONDS - start))s (log: $work/console.log)" >&2

shopt -s nullglob
reports=("$work"/reports/TEST-*.xml)
if [[ ${#reports[@]} -eq 0 ]]; then
  tail -n 40 "$work/console.log" >&2
elif grep -q "Namespaces list should not contain" "${reports[@]}"; then
  echo "rck: the catalog must start without namespaces ns, newdb, ns1, ns2, other_ns" \
    "(the RCK leaves some behind): restart the server on an empty catalog" >&2
fi
mkdir -p "$repo/conformance/results"
exec python3 "$repo/conformance/junit_report.py" --suite rck --version "$version" \
  --out "$repo/conformance/results/rck.json" "${reports[@]}"
