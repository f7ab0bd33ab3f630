package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/connect"
	"github.com/tarnhq/tarn/ingest/sink"
	"github.com/tarnhq/tarn/ingest/source"
	"github.com/tarnhq/tarn/ingest/upsert"
	"github.com/tarnhq/tarn/internal/recovery"
	"github.com/tarnhq/tarn/offsets"
)

const (
	// shutdownCommitTimeout bounds the commit of what is buffered when
	// Run's context ends: long enough for a commit that has to write a
	// full batch and rebase, short enough that a stuck store does not keep
	// the process from exiting (the records are re-read on the next start).
	shutdownCommitTimeout = 30 * time.Second
	// maxFlushFailures is how many flushes in a row may fail with an
	// outcome the pipeline recovers from by re-reading (a write error, an
	// unknown commit outcome, a commit still conflicting after the sink's
	// rebases) before Run gives up and reports the last error.
	maxFlushFailures = 5
	// flushRetryBackoff is the pause after such a failure, times the
	// number of failures in a row.
	flushRetryBackoff = 200 * time.Millisecond
)

// confluentHeader parses the Confluent wire format: magic byte 0, then the
// schema id as a 4-byte big-endian integer (then, for Protobuf, the
// message indexes).
var confluentHeader sr.ConfluentHeader

// Deps are a pipeline's connections.
type Deps struct {
	// Tables loads and commits the table: catalog.Catalog.TableIO(wh), so
	// commits take the same path as REST clients'. Required.
	Tables table.CatalogIO
	// Registry resolves schema ids: an *sr.Client. Required for the
	// registry formats (avro, protobuf, json-schema).
	Registry Registry
	// OpenSource opens the topic's consumer. Required.
	OpenSource OpenSourceFunc
	// Logger receives commits (debug), skipped records, re-seeks and
	// suspensions; slog.Default() if nil.
	Logger *slog.Logger
	// OnBadRecord, if set, is called from Run's goroutine for every bad
	// record the pipeline takes (skipped, written to the dead letter
	// table) and for the one a suspension stops at, in offset order per
	// partition. A record read again (after a re-seek or in a later Run)
	// is reported again: the caller dedupes by partition and offset.
	OnBadRecord func(RecordError)
	// Budget is the process-wide budget for buffered records, shared by
	// all pipelines (see Budget for the policy); nil is unlimited.
	Budget *Budget
	// Panics counts a panic of Run (tarn_panics_recovered_total); nil
	// counts none, it is still recovered.
	Panics *recovery.Panics
	// Owner, when set, shares the topic with other replicas: it names
	// this replica in the partition claims (catalog.PartitionClaims).
	// The Source must then be an Assigner (a consumer group member), the
	// pipeline reads only the partitions it claimed, and every commit
	// carries a catalog.Fence of the claims its records were read under,
	// which the store checks in the commit's transaction. Ignored in the
	// upsert modes, whose key index needs every partition in one process.
	Owner string
}

// Pipeline materializes one topic into one table (see the package doc).
// Run does the work; Status may be called from any goroutine.
type Pipeline struct {
	cfg     Config
	deps    Deps
	ident   table.Identifier
	log     *slog.Logger
	running atomic.Bool

	mu sync.Mutex
	st Status // guarded by mu

	// The rest belongs to Run's goroutine.
	sink *sink.Sink
	src  Source
	// schemaID is the ID of the table schema that schemas and buf target.
	schemaID int
	schemas  *schemas
	// unevolvable holds, per schema id, why the table's current schema
	// cannot be evolved to its writer schema; reset with the schema.
	unevolvable map[int]error
	buf         *buffer
	// planned is the table's next offset per partition as of the head the
	// buffer is planned on: the Start of each partition's next range.
	planned map[int32]int64
	// next is the next offset expected per partition: planned, moved past
	// what is buffered. A record below it was delivered twice (say, fetched
	// again after a re-seek) and is ignored.
	next map[int32]int64
	// failures counts recoverable flush failures in a row.
	failures int
	// dlq writes bad records in error mode dlq.
	dlq *dlqWriter
	// held counts the records buffered (rows and dlq rows), ever: it
	// tells process whether a record's budget reservation is in use.
	held int64
	// gapsBefore are the gaps the sources of earlier Runs reported.
	gapsBefore []source.Gap
	// lagAt is when the source's lag was last asked.
	lagAt time.Time
	// stopping is Run's ctx.Done(): a reservation waiting in the budget
	// gives up waiting when it closes.
	stopping <-chan struct{}
	// coverBefore is the coverage of decoders replaced (Status.Coverage).
	coverBefore codec.Coverage
	// keys decodes record keys and index is the key index of the sink's
	// base snapshot (nil: to be rebuilt), in upsert mode only.
	keys  *keyDecoder
	index *upsert.Index
	// changes reads Debezium change events, in mode debezium.
	changes connect.ChangeReader
	// keyFields makes the keys of a table keyed by value columns
	// (Config.KeyFields); nil when the Kafka record key is the key.
	keyFields *keyFields
	// group is the claims of a shared topic (Deps.Owner); nil when the
	// pipeline reads every partition.
	group *group
	// carried holds, in mode debezium, the old row (string and binary
	// columns by name) of each primary-key change whose delete was in a
	// batch without its create, for the create's TOAST placeholders
	// (resolveUnavailable); lost on restart.
	carried map[string]map[string]toastValue
	// identified is set once the table's identifier-field-ids are
	// settled for this Run: recorded, or the key names no columns that
	// can be (ensureIdentifier).
	identified bool
}

