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
		{"last upsert wins", []upsert.Change{{Key: "a", Row: 0}, {Key: "a", Row: 1}, {Key: "a", Row: 2}},
			upsert.Plan{Keep: []int{2}, KeepKeys: []string{"a"}, Upserts: 3}},
		{"delete after upserts writes nothing", []upsert.Change{{Key: "a", Row: 0}, {Key: "a", Row: -1}},
			upsert.Plan{Deleted: []string{"a"}, Upserts: 1, Deletes: 1}},
		{"upsert after delete", []upsert.Change{{Key: "a", Row: -1}, {Key: "a", Row: 0}},
			upsert.Plan{Keep: []int{0}, KeepKeys: []string{"a"}, Upserts: 1, Deletes: 1}},
		{"keys interleaved keep row order", []upsert.Change{{Key: "b", Row: 0}, {Key: "a", Row: 1}, {Key: "b", Row: 2}, {Key: "c", Row: -1}, {Key: "a", Row: 3}},
			upsert.Plan{Keep: []int{2, 3}, KeepKeys: []string{"b", "a"}, Deleted: []string{"c"}, Upserts: 4, Deletes: 1}},
		{"truncate drops what came before it", []upsert.Change{{Key: "a", Row: 0}, {Key: "b", Row: -1}, {Truncate: true}, {Key: "b", Row: 1}, {Key: "c", Row: -1}},
			upsert.Plan{Keep: []int{1}, KeepKeys: []string{"b"}, Deleted: []string{"c"}, Truncate: true, Upserts: 2, Deletes: 2, Truncates: 1}},
		{"last of two truncates counts", []upsert.Change{{Truncate: true}, {Key: "a", Row: 0}, {Truncate: true}},
			upsert.Plan{Truncate: true, Upserts: 1, Truncates: 2}},
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
	p1 := upsert.Fold([]upsert.Change{{Key: "a", Row: 0}, {Key: "b", Row: 1}, {Key: "c", Row: 2}})
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

	p2 := upsert.Fold([]upsert.Change{{Key: "b", Row: 0}, {Key: "a", Row: -1}, {Key: "zz", Row: -1}, {Key: "d", Row: 1}})
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

// TestIndexTruncate: a truncate retires every committed row (position
// deletes in each file), a key upserted after it is placed without
// retiring its old row twice, and a delete after it is a no-op.
func TestIndexTruncate(t *testing.T) {
	ix := upsert.NewIndex(-1)
	d1, err := ix.Prepare(upsert.Fold([]upsert.Change{{Key: "a", Row: 0}, {Key: "b", Row: 1}, {Key: "c", Row: 2}}),
		[]iceberg.DataFile{dataFile(t, "f1", 2), dataFile(t, "f2", 1)})
	require.NoError(t, err)
	require.NoError(t, ix.Apply(d1, 10))

	p2 := upsert.Fold([]upsert.Change{{Key: "a", Row: 0}, {Truncate: true}, {Key: "b", Row: 1}, {Key: "c", Row: -1}})
	d2, err := ix.Prepare(p2, []iceberg.DataFile{dataFile(t, "f3", 1)})
	require.NoError(t, err)
	require.Equal(t, map[string][]int64{"f1": {0, 1}, "f2": {0}}, d2.Deletes)
	require.Equal(t, int64(1), d2.NoopDeletes, "c was truncated before its delete")
	require.Equal(t, int64(1), d2.Truncates)
	require.NoError(t, ix.Apply(d2, 11))
	require.Equal(t, 1, ix.Len())
	f, pos, ok := ix.Lookup("b")
	require.True(t, ok)
	require.Equal(t, "f3", f)
	require.Equal(t, int64(0), pos)
	require.Equal(t, int64(1), ix.KeyBytes())
}
