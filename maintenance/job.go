package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/offsets"
)

// Job names, as the API and CLI spell them.
const (
	JobCompact   = "compact"
	JobExpire    = "expire"
	JobOrphans   = "orphans"
	JobManifests = "manifests"
	JobTag       = "tag"
)

// Jobs lists the job names in the order a pass runs them: compaction
// first (it leaves the replaced files to the snapshots expiry drops),
// then tagging (before expiry, so the head it tags is kept), expiry
// (whose commit deletes the files only expired snapshots referenced),
// manifest rewriting, and orphan removal last.
var Jobs = []string{JobCompact, JobTag, JobExpire, JobManifests, JobOrphans}

// Result is what one run of a job did to one table. Counts are of this run.
type Result struct {
	// Table is the table's catalog.FormatIdent text.
	Table string `json:"table"`
	Job   string `json:"job"`
	// Skipped says why the job did nothing ("not due", "nothing to
	// compact", "yielded to concurrent commits"); empty when it acted.
	Skipped string `json:"skipped,omitempty"`
	// FilesBefore and FilesAfter: live data files in main's head.
	FilesBefore int64 `json:"files-before"`
	FilesAfter  int64 `json:"files-after"`
	// FilesRewritten were replaced by FilesAdded (compaction), with
	// BytesRewritten read.
	FilesRewritten int   `json:"files-rewritten,omitempty"`
	FilesAdded     int   `json:"files-added,omitempty"`
	BytesRewritten int64 `json:"bytes-rewritten,omitempty"`
	// SnapshotsExpired were removed from the metadata (expiry).
	SnapshotsExpired int `json:"snapshots-expired,omitempty"`
	// Tag is the tag made on main's head (tagging).
	Tag string `json:"tag,omitempty"`
	// OrphansRemoved files (OrphanBytes bytes) were deleted; OrphansHeld
	// were unreferenced but held by an in-process writer or needed by
	// the Delta log (Deps.Keep), and kept.
	OrphansRemoved int   `json:"orphans-removed,omitempty"`
	OrphanBytes    int64 `json:"orphan-bytes,omitempty"`
	OrphansHeld    int   `json:"orphans-held,omitempty"`
	// FilesOutside are files the head names outside the table's
	// recorded directories (data and delete files compaction left as they
	// are, or the manifests that made the job skip): never read for it.
	FilesOutside int `json:"files-outside,omitempty"`
	// ManifestsBefore and ManifestsAfter: manifests of main's head
	// (manifest rewriting).
	ManifestsBefore int `json:"manifests-before,omitempty"`
	ManifestsAfter  int `json:"manifests-after,omitempty"`
	// Attempts is the number of commits tried (conflicts with ingest
	// cost one each).
	Attempts   int   `json:"attempts,omitempty"`
	DurationMs int64 `json:"duration-ms"`
}

// ErrUnknownJob: the job name is not one of Jobs.
var ErrUnknownJob = fmt.Errorf("%w: unknown maintenance job", catalog.ErrInvalidArgument)

// maxCommitAttempts bounds how often a job re-stages its commit on a head
// that moved (an ingest commit landed); past it the job yields until the
// next pass. At a 1 s ingest cadence a re-stage takes milliseconds, so a
// handful of attempts wins almost always.
const maxCommitAttempts = 10

// target is one table a job runs on.
type target struct {
	io    *catalog.TableIO
	cat   *catalog.Catalog
	ident table.Identifier
	pol   Policy
	// force: run even when not due (tarn maintenance run).
	force bool
	log   *slog.Logger
	id    catalog.Ident
	// keep is Deps.Keep.
	keep func(ctx context.Context, id catalog.Ident) (func(path string) bool, error)
}

// kept returns the files the job must not delete beyond Iceberg's own
// rules (Deps.Keep); none when no Keep is set.
func (t *target) kept(ctx context.Context) (func(path string) bool, error) {
	if t.keep == nil {
		return func(string) bool { return false }, nil
	}
	k, err := t.keep(ctx, t.id)
	if err != nil {
		return nil, fmt.Errorf("files %s must keep: %w", t.name(), err)
	}
	return k, nil
}

