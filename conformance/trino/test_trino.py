"""Trino (server 483, Iceberg connector, `iceberg.catalog.type=rest`) against Tarn.

conformance/trino/run.sh starts a single-node Trino (a coordinator that
schedules work on itself) with one catalog, `iceberg`, pointed at Tarn, and
the tests speak Trino's HTTP client protocol through the `trino` Python
client (DB-API).

pyiceberg writes first, into namespace NS:
  flights        testdata/flights-10k.parquet in two appends (4,000 + 6,000 rows)
  flights_part   the same rows, partitioned by hour(date) and bucket(4, origin)
and Trino lists and reads them (totals equal testdata/answers.json, per-origin
counts equal pyarrow's, time travel to the first append). Then Trino writes,
in namespace NS_T it creates: CREATE SCHEMA, CREATE TABLE partitioned by
day(date) and bucket(origin, 4), INSERT of the 10,000 rows as VALUES built
from the Parquet file, SELECTs with checked aggregates, time travel, views
(CREATE, CREATE OR REPLACE, SELECT, DROP), DELETE / UPDATE / MERGE, optimize
and expire_snapshots, schema evolution, CTAS, rename, DROP TABLE, DROP
SCHEMA; pyiceberg reads back what Trino wrote through Tarn. Tarn maintains
a table Trino wrote (compaction, expiry, manifest rewriting and orphan
removal: conformance/lib/maintenance.py), which Trino reads back exactly
after each job. Last, when
TARN_TOPIC_TABLE is set (`tarn demo`), Trino reads the table Tarn
materializes from a Kafka topic.

Every result is checked against exact values: answers.json, and a plain-Python
model of the flights rows that replays each DML statement. The steps run in
file order and share state; a step whose predecessor failed fails too (it
does not skip), naming the step it waited for.

Environment (set by conformance/trino/run.sh):
  TARN_URI            the catalog (required)
  TARN_WAREHOUSE      file:// URI of the server's warehouse
  TARN_TRINO_URI      http://127.0.0.1:PORT of the Trino coordinator (required)
  TARN_TRINO_VERSION  the Trino version run.sh installed (checked against the server)
  TARN_TRINO_LOG      Trino's server log (test_99 reads it)
  TARN_TOPIC_TABLE    namespace.table materialized from a topic (optional)
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import os
import re
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import trino
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import BucketTransform, HourTransform
from pyiceberg.types import LongType, NestedField, StringType, TimestampType
from preconditions import missing

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "conformance" / "lib"))
import maintenance  # noqa: E402  (conformance/lib/maintenance.py)

FLIGHTS_PARQUET = REPO / "testdata" / "flights-10k.parquet"
ANSWERS_JSON = REPO / "testdata" / "answers.json"
FIRST = 4000  # rows in the first append / INSERT of each flights table

FLIGHTS_SCHEMA = Schema(
    NestedField(1, "date", TimestampType(), required=False),
    NestedField(2, "delay", LongType(), required=False),
    NestedField(3, "distance", LongType(), required=False),
    NestedField(4, "origin", StringType(), required=False),
    NestedField(5, "destination", StringType(), required=False),
)
FLIGHTS_COLUMNS = [
    ("date", "timestamp(6)"),
    ("delay", "bigint"),
    ("distance", "bigint"),
    ("origin", "varchar"),
    ("destination", "varchar"),
]

RUN = uuid.uuid4().hex[:10]
NS = f"trino_{RUN}"  # written by pyiceberg
NS_T = f"trino_{RUN}_w"  # created by Trino
NS_M = f"trino_{RUN}_m"  # created by Trino, maintained by Tarn
CAT = "iceberg"

state: dict = {}


def need(*steps: str) -> None:
    for step in steps:
        if step not in state:
            pytest.fail(f"needs step {step!r}, which did not complete", pytrace=False)


def env(name: str) -> str:
    value = os.environ.get(name, "").strip()
    if not value:
        pytest.fail(f"{name} is not set (conformance/trino/run.sh sets it)", pytrace=False)
    return value


def local_path(uri: str) -> Path:
    parsed = urlparse(uri)
    assert parsed.scheme == "file" and parsed.netloc in ("", "localhost"), uri
    return Path(unquote(parsed.path))


def files_under(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*") if p.is_file()) if path.exists() else []


# --- the flights model ----------------------------------------------------------


def totals(model: list[dict]) -> tuple:
    """(rows, sum(delay), sum(distance)), as the TOTALS query returns them."""
    return (len(model), sum(r["delay"] for r in model), sum(r["distance"] for r in model))


def by_origin(model: list[dict]) -> list[tuple]:
    """(origin, rows, sum(delay)) per origin, ordered by origin."""
    acc: dict = collections.defaultdict(lambda: [0, 0])
    for r in model:
        acc[r["origin"]][0] += 1
        acc[r["origin"]][1] += r["delay"]
    return sorted((o, n, d) for o, (n, d) in acc.items())


def arrow_totals(t: pa.Table) -> tuple:
    return (t.num_rows, pc.sum(t["delay"]).as_py(), pc.sum(t["distance"]).as_py())


TOTALS = "SELECT count(*), sum(delay), sum(distance) FROM {}"
BY_ORIGIN = "SELECT origin, count(*), sum(delay) FROM {} GROUP BY origin ORDER BY origin"


def sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def values_row(r: dict) -> str:
    def lit(v):
        if v is None:
            return "NULL"
        if isinstance(v, dt.datetime):
            return f"TIMESTAMP '{v:%Y-%m-%d %H:%M:%S.%f}'"
        if isinstance(v, str):
            return sql_str(v)
        return str(int(v))

    return "(" + ", ".join(lit(r[c]) for c, _ in FLIGHTS_COLUMNS) + ")"


# --- fixtures ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def answers() -> dict:
    return json.loads(ANSWERS_JSON.read_text())["flights-10k.parquet"]


@pytest.fixture(scope="module")
def flights(answers: dict) -> pa.Table:
    """The 10,000 flights, checked against testdata/answers.json first."""
    t = pq.read_table(FLIGHTS_PARQUET)
    assert arrow_totals(t) == (answers["rows"], answers["sum_delay"], answers["sum_distance"])
    assert [(f.name, str(f.type)) for f in t.schema] == [
        ("date", "timestamp[us]"),
        ("delay", "int64"),
        ("distance", "int64"),
        ("origin", "large_string"),
        ("destination", "large_string"),
    ]
    return t


@pytest.fixture(scope="module")
def model(flights: pa.Table) -> list[dict]:
    return flights.to_pylist()


@pytest.fixture(scope="module")
def busiest(model: list[dict]) -> list[str]:
    """The five origins with the most flights (ties by name)."""
    counts = collections.Counter(r["origin"] for r in model)
    return sorted(counts, key=lambda o: (-counts[o], o))[:5]


@pytest.fixture(scope="module")
def warehouse() -> Path:
    path = local_path(env("TARN_WAREHOUSE")).resolve()
    assert path.is_dir(), f"TARN_WAREHOUSE {path} is not a directory on this machine"
    return path


@pytest.fixture(scope="module")
def cat() -> RestCatalog:
    c = RestCatalog("tarn_trino_check", uri=env("TARN_URI"))
    yield c
    # Leave nothing behind, whatever happened.
    for ns in (NS_M, NS_T, NS):
        try:
            for ident in c.list_views(ns):
                c.drop_view(ident)
        except Exception:  # noqa: BLE001 - cleanup must not mask the results
            pass
        try:
            for ident in c.list_tables(ns):
                c.purge_table(ident)
        except Exception:  # noqa: BLE001
            pass
        try:
            c.drop_namespace(ns)
        except Exception:  # noqa: BLE001
            pass


@pytest.fixture(scope="module")
def conn():
    uri = urlparse(env("TARN_TRINO_URI"))
    c = trino.dbapi.connect(
        host=uri.hostname,
        port=uri.port,
        http_scheme=uri.scheme,
        user="tarn",
        catalog=CAT,
        source="tarn-conformance",
        request_timeout=120,
        # expire_snapshots below removes snapshots younger than the
        # connector's default minimum retention (7 days)
        session_properties={"iceberg.expire_snapshots_min_retention": "0s"},
    )
    yield c
    c.close()


def rows(conn, sql: str) -> list[tuple]:
    cur = conn.cursor()
    try:
        cur.execute(sql)
        return [tuple(r) for r in cur.fetchall()]
    finally:
        cur.close()


def one(conn, sql: str) -> tuple:
    result = rows(conn, sql)
    assert len(result) == 1, result
    return result[0]


def trino_error(conn, sql: str) -> trino.exceptions.TrinoQueryError:
    """Runs a statement that must fail; returns Trino's error."""
    with pytest.raises(trino.exceptions.TrinoQueryError) as info:
        rows(conn, sql)
    return info.value


