#!/usr/bin/env bash
# The rck suite (Apache Iceberg's REST Compatibility Kit, same flags:
# conformance/rck/tarn.properties) against a Tarn in --auth oauth2 mode:
# conformance/run starts it with a root credential (./server says oauth2;
# ./warehouse is the rck suite's /tmp) and exports TARN_CREDENTIAL=id:secret.
# The RCK's catalog client gets it as `credential` through CATALOG_CREDENTIAL
# (an environment variable, so the secret is not on the JVM's command line)
# and fetches its token from Tarn's /oauth/tokens (`oauth2-server-uri`, the
# endpoint outside the spec's deprecated /v1/oauth/tokens).
#
#   conformance/run rck-oauth2
#
# Out: conformance/results/rck-oauth2.json; last stdout line
#      `rck-oauth2: N passed, M failed, K skipped`; exit 1 on failures.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
: "${TARN_URI:?set TARN_URI (conformance/run sets it)}"
[[ -n ${TARN_CREDENTIAL:-} ]] || { echo "rck-oauth2: TARN_CREDENTIAL is not set (conformance/run sets it)" >&2; exit 1; }
echo "rck-oauth2: credential=${TARN_CREDENTIAL%%:*}:***" >&2
export CATALOG_CREDENTIAL=$TARN_CREDENTIAL CATALOG_OAUTH2__SERVER__URI="${TARN_URI%/}/oauth/tokens"
# shellcheck source=../lib/rck.sh
. "$repo/conformance/lib/rck.sh"
run_rck_suite rck-oauth2
