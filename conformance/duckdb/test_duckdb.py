"""DuckDB 1.4 (iceberg extension, loaded offline) against a running Tarn.

pyiceberg writes first, into one namespace of this run:
  flights          testdata/flights-10k.parquet in two appends (4,000 + 6,000 rows)
  flights_part     the same rows, partitioned by hour(date) and bucket(4, origin)
  evolved          150 rows: 100 written, then `note` added and `delay` renamed
                   to `delay_min`, then 50 rows written with a note
  flights_dw       empty, for DuckDB to insert into

Then DuckDB attaches Tarn as an Iceberg REST catalog (warehouse "default",
AUTHORIZATION_TYPE 'none') and lists and reads those tables, with every
number checked against pyarrow's computation on the Parquet file (and
testdata/answers.json): totals, counts per origin, filter pushdown, the
partitioned and the evolved table, time travel. Last, DuckDB writes (create
schema and table, INSERT, UPDATE, DELETE, DROP), pyiceberg reads what it
wrote, and a purge through Tarn removes DuckDB's files. Writes DuckDB 1.4
cannot do are skipped with DuckDB's own error as the reason, and so is a
DuckDB bug the test proves without the catalog; any other error fails.

Then Tarn maintains tables DuckDB wrote (conformance/lib/maintenance.py):
compaction, expiry, manifest rewriting and orphan removal of a table of
inserts and a DELETE, each followed by DuckDB and pyiceberg reading the
same rows; and a DuckDB DELETE committed while Tarn compacts the table
stays applied (compaction yields to it, then compacts with it).

The steps run in file order and share state; a step whose predecessor
failed fails too (it does not skip), naming the step it waited for.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import unquote, urlparse

import duckdb
import duckdb_ext
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError
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
WAREHOUSE_NAME = "default"  # Tarn serves one warehouse, by this name
FIRST = 4000  # rows in the first append of `flights`

# The flights file as an Iceberg schema, every field optional as in the file.
FLIGHTS_SCHEMA = Schema(
    NestedField(1, "date", TimestampType(), required=False),
    NestedField(2, "delay", LongType(), required=False),
    NestedField(3, "distance", LongType(), required=False),
    NestedField(4, "origin", StringType(), required=False),
    NestedField(5, "destination", StringType(), required=False),
)

RUN = uuid.uuid4().hex[:12]
NS = f"tarn_duckdb_{RUN}"  # written by pyiceberg
NS_DUCK = f"tarn_duckdb_{RUN}_w"  # created by DuckDB
NS_MAINT = f"tarn_duckdb_{RUN}_m"  # created by DuckDB, maintained by Tarn

state: dict = {}


def need(*steps: str) -> None:
    for step in steps:
        if step not in state:
            pytest.fail(f"needs step {step!r}, which did not complete", pytrace=False)


def env_uri() -> str:
    uri = os.environ.get("TARN_URI", "").strip().rstrip("/")
    if not uri:
        pytest.fail("TARN_URI is not set: start Tarn (or conformance/run does it) and export TARN_URI", pytrace=False)
    return uri


def sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def ident(*parts: str) -> str:
    return ".".join('"' + p.replace('"', '""') + '"' for p in parts)


def tarn(name: str, ns: str = NS) -> str:
    """A table of the attached catalog, quoted for DuckDB."""
    return ident("tarn", ns, name)


def local_path(uri: str) -> Path:
    parsed = urlparse(uri)
    assert parsed.scheme == "file", uri
    return Path(unquote(parsed.path))


def totals(t: pa.Table) -> dict:
    return {
        "rows": t.num_rows,
        "sum_distance": pc.sum(t["distance"]).as_py() if t.num_rows else None,
        "sum_delay": pc.sum(t["delay"]).as_py() if t.num_rows else None,
    }


def per_origin(t: pa.Table) -> dict:
    rows = t.group_by("origin").aggregate([("origin", "count")]).to_pylist()
    return {r["origin"]: r["origin_count"] for r in rows}


@pytest.fixture(scope="module")
def answers() -> dict:
    return json.loads(ANSWERS_JSON.read_text())["flights-10k.parquet"]


@pytest.fixture(scope="module")
def flights(answers: dict) -> pa.Table:
    """The 10,000 flights, checked against testdata/answers.json first."""
    t = pq.read_table(FLIGHTS_PARQUET)
    assert totals(t) == {"rows": answers["rows"], "sum_distance": answers["sum_distance"], "sum_delay": answers["sum_delay"]}
    return t


@pytest.fixture(scope="module")
def busiest(flights: pa.Table) -> list[str]:
    """The five origins with the most flights."""
    counts = per_origin(flights)
    return sorted(counts, key=lambda o: (-counts[o], o))[:5]


@pytest.fixture(scope="module")
def cat() -> RestCatalog:
    props = {"uri": env_uri()}
    if token := os.environ.get("TARN_TOKEN"):
        props["token"] = token
    c = RestCatalog("tarn_duckdb", **props)
    yield c
    for ns in (NS_MAINT, NS_DUCK, NS):
        try:
            for t in c.list_tables(ns):
                c.purge_table(t)
            c.drop_namespace(ns)
        except (NoSuchNamespaceError, NoSuchTableError):
            pass
        except Exception:  # noqa: BLE001 - cleanup must not mask the result
            pass


@pytest.fixture(scope="module")
def con():
    """DuckDB with the iceberg extension loaded from the venv, never downloaded."""
    c = duckdb_ext.init(duckdb.connect())
    c.execute("SET autoinstall_known_extensions = false")
    yield c
    c.close()


def rows(con, sql: str, params=None) -> list[tuple]:
    return con.execute(sql, params or []).fetchall()


def one(con, sql: str, params=None):
    r = rows(con, sql, params)
    assert len(r) == 1, r
    return r[0]


def extension_version(con) -> str:
    r = con.execute("SELECT extension_version FROM duckdb_extensions() WHERE extension_name = 'iceberg'").fetchone()
    return r[0] if r else ""


# --- pyiceberg writes ---------------------------------------------------------


def test_01_pyiceberg_writes(cat: RestCatalog, flights: pa.Table) -> None:
    cat.create_namespace(NS, {"owner": "tarn-conformance-duckdb"})

    t = cat.create_table((NS, "flights"), schema=FLIGHTS_SCHEMA)
    t.append(flights.slice(0, FIRST))
    t.append(flights.slice(FIRST))
    t = cat.load_table((NS, "flights"))
    snaps = t.metadata.snapshots
    assert len(snaps) == 2
    state["snapshots"] = [s.snapshot_id for s in snaps]
    assert t.current_snapshot().snapshot_id == state["snapshots"][1]

    spec = PartitionSpec(
        PartitionField(source_id=1, field_id=1000, transform=HourTransform(), name="date_hour"),
        PartitionField(source_id=4, field_id=1001, transform=BucketTransform(4), name="origin_bucket"),
    )
    p = cat.create_table((NS, "flights_part"), schema=FLIGHTS_SCHEMA, partition_spec=spec)
    p.append(flights)
    p = cat.load_table((NS, "flights_part"))
    assert not p.spec().is_unpartitioned()
    state["part_files"] = len(p.inspect.files())
    assert state["part_files"] > 4, "one file per partition"

    e = cat.create_table((NS, "evolved"), schema=FLIGHTS_SCHEMA)
    e.append(flights.slice(0, 100))
    with e.update_schema() as u:
        u.add_column("note", StringType(), doc="added after 100 rows")
        u.rename_column("delay", "delay_min")
    e = cat.load_table((NS, "evolved"))
    later = flights.slice(100, 50).rename_columns(["date", "delay_min", "distance", "origin", "destination"])
    later = later.append_column("note", pa.array([f"note {i}" for i in range(50)], pa.large_string()))
    e.append(later)
    e = cat.load_table((NS, "evolved"))
    assert e.schema().schema_id == 1 and len(e.metadata.schemas) == 2
    state["evolved_first_snapshot"] = e.metadata.snapshots[0].snapshot_id

    cat.create_table((NS, "flights_dw"), schema=FLIGHTS_SCHEMA)
    state["pyiceberg"] = True


# --- DuckDB reads -------------------------------------------------------------


def test_02_attach_offline(con) -> None:
    need("pyiceberg")
    con.execute("LOAD iceberg")
    ext_dir = duckdb_ext.get_extension_dir()
    loaded = {
        name: path
        for name, path in rows(con, "SELECT extension_name, install_path FROM duckdb_extensions() WHERE loaded")
    }
    assert "iceberg" in loaded
    assert loaded["iceberg"].startswith(ext_dir), f"iceberg loaded from {loaded['iceberg']}, not the venv's {ext_dir}"
    con.execute(
        f"ATTACH {sql_str(WAREHOUSE_NAME)} AS tarn "
        f"(TYPE iceberg, ENDPOINT {sql_str(env_uri())}, AUTHORIZATION_TYPE 'none')"
    )
    assert ("tarn", "iceberg") in rows(con, "SELECT database_name, type FROM duckdb_databases()")
    state["attached"] = True


def test_03_list_schemas_and_tables(con) -> None:
    need("attached")
    schemas = {r[0] for r in rows(con, "SELECT schema_name FROM information_schema.schemata WHERE catalog_name = 'tarn'")}
    assert NS in schemas
    tables = {
        (r[0], r[1], r[2])
        for r in rows(con, "SELECT database, schema, name FROM (SHOW ALL TABLES) WHERE database = 'tarn'")
    }
    want = {("tarn", NS, n) for n in ("flights", "flights_part", "evolved", "flights_dw")}
    assert want <= tables, f"SHOW ALL TABLES: {sorted(tables)}"
    info = {
        (r[0], r[1])
        for r in rows(
            con,
            "SELECT table_name, table_type FROM information_schema.tables WHERE table_catalog = 'tarn' AND table_schema = ?",
            [NS],
        )
    }
    assert info == {(n, "BASE TABLE") for n in ("flights", "flights_part", "evolved", "flights_dw")}
    cols = rows(con, f"DESCRIBE {tarn('flights')}")
    assert [(c[0], c[1]) for c in cols] == [
        ("date", "TIMESTAMP"),
        ("delay", "BIGINT"),
        ("distance", "BIGINT"),
        ("origin", "VARCHAR"),
        ("destination", "VARCHAR"),
    ]


def test_04_totals(con, answers: dict) -> None:
    need("attached")
    n, dist, delay = one(con, f"SELECT count(*), sum(distance), sum(delay) FROM {tarn('flights')}")
    assert (n, dist, delay) == (answers["rows"], answers["sum_distance"], answers["sum_delay"])


def test_05_count_per_origin(con, flights: pa.Table, busiest: list[str]) -> None:
    need("attached")
    want = per_origin(flights)
    got = dict(
        rows(
            con,
            f"SELECT origin, count(*) FROM {tarn('flights')} WHERE origin IN (SELECT unnest(?)) GROUP BY origin",
            [busiest],
        )
    )
    assert got == {o: want[o] for o in busiest}
    # every origin, not just the busiest
    assert dict(rows(con, f"SELECT origin, count(*) FROM {tarn('flights')} GROUP BY origin")) == want


def test_06_filter_pushdown(con, flights: pa.Table, busiest: list[str]) -> None:
    need("attached")
    origin = busiest[1]
    q = f"SELECT count(*), sum(delay) FROM {tarn('flights')} WHERE origin = {sql_str(origin)}"
    plan = "\n".join(r[1] for r in rows(con, "EXPLAIN " + q))
    assert "ICEBERG_SCAN" in plan, plan
    assert re.search(r"Filters:\s*origin\s*=\s*'" + re.escape(origin) + "'", plan), f"filter not pushed into the scan:\n{plan}"
    sel = flights.filter(pc.equal(flights["origin"], origin))
    assert one(con, q) == (sel.num_rows, pc.sum(sel["delay"]).as_py())

    sel = flights.filter(pc.greater_equal(flights["distance"], 2000))
    got = one(con, f"SELECT count(*), sum(distance) FROM {tarn('flights')} WHERE distance >= 2000")
    assert got == (sel.num_rows, pc.sum(sel["distance"]).as_py())


def test_07_partitioned_table(con, flights: pa.Table, answers: dict, busiest: list[str]) -> None:
    need("attached")
    n, dist, delay = one(con, f"SELECT count(*), sum(distance), sum(delay) FROM {tarn('flights_part')}")
    assert (n, dist, delay) == (answers["rows"], answers["sum_distance"], answers["sum_delay"])
    want = per_origin(flights)
    got = dict(
        rows(
            con,
            f"SELECT origin, count(*) FROM {tarn('flights_part')} WHERE origin IN (SELECT unnest(?)) GROUP BY origin",
            [busiest],
        )
    )
    assert got == {o: want[o] for o in busiest}
    # a filter on the hour-partitioned source column
    hour = pc.hour(flights["date"])
    sel = flights.filter(pc.less(hour, 9))
    got = one(
        con,
        f"SELECT count(*), sum(distance) FROM {tarn('flights_part')} WHERE date < TIMESTAMP '2001-01-01 09:00:00'",
    )
    assert got == (sel.num_rows, pc.sum(sel["distance"]).as_py())


def test_08_evolved_table(con, flights: pa.Table) -> None:
    need("attached")
    cols = [(c[0], c[1]) for c in rows(con, f"DESCRIBE {tarn('evolved')}")]
    assert cols == [
        ("date", "TIMESTAMP"),
        ("delay_min", "BIGINT"),
        ("distance", "BIGINT"),
        ("origin", "VARCHAR"),
        ("destination", "VARCHAR"),
        ("note", "VARCHAR"),
    ]
    first150 = flights.slice(0, 150)
    n, n_note, delay = one(con, f"SELECT count(*), count(note), sum(delay_min) FROM {tarn('evolved')}")
    # the renamed column keeps its data (read by field id), the new one is null for old rows
    assert (n, n_note, delay) == (150, 50, pc.sum(first150["delay"]).as_py())
    # null for exactly the 100 rows written before the column existed
    nulls = one(con, f"SELECT count(*) FILTER (WHERE note IS NULL), min(distance) FILTER (WHERE note IS NULL) FROM {tarn('evolved')}")
    assert nulls == (100, pc.min(flights.slice(0, 100)["distance"]).as_py())
    notes = [r[0] for r in rows(con, f"SELECT note FROM {tarn('evolved')} WHERE note IS NOT NULL ORDER BY note")]
    assert notes == sorted(f"note {i}" for i in range(50))
    state["evolved"] = True


def test_08b_evolved_table_is_null_filter(con, cat: RestCatalog) -> None:
    """`WHERE note IS NULL` pushed into the scan must keep the files written before `note` existed."""
    need("evolved")
    got = one(con, f"SELECT count(*) FROM {tarn('evolved')} WHERE note IS NULL")
    if got != (100,):
        # Same query without the catalog, straight from the metadata file: the
        # same wrong answer means DuckDB's pruning, not what Tarn served.
        ml = cat.load_table((NS, "evolved")).metadata_location
        direct = one(con, f"SELECT count(*) FROM iceberg_scan({sql_str(ml)}) WHERE note IS NULL")
        if direct == got:
            pytest.skip(
                f"DuckDB {duckdb.__version__} (iceberg {extension_version(con)}) bug duckdb/duckdb-iceberg#782, "
                f"fixed by PR #819 after this build: an IS NULL filter prunes data files whose manifest entry has "
                f"no null count for the column (written before it was added); {got[0]} rows instead of 100, the "
                f"same with iceberg_scan on the metadata file, without the catalog"
            )
    assert got == (100,)


def test_09_time_travel(con, flights: pa.Table) -> None:
    need("attached")
    first, second = state["snapshots"]
    listed = {r[0] for r in rows(con, f"SELECT snapshot_id FROM iceberg_snapshots({tarn('flights')})")}
    assert listed == {first, second}
    t1 = totals(flights.slice(0, FIRST))
    got = one(con, f"SELECT count(*), sum(distance), sum(delay) FROM {tarn('flights')} AT (VERSION => {first})")
    assert got == (t1["rows"], t1["sum_distance"], t1["sum_delay"])
    t2 = totals(flights)
    got = one(con, f"SELECT count(*), sum(distance), sum(delay) FROM {tarn('flights')} AT (VERSION => {second})")
    assert got == (t2["rows"], t2["sum_distance"], t2["sum_delay"])
    # the evolved table before its schema change: 100 rows
    got = one(con, f"SELECT count(*) FROM {tarn('evolved')} AT (VERSION => {state['evolved_first_snapshot']})")
    assert got == (100,)


# --- DuckDB writes, read back with pyiceberg ------------------------------------


def test_10_duckdb_create_and_insert(con, cat: RestCatalog, flights: pa.Table, answers: dict) -> None:
    need("attached")
    con.execute(f"CREATE SCHEMA {ident('tarn', NS_DUCK)}")
    assert cat.namespace_exists(NS_DUCK)
    con.execute(
        f"CREATE TABLE {tarn('duck_flights', NS_DUCK)} "
        "(date TIMESTAMP, delay BIGINT, distance BIGINT, origin VARCHAR, destination VARCHAR)"
    )
    src = f"read_parquet({sql_str(str(FLIGHTS_PARQUET))})"
    # two INSERTs, two snapshots
    con.execute(f"INSERT INTO {tarn('duck_flights', NS_DUCK)} SELECT * FROM {src} WHERE origin < 'M'")
    con.execute(f"INSERT INTO {tarn('duck_flights', NS_DUCK)} SELECT * FROM {src} WHERE NOT (origin < 'M')")
    got = one(con, f"SELECT count(*), sum(distance), sum(delay) FROM {tarn('duck_flights', NS_DUCK)}")
    assert got == (answers["rows"], answers["sum_distance"], answers["sum_delay"])

    t = cat.load_table((NS_DUCK, "duck_flights"))
    assert [f.name for f in t.schema().fields] == ["date", "delay", "distance", "origin", "destination"]
    assert t.location().startswith(os.environ.get("TARN_WAREHOUSE", "").rstrip("/") + "/")
    appends = [s for s in t.metadata.snapshots if s.summary and s.summary.operation.value == "append"]
    assert len(appends) == 2, t.metadata.snapshots
    data = t.scan().to_arrow()
    assert totals(data) == {"rows": answers["rows"], "sum_distance": answers["sum_distance"], "sum_delay": answers["sum_delay"]}
    assert per_origin(data) == per_origin(flights)
    for task in t.scan().plan_files():
        assert local_path(task.file.file_path).is_file()
    state["duck_flights"] = True


def test_11_duckdb_insert_into_pyiceberg_table(con, cat: RestCatalog, flights: pa.Table, answers: dict) -> None:
    need("attached")
    con.execute(f"INSERT INTO {tarn('flights_dw')} SELECT * FROM read_parquet({sql_str(str(FLIGHTS_PARQUET))})")
    t = cat.load_table((NS, "flights_dw"))
    assert len(t.metadata.snapshots) == 1
    data = t.scan().to_arrow()
    assert totals(data) == {"rows": answers["rows"], "sum_distance": answers["sum_distance"], "sum_delay": answers["sum_delay"]}
    assert per_origin(data) == per_origin(flights)


def test_12_duckdb_update_and_delete(con, cat: RestCatalog, flights: pa.Table, busiest: list[str]) -> None:
    need("duck_flights")
    table = tarn("duck_flights", NS_DUCK)
    gone, zeroed = busiest[0], busiest[1]
    con.execute(f"DELETE FROM {table} WHERE origin = ?", [gone])
    con.execute(f"UPDATE {table} SET delay = 0 WHERE origin = ?", [zeroed])

    kept = flights.filter(pc.not_equal(flights["origin"], gone))
    want_delay = pc.sum(pc.if_else(pc.equal(kept["origin"], zeroed), 0, kept["delay"])).as_py()
    want = (kept.num_rows, pc.sum(kept["distance"]).as_py(), want_delay)
    assert one(con, f"SELECT count(*), sum(distance), sum(delay) FROM {table}") == want

    data = cat.load_table((NS_DUCK, "duck_flights")).scan().to_arrow()
    assert (data.num_rows, pc.sum(data["distance"]).as_py(), pc.sum(data["delay"]).as_py()) == want
    assert gone not in per_origin(data)


def test_13_duckdb_create_table_as_select(con, cat: RestCatalog, answers: dict) -> None:
    need("duck_flights")
    table = tarn("duck_ctas", NS_DUCK)
    # Tarn makes a staged table's directories on file:// warehouses, since
    # DuckDB writes CTAS data before committing and creates no parents.
    con.execute(f"CREATE TABLE {table} AS SELECT * FROM read_parquet({sql_str(str(FLIGHTS_PARQUET))})")
    got = one(con, f"SELECT count(*), sum(distance), sum(delay) FROM {table}")
    assert got == (answers["rows"], answers["sum_distance"], answers["sum_delay"])
    data = cat.load_table((NS_DUCK, "duck_ctas")).scan().to_arrow()
    assert totals(data) == {"rows": answers["rows"], "sum_distance": answers["sum_distance"], "sum_delay": answers["sum_delay"]}


def test_14_duckdb_insert_into_partitioned_table(con, cat: RestCatalog, flights: pa.Table) -> None:
    need("attached")
    try:
        con.execute(
            f"INSERT INTO {tarn('flights_part')} SELECT * FROM read_parquet({sql_str(str(FLIGHTS_PARQUET))}) "
            "WHERE origin = 'ORD'"
        )
    except duckdb.NotImplementedException as e:
        pytest.skip(f"DuckDB 1.4.4: {str(e).splitlines()[0]}")
    ord_count = per_origin(flights)["ORD"]
    data = cat.load_table((NS, "flights_part")).scan().to_arrow()
    assert data.num_rows == flights.num_rows + ord_count


def test_15_duckdb_alter_table(con, cat: RestCatalog) -> None:
    need("duck_flights")
    try:
        con.execute(f"ALTER TABLE {tarn('duck_flights', NS_DUCK)} ADD COLUMN carrier VARCHAR")
    except duckdb.NotImplementedException as e:
        pytest.skip(f"DuckDB 1.4.4 ALTER TABLE ADD COLUMN on an Iceberg table: {str(e).splitlines()[0]}")
    t = cat.load_table((NS_DUCK, "duck_flights"))
    assert "carrier" in [f.name for f in t.schema().fields]


def test_16_duckdb_drop(con, cat: RestCatalog) -> None:
    need("duck_flights")
    con.execute(f"DROP TABLE {tarn('duck_flights', NS_DUCK)}")
    assert not cat.table_exists((NS_DUCK, "duck_flights"))
    for t in cat.list_tables(NS_DUCK):  # a CTAS table, if DuckDB could make one
        con.execute(f"DROP TABLE {tarn(t[-1], NS_DUCK)}")
    con.execute(f"DROP SCHEMA {ident('tarn', NS_DUCK)}")
    assert not cat.namespace_exists(NS_DUCK)


def test_17_purge_duckdb_written_table(cat: RestCatalog) -> None:
    """Purging a table DuckDB wrote removes DuckDB's manifest lists, manifests and data files too."""
    need("pyiceberg")
    t = cat.load_table((NS, "flights_dw"))
    location = local_path(t.location())
    written = [p for p in location.rglob("*") if p.is_file()]
    assert any(p.suffix == ".parquet" for p in written), "DuckDB's INSERT wrote no data file here"
    cat.purge_table((NS, "flights_dw"))
    assert not cat.table_exists((NS, "flights_dw"))
    left = sorted(str(p.relative_to(location)) for p in location.rglob("*") if p.is_file()) if location.exists() else []
    assert left == [], f"purge left {len(left)} of {len(written)} files under {location}"