def t(name: str, ns: str = NS_T) -> str:
    return f'{CAT}."{ns}"."{name}"'


def meta(name: str, table: str, ns: str = NS_T) -> str:
    """A metadata table such as flights$snapshots."""
    return f'{CAT}."{ns}"."{table}${name}"'


# --- the server ---------------------------------------------------------------------


def test_01_trino_server(conn) -> None:
    version = env("TARN_TRINO_VERSION")
    assert rows(conn, "SELECT node_version, coordinator, state FROM system.runtime.nodes") == [(version, True, "active")]
    assert ("iceberg", "iceberg", "iceberg") in rows(
        conn, "SELECT catalog_name, connector_id, connector_name FROM system.metadata.catalogs"
    )
    state["server"] = True


# --- pyiceberg writes, Trino reads ----------------------------------------------------


def test_02_pyiceberg_writes(cat: RestCatalog, flights: pa.Table) -> None:
    cat.create_namespace(NS, {"owner": "tarn-conformance-trino"})
    tbl = cat.create_table((NS, "flights"), schema=FLIGHTS_SCHEMA)
    tbl.append(flights.slice(0, FIRST))
    tbl.append(flights.slice(FIRST))
    tbl = cat.load_table((NS, "flights"))
    state["py_snapshots"] = [s.snapshot_id for s in tbl.metadata.snapshots]
    assert len(state["py_snapshots"]) == 2
    spec = PartitionSpec(
        PartitionField(source_id=1, field_id=1000, transform=HourTransform(), name="date_hour"),
        PartitionField(source_id=4, field_id=1001, transform=BucketTransform(4), name="origin_bucket"),
    )
    part = cat.create_table((NS, "flights_part"), schema=FLIGHTS_SCHEMA, partition_spec=spec)
    part.append(flights)
    part = cat.load_table((NS, "flights_part"))
    state["py_partitions"] = part.inspect.partitions().num_rows
    assert state["py_partitions"] > 17, "17 hours, up to 4 buckets each"
    state["pyiceberg"] = True


