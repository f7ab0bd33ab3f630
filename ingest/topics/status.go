package topics

import (
	"maps"
	"time"

	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/ingest/source"
)

// State is where a topic is (issue 3, management API).
type State string

const (
	// StatePending: enabled, its pipeline not reading yet.
	StatePending = State(pipeline.StatePending)
	// StateSyncing: reading and committing.
	StateSyncing = State(pipeline.StateSyncing)
	// StateSuspended: stopped at a record it cannot materialize; Reason
	// says which and why; Resume continues.
	StateSuspended = State(pipeline.StateSuspended)
	// StateFailed: Kafka, the registry or the catalog failed; restarted
	// with backoff (1 s doubling to 1 min).
	StateFailed = State(pipeline.StateFailed)
	// StateDisabled: ingest stopped by Disable; the table stays Tarn's.
	StateDisabled State = "disabled"
)

// States lists every State, for metrics.
var States = []State{StatePending, StateSyncing, StateSuspended, StateFailed, StateDisabled}

// Status is a topic as GET /management/v1/topics/{topic} returns it.
type Status struct {
	Topic  string `json:"topic"`
	Table  string `json:"table"`
	State  State  `json:"state"`
	Reason string `json:"reason,omitempty"`
	// LagRecords is, summed over partitions, the last stable offset minus
	// the table's next offset; nil (JSON null) until Kafka was asked.
	LagRecords *int64 `json:"lag-records"`
	// LagSeconds is the age of the oldest record not in the table yet, 0
	// when caught up; nil (JSON null) while it is not known: before Kafka
	// was asked, and while records wait that were not fetched yet (their
	// timestamps come with them).
	LagSeconds *float64 `json:"lag-seconds"`
	// LastCommit is the time of the last commit since Tarn started.
	LastCommit *time.Time `json:"last-commit,omitempty"`
	// LastCommitSeconds is how long that commit took: from taking the
	// buffered rows, through writing their data files, to the catalog's
	// answer (the commit latency the console charts).
	LastCommitSeconds *float64 `json:"last-commit-seconds,omitempty"`
	// Rows, Bytes and Files are of the data files committed, Commits of
	// the snapshots, since Tarn started.
	Rows    int64 `json:"rows"`
	Bytes   int64 `json:"bytes"`
	Files   int64 `json:"files"`
	Commits int64 `json:"commits"`
	// BufferedRows are read and not committed yet (they are on the next
	// commit, at the latest on shutdown).
	BufferedRows int64 `json:"buffered-rows"`
	// CommitConflicts counts batches dropped because another writer had
	// committed their offsets, or whose commit outcome was unknown.
	CommitConflicts int64 `json:"commit-conflicts"`
	// Errors counts bad records by kind (pipeline.ErrorKind), each record
	// once however often it is read again (after a restart, a resume, a
	// failed commit), since Tarn started.
	Errors map[string]int64 `json:"errors"`
	// Gaps are offsets Kafka no longer had when Tarn came to read them.
	Gaps []Gap `json:"gaps"`
	// Offsets is the table's next offset per partition.
	Offsets map[int32]int64 `json:"offsets"`
	// Cluster is the Kafka cluster id.
	Cluster string `json:"cluster"`
	// StartOffsets are the offsets resolved from Config.Start at enable.
	StartOffsets map[int32]int64 `json:"start-offsets"`
	// Coverage is, for format json, how the records stored since Tarn
	// started filled the declared schema; absent before the first commit
	// and for the other formats.
	Coverage *Coverage `json:"coverage,omitempty"`
	// Upsert counts an upsert topic's changes since Tarn started; absent
	// for mode append.
	Upsert *UpsertStatus `json:"upsert,omitempty"`
	// Config is the stored configuration (defaults applied).
	Config TopicConfig `json:"config"`
}

// UpsertStatus is what an upsert topic changed (docs/upsert.md).
type UpsertStatus struct {
	// Upserts and Deletes count the committed records with a value and
	// tombstones, NoopDeletes the keys a batch deleted that had no row,
	// RowsDeleted the committed rows retired by position deletes, since
	// Tarn started.
	Upserts     int64 `json:"upserts"`
	Deletes     int64 `json:"deletes"`
	NoopDeletes int64 `json:"noop-deletes"`
	RowsDeleted int64 `json:"rows-deleted"`
	// Truncates counts the committed truncate events of a debezium topic
	// (truncate: delete), since Tarn started.
	Truncates int64 `json:"truncates"`
	// IndexKeys is the number of keys in the key index (the table's live
	// rows), IndexKeyBytes their bytes, as of the last commit or rebuild
	// of the running pipeline.
	IndexKeys     int64 `json:"index-keys"`
	IndexKeyBytes int64 `json:"index-key-bytes"`
}

// Coverage shows the declared columns a format json topic's records leave
// empty and the fields they carry that no column takes (codec.Coverage),
// so that a column that stays null because the data spells it otherwise
// ("title" for Title) is visible instead of silent.
type Coverage struct {
	// UnfilledColumns are the name paths of declared columns no stored
	// record carried a value for (absent or null in every one); a struct
	// column stands for its fields. In schema order.
	UnfilledColumns []string `json:"unfilled-columns"`
	// UnmatchedFields are the paths of record fields that match no
	// column, dropped on purpose or misspelled; sorted, at most 1000.
	UnmatchedFields []string `json:"unmatched-fields"`
}

