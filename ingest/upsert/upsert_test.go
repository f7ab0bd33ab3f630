package upsert_test

import (
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/upsert"
)

func TestFold(t *testing.T) {
	for _, tc := range []struct {
		name    string
		changes []upsert.Change
		want    upsert.Plan
	}{
		{"empty", nil, upsert.Plan{}},
		{"last upsert wins", []upsert.Change{{"a", 0}, {"a", 1}, {"a", 2}},
			upsert.Plan{Keep: []int{2}, KeepKeys: []string{"a"}, Upserts: 3}},
		{"delete after upserts writes nothing", []upsert.Change{{"a", 0}, {"a", -1}},
			upsert.Plan{Deleted: []string{"a"}, Upserts: 1, Deletes: 1}},
		{"upsert after delete", []upsert.Change{{"a", -1}, {"a", 0}},
			upsert.Plan{Keep: []int{0}, KeepKeys: []string{"a"}, Upserts: 1, Deletes: 1}},
		{"keys interleaved keep row order", []upsert.Change{{"b", 0}, {"a", 1}, {"b", 2}, {"c", -1}, {"a", 3}},
			upsert.Plan{Keep: []int{2, 3}, KeepKeys: []string{"b", "a"}, Deleted: []string{"c"}, Upserts: 4, Deletes: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, upsert.Fold(tc.changes))
		})
	}
}

func dataFile(t *testing.T, path string, rows int64) iceberg.DataFile {
	t.Helper()
	b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, path, iceberg.ParquetFile,
		nil, nil, nil, rows, 100)
	require.NoError(t, err)
	return b.Build()
}

// TestIndexPrepareApply walks two batches: the first places rows across
// two files, the second replaces one key, deletes one, deletes an absent
// one, and adds one; the deletes name the old rows' files and positions.
func TestIndexPrepareApply(t *testing.T) {
	ix := upsert.NewIndex(-1)
	p1 := upsert.Fold([]upsert.Change{{"a", 0}, {"b", 1}, {"c", 2}})
	d1, err := ix.Prepare(p1, []iceberg.DataFile{dataFile(t, "f1", 2), dataFile(t, "f2", 1)})
	require.NoError(t, err)
	require.Empty(t, d1.Deletes)
	require.NoError(t, ix.Apply(d1, 10))
	require.Equal(t, 3, ix.Len())
	f, pos, ok := ix.Lookup("c")
	require.True(t, ok)
	require.Equal(t, "f2", f)
	require.Equal(t, int64(0), pos)

	_, err = ix.Prepare(p1, []iceberg.DataFile{dataFile(t, "f3", 2)})
	require.Error(t, err, "two rows written for three kept")

	p2 := upsert.Fold([]upsert.Change{{"b", 0}, {"a", -1}, {"zz", -1}, {"d", 1}})
	d2, err := ix.Prepare(p2, []iceberg.DataFile{dataFile(t, "f3", 2)})
	require.NoError(t, err)
	require.Equal(t, map[string][]int64{"f1": {0, 1}}, d2.Deletes)
	require.Equal(t, int64(1), d2.NoopDeletes)
	require.Equal(t, 3, ix.Len(), "nothing changes before Apply")
	require.NoError(t, ix.Apply(d2, 12))
	require.Equal(t, int64(12), ix.SnapshotID())
	require.Equal(t, 3, ix.Len(), "b, c, d")
	_, _, ok = ix.Lookup("a")
	require.False(t, ok)
	f, pos, _ = ix.Lookup("d")
	require.Equal(t, "f3", f)
	require.Equal(t, int64(1), pos)
	// A delta prepared on snapshot 10 cannot move the index of 12.
	require.Error(t, ix.Apply(d2, 13))
}