def test_03_trino_lists_pyiceberg_tables(conn) -> None:
    need("server", "pyiceberg")
    assert (NS,) in rows(conn, f"SHOW SCHEMAS FROM {CAT}")
    assert rows(conn, f'SHOW TABLES FROM {CAT}."{NS}"') == [("flights",), ("flights_part",)]
    cols = rows(
        conn,
        f"SELECT column_name, data_type FROM {CAT}.information_schema.columns "
        f"WHERE table_schema = {sql_str(NS)} AND table_name = 'flights' ORDER BY ordinal_position",
    )
    assert cols == FLIGHTS_COLUMNS


def test_04_trino_reads_pyiceberg_tables(conn, model: list[dict], busiest: list[str], answers: dict) -> None:
    need("server", "pyiceberg")
    for name in ("flights", "flights_part"):
        got = one(conn, TOTALS.format(t(name, NS)))
        assert got == (answers["rows"], answers["sum_delay"], answers["sum_distance"]) == totals(model), name
        assert rows(conn, BY_ORIGIN.format(t(name, NS))) == by_origin(model), name
    # a filter on the partition source columns, pruned by Trino
    origin = busiest[2]
    sel = [r for r in model if r["origin"] == origin and r["date"] >= dt.datetime(2001, 1, 1, 12)]
    got = one(
        conn,
        TOTALS.format(t("flights_part", NS)) + f" WHERE origin = {sql_str(origin)} AND date >= TIMESTAMP '2001-01-01 12:00:00'",
    )
    assert got == totals(sel)
    assert one(conn, f"SELECT count(*) FROM {meta('partitions', 'flights_part', NS)}") == (state["py_partitions"],)
    # the snapshots pyiceberg committed, and time travel to the first append
    snaps = rows(conn, f"SELECT snapshot_id, operation FROM {meta('snapshots', 'flights', NS)} ORDER BY committed_at")
    assert snaps == [(s, "append") for s in state["py_snapshots"]]
    first = state["py_snapshots"][0]
    assert one(conn, TOTALS.format(t("flights", NS) + f" FOR VERSION AS OF {first}")) == totals(model[:FIRST])


# --- Trino writes -----------------------------------------------------------------------


def test_05_create_schema(conn, cat: RestCatalog) -> None:
    need("server")
    assert rows(conn, f'CREATE SCHEMA {CAT}."{NS_T}"') == []
    assert cat.namespace_exists(NS_T)
    assert (NS_T,) in rows(conn, f"SHOW SCHEMAS FROM {CAT}")
    err = trino_error(conn, f'CREATE SCHEMA {CAT}."{NS_T}"')
    assert err.error_name == "SCHEMA_ALREADY_EXISTS", err
    state["schema"] = True


def test_06_create_partitioned_table(conn, cat: RestCatalog, warehouse: Path) -> None:
    need("schema")
    columns = ", ".join(f"{c} {ty}" for c, ty in FLIGHTS_COLUMNS)
    rows(
        conn,
        f"CREATE TABLE {t('flights')} ({columns}) "
        "WITH (format_version = 2, partitioning = ARRAY['day(date)', 'bucket(origin, 4)'])",
    )
    tbl = cat.load_table((NS_T, "flights"))
    assert [(f.name, str(f.field_type), f.required) for f in tbl.schema().fields] == [
        ("date", "timestamp", False),
        ("delay", "long", False),
        ("distance", "long", False),
        ("origin", "string", False),
        ("destination", "string", False),
    ]
    spec = tbl.spec()
    assert [(tbl.schema().find_column_name(f.source_id), str(f.transform)) for f in spec.fields] == [
        ("date", "day"),
        ("origin", "bucket[4]"),
    ]
    assert tbl.metadata.format_version == 2
    assert local_path(tbl.location()).resolve().is_relative_to(warehouse), tbl.location()
    assert rows(conn, f"SHOW COLUMNS FROM {t('flights')}") == [(c, ty, "", "") for c, ty in FLIGHTS_COLUMNS]
    create = one(conn, f"SHOW CREATE TABLE {t('flights')}")[0]
    assert "partitioning = ARRAY['day(date)','bucket(origin, 4)']" in create, create
    err = trino_error(conn, f"CREATE TABLE {t('flights')} (x bigint)")
    assert err.error_name == "TABLE_ALREADY_EXISTS", err
    state["table"] = True


