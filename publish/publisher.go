package publish

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tarnhq/tarn/catalog"
)

// Defaults of the publisher.
const (
	// DefaultResyncInterval between passes over every table and record,
	// which find what no commit notice reported: a commit or property
	// change made while Tarn was down, a drop missed by a crash. The same interval as the Delta publisher's.
	DefaultResyncInterval = 5 * time.Minute
	// minBackoff and maxBackoff bound the retry delay of a table whose
	// publish failed: 1 s doubling to a minute, jittered, as the Delta
	// publisher's; a target down for an hour is retried every minute.
	minBackoff = time.Second
	maxBackoff = time.Minute
)

// Tables is what the publisher reads of the catalog (delta.CatalogTables
// implements it over a catalog.Catalog).
type Tables interface {
	// LoadTable returns a table's current metadata. Errors wrap
	// catalog.ErrNoSuchTable for a table that is gone.
	LoadTable(ctx context.Context, id catalog.Ident) (*table.Table, error)
	// ListTables lists every table of the catalog.
	ListTables(ctx context.Context) ([]catalog.Ident, error)
}

// Deps are what a Publisher works on.
type Deps struct {
	Tables Tables
	// Store keeps the records (state.go). Required.
	Store Store
	// Owned reports whether a topic owns a table: a target without
	// namespaces covers those. nil: none is.
	Owned func(catalog.Ident) bool
	// Logger; slog.Default() when nil.
	Logger *slog.Logger
	// Metrics registers the tarn_publish_* metrics; none when nil.
	Metrics prometheus.Registerer
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// ResyncInterval; DefaultResyncInterval when 0.
	ResyncInterval time.Duration
	// Leases, when set, makes each publish of a table to a target run
	// under their lease (LeaseName), so that replicas sharing the store
	// never publish one table to one target at once: the replica that
	// noticed a commit takes the lease, reads the stored record again
	// (another replica may have published since), publishes and releases
	// it. A table whose lease another replica holds is retried here
	// after minBackoff (that replica may be publishing an older head).
	// nil: this process is the only publisher.
	Leases *catalog.LeaseKeeper
}

// LeaseName is the name of the lease of publishing table id to target.
func LeaseName(target string, id catalog.Ident) string { return "publish/" + recordKey(target, id) }

// Publisher pushes the pointer of every covered table to every target
// after each commit. One worker per target follows the catalog's commits
// (catalog.CommitObserver, TableDropped, TableRenamed): a notice only
// marks the table dirty and wakes the worker, which publishes the
// table's head at that time, so commits made while a publish runs
// coalesce into the next one and no commit ever waits for a target. See
// the package doc.
type Publisher struct {
	deps    Deps
	log     *slog.Logger
	m       *metrics
	workers []*worker

	mu      sync.Mutex
	ctx     context.Context // Run's; nil before
	running sync.WaitGroup
}

// Targeted is a configured target with its client.
type Targeted struct {
	Config TargetConfig
	Target Target
}

