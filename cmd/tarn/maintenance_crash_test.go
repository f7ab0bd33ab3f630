package main_test

import (
	"context"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// killRound says when a round of TestKillDuringCompaction kills the
// server: a random delay after the compaction's first new file of kind
// appears in the table's directory.
type killRound struct {
	// dir is the table subdirectory watched: "data" (the rewritten data
	// file: the kill lands while it is written or before the commit
	// starts) or "metadata" (the first manifest of the replace snapshot:
	// the kill lands in the commit).
	dir string
	// maxDelay bounds the random delay after the file appears.
	maxDelay time.Duration
}

// TestKillDuringCompaction: `tarn serve` is killed with SIGKILL while
// `tarn maintenance run --job compact` compacts a table of 40 small
// files, four times. Each kill is timed off the table's directory — once
// the compaction's rewritten data file (or the first manifest of its
// replace snapshot) appears, after a random delay — so it lands inside
// the compaction, and each round checks where it landed: a kill that
// left the head the snapshot the compaction planned on, with the new
// file on disk and in no snapshot, and the CLI cut off, came in the
// middle of the compaction. At least three of the four must. After each
// restart the table loads, scans, and holds every row exactly once
// (count, distinct ids and sum); at the end a compaction completes.
func TestKillDuringCompaction(t *testing.T) {
	if testing.Short() {
		t.Skip("starts tarn serve")
	}
	ctx := context.Background()
	dir := t.TempDir()
	args := []string{"--listen", "127.0.0.1:0", "--data-dir", dir, "--maintenance-interval", "0"}
	p := startTarn(t, cleanEnv(), args...)
	cat, err := rest.NewCatalog(ctx, "tarn", p.URL)
	require.NoError(t, err)
	require.NoError(t, cat.CreateNamespace(ctx, table.Identifier{"air"}, nil))
	ident := table.Identifier{"air", "flights"}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	_, err = cat.CreateTable(ctx, ident, sc)
	require.NoError(t, err)
	asc, err := table.SchemaToArrowSchema(sc, nil, false, false)
	require.NoError(t, err)

	var next int64 // ids 0..next-1 are in the table
	appendFiles := func(files, rows int) *table.Table {
		t.Helper()
		tbl, err := cat.LoadTable(ctx, ident)
		require.NoError(t, err)
		for range files {
			b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
			for range rows {
				b.Field(0).(*array.Int64Builder).Append(next)
				next++
			}
			rec := b.NewRecordBatch()
			at := array.NewTableFromRecords(asc, []arrow.RecordBatch{rec})
			tbl, err = tbl.AppendTable(ctx, at, int64(rows), nil)
			require.NoError(t, err)
			at.Release()
			rec.Release()
			b.Release()
		}
		return tbl
	}
	check := func() *table.Table {
		t.Helper()
		tbl, err := cat.LoadTable(ctx, ident)
		require.NoError(t, err)
		res, err := tbl.Scan().ToArrowTable(ctx)
		require.NoError(t, err)
		defer res.Release()
		seen := make(map[int64]bool, next)
		var sum int64
		for _, c := range res.Column(0).Data().Chunks() {
			ids := c.(*array.Int64)
			for i := range ids.Len() {
				require.False(t, seen[ids.Value(i)], "id %d twice", ids.Value(i))
				seen[ids.Value(i)] = true
				sum += ids.Value(i)
			}
		}
		require.EqualValues(t, next, len(seen), "rows")
		require.Equal(t, next*(next-1)/2, sum, "sum")
		return tbl
	}

	rounds := []killRound{
		{dir: "data", maxDelay: 40 * time.Millisecond},
		{dir: "metadata", maxDelay: 5 * time.Millisecond},
		{dir: "data", maxDelay: 40 * time.Millisecond},
		{dir: "metadata", maxDelay: 5 * time.Millisecond},
	}
	midCompaction := 0
	for round, kr := range rounds {
		tbl := appendFiles(40, 200)
		planned := tbl.CurrentSnapshot().SnapshotID
		tableDir := localPath(t, tbl.Location())
		before := filesUnder(t, tableDir)

		run := exec.Command(tarnBin, "maintenance", "run", "--server", p.URL, "--table", "air.flights", "--job", "compact")
		run.Env = cleanEnv()
		var runOut lockedBuffer // written by exec's copier while the test reads it
		run.Stdout, run.Stderr = &runOut, &runOut
		require.NoError(t, run.Start())
		runDone := make(chan error, 1)
		go func() { runDone <- run.Wait() }()

		appeared, runErr, finished := waitForNewFile(t, filepath.Join(tableDir, kr.dir), before, runDone)
		require.False(t, finished, "round %d: the compaction ended (%v) before any new file appeared under %s/: nothing to kill it in\n%s",
			round, runErr, kr.dir, runOut.String())
		time.Sleep(time.Duration(rand.Int64N(int64(kr.maxDelay) + 1)))
		p.kill(t)
		runErr = <-runDone

		p = startTarn(t, cleanEnv(), args...)
		cat, err = rest.NewCatalog(ctx, "tarn", p.URL)
		require.NoError(t, err)
		tbl = check()
		head := tbl.CurrentSnapshot()
		switch {
		case head.SnapshotID == planned:
			// The compaction had begun writing (appeared is its file)
			// and had not committed: a kill in its middle.
			midCompaction++
			assert.Contains(t, filesUnder(t, tableDir), appeared, "round %d: the uncommitted file stays until orphan removal", round)
			assert.NotContains(t, referencedFiles(t, ctx, tbl), appeared, "round %d: an uncommitted file is in no snapshot", round)
			assert.Error(t, runErr, "round %d: the CLI was cut off by the kill, yet exited 0:\n%s", round, runOut.String())
			t.Logf("round %d: killed mid-compaction (after %s/%s appeared); head unchanged, %s data files, %d rows exact",
				round, kr.dir, filepath.Base(appeared), head.Summary.Properties["total-data-files"], next)
		default:
			require.Equal(t, planned, *head.ParentSnapshotID, "round %d: the only commit since the plan is the compaction's", round)
			require.Equal(t, table.OpReplace, head.Summary.Operation, "round %d", round)
			t.Logf("round %d: killed after the compaction committed (after %s/%s appeared); %s data files, %d rows exact",
				round, kr.dir, filepath.Base(appeared), head.Summary.Properties["total-data-files"], next)
		}
	}
	require.GreaterOrEqual(t, midCompaction, len(rounds)-1, "kills that landed in the middle of a compaction")

	// And compaction completes on the table the kills left.
	out, errOut, code := runMaintenance(t, "run", "--server="+p.URL, "--table", "air.flights", "--job", "compact")
	require.Equal(t, 0, code, errOut)
	t.Log(out)
	tbl := check()
	require.Equal(t, table.OpReplace, tbl.CurrentSnapshot().Summary.Operation)
}

// localPath turns a file:// location into a local path.
func localPath(t *testing.T, loc string) string {
	t.Helper()
	u, err := url.Parse(loc)
	require.NoError(t, err)
	require.Equal(t, "file", u.Scheme, loc)
	return u.Path
}

// filesUnder lists the files under dir, recursively, as paths.
func filesUnder(t *testing.T, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			out[path] = true
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// waitForNewFile polls dir until a file not in before appears and returns
// its path; finished is true (with the run's error) when done delivered
// first.
func waitForNewFile(t *testing.T, dir string, before map[string]bool, done <-chan error) (path string, runErr error, finished bool) {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case err := <-done:
			return "", err, true
		case <-deadline:
			t.Fatalf("no new file under %s within 2 minutes", dir)
		default:
		}
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && !before[p] && path == "" {
				path = p
			}
			return nil
		})
		if path != "" {
			return path, nil, false
		}
		time.Sleep(500 * time.Microsecond)
	}
}

// referencedFiles returns the local paths of every snapshot's manifest
// list and of the manifests and data files of tbl's head (a file written
// after the head was planned can be in no older snapshot).
func referencedFiles(t *testing.T, ctx context.Context, tbl *table.Table) map[string]bool {
	t.Helper()
	fsys, err := tbl.FS(ctx)
	require.NoError(t, err)
	out := map[string]bool{}
	for _, s := range tbl.Metadata().Snapshots() {
		out[localPath(t, s.ManifestList)] = true
	}
	mans, err := tbl.CurrentSnapshot().Manifests(fsys)
	require.NoError(t, err)
	for _, m := range mans {
		out[localPath(t, m.FilePath())] = true
		entries, err := m.FetchEntries(fsys, false)
		require.NoError(t, err)
		for _, e := range entries {
			out[localPath(t, e.DataFile().FilePath())] = true
		}
	}
	return out
}
