package catalog_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/internal/testserver"
)

func TestHoldFiles(t *testing.T) {
	t.Parallel()
	cat, _, _ := testserver.NewCatalog(t, t.TempDir(), nil)
	r1 := cat.HoldFiles([]string{"file:///w/t/data/a.parquet", "/w/t/data/b.parquet"})
	r2 := cat.HoldFiles([]string{"/w/t/data/a.parquet"})
	require.True(t, cat.FileHeld("/w/t/data/a.parquet"), "a path and its file:// URI are one file")
	require.True(t, cat.FileHeld("file:///w/t/data/b.parquet"))
	require.False(t, cat.FileHeld("/w/t/data/c.parquet"))
	r1()
	r1() // idempotent
	require.True(t, cat.FileHeld("/w/t/data/a.parquet"), "still held by the second writer")
	require.False(t, cat.FileHeld("/w/t/data/b.parquet"))
	r2()
	require.False(t, cat.FileHeld("/w/t/data/a.parquet"))
}