// New returns a Publisher of targets; Run starts it. Errors:
// ErrInvalidConfig, a metric already registered.
func New(targets []Targeted, deps Deps) (*Publisher, error) {
	if deps.Tables == nil || deps.Store == nil {
		return nil, fmt.Errorf("%w: Tables and Store are required", ErrInvalidConfig)
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Owned == nil {
		deps.Owned = func(catalog.Ident) bool { return false }
	}
	if deps.ResyncInterval == 0 {
		deps.ResyncInterval = DefaultResyncInterval
	}
	p := &Publisher{deps: deps, log: deps.Logger}
	for _, t := range targets {
		if err := t.Config.Validate(); err != nil {
			return nil, err
		}
		p.workers = append(p.workers, &worker{p: p, cfg: t.Config, target: t.Target, wake: make(chan struct{}, 1),
			dirty: map[string]catalog.Ident{}, tables: map[string]*tableState{}})
	}
	m, err := newMetrics(deps.Metrics, p)
	if err != nil {
		return nil, err
	}
	p.m = m
	return p, nil
}

// Configured reports whether any target is configured.
func (p *Publisher) Configured() bool { return len(p.workers) > 0 }

// TableCommitted is the catalog's commit notice (catalog.CommitObserver).
// It never blocks: it marks the table dirty for each target that may
// cover it (decided here when the table property or the target's
// namespaces say; a target of owned tables decides in its worker, which
// may ask the topic manager) and wakes the worker.
func (p *Publisher) TableCommitted(id catalog.Ident, md table.Metadata) {
	now := p.deps.Now()
	for _, w := range p.workers {
		if md != nil && !w.mayCover(id, md) {
			continue
		}
		w.notice(id, now)
	}
}

// TableDropped is the catalog's drop notice: each target's worker
// removes its table (per the target's drop mode) and forgets the record.
func (p *Publisher) TableDropped(id catalog.Ident) {
	for _, w := range p.workers {
		w.notice(id, time.Time{})
	}
}

// TableRenamed is the catalog's rename notice: each target's worker
// moves the record to the new name and publishes the table there (the
// target's table under the old name is removed once the new one exists).
func (p *Publisher) TableRenamed(from, to catalog.Ident) {
	now := p.deps.Now()
	for _, w := range p.workers {
		w.mu.Lock()
		w.renames = append(w.renames, [2]catalog.Ident{from, to})
		w.mu.Unlock()
		w.notice(to, now)
	}
}

// Run publishes until ctx ends: it loads the records, passes over every
// table (catching up what changed while Tarn was down), then follows the
// notices, with a pass every ResyncInterval. It returns once every
// worker has stopped. Errors: the records cannot be loaded.
func (p *Publisher) Run(ctx context.Context) error {
	if len(p.workers) == 0 {
		<-ctx.Done()
		return nil
	}
	recs, err := loadRecords(ctx, p.deps.Store)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.ctx = ctx
	p.mu.Unlock()
	for _, w := range p.workers {
		w.mu.Lock()
		for k, r := range recs[w.cfg.Name] {
			r := r
			st := w.stateLocked(r.Ident())
			if st.rec == nil { // a publish of this process may have stored one already
				st.rec = &r
			}
			w.dirty[k] = r.Ident()
		}
		w.mu.Unlock()
	}
	p.pass(ctx)
	for _, w := range p.workers {
		p.running.Go(func() { w.run(ctx) })
	}
	t := time.NewTicker(p.deps.ResyncInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			p.running.Wait()
			return nil
		case <-t.C:
			p.pass(ctx)
		}
	}
}

// pass marks every table dirty for every target (the worker decides
// whether it is covered and whether its record is current), and every
// record's table, so that a drop missed while down is followed.
func (p *Publisher) pass(ctx context.Context) {
	ids, err := p.deps.Tables.ListTables(ctx)
	if err != nil {
		if ctx.Err() == nil {
			p.log.Warn("publish: list tables", "err", err)
		}
		return
	}
	for _, w := range p.workers {
		w.mu.Lock()
		for _, id := range ids {
			w.dirty[tableKey(id)] = id
		}
		for k, st := range w.tables {
			if st.rec != nil {
				w.dirty[k] = st.id
			}
		}
		w.mu.Unlock()
		w.signal()
	}
}

// worker publishes to one target, one table at a time.
type worker struct {
	p      *Publisher
	cfg    TargetConfig
	target Target
	wake   chan struct{}

	// pub serializes publishes to the target (the worker's and Sync's).
	// Lock order: pub before mu.
	pub sync.Mutex
	// mu guards the maps and every tableState's fields.
	mu      sync.Mutex
	dirty   map[string]catalog.Ident
	renames [][2]catalog.Ident
	tables  map[string]*tableState
}

// tableState is what a worker knows of one table.
type tableState struct {
	id catalog.Ident
	// rec is the stored record; nil when none.
	rec *Record
	// behindSince is when the oldest commit not published yet was
	// noticed (zero: none known); nextSince the oldest noticed while a
	// publish ran (it may not include it).
	behindSince, nextSince time.Time
	publishing             bool
	// excluded: the target does not cover the table (now); its record,
	// if any, stays, and the target's table is left as it is.
	excluded bool
	// unsupported is why the target cannot take the table (ErrNotDelta),
	// "" when it can; the next commit tries again.
	unsupported string
	// err is the last failure; failures the consecutive ones, retryAt
	// when the next attempt is due.
	err      string
	failures int
	retryAt  time.Time
	// head is main's head snapshot at the last look.
	head *int64
}

