package sink

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/offsets"
)

// maxCommitAttempts bounds the rebases of one CommitWritten. A rebase is
// needed only when another writer committed between our reload and our
// commit; maintenance commits are minutes apart, so running out means a
// hot foreign writer, and the caller is better told than kept spinning.
const maxCommitAttempts = 8

// Config configures a Sink.
type Config struct {
	// Table is the table's identifier: namespace levels, then the name.
	Table table.Identifier
	// Cluster is the Kafka cluster id recorded in, and expected of, the
	// table's offsets. Required.
	Cluster string
	// Topic is the Kafka topic name. Required.
	Topic string
	// TargetFileSizeBytes closes a data file once its compressed size
	// reaches it and opens the next. 0 (the default) keeps the table's
	// write.target-file-size-bytes (iceberg-go's default: 512 MiB). The
	// pipeline flushes batches at its own target size, so a batch normally
	// becomes one file per partition value.
	TargetFileSizeBytes int64
	// NoRebase turns off the rebase of CommitWritten: when main moved
	// since the batch was planned, the batch is dropped (its files
	// removed) and CommitWritten returns ErrMainMoved, even if the head
	// still has the batch's partitions at their Starts. Upsert tables set
	// it: their position deletes and key index describe the snapshot the
	// batch was planned on, and another writer's commit (a compaction)
	// may have moved the rows they name.
	NoRebase bool
}

// Validate reports a missing or out-of-range field. Errors wrap
// ErrInvalidConfig.
func (c Config) Validate() error {
	switch {
	case len(c.Table) < 2:
		return fmt.Errorf("%w: table %v needs a namespace and a name", ErrInvalidConfig, c.Table)
	case c.Cluster == "" || c.Topic == "":
		return fmt.Errorf("%w: cluster and topic are required", ErrInvalidConfig)
	case c.TargetFileSizeBytes < 0:
		return fmt.Errorf("%w: target file size %d bytes is negative", ErrInvalidConfig, c.TargetFileSizeBytes)
	}
	return nil
}

// Range is the part of one Kafka partition a batch covers.
type Range struct {
	// Start is the offset the batch was planned from: the head's next
	// offset for the partition, or the configured start for a partition
	// the head does not have yet.
	Start int64
	// End is the next offset after the batch's last record (after any
	// control records or retention gap skipped): where the partition's next
	// batch starts. End >= Start; End == Start covers nothing.
	End int64
}

// advance returns a copy of o with each partition of ranges moved to its
// End: the cumulative merge of the head's map with a batch's.
func advance(o offsets.Offsets, ranges map[int32]Range) offsets.Offsets {
	next := maps.Clone(o.Next)
	if next == nil {
		next = make(map[int32]int64, len(ranges))
	}
	for p, r := range ranges {
		next[p] = r.End
	}
	o.Next = next
	return o
}

// moved returns the lowest partition of ranges that o has at an offset
// other than the range's Start, and o's offset for it. A partition o lacks
// has never been committed, so any Start agrees with it.
func moved(o offsets.Offsets, ranges map[int32]Range) (p int32, next int64, ok bool) {
	for _, p := range slices.Sorted(maps.Keys(ranges)) {
		if next, found := o.Next[p]; found && next != ranges[p].Start {
			return p, next, true
		}
	}
	return 0, 0, false
}

// Batch is the unit of one commit: rows and the offsets they came from.
type Batch struct {
	// Records are the rows, in order. Each has the Arrow schema of the
	// table's current schema with field IDs (table.SchemaToArrowSchema with
	// includeFieldIDs). The sink does not take ownership: the caller
	// releases them after Write or Commit returns. May be empty: the batch
	// then only advances offsets (say, past an aborted transaction).
	Records []arrow.RecordBatch
	// Ranges holds the offsets covered, per partition. At least one.
	Ranges map[int32]Range
}

func (b Batch) validate() error {
	if len(b.Ranges) == 0 {
		return fmt.Errorf("%w: no partition ranges", ErrInvalidBatch)
	}
	for p, r := range b.Ranges {
		if p < 0 || r.Start < 0 || r.End < r.Start {
			return fmt.Errorf("%w: partition %d range [%d, %d)", ErrInvalidBatch, p, r.Start, r.End)
		}
	}
	for i, rec := range b.Records {
		if !rec.Schema().Equal(b.Records[0].Schema()) {
			return fmt.Errorf("%w: record %d has another schema than record 0", ErrInvalidBatch, i)
		}
	}
	return nil
}

