"""Shared fixtures for holding Tarn against pyiceberg's RestCatalog.

Environment (set by conformance/run, or by hand):
  TARN_URI         base URI of the REST catalog, e.g. http://127.0.0.1:8181 (required)
  TARN_WAREHOUSE   file:// URI of the server's warehouse directory (required by
                   the tests that look at files on disk)
  TARN_TOKEN       optional bearer token, passed to pyiceberg as `token`
  TARN_CREDENTIAL  optional id:secret, passed to pyiceberg as `credential`
  TARN_PURGE_WAIT_SECONDS
                   how long a purge may take to remove files (default 30;
                   the spec allows a server to purge asynchronously)

Nothing is skipped when TARN_URI is missing: the tests fail, so a runner that
forgot to start a server cannot report green.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError, NoSuchViewError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType, TimestampType

REPO = Path(__file__).resolve().parents[2]
TESTDATA = REPO / "testdata"
FLIGHTS_PARQUET = TESTDATA / "flights-10k.parquet"
ANSWERS_JSON = TESTDATA / "answers.json"

# The flights file as an Iceberg schema: every field optional, as in the
# Parquet file (pyarrow refuses to append nullable columns to required fields).
FLIGHTS_SCHEMA = Schema(
    NestedField(1, "date", TimestampType(), required=False),
    NestedField(2, "delay", LongType(), required=False),
    NestedField(3, "distance", LongType(), required=False),
    NestedField(4, "origin", StringType(), required=False),
    NestedField(5, "destination", StringType(), required=False),
)


def env_uri() -> str:
    uri = os.environ.get("TARN_URI", "").strip()
    if not uri:
        pytest.fail("TARN_URI is not set: start Tarn (or conformance/run does it) and export TARN_URI", pytrace=False)
    return uri


def local_path(uri: str) -> Path:
    """A local path from file:///x, file:/x or /x (Java writes file:/x)."""
    if uri.startswith("/"):
        return Path(uri)
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        pytest.fail(f"not a local file URI: {uri!r} (these tests need a file:// warehouse)", pytrace=False)
    if parsed.netloc not in ("", "localhost"):
        pytest.fail(f"file URI with a host: {uri!r}", pytrace=False)
    return Path(unquote(parsed.path))


def new_catalog(name: str = "tarn") -> RestCatalog:
    props = {"uri": env_uri()}
    if token := os.environ.get("TARN_TOKEN"):
        props["token"] = token
    if credential := os.environ.get("TARN_CREDENTIAL"):
        props["credential"] = credential  # a token from Tarn's /v1/oauth/tokens
    return RestCatalog(name, **props)


@pytest.fixture(scope="session")
def catalog() -> RestCatalog:
    return new_catalog()


@pytest.fixture(scope="session")
def warehouse_dir() -> Path:
    uri = os.environ.get("TARN_WAREHOUSE", "").strip()
    if not uri:
        pytest.fail("TARN_WAREHOUSE is not set (file:// URI of the server's warehouse directory)", pytrace=False)
    path = local_path(uri)
    if not path.is_dir():
        pytest.fail(f"TARN_WAREHOUSE {uri} is not a directory on this machine", pytrace=False)
    return path.resolve()


@pytest.fixture(scope="session")
def answers() -> dict:
    return json.loads(ANSWERS_JSON.read_text())["flights-10k.parquet"]


@pytest.fixture(scope="session")
def flights(answers: dict) -> pa.Table:
    """The 10,000 flights, checked against testdata/answers.json first."""
    table = pq.read_table(FLIGHTS_PARQUET)
    assert table.num_rows == answers["rows"]
    assert pc.sum(table["delay"]).as_py() == answers["sum_delay"]
    assert pc.sum(table["distance"]).as_py() == answers["sum_distance"]
    return table


@pytest.fixture
def run_id() -> str:
    return uuid.uuid4().hex[:12]


class Cleanup:
    """Drops what a test created, best effort, newest first."""

    def __init__(self, catalog: RestCatalog):
        self.catalog = catalog
        self.tables: list[tuple] = []
        self.views: list[tuple] = []
        self.namespaces: list[tuple] = []

    def namespace(self, ns: tuple) -> tuple:
        self.namespaces.append(ns)
        return ns

    def table(self, ident: tuple) -> tuple:
        self.tables.append(ident)
        return ident

    def view(self, ident: tuple) -> tuple:
        self.views.append(ident)
        return ident

    def run(self) -> None:
        for ident in reversed(self.views):
            try:
                self.catalog.drop_view(ident)
            except (NoSuchViewError, NoSuchNamespaceError, NotImplementedError):
                pass
            except Exception:  # noqa: BLE001 - cleanup must not mask the test's result
                pass
        for ident in reversed(self.tables):
            try:
                self.catalog.purge_table(ident)
            except (NoSuchTableError, NoSuchNamespaceError):
                pass
            except Exception:  # noqa: BLE001
                pass
        for ns in reversed(self.namespaces):
            try:
                for ident in self.catalog.list_tables(ns):
                    self.catalog.purge_table(ident)
            except Exception:  # noqa: BLE001
                pass
            try:
                self.catalog.drop_namespace(ns)
            except Exception:  # noqa: BLE001
                pass


@pytest.fixture
def cleanup(catalog: RestCatalog):
    c = Cleanup(catalog)
    yield c
    c.run()


def sums(table: pa.Table) -> dict:
    return {
        "rows": table.num_rows,
        "sum_delay": pc.sum(table["delay"]).as_py() if table.num_rows else 0,
        "sum_distance": pc.sum(table["distance"]).as_py() if table.num_rows else 0,
    }


def canonical(table: pa.Table, columns: list[str] | None = None) -> pa.Table:
    """Rows sorted on every column, strings as plain utf8, for exact comparison."""
    columns = columns or table.column_names
    table = table.select(columns)
    fields = []
    for f in table.schema:
        t = pa.string() if pa.types.is_large_string(f.type) or pa.types.is_string_view(f.type) else f.type
        fields.append(pa.field(f.name, t, nullable=True))
    table = table.cast(pa.schema(fields))
    return table.sort_by([(c, "ascending") for c in columns]).combine_chunks()