func (w *worker) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// mayCover reports whether w may cover id with metadata md, deciding
// without the topic manager (see TableCommitted).
func (w *worker) mayCover(id catalog.Ident, md table.Metadata) bool {
	if _, ok := md.Properties()[w.cfg.Property()]; ok || len(w.cfg.Namespaces) > 0 {
		if w.cfg.Covers(id, md.Properties(), false) {
			return true
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		_, known := w.tables[tableKey(id)]
		return known // an excluded table's status changes
	}
	return true
}

// notice marks id dirty, a commit at (when not zero) behind it, and
// wakes the worker.
func (w *worker) notice(id catalog.Ident, at time.Time) {
	w.mu.Lock()
	k := tableKey(id)
	w.dirty[k] = id
	if st := w.tables[k]; st != nil && !at.IsZero() {
		st.noticeLocked(at)
	} else if st == nil && !at.IsZero() {
		w.stateLocked(id).noticeLocked(at)
	}
	w.mu.Unlock()
	w.signal()
}

func (st *tableState) noticeLocked(at time.Time) {
	if st.behindSince.IsZero() || at.Before(st.behindSince) {
		st.behindSince = at
	}
	if st.publishing && st.nextSince.IsZero() {
		st.nextSince = at
	}
}

// stateLocked returns id's state, made if missing; mu held.
func (w *worker) stateLocked(id catalog.Ident) *tableState {
	k := tableKey(id)
	st := w.tables[k]
	if st == nil {
		st = &tableState{id: id}
		w.tables[k] = st
	}
	return st
}

// run is the worker's loop: renames first, then every dirty table whose
// retry is due, then sleep until a notice or the next retry.
func (w *worker) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		w.round(ctx)
		if ctx.Err() != nil {
			return
		}
		timer.Reset(w.untilRetry())
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		case <-timer.C:
		}
	}
}

func (w *worker) round(ctx context.Context) {
	w.mu.Lock()
	renames := w.renames
	w.renames = nil
	w.mu.Unlock()
	for _, r := range renames {
		w.rename(ctx, r[0], r[1])
	}
	for ctx.Err() == nil {
		id, ok := w.takeDue()
		if !ok {
			return
		}
		_ = w.publishTable(ctx, id, false)
	}
}

// takeDue removes and returns a dirty table whose retry is due.
func (w *worker) takeDue() (catalog.Ident, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.p.deps.Now()
	for k, id := range w.dirty {
		if st := w.tables[k]; st != nil && st.retryAt.After(now) {
			continue
		}
		delete(w.dirty, k)
		return id, true
	}
	return catalog.Ident{}, false
}

// untilRetry is the time to the earliest retry of a dirty table (an
// hour when none is waiting).
func (w *worker) untilRetry() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	d := time.Hour
	now := w.p.deps.Now()
	for k := range w.dirty {
		if st := w.tables[k]; st != nil {
			d = min(d, max(st.retryAt.Sub(now), 0))
		}
	}
	return d
}

// rename moves the record of from to to (the next publish of to moves
// the target's table).
func (w *worker) rename(ctx context.Context, from, to catalog.Ident) {
	w.pub.Lock()
	defer w.pub.Unlock()
	w.mu.Lock()
	st := w.tables[tableKey(from)]
	var rec *Record
	if st != nil && st.rec != nil {
		r := *st.rec
		rec = &r
	}
	w.mu.Unlock()
	if rec == nil {
		return
	}
	rec.Namespace, rec.Name = to.Namespace, to.Name
	if err := putRecord(ctx, w.p.deps.Store, *rec); err != nil {
		w.p.log.Warn("publish: move the record of a renamed table", "target", w.cfg.Name, "from", from.String(), "to", to.String(), "err", err)
		return // the resync pass follows it as a drop and a new table
	}
	if err := deleteRecord(ctx, w.p.deps.Store, w.cfg.Name, from); err != nil {
		w.p.log.Warn("publish: move the record of a renamed table", "target", w.cfg.Name, "from", from.String(), "to", to.String(), "err", err)
	}
	w.mu.Lock()
	delete(w.tables, tableKey(from))
	delete(w.dirty, tableKey(from))
	nst := w.stateLocked(to)
	nst.rec = rec
	if st != nil && !st.behindSince.IsZero() {
		nst.noticeLocked(st.behindSince)
	}
	w.dirty[tableKey(to)] = to
	w.mu.Unlock()
}