def test_07_insert_values(conn, cat: RestCatalog, model: list[dict], flights: pa.Table) -> None:
    """The 10,000 rows in two INSERT ... VALUES statements built from the Parquet file."""
    need("table")
    assert rows(conn, f"INSERT INTO {t('flights')} VALUES " + ", ".join(map(values_row, model[:FIRST]))) == [(FIRST,)]
    assert rows(conn, f"INSERT INTO {t('flights')} VALUES " + ", ".join(map(values_row, model[FIRST:]))) == [
        (len(model) - FIRST,)
    ]
    assert one(conn, TOTALS.format(t("flights"))) == totals(model)
    assert rows(conn, BY_ORIGIN.format(t("flights"))) == by_origin(model)

    # pyiceberg reads what Trino wrote, through Tarn
    tbl = cat.load_table((NS_T, "flights"))
    data = tbl.scan().to_arrow()
    assert arrow_totals(data) == totals(model)
    assert sorted(data.to_pylist(), key=lambda r: tuple(map(str, r.values()))) == sorted(
        model, key=lambda r: tuple(map(str, r.values()))
    )
    # Trino commits an empty snapshot at CREATE TABLE, then one per INSERT
    snaps = tbl.metadata.snapshots
    assert [(s.summary.operation.value, s.summary["total-records"]) for s in snaps] == [
        ("append", "0"),
        ("append", str(FIRST)),
        ("append", str(len(model))),
    ]
    assert [s.snapshot_id for s in snaps] == [
        r[0] for r in rows(conn, f"SELECT snapshot_id FROM {meta('snapshots', 'flights')} ORDER BY committed_at")
    ]
    state["trino_snapshots"] = [s.snapshot_id for s in snaps]
    # one day, up to four buckets: the partitions Trino wrote, as pyiceberg sees them
    parts = rows(conn, f"SELECT partition.date_day, partition.origin_bucket, record_count FROM {meta('partitions', 'flights')} ORDER BY 2")
    assert [p[0] for p in parts] == [dt.date(2001, 1, 1)] * len(parts)
    assert sum(p[2] for p in parts) == len(model)
    py_parts = tbl.inspect.partitions().to_pylist()
    assert sorted((p["partition"]["origin_bucket"], p["record_count"]) for p in py_parts) == [(p[1], p[2]) for p in parts]
    for task in tbl.scan().plan_files():
        path = local_path(task.file.file_path)
        assert path.is_file() and path.resolve().is_relative_to(local_path(tbl.location()).resolve()), path
    state["inserted"] = True


