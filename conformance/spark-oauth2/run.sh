#!/usr/bin/env bash
# Hold a Tarn in --auth oauth2 mode (conformance/run starts it with a root
# credential: this folder's `server` file says `oauth2`) against Spark with
# Iceberg's REST catalog configured with `credential=id:secret`: Spark
# fetches its token from Tarn's /v1/oauth/tokens. The tests create a
# principal with a role and grants through the management API and check
# what Spark may and may not do with its credential.
#
#   conformance/run spark-oauth2
#
# Env in:  TARN_URI, TARN_CREDENTIAL (root's id:secret)
# Out:     conformance/results/spark-oauth2.json; last stdout line
#          `spark-oauth2: N passed, M failed, K skipped`
# Setup:   the venv and runtime jar of conformance/spark (see its run.sh),
#          cached in "$HOME/.cache/tarn".
set -euo pipefail

# shellcheck source=../lib/spark.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/spark.sh"
run_spark_suite spark-oauth2 ""
