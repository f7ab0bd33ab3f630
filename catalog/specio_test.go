package catalog_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/stretchr/testify/require"
	"github.com/twmb/avro"
	"github.com/twmb/avro/ocf"

	"github.com/tarnhq/tarn/catalog"
)

// duckdbFixtures copies testdata/duckdb-1.4.4 (a manifest list, a data
// manifest and a delete manifest DuckDB 1.4.4 wrote: two inserts and a
// DELETE) into a directory of wh and returns its file:// URI.
func duckdbFixtures(t *testing.T, wh *catalog.Warehouse) string {
	t.Helper()
	dir := filepath.Join(strings.TrimPrefix(wh.Location, "file://"), "duck", "metadata")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, f := range []string{"manifest-list.avro", "data-manifest.avro", "delete-manifest.avro"} {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "duckdb-1.4.4", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o644))
	}
	return "file://" + dir
}

func warehouseIO(t *testing.T, wh *catalog.Warehouse) icebergio.IO {
	t.Helper()
	fs, err := wh.FileIOFunc(wh.Location)(context.Background())
	require.NoError(t, err)
	return fs
}

// Regression: compaction (and every job reading a snapshot's manifests)
// of a table whose head DuckDB 1.4 wrote failed with 500 "plan scan: ...
// avro: incompatible at manifest_path: reader string vs writer null";
// past that, iceberg-go refused DuckDB's field summary record name
// (element0), its delete manifests (header content "data", the list says
// "deletes") and its delete files (file_format "parquet", iceberg-go
// compares with "PARQUET"). The warehouse's FileIO serves them in the
// shape iceberg-go reads; this reads real DuckDB 1.4.4 files through it.
func TestWarehouseIOReadsDuckDBManifests(t *testing.T) {
	t.Parallel()
	_, wh := newTestCatalog(t)
	dir := duckdbFixtures(t, wh)

	t.Run("iceberg-go alone refuses them", func(t *testing.T) {
		// Pins why the workaround exists: when this passes no more,
		// iceberg-go reads DuckDB's files itself.
		f, err := icebergio.LocalFS{}.Open(dir + "/manifest-list.avro")
		require.NoError(t, err)
		defer f.Close()
		_, err = iceberg.ReadManifestList(f)
		require.ErrorContains(t, err, "incompatible at manifest_path")
	})

	fs := warehouseIO(t, wh)
	f, err := fs.Open(dir + "/manifest-list.avro")
	require.NoError(t, err)
	list, err := iceberg.ReadManifestList(f)
	require.NoError(t, f.Close())
	require.NoError(t, err)
	require.Len(t, list, 3)
	for i, want := range []struct {
		content       iceberg.ManifestContent
		seq           int64
		added, delRow int64
	}{{iceberg.ManifestContentData, 1, 2, 0}, {iceberg.ManifestContentData, 2, 2, 0}, {iceberg.ManifestContentDeletes, 3, 0, 1}} {
		m := list[i]
		require.Equal(t, want.content, m.ManifestContent(), "manifest %d", i)
		require.Equal(t, want.seq, m.SequenceNum(), "manifest %d", i)
		require.Equal(t, want.added, m.AddedRows(), "manifest %d", i)
		require.Equal(t, want.delRow, m.DeletedRows(), "manifest %d", i)
		require.Equal(t, int32(1), m.AddedDataFiles(), "manifest %d", i)
		require.True(t, strings.HasSuffix(m.FilePath(), "-m0.avro"), m.FilePath())
	}

	// The manifests, read as the list describes them (their paths point
	// at the table DuckDB wrote them for).
	entries := func(name string, m iceberg.ManifestFile) []iceberg.ManifestEntry {
		b := iceberg.NewManifestFile(2, dir+"/"+name, m.Length(), m.PartitionSpecID(), m.SnapshotID()).
			Content(m.ManifestContent()).SequenceNum(m.SequenceNum(), m.MinSequenceNum())
		es, err := b.Build().FetchEntries(fs, false)
		require.NoError(t, err, name)
		return es
	}
	data := entries("data-manifest.avro", list[0])
	require.Len(t, data, 1)
	require.Equal(t, iceberg.EntryContentData, data[0].DataFile().ContentType())
	require.Equal(t, iceberg.ParquetFile, data[0].DataFile().FileFormat())
	require.EqualValues(t, 2, data[0].DataFile().Count())
	dels := entries("delete-manifest.avro", list[2])
	require.Len(t, dels, 1)
	require.Equal(t, iceberg.EntryContentPosDeletes, dels[0].DataFile().ContentType())
	require.Equal(t, iceberg.ParquetFile, dels[0].DataFile().FileFormat())
	require.True(t, strings.HasSuffix(dels[0].DataFile().FilePath(), "-deletes.parquet"))
	require.EqualValues(t, 1, dels[0].DataFile().Count())

	t.Run("a null in a required field is an error naming the file", func(t *testing.T) {
		raw, err := os.ReadFile(filepath.Join("..", "testdata", "duckdb-1.4.4", "manifest-list.avro"))
		require.NoError(t, err)
		rd, err := ocf.NewReader(bytes.NewReader(raw))
		require.NoError(t, err)
		var rec map[string]any
		require.NoError(t, rd.Decode(&rec))
		rec["manifest_length"] = nil
		var buf bytes.Buffer
		w, err := ocf.NewWriter(&buf, avro.MustParse(rd.Schema().String()))
		require.NoError(t, err)
		require.NoError(t, w.Encode(rec))
		require.NoError(t, w.Close())
		p := strings.TrimPrefix(dir, "file://") + "/null-length.avro"
		require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
		_, err = fs.Open("file://" + p)
		require.ErrorContains(t, err, "null-length.avro")
		require.ErrorContains(t, err, "a field the spec requires is null")
	})
}

