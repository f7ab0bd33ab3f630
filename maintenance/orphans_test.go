package maintenance_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/maintenance"
	"github.com/tarnhq/tarn/spec"
)

// Orphan removal deletes a planted unreferenced file older than the
// cutoff, keeps a younger one, never deletes a referenced file however
// old, and keeps the files of a batch written but not yet committed (a
// paused ingest batch) even when they are older than the cutoff.
func TestOrphansRemovedReferencedAndInFlightKept(t *testing.T) {
	h := newHarness(t, map[string]string{maintenance.OrphanOlderThanProperty: "60000"}) // 1 min: raised to the 1 h floor
	h.ingest(10, 10)
	require.Empty(t, h.run(maintenance.JobCompact).Skipped)
	h.ingest(1, 10)

	// Every file of the table is two hours old now, referenced or not.
	all := h.files("")
	age(t, 2*time.Hour, all...)

	dataDir := filepath.Join(h.tableDir(), "data")
	old := filepath.Join(dataDir, "planted-old.parquet")
	young := filepath.Join(dataDir, "planted-young.parquet")
	halfHour := filepath.Join(dataDir, "planted-30min.parquet")
	for _, p := range []string{old, young, halfHour} {
		require.NoError(t, os.WriteFile(p, []byte("orphan"), 0o644))
	}
	age(t, 2*time.Hour, old)
	age(t, 30*time.Minute, halfHour)

	// A paused batch: written, not committed, its files older than the cutoff.
	b := h.batch(10)
	w, err := h.sink.Write(h.ctx, b)
	require.NoError(t, err)
	var paused []string
	for _, f := range w.Files {
		paused = append(paused, f.FilePath())
	}
	require.NotEmpty(t, paused)
	age(t, 2*time.Hour, paused...)

	r := h.run(maintenance.JobOrphans)
	require.Empty(t, r.Skipped)
	require.False(t, exists(old), "old orphan removed")
	require.True(t, exists(young), "young orphan kept")
	require.True(t, exists(halfHour), "orphan younger than the 1 h floor kept")
	for _, p := range paused {
		require.True(t, exists(p), "in-flight batch file kept: %s", p)
	}
	require.Equal(t, len(paused), r.OrphansHeld)
	// What it removed: the planted file and the data files compaction
	// replaced are referenced by retained snapshots, so only the planted
	// one among data files; metadata files past previous-versions-max
	// may go too.
	require.Equal(t, 1, r.OrphansRemoved)
	tbl := h.load()
	h.check(tbl, nil, h.next)
	for _, s := range tbl.Metadata().Snapshots() {
		for _, f := range dataFiles(t, tbl, &s) {
			require.True(t, exists(f), "referenced file %s", f)
		}
	}

	// The paused batch commits afterwards, and the table is exact.
	require.NoError(t, h.sink.CommitWritten(h.ctx, w))
	h.account(b)
	h.check(h.load(), nil, h.next)
}

