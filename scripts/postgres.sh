#!/usr/bin/env bash
# A real PostgreSQL server for the change-data-capture end-to-end tests
# (issue 15: Debezium's Postgres connector reads its logical replication
# stream): Debian's `postgresql` package, one cluster per DIR, on its own
# free port on 127.0.0.1, with wal_level=logical.
#
#   scripts/postgres.sh start  [DIR]   # initdb DIR if new, start, wait until it answers
#   scripts/postgres.sh stop   [DIR]   # fast shutdown (SIGINT), wait (SIGKILL after 30 s)
#   scripts/postgres.sh status [DIR]   # exit 0 and print the variables if running
#   scripts/postgres.sh setup          # only find (or apt-get install) the binaries; prints their dir
#
# `start` prints, on stdout, lines meant for eval:
#   PG_URL=postgres://tarn:tarn@127.0.0.1:PORT/tarn      the workload's user (owns database tarn)
#   PG_HOST=127.0.0.1  PG_PORT=PORT  PG_DATABASE=tarn  PG_USER=tarn  PG_PASSWORD=tarn
#   PG_DEBEZIUM_USER=debezium  PG_DEBEZIUM_PASSWORD=debezium   the connector's user
#   PG_SUPERUSER_URL=postgres://postgres:postgres@127.0.0.1:PORT/tarn
#   PG_DIR=/abs/dir  PG_PID=1234  PG_LOG=...  PG_VERSION=15
# e.g.  eval "$(scripts/postgres.sh start)"; psql "$PG_URL"; scripts/postgres.sh stop "$PG_DIR"
# Progress and errors go to stderr.
#
# Roles (created on the first start): `postgres`, the superuser; `tarn`,
# LOGIN, owner of database `tarn` (tables the tests create are its); and
# `debezium`, LOGIN REPLICATION, a member of `tarn` (so it has the owner's
# rights Debezium needs to create a publication for tarn's tables and to
# snapshot them: the "replication group" setup of Debezium's Postgres
# connector docs) with CREATE on the database. Passwords equal the role
# names; TCP only (scram-sha-256), no Unix socket.
#
# Server settings (passed as -c on every start, so a restart applies
# changes): listen_addresses=127.0.0.1, wal_level=logical,
# max_replication_slots=16, max_wal_senders=16 (Debezium takes one slot and
# one sender per connector; the rest leave room for several connectors and
# a restart's overlap), fsync=off (only an OS crash could lose data: a
# kill -9 of the server loses nothing committed), unix_socket_directories=''.
# More with PG_OVERRIDES="name=value ...".
#
# DIR (created if missing) holds data/ (the cluster), postgres.log and
# postgres.pid; a later `start DIR` restarts the same cluster with its data,
# replication slots and port (if still free), also after a kill -9 (the
# server runs crash recovery; backends the killed postmaster left behind are
# waited for, then killed). Without DIR, `start` makes a temporary
# directory, remembered in ${TARN_RUN_DIR:-${TMPDIR:-/tmp}}/tarn-postgres.current
# for `stop`/`status` without DIR; `stop` deletes such a temporary directory.
#
# As root, the server runs as the system user `postgres` (initdb and the
# server refuse root): DIR is chowned to it, and directories above DIR that
# it cannot enter get search permission (o+x, not read) so it can reach DIR.
#
# Env:
#   PG_PORT_WANTED        port to use (default: DIR's previous port, else a free one)
#   PG_OVERRIDES          extra server settings, whitespace-separated name=value
#   PG_START_TIMEOUT      seconds to wait for readiness (default 60)
#   PG_BIN                directory of initdb/postgres/psql (default: the newest
#                         /usr/lib/postgresql/*/bin)
set -euo pipefail
shopt -s inherit_errexit

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
run_dir="${TARN_RUN_DIR:-${TMPDIR:-/tmp}}"
current_file="$run_dir/tarn-postgres.current"
os_user=postgres

log() { echo "postgres: $*" >&2; }
die() { log "$*"; exit 1; }
usage() { echo "usage: $0 start|stop|status [DIR] | setup" >&2; exit 2; }

# --- binaries ---------------------------------------------------------------

# The newest /usr/lib/postgresql/<major>/bin with a server in it.
find_bin() {
  local d
  if [[ -n ${PG_BIN:-} ]]; then
    [[ -x $PG_BIN/postgres ]] && echo "$PG_BIN"
    return
  fi
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -n -r); do
    if [[ -x $d/initdb && -x $d/postgres && -x $d/pg_isready && -x $d/psql ]]; then
      echo "$d"
      return
    fi
  done
}

