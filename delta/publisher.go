package delta

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/internal/errclass"
)

// Table properties of the Delta output.
const (
	// PropEnabled: "true" publishes the table as a Delta table too. Set
	// by a topic's "delta" option, or by any client (also on an owned
	// table, like the maintenance settings). "false" or absent stops
	// publishing; the log stays readable at its last version.
	PropEnabled = catalog.PropDeltaEnabled
	// PropLocation is the Delta table's root URI: the Iceberg data
	// directory (<location>/data, or write.data.path), the log in
	// <root>/_delta_log. Set by Tarn when it first publishes; read-only
	// to clients.
	PropLocation = catalog.PropDeltaLocation
	// PropCheckpointInterval: a checkpoint every this many versions
	// (default Config.CheckpointInterval).
	PropCheckpointInterval = catalog.PropDeltaCheckpointInterval
)

// TunableProperties are the Delta output's properties a REST client may
// set or remove on a table Tarn owns (the catalog's
// Config.TunablePrefixes): PropEnabled and PropCheckpointInterval, never
// PropLocation.
var TunableProperties = []string{PropEnabled, PropCheckpointInterval}

// Defaults of Config.
const (
	// DefaultCheckpointInterval is Delta's own default
	// (delta.checkpointInterval = 10): at a 1 s commit cadence a reader
	// replays at most 9 JSON commits after the checkpoint.
	DefaultCheckpointInterval = 10
	// DefaultConcurrency: tables published at the same time. A publish is
	// a few small reads and one small write; four keep the lag of many
	// tables low without crowding ingest on a small host.
	DefaultConcurrency = 4
	// DefaultResyncInterval between passes over every table, which find
	// tables whose property changed without a commit notice reaching the
	// publisher (none in one process; a safety net).
	DefaultResyncInterval = 5 * time.Minute
	// maxBackoff bounds the retry delay of a table whose publish fails.
	maxBackoff = time.Minute
)

// Config configures a Publisher. cmd/tarn fills it from its flags (the
// YAML file maps onto the flags), so it carries no yaml tags.
type Config struct {
	// CheckpointInterval: a checkpoint every this many versions;
	// DefaultCheckpointInterval when 0.
	CheckpointInterval int
	// Concurrency: tables published at once; DefaultConcurrency when 0.
	Concurrency int
	// ResyncInterval between passes over all tables;
	// DefaultResyncInterval when 0.
	ResyncInterval time.Duration
}

// ErrInvalidConfig: a Config value is out of range.
var ErrInvalidConfig = errclass.New(errclass.Internal, "invalid delta config")

// Validate reports negative values (ErrInvalidConfig).
func (c Config) Validate() error {
	if c.CheckpointInterval < 0 || c.Concurrency < 0 || c.ResyncInterval < 0 {
		return fmt.Errorf("%w: checkpoint interval %d, concurrency %d and resync interval %s must not be negative",
			ErrInvalidConfig, c.CheckpointInterval, c.Concurrency, c.ResyncInterval)
	}
	return nil
}

// ValidateProperties checks the tarn.delta.* table properties a commit
// sets: enabled must be a boolean, the checkpoint interval a positive
// integer. (Whether a client may set them at all is the catalog's rule:
// PropLocation is Tarn's.)
func ValidateProperties(props iceberg.Properties) error {
	if v, ok := props[PropEnabled]; ok {
		if _, err := strconv.ParseBool(v); err != nil {
			return fmt.Errorf("%s=%q: want true or false", PropEnabled, v)
		}
	}
	if v, ok := props[PropCheckpointInterval]; ok {
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n <= 0 {
			return fmt.Errorf("%s=%q: want a positive number of versions", PropCheckpointInterval, v)
		}
	}
	return nil
}

// Enabled reports whether props turn the Delta output on.
func Enabled(props iceberg.Properties) bool {
	b, _ := strconv.ParseBool(props[PropEnabled])
	return b
}

// Tables is what the publisher needs of the catalog. cmd/tarn implements
// it over catalog.Catalog and its warehouses.
type Tables interface {
	// LoadTable returns a table's current metadata with its FileIO.
	// Errors wrap catalog.ErrNoSuchTable for a table that is gone.
	LoadTable(ctx context.Context, id catalog.Ident) (*table.Table, error)
	// ListTables lists every table of the catalog.
	ListTables(ctx context.Context) ([]catalog.Ident, error)
	// SetProperties commits properties on the table as Tarn's own writer
	// (allowed on owned tables, and for PropLocation).
	SetProperties(ctx context.Context, id catalog.Ident, props map[string]string) error
}