// TestOrphansSkipSharedLocation: a table at (or inside) another table's
// location must not have the other's files removed as its own orphans (a
// trial created fin.evil at fin.payroll's location with maintenance on
// and lost payroll's data). The catalog now refuses such a table; one a
// catalog holds from before is skipped by the job, which names the other
// table, and the other table's files stay.
func TestOrphansSkipSharedLocation(t *testing.T) {
	h := newHarness(t, nil)
	h.ingest(3, 10)
	victim := h.files("")
	age(t, 48*time.Hour, victim...)
	loc := h.load().Location()
	for _, name := range []string{"evil", "evil_inside"} {
		at := loc
		if name == "evil_inside" {
			at = loc + "/data"
		}
		req := spec.CreateTableRequest{Name: name, Schema: testSchema, Location: at, Properties: map[string]string{"tarn.maintenance.enabled": "true"}}
		_, err := h.cat.CreateTable(h.ctx, h.wh, tableIdent.Namespace, req)
		require.ErrorIs(t, err, catalog.ErrInvalidArgument, "the catalog refuses %s at %s", name, at)

		// As recorded before the catalog refused it: a metadata file whose
		// location is at, and a pointer without Locations.
		req.Location = ""
		created, err := h.cat.CreateTable(h.ctx, h.wh, tableIdent.Namespace, req)
		require.NoError(t, err)
		var md map[string]any
		require.NoError(t, json.Unmarshal(created.MetadataJSON, &md))
		md["location"] = at
		js, err := json.Marshal(md)
		require.NoError(t, err)
		mloc := strings.Replace(created.MetadataLocation, "/00000-", "/00001-", 1)
		require.NoError(t, os.WriteFile(strings.TrimPrefix(mloc, "file://"), js, 0o644))
		id := catalog.Ident{Namespace: tableIdent.Namespace, Name: name}
		require.NoError(t, h.store.CommitPointers(h.ctx, []catalog.PointerChange{{Ident: id, Kind: catalog.KindTable, ExpectedVersion: 1, MetadataLocation: mloc}}))
		legacy, err := h.cat.LoadTable(h.ctx, h.wh, id)
		require.NoError(t, err)
		require.Contains(t, string(legacy.MetadataJSON), `"location":"`+at+`"`)

		rs, err := h.sched.RunJobs(h.ctx, id, []string{maintenance.JobOrphans})
		require.NoError(t, err)
		require.Len(t, rs, 1)
		assert.Contains(t, []string{"location shared with air.flights", "location shared with air.evil"}, rs[0].Skipped, name)
	}
	for _, p := range victim {
		require.True(t, exists(p), "the other table's file is kept: %s", p)
	}
	h.check(h.load(), nil, 30)
}

// Regression: compare locations in one form (storage.NormLocation). A
// table whose location holds a space has its files written under the
// percent-encoded spelling (file:///wh/air/my%20dir/...) while its
// recorded directory keeps the raw one; expiry's confinement compared
// the two as strings, so it deleted none of the files only expired
// snapshots referenced. Compaction, expiry and orphan removal each do
// their work on such a table now, and it still reads exactly.
func TestMaintenanceLocationWithSpace(t *testing.T) {
	h := newHarnessAt(t, map[string]string{table.MaxSnapshotAgeMsKey: "1000", table.MinSnapshotsToKeepKey: "1",
		maintenance.OrphanOlderThanProperty: "60000"}, nil, "air/my dir/flights")
	require.Contains(t, h.load().Location(), "/my dir/")
	h.ingest(10, 10)
	small := dataFiles(t, h.load(), h.load().CurrentSnapshot())
	require.Len(t, small, 20)
	require.Contains(t, small[0], "/my%20dir/", "iceberg-go writes the encoded spelling")

	r := h.run(maintenance.JobCompact)
	require.Empty(t, r.Skipped)
	require.Less(t, r.FilesAfter, r.FilesBefore)
	time.Sleep(1100 * time.Millisecond)
	r = h.run(maintenance.JobExpire)
	require.Positive(t, r.SnapshotsExpired)
	for _, f := range small {
		require.False(t, exists(f), "a file only expired snapshots referenced is deleted: %s", f)
	}

	orphan := filepath.Join(h.tableDir(), "data", "planted.parquet")
	require.NoError(t, os.WriteFile(orphan, []byte("orphan"), 0o644))
	age(t, 2*time.Hour, h.files("")...)
	r = h.run(maintenance.JobOrphans)
	require.Empty(t, r.Skipped)
	require.Equal(t, 1, r.OrphansRemoved)
	require.False(t, exists(orphan))
	tbl := h.load()
	h.check(tbl, nil, h.next)
	for _, f := range dataFiles(t, tbl, tbl.CurrentSnapshot()) {
		require.True(t, exists(f), "live file %s", f)
	}
}
