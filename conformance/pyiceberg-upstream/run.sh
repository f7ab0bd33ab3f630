#!/usr/bin/env bash
# Suite "pyiceberg-upstream" for conformance/run: pyiceberg's own
# tests/integration/test_catalog.py against TARN_URI (see
# conformance/pyiceberg/run_upstream.sh).
exec "$(dirname "$0")/../pyiceberg/run_upstream.sh" "$@"
