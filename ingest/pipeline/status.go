package pipeline

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/source"
)

const (
	// lagInterval is how often Run asks the source for the topic's lag
	// (a ListOffsets round trip to the brokers): often enough for a
	// freshness dashboard, rare enough to cost nothing.
	lagInterval = 5 * time.Second
	// lagTimeout bounds that call, which Run's loop waits for.
	lagTimeout = time.Second
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
	// LastCommitDuration is how long that commit took: from taking the
	// buffer, through writing its data files, to the catalog's answer.
	LastCommitDuration time.Duration
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
	// yet (bytes estimated as for Config.TargetFileSizeBytes; dead letter
	// rows included), the bytes reserved in Deps.Budget.
	BufferedRows  int
	BufferedBytes int64
	// BudgetFlushes counts flushes forced by Deps.Budget: this pipeline's
	// next record did not fit (flushes for another pipeline's pressure
	// are not counted here; Commits counts every flush).
	BudgetFlushes int64
	// Gaps are the offset ranges Kafka no longer had when the source
	// came to read them (retention, data loss), oldest first, over all
	// Runs; only for a Source that is a GapReporter.
	Gaps []source.Gap
	// LagRecords is the sum over partitions of the last stable offset
	// minus the table's next offset, and LagSeconds the age of the
	// oldest record not in the table yet (0 when unknown), as of LagAt;
	// only for a Source that is a LagReporter, refreshed by Run at most
	// every 5 s. LagAt is zero when never measured.
	LagRecords int64
	LagSeconds float64
	LagAt      time.Time
	// Coverage is, for FormatJSON, how the rows decoded so far filled the
	// declared schema: the columns none of them carried, the fields that
	// match no column (codec.Coverage; as of the last commit). Zero for
	// the other formats, and before the first commit.
	Coverage codec.Coverage
	// Upserts and Deletes count the committed changes of an upsert
	// topic (records with a value, tombstones), including those a later
	// change of the same key in the same batch superseded; NoopDeletes
	// the keys whose batch ended in a delete without a row to delete;
	// RowsDeleted the committed rows retired by position deletes.
	Upserts, Deletes, NoopDeletes, RowsDeleted int64
	// Truncates counts the committed truncate events of a debezium topic
	// (truncate: delete), each of which retired every row before it.
	Truncates int64
	// IndexKeys is the number of keys in the upsert key index (the
	// table's live rows) and IndexKeyBytes the bytes of those keys.
	IndexKeys, IndexKeyBytes int64
}

// Status returns a snapshot of the pipeline's state and counters. Safe
// for concurrent use with Run.
func (p *Pipeline) Status() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.st
	s.Errors = maps.Clone(p.st.Errors)
	s.Next = maps.Clone(p.st.Next)
	s.Gaps = slices.Clone(p.st.Gaps)
	return s
}

// update applies fn to the status under the lock.
func (p *Pipeline) update(fn func(s *Status)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fn(&p.st)
}

// refreshStatus copies the source's gaps into the status and, at most
// every lagInterval, its lag. Called from Run's loop; a failed lag query
// is logged at debug level and leaves the last values.
func (p *Pipeline) refreshStatus(ctx context.Context) {
	if g, ok := p.src.(GapReporter); ok {
		if gaps := g.Gaps(); len(gaps) > 0 {
			all := append(slices.Clone(p.gapsBefore), gaps...)
			p.update(func(st *Status) { st.Gaps = all })
		}
	}
	l, ok := p.src.(LagReporter)
	if !ok || time.Since(p.lagAt) < lagInterval {
		return
	}
	p.lagAt = time.Now()
	lctx, cancel := context.WithTimeout(ctx, lagTimeout)
	defer cancel()
	lag, err := l.Lag(lctx, maps.Clone(p.planned))
	if err != nil {
		p.log.Debug("topic lag not measured", "err", err)
		return
	}
	var records int64
	var age time.Duration
	for _, pl := range lag {
		records += pl.Records
		age = max(age, pl.Age)
	}
	now := time.Now()
	p.update(func(st *Status) { st.LagRecords, st.LagSeconds, st.LagAt = records, age.Seconds(), now })
}
