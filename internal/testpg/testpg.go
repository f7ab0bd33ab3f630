// Package testpg starts a real PostgreSQL server from Go tests
// (scripts/postgres.sh: Debian's postgresql package, wal_level=logical, on
// a free loopback port, in a directory under t.TempDir()), for the
// change-data-capture tests of issue 15 (Debezium reads its logical
// replication stream) and anything else that needs a real Postgres. The
// server stops when the test ends.
//
// The first use on a fresh machine installs the package with apt-get (as
// root, about a minute); a new cluster takes about 5 s (initdb), a restart
// 1–2 s. StartPostgres skips the test under -short; whether a suite runs it
// at all (e.g. only with TARN_E2E=1) is the caller's choice.
package testpg

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tarnhq/tarn/internal/testservice"
)

// Server is a running PostgreSQL server with the roles of scripts/postgres.sh.
type Server struct {
	// URL connects as User to Database, e.g.
	// postgres://tarn:tarn@127.0.0.1:40125/tarn. User owns Database, so
	// tables a test creates there are its.
	URL string
	// SuperuserURL connects as the superuser postgres to Database.
	SuperuserURL string
	// Host is 127.0.0.1; Port the TCP port (there is no Unix socket).
	Host string
	Port int
	// Database, User and Password: "tarn", "tarn", "tarn".
	Database, User, Password string
	// DebeziumUser and DebeziumPassword ("debezium", "debezium"): a role
	// with LOGIN and REPLICATION, a member of User (so it may create
	// publications for, and snapshot, User's tables) with CREATE on
	// Database: what Debezium's Postgres connector needs.
	DebeziumUser, DebeziumPassword string
	// Version is the server's major version, e.g. "15".
	Version string
	// Dir holds data/ (the cluster) and postgres.log.
	Dir string
	// PID of the postmaster.
	PID string
	t   testing.TB
}

// StartPostgres starts a server on a fresh cluster; it stops when t ends.
func StartPostgres(t testing.TB) *Server {
	t.Helper()
	return StartPostgresAt(t, filepath.Join(t.TempDir(), "postgres"), nil)
}

// StartPostgresAt starts the server of dir, which may hold an earlier
// server's cluster (same data, replication slots and, if free, port; also
// after Kill). settings are extra server settings ("name=value", passed as
// -c), e.g. "max_wal_senders=32".
func StartPostgresAt(t testing.TB, dir string, settings []string) *Server {
	t.Helper()
	testservice.SkipShort(t, "testpg: real PostgreSQL")
	const script = "postgres.sh"
	vars := testservice.Run(t, []string{"PG_OVERRIDES=" + strings.Join(settings, " ")}, script, "start", dir)
	port, err := strconv.Atoi(testservice.Need(t, vars, script, "PG_PORT"))
	if err != nil {
		t.Fatalf("testpg: PG_PORT: %v", err)
	}
	s := &Server{
		URL: testservice.Need(t, vars, script, "PG_URL"), SuperuserURL: vars["PG_SUPERUSER_URL"],
		Host: vars["PG_HOST"], Port: port,
		Database: vars["PG_DATABASE"], User: vars["PG_USER"], Password: vars["PG_PASSWORD"],
		DebeziumUser: vars["PG_DEBEZIUM_USER"], DebeziumPassword: vars["PG_DEBEZIUM_PASSWORD"],
		Version: vars["PG_VERSION"], Dir: vars["PG_DIR"], PID: vars["PG_PID"], t: t,
	}
	t.Cleanup(s.Stop)
	return s
}

// Stop shuts the server down (fast shutdown: clients, replication
// connections included, are disconnected); its directory stays. Safe to
// call more than once; start it again with StartPostgresAt(t, s.Dir, ...).
func (s *Server) Stop() {
	s.t.Helper()
	testservice.Run(s.t, nil, "postgres.sh", "stop", s.Dir)
}

// Kill kills the postmaster with SIGKILL (a crash), without waiting.
func (s *Server) Kill() {
	s.t.Helper()
	testservice.Kill(s.t, s.PID)
}

// Connect opens a connection to URL, closed when t ends.
func (s *Server) Connect(t testing.TB) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		t.Fatalf("testpg: connect %s: %v", s.URL, err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// Exec runs sql (one or more statements separated by semicolons when args
// is empty: pgx then uses the simple protocol, one implicit transaction)
// on a new connection to URL, failing t on an error.
func (s *Server) Exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		t.Fatalf("testpg: connect %s: %v", s.URL, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("testpg: %s: %v", sql, err)
	}
}
