#!/usr/bin/env python3
"""read-delta.py — read a Delta table (Tarn's Delta Lake output) with delta-rs
and with DuckDB's delta extension, and print what each saw as one JSON object
on stdout.

Usage: <venv>/bin/python scripts/read-delta.py DELTA_ROOT_URI [SUM_COLUMN...]
       (env READ_DELTA_VERSIONS="3,7,12": versions to time-travel to)

For each reader, at the table's latest version: the row count, the sum of
every SUM_COLUMN, and the number of (_kafka.partition, _kafka.offset) pairs
that occur more than once (a duplicated Kafka record). delta-rs reads through
DeltaTable + its DataFusion QueryBuilder;
DuckDB through delta_scan (extension from the venv's duckdb-ext-delta wheel,
loaded with duckdb_ext.init, never downloaded); "pyarrow" is delta-rs's
pyarrow path, DeltaTable.to_pyarrow_table() (which opens the add paths
through a file system rooted at the Delta root, docs/delta.md "Where the
Delta table is"), or {"error": ...} when it refuses the table (it refuses the
reader feature columnMapping, so any table at reader version 3). Besides:
  "deltars": {"version", "protocol": [reader, writer], "history": n,
              "versions": {v: rows}}  (the time-travelled counts)
  "pyarrow": {"versions": {v: rows}}
and, with env READ_DELTA_VALUES=1, "values": the sorted values of the first
SUM_COLUMN, for each reader (small tables only).
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

VALUES = os.environ.get("READ_DELTA_VALUES") == "1"


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
    if VALUES and cols:
        out["values"] = [r["v"] for r in query(dt, f'SELECT "{cols[0]}" AS v FROM t ORDER BY 1')]
    p = dt.protocol()
    out["version"] = dt.version()
    out["protocol"] = [p.min_reader_version, p.min_writer_version]
    out["history"] = len(dt.history())
    out["versions"] = {}
    for v in versions:
        old = DeltaTable(root, version=v)
        out["versions"][str(v)] = query(old, "SELECT count(*) AS n FROM t")[0]["n"]
    return out


def with_pyarrow(root: str, cols: list[str], versions: list[int]) -> dict:
    try:
        t = DeltaTable(root).to_pyarrow_table()
    except Exception as e:  # DeltaProtocolError, or a file it cannot open
        return {"error": f"{type(e).__name__}: {e}"}
    k = t.column("_kafka").combine_chunks()
    pairs = pa.table({"p": pc.struct_field(k, "partition"), "o": pc.struct_field(k, "offset")})
    counts = pairs.group_by(["p", "o"]).aggregate([([], "count_all")])
    out = {"rows": t.num_rows, "duplicates": len(pc.filter(counts, pc.greater(counts["count_all"], 1)))}
    for c in cols:
        out["sum_" + c] = int(pc.sum(t.column(c)).as_py() or 0)
    if VALUES and cols:
        out["values"] = sorted(t.column(cols[0]).to_pylist())
    out["versions"] = {str(v): DeltaTable(root, version=v).to_pyarrow_table().num_rows for v in versions}
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
    if VALUES and cols:
        out["values"] = [r[0] for r in con.execute(f'SELECT "{cols[0]}" FROM {q} ORDER BY 1').fetchall()]
    con.close()
    return out


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    root, cols = sys.argv[1], sys.argv[2:]
    versions = [int(v) for v in os.environ.get("READ_DELTA_VERSIONS", "").split(",") if v]
    print(json.dumps({
        "deltars": with_deltars(root, cols, versions),
        "pyarrow": with_pyarrow(root, cols, versions),
        "duckdb": with_duckdb(root, cols),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
