package maintenance

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/internal/errclass"
	"github.com/tarnhq/tarn/internal/recovery"
)

// Defaults of the scheduler (tarn serve --maintenance-*).
const (
	// DefaultInterval between two passes over the tables. At a 1 s commit
	// cadence a partition gains about 60 files between passes, which
	// bounds its live files near DefaultCompactMinFiles + 60.
	DefaultInterval = time.Minute
	// DefaultConcurrency: tables maintained at the same time. Compaction
	// reads and writes whole partitions; two keep a small host responsive.
	DefaultConcurrency = 2
	// jobTimeout bounds one job on one table.
	jobTimeout = 30 * time.Minute
)

// Config configures a Scheduler.
type Config struct {
	// Interval between passes; DefaultInterval when 0. Each pass is
	// delayed by a random 0–10 % of it, so replicas and tables drift apart.
	Interval time.Duration
	// Concurrency: tables maintained at once; DefaultConcurrency when 0.
	Concurrency int
	// Disabled turns the periodic passes off; runs on request still work.
	Disabled bool
}

// ErrInvalidConfig: a Config value is out of range.
var ErrInvalidConfig = errclass.New(errclass.Internal, "invalid maintenance config")

// Validate reports a negative interval or concurrency (ErrInvalidConfig).
func (c Config) Validate() error {
	if c.Interval < 0 || (c.Interval > 0 && c.Interval < time.Second) {
		return fmt.Errorf("%w: interval %s must be at least 1s", ErrInvalidConfig, c.Interval)
	}
	if c.Concurrency < 0 {
		return fmt.Errorf("%w: concurrency %d is negative", ErrInvalidConfig, c.Concurrency)
	}
	return nil
}

// Deps are what a Scheduler works on.
type Deps struct {
	// Catalog's tables are maintained, each through its own warehouse
	// (Catalog.TableWarehouse).
	Catalog *catalog.Catalog
	// Owned reports whether Tarn owns a table (ingest/topics' Manager:
	// a topic names it); owned tables are maintained by default. Nil: none.
	Owned func(catalog.Ident) bool
	// Logger; slog.Default() when nil.
	Logger *slog.Logger
	// Metrics registers the maintenance metrics and its share of
	// tarn_panics_recovered_total; none when nil.
	Metrics prometheus.Registerer
	// Keep, when set, returns the files of table id that expiry and
	// orphan removal must not delete although Iceberg no longer needs
	// them (the Delta log and the data files its retained versions name:
	// delta.Publisher.KeepFiles). An error fails the job before it
	// deletes anything.
	Keep func(ctx context.Context, id catalog.Ident) (func(path string) bool, error)
	// Leases, when set, makes a table's maintenance run on one replica
	// of those sharing the store: a pass maintains only the tables whose
	// lease (LeaseName) this replica holds or takes, and keeps it (a
	// table stays on its replica until that one stops or dies; then
	// another takes it once the lease lapsed); a job's context ends when
	// the lease is lost. nil: every table is this process's (one
	// process on its own store).
	Leases *catalog.LeaseKeeper
}

// LeaseName is the name of table id's maintenance lease.
func LeaseName(id catalog.Ident) string { return "maintenance/" + catalog.FormatIdent(id) }

// Scheduler runs the maintenance jobs over the catalog's tables: one pass
// per Interval, at most Concurrency tables at a time, each table's jobs in
// Jobs order, one job on a table at a time (a run on request waits for a
// pass's job on the same table).
//
// Progress is kept in memory: after a restart every job is due once
// (orphan removal included), and the status starts empty.
//
// A table's state (its run lock, status and per-table metric series) is
// kept while the catalog lists it: a pass forgets the tables its listing
// no longer has (dropped or renamed, here or by another replica; see
// forgetUnlisted).
//
// Lock order: a table's run lock, then mu; mu is never held across a job.
type Scheduler struct {
	cfg  Config
	deps Deps
	log  *slog.Logger
	m    *metrics

	mu       sync.Mutex
	tables   map[string]*tableState
	runLocks map[string]*runLock
	// runs counts runTable calls; runLock.seen is the count at the
	// table's last one, so a pass tells a run that began after its
	// listing (of a table created since) from one before it.
	runs     uint64
	lastPass time.Time
}

// runLock serializes the jobs on one table. users (under Scheduler.mu)
// counts the runTable calls holding or waiting for it; seen is
// Scheduler.runs at the last one's start.
type runLock struct {
	sync.Mutex
	users int
	seen  uint64
}