// publishTable is publishTableLocked under the table's lease for the
// target (Deps.Leases), with the record read again from the store once
// the lease is held. A table another replica holds is retried after
// minBackoff; force (a sync on request) fails instead, with
// catalog.ErrLeaseHeld.
func (w *worker) publishTable(ctx context.Context, id catalog.Ident, force bool) error {
	if w.p.deps.Leases == nil {
		return w.publishTableLocked(ctx, id, force)
	}
	l, ran, err := w.p.deps.Leases.Do(ctx, LeaseName(w.cfg.Name, id), false, func(ctx context.Context, _ catalog.Lease) error {
		rec, err := getRecord(ctx, w.p.deps.Store, w.cfg.Name, id)
		if err != nil {
			return err
		}
		w.mu.Lock()
		w.stateLocked(id).rec = rec
		w.mu.Unlock()
		return w.publishTableLocked(ctx, id, force)
	})
	switch {
	case ran:
		return err
	case err != nil: // the lease store failed: retried like a failed publish
		w.mu.Lock()
		st := w.stateLocked(id)
		w.mu.Unlock()
		w.failed(st, err)
		return err
	case force:
		return catalog.Errorf(catalog.ErrLeaseHeld, "table %s is being published to %s by replica %s: try again", catalog.FormatIdent(id), w.cfg.Name, l.Holder)
	}
	w.mu.Lock()
	w.stateLocked(id).retryAt = w.p.deps.Now().Add(minBackoff)
	w.dirty[tableKey(id)] = id
	w.mu.Unlock()
	return nil
}

// publishTableLocked publishes id's head to the target, or follows its
// drop; force publishes even when the record says the target is current
// (a sync on request). It records the outcome in the table's state.
func (w *worker) publishTableLocked(ctx context.Context, id catalog.Ident, force bool) error {
	w.pub.Lock()
	defer w.pub.Unlock()
	tbl, err := w.p.deps.Tables.LoadTable(ctx, id)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return w.dropped(ctx, id)
	}
	w.mu.Lock()
	st := w.stateLocked(id)
	w.mu.Unlock()
	if err != nil {
		w.failed(st, err)
		return err
	}
	covered := w.cfg.Covers(id, tbl.Properties(), w.p.deps.Owned(id))
	w.mu.Lock()
	if head := tbl.CurrentSnapshot(); head != nil {
		sid := head.SnapshotID
		st.head = &sid
	} else {
		st.head = nil
	}
	rec := st.rec
	if !covered {
		st.excluded, st.behindSince, st.nextSince, st.err, st.failures = true, time.Time{}, time.Time{}, "", 0
		if rec == nil {
			delete(w.tables, tableKey(id)) // never published: nothing to show
		}
		w.mu.Unlock()
		return nil
	}
	st.excluded = false
	if rec != nil && rec.Conflict != "" {
		w.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrConflict, rec.Conflict)
	}
	if st.behindSince.IsZero() && (rec == nil || rec.MetadataLocation != tbl.MetadataLocation()) {
		st.behindSince = firstUnpublished(tbl.Metadata(), rec)
	}
	st.publishing, st.nextSince = true, time.Time{}
	covers := st.behindSince
	w.mu.Unlock()

	err = w.publish(ctx, id, tbl, rec, force)
	now := w.p.deps.Now()
	w.mu.Lock()
	st.publishing = false
	w.mu.Unlock()
	if errors.Is(err, ErrNotDelta) {
		w.mu.Lock()
		st.unsupported, st.behindSince, st.nextSince, st.err, st.failures, st.retryAt = err.Error(), time.Time{}, time.Time{}, "", 0, time.Time{}
		w.mu.Unlock()
		return err
	}
	if err != nil {
		if errors.Is(err, ErrConflict) {
			return w.conflict(ctx, st, rec, err)
		}
		w.failed(st, err)
		return err
	}
	w.mu.Lock()
	st.unsupported = ""
	if !covers.IsZero() {
		w.p.m.publishLag.WithLabelValues(w.cfg.Name).Observe(now.Sub(covers).Seconds())
	}
	st.behindSince, st.err, st.failures, st.retryAt = st.nextSince, "", 0, time.Time{}
	w.mu.Unlock()
	return nil
}