// Deps are what a Publisher works on.
type Deps struct {
	Tables Tables
	// Logger; slog.Default() when nil.
	Logger *slog.Logger
	// Metrics registers the tarn_delta_* metrics; none when nil.
	Metrics prometheus.Registerer
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Publisher keeps a Delta log beside every table that asks for one
// (PropEnabled), one Delta version per Iceberg snapshot it publishes.
// It follows the catalog's commits (TableCommitted) asynchronously: a
// commit only wakes the table's worker, which publishes main's head at
// that time, so snapshots committed while it works coalesce into one
// version and ingest never waits for it. On start (Run) it catches up
// every enabled table from its log. See the package doc.
type Publisher struct {
	cfg  Config
	deps Deps
	log  *slog.Logger
	m    *metrics
	sem  chan struct{}

	mu      sync.Mutex
	tables  map[string]*runner
	ctx     context.Context // Run's; nil before
	notes   chan catalog.Ident
	resync  atomic.Bool
	running sync.WaitGroup
}

// runner is one table's log and its worker.
type runner struct {
	log     *tableLog
	wake    chan struct{}
	started bool
}

func (r *runner) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// New returns a Publisher; Run starts it. Errors: ErrInvalidConfig, a
// metric already registered with Deps.Metrics.
func New(cfg Config, deps Deps) (*Publisher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Tables == nil {
		return nil, fmt.Errorf("%w: Tables is required", ErrInvalidConfig)
	}
	if cfg.CheckpointInterval == 0 {
		cfg.CheckpointInterval = DefaultCheckpointInterval
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.ResyncInterval == 0 {
		cfg.ResyncInterval = DefaultResyncInterval
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	p := &Publisher{cfg: cfg, deps: deps, log: deps.Logger, sem: make(chan struct{}, cfg.Concurrency),
		tables: map[string]*runner{}, notes: make(chan catalog.Ident, 1024)}
	m, err := newMetrics(deps.Metrics, p)
	if err != nil {
		return nil, err
	}
	p.m = m
	return p, nil
}

// TableCommitted is the catalog's commit notice (catalog.CommitObserver):
// table id now has metadata md. It never blocks: it wakes the table's
// worker when Delta is on (or was, so that it sees it turned off).
func (p *Publisher) TableCommitted(id catalog.Ident, md table.Metadata) {
	p.mu.Lock()
	r := p.tables[id.String()]
	p.mu.Unlock()
	if r != nil && r.started {
		r.log.notice(p.deps.Now())
		r.signal()
		return
	}
	if md == nil || !Enabled(md.Properties()) {
		return
	}
	select {
	case p.notes <- id:
	default:
		p.resync.Store(true)
	}
}

// Run publishes until ctx ends: first every enabled table is caught up,
// then each commit notice is followed, with a pass over all tables every
// ResyncInterval. It returns once every worker has stopped.
func (p *Publisher) Run(ctx context.Context) {
	p.mu.Lock()
	p.ctx = ctx
	p.mu.Unlock()
	defer p.running.Wait()
	p.pass(ctx)
	t := time.NewTicker(p.cfg.ResyncInterval)
	defer t.Stop()
	check := time.NewTicker(time.Second)
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-p.notes:
			p.start(id, p.deps.Now())
		case <-check.C:
			if p.resync.Swap(false) {
				p.pass(ctx)
			}
		case <-t.C:
			p.pass(ctx)
		}
	}
}

// pass starts a worker for every table with Delta on and wakes it.
func (p *Publisher) pass(ctx context.Context) {
	ids, err := p.deps.Tables.ListTables(ctx)
	if err != nil {
		if ctx.Err() == nil {
			p.log.Warn("delta: list tables", "err", err)
		}
		return
	}
	for _, id := range ids {
		tbl, err := p.deps.Tables.LoadTable(ctx, id)
		if err != nil {
			continue
		}
		if Enabled(tbl.Properties()) {
			p.start(id, time.Time{})
		}
	}
}

// start makes sure table id has a running worker and wakes it; since,
// when set, is when the commit it follows happened.
func (p *Publisher) start(id catalog.Ident, since time.Time) {
	p.mu.Lock()
	r := p.runnerLocked(id)
	ctx := p.ctx
	spawn := !r.started && ctx != nil && ctx.Err() == nil
	if spawn {
		r.started = true
		p.running.Add(1)
	}
	p.mu.Unlock()
	if !since.IsZero() {
		r.log.notice(since)
	}
	if spawn {
		go p.work(ctx, r)
	}
	r.signal()
}

// runnerLocked returns id's runner, made if missing; p.mu held.
func (p *Publisher) runnerLocked(id catalog.Ident) *runner {
	r := p.tables[id.String()]
	if r == nil {
		r = &runner{log: newTableLog(id), wake: make(chan struct{}, 1)}
		p.tables[id.String()] = r
	}
	return r
}

func (p *Publisher) runner(id catalog.Ident) *runner {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runnerLocked(id)
}

// work is a table's worker: one publish per wake-up, retried with a
// jittered backoff (1 s doubling to a minute) while it fails.
func (p *Publisher) work(ctx context.Context, r *runner) {
	defer p.running.Done()
	backoff := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		}
		select {
		case <-ctx.Done():
			return
		case p.sem <- struct{}{}:
		}
		gone, err := p.publishOnce(ctx, r)
		<-p.sem
		if gone {
			p.mu.Lock()
			if p.tables[r.log.id.String()] == r {
				delete(p.tables, r.log.id.String())
			}
			p.mu.Unlock()
			return
		}
		if err == nil || ctx.Err() != nil {
			backoff = 0
			continue
		}
		backoff = min(max(2*backoff, time.Second), maxBackoff)
		d := backoff/2 + time.Duration(rand.Int64N(int64(backoff/2)+1))
		time.AfterFunc(d, r.signal)
	}
}

