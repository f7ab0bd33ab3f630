package maintenance_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/maintenance"
	"github.com/tarnhq/tarn/offsets"
)

func TestCompactBinPacksSmallFilesPerPartition(t *testing.T) {
	h := newHarness(t, nil)
	// 30 commits of 100 rows, each one file per origin: 60 small files.
	h.ingest(30, 100)
	before := h.headOffsets()
	require.EqualValues(t, 60, h.load().CurrentSnapshot().Summary.Properties.GetInt("total-data-files", 0))
	sizeBefore := h.load().CurrentSnapshot().Summary.Properties.GetInt("total-files-size", 0)
	require.Positive(t, sizeBefore)

	r := h.run(maintenance.JobCompact)
	require.Empty(t, r.Skipped)
	require.EqualValues(t, 60, r.FilesBefore)
	require.EqualValues(t, 2, r.FilesAfter, "one file per partition")
	require.Equal(t, 60, r.FilesRewritten)
	require.Equal(t, 2, r.FilesAdded)
	require.EqualValues(t, sizeBefore, r.BytesRewritten, "every file was read: the head's total-files-size")
	require.Equal(t, 1, r.Attempts)

	tbl := h.load()
	head := tbl.CurrentSnapshot()
	require.Equal(t, table.OpReplace, head.Summary.Operation)
	require.Equal(t, before, head.Summary.Properties[offsets.Property], "compaction carries the head's offsets")
	h.check(tbl, nil, 3000)

	// Two files left per partition: below min-input-files, nothing to do.
	r = h.run(maintenance.JobCompact)
	require.Equal(t, "nothing to compact", r.Skipped)

	// Ingest resumes on the compacted head from the carried offsets.
	h.ingest(3, 100)
	h.check(h.load(), nil, 3300)
}

// Compaction landing between a batch's plan and its commit: the sink's
// rebase rule (the head's offsets for the batch's partitions still equal
// its start) must accept the compaction snapshot and commit the batch on
// it — the interleaving of ingest/sink's doc, with the real compaction.
func TestCompactionBetweenIngestPlanAndCommit(t *testing.T) {
	h := newHarness(t, nil)
	h.ingest(12, 50)
	b := h.batch(50) // planned on the head before compaction
	w, err := h.sink.Write(h.ctx, b)
	require.NoError(t, err)

	r := h.run(maintenance.JobCompact)
	require.Empty(t, r.Skipped)
	require.EqualValues(t, 2, r.FilesAfter)

	require.NoError(t, h.sink.CommitWritten(h.ctx, w), "the batch is rebased onto the compaction snapshot")
	h.account(b)
	tbl := h.load()
	require.EqualValues(t, 4, tbl.CurrentSnapshot().Summary.Properties.GetInt("total-data-files", 0))
	o, found, err := offsets.Read(tbl.Metadata())
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, h.next, o.Next[0])
	h.check(tbl, nil, h.next)
}

// Compaction, expiry and manifest rewriting running over and over while
// a pipeline commits every 200 ms (five times Tarn's fastest cadence): no
// ingest commit fails, compactions that lose a race are staged again on
// the new head, and the table stays exact.
func TestMaintenanceWhileIngesting(t *testing.T) {
	h := newHarness(t, map[string]string{maintenance.CompactMinFilesProperty: "4"})
	h.ingest(4, 20)
	var (
		stop        atomic.Bool
		wg          sync.WaitGroup
		runs        []maintenance.Result
		runErr      error
		attempts    int
		compactions atomic.Int32
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			rs, err := h.sched.RunJobs(h.ctx, tableIdent, []string{maintenance.JobCompact, maintenance.JobExpire, maintenance.JobManifests})
			if err != nil {
				runErr = err
				return
			}
			runs = append(runs, rs...)
			for _, r := range rs {
				if r.Job == maintenance.JobCompact && r.Skipped == "" {
					compactions.Add(1)
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	deadline := time.Now().Add(2 * time.Minute)
	commits := 0
	for (commits < 20 || compactions.Load() < 2) && time.Now().Before(deadline) {
		b := h.batch(20)
		require.NoError(t, h.sink.Commit(h.ctx, b), "ingest commit %d", commits)
		h.account(b)
		commits++
		time.Sleep(200 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	require.NoError(t, runErr)
	for _, r := range runs {
		if r.Job == maintenance.JobCompact && r.Skipped == "" {
			attempts += r.Attempts
		}
	}
	t.Logf("%d ingest commits, %d compactions (%d commit attempts)", commits, compactions.Load(), attempts)
	require.GreaterOrEqual(t, compactions.Load(), int32(2))
	h.check(h.load(), nil, h.next)
}