// New returns a pipeline for cfg (defaults applied) in state pending.
// Errors: ErrInvalidConfig, also for a missing dependency.
func New(cfg Config, deps Deps) (*Pipeline, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	switch {
	case deps.Tables == nil || deps.OpenSource == nil:
		return nil, fmt.Errorf("%w: Tables and OpenSource are required", ErrInvalidConfig)
	case cfg.Format == FormatAuto:
		return nil, fmt.Errorf("%w: format auto must be resolved (WriterSchema) before the pipeline runs", ErrInvalidConfig)
	case cfg.Format.registered() && deps.Registry == nil:
		return nil, fmt.Errorf("%w: format %s needs a Registry", ErrInvalidConfig, cfg.Format)
	}
	log := deps.Logger
	if log == nil {
		log = slog.Default()
	}
	ident := append(table.Identifier{}, cfg.Table.Namespace...)
	ident = append(ident, cfg.Table.Name)
	p := &Pipeline{
		cfg:       cfg,
		deps:      deps,
		ident:     ident,
		log:       log.With("topic", cfg.Topic, "table", cfg.Table.String()),
		keyFields: newKeyFields(cfg.KeyFields),
	}
	p.st = Status{Topic: cfg.Topic, Table: cfg.Table.String(), State: StatePending, Errors: map[ErrorKind]int64{}}
	return p, nil
}

// Config returns the pipeline's configuration, defaults applied.
func (p *Pipeline) Config() Config { return p.cfg }

// Run materializes the topic until ctx ends or the topic suspends. It
// loads the table's head offsets, opens the source there, and loops:
// poll, decode each record into the buffer, and commit the buffer as one
// snapshot (sink.Commit) when it reaches TargetFileSizeBytes or
// TargetLag has passed since its first record, whichever comes first.
//
// Returns:
//   - nil when ctx ended: what was buffered was committed first (within
//     30 s; if that commit fails, the records are simply read again on
//     the next start).
//   - *SuspendedError: a bad record in suspend mode, or a record whose
//     schema cannot be evolved into the table (any mode, unless
//     Config.BadSchemaIDs passes it). Everything before it was committed,
//     nothing after it.
//   - ErrRunning if another Run of p is going.
//   - any other error (catalog, registry, source, invalid table offsets,
//     ErrTableShape): the pipeline failed; what was buffered before the
//     error was committed when that was still possible.
//   - *recovery.PanicError: a panic in the pipeline (a bug, an input
//     nothing checked) fails the run like any error, so the supervisor
//     restarts it from the table's offsets instead of the process
//     ending; what was buffered and not committed is read again.
//
// Run may be called again after it returned; it resumes from the table.
func (p *Pipeline) Run(ctx context.Context) (err error) {
	if !p.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer p.running.Store(false)
	defer func() { p.finish(err) }()
	defer p.deps.Panics.Recover(recovery.Pipeline, &err)

	p.stopping = ctx.Done()
	if err := p.start(ctx); err != nil {
		if ctx.Err() != nil {
			// Stopped while starting (a load or the key index rebuild
			// cut short): nothing was read, so nothing is lost.
			return nil
		}
		return err
	}
	defer p.stop()
	return p.loop(ctx)
}

