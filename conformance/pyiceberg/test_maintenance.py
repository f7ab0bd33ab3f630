"""Tarn maintains a table pyiceberg wrote (conformance/lib/maintenance.py).

pyiceberg writes the flights in six appends into a table partitioned by
bucket(4, origin), and deletes one origin's rows (pyiceberg's delete
rewrites the files that hold them); then Tarn compacts, expires, rewrites
the manifests of and removes a planted orphan from it, and after each job
pyiceberg reads exactly the rows it read before.
"""

from __future__ import annotations

import sys
import uuid

import pyarrow as pa
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.expressions import EqualTo
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.transforms import BucketTransform

from conftest import FLIGHTS_SCHEMA, REPO, Cleanup

sys.path.insert(0, str(REPO / "conformance" / "lib"))
import maintenance  # noqa: E402  (conformance/lib/maintenance.py)


def test_maintenance_of_pyiceberg_written_table(catalog: RestCatalog, cleanup: Cleanup, flights: pa.Table) -> None:
    ns = cleanup.namespace((f"tarn_maint_{uuid.uuid4().hex[:12]}",))
    catalog.create_namespace(ns)
    spec = PartitionSpec(PartitionField(source_id=4, field_id=1000, transform=BucketTransform(4), name="origin_bucket"))
    ident = cleanup.table((*ns, "maintained"))
    t = catalog.create_table(ident, schema=FLIGHTS_SCHEMA, partition_spec=spec)
    step = flights.num_rows // 6
    for i in range(6):
        t.append(flights.slice(i * step, step if i < 5 else flights.num_rows - 5 * step))
    t.delete(EqualTo("origin", "ORD"))
    want = sorted((r["distance"], r["origin"], r["delay"]) for r in flights.to_pylist() if r["origin"] != "ORD")

    def read():
        got = sorted((r["distance"], r["origin"], r["delay"]) for r in catalog.load_table(ident).scan().to_arrow().to_pylist())
        assert got == want
        return got

    done = maintenance.maintain(ns[0], "maintained", read)
    assert done["compact"]["files-rewritten"] >= 6, done["compact"]