// The files engines write in the spec's shape (here iceberg-go's own) are
// served as they are, byte for byte, with Seek and ReadAt intact.
func TestWarehouseIOServesOtherFilesAsTheyAre(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cat, wh := newTestCatalog(t)
	tbl, err := cat.TableIO(wh).LoadTable(ctx, newInt64Table(t, cat, wh, "ns"))
	require.NoError(t, err)
	rows := int64Rows(1, 2, 3)
	defer rows.Release()
	txn := tbl.NewTransaction()
	require.NoError(t, txn.AppendTable(ctx, rows, 1024, nil))
	tbl, err = txn.Commit(ctx)
	require.NoError(t, err)
	fs, err := tbl.FS(ctx)
	require.NoError(t, err)
	snap := tbl.CurrentSnapshot()
	ms, err := snap.Manifests(fs)
	require.NoError(t, err)
	require.Len(t, ms, 1)

	for _, p := range []string{snap.ManifestList, ms[0].FilePath()} {
		raw, err := os.ReadFile(strings.TrimPrefix(p, "file://"))
		require.NoError(t, err)
		f, err := fs.Open(p)
		require.NoError(t, err)
		got, err := io.ReadAll(f)
		require.NoError(t, err)
		require.Equal(t, raw, got, p)

		pos, err := f.Seek(-10, io.SeekCurrent)
		require.NoError(t, err)
		require.EqualValues(t, len(raw)-10, pos)
		_, err = f.Seek(3, io.SeekStart)
		require.NoError(t, err)
		part := make([]byte, 5)
		_, err = io.ReadFull(f, part)
		require.NoError(t, err)
		require.Equal(t, raw[3:8], part)
		at := make([]byte, 4)
		_, err = f.ReadAt(at, 1)
		require.NoError(t, err)
		require.Equal(t, raw[1:5], at)
		require.NoError(t, f.Close())

		b, err := fs.(icebergio.ReadFileIO).ReadFile(p)
		require.NoError(t, err)
		require.Equal(t, raw, b)
	}
}
