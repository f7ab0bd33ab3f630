#!/usr/bin/env python3
"""read-delta-spark.py — read a Delta table (Tarn's Delta Lake output) with
Spark and Delta Lake's own Spark connector (delta-spark), and print what it
saw as one JSON object on stdout.

Usage: <venv>/bin/python scripts/read-delta-spark.py DELTA_ROOT_URI [SUM_COLUMN...]
       (env READ_DELTA_VERSIONS="0,3": versions to time-travel to;
        READ_DELTA_VALUES=1: also the sorted values of the first SUM_COLUMN)

       <venv>/bin/python scripts/read-delta-spark.py --vacuum DELTA_ROOT_URI

Env TARN_DELTA_SPARK_JARS: the comma-separated delta-spark and delta-storage
jars; the python is conformance/spark's venv (pyspark 4.0); both are what
scripts/setup-spark-delta.sh prints. Output:
  {"rows", "duplicates", "sum_<col>"..., "values", "version", "history",
   "operations": [DESCRIBE HISTORY's operation, oldest first],
   "versions": {v: rows}}

--vacuum runs Delta's own VACUUM on the table with retention 0 (Spark's
retention check disabled, as a user forcing it would) and prints
  {"vacuum": "ok"} or {"vacuum": "error", "error": "<class>: <message>"}
(docs/delta.md "File safety": Tarn's tables make Delta writers refuse it).
"""

from __future__ import annotations

import json
import os
import sys

from pyspark.sql import SparkSession


def session() -> SparkSession:
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("tarn-read-delta")
        .config("spark.jars", os.environ["TARN_DELTA_SPARK_JARS"])
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        # A tiny table on a small machine: Delta's state reconstruction
        # (50 partitions by default) and the shuffles in one partition.
        .config("spark.databricks.delta.snapshotPartitions", "1")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.sql.session.timeZone", "UTC")
        # VACUUM ... RETAIN 0 HOURS is refused unless the user turns the
        # safety check off; --vacuum plays a user who did.
        .config("spark.databricks.delta.retentionDurationCheck.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def vacuum(root: str) -> int:
    spark = session()
    try:
        spark.sql(f"VACUUM delta.`{root}` RETAIN 0 HOURS").collect()
        out = {"vacuum": "ok"}
    except Exception as e:  # the refusal Tarn's writer feature causes
        out = {"vacuum": "error", "error": f"{type(e).__name__}: {e}"}
    finally:
        spark.stop()
    print(json.dumps(out))
    return 0


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    if sys.argv[1] == "--vacuum":
        return vacuum(sys.argv[2])
    root, cols = sys.argv[1], sys.argv[2:]
    versions = [int(v) for v in os.environ.get("READ_DELTA_VERSIONS", "").split(",") if v]
    spark = session()
    try:
        df = spark.read.format("delta").load(root)
        df.createOrReplaceTempView("t")
        sums = "".join(f", coalesce(sum(`{c}`), 0) AS `sum_{c}`" for c in cols)
        row = spark.sql(f"SELECT count(*) AS rows{sums} FROM t").collect()[0].asDict()
        dups = spark.sql(
            "SELECT count(*) AS n FROM (SELECT _kafka.partition, _kafka.offset FROM t GROUP BY 1, 2 HAVING count(*) > 1)"
        ).collect()[0]["n"]
        out = {"rows": row["rows"], "duplicates": dups}
        for c in cols:
            out["sum_" + c] = int(row["sum_" + c])
        if os.environ.get("READ_DELTA_VALUES") == "1" and cols:
            out["values"] = [r[0] for r in spark.sql(f"SELECT `{cols[0]}` FROM t ORDER BY 1").collect()]
        hist = spark.sql(f"DESCRIBE HISTORY delta.`{root}`").orderBy("version").collect()
        out["version"] = hist[-1]["version"]
        out["history"] = len(hist)
        out["operations"] = [h["operation"] for h in hist]
        out["versions"] = {
            str(v): spark.read.format("delta").option("versionAsOf", v).load(root).count() for v in versions
        }
    finally:
        spark.stop()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
