"""pyiceberg against a Tarn whose warehouse is in S3 (moto), with no AWS
keys of pyiceberg's own: every read and write uses the credentials Tarn
vends (STS AssumeRole through moto) for the table's location.

moto does not enforce IAM session policies, so these tests prove that
vending works end to end, not that the scoping holds; the policy document
Tarn sends is asserted in Go (catalog/vend_test.go).

Environment (conformance/run sets it for this suite):
  TARN_URI               the catalog
  TARN_WAREHOUSE         s3://bucket/prefix of the default warehouse
  TARN_S3_TEST_ENDPOINT  the moto endpoint
  TARN_SERVER_LOG        Tarn's log file
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchTableError

REPO = Path(__file__).resolve().parents[2]
FLIGHTS = REPO / "testdata" / "flights-10k.parquet"
ANSWERS = json.loads((REPO / "testdata" / "answers.json").read_text())["flights-10k.parquet"]
NS = "s3_" + uuid.uuid4().hex[:8]


def uri() -> str:
    u = os.environ.get("TARN_URI", "")
    if not u:
        pytest.fail("TARN_URI is not set", pytrace=False)
    return u


@pytest.fixture(scope="module")
def cat() -> RestCatalog:
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        assert k not in os.environ, f"{k} must not be set: the client may only use vended credentials"
    c = RestCatalog("tarn", uri=uri())
    c.create_namespace(NS)
    return c


@pytest.fixture(scope="module")
def flights() -> pa.Table:
    return pq.read_table(FLIGHTS)


def sums(t: pa.Table) -> dict:
    return {"rows": t.num_rows, "sum_delay": pc.sum(t["delay"]).as_py(), "sum_distance": pc.sum(t["distance"]).as_py()}


def http(method: str, path: str, body: dict | None = None, headers: dict | None = None) -> tuple[int, dict]:
    req = urllib.request.Request(uri() + path, method=method, data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def test_01_create_append_scan_with_vended_credentials(cat: RestCatalog, flights: pa.Table) -> None:
    table = cat.create_table(f"{NS}.flights", schema=flights.schema)
    assert table.location().startswith(os.environ["TARN_WAREHOUSE"] + "/"), table.location()
    table.append(flights)
    got = cat.load_table(f"{NS}.flights").scan().to_arrow()
    assert sums(got) == ANSWERS


def test_02_fresh_client_reads_table(flights: pa.Table) -> None:
    # A second client, nothing cached: load + scan only with what Tarn vends.
    c = RestCatalog("tarn2", uri=uri())
    t = c.load_table(f"{NS}.flights")
    assert t.io.properties.get("s3.session-token"), "vended session credentials in the table's FileIO"
    assert sums(t.scan().to_arrow()) == ANSWERS
    assert t.scan(row_filter="origin == 'LAX'").to_arrow().num_rows == pc.sum(pc.equal(flights["origin"], "LAX")).as_py()


def test_03_vended_credentials_are_scoped_to_the_table() -> None:
    st, lt = http("GET", f"/v1/namespaces/{NS}/tables/flights", headers={"X-Iceberg-Access-Delegation": "vended-credentials"})
    assert st == 200
    loc = lt["metadata"]["location"]
    creds = lt["storage-credentials"]
    assert [c["prefix"] for c in creds] == [loc]
    cfg = creds[0]["config"]
    for k in ("s3.access-key-id", "s3.secret-access-key", "s3.session-token", "s3.endpoint"):
        assert cfg.get(k), k
    assert cfg["s3.access-key-id"] != "AKIATARNSERVER", "STS keys, never Tarn's own"
    assert cfg["s3.path-style-access"] == "true" and cfg["s3.force-virtual-addressing"] == "false"
    st, lc = http("GET", f"/v1/namespaces/{NS}/tables/flights/credentials")
    assert st == 200 and [c["prefix"] for c in lc["storage-credentials"]] == [loc]
    st, plain = http("GET", f"/v1/namespaces/{NS}/tables/flights")
    assert st == 200 and not plain.get("storage-credentials") and "s3.secret-access-key" not in plain["config"]


def test_04_signing_outside_the_table_is_forbidden() -> None:
    st, lt = http("GET", f"/v1/namespaces/{NS}/tables/flights")
    bucket_key = lt["metadata"]["location"].removeprefix("s3://")
    bucket, _, key = bucket_key.partition("/")
    ep = os.environ["TARN_S3_TEST_ENDPOINT"]
    sign = f"/v1/namespaces/{NS}/tables/flights/sign"
    st, res = http("POST", sign, {"region": "us-east-1", "method": "GET", "uri": f"{ep}/{bucket}/{key}/metadata/x", "headers": {}})
    assert st == 200 and res["headers"]["Authorization"][0].startswith("AWS4-HMAC-SHA256 ")
    for outside in (f"{ep}/{bucket}/wh/other/data/x", f"{ep}/{bucket}/{key}/../other/x", f"{ep}/other-bucket/{key}/x"):
        st, err = http("POST", sign, {"region": "us-east-1", "method": "GET", "uri": outside, "headers": {}})
        assert st == 403, outside
        assert err["error"]["type"] == "ForbiddenException"


def test_05_overwrite_delete_and_purge(cat: RestCatalog, flights: pa.Table) -> None:
    t = cat.create_table(f"{NS}.small", schema=flights.schema)
    t.append(flights.slice(0, 100))
    t.overwrite(flights.slice(100, 50))
    assert cat.load_table(f"{NS}.small").scan().to_arrow().num_rows == 50
    t.delete("delay > 0")
    left = cat.load_table(f"{NS}.small").scan().to_arrow()
    assert left.num_rows == pc.sum(pc.less_equal(flights.slice(100, 50)["delay"], 0)).as_py()
    cat.purge_table(f"{NS}.small")
    with pytest.raises(NoSuchTableError):
        cat.load_table(f"{NS}.small")


def test_06_no_credentials_in_the_server_log() -> None:
    log = Path(os.environ["TARN_SERVER_LOG"]).read_text()
    assert "tarn serving" in log
    st, lt = http("GET", f"/v1/namespaces/{NS}/tables/flights", headers={"X-Iceberg-Access-Delegation": "vended-credentials"})
    cfg = lt["storage-credentials"][0]["config"]
    log = Path(os.environ["TARN_SERVER_LOG"]).read_text()
    for secret in ("tarn-server-secret", cfg["s3.secret-access-key"], cfg["s3.session-token"]):
        assert secret not in log
