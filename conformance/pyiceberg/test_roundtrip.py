"""Round trips through pyiceberg's RestCatalog, one feature per test.

Each test makes its own namespace (uuid suffix) and tables, checks exact
values computed with pyarrow from testdata/flights-10k.parquet, and drops
what it made. Nothing here is skipped: a feature the server lacks fails.
"""

from __future__ import annotations

import datetime

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import (
    CommitFailedException,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from pyiceberg.expressions import (
    And,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    Not,
    Or,
)
from pyiceberg.partitioning import PartitionField
from pyiceberg.schema import Schema
from pyiceberg.transforms import DayTransform, IdentityTransform
from pyiceberg.types import IntegerType, LongType, NestedField, StringType, TimestampType
from pyiceberg.view.metadata import SQLViewRepresentation, ViewVersion

from conftest import FLIGHTS_SCHEMA, canonical, new_catalog, sums


def _ns(cleanup, run_id: str, what: str) -> tuple:
    ns = (f"tarn_rt_{what}_{run_id}",)
    cleanup.catalog.create_namespace(ns)
    return cleanup.namespace(ns)


def _table_with(cleanup, ns: tuple, name: str, data: pa.Table, schema: Schema = FLIGHTS_SCHEMA):
    ident = cleanup.table((*ns, name))
    table = cleanup.catalog.create_table(ident, schema=schema)
    if data is not None and data.num_rows:
        table.append(data)
    return table


def _ops(table) -> list[tuple[str, int]]:
    """(operation, total-records) of every snapshot, oldest first."""
    return [(s.summary.operation.value, int(s.summary["total-records"])) for s in table.snapshots()]


def _reload(table):
    """The table as a fresh client sees it (new catalog session, new load)."""
    return new_catalog("tarn_reader").load_table(table.name())


# --- writes -----------------------------------------------------------------


def test_overwrite_full_and_filtered(cleanup, run_id: str, flights: pa.Table, answers: dict) -> None:
    ns = _ns(cleanup, run_id, "overwrite")
    table = _table_with(cleanup, ns, "flights", flights)
    assert sums(table.scan().to_arrow()) == answers

    # Filtered overwrite: replace the ATL rows by the same rows with delay 0.
    is_atl = pc.equal(flights["origin"], "ATL")
    atl = flights.filter(is_atl)
    assert atl.num_rows > 0
    zeroed = atl.set_column(1, "delay", pa.array([0] * atl.num_rows, pa.int64()))
    table.overwrite(zeroed, overwrite_filter=EqualTo("origin", "ATL"))
    # pyiceberg commits an overwrite as one request holding two snapshots: the
    # rewrite without the matching rows, then the append of the new rows.
    fresh = _reload(table)
    assert _ops(fresh) == [
        ("append", flights.num_rows),
        ("overwrite", flights.num_rows - atl.num_rows),
        ("append", flights.num_rows),
    ]
    got = fresh.scan().to_arrow()
    assert got.num_rows == flights.num_rows
    assert pc.sum(got["delay"]).as_py() == answers["sum_delay"] - pc.sum(atl["delay"]).as_py()
    assert pc.sum(got["distance"]).as_py() == answers["sum_distance"]
    assert pc.sum(got.filter(pc.equal(got["origin"], "ATL"))["delay"]).as_py() == 0

    # Full overwrite: the table becomes exactly the first 1,000 rows.
    head = flights.slice(0, 1000)
    table.overwrite(head)
    fresh = _reload(table)
    # A full overwrite: a delete of every file, then the append.
    assert _ops(fresh)[-2:] == [("delete", 0), ("append", 1000)]
    got = fresh.scan().to_arrow()
    assert canonical(got, flights.column_names).equals(canonical(head))


def test_delete_with_row_filter(cleanup, run_id: str, flights: pa.Table, answers: dict) -> None:
    ns = _ns(cleanup, run_id, "delete")
    table = _table_with(cleanup, ns, "flights", flights)
    before = table.current_snapshot().snapshot_id

    table.delete("delay > 60")
    keep = flights.filter(pc.less_equal(flights["delay"], 60))
    assert 0 < keep.num_rows < flights.num_rows
    fresh = _reload(table)
    assert fresh.current_snapshot().parent_snapshot_id == before
    # Rows deleted from inside files: the files are rewritten (copy on write).
    assert _ops(fresh) == [("append", flights.num_rows), ("overwrite", keep.num_rows)]
    got = fresh.scan().to_arrow()
    assert sums(got) == sums(keep)
    assert fresh.scan().count() == keep.num_rows
    # The old snapshot still has every row.
    assert sums(fresh.scan(snapshot_id=before).to_arrow()) == answers

    # A filter matching whole files drops them: delete everything left.
    table.delete(GreaterThanOrEqual("distance", 0))
    fresh = _reload(table)
    assert fresh.scan().to_arrow().num_rows == 0
    assert _ops(fresh)[-1] == ("delete", 0)


def test_schema_evolution(cleanup, run_id: str, flights: pa.Table) -> None:
    ns = _ns(cleanup, run_id, "schema")
    schema = Schema(*FLIGHTS_SCHEMA.fields, NestedField(6, "dep_hour", IntegerType(), required=False))
    first = flights.slice(0, 1000)
    first = first.append_column("dep_hour", pc.hour(first["date"]).cast(pa.int32()))
    table = _table_with(cleanup, ns, "flights", first, schema=schema)

    with table.update_schema() as upd:
        upd.add_column("carrier", StringType(), doc="added by the test")
        upd.rename_column("distance", "distance_miles")
        upd.update_column("dep_hour", field_type=LongType())

    fresh = _reload(table)
    s = fresh.schema()
    assert s.schema_id == 1 and len(fresh.schemas()) == 2
    assert [(f.field_id, f.name, str(f.field_type)) for f in s.fields] == [
        (1, "date", "timestamp"),
        (2, "delay", "long"),
        (3, "distance_miles", "long"),
        (4, "origin", "string"),
        (5, "destination", "string"),
        (6, "dep_hour", "long"),
        (7, "carrier", "string"),
    ]
    assert s.find_field("carrier").doc == "added by the test"
    assert fresh.metadata.last_column_id == 7

    got = fresh.scan().to_arrow()
    assert got.column_names == ["date", "delay", "distance_miles", "origin", "destination", "dep_hour", "carrier"]
    assert got.schema.field("dep_hour").type == pa.int64()
    assert got["carrier"].null_count == 1000
    assert pc.sum(got["dep_hour"]).as_py() == pc.sum(first["dep_hour"]).as_py()
    assert pc.sum(got["distance_miles"]).as_py() == pc.sum(first["distance"]).as_py()

    # Write with the new schema and read both generations together.
    second = flights.slice(1000, 500).rename_columns(["date", "delay", "distance_miles", "origin", "destination"])
    second = second.append_column("dep_hour", pc.hour(second["date"]).cast(pa.int64()))
    second = second.append_column("carrier", pa.array(["XX"] * second.num_rows, pa.large_string()))
    fresh.append(second)
    got = _reload(table).scan().to_arrow()
    assert got.num_rows == 1500
    assert pc.sum(pc.equal(got["carrier"], "XX").cast(pa.int64())).as_py() == 500
    assert got["carrier"].null_count == 1000
    assert pc.sum(got["distance_miles"]).as_py() == pc.sum(flights.slice(0, 1500)["distance"]).as_py()
    assert pc.sum(got["dep_hour"]).as_py() == pc.sum(pc.hour(flights.slice(0, 1500)["date"])).as_py()


def test_partition_evolution(cleanup, run_id: str, flights: pa.Table) -> None:
    ns = _ns(cleanup, run_id, "partition")
    old, new = flights.slice(0, 2000), flights.slice(2000, 2000)
    table = _table_with(cleanup, ns, "flights", old)
    assert table.spec().spec_id == 0 and table.spec().is_unpartitioned()

    with table.update_spec() as upd:
        upd.add_identity("origin")
        upd.add_field("date", DayTransform(), "date_day")

    fresh = _reload(table)
    spec = fresh.spec()
    assert spec.spec_id == 1 and len(fresh.specs()) == 2
    assert list(spec.fields) == [
        PartitionField(source_id=4, field_id=1000, transform=IdentityTransform(), name="origin"),
        PartitionField(source_id=1, field_id=1001, transform=DayTransform(), name="date_day"),
    ]
    assert fresh.metadata.last_partition_id == 1001

    fresh.append(new)
    fresh = _reload(table)
    tasks = list(fresh.scan().plan_files())
    by_spec: dict[int, list] = {}
    for t in tasks:
        by_spec.setdefault(t.file.spec_id, []).append(t.file)
    assert len(by_spec.get(0, [])) == 1
    origins = set(new["origin"].to_pylist())
    day = (datetime.date(2001, 1, 1) - datetime.date(1970, 1, 1)).days
    assert {f.partition[0] for f in by_spec[1]} == origins
    assert {f.partition[1] for f in by_spec[1]} == {day}  # every one of these flights is on 2001-01-01
    assert len(by_spec[1]) == len(origins)

    got = fresh.scan().to_arrow()
    assert sums(got) == sums(flights.slice(0, 4000))

    # Pruning: a filter on the partition source reads the old file plus one.
    counts = pc.value_counts(new["origin"]).to_pylist()
    origin = max(counts, key=lambda c: (c["counts"], c["values"]))["values"]  # busiest airport
    pruned = list(fresh.scan(row_filter=EqualTo("origin", origin)).plan_files())
    assert sorted(t.file.spec_id for t in pruned) == [0, 1]
    rows = fresh.scan(row_filter=EqualTo("origin", origin)).to_arrow()
    expected = flights.slice(0, 4000).filter(pc.equal(flights.slice(0, 4000)["origin"], origin))
    assert sums(rows) == sums(expected)


def test_create_table_transaction(cleanup, run_id: str, flights: pa.Table) -> None:
    """stage-create: nothing is visible until the transaction commits."""
    ns = _ns(cleanup, run_id, "staged")
    ident = cleanup.table((*ns, "flights"))
    head = flights.slice(0, 1000)
    txn = cleanup.catalog.create_table_transaction(ident, schema=FLIGHTS_SCHEMA)
    txn.append(head)
    assert not cleanup.catalog.table_exists(ident)
    txn.commit_transaction()
    table = cleanup.catalog.load_table(ident)
    assert len(table.snapshots()) == 1
    assert sums(table.scan().to_arrow()) == sums(head)


def test_commit_conflict_is_409(cleanup, run_id: str) -> None:
    ns = _ns(cleanup, run_id, "conflict")
    table = _table_with(cleanup, ns, "t", None)
    stale = cleanup.catalog.load_table(table.name())
    with table.update_schema() as upd:
        upd.add_column("first", LongType())
    # The stale handle's requirement (current schema id 0) no longer holds.
    with pytest.raises(CommitFailedException):
        with stale.update_schema() as upd:
            upd.add_column("second", LongType())
    names = [f.name for f in _reload(table).schema().fields]
    assert names[-1] == "first" and "second" not in names


# --- reads ------------------------------------------------------------------


@pytest.fixture
def flights_table(cleanup, run_id: str, flights: pa.Table):
    ns = _ns(cleanup, run_id, "scan")
    return _table_with(cleanup, ns, "flights", flights)


def _count(table: pa.Table, mask) -> int:
    return table.filter(mask).num_rows


def test_scan_row_filters(flights_table, flights: pa.Table) -> None:
    t = flights_table
    f = flights
    noon = datetime.datetime(2001, 1, 1, 12, 0, 0)
    cases = [
        ("origin == 'ATL'", pc.equal(f["origin"], "ATL")),
        (EqualTo("origin", "ATL"), pc.equal(f["origin"], "ATL")),
        ("origin == 'ATL' and delay > 10", pc.and_(pc.equal(f["origin"], "ATL"), pc.greater(f["delay"], 10))),
        (
            Or(EqualTo("destination", "LAX"), GreaterThan("distance", 2000)),
            pc.or_(pc.equal(f["destination"], "LAX"), pc.greater(f["distance"], 2000)),
        ),
        (In("origin", {"ATL", "ORD", "DFW"}), pc.is_in(f["origin"], pa.array(["ATL", "ORD", "DFW"]))),
        (Not(LessThan("delay", 0)), pc.greater_equal(f["delay"], 0)),
        (
            And(GreaterThanOrEqual("date", noon.isoformat()), LessThan("distance", 500)),
            pc.and_(pc.greater_equal(f["date"], pa.scalar(noon, pa.timestamp("us"))), pc.less(f["distance"], 500)),
        ),
        ("origin == 'NOPE'", pc.equal(f["origin"], "NOPE")),
    ]
    for expr, mask in cases:
        want = f.filter(mask)
        got = t.scan(row_filter=expr).to_arrow()
        assert sums(got) == sums(want), f"filter {expr!r}"
    # Case-insensitive column names when asked for.
    got = t.scan(row_filter="ORIGIN == 'ATL'", case_sensitive=False).to_arrow()
    assert got.num_rows == _count(f, pc.equal(f["origin"], "ATL"))


def test_scan_selected_fields_and_limit(flights_table, flights: pa.Table) -> None:
    t = flights_table
    got = t.scan(row_filter="origin == 'ATL' and delay > 10", selected_fields=("origin", "delay")).to_arrow()
    want = flights.filter(pc.and_(pc.equal(flights["origin"], "ATL"), pc.greater(flights["delay"], 10)))
    assert sorted(got.column_names) == ["delay", "origin"]  # pyiceberg returns them in schema order
    assert got.num_rows == want.num_rows
    assert pc.sum(got["delay"]).as_py() == pc.sum(want["delay"]).as_py()
    assert set(got["origin"].to_pylist()) == {"ATL"}

    got = t.scan(selected_fields=("distance",)).to_arrow()
    assert got.column_names == ["distance"]
    assert pc.sum(got["distance"]).as_py() == pc.sum(flights["distance"]).as_py()

    assert t.scan(limit=17).to_arrow().num_rows == 17
    assert t.scan(row_filter="origin == 'ATL'", limit=5).to_arrow().num_rows == 5


# --- namespaces, tables, views ----------------------------------------------


def test_namespace_properties_update_and_remove(catalog: RestCatalog, cleanup, run_id: str) -> None:
    ns = cleanup.namespace((f"tarn_rt_props_{run_id}",))
    catalog.create_namespace(ns, {"a": "1", "b": "2", "comment": "made by test_roundtrip"})
    props = catalog.load_namespace_properties(ns)
    assert {k: props.get(k) for k in ("a", "b", "comment")} == {"a": "1", "b": "2", "comment": "made by test_roundtrip"}

    summary = catalog.update_namespace_properties(ns, removals={"a", "not-there"}, updates={"b": "20", "c": "3"})
    assert sorted(summary.removed) == ["a"]
    assert sorted(summary.updated) == ["b", "c"]
    assert sorted(summary.missing) == ["not-there"]

    props = new_catalog("tarn_reader").load_namespace_properties(ns)
    assert "a" not in props
    assert props.get("b") == "20" and props.get("c") == "3" and props.get("comment") == "made by test_roundtrip"

    with pytest.raises(NoSuchNamespaceError):
        catalog.update_namespace_properties((f"tarn_rt_missing_{run_id}",), updates={"x": "y"})
    with pytest.raises(NoSuchNamespaceError):
        catalog.load_namespace_properties((f"tarn_rt_missing_{run_id}",))


def test_list_namespaces_and_tables(catalog: RestCatalog, cleanup, run_id: str) -> None:
    ns1 = _ns(cleanup, run_id, "list1")
    ns2 = _ns(cleanup, run_id, "list2")
    listed = catalog.list_namespaces()
    assert ns1 in listed and ns2 in listed
    assert all(isinstance(n, tuple) for n in listed)

    names = ["alpha", "beta", "gamma"]
    for name in names:
        cleanup.table((*ns1, name))
        catalog.create_table((*ns1, name), schema=FLIGHTS_SCHEMA)
    assert sorted(catalog.list_tables(ns1)) == [(*ns1, n) for n in names]
    assert catalog.list_tables(ns2) == []
    with pytest.raises(NoSuchNamespaceError):
        catalog.list_tables((f"tarn_rt_missing_{run_id}",))


def test_nested_namespaces(catalog: RestCatalog, cleanup, run_id: str) -> None:
    parent = _ns(cleanup, run_id, "parent")
    child = cleanup.namespace((*parent, "child"))
    catalog.create_namespace(child, {"level": "2"})
    assert catalog.namespace_exists(child)
    assert catalog.list_namespaces(parent) == [child]
    assert catalog.load_namespace_properties(child).get("level") == "2"
    ident = cleanup.table((*child, "t"))
    table = catalog.create_table(ident, schema=FLIGHTS_SCHEMA)
    assert table.name() == ident
    assert catalog.list_tables(child) == [ident]
    assert catalog.load_table(ident).metadata.table_uuid == table.metadata.table_uuid


def test_exists_and_errors(catalog: RestCatalog, cleanup, run_id: str) -> None:
    ns = _ns(cleanup, run_id, "exists")
    missing_ns = (f"tarn_rt_missing_{run_id}",)
    ident = cleanup.table((*ns, "t"))

    assert catalog.namespace_exists(ns)
    assert not catalog.namespace_exists(missing_ns)
    assert not catalog.table_exists(ident)
    catalog.create_table(ident, schema=FLIGHTS_SCHEMA)
    assert catalog.table_exists(ident)
    assert not catalog.table_exists((*ns, "nope"))
    assert not catalog.table_exists((*missing_ns, "t"))

    with pytest.raises(NamespaceAlreadyExistsError):
        catalog.create_namespace(ns)
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table(ident, schema=FLIGHTS_SCHEMA)
    with pytest.raises(NoSuchTableError):
        catalog.load_table((*ns, "nope"))
    with pytest.raises(NamespaceNotEmptyError):
        catalog.drop_namespace(ns)
    with pytest.raises(NoSuchNamespaceError):
        catalog.drop_namespace(missing_ns)

    catalog.drop_table(ident)  # no purge
    assert not catalog.table_exists(ident)
    with pytest.raises(NoSuchTableError):
        catalog.drop_table(ident)
    catalog.drop_namespace(ns)
    assert not catalog.namespace_exists(ns)


def test_create_table_in_missing_namespace(catalog: RestCatalog, cleanup, run_id: str) -> None:
    """The spec's 404 NoSuchNamespaceException (the Java REST fixture lets it through)."""
    missing_ns = (f"tarn_rt_missing_{run_id}",)
    cleanup.table((*missing_ns, "t"))
    with pytest.raises(NoSuchNamespaceError):
        catalog.create_table((*missing_ns, "t"), schema=FLIGHTS_SCHEMA)
    assert not catalog.namespace_exists(missing_ns)


def test_views(catalog: RestCatalog, cleanup, run_id: str) -> None:
    ns = _ns(cleanup, run_id, "views")
    _table_with(cleanup, ns, "flights", None)
    ident = cleanup.view((*ns, "atl_flights"))
    schema = Schema(
        NestedField(1, "date", TimestampType(), required=False),
        NestedField(2, "delay", LongType(), required=False),
    )
    sql = f"SELECT date, delay FROM {ns[0]}.flights WHERE origin = 'ATL'"
    version = ViewVersion(
        version_id=1,
        schema_id=0,
        summary={"engine-name": "pyiceberg", "engine-version": "test"},
        representations=[SQLViewRepresentation(type="sql", sql=sql, dialect="spark")],
        default_namespace=ns,
    )

    assert catalog.list_views(ns) == []
    assert not catalog.view_exists(ident)
    view = catalog.create_view(ident, schema, version, properties={"comment": "ATL only"})
    assert view.name() == ident

    assert catalog.list_views(ns) == [ident]
    assert catalog.view_exists(ident)
    loaded = catalog.load_view(ident)
    assert loaded.schema().as_struct() == schema.as_struct()
    reps = loaded.current_version().representations
    assert [(r.root.dialect, r.root.sql) for r in reps] == [("spark", sql)]
    assert tuple(loaded.current_version().default_namespace) == ns
    assert loaded.metadata.properties.get("comment") == "ATL only"
    # A view is not a table.
    assert ident not in catalog.list_tables(ns)

    catalog.drop_view(ident)
    assert not catalog.view_exists(ident)
    assert catalog.list_views(ns) == []
