package catalog_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
)

// A confined table's FileIO: ConfineRemovals keeps files outside the
// table's directories from being deleted; ConfineReads also keeps them
// from being read (ErrOutsideTable), and its check tells them apart.
func TestConfinedTableIO(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cat, wh := newTestCatalog(t)
	tio := cat.TableIO(wh)
	a, err := tio.LoadTable(ctx, newInt64Table(t, cat, wh, "a"))
	require.NoError(t, err)
	b, err := tio.LoadTable(ctx, newInt64Table(t, cat, wh, "b"))
	require.NoError(t, err)
	mine := a.Location() + "/data/mine.parquet"
	theirs := b.Location() + "/data/theirs.parquet"
	for _, f := range []string{mine, theirs} {
		p := strings.TrimPrefix(f, "file://")
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o644))
	}

	reads, inside, err := tio.ConfineReads(ctx, a)
	require.NoError(t, err)
	require.True(t, inside(mine))
	require.False(t, inside(theirs))
	require.False(t, inside(strings.TrimSuffix(a.Location(), "/")+"-other/data/x.parquet"), "a sibling directory sharing the prefix")
	// Regression: Spark and Trino write file paths as file:/x (Hadoop's
	// spelling); compaction took their manifest lists for files outside
	// the table and skipped every table they wrote.
	require.True(t, inside("file:"+strings.TrimPrefix(mine, "file://")), "file:/x is file:///x")
	fs, err := reads.FS(ctx)
	require.NoError(t, err)
	f, err := fs.Open(mine)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, err = fs.Open(theirs)
	require.ErrorIs(t, err, catalog.ErrOutsideTable)
	require.ErrorIs(t, err, catalog.ErrForbidden)
	_, err = fs.(icebergio.ReadFileIO).ReadFile(theirs)
	require.ErrorIs(t, err, catalog.ErrOutsideTable)
	require.NoError(t, fs.Remove(theirs))
	_, err = os.Stat(strings.TrimPrefix(theirs, "file://"))
	require.NoError(t, err, "b's file is not a's to delete")

	removals, err := tio.ConfineRemovals(ctx, a)
	require.NoError(t, err)
	fs, err = removals.FS(ctx)
	require.NoError(t, err)
	b2, err := fs.(icebergio.ReadFileIO).ReadFile(theirs)
	require.NoError(t, err, "ConfineRemovals confines removals only")
	require.Equal(t, []byte("x"), b2)
	require.NoError(t, fs.Remove(mine))
	_, err = os.Stat(strings.TrimPrefix(mine, "file://"))
	require.ErrorIs(t, err, os.ErrNotExist)
}