// start opens the sink, reads the head and opens the source there.
func (p *Pipeline) start(ctx context.Context) error {
	s, err := sink.Open(ctx, p.deps.Tables, sink.Config{
		Table: p.ident, Cluster: p.cfg.Cluster, Topic: p.cfg.Topic,
		TargetFileSizeBytes: p.cfg.TargetFileSizeBytes,
		NoRebase:            p.cfg.Mode.Keyed(),
	})
	if err != nil {
		return err
	}
	head, err := s.Head(ctx)
	if err != nil {
		return err
	}
	p.sink = s
	if p.cfg.Mode.Keyed() {
		if !s.Table().Spec().IsUnpartitioned() {
			return fmt.Errorf("table %s: %w: an upsert table must be unpartitioned", p.cfg.Table, ErrTableShape)
		}
		// The key index is rebuilt once the source is open (below).
		p.keys, p.index, p.identified = newKeyDecoder(p.deps.Registry, p.cfg.Format), nil, false
	}
	p.dlq = &dlqWriter{p: p}
	if err := p.useSchema(s.Table().Schema()); err != nil {
		return err
	}
	p.planned, p.next, p.failures = maps.Clone(head.Next), maps.Clone(head.Next), 0
	p.lagAt = time.Time{}
	p.update(func(st *Status) {
		st.State, st.Reason, st.Next = StateSyncing, "", maps.Clone(head.Next)
		p.gapsBefore = slices.Clone(st.Gaps)
	})
	src, err := p.deps.OpenSource(ctx, maps.Clone(head.Next))
	if err != nil {
		return fmt.Errorf("open source of topic %s: %w", p.cfg.Topic, err)
	}
	if ti, ok := src.(TopicIdentifier); ok {
		// A topic deleted and recreated under the same name counts other
		// records at the table's offsets: refuse rather than skip them.
		if err := s.BindTopicID(ctx, ti.TopicID()); err != nil {
			src.Close()
			return err
		}
	}
	p.src, p.group = src, nil
	if p.deps.Owner != "" && !p.cfg.Mode.Keyed() {
		g, err := newGroup(src, p.deps.Owner, s.Table().Metadata().TableUUID().String())
		if err != nil {
			src.Close()
			p.src = nil
			return err
		}
		p.group = g
	}
	if p.cfg.Mode.Keyed() {
		// A stop during the rebuild is no failure: the loop sees ctx
		// ended and returns; the next flush would rebuild anyway.
		if err := p.ensureIndex(ctx); err != nil && ctx.Err() == nil {
			src.Close()
			p.src = nil
			return err
		}
	}
	p.log.Info("pipeline started", "next", head.Next)
	return nil
}

// useSchema points the decoders and the buffer at table schema sc. The
// buffer must be empty.
func (p *Pipeline) useSchema(sc *iceberg.Schema) error {
	if p.buf != nil && p.schemaID == sc.ID {
		return nil
	}
	if err := checkKafkaColumn(sc); err != nil {
		return fmt.Errorf("table %s: %w", p.cfg.Table, err)
	}
	if err := checkKeyFields(sc, p.cfg.KeyFields, true); err != nil {
		return fmt.Errorf("table %s: %w", p.cfg.Table, err)
	}
	asc, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		return fmt.Errorf("table %s: arrow schema: %w", p.cfg.Table, err)
	}
	buf, err := newBuffer(asc)
	if err != nil {
		return fmt.Errorf("table %s: %w", p.cfg.Table, err)
	}
	if p.buf != nil {
		p.buf.release()
	}
	// The coverage of the decoder being replaced is kept.
	p.coverBefore = p.coverBefore.Merge(p.schemas.coverage())
	p.buf, p.schemaID, p.schemas = buf, sc.ID, newSchemas(p.deps.Registry, p.cfg.Format, sc, p.cfg.jsonOptions()...)
	p.schemas.changes = p.cfg.Mode == ModeDebezium && p.cfg.Envelope != EnvelopeFlattened
	p.schemas.flattened = p.cfg.Mode == ModeDebezium && p.cfg.Envelope == EnvelopeFlattened
	if p.cfg.Format.binary() {
		p.schemas.keyFields = p.cfg.KeyFields
	}
	p.unevolvable = map[int]error{}
	return nil
}

func (p *Pipeline) stop() {
	p.src.Close()
	p.src = nil
	p.deps.Budget.release(p.buf.bytes)
	p.buf.release()
	p.buf = nil
}

// finish records how Run ended.
func (p *Pipeline) finish(err error) {
	if errors.Is(err, ErrRunning) {
		return
	}
	var se *SuspendedError
	p.update(func(st *Status) {
		st.BufferedRows, st.BufferedBytes = 0, 0
		switch {
		case err == nil:
			st.State, st.Reason = StatePending, "stopped"
		case errors.As(err, &se):
			st.State, st.Reason = StateSuspended, se.Reason
		default:
			st.State, st.Reason = StateFailed, err.Error()
		}
	})
	switch {
	case err == nil:
		p.log.Info("pipeline stopped")
	case se != nil:
		p.log.Warn("topic suspended", "partition", se.Partition, "offset", se.Offset, "kind", se.Kind, "reason", se.Reason)
	default:
		p.log.Error("pipeline failed", "err", err)
	}
}

