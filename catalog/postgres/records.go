package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tarnhq/tarn/catalog"
)

// PutRecord stores value under key in collection, replacing any value
// (catalog.RecordStore). Values are opaque
// bytes. Errors: catalog.ErrInvalidArgument for an empty collection or key
// (as for every record method).
func (s *Store) PutRecord(ctx context.Context, collection, key string, value []byte) error {
	if err := checkRecordKey(collection, key); err != nil {
		return err
	}
	if value == nil {
		value = []byte{}
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO tarn_records (collection, key, value) VALUES ($1, $2, $3)
		ON CONFLICT (collection, key) DO UPDATE SET value = EXCLUDED.value`, collection, key, value)
	return err
}

// CreateRecord stores value under key unless collection holds it
// already and returns the value stored after the call
// (catalog.RecordStore). The primary key decides a race: INSERT ... ON
// CONFLICT DO NOTHING, and the loser reads the winner's row.
func (s *Store) CreateRecord(ctx context.Context, collection, key string, value []byte) (stored []byte, created bool, err error) {
	if err := checkRecordKey(collection, key); err != nil {
		return nil, false, err
	}
	if value == nil {
		value = []byte{}
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO tarn_records (collection, key, value) VALUES ($1, $2, $3)
		ON CONFLICT (collection, key) DO NOTHING`, collection, key, value)
	if err != nil {
		return nil, false, err
	}
	if tag.RowsAffected() == 1 {
		return value, true, nil
	}
	stored, ok, err := s.GetRecord(ctx, collection, key)
	if err != nil {
		return nil, false, err
	}
	if !ok { // deleted between the two statements: try again
		return s.CreateRecord(ctx, collection, key, value)
	}
	return stored, false, nil
}

// GetRecord returns the value of key in collection; ok is false when
// there is none.
func (s *Store) GetRecord(ctx context.Context, collection, key string) (value []byte, ok bool, err error) {
	if err := checkRecordKey(collection, key); err != nil {
		return nil, false, err
	}
	err = s.pool.QueryRow(ctx, `SELECT value FROM tarn_records WHERE collection = $1 AND key = $2`, collection, key).Scan(&value)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return value, true, nil
}

// ListRecords returns every record of collection, by key (empty, not an
// error, for a collection never written).
func (s *Store) ListRecords(ctx context.Context, collection string) (map[string][]byte, error) {
	if err := checkRecordKey(collection, "-"); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT key, value FROM tarn_records WHERE collection = $1`, collection)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]byte{}
	for rows.Next() {
		var k string
		var v []byte
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, rows.Err()
}

// DeleteRecord removes key from collection; removing a missing key is not
// an error.
func (s *Store) DeleteRecord(ctx context.Context, collection, key string) error {
	if err := checkRecordKey(collection, key); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `DELETE FROM tarn_records WHERE collection = $1 AND key = $2`, collection, key)
	return err
}

// checkRecordKey refuses empty names with catalog.ErrInvalidArgument, as
// catalog/bolt does (bbolt cannot store them): both stores take the same
// keys.
func checkRecordKey(collection, key string) error {
	if collection == "" || key == "" {
		return fmt.Errorf("%w: postgres: record collection and key must not be empty (got %q, %q)", catalog.ErrInvalidArgument, collection, key)
	}
	return nil
}