type tableState struct {
	TableStatus
	lastOrphans time.Time
}

// Status is the body of GET /management/v1/maintenance.
type Status struct {
	Enabled     bool       `json:"enabled"`
	IntervalMs  int64      `json:"interval-ms"`
	Concurrency int        `json:"concurrency"`
	LastPass    *time.Time `json:"last-pass,omitempty"`
	// Tables are those seen by a pass or a run, by name.
	Tables []TableStatus `json:"tables"`
}

// TableStatus is one table's maintenance state.
type TableStatus struct {
	// Table is the table's catalog.FormatIdent text ("sales.orders", or
	// {"namespace":["sales.eu"],"name":"orders"}).
	Table   string `json:"table"`
	Owned   bool   `json:"owned"`
	Enabled bool   `json:"enabled"`
	// Files, Bytes and Snapshots as of the last job: live data files and
	// their bytes in main's head, snapshots in the metadata.
	Files     int64                `json:"files"`
	Bytes     int64                `json:"bytes"`
	Snapshots int                  `json:"snapshots"`
	Jobs      map[string]JobStatus `json:"jobs"`
}

// JobStatus is one job's history on one table (since this process started).
type JobStatus struct {
	LastRun    *time.Time `json:"last-run,omitempty"`
	LastResult *Result    `json:"last-result,omitempty"`
	LastError  string     `json:"last-error,omitempty"`
	Runs       int64      `json:"runs"`
	Failures   int64      `json:"failures"`
}

// New returns a Scheduler; Run starts its passes. Errors: ErrInvalidConfig;
// a metric already registered with Deps.Metrics.
func New(cfg Config, deps Deps) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Catalog == nil {
		return nil, fmt.Errorf("%w: a catalog is required", ErrInvalidConfig)
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	m, err := newMetrics(deps.Metrics)
	if err != nil {
		return nil, err
	}
	return &Scheduler{cfg: cfg, deps: deps, log: deps.Logger, m: m,
		tables: map[string]*tableState{}, runLocks: map[string]*runLock{}}, nil
}

// Run passes over the tables every Interval (jittered) until ctx ends.
// With Config.Disabled it only waits for ctx.
func (s *Scheduler) Run(ctx context.Context) {
	if s.cfg.Disabled {
		<-ctx.Done()
		return
	}
	for {
		d := s.cfg.Interval + time.Duration(rand.Int64N(int64(s.cfg.Interval)/10+1))
		select {
		case <-ctx.Done():
			return
		case <-time.After(d):
		}
		if err := s.m.panics.Call(recovery.Maintenance, func() error { return s.Pass(ctx) }); err != nil && ctx.Err() == nil {
			s.log.Warn("maintenance pass", "err", err)
		}
	}
}

// Pass runs the due jobs on every enabled table once, Concurrency tables
// at a time, in random order, after forgetting the tables the catalog no
// longer lists. Job errors are logged and kept in the status; the error
// returned is the table listing's.
func (s *Scheduler) Pass(ctx context.Context) error {
	s.mu.Lock()
	before := s.runs
	s.mu.Unlock()
	ids, err := s.listTables(ctx)
	if err != nil {
		return err
	}
	s.forgetUnlisted(ids, before)
	rand.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	sem := make(chan struct{}, s.cfg.Concurrency)
	var wg sync.WaitGroup
	for _, id := range ids {
		select {
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		case sem <- struct{}{}:
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			// A job's panic is its failure (runJob); one elsewhere on
			// the way is logged here and ends only this table's turn.
			s.m.panics.Run(s.log, "maintenance of "+catalog.FormatIdent(id), func() { _, _ = s.leased(ctx, id, nil, false) })
		}()
	}
	wg.Wait()
	s.mu.Lock()
	s.lastPass = time.Now()
	s.mu.Unlock()
	return nil
}

// RunJobs runs jobs (all of Jobs when empty) on table id now, whether or
// not they are due and whether or not the table is enabled, and returns
// their results in order. It waits for a job already running on the table.
//
// Errors: ErrUnknownJob; catalog.ErrNoSuchTable; the first job error
// (the results up to it are returned with it).
func (s *Scheduler) RunJobs(ctx context.Context, id catalog.Ident, jobs []string) ([]Result, error) {
	for _, j := range jobs {
		if !slices.Contains(Jobs, j) {
			return nil, fmt.Errorf("%w %q (one of %v)", ErrUnknownJob, j, Jobs)
		}
	}
	if len(jobs) == 0 {
		jobs = Jobs
	}
	if _, err := s.deps.Catalog.TableWarehouse(ctx, id); err != nil {
		return nil, err
	}
	return s.leased(ctx, id, jobs, true)
}

