#!/usr/bin/env python3
"""read-unity.py — read a table Tarn published to Unity Catalog (the unity
publishing target, docs/publish.md) as a Unity client and a Delta reader
do, and through Tarn, and print all of it as one JSON object on stdout, so
that a test can compare what each reader sees.

Usage: <venv>/bin/python scripts/read-unity.py UNITY_URI TOKEN CATALOG.SCHEMA.TABLE TARN_URI NAMESPACE.TABLE ORDER_COLUMN

1. Unity's own Python client (unitycatalog-client, generated from Unity's
   OpenAPI document: its pydantic models validate each answer) lists the
   tables of CATALOG.SCHEMA (the table must be among them) and gets the
   table: type, format, storage location, columns.
2. delta-rs (deltalake, through DataFusion: Tarn's topic tables carry the
   columnMapping reader feature, which its pyarrow path refuses) reads the
   rows of the Delta table at the storage location Unity returned.
3. pyiceberg's REST catalog reads the same table through Tarn.

TOKEN is sent as "Authorization: Bearer TOKEN" ("-" for none). Output:
{"unity": {"listed": [...names], "table_type", "data_source_format",
"storage_location", "columns": [{"name", "type_name", "type_text",
"nullable", "position"}]}, "delta": {"rows": [...]}, "tarn": {"rows":
[...]}}, rows ordered by ORDER_COLUMN, each a JSON object of the columns
that are not _kafka, as pyarrow's to_pylist gives them (str() for what
JSON cannot hold). The venv is scripts/setup-python.sh's with
TARN_REQUIREMENTS=scripts/requirements-unity.txt.
"""

from __future__ import annotations

import asyncio
import json
import sys

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder
from pyiceberg.catalog.rest import RestCatalog
from unitycatalog.client import ApiClient, Configuration, TablesApi


def rows(arrow: pa.Table, order: str) -> list:
    # Sorted in Python: DataFusion answers strings as string_view, which
    # pyarrow's sort (take) has no kernel for.
    cols = [c for c in arrow.column_names if c != "_kafka"]
    out = sorted(arrow.select(cols).to_pylist(), key=lambda r: r[order])
    return json.loads(json.dumps(out, default=str))


async def unity(uri: str, token: str, full: str) -> dict:
    catalog, schema, _ = full.split(".")
    cfg = Configuration(host=uri.rstrip("/") + "/api/2.1/unity-catalog")
    header = {} if token == "-" else {"header_name": "Authorization", "header_value": "Bearer " + token}
    async with ApiClient(cfg, **header) as api:
        tables = TablesApi(api)
        listed = await tables.list_tables(catalog_name=catalog, schema_name=schema)
        info = await tables.get_table(full_name=full)
    return {
        "listed": [f"{t.catalog_name}.{t.schema_name}.{t.name}" for t in listed.tables or []],
        "table_type": info.table_type.value,
        "data_source_format": info.data_source_format.value,
        "storage_location": info.storage_location,
        "columns": [
            {"name": c.name, "type_name": c.type_name.value, "type_text": c.type_text, "nullable": c.nullable, "position": c.position}
            for c in info.columns or []
        ],
    }


def main() -> None:
    uri, token, full, tarn_uri, tarn_name, order = sys.argv[1:7]
    u = asyncio.run(unity(uri, token, full))
    dt = DeltaTable(u["storage_location"])
    delta = QueryBuilder().register("t", dt).execute("SELECT * FROM t").read_all()
    tarn = RestCatalog("tarn", uri=tarn_uri).load_table(tarn_name).scan().to_arrow()
    json.dump({"unity": u, "delta": {"version": dt.version(), "rows": rows(pa.table(delta), order)},
               "tarn": {"rows": rows(tarn, order)}}, sys.stdout)


if __name__ == "__main__":
    main()
