package delta_test

import (
	"net/url"
	"os"
	"testing"

	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/delta"
	"github.com/tarnhq/tarn/maintenance"
)

// TestCompactionAndExpiry: a compaction becomes one version that removes
// the small files and adds the merged one, all with dataChange false
// (operation OPTIMIZE), naming the compacted snapshot; a snapshot expiry
// run with Deps.Keep = KeepFiles then leaves the removed files on disk,
// because the log's version 0 still names them.
func TestCompactionAndExpiry(t *testing.T) {
	h := newHarness(t, map[string]string{delta.PropEnabled: "true",
		"history.expire.max-snapshot-age-ms": "1", "history.expire.min-snapshots-to-keep": "1",
		maintenance.CompactMinFilesProperty: "2"})
	h.ingest(6, 5)
	_, err := h.pub.Publish(h.ctx, tableIdent)
	require.NoError(t, err)
	small := h.dataFiles(h.head())
	require.Len(t, small, 6)

	sched, err := maintenance.New(maintenance.Config{Disabled: true}, maintenance.Deps{Catalog: h.cat, Keep: h.pub.KeepFiles})
	require.NoError(t, err)
	rs, err := sched.RunJobs(h.ctx, tableIdent, []string{maintenance.JobCompact})
	require.NoError(t, err)
	require.Len(t, rs, 1)
	head := h.head()
	require.Equal(t, table.OpReplace, head.Summary.Operation, "compaction ran: %+v", rs)
	_, err = h.pub.Publish(h.ctx, tableIdent)
	require.NoError(t, err)

	vs := readLog(t, h.logDir())
	require.Len(t, vs, 2)
	require.Equal(t, head.SnapshotID, vs[1].snapshotID)
	require.ElementsMatch(t, small, vs[1].removes)
	require.Equal(t, h.dataFiles(head), vs[1].adds)
	require.Equal(t, h.dataFiles(head), liveFiles(vs))
	b, err := os.ReadFile(h.logDir() + "/00000000000000000001.json")
	require.NoError(t, err)
	require.Contains(t, string(b), `"operation":"OPTIMIZE"`)
	require.NotContains(t, string(b), `"dataChange":true`, "a rewrite changes no data")

	_, err = sched.RunJobs(h.ctx, tableIdent, []string{maintenance.JobExpire})
	require.NoError(t, err)
	tbl, err := h.tio.LoadTable(h.ctx, table.Identifier{"air", "flights"})
	require.NoError(t, err)
	require.Len(t, tbl.Metadata().Snapshots(), 1, "expiry removed the older snapshots")
	for _, f := range small {
		u, err := url.Parse(f)
		require.NoError(t, err)
		require.FileExists(t, u.Path, "a file the Delta log's version 0 names is kept")
	}
}

// TestCoalescedCompactionChangesData pins a failure: new rows committed
// and then compacted before the next publish reached the Delta log as a
// version whose add (the compacted file) said dataChange false and whose
// operation was OPTIMIZE, so a Delta streaming reader, which skips
// dataChange=false files, never saw those rows. A version that coalesces
// an append with a compaction changes data: its adds and removes say
// dataChange true.
func TestCoalescedCompactionChangesData(t *testing.T) {
	h := newHarness(t, map[string]string{delta.PropEnabled: "true", maintenance.CompactMinFilesProperty: "2"})
	h.ingest(3, 5)
	_, err := h.pub.Publish(h.ctx, tableIdent)
	require.NoError(t, err)
	h.ingest(2, 5)
	sched, err := maintenance.New(maintenance.Config{Disabled: true}, maintenance.Deps{Catalog: h.cat, Keep: h.pub.KeepFiles})
	require.NoError(t, err)
	_, err = sched.RunJobs(h.ctx, tableIdent, []string{maintenance.JobCompact})
	require.NoError(t, err)
	require.Equal(t, table.OpReplace, h.head().Summary.Operation)
	_, err = h.pub.Publish(h.ctx, tableIdent)
	require.NoError(t, err)

	b, err := os.ReadFile(h.logDir() + "/00000000000000000001.json")
	require.NoError(t, err)
	require.NotContains(t, string(b), `"dataChange":false`, "the version adds rows no version had: %s", b)
	require.NotContains(t, string(b), `"operation":"OPTIMIZE"`)
}
