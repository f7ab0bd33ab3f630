package catalog

import (
	"context"
	"time"
)

// IdempotencyRecord is the finalized response of a mutating request that
// carried an Idempotency-Key (REST spec, components/parameters/idempotency-key):
// replayed as is when the same key comes back within its lifetime.
type IdempotencyRecord struct {
	// Fingerprint identifies the request: a hash of its caller, method,
	// route with its parameters, query and canonical body (the server's
	// requestFingerprint); a key reused for a different request is
	// refused. Records stored before the fingerprint held the caller and
	// the body (method and path only) match no request: such a key is
	// refused for its lifetime.
	Fingerprint string `json:"fingerprint"`
	// Status is the HTTP status sent (2xx or a terminal 4xx; 5xx are never stored).
	Status      int    `json:"status"`
	ContentType string `json:"content-type,omitempty"`
	Body        []byte `json:"body,omitempty"`
	// ExpiresAtMillis is when the record may be forgotten, Unix ms.
	ExpiresAtMillis int64 `json:"expires-at-ms"`
}

// IdempotencyStore keeps IdempotencyRecords. It is a separate small
// interface over the same backend as Store, found by type assertion.
type IdempotencyStore interface {
	// LoadIdempotencyRecord returns the record of key, if any and not expired at now.
	LoadIdempotencyRecord(ctx context.Context, key string, now time.Time) (IdempotencyRecord, bool, error)
	// SaveIdempotencyRecord stores rec under key, replacing any record.
	SaveIdempotencyRecord(ctx context.Context, key string, rec IdempotencyRecord) error
	// ExpireIdempotencyRecords deletes records expired at now and returns how many.
	ExpireIdempotencyRecords(ctx context.Context, now time.Time) (int, error)
}
