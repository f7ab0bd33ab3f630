package pipeline

import (
	"maps"
	"time"
)

// State is where a topic's pipeline is (issue 3, management API).
type State string

const (
	// StatePending: configured, not reading (not started yet, or stopped
	// by its context).
	StatePending State = "pending"
	// StateSyncing: Run is reading and committing.
	StateSyncing State = "syncing"
	// StateSuspended: Run stopped at a record it cannot materialize
	// (SuspendedError); Reason says which and why.
	StateSuspended State = "suspended"
	// StateFailed: Run stopped on an error that is not about a record (the
	// catalog, the registry or Kafka failed, the table's offsets are
	// invalid); Reason holds the error.
	StateFailed State = "failed"
)

// Status is a snapshot of a pipeline. Counters cover the life of the
// Pipeline value (all its Runs), not the table's history.
type Status struct {
	Topic string
	// Table is the table identifier, dot-joined.
	Table  string
	State  State
	Reason string
	// Rows, Bytes and Files are those of the data files this pipeline
	// committed; Commits counts its snapshots (including ones that only
	// advanced offsets, past transaction markers or skipped records).
	Rows    int64
	Bytes   int64
	Files   int64
	Commits int64
	// LastCommit is the time of the last successful commit; zero if none.
	LastCommit time.Time
	// Errors counts records that could not be materialized, by kind: those
	// skipped, and the one a suspension stopped at.
	Errors map[ErrorKind]int64
	// DLQRows counts the bad records this pipeline committed to the dead
	// letter table (error mode dlq).
	DLQRows int64
	// SchemaUpdates counts the table schema changes this pipeline
	// committed (schema evolution).
	SchemaUpdates int64
	// StaleBatches counts batches dropped because another writer had
	// committed their offsets (sink.StaleBatchError) or because their
	// commit's outcome was unknown; the pipeline re-read from the table.
	StaleBatches int64
	// Next is the table's next offset per partition, as of the last
	// commit or head load: everything before it is in the table.
	Next map[int32]int64
	// BufferedRows and BufferedBytes are what is read but not committed
	// yet (bytes estimated as for Config.TargetFileSizeBytes).
	BufferedRows  int
	BufferedBytes int64
}

// Status returns a snapshot of the pipeline's state and counters. Safe
// for concurrent use with Run.
func (p *Pipeline) Status() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.st
	s.Errors = maps.Clone(p.st.Errors)
	s.Next = maps.Clone(p.st.Next)
	return s
}

// update applies fn to the status under the lock.
func (p *Pipeline) update(fn func(s *Status)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fn(&p.st)
}