// publish writes tbl's pointer to the target unless the record says it
// is there already, and stores the new record.
func (w *worker) publish(ctx context.Context, id catalog.Ident, tbl *table.Table, rec *Record, force bool) error {
	name, err := w.target.Name(id)
	if err != nil {
		return err
	}
	if !force && rec != nil && rec.MetadataLocation == tbl.MetadataLocation() && rec.Remote == name && !rec.TakeOver {
		return nil // current
	}
	last := Record{}
	if rec != nil {
		last = *rec
	}
	remote, version, err := w.target.Publish(ctx, id, tbl, last)
	if err != nil {
		return err
	}
	next := Record{Target: w.cfg.Name, Namespace: id.Namespace, Name: id.Name, MetadataLocation: tbl.MetadataLocation(),
		Remote: remote, RemoteVersion: version, PublishedAt: w.p.deps.Now().UTC()}
	if head := tbl.CurrentSnapshot(); head != nil {
		sid := head.SnapshotID
		next.SnapshotID, next.SequenceNumber = &sid, head.SequenceNumber
	}
	// The target holds the new pointer; a failure to record it is
	// retried, and the next attempt recognises the write as Tarn's
	// (the target's checks of an unrecorded write, glue.go).
	if err := putRecord(ctx, w.p.deps.Store, next); err != nil {
		return err
	}
	w.p.m.publishes.WithLabelValues(w.cfg.Name).Inc()
	w.mu.Lock()
	w.stateLocked(id).rec = &next
	w.mu.Unlock()
	w.p.log.Debug("published", "target", w.cfg.Name, "table", id.String(), "remote", remote, "metadata_location", next.MetadataLocation)
	return nil
}

// conflict stops the table: the record keeps what was last published
// and says why.
func (w *worker) conflict(ctx context.Context, st *tableState, rec *Record, cause error) error {
	next := Record{Target: w.cfg.Name, Namespace: st.id.Namespace, Name: st.id.Name}
	if rec != nil {
		next = *rec
	}
	next.Conflict, next.TakeOver = cause.Error(), false
	w.p.m.conflicts.WithLabelValues(w.cfg.Name).Inc()
	w.p.log.Warn("publish: conflict; publishing this table to the target stops until `tarn publish resume`",
		"target", w.cfg.Name, "table", st.id.String(), "reason", next.Conflict)
	w.mu.Lock()
	st.rec, st.err, st.failures, st.retryAt = &next, "", 0, time.Time{}
	w.mu.Unlock()
	if err := putRecord(ctx, w.p.deps.Store, next); err != nil {
		w.failed(st, err) // retried: the conflict is found again
		return err
	}
	return cause
}

// dropped follows the drop of id: the target's table is removed (drop
// mode remove, and only when it is Tarn's), then the record forgotten.
func (w *worker) dropped(ctx context.Context, id catalog.Ident) error {
	w.mu.Lock()
	st := w.tables[tableKey(id)]
	var rec *Record
	if st != nil {
		rec = st.rec
	}
	w.mu.Unlock()
	if rec == nil {
		w.mu.Lock()
		delete(w.tables, tableKey(id))
		w.mu.Unlock()
		return nil
	}
	removed := false
	if w.cfg.dropMode() == DropRemove && rec.Conflict == "" && rec.Remote != "" {
		var err error
		if removed, err = w.target.Remove(ctx, *rec); err != nil {
			w.failed(st, err)
			return err
		}
	}
	if err := deleteRecord(ctx, w.p.deps.Store, w.cfg.Name, id); err != nil {
		w.failed(st, err)
		return err
	}
	w.mu.Lock()
	if w.tables[tableKey(id)] == st {
		delete(w.tables, tableKey(id))
	}
	w.mu.Unlock()
	w.p.log.Info("publish: followed a drop", "target", w.cfg.Name, "table", id.String(), "remote", rec.Remote, "drop", w.cfg.dropMode(), "removed", removed)
	return nil
}

