package bolt

import (
	"context"
	"encoding/json"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/tarnhq/tarn/catalog"
)

var _ catalog.IdempotencyStore = (*Store)(nil)

// LoadIdempotencyRecord implements catalog.IdempotencyStore.
func (s *Store) LoadIdempotencyRecord(ctx context.Context, key string, now time.Time) (rec catalog.IdempotencyRecord, ok bool, err error) {
	if err := checkCtx(ctx); err != nil {
		return rec, false, err
	}
	err = s.db.View(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketIdempotency).Get([]byte(key))
		if v == nil {
			return nil
		}
		if err := json.Unmarshal(v, &rec); err != nil {
			return err
		}
		ok = rec.ExpiresAtMillis > now.UnixMilli()
		return nil
	})
	return rec, ok, err
}

// SaveIdempotencyRecord implements catalog.IdempotencyStore.
func (s *Store) SaveIdempotencyRecord(ctx context.Context, key string, rec catalog.IdempotencyRecord) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	v, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketIdempotency).Put([]byte(key), v)
	})
}

// ExpireIdempotencyRecords implements catalog.IdempotencyStore.
func (s *Store) ExpireIdempotencyRecords(ctx context.Context, now time.Time) (n int, err error) {
	if err := checkCtx(ctx); err != nil {
		return 0, err
	}
	err = s.db.Update(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketIdempotency).Cursor()
		for k, v := c.First(); k != nil; {
			var rec catalog.IdempotencyRecord
			if json.Unmarshal(v, &rec) != nil || rec.ExpiresAtMillis <= now.UnixMilli() {
				if err := c.Delete(); err != nil {
					return err
				}
				n++
				k, v = c.Seek(k)
				continue
			}
			k, v = c.Next()
		}
		return nil
	})
	return n, err
}