// publishOnce publishes one table's head; gone is true when the table
// no longer exists.
func (p *Publisher) publishOnce(ctx context.Context, r *runner) (gone bool, err error) {
	t := r.log
	tbl, err := p.deps.Tables.LoadTable(ctx, t.id)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return true, nil
	}
	if err != nil {
		p.failed(t, err)
		return false, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	covered := t.begin()
	if !Enabled(tbl.Properties()) {
		t.finish(covered, true)
		t.smu.Lock()
		t.status.Enabled, t.status.Error = false, ""
		t.smu.Unlock()
		return false, nil
	}
	res, err := t.publish(ctx, tbl, p.cfg, p.deps.Now)
	if err != nil {
		t.finish(covered, false)
		p.failed(t, err)
		return false, err
	}
	t.finish(covered, true)
	now := p.deps.Now()
	if !res.upToDate {
		p.m.commits.Inc()
		if !covered.IsZero() {
			p.m.publishLag.Observe(now.Sub(covered).Seconds())
		}
	}
	if res.checkpoint {
		p.m.checkpoints.Inc()
	}
	t.updateStatus(tbl, now, !res.upToDate)
	if tbl.Properties()[PropLocation] != t.root {
		if err := p.deps.Tables.SetProperties(ctx, t.id, map[string]string{PropLocation: t.root}); err != nil {
			p.log.Warn("delta: record the Delta location", "table", t.id.String(), "err", err)
		}
	}
	if !res.upToDate {
		p.log.Debug("delta version written", "table", t.id.String(), "version", res.version, "checkpoint", res.checkpoint)
	}
	return false, nil
}

func (p *Publisher) failed(t *tableLog, err error) {
	p.m.errors.Inc()
	t.smu.Lock()
	first := t.status.Error != err.Error()
	t.status.Error = err.Error()
	t.smu.Unlock()
	if first {
		p.log.Warn("delta: publish", "table", t.id.String(), "err", err)
	}
}

// notice records a commit the log may not reflect yet.
func (t *tableLog) notice(at time.Time) {
	t.smu.Lock()
	defer t.smu.Unlock()
	if t.behindSince.IsZero() || at.Before(t.behindSince) {
		t.behindSince = at
	}
	if t.publishing && t.nextSince.IsZero() {
		t.nextSince = at
	}
}

