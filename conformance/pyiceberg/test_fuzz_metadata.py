"""pyiceberg loads every table the Go fuzz test of TableUpdates accepted.

catalog/validate_fuzz_test.go (FuzzTableUpdates) commits generated
TableUpdates to fresh tables and asserts that every accepted commit leaves
metadata iceberg-go parses; with TARN_FUZZ_ACCEPTED_DIR set it also copies
each accepted table's metadata JSON there. This test runs its deterministic
part (`go test -run '^FuzzTableUpdates$'`: the seed corpus and the
generated seeds) and loads every copied file with pyiceberg
(StaticTable.from_metadata, the metadata parse of every pyiceberg load), so
the property "a table stays loadable after any accepted commit" holds for
pyiceberg too (issue 13, item 4: pyiceberg refused truncate[-5],
blob-metadata null, unknown blob types, bad identifier fields).

Needs `go` on PATH (conformance/run builds Tarn with it); fails without it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from pyiceberg.table import StaticTable

REPO = Path(__file__).resolve().parents[2]

# The deterministic run accepts about a fifth of its 150 generated commits
# (the rest break a rule and are refused); fewer than this means the fuzz
# test stopped exercising accepted commits.
MIN_ACCEPTED = 15


def test_pyiceberg_loads_every_table_the_fuzz_run_accepted(tmp_path):
    go = shutil.which("go")
    if go is None:
        pytest.fail("go is not on PATH: the fuzz test cannot run", pytrace=False)
    out = tmp_path / "accepted"
    out.mkdir()
    env = dict(os.environ, TARN_FUZZ_ACCEPTED_DIR=str(out))
    run = subprocess.run([go, "test", "-count=1", "-run", "^FuzzTableUpdates$", "./catalog/"],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    files = sorted(out.glob("*.metadata.json"))
    assert len(files) >= MIN_ACCEPTED, "only %d accepted commits" % len(files)
    failures = []
    for f in files:
        try:
            tbl = StaticTable.from_metadata(str(f))
            tbl.schema(), tbl.spec(), tbl.sort_order(), tbl.current_snapshot()
        except Exception as e:  # any refusal is a failure of the property
            failures.append("%s: %s" % (f.name, " ".join(str(e).split())[:300]))
    assert not failures, "pyiceberg cannot load %d of %d accepted tables:\n%s" % (
        len(failures), len(files), "\n".join(failures))
