"""Schemathesis hooks for conformance/schemathesis/run.sh (SCHEMATHESIS_HOOKS).

Corrections of the pinned OpenAPI document's own defects, applied in memory
to the document schemathesis loads (spec/rest-catalog-open-api.yaml itself is
never changed), and one rule of the document schemathesis does not follow as
a client. Each is listed, with why, in conformance/schemathesis/README.md.
Nothing here relaxes a check on a response that the document describes
correctly.
"""
import sys
import uuid

import schemathesis

ERROR_MODEL = "#/components/schemas/ErrorModel"
ERROR_RESPONSE = "#/components/schemas/IcebergErrorResponse"

# The error responses corrected (METHOD path status), printed to stderr.
CORRECTED = []


@schemathesis.hook
def before_load_schema(context, raw_schema):
    # 1. Error bodies: the document says every non-2xx response is the
    #    IcebergErrorResponse wrapper {"error": ErrorModel}
    #    (components/schemas/IcebergErrorResponse: "JSON wrapper for all
    #    error responses (non-2xx)"), and the view operations' own 404/409
    #    examples (NoSuchNamespaceError, ViewAlreadyExistsError, ...) are
    #    wrapped, yet those operations' response schemas point at ErrorModel
    #    itself. Every client (Java's ErrorHandlers, pyiceberg, iceberg-go)
    #    parses the wrapper. Point those schemas at the wrapper.
    for path, item in raw_schema.get("paths", {}).items():
        for method, op in item.items():
            if not isinstance(op, dict):
                continue
            for status, rsp in op.get("responses", {}).items():
                if not str(status)[:1] in "45" or not isinstance(rsp, dict):
                    continue
                for media in rsp.get("content", {}).values():
                    if media.get("schema", {}).get("$ref") == ERROR_MODEL:
                        media["schema"] = {"$ref": ERROR_RESPONSE}
                        CORRECTED.append("%s %s %s" % (method.upper(), path, status))
    print("schemathesis hooks: error schemas pointed at IcebergErrorResponse: %s" % "; ".join(CORRECTED), file=sys.stderr)


@schemathesis.hook
def before_call(context, case, kwargs):
    # 2. Idempotency-Key: the document requires a client to use a new key for
    #    every different operation ("MUST generate a new key for a different
    #    operation"), but schemathesis sends the parameter's example key
    #    (017F22E2-...) with most requests, so after the first one Tarn
    #    answers 422 (key reused on another route) or replays the stored
    #    response, and the handlers are never reached. Called before every
    #    request of every phase: a well-formed key is replaced by a fresh one;
    #    a malformed one (negative tests) is sent as generated.
    for name in list(case.headers or {}):
        if name.lower() != "idempotency-key":
            continue
        try:
            uuid.UUID(str(case.headers[name]))
        except ValueError:
            continue
        case.headers[name] = str(uuid.uuid4())