// begin marks a publish as started and returns the time of the oldest
// commit it covers (zero if none was noticed).
func (t *tableLog) begin() time.Time {
	t.smu.Lock()
	defer t.smu.Unlock()
	t.publishing, t.nextSince = true, time.Time{}
	return t.behindSince
}

// finish ends a publish: after a success the log reflects every commit
// noticed before it began; those noticed since are still pending.
func (t *tableLog) finish(covered time.Time, ok bool) {
	t.smu.Lock()
	defer t.smu.Unlock()
	t.publishing = false
	if ok {
		t.behindSince = t.nextSince
	}
}

// updateStatus records what the log reflects after a publish. mu held.
func (t *tableLog) updateStatus(tbl *table.Table, now time.Time, wrote bool) {
	st := t.st
	md := tbl.Metadata()
	t.smu.Lock()
	defer t.smu.Unlock()
	s := &t.status
	s.Enabled, s.Error, s.Location = true, "", t.root
	v := st.version
	s.Version = &v
	p := *st.protocol
	s.Protocol = &p
	if wrote || s.LastPublished == nil {
		ts := time.UnixMilli(st.timestampMs).UTC()
		s.LastPublished = &ts
	}
	s.fill(md, st)
	_ = now
}

// fill sets the snapshot fields of s from md and the log state st.
func (s *TableStatus) fill(md table.Metadata, st *state) {
	s.SnapshotID, s.SequenceNumber, s.HeadSnapshotID = nil, nil, nil
	if head := md.CurrentSnapshot(); head != nil {
		id := head.SnapshotID
		s.HeadSnapshotID = &id
	}
	if st == nil || st.metadata == nil {
		return
	}
	if tx, ok := st.txns[st.metadata.ID]; ok {
		seq := tx.Version
		s.SequenceNumber = &seq
		for _, snap := range md.Snapshots() {
			if snap.SequenceNumber == seq {
				id := snap.SnapshotID
				s.SnapshotID = &id
			}
		}
	}
}

// TableStatus is one table's Delta output, as GET
// /management/v1/tables/{table}/formats shows it.
type TableStatus struct {
	Table   string `json:"table"`
	Enabled bool   `json:"enabled"`
	// Location is the Delta table's root URI (PropLocation); empty
	// before the first version.
	Location string `json:"location,omitempty"`
	// Version is the newest Delta version; OldestVersion the oldest
	// the log still holds after its cleanup (when one ran).
	Version       *int64 `json:"version,omitempty"`
	OldestVersion *int64 `json:"oldest-version,omitempty"`
	// SnapshotID and SequenceNumber name the Iceberg snapshot Version
	// reflects (SnapshotID absent once that snapshot expired);
	// HeadSnapshotID is main's head now.
	SnapshotID     *int64 `json:"snapshot-id,omitempty"`
	SequenceNumber *int64 `json:"sequence-number,omitempty"`
	HeadSnapshotID *int64 `json:"head-snapshot-id,omitempty"`
	// LagSeconds: how long the oldest Iceberg commit not reflected yet
	// has waited; 0 when caught up.
	LagSeconds float64 `json:"lag-seconds"`
	// LastPublished is the commit time of Version.
	LastPublished *time.Time `json:"last-published,omitempty"`
	Protocol      *Protocol  `json:"protocol,omitempty"`
	// Omitted are Iceberg columns the Delta schema leaves out, and why.
	Omitted []Omitted `json:"omitted-columns,omitempty"`
	// Error is why the last publish failed (it is retried).
	Error string `json:"error,omitempty"`
}

// current returns the status with the lag as of now. smu held.
func (t *tableLog) current(now time.Time) TableStatus {
	s := t.status
	s.Omitted = slices.Clone(s.Omitted)
	if !t.behindSince.IsZero() && s.Enabled {
		s.LagSeconds = now.Sub(t.behindSince).Seconds()
	}
	return s
}

func (p *Publisher) statuses() []TableStatus {
	p.mu.Lock()
	rs := make([]*runner, 0, len(p.tables))
	for _, r := range p.tables {
		rs = append(rs, r)
	}
	p.mu.Unlock()
	now := p.deps.Now()
	out := make([]TableStatus, 0, len(rs))
	for _, r := range rs {
		r.log.smu.Lock()
		out = append(out, r.log.current(now))
		r.log.smu.Unlock()
	}
	return out
}

