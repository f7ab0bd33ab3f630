#!/usr/bin/env python3
"""read-table-spark.py — read every row of the named columns of a table
through Tarn with Spark (Iceberg's REST catalog in iceberg-spark-runtime),
as scripts/read-table.py --rows does with pyiceberg and DuckDB.

Usage: <venv>/bin/python scripts/read-table-spark.py URI NAMESPACE.TABLE COLUMN...

Prints one JSON object, {"spark": [row, ...]}: each row a list of the
columns' values, rows sorted, so a test compares them with the other
engines' and its source row by row. The venv and the jars are
scripts/setup-spark.sh's (TARN_SPARK_JARS, comma-separated); Spark's
scratch files go to TARN_SPARK_RUN_DIR (default: a temp dir).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

from pyspark.sql import SparkSession


def main() -> None:
    uri, ident, cols = sys.argv[1], sys.argv[2], sys.argv[3:]
    run_dir = os.environ.get("TARN_SPARK_RUN_DIR") or tempfile.mkdtemp(prefix="tarn-spark-read.")
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("tarn-read-table-spark")
        .config("spark.jars", os.environ["TARN_SPARK_JARS"])
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.sql.catalogImplementation", "in-memory")
        .config("spark.sql.warehouse.dir", os.path.join(run_dir, "spark-warehouse"))
        .config("spark.local.dir", run_dir)
        .config("spark.sql.catalog.tarn", "org.apache.iceberg.spark.SparkCatalog")
        .config("spark.sql.catalog.tarn.type", "rest")
        .config("spark.sql.catalog.tarn.uri", uri)
        .config("spark.sql.catalog.tarn.cache-enabled", "false")
        .getOrCreate()
    )
    try:
        sel = ", ".join(f"`{c}`" for c in cols)
        rows = [list(r) for r in spark.sql(f"SELECT {sel} FROM tarn.{ident}").collect()]
        # None sorts first, as read-table.py's engines return it: by
        # (is-not-null, value) per column.
        rows.sort(key=lambda r: [(v is not None, v if v is not None else 0) for v in r])
        print(json.dumps({"spark": rows}))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
