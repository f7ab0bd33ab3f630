package catalog_test

import (
	"encoding/json"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
)

// TestFieldsOf reads the fields Tarn checks from iceberg-go's unexported
// update types, in the spec's names whatever spelling the client sent.
func TestFieldsOf(t *testing.T) {
	var legacy table.Updates
	require.NoError(t, json.Unmarshal([]byte(`[{"action":"set-properties","updated":{"a":"1"}},{"action":"remove-properties","removed":["b"]}]`), &legacy))
	tests := []struct {
		u    interface{ Action() string }
		want catalog.UpdateFields
	}{
		{table.NewSetLocationUpdate("s3://w/t"), catalog.UpdateFields{Action: table.UpdateSetLocation, Location: "s3://w/t"}},
		{table.NewSetPropertiesUpdate(iceberg.Properties{"k": "v"}), catalog.UpdateFields{Action: table.UpdateSetProperties, Updates: map[string]string{"k": "v"}}},
		{legacy[0], catalog.UpdateFields{Action: table.UpdateSetProperties, Updates: map[string]string{"a": "1"}}},
		{legacy[1], catalog.UpdateFields{Action: table.UpdateRemoveProperties, Removals: []string{"b"}}},
		{view.NewRemovePropertiesUpdate([]string{"x"}), catalog.UpdateFields{Action: table.UpdateRemoveProperties, Removals: []string{"x"}}},
	}
	for _, tt := range tests {
		got, err := catalog.FieldsOf(tt.u)
		require.NoError(t, err, tt.u.Action())
		assert.Equal(t, tt.want, got, tt.u.Action())
	}
}

// TestAddedSnapshot reads the snapshot of an add-snapshot update as a
// copy: changing its summary leaves the update as it was.
func TestAddedSnapshot(t *testing.T) {
	parent := int64(6)
	u := table.NewAddSnapshotUpdate(&table.Snapshot{
		SnapshotID: 7, ParentSnapshotID: &parent, SequenceNumber: 3, ManifestList: "file:///w/t/metadata/snap-7.avro",
		Summary: &table.Summary{Operation: table.OpAppend, Properties: iceberg.Properties{"k": "v"}},
	})
	snap, err := catalog.AddedSnapshot(u)
	require.NoError(t, err)
	assert.Equal(t, int64(7), snap.SnapshotID)
	assert.Equal(t, int64(6), *snap.ParentSnapshotID)
	assert.Equal(t, "file:///w/t/metadata/snap-7.avro", snap.ManifestList)
	assert.Equal(t, table.OpAppend, snap.Summary.Operation)
	assert.Equal(t, "v", snap.Summary.Properties["k"])

	snap.Summary.Properties["k"] = "changed"
	again, err := catalog.AddedSnapshot(u)
	require.NoError(t, err)
	assert.Equal(t, "v", again.Summary.Properties["k"])

	_, err = catalog.AddedSnapshot(table.NewAddSnapshotUpdate(nil))
	assert.ErrorContains(t, err, "no snapshot")
}
