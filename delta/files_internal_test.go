package delta

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDeltaPathRoundTrip: a data file under the Delta root (the Iceberg
// data directory) is named relative to it, escaped, without ".."; one
// elsewhere by its absolute URI; icebergPath turns either back, and
// resolves the "../data/x" adds of a log rooted at <location>/_delta.
func TestDeltaPathRoundTrip(t *testing.T) {
	root := "s3://b/wh/t/data"
	for file, want := range map[string]string{
		"s3://b/wh/t/data/00000-0-a.parquet":       "00000-0-a.parquet",
		"s3://b/wh/t/data/k=a b/00000-0-a.parquet": "k=a%20b/00000-0-a.parquet",
		"s3://b/elsewhere/x y.parquet":             "s3://b/elsewhere/x%20y.parquet",
	} {
		p := deltaPath(root, file)
		require.Equal(t, want, p, file)
		require.Equal(t, file, icebergPath(root, p), p)
	}
	require.Equal(t, "file:///wh/t/data/x.parquet", icebergPath("file:///wh/t/_delta", "../data/x.parquet"))
	require.Equal(t, "/wh/t/data/x.parquet", icebergPath("/wh/t/_delta", "../data/x.parquet"))
}
