// Package postgres is the catalog.Store on PostgreSQL (pgx v5), for
// several Tarn replicas sharing one catalog (tarn serve --store
// postgres://...). It keeps what catalog/bolt keeps, in tables of the
// database (and schema, from the URL's search_path) the URL names:
//
//	tarn_namespaces   ns -> parent, properties (jsonb)
//	tarn_pointers     (ns, name) -> kind, metadata_location, version, locations
//	tarn_locations    (dir, ns, name): the location index (locations.go)
//	tarn_idempotency  key -> stored response (idempotency.go)
//	tarn_records      (collection, key) -> opaque value (records.go)
//	tarn_leases       name -> holder, epoch, expires_at (leases.go)
//	tarn_schema_migrations  golang-migrate's version row
//
// where ns is the namespace levels joined by U+001F, as in catalog/bolt.
// Only pointers live in rows: a table's metadata stays in its metadata
// file, and a commit is a compare-and-swap on the row's version.
// Duplicate names are stopped by the primary keys, missing and non-empty
// namespaces by foreign keys, never by a read before the write.
//
// The schema is versioned (migrations/*.up.sql, applied by golang-migrate
// in Open under its advisory lock, so replicas starting together migrate
// once); Open refuses a database whose schema is newer than this build
// knows (ErrSchemaVersion), or left dirty by a failed migration.
package postgres

import (
	"context"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-migrate/migrate/v4"
	migratepgx "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/internal/errclass"
)

//go:embed migrations/*.sql
var migrations embed.FS

// SchemaVersion is the newest schema version this build knows (the
// highest migrations/NNNN_*.up.sql). Open migrates an older database up to
// it and refuses a newer one.
const SchemaVersion = 3

// MigrationsTable is golang-migrate's version table, prefixed like Tarn's
// own tables so that it cannot clash with the application's.
const MigrationsTable = "tarn_schema_migrations"

// commitTimeout bounds a COMMIT sent after the caller's context ended: the
// caller's cancellation must not turn a commit that may have landed into
// one that reports it did not.
const commitTimeout = 30 * time.Second

// ErrSchemaVersion is returned by Open for a database whose schema is
// newer than SchemaVersion (written by a later Tarn), or dirty (a
// migration failed half way and needs an operator).
var ErrSchemaVersion = errclass.New(errclass.Internal, "postgres: unsupported schema version")

const levelSep = "\x1f"

// Store is the PostgreSQL catalog.Store. It is safe for concurrent use,
// also by several processes on one database.
type Store struct {
	pool *pgxpool.Pool
}

var (
	_ catalog.Store            = (*Store)(nil)
	_ catalog.IdempotencyStore = (*Store)(nil)
	_ catalog.RecordStore      = (*Store)(nil)
	_ catalog.Pinger           = (*Store)(nil)
	_ catalog.Leases           = (*Store)(nil)
)

// Open connects to the database of url (a libpq URL or key=value string,
// e.g. postgres://tarn:secret@db:5432/tarn?sslmode=verify-full; pgxpool's
// pool_max_conns and the server's search_path may be set in it), migrates
// its schema up to SchemaVersion and returns the store. Errors:
// ErrSchemaVersion; pgx's connection errors; golang-migrate's.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse store URL: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	if err := migrateUp(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	return &Store{pool: pool}, nil
}