def test_08_select_checked_aggregates(conn, model: list[dict], busiest: list[str]) -> None:
    need("inserted")
    table = t("flights")
    for origin in busiest:
        sel = [r for r in model if r["origin"] == origin]
        assert one(conn, TOTALS.format(table) + f" WHERE origin = {sql_str(origin)}") == totals(sel), origin
    sel = [r for r in model if r["distance"] >= 2000]
    assert one(conn, TOTALS.format(table) + " WHERE distance >= 2000") == totals(sel)
    per_hour = collections.Counter(r["date"].hour for r in model)
    assert rows(conn, f"SELECT hour(date), count(*) FROM {table} GROUP BY 1 ORDER BY 1") == sorted(per_hour.items())
    top = collections.Counter((r["origin"], r["destination"]) for r in model)
    want = sorted(top.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    got = rows(conn, f"SELECT origin, destination, count(*) AS n FROM {table} GROUP BY 1, 2 ORDER BY n DESC, 1, 2 LIMIT 5")
    assert got == [(o, d, n) for (o, d), n in want]
    assert one(conn, f"SELECT min(date), max(date), max(delay), min(distance) FROM {table}") == (
        min(r["date"] for r in model),
        max(r["date"] for r in model),
        max(r["delay"] for r in model),
        min(r["distance"] for r in model),
    )
    # the Trino-written table joined with the pyiceberg-written one, row for row
    if "pyiceberg" in state:
        joined = one(
            conn,
            f"SELECT count(*) FROM (SELECT origin, count(*) AS n FROM {table} GROUP BY origin) a "
            f"JOIN (SELECT origin, count(*) AS n FROM {t('flights', NS)} GROUP BY origin) b "
            "ON a.origin = b.origin AND a.n = b.n",
        )
        assert joined == (len({r["origin"] for r in model}),)


def test_09_time_travel(conn, model: list[dict]) -> None:
    need("inserted")
    empty, first, second = state["trino_snapshots"]
    assert one(conn, TOTALS.format(t("flights") + f" FOR VERSION AS OF {empty}")) == (0, None, None)
    assert one(conn, TOTALS.format(t("flights") + f" FOR VERSION AS OF {first}")) == totals(model[:FIRST])
    assert one(conn, TOTALS.format(t("flights") + f" FOR VERSION AS OF {second}")) == totals(model)
    err = trino_error(conn, TOTALS.format(t("flights") + " FOR VERSION AS OF BIGINT '1'"))
    assert (err.error_name, err.message) == ("INVALID_ARGUMENTS", "Iceberg snapshot ID does not exists: 1"), err


def test_10_views(conn, cat: RestCatalog, model: list[dict], busiest: list[str], answers: dict) -> None:
    need("inserted")
    view = t("by_origin")
    rows(
        conn,
        f"CREATE VIEW {view} AS SELECT origin, count(*) AS flights, sum(delay) AS delay FROM {t('flights')} GROUP BY origin",
    )
    want = sorted(by_origin(model), key=lambda x: (-x[1], x[0]))[:5]
    assert rows(conn, f"SELECT * FROM {view} ORDER BY flights DESC, origin LIMIT 5") == want
    assert [w[0] for w in want] == busiest
    assert rows(conn, f'SHOW TABLES FROM {CAT}."{NS_T}"') == [("by_origin",), ("flights",)]
    assert rows(
        conn, f"SELECT table_name FROM {CAT}.information_schema.views WHERE table_schema = {sql_str(NS_T)}"
    ) == [("by_origin",)]

    # stored in Tarn as an Iceberg view with a Trino representation
    assert cat.list_views(NS_T) == [(NS_T, "by_origin")]
    v = cat.load_view((NS_T, "by_origin")).metadata
    current = [x for x in v.versions if x.version_id == v.current_version_id]
    assert len(current) == 1 and len(v.versions) == 1, v.versions
    reps = [r.root if hasattr(r, "root") else r for r in current[0].representations]
    assert [(r.type, r.dialect) for r in reps] == [("sql", "trino")]
    assert "GROUP BY origin" in reps[0].sql, reps[0].sql
    assert list(current[0].default_namespace) == [NS_T], current[0].default_namespace
    schema = [s for s in v.schemas if s.schema_id == current[0].schema_id]
    assert [(f.name, str(f.field_type)) for f in schema[0].fields] == [("origin", "string"), ("flights", "long"), ("delay", "long")]

    # replaced: a second version, the filter applies
    origin = busiest[0]
    rows(
        conn,
        f"CREATE OR REPLACE VIEW {view} AS SELECT origin, count(*) AS flights, sum(delay) AS delay "
        f"FROM {t('flights')} WHERE origin <> {sql_str(origin)} GROUP BY origin",
    )
    assert rows(conn, f"SELECT * FROM {view} ORDER BY flights DESC, origin LIMIT 4") == want[1:]
    v = cat.load_view((NS_T, "by_origin")).metadata
    assert len(v.versions) == 2 and v.current_version_id == max(x.version_id for x in v.versions), v.versions
    current = [x for x in v.versions if x.version_id == v.current_version_id][0]
    assert f"origin <> {sql_str(origin)}" in [r.root if hasattr(r, "root") else r for r in current.representations][0].sql

    # a view over the pyiceberg-written table, in the other namespace
    if "pyiceberg" in state:
        rows(
            conn,
            f"CREATE VIEW {t('py_totals')} AS SELECT count(*) AS n, sum(delay) AS delay, sum(distance) AS distance "
            f"FROM {t('flights', NS)}",
        )
        assert one(conn, f"SELECT * FROM {t('py_totals')}") == (answers["rows"], answers["sum_delay"], answers["sum_distance"])
        rows(conn, f"DROP VIEW {t('py_totals')}")
        assert not cat.view_exists((NS_T, "py_totals"))
    err = trino_error(conn, f"SELECT * FROM {t('py_totals')}")
    assert err.error_name == "TABLE_NOT_FOUND", err
    state["view"] = True


def test_11_delete_update_merge(conn, cat: RestCatalog, model: list[dict], busiest: list[str]) -> None:
    """Row-level DML (position delete files, format v2), replayed on the model."""
    need("inserted")
    table = t("flights")
    original, model = model, [dict(r) for r in model]
    gone, zeroed = busiest[0], busiest[1]

    n = sum(r["origin"] == gone for r in model)
    assert rows(conn, f"DELETE FROM {table} WHERE origin = {sql_str(gone)}") == [(n,)]
    model = [r for r in model if r["origin"] != gone]
    assert one(conn, TOTALS.format(table)) == totals(model)

    n = sum(r["origin"] == zeroed for r in model)
    assert rows(conn, f"UPDATE {table} SET delay = 0 WHERE origin = {sql_str(zeroed)}") == [(n,)]
    for r in model:
        if r["origin"] == zeroed:
            r["delay"] = 0
    assert one(conn, TOTALS.format(table)) == totals(model)

    # MERGE: bump two origins' delays, insert a flight on a new day (a new partition)
    bump = {busiest[2]: 5, busiest[3]: 7}
    matched = sum(r["origin"] in bump for r in model)
    got = rows(
        conn,
        f"MERGE INTO {table} t USING (VALUES ({sql_str(busiest[2])}, 5), ({sql_str(busiest[3])}, 7), ('ZZZ', 11)) "
        "AS s(origin, bump) ON t.origin = s.origin "
        "WHEN MATCHED THEN UPDATE SET delay = t.delay + s.bump "
        "WHEN NOT MATCHED THEN INSERT (date, delay, distance, origin, destination) "
        "VALUES (TIMESTAMP '2001-01-02 03:04:05', s.bump, 100, s.origin, 'LAS')",
    )
    assert got == [(matched + 1,)]
    for r in model:
        r["delay"] += bump.get(r["origin"], 0)
    model.append({"date": dt.datetime(2001, 1, 2, 3, 4, 5), "delay": 11, "distance": 100, "origin": "ZZZ", "destination": "LAS"})
    assert one(conn, TOTALS.format(table)) == totals(model)
    assert rows(conn, BY_ORIGIN.format(table)) == by_origin(model)
    days = rows(conn, f"SELECT CAST(date AS date), count(*) FROM {table} GROUP BY 1 ORDER BY 1")
    assert days == [(dt.date(2001, 1, 1), len(model) - 1), (dt.date(2001, 1, 2), 1)]

    tbl = cat.load_table((NS_T, "flights"))
    ops = [s.summary.operation.value for s in tbl.metadata.snapshots]
    assert ops == ["append", "append", "append", "delete", "overwrite", "overwrite"]
    assert int(tbl.current_snapshot().summary["total-delete-files"]) > 0
    # pyiceberg applies Trino's position deletes to the same rows
    data = tbl.scan().to_arrow()
    assert arrow_totals(data) == totals(model)
    assert sorted(data.to_pylist(), key=lambda r: tuple(map(str, r.values()))) == sorted(
        model, key=lambda r: tuple(map(str, r.values()))
    )
    # time travel to before the DML
    assert one(conn, TOTALS.format(table + f" FOR VERSION AS OF {state['trino_snapshots'][-1]}")) == totals(original)
    state["dml_model"] = model


def test_12_optimize_and_expire_snapshots(conn, cat: RestCatalog) -> None:
    need("dml_model")
    model = state["dml_model"]
    table = t("flights")
    before = cat.load_table((NS_T, "flights"))
    assert int(before.current_snapshot().summary["total-delete-files"]) > 0
    result = dict(rows(conn, f"ALTER TABLE {table} EXECUTE optimize"))
    assert result["removed_delete_files_count"] == int(before.current_snapshot().summary["total-delete-files"]), result
    assert one(conn, TOTALS.format(table)) == totals(model)
    after = cat.load_table((NS_T, "flights"))
    cur = after.current_snapshot()
    assert cur.summary.operation.value == "replace"
    assert (cur.summary["total-delete-files"], cur.summary["total-records"]) == ("0", str(len(model)))
    # a partition whose one file has no deletes is left as it is
    assert int(cur.summary["total-data-files"]) == len(list(after.scan().plan_files())) >= result["added_data_files_count"]

    rows(conn, f"ALTER TABLE {table} EXECUTE expire_snapshots(retention_threshold => '0s')")
    expired = cat.load_table((NS_T, "flights"))
    assert [s.snapshot_id for s in expired.metadata.snapshots] == [cur.snapshot_id]
    assert rows(conn, f"SELECT snapshot_id FROM {meta('snapshots', 'flights')}") == [(cur.snapshot_id,)]
    err = trino_error(conn, TOTALS.format(table + f" FOR VERSION AS OF {state['trino_snapshots'][1]}"))
    assert str(state["trino_snapshots"][1]) in err.message, err
    assert one(conn, TOTALS.format(table)) == totals(model)
    # the expired snapshots' manifest lists are gone (the data files the
    # optimize rewrote stay: their removal is recorded in the snapshot kept)
    live = {local_path(task.file.file_path) for task in expired.scan().plan_files()}
    assert all(p.is_file() for p in live)
    lists = {p.name for p in (local_path(expired.location()) / "metadata").glob("snap-*.avro")}
    assert lists == {Path(cur.manifest_list).name}
    state["optimized"] = True


def test_13_schema_evolution(conn, cat: RestCatalog) -> None:
    need("optimized")
    model = state["dml_model"]
    table = t("flights")
    ids = {f.name: f.field_id for f in cat.load_table((NS_T, "flights")).schema().fields}
    rows(conn, f"ALTER TABLE {table} ADD COLUMN note varchar")
    rows(conn, f"ALTER TABLE {table} RENAME COLUMN delay TO delay_min")
    assert rows(
        conn,
        f"INSERT INTO {table} VALUES (TIMESTAMP '2001-01-01 23:59:00', 3, 42, 'AAA', 'BBB', 'late')",
    ) == [(1,)]
    assert one(conn, f"SELECT count(*), count(note), sum(delay_min), sum(distance) FROM {table}") == (
        len(model) + 1,
        1,
        sum(r["delay"] for r in model) + 3,
        sum(r["distance"] for r in model) + 42,
    )
    tbl = cat.load_table((NS_T, "flights"))
    fields = [(f.name, f.field_id, str(f.field_type)) for f in tbl.schema().fields]
    assert fields == [
        ("date", ids["date"], "timestamp"),
        ("delay_min", ids["delay"], "long"),
        ("distance", ids["distance"], "long"),
        ("origin", ids["origin"], "string"),
        ("destination", ids["destination"], "string"),
        ("note", max(ids.values()) + 1, "string"),
    ]
    data = tbl.scan(row_filter="note IS NOT NULL").to_arrow().to_pylist()
    assert [(r["origin"], r["delay_min"], r["note"]) for r in data] == [("AAA", 3, "late")]


def test_14_ctas_and_rename(conn, cat: RestCatalog, answers: dict) -> None:
    need("schema", "pyiceberg")
    got = rows(
        conn,
        f"CREATE TABLE {t('ctas')} WITH (partitioning = ARRAY['hour(date)']) AS SELECT * FROM {t('flights', NS)}",
    )
    assert got == [(answers["rows"],)]
    want = (answers["rows"], answers["sum_delay"], answers["sum_distance"])
    assert one(conn, TOTALS.format(t("ctas"))) == want
    assert [str(f.transform) for f in cat.load_table((NS_T, "ctas")).spec().fields] == ["hour"]
    rows(conn, f"ALTER TABLE {t('ctas')} RENAME TO \"{NS_T}\".ctas_renamed")
    assert not cat.table_exists((NS_T, "ctas")) and cat.table_exists((NS_T, "ctas_renamed"))
    assert one(conn, TOTALS.format(t("ctas_renamed"))) == want
    assert arrow_totals(cat.load_table((NS_T, "ctas_renamed")).scan().to_arrow()) == want
    err = trino_error(conn, TOTALS.format(t("ctas")))
    assert err.error_name == "TABLE_NOT_FOUND", err
    state["ctas"] = True


def test_15_drop_table(conn, cat: RestCatalog) -> None:
    need("ctas")
    location = local_path(cat.load_table((NS_T, "ctas_renamed")).location())
    assert any(p.suffix == ".parquet" for p in files_under(location))
    rows(conn, f"DROP TABLE {t('ctas_renamed')}")
    assert not cat.table_exists((NS_T, "ctas_renamed"))
    assert ("ctas_renamed",) not in rows(conn, f'SHOW TABLES FROM {CAT}."{NS_T}"')
    assert files_under(location) == [], f"DROP TABLE left files under {location}"
    err = trino_error(conn, f"DROP TABLE {t('ctas_renamed')}")
    assert err.error_name == "TABLE_NOT_FOUND", err


def test_15b_tarn_maintains_trino_table(conn, model: list[dict]) -> None:
    """Tarn compacts, expires, rewrites the manifests of and removes a
    planted orphan from a table Trino wrote: six INSERTs into a table
    bucketed by origin, a DELETE and an UPDATE (Trino's position deletes).
    After each job Trino reads exactly the rows it read before."""
    need("pyiceberg")
    rows(conn, f'CREATE SCHEMA {CAT}."{NS_M}"')
    columns = ", ".join(f"{c} {ty}" for c, ty in FLIGHTS_COLUMNS)
    name = t("maintained", NS_M)
    rows(conn, f"CREATE TABLE {name} ({columns}) WITH (format_version = 2, partitioning = ARRAY['bucket(origin, 2)'])")
    for i in range(6):
        rows(conn, f"INSERT INTO {name} SELECT * FROM {t('flights', NS)} WHERE distance % 6 = {i}")
    rows(conn, f"DELETE FROM {name} WHERE origin = 'ORD'")
    rows(conn, f"UPDATE {name} SET delay = 0 WHERE origin = 'DEN'")
    want = sorted(
        (r["origin"], r["distance"], 0 if r["origin"] == "DEN" else r["delay"]) for r in model if r["origin"] != "ORD"
    )

    def read():
        got = rows(conn, f"SELECT origin, distance, delay FROM {name} ORDER BY origin, distance, delay")
        assert got == want
        return got

    done = maintenance.maintain(NS_M, "maintained", read)
    assert done["compact"]["files-rewritten"] >= 6, done["compact"]
    rows(conn, f"DROP TABLE {name}")
    rows(conn, f'DROP SCHEMA {CAT}."{NS_M}"')


def test_16_drop_schemas(conn, cat: RestCatalog) -> None:
    need("schema")
    err = trino_error(conn, f'DROP SCHEMA {CAT}."{NS_T}"')
    assert err.error_name == "SCHEMA_NOT_EMPTY", err
    for (name,) in rows(conn, f"SELECT table_name FROM {CAT}.information_schema.views WHERE table_schema = {sql_str(NS_T)}"):
        rows(conn, f"DROP VIEW {t(name)}")
    for name in [r[0] for r in rows(conn, f'SHOW TABLES FROM {CAT}."{NS_T}"')]:
        rows(conn, f"DROP TABLE {t(name)}")
    rows(conn, f'DROP SCHEMA {CAT}."{NS_T}"')
    assert not cat.namespace_exists(NS_T)
    assert (NS_T,) not in rows(conn, f"SHOW SCHEMAS FROM {CAT}")
    # the pyiceberg-written namespace too: Trino drops tables it did not write
    if "pyiceberg" in state:
        for name in ("flights", "flights_part"):
            location = local_path(cat.load_table((NS, name)).location())
            rows(conn, f"DROP TABLE {t(name, NS)}")
            assert not cat.table_exists((NS, name))
            assert files_under(location) == [], f"DROP TABLE left files under {location}"
        rows(conn, f'DROP SCHEMA {CAT}."{NS}"')
        assert not cat.namespace_exists(NS)


# --- the topic-materialized table -------------------------------------------------------


def wait_topic_table(cat: RestCatalog, ident: str, want: int) -> None:
    deadline = time.monotonic() + 120
    total = -1
    while time.monotonic() < deadline:
        try:
            snap = cat.load_table(ident).current_snapshot()
            total = int(snap.summary["total-records"]) if snap and snap.summary else 0
        except NoSuchTableError:  # created when the demo enables the topic
            total = -1
        assert total <= want, f"{ident} has {total} rows, more than the topic's {want}"
        if total == want:
            return
        time.sleep(0.5)
    pytest.fail(f"{ident} has {total} rows after 120s, not {want}", pytrace=False)


def test_17_topic_materialized_table(conn, cat: RestCatalog, answers: dict) -> None:
    """Trino reads the table Tarn materializes from a Kafka topic (`tarn demo`:
    the 10,000 flights rows of testdata as Avro through an in-process Kafka):
    totals equal testdata/answers.json, each Kafka record exactly once."""
    ident = os.environ.get("TARN_TOPIC_TABLE")
    if not ident:
        missing("no topic-materialized table (TARN_TOPIC_TABLE): conformance/run starts `tarn demo` for this suite")
    need("server")
    wait_topic_table(cat, ident, answers["rows"])
    ns, name = ident.rsplit(".", 1)
    table = t(name, ns)
    assert one(conn, TOTALS.format(table)) == (answers["rows"], answers["sum_delay"], answers["sum_distance"])
    assert one(conn, f'SELECT count(*) FROM (SELECT DISTINCT _kafka."partition", _kafka."offset" FROM {table})') == (
        answers["rows"],
    )
    per_partition = rows(
        conn,
        f'SELECT _kafka."partition", count(*), min(_kafka."offset"), max(_kafka."offset") FROM {table} GROUP BY 1 ORDER BY 1',
    )
    assert per_partition == [(p, n, 0, n - 1) for p, n in [(0, 3334), (1, 3333), (2, 3333)]]
    cols = rows(conn, f"SHOW COLUMNS FROM {table}")
    assert [(c[0], c[1]) for c in cols[:5]] == FLIGHTS_COLUMNS
    assert cols[5][0] == "_kafka" and cols[5][1].startswith('row("partition" integer, "offset" bigint'), cols[5]
    state["topic"] = True


def test_18_topic_table_refuses_trino_writes(conn, cat: RestCatalog, answers: dict) -> None:
    """A topic's table belongs to the catalog: Trino's commit is refused (403)
    and the table keeps exactly the topic's rows."""
    need("topic")
    ident = os.environ["TARN_TOPIC_TABLE"]
    ns, name = ident.rsplit(".", 1)
    table = t(name, ns)
    before = cat.load_table(ident).current_snapshot().snapshot_id
    err = trino_error(conn, f"INSERT INTO {table} SELECT * FROM {table} LIMIT 1")
    assert "403" in err.message or "Forbidden" in err.message or "forbidden" in err.message, err
    assert cat.load_table(ident).current_snapshot().snapshot_id == before
    assert one(conn, f"SELECT count(*) FROM {table}") == (answers["rows"],)


# --- Trino's own log --------------------------------------------------------------------


def test_99_no_iceberg_errors_in_trino_log() -> None:
    """Errors the connector only logs (a failed REST call behind a query that
    succeeded, such as a metrics report) fail here."""
    log = Path(env("TARN_TRINO_LOG"))
    assert log.is_file(), log
    ansi = re.compile(r"\x1b\[[0-9;]*m")
    bad = []
    for line in log.read_text(errors="replace").splitlines():
        line = ansi.sub("", line)
        if re.search(r"\t(WARN|ERROR)\t", line) and re.search(r"org\.apache\.iceberg|io\.trino\.plugin\.iceberg", line):
            bad.append(line[:300])
    assert bad == []