// loop polls and flushes until ctx ends or a record or error stops it.
//
// Only Poll watches ctx. The records a poll returned are processed, and
// batches committed, on work, which ctx's cancellation does not reach: a
// shutdown then never cuts a commit short (leaving its outcome unknown)
// and what was fetched before it is committed before Run returns. Each
// step on work is bounded (registry retries, the sink's commit attempts).
func (p *Pipeline) loop(ctx context.Context) error {
	work := context.WithoutCancel(ctx)
	_, gaps := p.src.(GapReporter)
	_, lags := p.src.(LagReporter)
	p.refreshStatus(ctx)
	for {
		// Wake up when the buffer is due even if nothing arrives, and
		// every lagInterval to refresh the gaps and lag in the status.
		var deadline time.Time
		if !p.buf.empty() {
			deadline = p.buf.first.Add(p.cfg.TargetLag)
		}
		if gaps || lags {
			if d := time.Now().Add(lagInterval); deadline.IsZero() || d.Before(deadline) {
				deadline = d
			}
		}
		pollCtx, cancel := ctx, context.CancelFunc(func() {})
		if !deadline.IsZero() {
			pollCtx, cancel = context.WithDeadline(ctx, deadline)
		}
		if !p.buf.empty() {
			// Wake up too when another pipeline waits for the memory
			// this one holds.
			if pressure := p.deps.Budget.pressured(); pressure != nil {
				go func() {
					select {
					case <-pressure:
						cancel()
					case <-pollCtx.Done():
					}
				}()
			}
		}
		recs, pollErr := p.src.Poll(pollCtx)
		timedOut := pollCtx.Err() != nil
		cancel()
		if p.group != nil {
			reseeked, err := p.assign(work)
			if err != nil {
				return p.shutdown(ctx, err)
			}
			if reseeked {
				// Read again from where the dropped batch began.
				recs = nil
			}
		}

		// A Source may return records with an error (ingest/source never
		// does): records are handled first, the error after.
		if err := p.process(work, recs); err != nil {
			return p.shutdown(ctx, err)
		}
		switch {
		case ctx.Err() != nil:
			return p.shutdown(ctx, nil)
		case pollErr != nil && !timedOut:
			return p.shutdown(ctx, fmt.Errorf("poll topic %s: %w", p.cfg.Topic, pollErr))
		}
		if !p.buf.empty() && (time.Since(p.buf.first) >= p.cfg.TargetLag || p.deps.Budget.underPressure()) {
			if _, err := p.flush(work); err != nil {
				return err
			}
		}
		p.refreshStatus(ctx)
	}
}

// shutdown ends Run with cause (nil for a graceful stop): unless cause is
// a suspension or a failed commit (after which the buffer is already
// empty), what is buffered is committed first, on a context that outlives
// ctx by at most shutdownCommitTimeout.
func (p *Pipeline) shutdown(ctx context.Context, cause error) error {
	if p.buf.empty() {
		return cause
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownCommitTimeout)
	defer cancel()
	if _, err := p.flush(fctx); err != nil {
		if cause == nil {
			return err
		}
		return errors.Join(cause, err)
	}
	return cause
}

// process takes one poll's records in order. It flushes whenever the
// buffer reaches the target size; after a flush that re-seeked the source
// the rest of recs is dropped (the source returns those partitions again
// from the new offsets). It returns a *SuspendedError after committing
// what came before the offending record, or an error that ends Run (the
// caller commits the buffer).
func (p *Pipeline) process(ctx context.Context, recs []*kgo.Record) error {
	defer p.updateBuffered()
	for _, rec := range recs {
		if n, ok := p.next[rec.Partition]; ok && rec.Offset < n || !p.holds(rec.Partition) {
			rec.Recycle()
			continue
		}
		if rec.Attrs.IsControl() {
			// A transaction marker: no row, but its offset is read.
			p.buf.cover(rec.Partition, rec.Offset, p.planned)
			p.next[rec.Partition] = rec.Offset + 1
			rec.Recycle()
			continue
		}
		est := recordBytes(rec)
		if reseeked, err := p.admit(ctx, est); err != nil || reseeked {
			return err
		}
		held := p.held
		reseeked, err := p.take(ctx, rec)
		if p.held == held {
			// Not buffered (skipped, suspended at, or to be read again):
			// its reservation is not in use.
			p.deps.Budget.release(est)
		}
		if err != nil || reseeked {
			return err
		}
		p.next[rec.Partition] = rec.Offset + 1
		if !p.buf.holds(rec) {
			// Its row (values and _kafka) is copied into the buffer:
			// the source may reuse the record (source.Source.Poll).
			rec.Recycle()
		}
		if p.buf.bytes >= p.cfg.TargetFileSizeBytes {
			reseeked, err := p.flush(ctx)
			if err != nil || reseeked {
				return err
			}
		}
	}
	return nil
}