// Formats is one table's formats, as GET
// /management/v1/tables/{table}/formats answers.
type Formats struct {
	Table   string        `json:"table"`
	Iceberg IcebergFormat `json:"iceberg"`
	Delta   TableStatus   `json:"delta"`
}

// IcebergFormat is the Iceberg side: the metadata file and main's head.
type IcebergFormat struct {
	MetadataLocation string `json:"metadata-location"`
	SnapshotID       *int64 `json:"snapshot-id,omitempty"`
	SequenceNumber   int64  `json:"sequence-number"`
}

// Formats returns table id's formats: its Iceberg head and its Delta
// log (read from storage when the publisher has not opened it: a table
// whose Delta output was turned off still shows its last version).
// Errors: catalog.ErrNoSuchTable, the log's.
func (p *Publisher) Formats(ctx context.Context, id catalog.Ident) (Formats, error) {
	tbl, err := p.deps.Tables.LoadTable(ctx, id)
	if err != nil {
		return Formats{}, err
	}
	out := Formats{Table: id.String(), Iceberg: IcebergFormat{MetadataLocation: tbl.MetadataLocation()}}
	if head := tbl.CurrentSnapshot(); head != nil {
		sid := head.SnapshotID
		out.Iceberg.SnapshotID, out.Iceberg.SequenceNumber = &sid, head.SequenceNumber
	}
	r := p.runner(id)
	t := r.log
	t.mu.Lock()
	defer t.mu.Unlock()
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return out, err
	}
	if err := t.open(ctx, tbl, fsys); err != nil {
		return out, err
	}
	t.smu.Lock()
	defer t.smu.Unlock()
	if !r.started || t.status.Location == "" {
		// Not published by this process (or its runner has not finished
		// a first publish yet, whose status would say so: the log may
		// already reflect the head, written before a restart): describe
		// the log as stored.
		t.status.Enabled = Enabled(tbl.Properties())
		if t.st.version >= 0 {
			v := t.st.version
			t.status.Version, t.status.Location = &v, t.root
			pr := *t.st.protocol
			t.status.Protocol = &pr
			ts := time.UnixMilli(t.st.timestampMs).UTC()
			t.status.LastPublished = &ts
		}
	}
	t.status.fill(tbl.Metadata(), t.st)
	out.Delta = t.current(p.deps.Now())
	return out, nil
}

// KeepFiles returns what maintenance must not delete of table id for
// the Delta log's sake: every file under <root>/_delta_log (the log
// itself; Iceberg's metadata does not name it, so orphan removal would
// take it for an orphan) and every data file a retained Delta version
// names (the live files of the newest version and the tombstones the
// cleanup has not dropped: files removed after the oldest retained
// version). It reads the log when this process has not, so it holds
// for a table whose Delta output was turned off too. It fails closed:
// an error (an unreadable log) means nothing may be deleted.
func (p *Publisher) KeepFiles(ctx context.Context, id catalog.Ident) (func(path string) bool, error) {
	tbl, err := p.deps.Tables.LoadTable(ctx, id)
	if err != nil {
		return nil, err
	}
	t := p.runner(id).log
	t.mu.Lock()
	defer t.mu.Unlock()
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	if err := t.open(ctx, tbl, fsys); err != nil {
		return nil, fmt.Errorf("read the Delta log of %s: %w", id, err)
	}
	keep := map[string]bool{}
	for _, a := range t.st.files {
		keep[icebergPath(t.root, a.Path)] = true
	}
	for _, r := range t.st.tombstones {
		keep[icebergPath(t.root, r.Path)] = true
	}
	prefix := t.root + "/" + logDir + "/"
	return func(path string) bool { return keep[path] || strings.HasPrefix(path, prefix) }, nil
}

// Publish publishes table id's head now, on the caller's goroutine (the
// worker does the same on a commit notice): for tests and for a run on
// request. It returns the table's status after it.
func (p *Publisher) Publish(ctx context.Context, id catalog.Ident) (TableStatus, error) {
	r := p.runner(id)
	if _, err := p.publishOnce(ctx, r); err != nil {
		return TableStatus{}, err
	}
	r.log.smu.Lock()
	defer r.log.smu.Unlock()
	return r.log.current(p.deps.Now()), nil
}