def test_18_topic_materialized_table(con, cat: RestCatalog, answers: dict) -> None:
    """DuckDB reads the table Tarn materializes from a Kafka topic (`tarn demo`:
    the 10,000 flights rows of testdata as Avro through an in-process Kafka):
    totals equal testdata/answers.json, each Kafka record exactly once, and
    the _kafka struct's fields are readable."""
    ident = os.environ.get("TARN_TOPIC_TABLE")
    if not ident:
        missing("no topic-materialized table (TARN_TOPIC_TABLE): conformance/run starts `tarn demo` for this suite")
    need("attached")
    deadline = time.monotonic() + 120
    total = -1
    while time.monotonic() < deadline:
        try:
            snap = cat.load_table(ident).current_snapshot()
            total = int(snap.summary["total-records"]) if snap and snap.summary else 0
        except Exception:  # created when the demo enables the topic
            total = -1
        assert total <= answers["rows"], f"{ident} has {total} rows, more than the topic's"
        if total == answers["rows"]:
            break
        time.sleep(0.5)
    assert total == answers["rows"], f"{ident} has {total} rows after 120s"
    ns, name = ident.rsplit(".", 1)
    q = f'tarn."{ns}"."{name}"'
    assert one(con, f"SELECT count(*), sum(delay), sum(distance) FROM {q}") == (
        answers["rows"],
        answers["sum_delay"],
        answers["sum_distance"],
    )
    assert one(con, f"SELECT count(*) FROM (SELECT DISTINCT _kafka.partition, _kafka.offset FROM {q})") == (answers["rows"],)
    assert rows(con, f"SELECT _kafka.partition, count(*), min(_kafka.offset), max(_kafka.offset) FROM {q} GROUP BY 1 ORDER BY 1") == [
        (0, 3334, 0, 3333),
        (1, 3333, 0, 3332),
        (2, 3333, 0, 3332),
    ]


