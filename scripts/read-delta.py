#!/usr/bin/env python3
"""read-delta.py — read a Delta table (Tarn's Delta Lake output) with delta-rs
and with DuckDB's delta extension, and print what each saw as one JSON object
on stdout.

Usage: <venv>/bin/python scripts/read-delta.py DELTA_ROOT_URI [SUM_COLUMN...]
       (env READ_DELTA_VERSIONS="3,7,12": versions to time-travel to)

For each reader, at the table's latest version: the row count, the sum of
every SUM_COLUMN, and the number of (_kafka.partition, _kafka.offset) pairs
that occur more than once (a duplicated Kafka record). delta-rs reads through
DeltaTable + its DataFusion QueryBuilder (not to_pyarrow_table, which joins
absolute add paths onto the table root: delta-io/delta-rs#865; Tarn's adds
are absolute, see docs/delta.md);
DuckDB through delta_scan (extension from the venv's duckdb-ext-delta wheel,
loaded with duckdb_ext.init, never downloaded). Besides:
  "deltars": {"version", "protocol": [reader, writer], "history": n,
              "versions": {v: rows}}  (the time-travelled counts)
The venv is scripts/setup-python.sh's with TARN_REQUIREMENTS=
scripts/requirements-delta.txt (cmd/tarn/delta_e2e_test.go).
"""

from __future__ import annotations

import json
import os
import sys

import duckdb
import duckdb_ext
import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable, QueryBuilder


def query(dt: DeltaTable, sql: str):
    # execute() returns an arro3 table; pyarrow takes it over the Arrow
    # C stream interface.
    return pa.table(QueryBuilder().register("t", dt).execute(sql).read_all()).to_pylist()


def with_deltars(root: str, cols: list[str], versions: list[int]) -> dict:
    dt = DeltaTable(root)
    sums = "".join(f', coalesce(sum("{c}"), 0) AS "sum_{c}"' for c in cols)
    row = query(dt, f"SELECT count(*) AS rows{sums} FROM t")[0]
    dups = query(
        dt,
        "SELECT count(*) AS n FROM (SELECT t._kafka['partition'] AS p, t._kafka['offset'] AS o"
        " FROM t GROUP BY 1, 2 HAVING count(*) > 1)",
    )[0]["n"]
    out = {"rows": row["rows"], "duplicates": dups}
    for c in cols:
        out["sum_" + c] = int(row["sum_" + c])
    p = dt.protocol()
    out["version"] = dt.version()
    out["protocol"] = [p.min_reader_version, p.min_writer_version]
    out["history"] = len(dt.history())
    out["versions"] = {}
    for v in versions:
        old = DeltaTable(root, version=v)
        out["versions"][str(v)] = query(old, "SELECT count(*) AS n FROM t")[0]["n"]
    return out


def with_duckdb(root: str, cols: list[str]) -> dict:
    con = duckdb_ext.init(duckdb.connect())
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("LOAD delta")
    q = f"delta_scan('{root}')"
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


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    root, cols = sys.argv[1], sys.argv[2:]
    versions = [int(v) for v in os.environ.get("READ_DELTA_VERSIONS", "").split(",") if v]
    print(json.dumps({"deltars": with_deltars(root, cols, versions), "duckdb": with_duckdb(root, cols)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
