"""Spark (Iceberg's Spark runtime with S3FileIO from iceberg-aws-bundle)
against a Tarn whose warehouse is in S3 (moto), with no AWS keys of its
own: catalog `vend` asks for vended credentials, catalog `sign` for
remote signing (every S3 request signed by Tarn's POST .../sign).

moto does not enforce IAM session policies; the policy document is
asserted in Go (catalog/vend_test.go).
"""

from __future__ import annotations

import json
import os
import urllib.request
import uuid
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.rest import RestCatalog

REPO = Path(__file__).resolve().parents[2]
FLIGHTS = REPO / "testdata" / "flights-10k.parquet"
ANSWERS = json.loads((REPO / "testdata" / "answers.json").read_text())["flights-10k.parquet"]
NS = "spark_s3_" + uuid.uuid4().hex[:8]


def env(name: str) -> str:
    v = os.environ.get(name, "").strip()
    if not v:
        pytest.fail(f"{name} is not set", pytrace=False)
    return v


@pytest.fixture(scope="module")
def cat() -> RestCatalog:
    c = RestCatalog("tarn", uri=env("TARN_URI"))
    c.create_namespace(NS)
    return c


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    run_dir = Path(env("TARN_SPARK_RUN_DIR"))
    b = (
        SparkSession.builder.master("local[2]")
        .appName("tarn-conformance-s3")
        .config("spark.jars", env("TARN_SPARK_JARS"))
        .config("spark.driver.memory", "1g")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.catalogImplementation", "in-memory")
        .config("spark.sql.warehouse.dir", str(run_dir / "spark-warehouse"))
        .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
    )
    for name, delegation in (("vend", "vended-credentials"), ("sign", "remote-signing")):
        b = (
            b.config(f"spark.sql.catalog.{name}", "org.apache.iceberg.spark.SparkCatalog")
            .config(f"spark.sql.catalog.{name}.type", "rest")
            .config(f"spark.sql.catalog.{name}.uri", env("TARN_URI"))
            .config(f"spark.sql.catalog.{name}.io-impl", "org.apache.iceberg.aws.s3.S3FileIO")
            .config(f"spark.sql.catalog.{name}.header.X-Iceberg-Access-Delegation", delegation)
            .config(f"spark.sql.catalog.{name}.cache-enabled", "false")
        )
    session = b.getOrCreate()
    yield session
    session.stop()


def test_01_spark_reads_pyiceberg_table_with_vended_credentials(cat: RestCatalog, spark) -> None:
    t = cat.create_table(f"{NS}.flights", schema=pq.read_schema(FLIGHTS))
    t.append(pq.read_table(FLIGHTS))
    row = spark.sql(f"SELECT count(*) AS n, sum(delay) AS d, sum(distance) AS s FROM vend.{NS}.flights").collect()[0]
    assert (row.n, row.d, row.s) == (ANSWERS["rows"], ANSWERS["sum_delay"], ANSWERS["sum_distance"])


def test_02_spark_writes_with_vended_credentials(cat: RestCatalog, spark) -> None:
    spark.sql(f"CREATE TABLE vend.{NS}.by_origin USING iceberg AS SELECT origin, count(*) AS n FROM vend.{NS}.flights GROUP BY origin")
    spark.sql(f"INSERT INTO vend.{NS}.by_origin VALUES ('ZZZ', 1)")
    got = cat.load_table(f"{NS}.by_origin").scan().to_arrow()
    assert pc.sum(got["n"]).as_py() == ANSWERS["rows"] + 1


def signed_requests() -> int:
    """POST .../sign requests Tarn answered 200, from its /metrics."""
    body = urllib.request.urlopen(env("TARN_URI") + "/metrics", timeout=10).read().decode()
    n = 0
    for line in body.splitlines():
        if line.startswith("tarn_http_requests_total{") and '/sign"' in line and 'code="200"' in line and 'method="POST"' in line:
            n += int(float(line.rsplit(" ", 1)[1]))
    return n


def test_03_spark_writes_with_remote_signing(cat: RestCatalog, spark) -> None:
    before = signed_requests()
    spark.sql(f"CREATE TABLE sign.{NS}.signed (id bigint, s string) USING iceberg")
    spark.sql(f"INSERT INTO sign.{NS}.signed VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    spark.sql(f"DELETE FROM sign.{NS}.signed WHERE id = 2")
    row = spark.sql(f"SELECT count(*) AS n, sum(id) AS s FROM sign.{NS}.signed").collect()[0]
    assert (row.n, row.s) == (2, 4)
    # pyiceberg (vended credentials) sees what Spark wrote through signed requests.
    got = cat.load_table(f"{NS}.signed").scan().to_arrow()
    assert sorted(got["id"].to_pylist()) == [1, 3]
    assert signed_requests() > before, "Spark's S3 requests went through Tarn's signer"


def test_04_spark_reads_pyiceberg_table_with_remote_signing(spark) -> None:
    row = spark.sql(f"SELECT count(*) AS n, sum(delay) AS d FROM sign.{NS}.flights").collect()[0]
    assert (row.n, row.d) == (ANSWERS["rows"], ANSWERS["sum_delay"])
