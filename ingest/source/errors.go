package source

import (
	"fmt"

	"github.com/tarnhq/tarn/internal/errclass"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Sentinels. Errors of this package wrap one of them (and, for Kafka
// errors, the kerr or kgo error as well) with %w.
var (
	// ErrInvalidConfig: a Config field is missing or out of range.
	ErrInvalidConfig = errclass.New(errclass.Internal, "invalid source config")
	// ErrInvalidStart: Open was given a negative partition or offset.
	ErrInvalidStart = errclass.New(errclass.Internal, "invalid start offsets")
	// ErrUnknownTopic: the topic does not exist (or the client may not
	// describe it).
	ErrUnknownTopic = errclass.New(errclass.Internal, "unknown topic")
	// ErrOffsetBeyondEnd: a start offset is past the partition's high
	// watermark. The table recorded offsets of records that no longer
	// exist: the topic was deleted and recreated, or the broker lost
	// data. The source fails closed rather than wait for the log to grow
	// past the offset and silently skip the records in between.
	ErrOffsetBeyondEnd = errclass.New(errclass.Internal, "start offset beyond the partition's end")
	// ErrFetch: a fetch failed with an error the client does not retry
	// (authorization, an unsupported or corrupt batch, a recreated
	// topic). The partition is no longer fetched; the pipeline stops.
	ErrFetch = errclass.New(errclass.Internal, "fetch failed")
	// ErrClosed: the Source was closed.
	ErrClosed = errclass.New(errclass.Internal, "source closed")
)

// RecordError is an error about one record, for decoders and writers:
// bad magic byte, unknown schema id, undecodable payload. It names the
// record so status, logs and the dead-letter table can point at it.
type RecordError struct {
	Topic     string
	Partition int32
	Offset    int64
	Err       error
}

// NewRecordError returns a RecordError for r.
func NewRecordError(r *kgo.Record, err error) *RecordError {
	return &RecordError{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Err: err}
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("topic %s partition %d offset %d: %v", e.Topic, e.Partition, e.Offset, e.Err)
}

func (e *RecordError) Unwrap() error { return e.Err }
