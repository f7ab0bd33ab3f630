package catalog

import (
	"context"
	"slices"
	"sync"
)

// RecordStore keeps opaque records for the packages above the catalog,
// in named collections over the same backend as Store, found by type
// assertion (catalog/bolt and catalog/postgres implement it; the
// conformance suite catalog/storetest checks it). Every replica sharing a
// store sees the same records, so state kept here is shared: topic
// configs ("topics", ingest/topics), principals, roles, grants and the
// token signing key ("auth-*", auth), publishing progress ("publish"),
// staged tables ("staged-tables", this package). Values are opaque bytes
// (their owners store JSON). Every method errors with ErrInvalidArgument
// for an empty collection or key.
type RecordStore interface {
	// PutRecord stores value under key in collection, replacing any value.
	PutRecord(ctx context.Context, collection, key string, value []byte) error
	// CreateRecord stores value under key unless collection holds the key
	// already, atomically, and returns the value stored under key after
	// the call: value when it was created, the existing one otherwise
	// (created tells which). Replicas racing to create one record (a
	// signing key on first start) all end up with the winner's value.
	CreateRecord(ctx context.Context, collection, key string, value []byte) (stored []byte, created bool, err error)
	// GetRecord returns the value of key in collection; ok is false when
	// there is none.
	GetRecord(ctx context.Context, collection, key string) (value []byte, ok bool, err error)
	// ListRecords returns every record of collection, by key (empty, not
	// an error, for a collection never written).
	ListRecords(ctx context.Context, collection string) (map[string][]byte, error)
	// DeleteRecord removes key from collection; removing a missing key is
	// not an error.
	DeleteRecord(ctx context.Context, collection, key string) error
}

// memRecords is a RecordStore in memory, for a Store that is not one
// (a test's wrapper): state kept in it is this process's only.
type memRecords struct {
	mu sync.Mutex
	m  map[string]map[string][]byte
}

func checkRecordKey(collection, key string) error {
	if collection == "" || key == "" {
		return Errorf(ErrInvalidArgument, "record collection and key must not be empty (got %q, %q)", collection, key)
	}
	return nil
}

func (r *memRecords) PutRecord(_ context.Context, collection, key string, value []byte) error {
	if err := checkRecordKey(collection, key); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]map[string][]byte{}
	}
	if r.m[collection] == nil {
		r.m[collection] = map[string][]byte{}
	}
	r.m[collection][key] = slices.Clone(value)
	return nil
}

func (r *memRecords) CreateRecord(ctx context.Context, collection, key string, value []byte) ([]byte, bool, error) {
	if err := checkRecordKey(collection, key); err != nil {
		return nil, false, err
	}
	r.mu.Lock()
	if v, ok := r.m[collection][key]; ok {
		r.mu.Unlock()
		return slices.Clone(v), false, nil
	}
	r.mu.Unlock()
	// Only the staged tables use memRecords, and they never create.
	return value, true, r.PutRecord(ctx, collection, key, value)
}

func (r *memRecords) GetRecord(_ context.Context, collection, key string) ([]byte, bool, error) {
	if err := checkRecordKey(collection, key); err != nil {
		return nil, false, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.m[collection][key]
	return slices.Clone(v), ok, nil
}

func (r *memRecords) ListRecords(_ context.Context, collection string) (map[string][]byte, error) {
	if err := checkRecordKey(collection, "-"); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]byte, len(r.m[collection]))
	for k, v := range r.m[collection] {
		out[k] = slices.Clone(v)
	}
	return out, nil
}

func (r *memRecords) DeleteRecord(_ context.Context, collection, key string) error {
	if err := checkRecordKey(collection, key); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m[collection], key)
	return nil
}