// leased is runTable under the table's lease (Deps.Leases). A table
// whose lease another replica holds is that replica's: a pass skips it
// (nil, nil) and a run on request fails with catalog.ErrLeaseHeld
// naming the holder, where it can be run.
func (s *Scheduler) leased(ctx context.Context, id catalog.Ident, jobs []string, force bool) ([]Result, error) {
	if s.deps.Leases == nil {
		return s.runTable(ctx, id, jobs, force)
	}
	var results []Result
	l, ran, err := s.deps.Leases.Do(ctx, LeaseName(id), true, func(ctx context.Context, _ catalog.Lease) error {
		var err error
		results, err = s.runTable(ctx, id, jobs, force)
		return err
	})
	switch {
	case err != nil:
		return results, err
	case !ran && force:
		return nil, catalog.Errorf(catalog.ErrLeaseHeld, "maintenance of table %s runs on replica %s (lease epoch %d): run it there", catalog.FormatIdent(id), l.Holder, l.Epoch)
	case !ran:
		s.log.Debug("maintenance: table held by another replica", "table", catalog.FormatIdent(id), "holder", l.Holder)
	}
	return results, nil
}

// runTable runs jobs on id (nil: every due job of an enabled table).
func (s *Scheduler) runTable(ctx context.Context, id catalog.Ident, jobs []string, force bool) ([]Result, error) {
	key := catalog.FormatIdent(id) // one state and lock per table, dots in names or not
	s.mu.Lock()
	lock := s.runLocks[key]
	if lock == nil {
		lock = &runLock{}
		s.runLocks[key] = lock
	}
	s.runs++
	lock.users++
	lock.seen = s.runs
	s.mu.Unlock()
	lock.Lock()
	defer func() {
		lock.Unlock()
		s.mu.Lock()
		lock.users--
		s.mu.Unlock()
	}()

	wh, err := s.deps.Catalog.TableWarehouse(ctx, id)
	if err != nil {
		return nil, err
	}
	io := s.deps.Catalog.TableIO(wh)
	ident := append(table.Identifier{}, id.Namespace...)
	ident = append(ident, id.Name)
	tbl, err := io.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	owned := s.deps.Owned != nil && s.deps.Owned(id)
	pol := PolicyOf(tbl.Properties(), owned)
	st := s.state(key, owned, pol.Enabled)
	s.refresh(ctx, st, tbl)
	if jobs == nil {
		if !pol.Enabled {
			return nil, nil
		}
		jobs = s.due(st, pol)
	}

	t := &target{io: io, cat: s.deps.Catalog, ident: ident, pol: pol, force: force, log: s.log, id: id, keep: s.deps.Keep}
	var results []Result
	for _, j := range jobs {
		r, err := s.runJob(ctx, t, j)
		s.record(st, r, err)
		if r.Job == JobOrphans && err == nil {
			s.mu.Lock()
			st.lastOrphans = time.Now()
			s.mu.Unlock()
		}
		if tbl, lerr := io.LoadTable(ctx, ident); lerr == nil {
			s.refresh(ctx, st, tbl)
		}
		results = append(results, r)
		if err != nil {
			s.log.Warn("maintenance job failed", "table", key, "job", j, "err", err)
			return results, err
		}
		if r.Skipped == "" {
			s.log.Info("maintenance job", "table", key, "job", j, "files_before", r.FilesBefore, "files_after", r.FilesAfter,
				"files_rewritten", r.FilesRewritten, "snapshots_expired", r.SnapshotsExpired, "orphans_removed", r.OrphansRemoved,
				"attempts", r.Attempts, "duration_ms", r.DurationMs)
		}
	}
	return results, nil
}

// due returns the jobs a pass runs on a table: all but orphan removal,
// which waits OrphanInterval since its last success.
func (s *Scheduler) due(st *tableState, pol Policy) []string {
	s.mu.Lock()
	last := st.lastOrphans
	s.mu.Unlock()
	var jobs []string
	for _, j := range Jobs {
		if j == JobOrphans && !last.IsZero() && time.Since(last) < pol.OrphanInterval {
			continue
		}
		jobs = append(jobs, j)
	}
	return jobs
}