// name is the table's unambiguous text (catalog.FormatIdent): what the
// status, results, logs and the table label of metrics carry, so that
// ["sales", "eu"].orders and ["sales.eu"].orders stay apart.
func (t *target) name() string {
	return catalog.FormatIdent(catalog.Ident{Namespace: catalog.Namespace(t.ident[:len(t.ident)-1]), Name: t.ident[len(t.ident)-1]})
}

func (t *target) load(ctx context.Context) (*table.Table, error) {
	return t.io.LoadTable(ctx, t.ident)
}

// loadConfined loads the table for a job that writes what it reads into
// it (compaction, manifest rewriting): its FileIO reads only inside the
// table's recorded directories (catalog.TableIO.ConfineReads), and inside
// tells a file there from one elsewhere.
func (t *target) loadConfined(ctx context.Context) (tbl *table.Table, inside func(string) bool, err error) {
	if tbl, err = t.load(ctx); err != nil {
		return nil, nil, err
	}
	return t.io.ConfineReads(ctx, tbl)
}

// reasonOutside is the reason files outside the table's directories are
// skipped, in logs and in tarn_maintenance_files_skipped_total.
const reasonOutside = "outside-table-directories"

// skipOutside logs the files of a job's table that lie outside its
// directories and that the job leaves unread: a client committed them
// into the table's metadata (add_files of another table's path), and
// Tarn reads with its own storage credentials, not the client's.
func (t *target) skipOutside(job string, files []string) {
	if len(files) == 0 {
		return
	}
	t.log.Warn("maintenance left files outside the table's directories unread", "table", t.name(), "job", job,
		"files", len(files), "first", files[:min(len(files), 5)], "reason", reasonOutside)
}

// outsideManifests returns head's manifest list, or else its manifests,
// that lie outside the table's directories: reading them would read
// another table's metadata for this one. fs is the table's confined IO.
func outsideManifests(head *table.Snapshot, fs icebergio.IO, inside func(string) bool) ([]string, error) {
	if head.ManifestList != "" && !inside(head.ManifestList) {
		return []string{head.ManifestList}, nil
	}
	var out []string
	for _, m := range head.ManifestLocations {
		if !inside(m) {
			out = append(out, m)
		}
	}
	if len(out) > 0 || head.ManifestList == "" {
		return out, nil
	}
	ms, err := head.Manifests(fs)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		if !inside(m.FilePath()) {
			out = append(out, m.FilePath())
		}
	}
	return out, nil
}

// head is main's head of a table loaded for a job that rewrites it
// (compaction, manifest rewriting): the table with its confined FileIO
// (loadConfined), the snapshot, and inside, which tells a file in the
// table's directories from one elsewhere.
type head struct {
	tbl    *table.Table
	snap   *table.Snapshot
	fs     icebergio.IO
	inside func(string) bool
}

// loadHead loads main's head for job and sets res's file counts. It
// returns nil, with res.Skipped set, when there is nothing the job may
// rewrite: no snapshot, or a head whose manifest list or manifests lie
// outside the table's directories (reading them would read another
// table's metadata for this one; they are logged and counted in
// res.FilesOutside).
func (t *target) loadHead(ctx context.Context, job string, res *Result) (*head, error) {
	tbl, inside, err := t.loadConfined(ctx)
	if err != nil {
		return nil, err
	}
	res.FilesBefore = liveFiles(ctx, tbl)
	res.FilesAfter = res.FilesBefore
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		res.Skipped = "no snapshot"
		return nil, nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	if out, err := outsideManifests(snap, fs, inside); err != nil {
		return nil, fmt.Errorf("read the manifests of %s: %w", t.name(), err)
	} else if len(out) > 0 {
		t.skipOutside(job, out)
		res.FilesOutside = len(out)
		res.Skipped = "manifests outside the table's directories"
		return nil, nil
	}
	return &head{tbl: tbl, snap: snap, fs: fs, inside: inside}, nil
}

// skippedYielded is Result.Skipped of a job that lost maxCommitAttempts
// commits in a row to concurrent ones.
const skippedYielded = "yielded to concurrent commits"