# --- Tarn maintains what DuckDB wrote -------------------------------------------


def test_19_maintenance_of_duckdb_written_table(con, cat: RestCatalog) -> None:
    """Compaction, expiry, manifest rewriting and orphan removal of a table
    DuckDB wrote (six INSERTs and a DELETE: DuckDB's manifest lists, its
    position delete manifest and files): after each job DuckDB and
    pyiceberg read exactly the rows they read before."""
    need("attached")
    con.execute(f"CREATE SCHEMA {ident('tarn', NS_MAINT)}")
    table = tarn("maintained", NS_MAINT)
    con.execute(f"CREATE TABLE {table} (id BIGINT, name VARCHAR)")
    for i in range(6):
        con.execute(f"INSERT INTO {table} SELECT r, 'n' || r FROM range({i * 100}, {(i + 1) * 100}) t(r)")
    con.execute(f"DELETE FROM {table} WHERE id % 7 = 0")
    want = [(i, f"n{i}") for i in range(600) if i % 7]

    def read():
        duck = rows(con, f"SELECT id, name FROM {table} ORDER BY id")
        py = sorted((r["id"], r["name"]) for r in cat.load_table((NS_MAINT, "maintained")).scan().to_arrow().to_pylist())
        assert duck == py == want
        return duck

    done = maintenance.maintain(NS_MAINT, "maintained", read)
    assert done["compact"]["files-rewritten"] >= 6, done["compact"]
    state["maintained"] = True


