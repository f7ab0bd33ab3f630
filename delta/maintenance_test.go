package delta_test

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
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

// cleanedLog makes a table whose log cleanup ran twice and returns its
// harness: checkpoints every 2 versions, the Iceberg expiry keeping
// only the head. Versions 0..2 (checkpoint 2), an expiry (version 2
// reflects the only snapshot left), versions 3..4 (checkpoint 4: the
// cleanup deletes commits 0 and 1), an expiry, versions 5..6
// (checkpoint 6: commits 2 and 3 and checkpoint 2 go). Each version adds
// one file of 4 rows (distances 0..27 in all).
func cleanedLog(t *testing.T) *harness {
	h := newHarness(t, map[string]string{delta.PropEnabled: "true", delta.PropCheckpointInterval: "2",
		"history.expire.max-snapshot-age-ms": "1", "history.expire.min-snapshots-to-keep": "1"})
	sched, err := maintenance.New(maintenance.Config{Disabled: true}, maintenance.Deps{Catalog: h.cat, Keep: h.pub.KeepFiles})
	require.NoError(t, err)
	publish := func(n int) {
		for range n {
			h.ingest(1, 4)
			_, err := h.pub.Publish(h.ctx, tableIdent)
			require.NoError(t, err)
		}
	}
	expire := func() {
		_, err := sched.RunJobs(h.ctx, tableIdent, []string{maintenance.JobExpire})
		require.NoError(t, err)
		tbl, err := h.tio.LoadTable(h.ctx, table.Identifier{"air", "flights"})
		require.NoError(t, err)
		require.Len(t, tbl.Metadata().Snapshots(), 1, "the expiry kept only the head")
	}
	publish(3)
	expire()
	publish(2)
	logFiles(t, h, []string{"00000000000000000002.checkpoint.parquet", "00000000000000000002.json",
		"00000000000000000003.json", "00000000000000000004.checkpoint.parquet", "00000000000000000004.json"})
	expire()
	publish(2)
	return h
}

// logFiles asserts the commit and checkpoint files of h's log.
func logFiles(t *testing.T, h *harness, want []string) {
	t.Helper()
	ents, err := os.ReadDir(h.logDir())
	require.NoError(t, err)
	var got []string
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, ".json") || strings.HasSuffix(n, ".checkpoint.parquet") {
			got = append(got, n)
		}
	}
	require.Equal(t, want, got)
}

// TestLogCleanupFollowsExpiry: once Iceberg's snapshot expiry removed
// the snapshots older versions reflect, the commit and checkpoint files
// before the newest checkpoint that reflects a retained snapshot are
// deleted at the next checkpoint (PROTOCOL.md "Metadata Cleanup"), the
// status says which version is the oldest left, and a restarted
// publisher replays the log from that checkpoint.
func TestLogCleanupFollowsExpiry(t *testing.T) {
	h := cleanedLog(t)
	logFiles(t, h, []string{"00000000000000000004.checkpoint.parquet", "00000000000000000004.json",
		"00000000000000000005.json", "00000000000000000006.checkpoint.parquet", "00000000000000000006.json"})
	b, err := os.ReadFile(filepath.Join(h.logDir(), "_last_checkpoint"))
	require.NoError(t, err)
	require.Contains(t, string(b), `"version":6`)
	st, err := h.pub.Publish(h.ctx, tableIdent)
	require.NoError(t, err)
	require.EqualValues(t, 6, *st.Version)
	require.NotNil(t, st.OldestVersion)
	require.EqualValues(t, 4, *st.OldestVersion)

	restarted, err := delta.New(delta.Config{}, delta.Deps{Tables: delta.CatalogTables(h.cat)})
	require.NoError(t, err)
	st, err = restarted.Publish(h.ctx, tableIdent)
	require.NoError(t, err)
	require.EqualValues(t, 6, *st.Version, "the log reflects the head: nothing written")
	h.ingest(1, 4)
	st, err = restarted.Publish(h.ctx, tableIdent)
	require.NoError(t, err)
	require.EqualValues(t, 7, *st.Version)
	require.Equal(t, h.head().SequenceNumber, *st.SequenceNumber)
}
