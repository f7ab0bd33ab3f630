"""End to end with pyiceberg's RestCatalog: the life of one table.

create namespace + table -> two appends (4,000 then 6,000 flights, two
snapshots) -> scan totals -> time travel to the first snapshot -> rename
(same namespace, then into another one) -> purge, and the files are gone.

The steps run in file order and share one table; a step whose predecessor
failed fails too (it does not skip), naming the step it waited for.
Expected numbers come from testdata/answers.json and from the Parquet file.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.table import Table

from conftest import FLIGHTS_SCHEMA, canonical, local_path, new_catalog, sums

FIRST = 4000  # rows in the first append; the second adds the other 6,000

RUN = uuid.uuid4().hex[:12]
NS = (f"tarn_e2e_{RUN}",)
NS_OTHER = (f"tarn_e2e_{RUN}_other",)
TABLE = (*NS, "flights")
RENAMED_SAME_NS = (*NS, "flights_renamed")
RENAMED_OTHER_NS = (*NS_OTHER, "flights_moved")

state: dict = {}


def need(*steps: str) -> None:
    for step in steps:
        if step not in state:
            pytest.fail(f"needs step {step!r}, which did not complete", pytrace=False)


@pytest.fixture(scope="module")
def cat() -> RestCatalog:
    c = new_catalog("tarn_e2e")
    yield c
    # Leave nothing behind whatever happened (the purge step does it on success).
    for ident in (RENAMED_OTHER_NS, RENAMED_SAME_NS, TABLE):
        try:
            c.purge_table(ident)
        except Exception:  # noqa: BLE001
            pass
    for ns in (NS_OTHER, NS):
        try:
            c.drop_namespace(ns)
        except Exception:  # noqa: BLE001
            pass


def test_01_create_namespace_and_table(cat: RestCatalog, warehouse_dir: Path) -> None:
    cat.create_namespace(NS, {"owner": "tarn-e2e", "run": RUN})
    assert cat.namespace_exists(NS)
    assert NS in cat.list_namespaces()
    props = cat.load_namespace_properties(NS)
    assert props.get("owner") == "tarn-e2e" and props.get("run") == RUN

    table = cat.create_table(TABLE, schema=FLIGHTS_SCHEMA, properties={"tarn.test": "e2e"})
    assert table.name() == TABLE
    assert table.schema().as_struct() == FLIGHTS_SCHEMA.as_struct()
    assert table.format_version == 2
    assert table.current_snapshot() is None
    assert table.metadata.properties.get("tarn.test") == "e2e"
    assert table.spec().is_unpartitioned()

    # The table lives inside the server's warehouse, and its first metadata
    # file is on disk already.
    location = local_path(table.location()).resolve()
    assert location.is_relative_to(warehouse_dir), f"{location} is outside {warehouse_dir}"
    assert local_path(table.metadata_location).is_file()

    assert cat.table_exists(TABLE)
    assert TABLE in cat.list_tables(NS)
    state["created"] = table


def test_02_two_appends_two_snapshots(cat: RestCatalog, flights: pa.Table) -> None:
    need("created")
    table = cat.load_table(TABLE)

    table.append(flights.slice(0, FIRST))
    s1 = table.current_snapshot()
    assert s1 is not None
    assert s1.summary.operation.value == "append"
    assert int(s1.summary["added-records"]) == FIRST
    assert int(s1.summary["total-records"]) == FIRST

    table.append(flights.slice(FIRST))
    s2 = table.current_snapshot()
    assert s2 is not None and s2.snapshot_id != s1.snapshot_id
    assert s2.parent_snapshot_id == s1.snapshot_id
    assert s2.summary.operation.value == "append"
    assert int(s2.summary["added-records"]) == flights.num_rows - FIRST
    assert int(s2.summary["total-records"]) == flights.num_rows
    assert s2.sequence_number > s1.sequence_number

    # What the catalog hands a new client matches what this client committed.
    fresh = new_catalog("tarn_e2e_reader").load_table(TABLE)
    assert fresh.current_snapshot().snapshot_id == s2.snapshot_id
    assert [s.snapshot_id for s in fresh.snapshots()] == [s1.snapshot_id, s2.snapshot_id]
    assert fresh.metadata.refs["main"].snapshot_id == s2.snapshot_id
    assert fresh.metadata_location == table.metadata_location
    state["snapshots"] = (s1.snapshot_id, s2.snapshot_id)


def test_03_scan_totals(cat: RestCatalog, flights: pa.Table, answers: dict) -> None:
    need("snapshots")
    table = cat.load_table(TABLE)
    got = table.scan().to_arrow()
    assert sums(got) == answers
    assert table.scan().count() == answers["rows"]
    # Not only the totals: every row, every column.
    assert canonical(got, flights.column_names).equals(canonical(flights))


def test_04_time_travel_to_first_snapshot(cat: RestCatalog, flights: pa.Table) -> None:
    need("snapshots")
    s1, s2 = state["snapshots"]
    table = cat.load_table(TABLE)
    first = flights.slice(0, FIRST)
    expected = {
        "rows": FIRST,
        "sum_delay": pc.sum(first["delay"]).as_py(),
        "sum_distance": pc.sum(first["distance"]).as_py(),
    }

    got = table.scan(snapshot_id=s1).to_arrow()
    assert sums(got) == expected
    assert canonical(got, flights.column_names).equals(canonical(first))

    # The same snapshot found by time: as of the first commit's timestamp
    # (unless both commits landed in the same millisecond).
    t1, t2 = table.snapshot_by_id(s1).timestamp_ms, table.snapshot_by_id(s2).timestamp_ms
    assert t1 <= t2
    if t1 < t2:
        snap = table.snapshot_as_of_timestamp(t1)
        assert snap is not None and snap.snapshot_id == s1
    # And the head is still the second one.
    assert table.current_snapshot().snapshot_id == s2


def test_05_rename_within_and_across_namespaces(cat: RestCatalog, answers: dict) -> None:
    need("snapshots")
    before = cat.load_table(TABLE)

    renamed = cat.rename_table(TABLE, RENAMED_SAME_NS)
    assert renamed.name() == RENAMED_SAME_NS
    loaded = cat.load_table(RENAMED_SAME_NS)
    assert loaded.metadata_location == before.metadata_location
    assert loaded.metadata.table_uuid == before.metadata.table_uuid
    with pytest.raises(NoSuchTableError):
        cat.load_table(TABLE)
    assert not cat.table_exists(TABLE)

    cat.create_namespace(NS_OTHER)
    moved = cat.rename_table(RENAMED_SAME_NS, RENAMED_OTHER_NS)
    assert moved.name() == RENAMED_OTHER_NS
    loaded = cat.load_table(RENAMED_OTHER_NS)
    assert loaded.metadata.table_uuid == before.metadata.table_uuid
    assert loaded.current_snapshot().snapshot_id == state["snapshots"][1]
    assert sums(loaded.scan().to_arrow()) == answers
    with pytest.raises(NoSuchTableError):
        cat.load_table(RENAMED_SAME_NS)
    with pytest.raises(NoSuchTableError):
        cat.load_table(TABLE)

    assert RENAMED_OTHER_NS in cat.list_tables(NS_OTHER)
    listed = cat.list_tables(NS)
    assert TABLE not in listed and RENAMED_SAME_NS not in listed
    state["renamed"] = RENAMED_OTHER_NS


def _table_files(table: Table) -> dict[str, set[Path]]:
    """Every file the table's metadata points at, by kind."""
    io = table.io
    files: dict[str, set[Path]] = {"metadata": set(), "manifest-list": set(), "manifest": set(), "data": set()}
    files["metadata"].add(local_path(table.metadata_location))
    for entry in table.metadata.metadata_log:
        files["metadata"].add(local_path(entry.metadata_file))
    for snap in table.snapshots():
        files["manifest-list"].add(local_path(snap.manifest_list))
        for manifest in snap.manifests(io):
            files["manifest"].add(local_path(manifest.manifest_path))
            for entry in manifest.fetch_manifest_entry(io, discard_deleted=False):
                files["data"].add(local_path(entry.data_file.file_path))
    return files