// commitRetrying runs a job's commit passes until one settles it. pass
// stages the job's change on the table as it is now, counts the commit in
// res.Attempts when it sends one, and returns done when the pass settled
// the job itself (committed, skipped with res.Skipped, or failed with the
// error returned); otherwise it returns the commit's error. A commit that
// failed cleanly (isCommitFailed: a concurrent commit moved main or broke
// a requirement, nothing was committed) is staged again after backoff, up
// to maxCommitAttempts commits; then the job yields (res.Skipped =
// skippedYielded, nil error) until its next run. Any other commit error is
// returned as "commit <what> of <table>": its outcome may be unknown, so
// the job must keep what the commit references.
func (t *target) commitRetrying(ctx context.Context, res *Result, what string, pass func() (done bool, err error)) error {
	for {
		done, err := pass()
		switch {
		case done || err == nil:
			return err
		case !isCommitFailed(err):
			return fmt.Errorf("commit %s of %s: %w", what, t.name(), err)
		case res.Attempts >= maxCommitAttempts:
			res.Skipped = skippedYielded
			return nil
		}
		if err := backoff(ctx, res.Attempts); err != nil {
			return err
		}
	}
}

// isCommitFailed reports a clean conflict: nothing was committed.
func isCommitFailed(err error) bool {
	return errors.Is(err, catalog.ErrCommitFailed) || errors.Is(err, table.ErrCommitFailed)
}

// backoff sleeps 20–120 ms before the next attempt, jittered so that a
// job and a pipeline on the same cadence drift apart.
func backoff(ctx context.Context, attempt int) error {
	d := time.Duration(20+rand.IntN(100*min(attempt, 3))) * time.Millisecond
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// offsetProps returns the summary properties a maintenance snapshot on
// base must carry: the ingest offsets of base's main head (DESIGN.md
// "Exactly once": every snapshot Tarn writes carries the cumulative
// offsets), or none for a table without them (also when expiry left no
// snapshot with offsets on main's lineage). The value is the head's,
// so the sink's rebase rule (ingest/sink: the head's offsets for a
// batch's partitions still equal its start) accepts the maintenance
// snapshot landing between a batch's plan and its commit.
func offsetProps(base *table.Table) (iceberg.Properties, error) {
	o, found, err := offsets.Read(base.Metadata())
	if errors.Is(err, offsets.ErrLost) {
		// No snapshot left on main's lineage carries offsets: a table no
		// topic ever wrote (any other engine's) once expiry dropped its
		// first snapshot, or a topic table whose offsets were lost
		// already, which the sink refuses to resume either way. There is
		// nothing to carry.
		return iceberg.Properties{}, nil
	}
	if err != nil {
		return nil, err
	}
	if !found {
		return iceberg.Properties{}, nil
	}
	return o.Properties(), nil
}

// liveFiles returns main's head's live data file count: the added and
// existing file counts of its data manifests (required in v2 manifest
// lists), or the summary's total-data-files when the list cannot be
// read; 0 when neither can. Not the summary first: the spec makes its
// totals optional (DuckDB 1.4 writes only "operation"), and a snapshot
// written over a head without them may carry wrong ones (the manifest
// rewrite of a DuckDB-written table reported total-data-files 0).
func liveFiles(ctx context.Context, tbl *table.Table) int64 {
	head := tbl.CurrentSnapshot()
	if head == nil {
		return 0
	}
	fallback := func() int64 {
		n, _ := summaryInt(head, "total-data-files")
		return n
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return fallback()
	}
	ms, err := head.Manifests(fs)
	if err != nil {
		return fallback()
	}
	var n int64
	for _, m := range ms {
		if m.ManifestContent() == iceberg.ManifestContentData {
			n += int64(max(m.AddedDataFiles(), 0)) + int64(max(m.ExistingDataFiles(), 0))
		}
	}
	return n
}

// summaryInt is the integer summary property key of s, and whether s has it.
func summaryInt(s *table.Snapshot, key string) (int64, bool) {
	if s == nil || s.Summary == nil {
		return 0, false
	}
	v, ok := s.Summary.Properties[key]
	if !ok {
		return 0, false
	}
	var n int64
	_, err := fmt.Sscan(v, &n)
	return n, err == nil
}