# Prints the binaries' directory; installs Debian's `postgresql` when they
# are missing (CI machines start fresh). The package's own default cluster
# (15/main on port 5432) is not created: the tests never use it.
setup() {
  local bin
  bin=$(find_bin)
  if [[ -n $bin ]]; then
    echo "$bin"
    return
  fi
  [[ -z ${PG_BIN:-} ]] || die "PG_BIN=$PG_BIN has no postgres binary"
  [[ $(id -u) == 0 ]] || missing "PostgreSQL is not installed (as root: apt-get install postgresql)"
  command -v apt-get >/dev/null || missing "PostgreSQL is not installed and there is no apt-get"
  mkdir -p "$run_dir"
  # Serialise concurrent first runs (parallel test packages).
  exec 9>"$run_dir/tarn-postgres-install.lock"
  flock 9
  bin=$(find_bin)
  if [[ -z $bin ]]; then
    log "installing Debian's postgresql package (apt-get)"
    local t0=$SECONDS
    mkdir -p /etc/postgresql-common/createcluster.d
    echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.d/tarn-no-main-cluster.conf
    DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql >&2
    bin=$(find_bin)
    [[ -n $bin ]] || die "apt-get install postgresql brought no /usr/lib/postgresql/*/bin/postgres"
    log "installed in $((SECONDS - t0))s: $bin"
  fi
  exec 9>&-
  echo "$bin"
}

bin=$(find_bin)

# --- helpers ----------------------------------------------------------------

# shellcheck source=lib/service.sh
. "$here/lib/service.sh"

# Runs a command as the server's OS user (the caller's own when not root).
as_server() {
  if [[ $(id -u) == 0 ]]; then
    setpriv --reuid="$os_user" --regid="$os_user" --init-groups --reset-env -- "$@"
  else
    "$@"
  fi
}

