#!/usr/bin/env python3
"""read-glue.py — read a table Tarn published to AWS Glue twice, with
pyiceberg's GlueCatalog (the table Glue points at) and with pyiceberg's
REST catalog through Tarn, and print both as one JSON object on stdout, so
that a test can compare what each reader sees.

Usage: <venv>/bin/python scripts/read-glue.py GLUE_ENDPOINT GLUE_DB.GLUE_TABLE TARN_URI NAMESPACE.TABLE ORDER_COLUMN

GLUE_ENDPOINT is a Glue endpoint (moto's, http://127.0.0.1:PORT); the
credentials and region come from the environment (AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_REGION), as boto3 reads them. Output:
{"glue": {"metadata_location": ..., "rows": [...]}, "tarn": {...}}, rows
ordered by ORDER_COLUMN, each a JSON object of the user columns (_kafka
left out), values as pyarrow's to_pylist gives them (str() for what JSON
cannot hold). The venv is scripts/setup-python.sh's with
TARN_REQUIREMENTS=scripts/requirements-glue.txt.
"""

from __future__ import annotations

import json
import os
import sys

from pyiceberg.catalog.glue import GlueCatalog
from pyiceberg.catalog.rest import RestCatalog


def rows(tbl, order):
    arrow = tbl.scan().to_arrow()
    cols = [c for c in arrow.column_names if c != "_kafka"]
    out = arrow.select(cols).sort_by(order).to_pylist()
    return json.loads(json.dumps(out, default=str))


def main() -> None:
    glue_endpoint, glue_name, tarn_uri, tarn_name, order = sys.argv[1:6]
    glue = GlueCatalog(
        "glue",
        **{
            "glue.endpoint": glue_endpoint,
            "glue.region": os.environ.get("AWS_REGION", "us-east-1"),
        },
    )
    g = glue.load_table(glue_name)
    rest = RestCatalog("tarn", uri=tarn_uri)
    r = rest.load_table(tarn_name)
    json.dump(
        {
            "glue": {"metadata_location": g.metadata_location, "rows": rows(g, order)},
            "tarn": {"metadata_location": r.metadata_location, "rows": rows(r, order)},
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()