// failed records a failed attempt and schedules the retry: the table is
// dirty again, due after the backoff.
func (w *worker) failed(st *tableState, err error) {
	w.p.m.errors.WithLabelValues(w.cfg.Name).Inc()
	w.mu.Lock()
	first := st.err != err.Error()
	st.err = err.Error()
	st.failures++
	backoff := minBackoff << min(st.failures-1, 6)
	backoff = min(backoff, maxBackoff)
	d := backoff/2 + time.Duration(rand.Int64N(int64(backoff/2)+1))
	st.retryAt = w.p.deps.Now().Add(d)
	w.dirty[tableKey(st.id)] = st.id
	w.mu.Unlock()
	if first {
		w.p.log.Warn("publish: failed; retrying with backoff", "target", w.cfg.Name, "table", st.id.String(), "err", err)
	}
}

// firstUnpublished is when the oldest commit after rec's metadata file
// was made: the metadata log's entry after it, or md's last update when
// rec's file is not in the log (never published, or the log was
// trimmed).
func firstUnpublished(md table.Metadata, rec *Record) time.Time {
	last := time.UnixMilli(md.LastUpdatedMillis())
	if rec == nil {
		return last
	}
	logs := slices.Collect(md.PreviousFiles())
	for i, e := range logs {
		if e.MetadataFile == rec.MetadataLocation {
			if i+1 < len(logs) {
				return time.UnixMilli(logs[i+1].TimestampMs)
			}
			return last
		}
	}
	return last
}

// worker returns the worker of target name.
func (p *Publisher) worker(name string) (*worker, error) {
	for _, w := range p.workers {
		if w.cfg.Name == name {
			return w, nil
		}
	}
	return nil, fmt.Errorf("%w %q", ErrNoSuchTarget, name)
}

// targets returns the workers named (all when name is empty).
func (p *Publisher) targets(name string) ([]*worker, error) {
	if name == "" {
		return p.workers, nil
	}
	w, err := p.worker(name)
	if err != nil {
		return nil, err
	}
	return []*worker{w}, nil
}

// Resume restarts publishing table id to target (every target when
// empty) after a conflict: the next publish, run now, overwrites the
// target's table with Tarn's pointer (the operator resolved the
// conflict in Tarn's favour). Errors: ErrNoSuchTarget,
// catalog.ErrNoSuchTable, the publish's.
func (p *Publisher) Resume(ctx context.Context, target string, id catalog.Ident) (Status, error) {
	ws, err := p.targets(target)
	if err != nil {
		return Status{}, err
	}
	if _, err := p.deps.Tables.LoadTable(ctx, id); err != nil {
		return Status{}, err
	}
	var errs []error
	for _, w := range ws {
		w.pub.Lock()
		w.mu.Lock()
		st := w.tables[tableKey(id)]
		var rec *Record
		if st != nil && st.rec != nil && st.rec.Conflict != "" {
			r := *st.rec
			r.Conflict, r.TakeOver = "", true
			rec = &r
		}
		w.mu.Unlock()
		if rec != nil {
			if err := putRecord(ctx, p.deps.Store, *rec); err != nil {
				errs = append(errs, err)
			} else {
				w.mu.Lock()
				st.rec = rec
				w.mu.Unlock()
				p.log.Info("publish: resumed after a conflict", "target", w.cfg.Name, "table", id.String())
			}
		}
		w.pub.Unlock()
		if rec != nil {
			if err := w.publishTable(ctx, id, false); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", w.cfg.Name, err))
			}
		}
	}
	return p.Status(), errors.Join(errs...)
}

// Sync publishes table id to target (every target when empty) now, on
// the caller's goroutine, even when the record says it is current, and
// returns the status after it. A stopped table stays stopped (Resume).
// Errors: ErrNoSuchTarget, catalog.ErrNoSuchTable, the publish's
// (ErrConflict for a stopped table).
func (p *Publisher) Sync(ctx context.Context, target string, id catalog.Ident) (Status, error) {
	ws, err := p.targets(target)
	if err != nil {
		return Status{}, err
	}
	if _, err := p.deps.Tables.LoadTable(ctx, id); err != nil {
		return Status{}, err
	}
	var errs []error
	for _, w := range ws {
		if err := w.publishTable(ctx, id, true); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", w.cfg.Name, err))
		}
	}
	return p.Status(), errors.Join(errs...)
}

// Status is the publisher's state, as GET /management/v1/publish answers.
type Status struct {
	Targets []TargetStatus `json:"targets"`
}

