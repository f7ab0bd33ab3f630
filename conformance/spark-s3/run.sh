#!/usr/bin/env bash
# Hold a Tarn with an S3 warehouse (moto, started by conformance/run: this
# folder's `server` file says `s3`) against Spark with Iceberg's S3FileIO
# and no AWS keys of its own: one catalog reads with vended credentials,
# another writes with remote signing.
#
#   conformance/run spark-s3
#
# Env in:  TARN_URI, TARN_WAREHOUSE (s3://...), TARN_S3_TEST_ENDPOINT
# Out:     conformance/results/spark-s3.json; last stdout line
#          `spark-s3: N passed, M failed, K skipped`
# Setup:   the venv and runtime jar of conformance/spark (see its run.sh),
#          plus org.apache.iceberg:iceberg-aws-bundle (same version) in
#          "$HOME/.cache/tarn/spark/jars", fetched once with Maven.
set -euo pipefail

# Spark's S3FileIO gets nothing from the environment: no keys, no profile,
# no instance metadata.
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_PROFILE
export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_EC2_METADATA_DISABLED=true
# shellcheck source=../lib/spark.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/spark.sh"
run_spark_suite spark-s3 "(S3FileIO)" iceberg-aws-bundle