// take decodes rec into the buffer (a row, or a dead letter row), evolving
// the table's schema first when rec's writer schema needs it, and covers
// its offset. It returns a *SuspendedError (after committing what came
// before rec) when rec stops the topic, and reseeked when a flush
// re-seeked the source (the caller drops the rest of the poll); other
// errors end Run.
func (p *Pipeline) take(ctx context.Context, rec *kgo.Record) (reseeked bool, err error) {
	if p.cfg.Mode.Keyed() && !p.identified {
		if reseeked, err := p.ensureIdentifier(ctx, rec); err != nil || reseeked {
			return reseeked, err
		}
	}
	rerr, err := p.decode(ctx, rec)
	if err != nil {
		return false, err
	}
	if rerr != nil && rerr.Kind == KindIncompatibleSchema && rerr.writer != nil {
		if cause, known := p.unevolvable[rerr.SchemaID]; known {
			// Evolution to this schema was refused for an earlier record:
			// do not flush and try again for every record of it.
			rerr.Err, rerr.writer = fmt.Errorf("%s cannot be evolved into the table's schema: %w", describe(rerr.SchemaID), cause), nil
		} else if reseeked, rerr, err = p.evolveFor(ctx, rec, rerr); err != nil || reseeked {
			return reseeked, err
		}
	}
	if rerr == nil {
		return false, nil
	}
	p.update(func(st *Status) { st.Errors[rerr.Kind]++ })
	if p.deps.OnBadRecord != nil {
		p.deps.OnBadRecord(*rerr)
	}
	if p.cfg.ErrorMode == ErrorModeSuspend || (rerr.Kind.schemaLevel() && !slices.Contains(p.cfg.BadSchemaIDs, rerr.SchemaID)) {
		return false, p.suspend(ctx, rerr)
	}
	if p.cfg.ErrorMode == ErrorModeDLQ {
		p.log.Warn("bad record to the dead letter table", "partition", rec.Partition, "offset", rec.Offset, "kind", rerr.Kind, "err", rerr.Err)
		p.buf.addBad(rec, rerr)
		p.held++
	} else {
		p.log.Warn("bad record skipped", "partition", rec.Partition, "offset", rec.Offset, "kind", rerr.Kind, "err", rerr.Err)
	}
	p.buf.cover(rec.Partition, rec.Offset, p.planned)
	return false, nil
}

// admit reserves est bytes of the budget for a record about to be
// buffered. When they do not fit, it commits the buffer first (reseeked
// as flush's: the caller drops the rest of the poll, nothing reserved),
// then waits for the other pipelines (see Budget).
func (p *Pipeline) admit(ctx context.Context, est int64) (reseeked bool, err error) {
	b := p.deps.Budget
	if b.tryReserve(est) {
		return false, nil
	}
	if !p.buf.empty() {
		p.update(func(st *Status) { st.BudgetFlushes++ })
		if reseeked, err := p.flush(ctx); err != nil || reseeked {
			return reseeked, err
		}
	}
	b.reserve(est, p.stopping)
	return false, nil
}

