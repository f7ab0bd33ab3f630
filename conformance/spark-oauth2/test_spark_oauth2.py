"""Spark (Iceberg's Spark runtime, REST catalog) against a Tarn in
--auth oauth2 mode, connecting with `credential=id:secret`.

As root (TARN_CREDENTIAL) the tests create namespaces rw, ro and hidden,
a principal and a role granted write, create and drop on rw and read on
ro; Spark's catalog `tarn` uses that principal's credential (its token
comes from Tarn's /v1/oauth/tokens), catalog `bad` a wrong secret.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog

RUN = uuid.uuid4().hex[:8]
RW, RO, HIDDEN = f"rw_{RUN}", f"ro_{RUN}", f"hidden_{RUN}"


def env(name: str) -> str:
    v = os.environ.get(name, "").strip()
    if not v:
        pytest.fail(f"{name} is not set", pytrace=False)
    return v


def call(method: str, path: str, token: str, body: dict | None = None) -> dict:
    req = urllib.request.Request(env("TARN_URI").rstrip("/") + path, method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as rsp:
        raw = rsp.read()
    return json.loads(raw) if raw else {}


def token(credential: str) -> str:
    cid, secret = credential.split(":", 1)
    form = urllib.parse.urlencode({"grant_type": "client_credentials", "client_id": cid, "client_secret": secret}).encode()
    with urllib.request.urlopen(env("TARN_URI").rstrip("/") + "/v1/oauth/tokens", data=form, timeout=30) as rsp:
        return json.load(rsp)["access_token"]


@pytest.fixture(scope="module")
def principal() -> str:
    """Sets up namespaces, the principal, its role and grants; returns its credential."""
    root = token(env("TARN_CREDENTIAL"))
    for ns in (RW, RO, HIDDEN):
        call("POST", "/v1/namespaces", root, {"namespace": [ns]})
    p = call("POST", "/management/v1/principals", root, {"id": f"spark-{RUN}"})
    call("POST", "/management/v1/roles", root, {"name": f"spark-{RUN}"})
    for priv, ns in (("write", RW), ("create", RW), ("drop", RW), ("read", RO)):
        call("POST", "/management/v1/grants", root, {"role": f"spark-{RUN}", "privilege": priv, "on": {"type": "namespace", "namespace": [ns]}})
    call("PUT", f"/management/v1/principals/spark-{RUN}/roles/spark-{RUN}", root)
    # A table in ro, written by root through pyiceberg with its credential.
    cat = RestCatalog("root", uri=env("TARN_URI"), credential=env("TARN_CREDENTIAL"))
    data = pa.table({"id": pa.array([10, 20], pa.int64())})
    cat.create_table(f"{RO}.r", schema=data.schema).append(data)
    return f"{p['id']}:{p['secret']}"


@pytest.fixture(scope="module")
def spark(principal):
    from pyspark.sql import SparkSession

    run_dir = Path(env("TARN_SPARK_RUN_DIR"))
    b = (
        SparkSession.builder.master("local[2]")
        .appName("tarn-conformance-oauth2")
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
    for name, cred in (("tarn", principal), ("bad", principal.split(":")[0] + ":wrong-secret")):
        b = (b.config(f"spark.sql.catalog.{name}", "org.apache.iceberg.spark.SparkCatalog")
             .config(f"spark.sql.catalog.{name}.type", "rest")
             .config(f"spark.sql.catalog.{name}.uri", env("TARN_URI"))
             .config(f"spark.sql.catalog.{name}.credential", cred)
             .config(f"spark.sql.catalog.{name}.cache-enabled", "false"))
    s = b.getOrCreate()
    yield s
    s.stop()


def test_create_insert_select(spark):
    spark.sql(f"CREATE TABLE tarn.{RW}.t (id bigint) USING iceberg")
    spark.sql(f"INSERT INTO tarn.{RW}.t VALUES (1), (2), (3)")
    assert spark.sql(f"SELECT count(*), sum(id) FROM tarn.{RW}.t").collect()[0] == (3, 6)
    spark.sql(f"DELETE FROM tarn.{RW}.t WHERE id = 1")
    assert spark.sql(f"SELECT sum(id) FROM tarn.{RW}.t").collect()[0][0] == 5


def test_read_only_namespace(spark):
    assert spark.sql(f"SELECT sum(id) FROM tarn.{RO}.r").collect()[0][0] == 30
    with pytest.raises(Exception, match="Forbidden"):
        spark.sql(f"INSERT INTO tarn.{RO}.r VALUES (99)")
    with pytest.raises(Exception, match="Forbidden"):
        spark.sql(f"CREATE TABLE tarn.{RO}.new (id bigint) USING iceberg")
    assert spark.sql(f"SELECT count(*), sum(id) FROM tarn.{RO}.r").collect()[0] == (2, 30), "nothing changed"


def test_lists_show_only_granted(spark):
    names = {r[0] for r in spark.sql("SHOW NAMESPACES IN tarn").collect()}
    assert RW in names and RO in names and HIDDEN not in names
    with pytest.raises(Exception, match="Forbidden"):
        spark.sql(f"SHOW TABLES IN tarn.{HIDDEN}").collect()


def test_wrong_secret_cannot_connect(spark):
    with pytest.raises(Exception, match="(?i)invalid_client|NotAuthorized|unknown client|401"):
        spark.sql("SHOW NAMESPACES IN bad").collect()


def test_survives_token_expiry(spark):
    """The server's tokens live 30 s (conformance/spark-oauth2/token-lifetime);
    Spark's REST client refreshes its token (token exchange) and keeps working."""
    import time

    spark.sql(f"CREATE TABLE tarn.{RW}.long_run (id bigint) USING iceberg")
    for i in range(3):
        spark.sql(f"INSERT INTO tarn.{RW}.long_run VALUES ({i})")
        time.sleep(20)
    assert spark.sql(f"SELECT count(*) FROM tarn.{RW}.long_run").collect()[0][0] == 3
