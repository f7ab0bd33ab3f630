package topics

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Store keeps topic records. catalog/bolt's *Store implements it over the
// catalog's bbolt file (collection "topics"), so topics survive restarts
// with the catalog they own tables in.
type Store interface {
	// PutRecord stores value under key in collection, replacing any.
	PutRecord(ctx context.Context, collection, key string, value []byte) error
	// ListRecords returns every record of collection, by key.
	ListRecords(ctx context.Context, collection string) (map[string][]byte, error)
	// DeleteRecord removes key from collection (a missing key is no error).
	DeleteRecord(ctx context.Context, collection, key string) error
}

// collection is the Store collection of topic records, keyed by topic.
const collection = "topics"

// record is what is stored per topic (JSON).
type record struct {
	// Config has the defaults applied and the format resolved.
	Config TopicConfig `json:"config"`
	// Cluster is the Kafka cluster id at enable, recorded with the offsets
	// of every snapshot.
	Cluster string `json:"cluster"`
	// StartOffsets is where each partition the topic had at enable
	// begins, resolved once from Config.Start; partitions the table's head
	// has start there instead, and partitions added later at earliest.
	StartOffsets map[int32]int64 `json:"start-offsets"`
	// BadSchemaIDs are schema ids a resume moved past
	// (pipeline.Config.BadSchemaIDs): in error mode skip or dlq their
	// records are bad records instead of suspending the topic again.
	BadSchemaIDs []int `json:"bad-schema-ids,omitempty"`
	// Disabled: ingest stopped; the table stays Tarn's (read-only).
	Disabled bool `json:"disabled,omitempty"`
	// EnabledAt is when the topic was (last) enabled.
	EnabledAt time.Time `json:"enabled-at"`
}

func (m *Manager) putRecord(ctx context.Context, r record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := m.deps.Store.PutRecord(ctx, collection, r.Config.Topic, b); err != nil {
		return fmt.Errorf("store topic %s: %w", r.Config.Topic, err)
	}
	return nil
}

func (m *Manager) loadRecords(ctx context.Context) ([]record, error) {
	raw, err := m.deps.Store.ListRecords(ctx, collection)
	if err != nil {
		return nil, fmt.Errorf("load topics: %w", err)
	}
	out := make([]record, 0, len(raw))
	for k, v := range raw {
		var r record
		if err := json.Unmarshal(v, &r); err != nil {
			return nil, fmt.Errorf("load topic %s: corrupt record: %w", k, err)
		}
		out = append(out, r)
	}
	return out, nil
}