# The process in DIR/postgres.pid is alive and is this DIR's postmaster.
running() {
  local pid
  [[ -f $dir/postgres.pid ]] || return 1
  pid=$(cat "$dir/postgres.pid")
  [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "-D $dir/data "
}

port_of() { cat "$dir/postgres.port"; }

# The server of $dir accepts connections (service.sh).
ready() { "$bin/pg_isready" -q -h 127.0.0.1 -p "$(port_of)" -d tarn -U tarn -t 2 2>/dev/null; }

print_vars() {
  local port
  port=$(port_of)
  echo "PG_URL=postgres://tarn:tarn@127.0.0.1:$port/tarn"
  echo "PG_HOST=127.0.0.1"
  echo "PG_PORT=$port"
  echo "PG_DATABASE=tarn"
  echo "PG_USER=tarn"
  echo "PG_PASSWORD=tarn"
  echo "PG_DEBEZIUM_USER=debezium"
  echo "PG_DEBEZIUM_PASSWORD=debezium"
  echo "PG_SUPERUSER_URL=postgres://postgres:postgres@127.0.0.1:$port/tarn"
  echo "PG_DIR=$dir"
  echo "PG_PID=$(cat "$dir/postgres.pid")"
  echo "PG_LOG=$dir/postgres.log"
  echo "PG_VERSION=$(cat "$dir/data/PG_VERSION")"
}

# As root: DIR belongs to the server's user, who can reach it (search
# permission on every directory above it).
give_dir_to_server() {
  [[ $(id -u) == 0 ]] || return 0
  if ! id "$os_user" >/dev/null 2>&1; then
    log "creating system user $os_user"
    useradd --system --user-group --home-dir /var/lib/postgresql --shell /usr/sbin/nologin "$os_user"
  fi
  chown -R "$os_user:" "$dir"
  local d=$dir
  while [[ $d != / ]]; do
    d=$(dirname "$d")
    if ! as_server test -x "$d"; then
      log "granting o+x on $d so that $os_user can reach $dir"
      chmod o+x "$d"
    fi
  done
}

# After a kill -9 of the postmaster (its postmaster.pid is left behind),
# its backends run on until they notice; they hold the old shared memory,
# and a new postmaster refuses to start while they do. They are the
# processes whose working directory is DIR/data: wait up to 10 s (also for
# the zombie of the killed postmaster), then SIGKILL them.
reap_orphans() {
  local pids=() i old
  [[ -f $dir/data/postmaster.pid ]] || return 0
  old=$(head -n1 "$dir/data/postmaster.pid")
  for i in $(seq 50); do
    mapfile -t pids < <(find /proc -mindepth 2 -maxdepth 2 -name cwd -lname "$dir/data" 2>/dev/null | cut -d/ -f3)
    # the killed postmaster itself, until init has reaped it: the new one
    # refuses to start while the pid in postmaster.pid exists
    if [[ $old =~ ^[0-9]+$ ]] && grep -qs '^[0-9]* (postgres) Z' "/proc/$old/stat"; then pids+=("$old"); fi
    ((${#pids[@]})) || return 0
    sleep 0.2
  done
  log "killing ${#pids[@]} leftover backend(s) of an earlier server: ${pids[*]}"
  kill -9 "${pids[@]}" 2>/dev/null || true
  sleep 0.5
}

# One-time SQL of a new cluster: the roles and database described above.
create_roles() {
  PGPASSWORD=postgres "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$(port_of)" -U postgres -d postgres >&2 <<'EOF'
CREATE ROLE tarn LOGIN PASSWORD 'tarn';
CREATE DATABASE tarn OWNER tarn;
CREATE ROLE debezium LOGIN REPLICATION PASSWORD 'debezium';
GRANT tarn TO debezium;
GRANT CREATE, CONNECT ON DATABASE tarn TO debezium;
EOF
  touch "$dir/.roles"
}

# --- commands ---------------------------------------------------------------

cmd_start() {
  local port pid t0 pwfile settings=() kv
  t0=$(date +%s%3N)
  start_dir postgres "${1:-}"
  bin=$(setup)
  if running; then
    ready || die "a server is running in $dir (pid $(cat "$dir/postgres.pid")) but does not answer; stop it first"
    log "already running in $dir (pid $(cat "$dir/postgres.pid"))"
    print_vars
    return
  fi

  port=$(pick_port PG_PORT_WANTED "$dir/postgres.port")
  give_dir_to_server

  if [[ ! -f $dir/data/PG_VERSION ]]; then
    log "initdb $dir/data"
    rm -rf "$dir/data" "$dir/.roles"
    pwfile="$dir/.pwfile"
    echo postgres >"$pwfile"
    [[ $(id -u) != 0 ]] || chown "$os_user:" "$pwfile"
    if ! as_server "$bin/initdb" -D "$dir/data" -U postgres --pwfile="$pwfile" \
      --auth-host=scram-sha-256 --auth-local=peer -E UTF8 --locale=C.UTF-8 --no-sync \
      >"$dir/initdb.log" 2>&1; then
      cat "$dir/initdb.log" >&2
      die "initdb failed"
    fi
    rm -f "$pwfile"
  fi
  reap_orphans

  settings=(-c listen_addresses=127.0.0.1 -c port="$port" -c unix_socket_directories=
    -c wal_level=logical -c max_replication_slots=16 -c max_wal_senders=16
    -c fsync=off -c log_min_messages=warning -c log_connections=off)
  if [[ -n ${PG_OVERRIDES:-} ]]; then
    for kv in $PG_OVERRIDES; do settings+=(-c "$kv"); done
  fi
  # keep the previous run's log (e.g. of a server that was killed)
  if [[ -s $dir/postgres.log ]]; then mv "$dir/postgres.log" "$dir/postgres.log.1"; fi
  : >"$dir/postgres.log"
  [[ $(id -u) != 0 ]] || chown "$os_user:" "$dir/postgres.log" "$dir/postgres.log.1" 2>/dev/null || true
  start_server "${settings[@]}"
  watch_owner "$here/postgres.sh"
  await_ready postgres "$(cat "$dir/postgres.pid")" "${PG_START_TIMEOUT:-60}" "$dir/postgres.log"
  [[ -f $dir/.roles ]] || create_roles
  mkdir -p "$run_dir"
  echo "$dir" >"$current_file"
  log "ready on 127.0.0.1:$port in $(elapsed "$t0")s (pid $(cat "$dir/postgres.pid"), dir $dir)"
  print_vars
}

# start_server SETTING...: the postmaster, as the server's user, logging to
# DIR/postgres.log; its pid goes to DIR/postgres.pid. setsid: its own
# session, so the end of the caller's process group (a Ctrl-C, a CI step)
# does not take it down; setsid, nohup and setpriv all exec in place, so $!
# is the postmaster.
start_server() {
  if [[ $(id -u) == 0 ]]; then
    setsid nohup setpriv --reuid="$os_user" --regid="$os_user" --init-groups --reset-env -- \
      "$bin/postgres" -D "$dir/data" "$@" >>"$dir/postgres.log" 2>&1 </dev/null &
  else
    setsid nohup "$bin/postgres" -D "$dir/data" "$@" >>"$dir/postgres.log" 2>&1 </dev/null &
  fi
  echo $! >"$dir/postgres.pid"
}

pid_file=postgres.pid
# Fast shutdown: SIGTERM would be a "smart" shutdown that waits for every
# client to disconnect, and a Debezium connector never does.
stop_signal=INT
service_main "$@"
