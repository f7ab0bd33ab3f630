package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/tarnhq/tarn/auth"
	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/catalog/bolt"
	"github.com/tarnhq/tarn/catalog/postgres"
)

// storeBolt is --store's default: the embedded bbolt file in --data-dir.
const storeBolt = "bolt"

// catalogStore is what tarn serve needs of its store: the catalog's
// pointers (and, found by type assertion, its idempotency records), the
// records of ingest/topics and auth, and Close. catalog/bolt and
// catalog/postgres implement it.
type catalogStore interface {
	catalog.Store
	auth.RecordStore
	Close() error
}

var (
	_ catalogStore = (*bolt.Store)(nil)
	_ catalogStore = (*postgres.Store)(nil)
)

// checkStoreSpec refuses a --store that is neither "bolt" nor a
// postgres:// (postgresql://) URL.
func checkStoreSpec(spec string) error {
	if spec == "" || spec == storeBolt || isPostgresURL(spec) {
		return nil
	}
	return fmt.Errorf("--store must be %q or a postgres://user:password@host:port/database URL, got %q", storeBolt, redactURL(spec))
}

func isPostgresURL(spec string) bool {
	return strings.HasPrefix(spec, "postgres://") || strings.HasPrefix(spec, "postgresql://")
}

// openStore opens the store --store names: bolt in dataDir, or the
// PostgreSQL database of a postgres:// URL (migrated on open,
// catalog/postgres). Errors name the URL without its password.
func openStore(ctx context.Context, spec, dataDir string) (catalogStore, error) {
	if err := checkStoreSpec(spec); err != nil {
		return nil, err
	}
	if !isPostgresURL(spec) {
		return bolt.Open(dataDir)
	}
	s, err := postgres.Open(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("--store %s: %w", redactURL(spec), err)
	}
	return s, nil
}

// redactURL is spec with the password of its user info replaced by
// "xxxxx" (url.URL.Redacted), or spec's scheme alone when it does not
// parse: store URLs carry credentials and must not reach logs.
func redactURL(spec string) string {
	u, err := url.Parse(spec)
	if err != nil {
		scheme, _, _ := strings.Cut(spec, "://")
		return scheme + "://(unparsable URL)"
	}
	return u.Redacted()
}

// storeName is how the log names the store: "bolt" or the redacted URL.
func storeName(spec string) string {
	if isPostgresURL(spec) {
		return redactURL(spec)
	}
	return storeBolt
}
