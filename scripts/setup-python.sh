#!/usr/bin/env bash
# setup-python.sh — create (or reuse) the Python venv used to test Tarn with
# real clients: pyiceberg (+pyarrow), pytest, DuckDB and DuckDB's iceberg,
# httpfs and avro extensions. All versions come pinned from
# scripts/requirements.txt.
#
# Usage:   VENV="$(scripts/setup-python.sh)"      # last stdout line = venv path
#          "$VENV/bin/pytest" ...
#
# Where:   "$HOME/.cache/tarn/venv" (override with TARN_VENV). Outside the repo
#          on purpose: it is reused by later runs, and recreated when its
#          interpreter no longer starts or an import fails. A stamp file
#          (.tarn-requirements.sha256) holding the hash of requirements.txt
#          makes a warm run skip pip entirely (about a second); a changed
#          requirements.txt reinstalls. Set TARN_VENV_RECREATE=1 to force a
#          fresh venv. TARN_REQUIREMENTS names another fully pinned file to
#          install instead (with TARN_VENV, a second venv: e.g.
#          conformance/pyiceberg/run_upstream.sh, whose extra test deps
#          conflict with pins here); it must keep the packages the import
#          check below needs, unless TARN_VENV_PROBE replaces that check
#          with Python statements of its own (conformance/schemathesis/run.sh:
#          'import schemathesis').
#
# Needs:   python3 >= 3.10 with the venv module (override the interpreter with
#          TARN_PYTHON). On a bare Debian machine, run as root, it installs
#          python3 / python3-venv with apt-get when they are missing. Runs
#          without a terminal or stdin (CI=true), never prompts. Concurrent
#          runs are serialised with flock on "$HOME/.cache/tarn/venv.lock".
#
# Output:  progress goes to stderr; stdout gets exactly one line, the venv
#          path.
#
# DuckDB extensions without network
# ---------------------------------
# The PyPI wheels duckdb-ext-iceberg / duckdb-ext-httpfs / duckdb-ext-avro
# (version 1.4.4.YYYYMMDD, each declaring Requires-Dist: duckdb==1.4.4) ship
# the signed extension binaries at
#   site-packages/duckdb_ext/extensions/v1.4.4/linux_amd64/<name>.duckdb_extension
# which is exactly the layout of a DuckDB extension directory. The tiny
# helper package duckdb-ext (0.1.2) adds duckdb_ext/__init__.py with
# get_extension_dir() and init(con). To load them with no network:
#
#     import duckdb, duckdb_ext
#     con = duckdb_ext.init(duckdb.connect())
#     #   == SET extension_directory = '<site-packages>/duckdb_ext/extensions';
#     #      SET autoinstall_known_extensions = false;
#     con.execute("LOAD iceberg")   # also: LOAD httpfs; LOAD avro
#
# (the duckdb CLI can do the same with
#  SET extension_directory='<venv>/lib/python3.X/site-packages/duckdb_ext/extensions').
# `INSTALL iceberg` is neither needed nor wanted: it would try to download.
# Checked against Apache Iceberg's Java REST fixture with a file:// warehouse:
#     ATTACH '' AS ice (TYPE iceberg, ENDPOINT 'http://127.0.0.1:8181',
#                       AUTHORIZATION_TYPE 'none');
#     SELECT count(*) FROM ice."<namespace>".<table>;   -- and iceberg_scan('<metadata.json>')
# both read a table written by pyiceberg, with no network.
# parquet, json and icu are built into the duckdb 1.4.4 wheel. The iceberg
# extension autoloads avro from the same directory. Checked: all three load
# and `duckdb_extensions()` reports their install_path inside the venv.
set -euo pipefail

log() { printf 'setup-python: %s\n' "$*" >&2; }

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
req="${TARN_REQUIREMENTS:-$here/requirements.txt}"
cache_dir="${HOME:?HOME must be set}/.cache/tarn"
venv="${TARN_VENV:-$cache_dir/venv}"
stamp="$venv/.tarn-requirements.sha256"
export DEBIAN_FRONTEND=noninteractive PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1

