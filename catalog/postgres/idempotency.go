package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tarnhq/tarn/catalog"
)

// LoadIdempotencyRecord implements catalog.IdempotencyStore.
func (s *Store) LoadIdempotencyRecord(ctx context.Context, key string, now time.Time) (rec catalog.IdempotencyRecord, ok bool, err error) {
	err = s.pool.QueryRow(ctx, `SELECT fingerprint, status, content_type, body, expires_at_ms FROM tarn_idempotency WHERE key = $1`, key).
		Scan(&rec.Fingerprint, &rec.Status, &rec.ContentType, &rec.Body, &rec.ExpiresAtMillis)
	if errors.Is(err, pgx.ErrNoRows) {
		return catalog.IdempotencyRecord{}, false, nil
	}
	if err != nil {
		return catalog.IdempotencyRecord{}, false, err
	}
	return rec, rec.ExpiresAtMillis > now.UnixMilli(), nil
}

// SaveIdempotencyRecord implements catalog.IdempotencyStore (an upsert).
func (s *Store) SaveIdempotencyRecord(ctx context.Context, key string, rec catalog.IdempotencyRecord) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO tarn_idempotency (key, fingerprint, status, content_type, body, expires_at_ms)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, status = EXCLUDED.status,
			content_type = EXCLUDED.content_type, body = EXCLUDED.body, expires_at_ms = EXCLUDED.expires_at_ms`,
		key, rec.Fingerprint, rec.Status, rec.ContentType, rec.Body, rec.ExpiresAtMillis)
	return err
}

// ExpireIdempotencyRecords implements catalog.IdempotencyStore; several
// replicas may run it at once (each row is deleted by one of them).
func (s *Store) ExpireIdempotencyRecords(ctx context.Context, now time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM tarn_idempotency WHERE expires_at_ms <= $1`, now.UnixMilli())
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}
