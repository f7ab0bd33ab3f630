package maintenance

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/sink"
)

// Job names, as the API and CLI spell them.
const (
	JobCompact   = "compact"
	JobExpire    = "expire"
	JobOrphans   = "orphans"
	JobManifests = "manifests"
)

// Jobs lists the job names in the order a pass runs them: compaction
// first (it leaves the replaced files to the snapshots expiry drops),
// then expiry (whose commit deletes the files only expired snapshots
// referenced), manifest rewriting, and orphan removal last.
var Jobs = []string{JobCompact, JobExpire, JobManifests, JobOrphans}

// Result is what one run of a job did to one table. Counts are of this run.
type Result struct {
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
	// OrphansRemoved files (OrphanBytes bytes) were deleted; OrphansHeld
	// were unreferenced but held by an in-process writer or needed by
	// the Delta log (Deps.Keep), and kept.
	OrphansRemoved int   `json:"orphans-removed,omitempty"`
	OrphanBytes    int64 `json:"orphan-bytes,omitempty"`
	OrphansHeld    int   `json:"orphans-held,omitempty"`
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

func (t *target) name() string { return strings.Join(t.ident, ".") }

func (t *target) load(ctx context.Context) (*table.Table, error) {
	return t.io.LoadTable(ctx, t.ident)
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
// offsets), or none for a table without them. The value is the head's,
// so the sink's rebase rule (ingest/sink: the head's offsets for a
// batch's partitions still equal its start) accepts the maintenance
// snapshot landing between a batch's plan and its commit.
func offsetProps(base *table.Table) (iceberg.Properties, error) {
	o, found, err := sink.ReadOffsets(base.Metadata())
	if err != nil {
		return nil, err
	}
	if !found {
		return iceberg.Properties{}, nil
	}
	return o.Properties(), nil
}

// liveFiles returns main's head's data file count (total-data-files).
func liveFiles(tbl *table.Table) int64 {
	return summaryInt(tbl.CurrentSnapshot(), "total-data-files")
}

func summaryInt(s *table.Snapshot, key string) int64 {
	if s == nil || s.Summary == nil {
		return 0
	}
	var n int64
	_, _ = fmt.Sscan(s.Summary.Properties[key], &n)
	return n
}
