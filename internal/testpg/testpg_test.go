package testpg

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestServices starts a server, checks what Debezium needs of it (logical
// WAL, a replication connection as the Debezium role, a publication of the
// workload user's table, a logical replication slot), kills it with
// SIGKILL and restarts it on the same directory: rows, the slot and the
// port survive. It needs the postgresql package (scripts/postgres.sh
// installs it as root), so it runs only with TARN_E2E=1
// (TARN_E2E=1 go test ./internal/testpg).
func TestServices(t *testing.T) {
	if os.Getenv("TARN_E2E") != "1" {
		t.Skip("set TARN_E2E=1 to start a real PostgreSQL server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // starts take a minute or more on a busy machine
	defer cancel()

	s := StartPostgres(t)
	conn := s.Connect(t)
	var walLevel string
	if err := conn.QueryRow(ctx, "SHOW wal_level").Scan(&walLevel); err != nil || walLevel != "logical" {
		t.Fatalf("wal_level %q, %v; want logical", walLevel, err)
	}
	s.Exec(t, `CREATE TABLE t (id int PRIMARY KEY, v text); INSERT INTO t VALUES (1, 'a'), (2, 'b')`)

	// As the Debezium role: a publication of tarn's table (needs the
	// owner's rights, through membership), a SELECT (the snapshot), and a
	// logical slot over a replication connection.
	dbz := fmt.Sprintf("postgres://%s:%s@%s:%d/%s", s.DebeziumUser, s.DebeziumPassword, s.Host, s.Port, s.Database)
	dconn, err := pgx.Connect(ctx, dbz)
	if err != nil {
		t.Fatalf("connect as %s: %v", s.DebeziumUser, err)
	}
	if _, err := dconn.Exec(ctx, "CREATE PUBLICATION p FOR TABLE t"); err != nil {
		t.Fatalf("create publication as %s: %v", s.DebeziumUser, err)
	}
	var n int
	if err := dconn.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 2 {
		t.Fatalf("select as %s: %d, %v", s.DebeziumUser, n, err)
	}
	dconn.Close(ctx)
	repl, err := pgconn.Connect(ctx, dbz+"?replication=database")
	if err != nil {
		t.Fatalf("replication connection as %s: %v", s.DebeziumUser, err)
	}
	if _, err := repl.Exec(ctx, "CREATE_REPLICATION_SLOT s LOGICAL pgoutput").ReadAll(); err != nil {
		t.Fatalf("create slot: %v", err)
	}
	repl.Close(ctx)

	s.Kill()
	s2 := StartPostgresAt(t, s.Dir, nil)
	if s2.Port != s.Port || s2.URL != s.URL {
		t.Fatalf("restart on %d (%s), was %d (%s)", s2.Port, s2.URL, s.Port, s.URL)
	}
	conn2 := s2.Connect(t)
	var got string
	if err := conn2.QueryRow(ctx, "SELECT string_agg(v, ',' ORDER BY id) FROM t").Scan(&got); err != nil || got != "a,b" {
		t.Fatalf("rows after kill -9: %q, %v; want a,b", got, err)
	}
	var slot string
	if err := conn2.QueryRow(ctx, "SELECT slot_name FROM pg_replication_slots").Scan(&slot); err != nil || slot != "s" {
		t.Fatalf("slot after kill -9: %q, %v; want s", slot, err)
	}
}
