#!/usr/bin/env python3
"""read-published.py — read a table Tarn published to another catalog
twice, with pyiceberg through that catalog (the table it points at) and
with pyiceberg's REST catalog through Tarn, and print both as one JSON
object on stdout, so that a test can compare what each reader sees.

Usage: <venv>/bin/python scripts/read-published.py KIND TARGET TARGET_NAME TARN_URI NAMESPACE.TABLE ORDER_COLUMN

KIND is the target's type:
  glue  TARGET is a Glue endpoint (moto's, http://127.0.0.1:PORT), read
        with pyiceberg's GlueCatalog; the credentials and region come from
        the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
        AWS_REGION), as boto3 reads them. TARGET_NAME is GLUE_DB.GLUE_TABLE.
  rest  TARGET is an Iceberg REST catalog's URI, read with pyiceberg's
        RestCatalog. TARGET_NAME is NAMESPACE.TABLE there.
Output: {"target": {"metadata_location": ..., "rows": [...]}, "tarn":
{...}}, rows ordered by ORDER_COLUMN, each a JSON object of the user
columns (_kafka left out), values as pyarrow's to_pylist gives them (str()
for what JSON cannot hold). The venv is scripts/setup-python.sh's with
TARN_REQUIREMENTS=scripts/requirements-glue.txt.
"""

from __future__ import annotations

import json
import os
import sys

from pyiceberg.catalog.rest import RestCatalog


def rows(tbl, order):
    arrow = tbl.scan().to_arrow()
    cols = [c for c in arrow.column_names if c != "_kafka"]
    out = arrow.select(cols).sort_by(order).to_pylist()
    return json.loads(json.dumps(out, default=str))


def target_catalog(kind, target):
    if kind == "glue":
        from pyiceberg.catalog.glue import GlueCatalog

        return GlueCatalog(
            "glue",
            **{"glue.endpoint": target, "glue.region": os.environ.get("AWS_REGION", "us-east-1")},
        )
    if kind == "rest":
        return RestCatalog("target", uri=target)
    sys.exit(f"read-published.py: unknown KIND {kind!r} (want glue or rest)")


def main() -> None:
    kind, target, target_name, tarn_uri, tarn_name, order = sys.argv[1:7]
    g = target_catalog(kind, target).load_table(target_name)
    r = RestCatalog("tarn", uri=tarn_uri).load_table(tarn_name)
    json.dump(
        {
            "target": {"metadata_location": g.metadata_location, "rows": rows(g, order)},
            "tarn": {"metadata_location": r.metadata_location, "rows": rows(r, order)},
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()