func (s *Scheduler) runJob(ctx context.Context, t *target, job string) (r Result, err error) {
	ctx, cancel := context.WithTimeout(ctx, jobTimeout)
	defer cancel()
	start := time.Now()
	defer func() {
		r.DurationMs = time.Since(start).Milliseconds()
		s.m.observe(r, err)
	}()
	// A panic in a job (a bug, metadata nothing checked) is that job's
	// failure: recorded, counted and logged like any other, and the
	// process and the other tables' maintenance carry on.
	defer s.m.panics.Recover(recovery.Maintenance, &err)
	r = Result{Table: t.name(), Job: job} // what a panicking job reports
	switch job {
	case JobCompact:
		r, err = compact(ctx, t)
	case JobTag:
		r, err = tagHead(ctx, t)
	case JobExpire:
		r, err = expire(ctx, t)
	case JobManifests:
		r, err = rewriteManifests(ctx, t)
	case JobOrphans:
		r, err = removeOrphans(ctx, t)
	}
	return r, err
}

func (s *Scheduler) state(key string, owned, enabled bool) *tableState {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.tables[key]
	if st == nil {
		st = &tableState{TableStatus: TableStatus{Table: key, Jobs: map[string]JobStatus{}}}
		s.tables[key] = st
	}
	st.Owned, st.Enabled = owned, enabled
	return st
}

func (s *Scheduler) record(st *tableState, r Result, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	js := st.Jobs[r.Job]
	now := time.Now()
	js.LastRun, js.LastResult = &now, &r
	js.Runs++
	js.LastError = ""
	if err != nil {
		js.Failures++
		js.LastError = err.Error()
	}
	st.Jobs[r.Job] = js
}

// refresh updates st's and the gauges' file, byte and snapshot counts.
// The byte count is the head's total-files-size, 0 for a head whose
// writer left the summary totals out (the spec makes them optional).
func (s *Scheduler) refresh(ctx context.Context, st *tableState, tbl *table.Table) {
	files := liveFiles(ctx, tbl)
	bytes, _ := summaryInt(tbl.CurrentSnapshot(), "total-files-size")
	snaps := len(tbl.Metadata().Snapshots())
	s.mu.Lock()
	st.Files, st.Bytes, st.Snapshots = files, bytes, snaps
	s.mu.Unlock()
	s.m.files.WithLabelValues(st.Table).Set(float64(files))
	s.m.bytes.WithLabelValues(st.Table).Set(float64(bytes))
	s.m.snapshots.WithLabelValues(st.Table).Set(float64(snaps))
}

// Status returns the scheduler's settings and every table's state, by name.
func (s *Scheduler) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Status{Enabled: !s.cfg.Disabled, IntervalMs: s.cfg.Interval.Milliseconds(), Concurrency: s.cfg.Concurrency,
		Tables: []TableStatus{}}
	if !s.lastPass.IsZero() {
		lp := s.lastPass
		out.LastPass = &lp
	}
	for _, st := range s.tables {
		ts := st.TableStatus
		ts.Jobs = make(map[string]JobStatus, len(st.Jobs))
		for k, v := range st.Jobs {
			ts.Jobs[k] = v
		}
		out.Tables = append(out.Tables, ts)
	}
	slices.SortFunc(out.Tables, func(a, b TableStatus) int {
		switch {
		case a.Table < b.Table:
			return -1
		case a.Table > b.Table:
			return 1
		}
		return 0
	})
	return out
}

// forgetUnlisted drops the run lock, status and per-table metric series
// of every table not in listed, the catalog's tables as listed after
// runs was before: dropped (or renamed) tables, which would otherwise be
// kept, reported and exported for the life of the process.
//
// A table is kept while a runTable holds or waits for its lock (users),
// and when a runTable began after the listing started (seen > before):
// a table created since, run on request, that the listing may not show.
// Forgetting a table between two of its runs is harmless: the next one
// starts its status afresh.
func (s *Scheduler) forgetUnlisted(listed []catalog.Ident, before uint64) {
	keep := make(map[string]bool, len(listed))
	for _, id := range listed {
		keep[catalog.FormatIdent(id)] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, lock := range s.runLocks {
		if keep[key] || lock.users > 0 || lock.seen > before {
			continue
		}
		delete(s.runLocks, key)
		delete(s.tables, key)
		s.m.forget(key)
		if s.deps.Leases != nil {
			// The table is gone: its lease goes too (never held across
			// a job: its users are 0). Released off the lock: a store call.
			name := "maintenance/" + key
			go s.deps.Leases.Release(context.Background(), name)
		}
	}
}

// listTables lists every table of the catalog.
func (s *Scheduler) listTables(ctx context.Context) ([]catalog.Ident, error) {
	return s.deps.Catalog.AllTables(ctx)
}
