package pipeline

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tarnhq/tarn/ingest/source"
)

// Source is what the pipeline needs of a Kafka consumer of its topic:
// ingest/source's *Source has these methods. It is used from Run's
// goroutine only.
type Source interface {
	// Poll returns the next records of the topic, in offset order within
	// each partition, read with read_committed isolation. It blocks until
	// there are records or ctx ends; when ctx ends it returns what it has
	// (possibly nothing) and ctx's error. Control records (transaction
	// markers, Attrs.IsControl) may be returned: the pipeline counts their
	// offsets as read and writes no row for them, which is how offsets move
	// past a transaction's commit or abort marker. Any other error ends Run
	// (after the buffered records are committed).
	Poll(ctx context.Context) ([]*kgo.Record, error)
	// Reseek moves each partition in offsets to the offset given (the next
	// one to return). No record fetched before the call may be returned
	// after it for those partitions. Partitions not in offsets keep their
	// position.
	Reseek(offsets map[int32]int64)
	// Close stops fetching and releases the client.
	Close()
}

// GapReporter is an optional capability of a Source (ingest/source's
// *Source has it): the offset ranges it skipped because Kafka no longer
// had them (retention, data loss), oldest first. Status.Gaps shows them.
type GapReporter interface {
	Gaps() []source.Gap
}

// LagReporter is an optional capability of a Source (ingest/source's
// *Source has it): how far each partition is behind its last stable
// offset, given the next offsets consumed (the table's). Run asks at most
// every lagInterval and shows the totals in Status.
type LagReporter interface {
	Lag(ctx context.Context, next map[int32]int64) (map[int32]source.PartitionLag, error)
}

var (
	_ Source      = (*source.Source)(nil)
	_ GapReporter = (*source.Source)(nil)
	_ LagReporter = (*source.Source)(nil)
)

// TopicIdentifier is implemented by a Source that knows the Kafka topic id
// of its topic (ingest/source's does). The pipeline records the id with
// the offsets in every snapshot and refuses to resume a table whose
// offsets carry another id (sink.ErrTopicRecreated): the topic was deleted
// and recreated, and its offsets count other records.
type TopicIdentifier interface {
	// TopicID returns the topic's id, "" when the broker has none.
	TopicID() string
}

// OpenSourceFunc opens the topic's Source with every partition in start
// positioned at its offset (the table's next offsets) and any other
// partition, including ones added while it runs, at the configured start
// (earliest by default).
type OpenSourceFunc func(ctx context.Context, start map[int32]int64) (Source, error)

// Registry is what the pipeline needs of a Confluent-compatible schema
// registry; *sr.Client has these methods.
type Registry interface {
	// SchemaByID returns the schema with a global id (GET
	// /schemas/ids/{id}). An unknown id is an *sr.ResponseError with
	// error code 40403.
	SchemaByID(ctx context.Context, id int) (sr.Schema, error)
	// SchemaByVersion returns a subject's schema version, for references
	// (GET /subjects/{subject}/versions/{version}).
	SchemaByVersion(ctx context.Context, subject string, version int) (sr.SubjectSchema, error)
}

var _ Registry = (*sr.Client)(nil)
