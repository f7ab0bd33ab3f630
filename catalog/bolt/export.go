package bolt

import (
	"context"
	"encoding/json"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/tarnhq/tarn/catalog"
)

// RecordCollections returns the names of the record collections the
// file holds (catalog.RecordStore's), in byte order: what `tarn
// migrate` copies, whichever packages wrote them.
func (s *Store) RecordCollections(ctx context.Context) (out []string, err error) {
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	err = s.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketRecords)
		if b == nil {
			return nil
		}
		return b.ForEachBucket(func(k []byte) error {
			out = append(out, string(k))
			return nil
		})
	})
	return out, err
}

// IdempotencyRecords returns every stored Idempotency-Key response, by
// key, expired ones included (the next expiry pass drops them wherever
// they are). Errors: a record that does not decode.
func (s *Store) IdempotencyRecords(ctx context.Context) (map[string]catalog.IdempotencyRecord, error) {
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	out := map[string]catalog.IdempotencyRecord{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketIdempotency).ForEach(func(k, v []byte) error {
			var rec catalog.IdempotencyRecord
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("bolt: idempotency record %q: %w", k, err)
			}
			out[string(k)] = rec
			return nil
		})
	})
	return out, err
}
