package bolt

import (
	"context"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/tarnhq/tarn/catalog"
)

// bucketRecords holds one nested bucket per collection of records kept
// for packages above the catalog (ingest/topics keeps its topic configs
// in the collection "topics"). Adding it did not change the layout
// version: older files simply lack it and get it on first write.
var bucketRecords = []byte("records")

// PutRecord stores value under key in collection, replacing any value.
// The write is one fsynced bbolt transaction. Values are opaque bytes
// (their owners store JSON). Errors: catalog.ErrInvalidArgument for an
// empty collection or key (as for every record method).
func (s *Store) PutRecord(ctx context.Context, collection, key string, value []byte) error {
	if err := checkRecordKey(collection, key); err != nil {
		return err
	}
	if err := checkCtx(ctx); err != nil {
		return err
	}
	return s.db.Update(func(tx *bbolt.Tx) error {
		b, err := createRecordBucket(tx, collection)
		if err != nil {
			return err
		}
		return b.Put([]byte(key), value)
	})
}

// CreateRecord stores value under key unless collection holds it
// already, in one bbolt transaction, and returns the value stored after
// the call (catalog.RecordStore).
func (s *Store) CreateRecord(ctx context.Context, collection, key string, value []byte) (stored []byte, created bool, err error) {
	if err := checkRecordKey(collection, key); err != nil {
		return nil, false, err
	}
	if err := checkCtx(ctx); err != nil {
		return nil, false, err
	}
	err = s.db.Update(func(tx *bbolt.Tx) error {
		b, err := createRecordBucket(tx, collection)
		if err != nil {
			return err
		}
		if v := b.Get([]byte(key)); v != nil {
			stored = append([]byte(nil), v...)
			return nil
		}
		stored, created = append([]byte{}, value...), true
		return b.Put([]byte(key), stored)
	})
	if err != nil {
		return nil, false, err
	}
	return stored, created, nil
}

// GetRecord returns the value of key in collection; ok is false when
// there is none.
func (s *Store) GetRecord(ctx context.Context, collection, key string) (value []byte, ok bool, err error) {
	if err := checkRecordKey(collection, key); err != nil {
		return nil, false, err
	}
	if err := checkCtx(ctx); err != nil {
		return nil, false, err
	}
	err = s.db.View(func(tx *bbolt.Tx) error {
		b := recordBucket(tx, collection)
		if b == nil {
			return nil
		}
		if v := b.Get([]byte(key)); v != nil {
			value, ok = append([]byte(nil), v...), true
		}
		return nil
	})
	return value, ok, err
}

// ListRecords returns every record of collection, by key (empty, not an
// error, for a collection never written).
func (s *Store) ListRecords(ctx context.Context, collection string) (map[string][]byte, error) {
	if err := checkRecordKey(collection, "-"); err != nil {
		return nil, err
	}
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		b := recordBucket(tx, collection)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			out[string(k)] = append([]byte(nil), v...)
			return nil
		})
	})
	return out, err
}

// DeleteRecord removes key from collection; removing a missing key is not
// an error.
func (s *Store) DeleteRecord(ctx context.Context, collection, key string) error {
	if err := checkRecordKey(collection, key); err != nil {
		return err
	}
	if err := checkCtx(ctx); err != nil {
		return err
	}
	return s.db.Update(func(tx *bbolt.Tx) error {
		b := recordBucket(tx, collection)
		if b == nil {
			return nil
		}
		return b.Delete([]byte(key))
	})
}

// createRecordBucket returns collection's bucket in a write transaction,
// creating it (and the records bucket) if needed.
func createRecordBucket(tx *bbolt.Tx, collection string) (*bbolt.Bucket, error) {
	root, err := tx.CreateBucketIfNotExists(bucketRecords)
	if err != nil {
		return nil, err
	}
	return root.CreateBucketIfNotExists([]byte(collection))
}

func recordBucket(tx *bbolt.Tx, collection string) *bbolt.Bucket {
	root := tx.Bucket(bucketRecords)
	if root == nil {
		return nil
	}
	return root.Bucket([]byte(collection))
}

// checkRecordKey refuses the empty names bbolt cannot store, with
// catalog.ErrInvalidArgument: the caller's input, not the store, is wrong.
func checkRecordKey(collection, key string) error {
	if collection == "" || key == "" {
		return fmt.Errorf("%w: bolt: record collection and key must not be empty (got %q, %q)", catalog.ErrInvalidArgument, collection, key)
	}
	return nil
}
