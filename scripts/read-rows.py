#!/usr/bin/env python3
"""read-rows.py — read every row of a table through Tarn with pyiceberg and
with DuckDB, and print both as one JSON object on stdout, so that a test
can compare exact values as each engine reads them.

Usage: <venv>/bin/python scripts/read-rows.py URI NAMESPACE.TABLE ORDER_COLUMN

Output: {"pyiceberg": [row, ...], "duckdb": [row, ...]}, rows ordered by
ORDER_COLUMN, each a JSON object of the user columns (_kafka left out).
Values are written in one canonical form whichever engine read them:
dates "YYYY-MM-DD"; times "HH:MM:SS.ffffff"; timestamps
"YYYY-MM-DDTHH:MM:SS.ffffff", with "+00:00" for timestamptz (in UTC);
decimals in plain notation with the column's scale ("1234.56"); uuids in
canonical text; binary as lowercase hex; structs as objects; maps as
objects (string keys) or [[key, value], ...] sorted by key text (other
keys); lists as arrays; numbers and strings as JSON's own. pyiceberg scans
to Arrow; DuckDB (iceberg extension from the venv's duckdb-ext wheels,
never downloaded; session time zone UTC) attaches Tarn as an Iceberg REST
catalog and returns its result as Arrow too; both are turned into Python
values by pyarrow. The venv is scripts/setup-python.sh's.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import sys
import uuid

import duckdb
import duckdb_ext
import pyarrow as pa
from pyiceberg.catalog.rest import RestCatalog


def canon(v, typ: pa.DataType):
    """v, a value of Arrow type typ as pyarrow's to_pylist gives it, in the
    canonical form."""
    if v is None:
        return None
    if pa.types.is_map(typ):
        # pyarrow reads a map as a list of (key, value) tuples.
        entries = [(canon(k, typ.key_type), canon(x, typ.item_type)) for k, x in v]
        if pa.types.is_string(typ.key_type) or pa.types.is_large_string(typ.key_type):
            return dict(entries)
        return sorted(([k, x] for k, x in entries), key=lambda e: json.dumps(e[0]))
    if pa.types.is_struct(typ):
        return {f.name: canon(v.get(f.name), f.type) for f in typ}
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        return [canon(x, typ.value_type) for x in v]
    if isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(dt.timezone.utc)
        return v.isoformat(timespec="microseconds")
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, dt.time):
        return v.isoformat(timespec="microseconds")
    if isinstance(v, decimal.Decimal):
        return format(v, "f")
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    raise TypeError(f"read-rows.py: no canonical form for {typ} value {v!r}")


def rows(tbl: pa.Table, order: str) -> list[dict]:
    types = {f.name: f.type for f in tbl.schema}
    out = [{k: canon(v, types[k]) for k, v in r.items() if k != "_kafka"} for r in tbl.to_pylist()]
    return sorted(out, key=lambda r: r[order])


def with_pyiceberg(uri: str, ident: str, order: str) -> list[dict]:
    t = RestCatalog("tarn", uri=uri).load_table(ident)
    return rows(t.scan().to_arrow(), order)


def with_duckdb(uri: str, ident: str, order: str) -> list[dict]:
    con = duckdb_ext.init(duckdb.connect())
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET TimeZone = 'UTC'")
    con.execute("LOAD iceberg")
    con.execute(f"ATTACH 'default' AS tarn (TYPE iceberg, ENDPOINT '{uri}', AUTHORIZATION_TYPE 'none')")
    ns, name = ident.rsplit(".", 1)
    # Through Arrow, as pyiceberg reads: DuckDB's own Python values need
    # pytz for TIMESTAMPTZ, which the venv does not have.
    tbl = con.execute(f'SELECT * FROM tarn."{ns}"."{name}"').fetch_arrow_table()
    out = rows(tbl, order)
    con.close()
    return out


def main() -> None:
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    uri, ident, order = sys.argv[1:]
    print(json.dumps({"pyiceberg": with_pyiceberg(uri, ident, order), "duckdb": with_duckdb(uri, ident, order)}))


if __name__ == "__main__":
    main()
