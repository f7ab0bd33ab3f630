#!/usr/bin/env bash
# Run Apache Iceberg's REST Compatibility Kit against a running REST catalog
# (conformance/lib/rck.sh has the env it reads: RCK_PROPERTIES, RCK_OPTS,
# RCK_ARGS, RCK_VERBOSE, CATALOG_*).
#
#   TARN_URI=http://127.0.0.1:8181 [TARN_WAREHOUSE=file:///...] conformance/rck/run.sh
#
# conformance/run starts its Tarn with the warehouse in ./warehouse (the RCK
# asks for locations under /tmp) and the flags in ./tarn.properties.
# Out: conformance/results/rck.json; last stdout line
#      `rck: N passed, M failed, K skipped`; exit 1 on failures.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=../lib/rck.sh
. "$repo/conformance/lib/rck.sh"
run_rck_suite rck