// TargetStatus is one target and its tables, by name.
type TargetStatus struct {
	Name       string        `json:"name"`
	Type       string        `json:"type"`
	Namespaces []string      `json:"namespaces,omitempty"`
	Drop       string        `json:"drop"`
	Tables     []TableStatus `json:"tables"`
}

// Table states.
const (
	// StatePublished: the target points at the table's current metadata.
	StatePublished = "published"
	// StatePending: a newer commit is not published yet.
	StatePending = "pending"
	// StateFailing: the last attempt failed (Error); it is retried.
	StateFailing = "failing"
	// StateConflict: stopped (Conflict) until `tarn publish resume`.
	StateConflict = "conflict"
	// StateExcluded: the target does not cover the table any more; its
	// table there was left at the last pointer published.
	StateExcluded = "excluded"
	// StateUnsupported: the target cannot take the table (Unsupported
	// says why: a unity target and a table without a Delta view); its
	// next commit is tried again.
	StateUnsupported = "unsupported"
)

// TableStatus is one table of a target.
type TableStatus struct {
	// Table is the table's catalog.FormatIdent text, as the maintenance
	// status spells it ("sales.orders", or the TableIdentifier JSON when
	// a level or the name holds a dot): unambiguous, so a reader can
	// match it.
	Table string `json:"table"`
	State string `json:"state"`
	// Remote is the target's name of the table.
	Remote string `json:"remote,omitempty"`
	// MetadataLocation, SnapshotID and SequenceNumber are what the target
	// points at; HeadSnapshotID is main's head now.
	MetadataLocation string `json:"metadata-location,omitempty"`
	SnapshotID       *int64 `json:"snapshot-id,omitempty"`
	SequenceNumber   int64  `json:"sequence-number,omitempty"`
	HeadSnapshotID   *int64 `json:"head-snapshot-id,omitempty"`
	// LagSeconds: how long the oldest commit not published yet has
	// waited; 0 when current.
	LagSeconds    float64    `json:"lag-seconds"`
	LastPublished *time.Time `json:"last-published,omitempty"`
	// Error is the last attempt's failure (it is retried).
	Error string `json:"error,omitempty"`
	// Conflict is why publishing is stopped.
	Conflict string `json:"conflict,omitempty"`
	// Unsupported is why the target cannot take the table.
	Unsupported string `json:"unsupported,omitempty"`
}

// Status returns every target with its tables.
func (p *Publisher) Status() Status {
	out := Status{Targets: []TargetStatus{}}
	now := p.deps.Now()
	for _, w := range p.workers {
		ts := TargetStatus{Name: w.cfg.Name, Type: w.cfg.Type, Namespaces: w.cfg.Namespaces, Drop: w.cfg.dropMode(), Tables: []TableStatus{}}
		w.mu.Lock()
		for _, st := range w.tables {
			ts.Tables = append(ts.Tables, st.statusLocked(now))
		}
		w.mu.Unlock()
		slices.SortFunc(ts.Tables, func(a, b TableStatus) int {
			switch {
			case a.Table < b.Table:
				return -1
			case a.Table > b.Table:
				return 1
			}
			return 0
		})
		out.Targets = append(out.Targets, ts)
	}
	return out
}

func (st *tableState) statusLocked(now time.Time) TableStatus {
	s := TableStatus{Table: catalog.FormatIdent(st.id), HeadSnapshotID: st.head, Error: st.err, Unsupported: st.unsupported}
	if r := st.rec; r != nil {
		s.Remote, s.MetadataLocation, s.SnapshotID, s.SequenceNumber, s.Conflict = r.Remote, r.MetadataLocation, r.SnapshotID, r.SequenceNumber, r.Conflict
		if !r.PublishedAt.IsZero() {
			t := r.PublishedAt
			s.LastPublished = &t
		}
	}
	if !st.behindSince.IsZero() && !st.excluded {
		s.LagSeconds = max(now.Sub(st.behindSince).Seconds(), 0)
	}
	switch {
	case s.Conflict != "":
		s.State = StateConflict
	case st.excluded:
		s.State = StateExcluded
	case st.unsupported != "":
		s.State = StateUnsupported
	case st.err != "":
		s.State = StateFailing
	case st.behindSince.IsZero() && st.rec != nil && !st.rec.TakeOver:
		s.State = StatePublished
	default:
		s.State = StatePending
	}
	return s
}