// migrateUp applies the migrations this build has and the database lacks.
func migrateUp(ctx context.Context, pool *pgxpool.Pool) error {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		return fmt.Errorf("postgres: connect: %w", err)
	}
	drv, err := migratepgx.WithInstance(db, &migratepgx.Config{MigrationsTable: MigrationsTable})
	if err != nil {
		return fmt.Errorf("postgres: migrations: %w", err)
	}
	src, err := iofs.New(migrations, "migrations")
	if err != nil {
		return fmt.Errorf("postgres: migrations: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "pgx5", drv)
	if err != nil {
		_ = drv.Close()
		return fmt.Errorf("postgres: migrations: %w", err)
	}
	// The driver holds a connection of the pool (for its advisory lock)
	// until closed; the pool's Close would wait for it forever.
	defer m.Close()
	// A version newer than this build's is refused before Up, which would
	// fail on it with a bare "file does not exist". It is read without
	// golang-migrate's lock: a schema only grows newer, so what is read
	// may be refused. A dirty flag read here may be another replica's
	// migration in progress, so only Up, under the lock, judges it.
	if err := checkNewer(m); err != nil {
		return err
	}
	err = m.Up()
	var dirty migrate.ErrDirty
	switch {
	case err == nil, errors.Is(err, migrate.ErrNoChange):
		return nil
	case errors.As(err, &dirty):
		return fmt.Errorf("%w: schema version %d is dirty (a migration failed part way); fix the database, then clear the flag in %s", ErrSchemaVersion, dirty.Version, MigrationsTable)
	}
	if nerr := checkNewer(m); nerr != nil {
		return nerr // a newer Tarn migrated between the check and Up
	}
	return fmt.Errorf("postgres: migrate schema to version %d: %w", SchemaVersion, err)
}

// checkNewer returns ErrSchemaVersion when the database's schema version
// is newer than SchemaVersion.
func checkNewer(m *migrate.Migrate) error {
	v, _, err := m.Version()
	switch {
	case errors.Is(err, migrate.ErrNilVersion):
	case err != nil:
		return fmt.Errorf("postgres: read schema version: %w", err)
	case v > SchemaVersion:
		return fmt.Errorf("%w: the database has schema version %d, this build knows up to %d: run a Tarn release that knows it", ErrSchemaVersion, v, SchemaVersion)
	}
	return nil
}

// Close releases the connections.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

func nsKey(ns catalog.Namespace) string { return strings.Join(ns, levelSep) }

func decodeNS(k string) catalog.Namespace { return strings.Split(k, levelSep) }

// parentKey is the ns key of ns's parent, nil for a top-level namespace.
func parentKey(ns catalog.Namespace) *string {
	if len(ns) < 2 {
		return nil
	}
	p := nsKey(ns.Parent())
	return &p
}

// inTx runs fn in one READ COMMITTED transaction and commits it. A
// catalog sentinel or ctx.Err() from fn (or before the COMMIT) means
// nothing was written; a failed COMMIT leaves the outcome unknown and its
// error never wraps a context error (catalog.Catalog would then delete
// files a landed commit references).
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return txError(ctx, err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return txError(ctx, err)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	if err := tx.Commit(cctx); err != nil {
		return fmt.Errorf("postgres: commit (outcome unknown): %v", err)
	}
	return nil
}

// txError maps a failure before COMMIT: ctx.Err() when the caller's
// context ended; serialization failures and deadlocks (which the fixed
// lock order should prevent) as catalog.ErrCommitFailed, so the client
// retries; anything else as is.
func txError(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !isCatalogError(err) {
		return cerr
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01") {
		return catalog.Errorf(catalog.ErrCommitFailed, "concurrent change: %s", pe.Message)
	}
	return err
}

func isCatalogError(err error) bool {
	for _, s := range []error{catalog.ErrNotFound, catalog.ErrAlreadyExists, catalog.ErrConflict, catalog.ErrInvalidArgument} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// pgCode returns the SQLSTATE and constraint of a server error, "" if err
// is none.
func pgCode(err error) (code, constraint string) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code, pe.ConstraintName
	}
	return "", ""
}

const (
	codeUniqueViolation     = "23505"
	codeForeignKeyViolation = "23503"
)

// Page tokens are base64url of a listing tag and the last key returned,
// as catalog/bolt's, so a token from one listing (or garbage) is refused
// by another.
const (
	tagNamespaces byte = 'n'
	tagPointers   byte = 'p'
)

func encodeToken(tag byte, k string) string {
	return base64.RawURLEncoding.EncodeToString(append([]byte{tag}, k...))
}

func decodeToken(tag byte, t string) (string, error) {
	k, err := base64.RawURLEncoding.DecodeString(t)
	if err != nil || len(k) < 2 || k[0] != tag {
		return "", fmt.Errorf("%w: malformed page token", catalog.ErrInvalidArgument)
	}
	return string(k[1:]), nil
}

// pageAfter returns the key a page starts after ("" for the first page)
// and checks with belongs that a token's key is of this listing.
func pageAfter(tag byte, page catalog.Page, belongs func(k string) bool) (string, error) {
	if page.Token == "" {
		return "", nil
	}
	k, err := decodeToken(tag, page.Token)
	if err != nil {
		return "", err
	}
	if !belongs(k) {
		return "", fmt.Errorf("%w: page token does not belong to this listing", catalog.ErrInvalidArgument)
	}
	return k, nil
}

// listChunk is how many rows a filtered listing reads per query.
const listChunk = 500

// pager collects a page from rows read in key order, as catalog/bolt's
// scan does: at most page.Size kept entries, and a token naming the last
// kept one when another kept entry follows.
type pager struct {
	size  int
	n     int
	last  string
	token string
}

// add offers the entry with key k that passed the listing's filter; it
// returns false once the page is full (the token is then set).
func (p *pager) add(k string) bool {
	if p.size > 0 && p.n == p.size {
		p.token = p.last
		return false
	}
	p.n++
	p.last = k
	return true
}

// limit is the LIMIT of one query of a listing: all rows for an
// unlimited page, one more than the page for an unfiltered one (to know
// whether a token is due), a chunk for a filtered one.
func limit(page catalog.Page) int64 {
	switch {
	case page.Size == 0:
		return -1
	case page.Keep == nil:
		return int64(page.Size) + 1
	}
	return max(int64(page.Size)+1, listChunk)
}

// sqlLimit renders n as a LIMIT argument: NULL (no limit) for -1.
func sqlLimit(n int64) any {
	if n < 0 {
		return nil
	}
	return n
}

// Ping returns nil when the database answers a round trip within ctx
// (catalog.Pinger, for /readyz). Errors: the connection's.
func (s *Store) Ping(ctx context.Context) error {
	return s.pool.Ping(ctx)
}

// Empty reports whether the store holds no namespace, pointer,
// Idempotency-Key response or record: a database `tarn migrate` may
// copy a bbolt file into.
func (s *Store) Empty(ctx context.Context) (bool, error) {
	var any bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM tarn_namespaces) OR EXISTS (SELECT 1 FROM tarn_pointers)
		OR EXISTS (SELECT 1 FROM tarn_idempotency) OR EXISTS (SELECT 1 FROM tarn_records)`).Scan(&any)
	return !any, err
}