// Sink writes batches of one topic into one Iceberg table and commits each
// as one snapshot carrying the topic's cumulative offsets, exactly once
// (see the package doc for the protocol). A Sink is used by one goroutine
// at a time.
type Sink struct {
	cat table.CatalogIO
	cfg Config
	// topicID is the Kafka topic id bound by BindTopicID, "" if none.
	topicID string
	// tbl is the newest state of the table this sink has seen: loaded by
	// Head or a rebase, or returned by its own last commit. It is the base
	// the next batch is written against and committed on.
	tbl *table.Table
}

// Open loads the table and returns its sink. cat is normally
// catalog.Catalog.TableIO, so commits take the catalog's requirement and
// compare-and-swap path like REST clients' do.
//
// Errors: ErrInvalidConfig; those of cat.LoadTable (catalog.ErrNoSuchTable).
func Open(ctx context.Context, cat table.CatalogIO, cfg Config) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Sink{cat: cat, cfg: cfg}
	if _, err := s.reload(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Table returns the table as last loaded or committed; its schema is the
// one Batch records must have.
func (s *Sink) Table() *table.Table { return s.tbl }

// Head reloads the table and returns the offsets of main's head (see
// offsets.Read). With none, Next is empty and the caller starts every
// partition from its configured start. Call it on start, on partition
// assignment, and after any Commit error: it is where to seek.
//
// Errors: those of LoadTable; offsets.ErrInvalid, ErrForeignOffsets,
// offsets.ErrLost.
func (s *Sink) Head(ctx context.Context) (offsets.Offsets, error) {
	tbl, err := s.reload(ctx)
	if err != nil {
		return offsets.Offsets{}, err
	}
	return s.offsetsOf(tbl)
}

func (s *Sink) reload(ctx context.Context) (*table.Table, error) {
	tbl, err := s.cat.LoadTable(ctx, s.cfg.Table)
	if err != nil {
		return nil, fmt.Errorf("load table %s: %w", s.name(), err)
	}
	s.tbl = tbl
	return tbl, nil
}

func (s *Sink) offsetsOf(tbl *table.Table) (offsets.Offsets, error) {
	o, found, err := offsets.Read(tbl.Metadata())
	switch {
	case err != nil:
		return offsets.Offsets{}, fmt.Errorf("table %s: %w", s.name(), err)
	case !found:
		return offsets.Offsets{Cluster: s.cfg.Cluster, Topic: s.cfg.Topic, TopicID: s.topicID, Next: map[int32]int64{}}, nil
	case o.Cluster != s.cfg.Cluster || o.Topic != s.cfg.Topic:
		return offsets.Offsets{}, fmt.Errorf("table %s holds offsets of cluster %q topic %q, not cluster %q topic %q: %w",
			s.name(), o.Cluster, o.Topic, s.cfg.Cluster, s.cfg.Topic, ErrForeignOffsets)
	case o.TopicID != "" && s.topicID != "" && o.TopicID != s.topicID:
		return offsets.Offsets{}, fmt.Errorf("table %s holds offsets of topic %s with id %s, but the topic now has id %s "+
			"(deleted and recreated): its offsets count other records; release or drop the table and enable the topic again: %w",
			s.name(), o.Topic, o.TopicID, s.topicID, ErrTopicRecreated)
	case o.TopicID == "":
		// Offsets from before ids were recorded: adopt the current one.
		o.TopicID = s.topicID
	}
	return o, nil
}

// BindTopicID sets the Kafka topic id the sink's offsets count in (see
// offsets.Offsets.TopicID): later commits record it, and Head refuses a table
// whose offsets carry another id. It reloads the head to check it. "" (a
// broker without topic ids) checks nothing.
//
// Errors: those of Head; ErrTopicRecreated.
func (s *Sink) BindTopicID(ctx context.Context, id string) error {
	s.topicID = id
	_, err := s.Head(ctx)
	return err
}

func (s *Sink) name() string { return strings.Join(s.cfg.Table, ".") }

// Written is a batch's data files, written into the table's data directory
// but not yet committed. Hand it to CommitWritten.
type Written struct {
	// Files are the data files, each with its record count and partition
	// values. For each partition value its files are in the order they
	// were written: row positions follow from the batch order (package
	// doc, "Row positions").
	Files []iceberg.DataFile
	// Rows is the number of rows across Files.
	Rows int64
	// Deletes are position delete files committed with Files in one
	// RowDelta (AddDeletes); nil for an append.
	Deletes []iceberg.DataFile

	ranges map[int32]Range
	// uncertain: a commit of these files returned an error that leaves
	// its outcome unknown, so they may be live and must never be deleted.
	uncertain bool
	done      bool
	// release ends the in-flight hold on Files (see fileHolder); nil
	// when the catalog offers none.
	release func()
}

// fileHolder is the optional capability of a CatalogIO (catalog.TableIO
// has it) to mark data files as written but not committed, so that
// maintenance's orphan-file removal never deletes a batch in flight, however
// long its commit is delayed.
type fileHolder interface {
	HoldFiles(files []string) (release func())
}

// finish marks w committed or dropped and ends its in-flight hold.
func (w *Written) finish() {
	w.done = true
	if w.release != nil {
		w.release()
	}
}

// Commit writes b (Write) and commits it (CommitWritten). Errors as those.
func (s *Sink) Commit(ctx context.Context, b Batch) error {
	w, err := s.Write(ctx, b)
	if err != nil {
		return err
	}
	return s.CommitWritten(ctx, w)
}

// Write writes b's rows as Parquet data files through iceberg-go
// (table.WriteRecords): the table's partition spec, field IDs, column
// statistics, and its write properties, so zstd unless the table's
// write.parquet.compression-codec says otherwise. A table partitioned by
// day of a timestamp column (Tarn's default) is partitioned here rather
// than row by row in iceberg-go (dayPartitioner), with the same files as
// a result. Nothing is committed.
//
// Errors: ErrInvalidBatch, ErrSortedTable, and iceberg-go's (schema not
// compatible with the table, I/O), wrapped. Files of a failed write are
// removed.
func (s *Sink) Write(ctx context.Context, b Batch) (*Written, error) {
	if err := b.validate(); err != nil {
		return nil, err
	}
	tbl := s.tbl
	if !tbl.SortOrder().IsUnsorted() {
		return nil, fmt.Errorf("table %s: %w", s.name(), ErrSortedTable)
	}
	w := &Written{ranges: maps.Clone(b.Ranges)}
	var rows int64
	for _, rec := range b.Records {
		rows += rec.NumRows()
	}
	if rows == 0 {
		return w, nil
	}

	opts := []table.WriteRecordOption{
		// One fanout worker: record batches reach the partition writers in
		// order, which row positions depend on (package doc).
		table.WithMaxWriteWorkers(1),
	}
	if s.cfg.TargetFileSizeBytes > 0 {
		opts = append(opts, table.WithTargetFileSize(s.cfg.TargetFileSizeBytes))
	}
	var werr error
	if dp := newDayPartitioner(tbl, b.Records[0].Schema()); dp == nil {
		w.Files, werr = writeRecords(ctx, tbl, b.Records, opts)
	} else if days, ok := dp.split(b.Records); !ok {
		w.Files, werr = writeRecords(ctx, tbl, b.Records, opts)
	} else {
		// One day after another: each day's files stay in batch order.
		for i, d := range days {
			var view *table.Table
			var files []iceberg.DataFile
			if view, werr = dp.view(d.day); werr == nil {
				files, werr = writeRecords(ctx, view, d.recs, opts)
			}
			for _, df := range files {
				f, err := dp.file(df, d.day)
				if err != nil {
					werr = err
					f = df // still removed below
				}
				w.Files = append(w.Files, f)
			}
			release(d.recs)
			if werr != nil {
				for _, rest := range days[i+1:] {
					release(rest.recs)
				}
				break
			}
		}
	}
	for _, df := range w.Files {
		w.Rows += df.Count()
	}
	if werr == nil && w.Rows != rows {
		werr = fmt.Errorf("wrote %d rows of %d", w.Rows, rows)
	}
	if werr != nil {
		// Never committed, so nothing references these files.
		s.remove(ctx, tbl, w.Files)
		return nil, fmt.Errorf("write %d rows to %s: %w", rows, s.name(), werr)
	}
	if h, ok := s.cat.(fileHolder); ok {
		paths := make([]string, len(w.Files))
		for i, f := range w.Files {
			paths[i] = f.FilePath()
		}
		w.release = h.HoldFiles(paths)
	}
	return w, nil
}

// writeRecords writes recs into tbl through iceberg-go, returning the
// data files written, also those written before an error (for removal).
func writeRecords(ctx context.Context, tbl *table.Table, recs []arrow.RecordBatch, opts []table.WriteRecordOption) ([]iceberg.DataFile, error) {
	records := func(yield func(arrow.RecordBatch, error) bool) {
		for _, rec := range recs {
			// WriteRecords releases what it consumes; the caller keeps its own reference.
			rec.Retain()
			if !yield(rec, nil) {
				return
			}
		}
	}
	var files []iceberg.DataFile
	for df, err := range table.WriteRecords(ctx, tbl, recs[0].Schema(), records, opts...) {
		if err != nil {
			return files, err
		}
		files = append(files, df)
	}
	return files, nil
}

func release(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// AddDeletes adds position delete files, written into the table's data
// directory by the caller, to w: CommitWritten then commits them with w's
// data files in one snapshot (iceberg-go's RowDelta: an overwrite, or a
// delete when w has no data files), and removes them with w's files when
// it drops w. They are held from orphan removal like w's files.
func (s *Sink) AddDeletes(w *Written, files []iceberg.DataFile) {
	if len(files) == 0 {
		return
	}
	w.Deletes = append(w.Deletes, files...)
	if h, ok := s.cat.(fileHolder); ok {
		paths := make([]string, len(files))
		for i, f := range files {
			paths[i] = f.FilePath()
		}
		prev, rel := w.release, h.HoldFiles(paths)
		w.release = func() {
			if prev != nil {
				prev()
			}
			rel()
		}
	}
}

// Remove deletes w's files (data and delete files), which must never have
// been committed: for a caller that gives up on w before CommitWritten.
func (s *Sink) Remove(ctx context.Context, w *Written) {
	w.finish()
	s.remove(ctx, s.tbl, append(append([]iceberg.DataFile(nil), w.Files...), w.Deletes...))
}

// CommitWritten commits w's files as one append snapshot whose summary
// carries the head's offsets advanced by w's ranges, conditional on main
// still being the snapshot the offsets were read from
// (assert-ref-snapshot-id). When main moved (the commit fails with
// ErrCommitFailed) it reloads the head: if the head still has every
// partition of w at the range's Start, it commits the same files again on
// the new head (a rebase; nothing is rewritten), up to 8 times.
//
// With Config.NoRebase, a moved main drops w instead of rebasing it.
//
// Errors:
//   - *StaleBatchError (ErrStaleBatch): the head moved a partition of w.
//     Nothing was committed; w's files are deleted, unless an earlier
//     CommitWritten of w ended with an unknown outcome (they may be live).
//     Re-seek from StaleBatchError.Head.
//   - ErrWrittenDone: w was already committed or dropped.
//   - ErrMainMoved: Config.NoRebase and main moved; w was dropped (its
//     files deleted, unless an earlier outcome was unknown). Re-read from
//     Head.
//   - catalog.ErrFenced, wrapped: ctx carries a catalog.Fence the store
//     refused (another replica claimed one of w's partitions since, or w
//     does not start at the claimed progress). Nothing was committed; w
//     was dropped (its files deleted, unless an earlier outcome was
//     unknown).
//   - catalog.ErrCommitFailed, wrapped: still conflicting after 8
//     attempts; nothing committed, w may be committed again.
//   - offsets.ErrInvalid (and its specific kinds) from the head.
//   - anything else, wrapped: the commit was not sent (reload or staging
//     failed) or its outcome is unknown (catalog.ErrCommitStateUnknown, a
//     lost reply, the context ended). Call Head and re-seek from it: if
//     the commit landed the head is at the ranges' Ends, else at their
//     Starts. w may be committed again; the offsets check keeps that from
//     duplicating.
//
// Files written but not committed, and manifests of failed attempts, are
// left for maintenance's orphan-file removal.
func (s *Sink) CommitWritten(ctx context.Context, w *Written) error {
	if w.done {
		return ErrWrittenDone
	}
	base, fresh := s.tbl, false
	for attempt := 1; ; {
		head, err := s.offsetsOf(base)
		if err != nil {
			return err
		}
		if p, next, moved := moved(head, w.ranges); moved {
			if !fresh {
				// The cached base may be behind the table; judge
				// staleness against the table itself.
				if base, err = s.reload(ctx); err != nil {
					return err
				}
				fresh = true
				continue
			}
			s.drop(ctx, base, w)
			return &StaleBatchError{Head: head, Partition: p, Start: w.ranges[p].Start, Next: next}
		}
		if s.cfg.NoRebase && attempt > 1 {
			// main moved, but not these partitions: a rebase would apply
			// here, but w's deletes name rows of the old head.
			s.drop(ctx, base, w)
			return fmt.Errorf("commit to %s: %w", s.name(), ErrMainMoved)
		}

		txn, err := stage(ctx, base, w, advance(head, w.ranges))
		if err != nil {
			// Nothing was sent to the catalog.
			return fmt.Errorf("commit to %s: %w", s.name(), err)
		}
		tbl, err := txn.Commit(ctx)
		switch {
		case err == nil:
			s.tbl = tbl
			w.finish()
			return nil
		case errors.Is(err, catalog.ErrFenced):
			// The store refused the batch's partition claims in the
			// transaction that would have recorded it: nothing landed.
			s.drop(ctx, base, w)
			return fmt.Errorf("commit to %s: %w", s.name(), err)
		case !isCommitFailed(err):
			w.uncertain = true
			return fmt.Errorf("commit to %s: outcome unknown; re-seek from Head: %w", s.name(), err)
		case attempt == maxCommitAttempts:
			return fmt.Errorf("commit to %s: still conflicting after %d attempts: %w", s.name(), attempt, err)
		}
		// Main moved since base: see whether the batch still applies.
		attempt++
		if base, err = s.reload(ctx); err != nil {
			return err
		}
		fresh = true
	}
}

// drop marks w dropped and deletes its files unless they may be live.
func (s *Sink) drop(ctx context.Context, base *table.Table, w *Written) {
	w.finish()
	if !w.uncertain {
		s.remove(ctx, base, append(append([]iceberg.DataFile(nil), w.Files...), w.Deletes...))
	}
}

// stage prepares, on base, the append of w's files in one snapshot whose
// summary carries offsets next.
func stage(ctx context.Context, base *table.Table, w *Written, next offsets.Offsets) (*table.Transaction, error) {
	txn := base.NewTransaction()
	// The transaction asserts main's snapshot anyway, but iceberg-go's
	// Commit refreshes and replays an append onto a moved main when the
	// catalog reports table.ErrCommitFailed (a REST catalog does). Pinning
	// the assertion makes a moved main fail the commit instead, so that
	// CommitWritten, not iceberg-go, decides whether the batch still
	// applies: a replay would re-apply records another writer committed.
	if err := txn.AssertRefSnapshotID(table.MainBranch); err != nil {
		return nil, err
	}
	var err error
	switch {
	case len(w.Deletes) > 0:
		// Rows and the position deletes of the rows they replace land
		// together, or not at all.
		err = txn.NewRowDelta(next.Properties()).AddRows(w.Files...).AddDeletes(w.Deletes...).Commit(ctx)
	case len(w.Files) == 0:
		// AddDataFiles with no files commits nothing; AddFiles commits an
		// empty snapshot, which still records the offsets.
		err = txn.AddFiles(ctx, nil, next.Properties(), true)
	default:
		// The paths carry a fresh write UUID, so skip the duplicate check,
		// which reads every manifest of the table on each commit.
		err = txn.AddDataFiles(ctx, w.Files, next.Properties(), table.WithoutDuplicateCheck())
	}
	if err != nil {
		return nil, fmt.Errorf("stage append: %w", err)
	}
	return txn, nil
}

// isCommitFailed reports a clean conflict: a requirement failed and
// nothing was committed. Tarn's TableIO returns catalog.ErrCommitFailed,
// a REST CatalogIO table.ErrCommitFailed.
func isCommitFailed(err error) bool {
	return errors.Is(err, catalog.ErrCommitFailed) || errors.Is(err, table.ErrCommitFailed)
}

// remove deletes data files that no snapshot references. Best effort:
// what stays is an orphan for maintenance to remove.
func (s *Sink) remove(ctx context.Context, tbl *table.Table, files []iceberg.DataFile) {
	if len(files) == 0 {
		return
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return
	}
	for _, f := range files {
		_ = fs.Remove(f.FilePath())
	}
}