// Gap is a range of offsets of one partition that were skipped because
// Kafka had deleted them (retention) or lost them.
type Gap struct {
	Partition          int32     `json:"partition"`
	FirstMissingOffset int64     `json:"first-missing-offset"`
	LastMissingOffset  int64     `json:"last-missing-offset"`
	Cause              string    `json:"cause"`
	Detected           time.Time `json:"detected"`
}

// nonNil makes an empty list [] in JSON.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func gapOf(g source.Gap) Gap {
	return Gap{Partition: g.Partition, FirstMissingOffset: g.FirstMissing, LastMissingOffset: g.LastMissing,
		Cause: string(g.Cause), Detected: g.Detected}
}

// counters are what a topic's earlier pipelines counted: each start
// builds a new pipeline.Pipeline, whose counters begin at zero. Bad
// records are not summed from the pipelines, which count a record again
// each time they read it: see errcount.go.
type counters struct {
	rows, bytes, files, commits, stale int64
	upserts, deletes, noops, retired   int64
	truncates                          int64
	lastCommit                         time.Time
	lastCommitTook                     time.Duration
	coverage                           codec.Coverage
}

// add adds st's counters.
func (c *counters) add(st pipeline.Status) {
	c.rows += st.Rows
	c.bytes += st.Bytes
	c.files += st.Files
	c.commits += st.Commits
	c.stale += st.StaleBatches
	c.upserts += st.Upserts
	c.deletes += st.Deletes
	c.noops += st.NoopDeletes
	c.retired += st.RowsDeleted
	c.truncates += st.Truncates
	if st.LastCommit.After(c.lastCommit) {
		c.lastCommit, c.lastCommitTook = st.LastCommit, st.LastCommitDuration
	}
	c.coverage = c.coverage.Merge(st.Coverage)
}

// statusLocked builds t's status from its record, counters, current
// pipeline and cached lag; m.mu is held.
func (t *topic) statusLocked() Status {
	c := t.base
	st := Status{
		Topic:        t.rec.Config.Topic,
		Table:        string(t.rec.Config.Table),
		State:        StatePending,
		Cluster:      t.rec.Cluster,
		StartOffsets: maps.Clone(t.rec.StartOffsets),
		Config:       t.rec.Config,
		Offsets:      map[int32]int64{},
		Gaps:         []Gap{},
	}
	if t.head != nil {
		st.Offsets = maps.Clone(t.head)
	}
	var indexKeys, indexBytes int64
	if t.pl != nil {
		ps := t.pl.Status()
		c.add(ps)
		indexKeys, indexBytes = ps.IndexKeys, ps.IndexKeyBytes
		st.State, st.Reason = State(ps.State), ps.Reason
		if t.starting { // resumed or restarted: the previous pipeline's state is over
			st.State, st.Reason = StatePending, ""
		}
		st.BufferedRows = int64(ps.BufferedRows)
		if ps.Next != nil {
			st.Offsets = ps.Next
		}
	}
	if t.startErr != "" {
		st.State, st.Reason = StateFailed, t.startErr
	}
	if t.rec.Disabled {
		st.State, st.Reason = StateDisabled, "disabled through the management API; the table stays owned by Tarn and read-only"
	}
	st.Rows, st.Bytes, st.Files, st.Commits, st.CommitConflicts = c.rows, c.bytes, c.files, c.commits, c.stale
	if pipeline.Mode(t.rec.Config.Mode).Keyed() {
		st.Upsert = &UpsertStatus{Upserts: c.upserts, Deletes: c.deletes, NoopDeletes: c.noops, RowsDeleted: c.retired, Truncates: c.truncates,
			IndexKeys: indexKeys, IndexKeyBytes: indexBytes}
	}
	if !c.lastCommit.IsZero() {
		lc := c.lastCommit
		st.LastCommit = &lc
		took := c.lastCommitTook.Seconds()
		st.LastCommitSeconds = &took
	}
	if c.coverage.Rows > 0 {
		st.Coverage = &Coverage{UnfilledColumns: nonNil(c.coverage.Unfilled), UnmatchedFields: nonNil(c.coverage.Unmatched)}
	}
	st.Errors = maps.Clone(t.errs)
	if st.Errors == nil {
		st.Errors = map[string]int64{}
	}
	for _, g := range t.gaps {
		st.Gaps = append(st.Gaps, gapOf(g))
	}
	if t.src != nil {
		for _, g := range t.src.Gaps() {
			st.Gaps = append(st.Gaps, gapOf(g))
		}
	}
	if t.lag.known {
		records := t.lag.records
		st.LagRecords = &records
		switch {
		case records == 0:
			st.LagSeconds = new(float64)
		case !t.lag.oldest.IsZero():
			age := time.Since(t.lag.oldest).Seconds()
			st.LagSeconds = &age
		}
	}
	return st
}