// decode appends rec as a row (value columns, then _kafka) and covers its
// offset. A record that cannot be materialized is returned as a
// *RecordError with nothing appended; err is for failures that are not
// about the record (the registry could not be asked).
func (p *Pipeline) decode(ctx context.Context, rec *kgo.Record) (rerr *RecordError, err error) {
	bad := func(kind ErrorKind, id int, cause error) (*RecordError, error) {
		return &RecordError{Topic: p.cfg.Topic, Partition: rec.Partition, Offset: rec.Offset, Kind: kind, SchemaID: id, Err: cause}, nil
	}
	var key string
	var meta *connect.Change // the change event's metadata, in mode debezium
	if (p.cfg.Mode == ModeUpsert && p.keyFields == nil) || (p.cfg.Mode.Keyed() && rec.Value == nil) {
		if key, rerr, err = p.recordKey(ctx, rec); rerr != nil || err != nil {
			return rerr, err
		}
		if rec.Value == nil {
			if p.keyFields != nil {
				if key, rerr = p.fieldsKey(rec, nil, key); rerr != nil {
					return rerr, nil
				}
			}
			// A tombstone: the key's row goes, and no row comes.
			p.buf.cover(rec.Partition, rec.Offset, p.planned)
			p.buf.changes = append(p.buf.changes, upsert.Change{Key: key, Row: -1})
			return nil, nil
		}
	}
	if rec.Value == nil && p.cfg.Format != FormatRaw {
		return bad(KindNoValue, -1, errors.New("the record has no value (a tombstone)"))
	}
	r, payload, err := p.schemas.forValue(ctx, rec.Value)
	if err != nil {
		return nil, fmt.Errorf("resolve the schema of %s partition %d offset %d: %w", p.cfg.Topic, rec.Partition, rec.Offset, err)
	}
	if r.dec == nil {
		rerr, _ := bad(r.kind, r.id, r.err)
		rerr.writer = r.writer
		return rerr, nil
	}
	if p.cfg.Mode == ModeDebezium {
		// A change event: its after is the row (docs/upsert.md,
		// "Debezium").
		var ch connect.Change
		var cerr error
		cd, binary := r.dec.(changeDecoder)
		switch {
		case binary:
			// Avro: the event is read in one pass, its row appended
			// below.
			ch, cerr = cd.ReadChange(p.buf.b, payload)
		case p.cfg.Envelope == EnvelopeFlattened:
			// ExtractNewRecordState's form: the row, its __deleted or
			// __op saying whether it is a delete.
			ch, cerr = p.changes.ReadFlattened(payload)
		default:
			ch, cerr = p.changes.Read(payload)
		}
		if cerr != nil {
			switch {
			case binary && errors.Is(cerr, codec.ErrOutOfRange):
				return bad(KindOutOfRange, r.id, cerr)
			case binary && !errors.Is(cerr, codec.ErrBadRecord):
				return nil, fmt.Errorf("decode %s partition %d offset %d: %w", p.cfg.Topic, rec.Partition, rec.Offset, cerr)
			}
			return bad(KindMalformed, r.id, cerr)
		}
		if ch.Op == connect.OpTruncate {
			// A truncate has no key: it concerns every row.
			p.buf.cover(rec.Partition, rec.Offset, p.planned)
			if p.cfg.Truncate == TruncateIgnore {
				p.log.Warn("truncate event ignored (truncate: ignore)", "partition", rec.Partition, "offset", rec.Offset)
				return nil, nil
			}
			p.buf.changes = append(p.buf.changes, upsert.Change{Truncate: true})
			return nil, nil
		}
		switch {
		case p.keyFields == nil:
			key, rerr, err = p.recordKey(ctx, rec)
		case ch.Op == connect.OpDelete && ((ch.Before == nil && p.cfg.Envelope != EnvelopeFlattened) || binary):
			// A delete without its old row (REPLICA IDENTITY NOTHING),
			// or in Avro (whose before or flattened row is not kept):
			// the Kafka key, Debezium's key struct, holds the key
			// columns.
			if key, rerr, err = p.recordKey(ctx, rec); rerr == nil && err == nil {
				key, rerr = p.fieldsKey(rec, nil, key)
			}
		case ch.Op == connect.OpDelete && p.cfg.Envelope != EnvelopeFlattened:
			key, rerr = p.fieldsKey(rec, ch.Before, "")
		case binary:
			// Avro: the key columns are read from the row once
			// decoded (below).
		default:
			key, rerr = p.fieldsKey(rec, ch.After, "")
		}
		if rerr != nil || err != nil {
			return rerr, err
		}
		if ch.Op == connect.OpDelete {
			p.buf.cover(rec.Partition, rec.Offset, p.planned)
			p.buf.changes = append(p.buf.changes, upsert.Change{Key: key, Row: -1})
			p.noteMove(rec, -1)
			return nil, nil
		}
		meta = &ch
		if !binary {
			payload = ch.After
		}
	} else if p.cfg.Mode == ModeUpsert && p.keyFields != nil && !p.cfg.Format.binary() {
		// JSON text (json, json-schema, connect-json's payload).
		if key, rerr = p.fieldsKey(rec, payload, ""); rerr != nil {
			return rerr, nil
		}
	}
	appendRow := r.dec.Append
	if cd, ok := r.dec.(changeDecoder); ok && p.cfg.Mode == ModeDebezium {
		appendRow = cd.AppendRow
	}
	if err := appendRow(p.buf.b, payload); err != nil {
		switch {
		case errors.Is(err, codec.ErrOutOfRange):
			return bad(KindOutOfRange, r.id, err)
		case errors.Is(err, codec.ErrBadRecord):
			return bad(KindMalformed, r.id, err)
		}
		return nil, fmt.Errorf("decode %s partition %d offset %d: %w", p.cfg.Topic, rec.Partition, rec.Offset, err)
	}
	if p.keyFields != nil && p.cfg.Format.binary() {
		// The writer schema requires the key columns (requireKeyFields),
		// so the row just appended has them.
		if key, err = p.keyFields.fromBuilder(p.buf.b); err != nil {
			return nil, fmt.Errorf("%s partition %d offset %d: %w", p.cfg.Topic, rec.Partition, rec.Offset, err)
		}
	}
	p.buf.cover(rec.Partition, rec.Offset, p.planned)
	if p.cfg.Mode.Keyed() {
		p.buf.changes = append(p.buf.changes, upsert.Change{Key: key, Row: p.buf.rows})
		if p.cfg.Mode == ModeDebezium && len(rec.Headers) > 0 {
			p.noteMove(rec, p.buf.rows)
		}
	}
	p.buf.addKafka(rec, meta)
	p.held++
	return nil, nil
}

// fieldsKey is the key of rec from the key columns (Config.KeyFields):
// those of row, the JSON text of its row, or with row nil those of
// identity, its Kafka key's. A row without them is a *RecordError
// (KindBadKey).
func (p *Pipeline) fieldsKey(rec *kgo.Record, row []byte, identity string) (string, *RecordError) {
	var k string
	var err error
	if row != nil {
		k, err = p.keyFields.fromJSON(row)
	} else {
		k, err = p.keyFields.fromKey(identity)
	}
	if err != nil {
		return "", &RecordError{Topic: p.cfg.Topic, Partition: rec.Partition, Offset: rec.Offset, Kind: KindBadKey, SchemaID: -1, Err: err}
	}
	return k, nil
}

// recordKey decodes rec's key in a keyed mode. A key that is missing or
// cannot be decoded is a *RecordError; err is for failures that are not
// the record's (the registry could not be asked).
func (p *Pipeline) recordKey(ctx context.Context, rec *kgo.Record) (string, *RecordError, error) {
	k, kind, kerr, err := p.keys.key(ctx, rec.Key)
	switch {
	case err != nil:
		return "", nil, fmt.Errorf("%s partition %d offset %d: %w", p.cfg.Topic, rec.Partition, rec.Offset, err)
	case kerr != nil:
		return "", &RecordError{Topic: p.cfg.Topic, Partition: rec.Partition, Offset: rec.Offset, Kind: kind, SchemaID: -1, Err: kerr}, nil
	}
	return k, nil, nil
}

