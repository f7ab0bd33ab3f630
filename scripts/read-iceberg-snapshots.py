#!/usr/bin/env python3
"""read-iceberg-snapshots.py — read every snapshot of an Iceberg table from
its metadata file with pyiceberg (no catalog), and print what each holds as
one JSON object on stdout.

Usage: <venv>/bin/python scripts/read-iceberg-snapshots.py METADATA_URI SUM_COLUMN

Output: {"<snapshot id>": {"rows": n, "sum": sum of SUM_COLUMN}, ...} for
every snapshot the metadata retains (time travel to each), or
{"<snapshot id>": {"error": "..."}} for one that cannot be read (a data
file gone). For tests of file safety (delta/readers_test.go
TestE2EDeltaVacuum); the venv is scripts/setup-python.sh's.
"""

from __future__ import annotations

import json
import sys

import pyarrow.compute as pc
from pyiceberg.table import StaticTable


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    tbl = StaticTable.from_metadata(sys.argv[1])
    col = sys.argv[2]
    out = {}
    for snap in tbl.metadata.snapshots:
        try:
            t = tbl.scan(snapshot_id=snap.snapshot_id).to_arrow()
            out[str(snap.snapshot_id)] = {"rows": t.num_rows, "sum": int(pc.sum(t.column(col)).as_py() or 0)}
        except Exception as e:  # a data file VACUUM deleted
            out[str(snap.snapshot_id)] = {"error": f"{type(e).__name__}: {e}"}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
