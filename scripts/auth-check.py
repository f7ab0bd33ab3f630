#!/usr/bin/env python3
"""auth-check.py — pyiceberg against Tarn in --auth oauth2 mode.

Usage: <venv>/bin/python scripts/auth-check.py URI (credential ID:SECRET | token TOKEN) NS FORBIDDEN_NS

Connects with pyiceberg's RestCatalog (credential: a token fetched from
URI's /v1/oauth/tokens; token: a bearer token, e.g. an external OIDC
provider's), creates NS.auth_check, appends rows 1, 2, 3, scans them back,
drops the table, and tries to create FORBIDDEN_NS.auth_check (with
AUTH_CHECK_SLEEP_SECONDS set it waits that long between the append and
the scan, to outlive its token). Prints one
JSON object: {"rows": 3, "sum": 6, "forbidden": true}. The venv is
scripts/setup-python.sh's.
"""

from __future__ import annotations

import json
import os
import sys
import time

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import ForbiddenError


def main() -> None:
    uri, mode, secret, ns, forbidden_ns = sys.argv[1:6]
    props = {"uri": uri, "credential" if mode == "credential" else "token": secret}
    cat = RestCatalog("tarn", **props)
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64())})
    t = cat.create_table(f"{ns}.auth_check", schema=data.schema)
    t.append(data)
    if wait := float(os.environ.get("AUTH_CHECK_SLEEP_SECONDS", "0")):
        # Outlive the token: pyiceberg gets a 401, fetches a new token
        # with its credential and retries.
        time.sleep(wait)
    got = cat.load_table(f"{ns}.auth_check").scan().to_arrow()
    out = {"rows": got.num_rows, "sum": pc.sum(got["id"]).as_py()}
    cat.drop_table(f"{ns}.auth_check")
    try:
        cat.create_table(f"{forbidden_ns}.auth_check", schema=data.schema)
        out["forbidden"] = False
    except ForbiddenError:
        out["forbidden"] = True
    print(json.dumps(out))


if __name__ == "__main__":
    main()