def test_06_purge_removes_files(cat: RestCatalog, warehouse_dir: Path) -> None:
    need("renamed")
    ident = state["renamed"]
    table = cat.load_table(ident)
    location = local_path(table.location())
    files = _table_files(table)

    # Two appends: two data files at least, two manifest lists, metadata
    # v0 (create) + two commits.
    assert len(files["data"]) >= 2, files
    assert len(files["manifest-list"]) == 2, files
    assert len(files["manifest"]) >= 2, files
    assert len(files["metadata"]) >= 3, files
    missing = [str(p) for kind in files.values() for p in kind if not p.is_file()]
    assert not missing, f"files named by the metadata are not on disk: {missing}"
    on_disk_before = sorted(p for p in location.rglob("*") if p.is_file())
    assert on_disk_before, f"no files under {location}"

    cat.purge_table(ident)
    with pytest.raises(NoSuchTableError):
        cat.load_table(ident)
    assert not cat.table_exists(ident)
    assert ident not in cat.list_tables(ident[:-1])

    wait = float(os.environ.get("TARN_PURGE_WAIT_SECONDS", "30"))
    deadline = time.monotonic() + wait
    while True:
        left = {kind: sorted(str(p) for p in paths if p.exists()) for kind, paths in files.items()}
        left = {k: v for k, v in left.items() if v}
        leftover = sorted(str(p) for p in location.rglob("*") if p.is_file()) if location.exists() else []
        if (not left and not leftover) or time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    counts = ", ".join(f"{kind} {len(paths)}" for kind, paths in left.items())
    assert not left, f"purge left table files behind after {wait:.0f}s ({counts}): {left}"
    assert not leftover, f"purge left {len(leftover)} files under {location}: {leftover}"

    cat.drop_namespace(NS_OTHER)
    cat.drop_namespace(NS)
    assert not cat.namespace_exists(NS)
    assert not cat.namespace_exists(NS_OTHER)
