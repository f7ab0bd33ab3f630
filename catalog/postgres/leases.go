package postgres

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tarnhq/tarn/catalog"
)

// AcquireLease takes lease name for holder for ttl (catalog.Leases) in
// one statement: an insert, or an update of the row when it lapsed or
// holder holds it, with the epoch bumped unless holder held it
// unexpired. The time is the database's (now(), the statement's start),
// never the replica's, so replicas whose clocks disagree agree on who
// holds it. Errors: catalog.ErrInvalidArgument; the connection's.
func (s *Store) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (catalog.Lease, bool, error) {
	if err := catalog.CheckLease(name, holder, ttl); err != nil {
		return catalog.Lease{}, false, err
	}
	l := catalog.Lease{Name: name}
	err := s.pool.QueryRow(ctx, `INSERT INTO tarn_leases AS l (name, holder, epoch, expires_at)
		VALUES ($1, $2, 1, now() + $3 * interval '1 millisecond')
		ON CONFLICT (name) DO UPDATE SET
			holder = EXCLUDED.holder,
			epoch = CASE WHEN l.holder = EXCLUDED.holder AND l.expires_at > now() THEN l.epoch ELSE l.epoch + 1 END,
			expires_at = EXCLUDED.expires_at
		WHERE l.holder = EXCLUDED.holder OR l.expires_at <= now()
		RETURNING holder, epoch, expires_at`, name, holder, ttl.Milliseconds()).Scan(&l.Holder, &l.Epoch, &l.Expires)
	if err == nil {
		return l, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return catalog.Lease{}, false, err
	}
	// Held by another: report who (a second statement; the holder may
	// have changed since, which only makes the report older).
	err = s.pool.QueryRow(ctx, `SELECT holder, epoch, expires_at FROM tarn_leases WHERE name = $1`, name).Scan(&l.Holder, &l.Epoch, &l.Expires)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return catalog.Lease{}, false, err
	}
	return l, false, nil
}

// RenewLeases extends every unexpired lease of holder by ttl in one
// statement and returns them (catalog.Leases).
func (s *Store) RenewLeases(ctx context.Context, holder string, ttl time.Duration) ([]catalog.Lease, error) {
	if err := catalog.CheckLease("-", holder, ttl); err != nil {
		return nil, err
	}
	return s.queryLeases(ctx, `UPDATE tarn_leases SET expires_at = now() + $2 * interval '1 millisecond'
		WHERE holder = $1 AND expires_at > now() RETURNING name, holder, epoch, expires_at`, holder, ttl.Milliseconds())
}

// ReleaseLease ends holder's lease name of epoch now, keeping the row
// (and so the epoch, which the next acquisition bumps).
func (s *Store) ReleaseLease(ctx context.Context, name, holder string, epoch int64) error {
	_, err := s.pool.Exec(ctx, `UPDATE tarn_leases SET expires_at = now()
		WHERE name = $1 AND holder = $2 AND epoch = $3 AND expires_at > now()`, name, holder, epoch)
	return err
}

// ListLeases returns the leases whose name starts with prefix, by name.
func (s *Store) ListLeases(ctx context.Context, prefix string) ([]catalog.Lease, error) {
	return s.queryLeases(ctx, `SELECT name, holder, epoch, expires_at FROM tarn_leases
		WHERE starts_with(name, $1) ORDER BY name`, prefix)
}

func (s *Store) queryLeases(ctx context.Context, sql string, args ...any) ([]catalog.Lease, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	ls, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (catalog.Lease, error) {
		var l catalog.Lease
		return l, r.Scan(&l.Name, &l.Holder, &l.Epoch, &l.Expires)
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ls, func(a, b catalog.Lease) int { return strings.Compare(a.Name, b.Name) })
	return ls, nil
}