[ -f "$req" ] || { log "missing $req"; exit 1; }
mkdir -p "$cache_dir" "$(dirname "$venv")"

# One setup at a time (two suites may start together).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$cache_dir/venv.lock"
  flock 9
fi

want_hash="$(sha256sum "$req" | cut -d' ' -f1)"

# Imports that prove the venv is whole (the duckdb_ext check proves the
# extension wheels' files are present).
probe='import sys, pyiceberg, pyiceberg_core, pyarrow, pytest, duckdb, duckdb_ext, os
d = duckdb_ext.get_extension_dir()
v = "v" + duckdb.__version__
for e in ("iceberg", "httpfs", "avro"):
    import glob
    assert glob.glob(os.path.join(d, v, "*", e + ".duckdb_extension")), e
assert sys.version_info >= (3, 10)'
probe="${TARN_VENV_PROBE:-$probe}"

venv_ok() {
  [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import sys' >/dev/null 2>&1
}

# Fast path: same requirements, venv starts and imports work.
if [ "${TARN_VENV_RECREATE:-0}" != 1 ] && venv_ok && [ -f "$stamp" ] &&
   [ "$(cat "$stamp")" = "$want_hash" ] && "$venv/bin/python" -c "$probe" >/dev/null 2>&1; then
  log "venv up to date"
  printf '%s\n' "$venv"
  exit 0
fi

as_root_apt() {
  # Install Debian packages when we are root and apt-get exists.
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    log "apt-get install $*"
    apt-get update -qq >&2 || true
    apt-get install -y -qq "$@" >&2
  else
    log "cannot install $* (not root or no apt-get)"
    return 1
  fi
}

pick_python() {
  local cand
  for cand in "${TARN_PYTHON:-}" python3 python3.13 python3.12 python3.11 python3.10; do
    [ -n "$cand" ] || continue
    if command -v "$cand" >/dev/null 2>&1 &&
       "$cand" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' 2>/dev/null; then
      command -v "$cand"
      return 0
    fi
  done
  return 1
}

py="$(pick_python)" || { as_root_apt python3 python3-venv && py="$(pick_python)"; } ||
  { log "need python3 >= 3.10"; exit 1; }
log "using $py ($("$py" -c 'import sys; print(sys.version.split()[0])'))"

make_venv() {
  rm -rf "$venv"
  if ! "$py" -m venv "$venv" >&2 2>&1; then
    # Debian's python3 ships venv without ensurepip until python3-venv (or
    # python3.X-venv) is installed.
    rm -rf "$venv"
    local minor
    minor="$("$py" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
    as_root_apt python3-venv "python${minor}-venv" || as_root_apt python3-venv
    "$py" -m venv "$venv" >&2
  fi
}

if [ "${TARN_VENV_RECREATE:-0}" = 1 ] || ! venv_ok || ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
  log "creating venv at $venv"
  make_venv
else
  log "reusing venv at $venv"
fi

install() {
  log "pip install -r $req"
  "$venv/bin/python" -m pip install --quiet --no-input -r "$req" >&2 &&
    "$venv/bin/python" -c "$probe" >&2
}

rm -f "$stamp"
if ! install; then
  # pip trusts a package's dist-info even when its files were removed, so a
  # damaged venv needs a fresh start rather than another install.
  log "venv at $venv is damaged; recreating it once"
  make_venv
  install || { log "venv at $venv does not import what it should"; exit 1; }
fi
printf '%s\n' "$want_hash" >"$stamp"
if [ -z "${TARN_VENV_PROBE:-}" ]; then
  log "ready: pyiceberg $("$venv/bin/python" -c 'import pyiceberg; print(pyiceberg.__version__)'), duckdb $("$venv/bin/python" -c 'import duckdb; print(duckdb.__version__)')"
else
  log "ready: $venv"
fi
printf '%s\n' "$venv"