def test_20_duckdb_delete_during_compaction(con, cat: RestCatalog) -> None:
    """DuckDB plans a DELETE on the head (BEGIN; DELETE), Tarn starts
    compacting the table, and DuckDB's COMMIT lands while the compaction
    writes its files; DuckDB writes the snapshot's summary with nothing but
    its operation. Compaction must yield ("delete files added during
    compaction") instead of committing files that hold the deleted row;
    the next compaction applies the delete. A round whose COMMIT misses the
    compaction's window (either side) proves nothing and is run again on a
    larger table."""
    need("maintained")
    for n in (20_000, 60_000, 150_000):
        name = f"race_{n}"
        table = tarn(name, NS_MAINT)
        con.execute(f"CREATE TABLE {table} (id BIGINT, payload VARCHAR)")
        for i in range(12):
            con.execute(f"INSERT INTO {table} SELECT r, md5(r::VARCHAR) FROM range({i * n}, {(i + 1) * n}) t(r)")
        maintenance.set_properties(NS_MAINT, name, maintenance.PROPERTIES)
        gone = 5 * n + 17  # in the sixth file
        location = maintenance.local_path(cat.load_table((NS_MAINT, name)).location())

        con.execute("BEGIN TRANSACTION")
        con.execute(f"DELETE FROM {table} WHERE id = ?", [gone])
        before = {p for p in (location / "data").rglob("*") if p.is_file()}
        result: dict = {}

        def compact() -> None:
            try:
                [result["r"]] = maintenance.run_jobs(NS_MAINT, name, "compact")
            except BaseException as e:  # noqa: BLE001 - reported below
                result["error"] = e

        worker = threading.Thread(target=compact)
        worker.start()
        deadline = time.monotonic() + 120
        # Compaction is writing once a file appears that no snapshot has.
        while not ({p for p in (location / "data").rglob("*") if p.is_file()} - before) and worker.is_alive():
            assert time.monotonic() < deadline, "compaction wrote no file within 120 s"
            time.sleep(0.01)
        committed = True
        try:
            con.execute("COMMIT")
        except duckdb.Error:
            committed = False  # compaction committed first: DuckDB's assertion on main failed
            try:
                con.execute("ROLLBACK")
            except duckdb.Error:
                pass  # DuckDB ended the transaction itself
        worker.join(600)
        assert "error" not in result, result.get("error")
        r = result["r"]

        deleted = one(con, f"SELECT count(*) FROM {table} WHERE id = ?", [gone])[0] == 0
        total = one(con, f"SELECT count(*) FROM {table}")[0]
        if committed:
            assert deleted, f"the deleted row is back after compaction {r}"
            assert total == 12 * n - 1
        else:
            assert total == 12 * n
        if not (committed and r.get("skipped") == "delete files added during compaction"):
            continue  # the COMMIT landed before compaction loaded the table, or after it committed
        snap = cat.load_table((NS_MAINT, name)).current_snapshot()
        assert snap.summary.operation.value == "delete" and not snap.summary.additional_properties, snap.summary

        [again] = maintenance.run_jobs(NS_MAINT, name, "compact")
        assert not again.get("skipped"), again
        assert one(con, f"SELECT count(*), count(*) FILTER (WHERE id = {gone}) FROM {table}") == (12 * n - 1, 0)
        py = cat.load_table((NS_MAINT, name)).scan(row_filter=f"id = {gone}").to_arrow()
        assert py.num_rows == 0
        return
    pytest.fail("no round had DuckDB's COMMIT land during the compaction")