// evolveFor handles a record whose writer schema does not fit the table
// (rerr, KindIncompatibleSchema with its writer): it commits the buffer,
// evolves the table's schema (evolve) and decodes the record again into
// the new schema. It returns the record's error when the schema cannot be
// evolved or the record is bad in itself, and reseeked when the flush
// dropped the batch and re-seeked (the caller drops the rest of the poll:
// the record is read again). err is for failures that end Run.
func (p *Pipeline) evolveFor(ctx context.Context, rec *kgo.Record, rerr *RecordError) (reseeked bool, _ *RecordError, err error) {
	if reseeked, err := p.flush(ctx); err != nil || reseeked {
		return reseeked, nil, err
	}
	var keys []string
	if p.cfg.Mode.Keyed() {
		keys = p.keyColumns(ctx, rec)
	}
	_, err = p.evolve(ctx, rerr.writer, keys)
	if errors.Is(err, codec.ErrIncompatible) {
		// Not tried again for this schema id while the table's schema
		// stays: one commit per record of it would follow otherwise.
		p.unevolvable[rerr.SchemaID] = err
		rerr.Err = fmt.Errorf("%s cannot be evolved into the table's schema: %w", describe(rerr.SchemaID), err)
		rerr.writer = nil
		return false, rerr, nil
	}
	if err != nil {
		return false, nil, err
	}
	// The sink writes against the table it last loaded: reload it, and
	// decode into its schema (the evolved one, or a newer one).
	if _, err := p.sink.Head(ctx); err != nil {
		return false, nil, err
	}
	if err := p.useSchema(p.sink.Table().Schema()); err != nil {
		return false, nil, err
	}
	p.update(func(st *Status) { st.SchemaUpdates++ })
	rerr, err = p.decode(ctx, rec)
	return false, rerr, err
}

// suspend commits what was buffered before rerr's record and returns the
// *SuspendedError for it.
func (p *Pipeline) suspend(ctx context.Context, rerr *RecordError) error {
	var reason string
	if rerr.Kind.schemaLevel() {
		reason = fmt.Sprintf("partition %d offset %d: %s: %v; register a compatible schema, then resume; or switch error-mode to skip or dlq and resume to move past the records of %s",
			rerr.Partition, rerr.Offset, rerr.Kind, rerr.Err, describe(rerr.SchemaID))
	} else {
		reason = fmt.Sprintf("partition %d offset %d: bad record (%s): %v; error mode is suspend: fix or remove the record's cause, or switch the error mode to skip or dlq, then resume",
			rerr.Partition, rerr.Offset, rerr.Kind, rerr.Err)
	}
	se := &SuspendedError{Partition: rerr.Partition, Offset: rerr.Offset, Kind: rerr.Kind, SchemaID: rerr.SchemaID, Reason: reason, Err: rerr}
	if _, err := p.flush(ctx); err != nil {
		return errors.Join(se, err)
	}
	return se
}

