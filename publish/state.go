package publish

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/tarnhq/tarn/catalog"
)

// Store keeps the publisher's records. catalog/bolt's and
// catalog/postgres's stores implement it (the same records ingest/topics
// keeps its topics in), so what was published survives restarts with the
// catalog.
type Store interface {
	// PutRecord stores value under key in collection, replacing any.
	PutRecord(ctx context.Context, collection, key string, value []byte) error
	// GetRecord returns the value of key in collection; ok is false when
	// there is none.
	GetRecord(ctx context.Context, collection, key string) (value []byte, ok bool, err error)
	// ListRecords returns every record of collection, by key.
	ListRecords(ctx context.Context, collection string) (map[string][]byte, error)
	// DeleteRecord removes key from collection (a missing key is no error).
	DeleteRecord(ctx context.Context, collection, key string) error
}

// collection is the Store collection of publish records, keyed by
// recordKey.
const collection = "publish"

// Record is what the publisher stores per target and table once the
// target accepted a publish (JSON in the Store): what the target now
// points at, and whether publishing is stopped by a conflict.
type Record struct {
	Target    string            `json:"target"`
	Namespace catalog.Namespace `json:"namespace"`
	Name      string            `json:"name"`
	// MetadataLocation is the Iceberg metadata file the target points at;
	// SnapshotID and SequenceNumber name main's head in it (absent for a
	// table without snapshots).
	MetadataLocation string `json:"metadata-location,omitempty"`
	SnapshotID       *int64 `json:"snapshot-id,omitempty"`
	SequenceNumber   int64  `json:"sequence-number,omitempty"`
	// Remote is the target's name of the table (glue: database.table);
	// RemoteVersion the target's version token after Tarn's last write
	// (glue: the table's VersionId), which the next write is conditional
	// on.
	Remote        string `json:"remote,omitempty"`
	RemoteVersion string `json:"remote-version,omitempty"`
	// PublishedAt is when the target accepted MetadataLocation.
	PublishedAt time.Time `json:"published-at,omitzero"`
	// Conflict, when set, is why publishing this table to the target is
	// stopped (someone else changed the target's table); cleared by
	// Publisher.Resume.
	Conflict string `json:"conflict,omitempty"`
	// TakeOver is set by Resume: the next publish overwrites the
	// target's table whatever it holds (the operator resolved the
	// conflict by choosing Tarn's pointer).
	TakeOver bool `json:"take-over,omitempty"`
}

// Ident is the record's table.
func (r Record) Ident() catalog.Ident { return catalog.Ident{Namespace: r.Namespace, Name: r.Name} }

// recordKey is a record's key: the target and every level and the name,
// each path-escaped, joined by '/', so that no two tables share a key
// (levels may hold dots).
func recordKey(target string, id catalog.Ident) string {
	parts := []string{url.PathEscape(target)}
	for _, l := range id.Namespace {
		parts = append(parts, url.PathEscape(l))
	}
	return strings.Join(append(parts, url.PathEscape(id.Name)), "/")
}

func putRecord(ctx context.Context, s Store, r Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := s.PutRecord(ctx, collection, recordKey(r.Target, r.Ident()), b); err != nil {
		return fmt.Errorf("store publish record of %s for %s: %w", r.Ident(), r.Target, err)
	}
	return nil
}

func deleteRecord(ctx context.Context, s Store, target string, id catalog.Ident) error {
	if err := s.DeleteRecord(ctx, collection, recordKey(target, id)); err != nil {
		return fmt.Errorf("delete publish record of %s for %s: %w", id, target, err)
	}
	return nil
}

// getRecord returns the stored record of target and id, nil when none.
func getRecord(ctx context.Context, s Store, target string, id catalog.Ident) (*Record, error) {
	b, ok, err := s.GetRecord(ctx, collection, recordKey(target, id))
	if err != nil {
		return nil, fmt.Errorf("load publish record of %s for %s: %w", id, target, err)
	}
	if !ok {
		return nil, nil
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("load publish record of %s for %s: corrupt: %w", id, target, err)
	}
	return &r, nil
}

// loadRecords returns every stored record, by target and then by table
// (catalog.Ident.String is not unique; recordKey without the target is).
func loadRecords(ctx context.Context, s Store) (map[string]map[string]Record, error) {
	raw, err := s.ListRecords(ctx, collection)
	if err != nil {
		return nil, fmt.Errorf("load publish records: %w", err)
	}
	out := map[string]map[string]Record{}
	for k, v := range raw {
		var r Record
		if err := json.Unmarshal(v, &r); err != nil {
			return nil, fmt.Errorf("load publish record %s: corrupt: %w", k, err)
		}
		if out[r.Target] == nil {
			out[r.Target] = map[string]Record{}
		}
		out[r.Target][tableKey(r.Ident())] = r
	}
	return out, nil
}

// tableKey is a table's key in the publisher's maps.
func tableKey(id catalog.Ident) string { return recordKey("", id) }
