#!/usr/bin/env python3
"""read-table.py — read a table through Tarn with pyiceberg and with DuckDB,
and print what each saw as one JSON object on stdout.

Usage: <venv>/bin/python scripts/read-table.py URI NAMESPACE.TABLE [SUM_COLUMN...]
       <venv>/bin/python scripts/read-table.py URI NAMESPACE.TABLE --rows COLUMN...

For each engine: the row count, the sum of every SUM_COLUMN, and the number
of (_kafka.partition, _kafka.offset) pairs that occur more than once (a
duplicated Kafka record) — the checks the ingest end-to-end tests make
against testdata/answers.json. pyiceberg scans the table to Arrow;
DuckDB (iceberg extension from the venv's duckdb-ext wheels, never
downloaded) attaches Tarn as an Iceberg REST catalog. The venv is
scripts/setup-python.sh's.

With --rows, each engine instead returns every row of the named columns,
sorted: the upsert tests compare a table with its source row by row.
"""

from __future__ import annotations

import json
import sys

import duckdb
import duckdb_ext
import pyarrow.compute as pc
from pyiceberg.catalog.rest import RestCatalog


def with_pyiceberg(uri: str, ident: str, cols: list[str]) -> dict:
    t = RestCatalog("tarn", uri=uri).load_table(ident)
    tbl = t.scan().to_arrow()
    kafka = tbl.column("_kafka").combine_chunks()
    part = pc.struct_field(kafka, "partition")
    off = pc.struct_field(kafka, "offset")
    pairs = {}
    for p, o in zip(part.to_pylist(), off.to_pylist()):
        pairs[(p, o)] = pairs.get((p, o), 0) + 1
    out = {"rows": tbl.num_rows, "duplicates": sum(1 for n in pairs.values() if n > 1)}
    for c in cols:
        out["sum_" + c] = pc.sum(tbl.column(c)).as_py() or 0
    return out


def with_duckdb(uri: str, ident: str, cols: list[str]) -> dict:
    con = duckdb_ext.init(duckdb.connect())
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("LOAD iceberg")
    con.execute(f"ATTACH 'default' AS tarn (TYPE iceberg, ENDPOINT '{uri}', AUTHORIZATION_TYPE 'none')")
    ns, name = ident.rsplit(".", 1)
    q = f'tarn."{ns}"."{name}"'
    sums = "".join(f', coalesce(sum("{c}"), 0)' for c in cols)
    row = con.execute(f"SELECT count(*){sums} FROM {q}").fetchone()
    dups = con.execute(
        f"SELECT count(*) FROM (SELECT _kafka.partition, _kafka.offset FROM {q} GROUP BY 1, 2 HAVING count(*) > 1)"
    ).fetchone()[0]
    out = {"rows": row[0], "duplicates": dups}
    for i, c in enumerate(cols):
        out["sum_" + c] = int(row[1 + i])
    con.close()
    return out


def rows_with_pyiceberg(uri: str, ident: str, cols: list[str]) -> list:
    tbl = RestCatalog("tarn", uri=uri).load_table(ident).scan(selected_fields=tuple(cols)).to_arrow()
    return sorted(zip(*(tbl.column(c).to_pylist() for c in cols)))


def rows_with_duckdb(uri: str, ident: str, cols: list[str]) -> list:
    con = duckdb_ext.init(duckdb.connect())
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("LOAD iceberg")
    con.execute(f"ATTACH 'default' AS tarn (TYPE iceberg, ENDPOINT '{uri}', AUTHORIZATION_TYPE 'none')")
    ns, name = ident.rsplit(".", 1)
    sel = ", ".join(f'"{c}"' for c in cols)
    rows = con.execute(f'SELECT {sel} FROM tarn."{ns}"."{name}"').fetchall()
    con.close()
    return sorted(rows)


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    uri, ident, cols = sys.argv[1], sys.argv[2], sys.argv[3:]
    if cols[:1] == ["--rows"]:
        cols = cols[1:]
        print(json.dumps({"pyiceberg": rows_with_pyiceberg(uri, ident, cols), "duckdb": rows_with_duckdb(uri, ident, cols)}))
        return
    print(json.dumps({"pyiceberg": with_pyiceberg(uri, ident, cols), "duckdb": with_duckdb(uri, ident, cols)}))


if __name__ == "__main__":
    main()
