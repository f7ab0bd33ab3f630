#!/usr/bin/env python3
"""spark-auth-check.py — Spark (Iceberg's REST catalog) against Tarn in --auth oauth2 mode.

Usage: <venv>/bin/python scripts/spark-auth-check.py URI (credential ID:SECRET | token TOKEN) NS FORBIDDEN_NS

As scripts/auth-check.py, with a local SparkSession and
iceberg-spark-runtime (TARN_SPARK_JARS, comma-separated; scripts/setup-spark.sh
prints the venv's python and the jars): CREATE TABLE NS.spark_check,
INSERT 1, 2, 3, SELECT count and sum, DROP TABLE, and CREATE TABLE in
FORBIDDEN_NS, which must fail with Forbidden. Prints one JSON object:
{"rows": 3, "sum": 6, "forbidden": true}. Spark's scratch files go to
TARN_SPARK_RUN_DIR (default: a temp dir).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

from pyspark.sql import SparkSession


def main() -> None:
    uri, mode, secret, ns, forbidden_ns = sys.argv[1:6]
    run_dir = os.environ.get("TARN_SPARK_RUN_DIR") or tempfile.mkdtemp(prefix="tarn-spark-auth.")
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("tarn-spark-auth-check")
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
        .config("spark.sql.catalog.tarn." + ("credential" if mode == "credential" else "token"), secret)
        .config("spark.sql.catalog.tarn.cache-enabled", "false")
        .getOrCreate()
    )
    try:
        spark.sql(f"CREATE TABLE tarn.{ns}.spark_check (id bigint) USING iceberg")
        spark.sql(f"INSERT INTO tarn.{ns}.spark_check VALUES (1), (2), (3)")
        rows, total = spark.sql(f"SELECT count(*), sum(id) FROM tarn.{ns}.spark_check").collect()[0]
        out = {"rows": rows, "sum": total}
        spark.sql(f"DROP TABLE tarn.{ns}.spark_check")
        try:
            spark.sql(f"CREATE TABLE tarn.{forbidden_ns}.spark_check (id bigint) USING iceberg")
            out["forbidden"] = False
        except Exception as e:  # Spark wraps Iceberg's ForbiddenException
            out["forbidden"] = "Forbidden" in str(e)
        print(json.dumps(out))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
