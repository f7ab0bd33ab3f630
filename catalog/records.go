package catalog

import "context"

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
