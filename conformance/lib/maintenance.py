"""Tarn's maintenance jobs on a table an engine wrote, for the engine suites.

Each engine suite (duckdb, pyiceberg, spark, trino; iceberg-go has its Go
twin in conformance/iceberg-go) writes a table of several small files and
a delete, then calls `maintain`: through Tarn's management API it runs
`compact`, `expire`, `manifests` and `orphans` on the table (POST
/management/v1/maintenance/run, what `tarn maintenance run` calls), and
after each job has the engine read the table again, which must give
exactly what it gave before. Orphan removal gets a planted unreferenced
file, two hours old, in the table's data directory (file:// warehouses
only) and must remove it and nothing else.

Only the standard library: every suite's venv can import it
(sys.path.insert of this directory). Environment: TARN_URI (required),
TARN_TOKEN or TARN_CREDENTIAL (id:secret, exchanged at /v1/oauth/tokens)
when the server wants a token.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Callable
from urllib.parse import unquote, urlparse

# Table properties `maintain` sets so every job acts on a small table:
# compaction from two small files, expiry of every snapshot but main's
# head (older than 1 ms), orphan removal of files older than 1 h (the
# floor; the default is a day).
PROPERTIES = {
    "tarn.maintenance.compact.min-input-files": "2",
    "tarn.maintenance.orphans.older-than-ms": "3600000",
    "history.expire.max-snapshot-age-ms": "1",
    "history.expire.min-snapshots-to-keep": "1",
}


def _uri() -> str:
    uri = os.environ.get("TARN_URI", "").strip().rstrip("/")
    if not uri:
        raise AssertionError("TARN_URI is not set")
    return uri


def _token() -> str | None:
    if tok := os.environ.get("TARN_TOKEN"):
        return tok
    cred = os.environ.get("TARN_CREDENTIAL")
    if not cred:
        return None
    cid, secret = cred.split(":", 1)
    form = urllib.parse.urlencode({"grant_type": "client_credentials", "client_id": cid, "client_secret": secret}).encode()
    with urllib.request.urlopen(_uri() + "/v1/oauth/tokens", data=form, timeout=30) as rsp:
        return json.load(rsp)["access_token"]


def _call(method: str, path: str, body: Any = None) -> Any:
    headers = {"Content-Type": "application/json"}
    if tok := _token():
        headers["Authorization"] = "Bearer " + tok
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(_uri() + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=600) as rsp:
            raw = rsp.read()
    except urllib.error.HTTPError as e:
        raise AssertionError(f"{method} {path}: {e.code} {e.read().decode(errors='replace')}") from None
    return json.loads(raw) if raw else None


def run_jobs(namespace: str, table: str, *jobs: str) -> list[dict]:
    """Runs jobs on namespace.table now; returns their results (one per job)."""
    body = {"table": f"{namespace}.{table}", "jobs": list(jobs)}
    return _call("POST", "/management/v1/maintenance/run", body)["results"]


def set_properties(namespace: str, table: str, props: dict[str, str]) -> dict:
    """Sets table properties through the REST catalog; returns the metadata."""
    path = f"/v1/namespaces/{urllib.parse.quote(namespace, safe='')}/tables/{urllib.parse.quote(table, safe='')}"
    return _call("POST", path, {"requirements": [], "updates": [{"action": "set-properties", "updates": props}]})["metadata"]


def local_path(uri: str) -> Path:
    """A local path from file:///x, file:/x (Java) or /x."""
    if uri.startswith("/"):
        return Path(uri)
    parsed = urlparse(uri)
    assert parsed.scheme == "file", uri
    return Path(unquote(parsed.path))


def plant_orphan(location: str) -> Path:
    """An unreferenced two-hour-old file in the table's data directory."""
    p = local_path(location) / "data" / f"tarn-orphan-{uuid.uuid4().hex}.parquet"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(b"not referenced by any snapshot")
    old = time.time() - 2 * 3600
    os.utime(p, (old, old))
    return p


def maintain(namespace: str, table: str, read: Callable[[], Any]) -> dict[str, dict]:
    """Runs every job on namespace.table, each followed by read(), which
    must return what it returned before the first; returns the results by
    job. Compaction must rewrite files, expiry expire snapshots and orphan
    removal remove the planted file and only it."""
    want = read()
    md = set_properties(namespace, table, PROPERTIES)
    time.sleep(0.01)  # every snapshot is older than 1 ms
    done: dict[str, dict] = {}

    [r] = run_jobs(namespace, table, "compact")
    assert not r.get("skipped"), r
    assert r.get("files-rewritten", 0) >= 2 and r.get("files-added", 0) >= 1, r
    assert read() == want, "read after compaction"
    done["compact"] = r

    time.sleep(0.01)
    [r] = run_jobs(namespace, table, "expire")
    assert not r.get("skipped"), r
    assert r.get("snapshots-expired", 0) >= 1, r
    assert read() == want, "read after expiry"
    done["expire"] = r

    [r] = run_jobs(namespace, table, "manifests")
    assert r.get("skipped") in (None, "few manifests", "manifests already optimal"), r
    assert read() == want, "read after manifest rewriting"
    done["manifests"] = r

    orphan = plant_orphan(md["location"])
    [r] = run_jobs(namespace, table, "orphans")
    assert not r.get("skipped"), r
    assert not orphan.exists(), "the planted orphan is removed"
    assert r.get("orphans-removed") == 1, r
    assert read() == want, "read after orphan removal"
    done["orphans"] = r
    return done