// flush commits the buffer as one batch and empties it. reseeked reports
// that the batch was dropped and the source re-seeked from the table: a
// *sink.StaleBatchError (another writer committed these offsets), or a
// failure after which the table's head decides (a failed write, an
// unknown commit outcome, a commit still conflicting after the sink's
// rebases). err is returned when the table cannot be trusted
// (offsets.ErrInvalid), the sink refused the batch, ctx ended, or
// maxFlushFailures flushes in a row failed.
func (p *Pipeline) flush(ctx context.Context) (reseeked bool, err error) {
	if p.buf.empty() {
		return false, nil
	}
	started := time.Now()
	taken := p.buf.bytes
	changes, moves := p.buf.changes, p.buf.moves
	batch, bad := p.buf.take()
	var plan upsert.Plan
	if p.cfg.Mode.Keyed() {
		if p.cfg.Mode == ModeDebezium {
			// Before folding: a row's placeholders may take their
			// values from a row of the batch that folding drops.
			var terr error
			if batch.Records, terr = p.resolveUnavailable(ctx, batch.Records, changes, moves); terr != nil {
				release(batch.Records)
				return false, terr
			}
		}
		// Only the last change of each key is written.
		plan = upsert.Fold(changes)
		kept, kerr := keepRows(batch.Records, plan.Keep)
		release(batch.Records)
		if kerr != nil {
			return false, kerr
		}
		batch.Records = kept
	}
	defer release(batch.Records)
	// The status first, so that BufferedBytes never shows bytes the
	// budget already handed to another pipeline.
	p.updateBuffered()
	p.deps.Budget.release(taken)

	// The dead letter rows first: see dlqWriter for why this order keeps
	// both tables exactly once.
	var dlqRows int
	if len(bad) > 0 {
		dlqRows, err = p.dlq.commit(ctx, batch.Ranges, bad)
	}
	var w *sink.Written
	if err == nil {
		w, err = p.sink.Write(ctx, batch)
	}
	var delta *upsert.Delta
	if err == nil && p.cfg.Mode.Keyed() {
		delta, err = p.retire(ctx, plan, w)
	}
	if err == nil {
		err = p.sink.CommitWritten(p.fenced(ctx, batch), w)
	}
	if p.cfg.Mode.Keyed() {
		if err == nil {
			err = p.indexCommitted(delta)
		} else {
			// Whatever happened, the next batch is planned on a fresh
			// index of the head it commits on.
			p.index = nil
		}
	}
	if dlqRows > 0 {
		p.update(func(st *Status) { st.DLQRows += int64(dlqRows) })
	}
	var stale *sink.StaleBatchError
	switch {
	case err == nil:
		return false, p.committed(batch, w, time.Since(started))
	case errors.Is(err, sink.ErrMainMoved):
		// An upsert batch after another writer's commit (a compaction):
		// read it again on a key index of the new head.
		p.log.Info("batch dropped: the table changed since it was planned; re-reading on the new head", "err", err)
		head, herr := p.sink.Head(ctx)
		if herr != nil {
			return false, errors.Join(err, herr)
		}
		p.reseek(head.Next, batch.Ranges)
		return true, nil
	case errors.Is(err, catalog.ErrFenced):
		// Another replica claimed a partition of the batch since its
		// records were read: they are its to commit now.
		p.failures++
		if p.failures >= maxFlushFailures {
			return false, fmt.Errorf("%d flushes in a row failed: %w", p.failures, err)
		}
		p.log.Info("batch refused: a partition's claim moved to another replica; re-reading the partitions still held", "err", err)
		p.refenced(batch.Ranges)
		return true, nil
	case errors.As(err, &stale):
		p.log.Info("batch dropped: another writer committed its offsets; re-seeking from the table", "err", err)
		p.reseek(stale.Head.Next, batch.Ranges)
		return true, nil
	case errors.Is(err, offsets.ErrInvalid), errors.Is(err, sink.ErrInvalidBatch), errors.Is(err, upsert.ErrIndexMismatch),
		errors.Is(err, sink.ErrSortedTable), errors.Is(err, sink.ErrWrittenDone), errors.Is(err, ErrTableShape), ctx.Err() != nil:
		return false, err
	}
	p.failures++
	if p.failures >= maxFlushFailures {
		return false, fmt.Errorf("%d flushes in a row failed: %w", p.failures, err)
	}
	p.log.Warn("flush failed; re-reading from the table's head", "err", err, "failures", p.failures)
	head, herr := p.sink.Head(ctx)
	if herr != nil {
		return false, errors.Join(err, herr)
	}
	p.reseek(head.Next, batch.Ranges)
	select {
	case <-ctx.Done():
	case <-time.After(time.Duration(p.failures) * flushRetryBackoff):
	}
	return true, nil
}

// committed records a successful commit of batch (files w; took is the
// time from taking the buffer to the catalog's answer) and follows a
// change of the table's schema. Errors: those of useSchema.
func (p *Pipeline) committed(batch sink.Batch, w *sink.Written, took time.Duration) error {
	for part, r := range batch.Ranges {
		p.planned[part] = r.End
	}
	p.failures = 0
	var bytes int64
	for _, f := range w.Files {
		bytes += f.FileSizeBytes()
	}
	now := time.Now()
	cov := p.coverBefore.Merge(p.schemas.coverage())
	p.update(func(st *Status) {
		st.Coverage = cov
		st.Rows += w.Rows
		st.Bytes += bytes
		st.Files += int64(len(w.Files))
		st.Commits++
		st.LastCommit = now
		st.LastCommitDuration = took
		st.Next = maps.Clone(p.planned)
	})
	p.log.Debug("committed", "rows", w.Rows, "files", len(w.Files), "bytes", bytes, "ranges", batch.Ranges)
	// A schema change by someone else (the table is Tarn's, so normally
	// nobody) takes effect between batches: the buffer is empty now.
	return p.useSchema(p.sink.Table().Schema())
}

// reseek re-plans from the table's head: the source goes back (or
// forward) to head's offsets, and each partition of the dropped batch that
// head lacks to where the batch started.
func (p *Pipeline) reseek(head map[int32]int64, dropped map[int32]sink.Range) {
	to := maps.Clone(head)
	if to == nil {
		to = map[int32]int64{}
	}
	for part, r := range dropped {
		if _, ok := to[part]; !ok {
			to[part] = r.Start
		}
	}
	p.planned, p.next = maps.Clone(head), maps.Clone(to)
	if p.planned == nil {
		p.planned = map[int32]int64{}
	}
	p.src.Reseek(to)
	p.update(func(st *Status) {
		st.StaleBatches++
		st.Next = maps.Clone(p.planned)
	})
}

func (p *Pipeline) updateBuffered() {
	rows, bytes := p.buf.rows, p.buf.bytes
	p.update(func(st *Status) { st.BufferedRows, st.BufferedBytes = rows, bytes })
}
