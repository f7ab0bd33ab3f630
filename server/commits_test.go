package server_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/spec"
)

// mdSummary is every part of table metadata a TableUpdate can change, in
// comparable form: a commit test applies its expected change to the summary
// taken before the commit and requires the summary after it to be equal, so
// an update that changes more (or less) than requested fails.
type mdSummary struct {
	FormatVersion       int
	UUID                uuid.UUID
	Location            string
	LastColumnID        int
	CurrentSchemaID     int
	SchemaIDs           []int
	DefaultSpecID       int
	SpecIDs             []int
	LastPartitionID     int
	DefaultSortOrderID  int
	SortOrderIDs        []int
	SnapshotIDs         []int64
	Refs                map[string]table.SnapshotRef
	Properties          map[string]string
	Statistics          map[int64]string
	PartitionStatistics map[int64]string
	EncryptionKeys      map[string]string
}

func summarize(md table.Metadata) mdSummary {
	s := mdSummary{
		FormatVersion:       md.Version(),
		UUID:                md.TableUUID(),
		Location:            md.Location(),
		LastColumnID:        md.LastColumnID(),
		CurrentSchemaID:     md.CurrentSchema().ID,
		DefaultSpecID:       md.DefaultPartitionSpec(),
		DefaultSortOrderID:  md.DefaultSortOrder(),
		SchemaIDs:           []int{},
		SpecIDs:             []int{},
		SortOrderIDs:        []int{},
		SnapshotIDs:         []int64{},
		Refs:                map[string]table.SnapshotRef{},
		Properties:          maps.Clone(map[string]string(md.Properties())),
		Statistics:          map[int64]string{},
		PartitionStatistics: map[int64]string{},
		EncryptionKeys:      map[string]string{},
	}
	if s.Properties == nil {
		s.Properties = map[string]string{}
	}
	if p := md.LastPartitionSpecID(); p != nil {
		s.LastPartitionID = *p
	}
	for _, sc := range md.Schemas() {
		s.SchemaIDs = append(s.SchemaIDs, sc.ID)
	}
	for _, sp := range md.PartitionSpecs() {
		s.SpecIDs = append(s.SpecIDs, sp.ID())
	}
	for _, so := range md.SortOrders() {
		s.SortOrderIDs = append(s.SortOrderIDs, so.OrderID())
	}
	for _, sn := range md.Snapshots() {
		s.SnapshotIDs = append(s.SnapshotIDs, sn.SnapshotID)
	}
	for name, ref := range md.Refs() {
		s.Refs[name] = ref
	}
	for st := range md.Statistics() {
		s.Statistics[st.SnapshotID] = st.StatisticsPath
	}
	for st := range md.PartitionStatistics() {
		s.PartitionStatistics[st.SnapshotID] = st.StatisticsPath
	}
	for k := range md.EncryptionKeys() {
		s.EncryptionKeys[k.KeyID] = k.EncryptedKeyMetadata
	}
	slices.Sort(s.SchemaIDs)
	slices.Sort(s.SpecIDs)
	slices.Sort(s.SortOrderIDs)
	slices.Sort(s.SnapshotIDs)
	return s
}

// commitUpdates commits updates (and reqs) through the client's CommitTable.
func commitUpdates(t *testing.T, e *env, tbl *table.Table, reqs []table.Requirement, updates ...table.Update) {
	t.Helper()
	_, _, err := e.cat.CommitTable(t.Context(), tbl.Identifier(), reqs, updates)
	require.NoError(t, err)
}

// commitTx runs fn on a transaction of tbl and commits it.
func commitTx(t *testing.T, tbl *table.Table, fn func(tx *table.Transaction) error) *table.Table {
	t.Helper()
	tx := tbl.NewTransaction()
	require.NoError(t, fn(tx))
	out, err := tx.Commit(t.Context())
	require.NoError(t, err)
	return out
}

// schemaWithExtra is idDataSchema plus an optional int column "extra" (id 3).
func schemaWithExtra() *iceberg.Schema {
	return iceberg.NewSchema(1,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "data", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "extra", Type: iceberg.PrimitiveTypes.Int32},
	)
}

// bucketSpec partitions by bucket(4, id) as spec 1, field 1000.
func bucketSpec() *iceberg.PartitionSpec {
	s := iceberg.NewPartitionSpecID(1, iceberg.PartitionField{
		SourceIDs: []int{1}, FieldID: 1000, Name: "id_bucket", Transform: iceberg.BucketTransform{NumBuckets: 4},
	})
	return &s
}

// dataDescOrder sorts by data descending, nulls last, as order 1.
func dataDescOrder(t *testing.T) *table.SortOrder {
	t.Helper()
	o, err := table.NewSortOrder(1, []table.SortField{{
		SourceIDs: []int{2}, Transform: iceberg.IdentityTransform{}, Direction: table.SortDESC, NullOrder: table.NullsLast,
	}})
	require.NoError(t, err)
	return &o
}

func ptrTo[T any](v T) *T { return &v }

// TestCommitTableUpdates commits each TableUpdate kind of the REST spec
// (23 kinds; several also through iceberg-go's transaction API) and
// asserts that the loaded metadata changed exactly as requested.
func TestCommitTableUpdates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.namespace(t, "updates")

	// current returns the current snapshot id of tbl.
	current := func(tbl *table.Table) int64 { return tbl.CurrentSnapshot().SnapshotID }
	tag := func(t *testing.T, tbl *table.Table, name string) *table.Table {
		commitUpdates(t, e, tbl, []table.Requirement{table.AssertRefSnapshotID(name, nil)},
			table.NewSetSnapshotRefUpdate(name, current(tbl), table.TagRef, 0, 0, 0))
		return e.load(t, tbl.Identifier())
	}
	statsFile := func(tbl *table.Table) table.StatisticsFile {
		id := current(tbl)
		return table.StatisticsFile{
			SnapshotID: id, StatisticsPath: tbl.Location() + "/metadata/stats-1.puffin",
			FileSizeInBytes: 413, FileFooterSizeInBytes: 42,
			BlobMetadata: []table.BlobMetadata{{
				Type: table.BlobTypeApacheDatasketchesThetaV1, SnapshotID: id, SequenceNumber: 1,
				Fields: []int32{1}, Properties: map[string]string{"ndv": "3"},
			}},
		}
	}
	partStatsFile := func(tbl *table.Table) table.PartitionStatisticsFile {
		return table.PartitionStatisticsFile{SnapshotID: current(tbl), StatisticsPath: tbl.Location() + "/metadata/partition-stats-1.parquet", FileSizeInBytes: 1024}
	}
	key := table.EncryptionKey{KeyID: "key-1", EncryptedKeyMetadata: "AAECAwQ=", Properties: map[string]string{"kms": "test"}}

	tests := []struct {
		name string
		// props are the create-table properties (format-version).
		props iceberg.Properties
		// prepare brings the table into the state the update needs.
		prepare func(t *testing.T, tbl *table.Table) *table.Table
		// commit makes the commit under test.
		commit func(t *testing.T, tbl *table.Table)
		// want applies the expected change to the summary before the commit.
		want func(s *mdSummary, before, after table.Metadata)
		// check makes further assertions on the loaded table.
		check func(t *testing.T, before, after *table.Table)
		// noop is set for an update that changes nothing, so no
		// assertions on metadata files are made.
		noop bool
	}{
		{
			name: "assign-uuid of the table's own uuid is a no-op",
			commit: func(t *testing.T, tbl *table.Table) {
				u := tbl.Metadata().TableUUID()
				commitUpdates(t, e, tbl, []table.Requirement{table.AssertTableUUID(u)}, table.NewAssignUUIDUpdate(u))
			},
			want: func(s *mdSummary, _, _ table.Metadata) {},
			noop: true,
		},
		{
			name:  "upgrade-format-version 1 to 2",
			props: iceberg.Properties{table.PropertyFormatVersion: "1"},
			commit: func(t *testing.T, tbl *table.Table) {
				commitTx(t, tbl, func(tx *table.Transaction) error { return tx.UpgradeFormatVersion(2) })
			},
			want: func(s *mdSummary, _, _ table.Metadata) { s.FormatVersion = 2 },
		},
		{
			name: "upgrade-format-version 2 to 3",
			commit: func(t *testing.T, tbl *table.Table) {
				commitTx(t, tbl, func(tx *table.Transaction) error { return tx.UpgradeFormatVersion(3) })
			},
			want: func(s *mdSummary, _, _ table.Metadata) { s.FormatVersion = 3 },
		},
		{
			name: "add-schema",
			commit: func(t *testing.T, tbl *table.Table) {
				commitUpdates(t, e, tbl, []table.Requirement{table.AssertLastAssignedFieldID(2)}, table.NewAddSchemaUpdate(schemaWithExtra()))
			},
			want: func(s *mdSummary, _, _ table.Metadata) { s.SchemaIDs, s.LastColumnID = []int{0, 1}, 3 },
			check: func(t *testing.T, _, after *table.Table) {
				sc := after.Schemas()[1]
				require.NotNil(t, sc)
				f, ok := sc.FindFieldByName("extra")
				require.True(t, ok)
				assert.Equal(t, 3, f.ID)
				assert.Equal(t, iceberg.PrimitiveTypes.Int32, f.Type)
			},
		},
		{
			name: "set-current-schema",
			prepare: func(t *testing.T, tbl *table.Table) *table.Table {
				commitUpdates(t, e, tbl, nil, table.NewAddSchemaUpdate(schemaWithExtra()))
				return e.load(t, tbl.Identifier())
			},
			commit: func(t *testing.T, tbl *table.Table) {
				commitUpdates(t, e, tbl, []table.Requirement{table.AssertCurrentSchemaID(0)}, table.NewSetCurrentSchemaUpdate(1))
			},
			want: func(s *mdSummary, _, _ table.Metadata) { s.CurrentSchemaID = 1 },
			check: func(t *testing.T, _, after *table.Table) {
				assert.Equal(t, []string{"id", "data", "extra"}, fieldNames(after.Schema()))
			},
		},
		{
			name: "add-schema and set-current-schema through UpdateSchema",
			commit: func(t *testing.T, tbl *table.Table) {
				commitTx(t, tbl, func(tx *table.Transaction) error {
					return tx.UpdateSchema(true, false).AddColumn([]string{"extra"}, iceberg.PrimitiveTypes.Int32, "an extra column", false, nil).Commit()
				})
			},
			want: func(s *mdSummary, _, _ table.Metadata) {
				s.SchemaIDs, s.CurrentSchemaID, s.LastColumnID = []int{0, 1}, 1, 3
			},
			check: func(t *testing.T, _, after *table.Table) {
				assert.Equal(t, []string{"id", "data", "extra"}, fieldNames(after.Schema()))
				f, _ := after.Schema().FindFieldByName("extra")
				assert.Equal(t, "an extra column", f.Doc)
			},
		},
		{
			name: "add-spec",
			commit: func(t *testing.T, tbl *table.Table) {
				commitUpdates(t, e, tbl, []table.Requirement{table.AssertLastAssignedPartitionID(999)}, table.NewAddPartitionSpecUpdate(bucketSpec(), false))
			},
			want: func(s *mdSummary, _, _ table.Metadata) { s.SpecIDs, s.LastPartitionID = []int{0, 1}, 1000 },
			check: func(t *testing.T, _, after *table.Table) {
				sp := after.Metadata().PartitionSpecByID(1)
				require.NotNil(t, sp)
				require.Equal(t, 1, sp.NumFields())
				assert.Equal(t, "id_bucket", sp.Field(0).Name)
				assert.Equal(t, iceberg.BucketTransform{NumBuckets: 4}, sp.Field(0).Transform)
				assert.True(t, after.Spec().IsUnpartitioned(), "the default spec is unchanged")
			},
		},
		{
			name: "set-default-spec",
			prepare: func(t *testing.T, tbl *table.Table) *table.Table {
				commitUpdates(t, e, tbl, nil, table.NewAddPartitionSpecUpdate(bucketSpec(), false))
				return e.load(t, tbl.Identifier())
			},
			commit: func(t *testing.T, tbl *table.Table) {
				commitUpdates(t, e, tbl, []table.Requirement{table.AssertDefaultSpecID(0)}, table.NewSetDefaultSpecUpdate(1))
			},
			want: func(s *mdSummary, _, _ table.Metadata) { s.DefaultSpecID = 1 },
			check: func(t *testing.T, _, after *table.Table) {
				sp := after.Spec()
				assert.Equal(t, "id_bucket", sp.Field(0).Name)
			},
		},
		{
			name: "add-spec and set-default-spec through UpdateSpec",
			commit: func(t *testing.T, tbl *table.Table) {
				commitTx(t, tbl, func(tx *table.Transaction) error {
					return tx.UpdateSpec(true).AddField("id", iceberg.BucketTransform{NumBuckets: 4}, "id_bucket").Commit()
				})
			},
			want: func(s *mdSummary, _, _ table.Metadata) {
				s.SpecIDs, s.DefaultSpecID, s.LastPartitionID = []int{0, 1}, 1, 1000
			},
			check: func(t *testing.T, _, after *table.Table) {
				sp := after.Spec()
				require.Equal(t, 1, sp.NumFields())
				assert.Equal(t, "id_bucket", sp.Field(0).Name)
				assert.Equal(t, []int{1}, sp.Field(0).SourceIDs)
			},
		},
		{
			name: "add-sort-order",
			commit: func(t *testing.T, tbl *table.Table) {
				commitUpdates(t, e, tbl, nil, table.NewAddSortOrderUpdate(dataDescOrder(t)))
			},
			want: func(s *mdSummary, _, _ table.Metadata) { s.SortOrderIDs = []int{0, 1} },
			check: func(t *testing.T, _, after *table.Table) {
				assert.True(t, after.SortOrder().IsUnsorted(), "the default order is unchanged")
			},
		},
		{
			name: "set-default-sort-order",
			prepare: func(t *testing.T, tbl *table.Table) *table.Table {
				commitUpdates(t, e, tbl, nil, table.NewAddSortOrderUpdate(dataDescOrder(t)))
				return e.load(t, tbl.Identifier())
			},
			commit: func(t *testing.T, tbl *table.Table) {
				commitUpdates(t, e, tbl, []table.Requirement{table.AssertDefaultSortOrderID(0)}, table.NewSetDefaultSortOrderUpdate(1))
			},
			want: func(s *mdSummary, _, _ table.Metadata) { s.DefaultSortOrderID = 1 },
			check: func(t *testing.T, _, after *table.Table) {
				so := after.SortOrder()
				require.Equal(t, 1, so.Len())
				assert.Equal(t, table.SortDESC, so.Field(0).Direction)
				assert.Equal(t, table.NullsLast, so.Field(0).NullOrder)
				assert.Equal(t, []int{2}, so.Field(0).SourceIDs)
			},
		},
		{
			name: "add-sort-order and set-default-sort-order through ReplaceSortOrder",
			commit: func(t *testing.T, tbl *table.Table) {
				commitTx(t, tbl, func(tx *table.Transaction) error { return tx.ReplaceSortOrder(*dataDescOrder(t)) })
			},
			want: func(s *mdSummary, _, _ table.Metadata) { s.SortOrderIDs, s.DefaultSortOrderID = []int{0, 1}, 1 },
		},
		{
			name:    "add-snapshot",
			prepare: func(t *testing.T, tbl *table.Table) *table.Table { return appendRows(t, tbl, 1, 2, 3) },
			commit: func(t *testing.T, tbl *table.Table) {
				// A second snapshot over the same manifest list, referenced by
				// no branch (as a write-audit-publish stage would leave it).
				cur := tbl.CurrentSnapshot()
				snap := &table.Snapshot{
					SnapshotID: cur.SnapshotID + 1, ParentSnapshotID: &cur.SnapshotID,
					SequenceNumber: tbl.Metadata().LastSequenceNumber() + 1, TimestampMs: time.Now().UnixMilli(),
					ManifestList: cur.ManifestList, SchemaID: ptrTo(0),
					Summary: &table.Summary{Operation: table.OpAppend, Properties: iceberg.Properties{"staged": "yes"}},
				}
				commitUpdates(t, e, tbl, nil, table.NewAddSnapshotUpdate(snap))
			},
			want: func(s *mdSummary, before, _ table.Metadata) {
				s.SnapshotIDs = append(s.SnapshotIDs, before.CurrentSnapshot().SnapshotID+1)
			},
			check: func(t *testing.T, before, after *table.Table) {
				id := current(before) + 1
				snap := after.SnapshotByID(id)
				require.NotNil(t, snap)
				assert.Equal(t, "yes", snap.Summary.Properties["staged"])
				assert.Equal(t, before.Metadata().LastSequenceNumber()+1, snap.SequenceNumber)
				assert.Equal(t, current(before), current(after), "main does not move")
				count, sum := scanCountAndSum(t, after, table.WithSnapshotID(id))
				assert.Equal(t, int64(3), count)
				assert.Equal(t, int64(6), sum)
			},
		},
		{
			name: "add-snapshot and set-snapshot-ref through Append",
			commit: func(t *testing.T, tbl *table.Table) {
				appendRows(t, tbl, 4, 5)
			},
			want: func(s *mdSummary, _, after table.Metadata) {
				id := after.CurrentSnapshot().SnapshotID
				s.SnapshotIDs = []int64{id}
				s.Refs = map[string]table.SnapshotRef{table.MainBranch: {SnapshotID: id, SnapshotRefType: table.BranchRef}}
				// Append also records the schema's default name mapping.
				if v, ok := after.Properties()[table.DefaultNameMappingKey]; ok {
					s.Properties[table.DefaultNameMappingKey] = v
				}
			},
			check: func(t *testing.T, _, after *table.Table) {
				snap := after.CurrentSnapshot()
				assert.Equal(t, table.OpAppend, snap.Summary.Operation)
				assert.Equal(t, "2", snap.Summary.Properties["added-records"])
				assert.Nil(t, snap.ParentSnapshotID)
				assert.Equal(t, int64(1), snap.SequenceNumber)
			},
		},
		{
			name:    "set-snapshot-ref tag",
			prepare: func(t *testing.T, tbl *table.Table) *table.Table { return appendRows(t, tbl, 1) },
			commit: func(t *testing.T, tbl *table.Table) {
				commitUpdates(t, e, tbl, []table.Requirement{table.AssertRefSnapshotID("v1", nil)},
					table.NewSetSnapshotRefUpdate("v1", current(tbl), table.TagRef, 3_600_000, 0, 0))
			},
			want: func(s *mdSummary, before, _ table.Metadata) {
				s.Refs["v1"] = table.SnapshotRef{SnapshotID: before.CurrentSnapshot().SnapshotID, SnapshotRefType: table.TagRef, MaxRefAgeMs: ptrTo(int64(3_600_000))}
			},
		},
		{
			name:    "set-snapshot-ref branch with retention",
			prepare: func(t *testing.T, tbl *table.Table) *table.Table { return appendRows(t, tbl, 1) },
			commit: func(t *testing.T, tbl *table.Table) {
				commitUpdates(t, e, tbl, []table.Requirement{table.AssertRefSnapshotID("dev", nil)},
					table.NewSetSnapshotRefUpdate("dev", current(tbl), table.BranchRef, 0, 86_400_000, 5))
			},
			want: func(s *mdSummary, before, _ table.Metadata) {
				s.Refs["dev"] = table.SnapshotRef{
					SnapshotID: before.CurrentSnapshot().SnapshotID, SnapshotRefType: table.BranchRef,
					MinSnapshotsToKeep: ptrTo(5), MaxSnapshotAgeMs: ptrTo(int64(86_400_000)),
				}
			},
		},
		{
			name: "set-snapshot-ref main through RollbackToSnapshot",
			prepare: func(t *testing.T, tbl *table.Table) *table.Table {
				return appendRows(t, appendRows(t, tbl, 1, 2), 3)
			},
			commit: func(t *testing.T, tbl *table.Table) {
				commitTx(t, tbl, func(tx *table.Transaction) error {
					return tx.RollbackToSnapshot(*tbl.CurrentSnapshot().ParentSnapshotID)
				})
			},
			want: func(s *mdSummary, before, _ table.Metadata) {
				s.Refs[table.MainBranch] = table.SnapshotRef{SnapshotID: *before.CurrentSnapshot().ParentSnapshotID, SnapshotRefType: table.BranchRef}
			},
			check: func(t *testing.T, _, after *table.Table) {
				count, sum := scanCountAndSum(t, after)
				assert.Equal(t, int64(2), count)
				assert.Equal(t, int64(3), sum)
			},
		},
		{
			name: "remove-snapshots",
			prepare: func(t *testing.T, tbl *table.Table) *table.Table {
				return appendRows(t, appendRows(t, tbl, 1, 2), 3)
			},
			commit: func(t *testing.T, tbl *table.Table) {
				commitUpdates(t, e, tbl, nil, table.NewRemoveSnapshotsUpdate([]int64{*tbl.CurrentSnapshot().ParentSnapshotID}, false))
			},
			want: func(s *mdSummary, before, _ table.Metadata) {
				s.SnapshotIDs = []int64{before.CurrentSnapshot().SnapshotID}
			},
		},
		{
			name: "remove-snapshots through ExpireSnapshots",
			prepare: func(t *testing.T, tbl *table.Table) *table.Table {
				tbl = appendRows(t, appendRows(t, tbl, 1, 2), 3)
				time.Sleep(5 * time.Millisecond) // both snapshots are older than the cutoff
				return tbl
			},
			commit: func(t *testing.T, tbl *table.Table) {
				commitTx(t, tbl, func(tx *table.Transaction) error {
					return tx.ExpireSnapshots(table.WithOlderThan(0), table.WithRetainLast(1))
				})
			},
			want: func(s *mdSummary, before, _ table.Metadata) {
				s.SnapshotIDs = []int64{before.CurrentSnapshot().SnapshotID}
			},
			check: func(t *testing.T, _, after *table.Table) {
				count, sum := scanCountAndSum(t, after)
				assert.Equal(t, int64(3), count, "the retained snapshot still reads the expired one's data files")
				assert.Equal(t, int64(6), sum)
			},
		},
		{
			name: "remove-snapshot-ref",
			prepare: func(t *testing.T, tbl *table.Table) *table.Table {
				return tag(t, appendRows(t, tbl, 1), "v1")
			},
			commit: func(t *testing.T, tbl *table.Table) {
				commitUpdates(t, e, tbl, nil, table.NewRemoveSnapshotRefUpdate("v1"))
			},
			want: func(s *mdSummary, _, _ table.Metadata) { delete(s.Refs, "v1") },
		},
		{
			name: "set-location",
			commit: func(t *testing.T, tbl *table.Table) {
				commitUpdates(t, e, tbl, nil, table.NewSetLocationUpdate(e.srv.Warehouse.Location+"/updates/relocated"))
			},
			want: func(s *mdSummary, _, _ table.Metadata) { s.Location = e.srv.Warehouse.Location + "/updates/relocated" },
			check: func(t *testing.T, _, after *table.Table) {
				assert.Contains(t, after.MetadataLocation(), "/updates/relocated/metadata/", "new metadata is written under the new location")
			},
		},
		{
			name: "set-properties",
			commit: func(t *testing.T, tbl *table.Table) {
				commitTx(t, tbl, func(tx *table.Transaction) error {
					return tx.SetProperties(iceberg.Properties{"owner": "tarn", "comment": "a table"})
				})
			},
			want: func(s *mdSummary, _, _ table.Metadata) {
				s.Properties["owner"], s.Properties["comment"] = "tarn", "a table"
			},
		},
		{
			name: "remove-properties",
			prepare: func(t *testing.T, tbl *table.Table) *table.Table {
				return commitTx(t, tbl, func(tx *table.Transaction) error {
					return tx.SetProperties(iceberg.Properties{"owner": "tarn", "comment": "a table"})
				})
			},
			commit: func(t *testing.T, tbl *table.Table) {
				commitTx(t, tbl, func(tx *table.Transaction) error { return tx.RemoveProperties([]string{"owner", "never-set"}) })
			},
			want: func(s *mdSummary, _, _ table.Metadata) { delete(s.Properties, "owner") },
		},
		{
			name:    "set-statistics",
			prepare: func(t *testing.T, tbl *table.Table) *table.Table { return appendRows(t, tbl, 1) },
			commit: func(t *testing.T, tbl *table.Table) {
				commitUpdates(t, e, tbl, nil, table.NewSetStatisticsUpdate(statsFile(tbl)))
			},
			want: func(s *mdSummary, before, _ table.Metadata) {
				s.Statistics[before.CurrentSnapshot().SnapshotID] = before.Location() + "/metadata/stats-1.puffin"
			},
			check: func(t *testing.T, before, after *table.Table) {
				got := slices.Collect(after.Metadata().Statistics())
				require.Len(t, got, 1)
				assert.Equal(t, statsFile(before), got[0])
			},
		},
		{
			name: "remove-statistics",
			prepare: func(t *testing.T, tbl *table.Table) *table.Table {
				tbl = appendRows(t, tbl, 1)
				commitUpdates(t, e, tbl, nil, table.NewSetStatisticsUpdate(statsFile(tbl)))
				return e.load(t, tbl.Identifier())
			},
			commit: func(t *testing.T, tbl *table.Table) {
				commitUpdates(t, e, tbl, nil, table.NewRemoveStatisticsUpdate(current(tbl)))
			},
			want: func(s *mdSummary, _, _ table.Metadata) { s.Statistics = map[int64]string{} },
		},
		{
			name:    "set-partition-statistics",
			prepare: func(t *testing.T, tbl *table.Table) *table.Table { return appendRows(t, tbl, 1) },
			commit: func(t *testing.T, tbl *table.Table) {
				commitUpdates(t, e, tbl, nil, table.NewSetPartitionStatisticsUpdate(partStatsFile(tbl)))
			},
			want: func(s *mdSummary, before, _ table.Metadata) {
				s.PartitionStatistics[before.CurrentSnapshot().SnapshotID] = before.Location() + "/metadata/partition-stats-1.parquet"
			},
			check: func(t *testing.T, before, after *table.Table) {
				got := slices.Collect(after.Metadata().PartitionStatistics())
				require.Len(t, got, 1)
				assert.Equal(t, partStatsFile(before), got[0])
			},
		},
		{
			name: "remove-partition-statistics",
			prepare: func(t *testing.T, tbl *table.Table) *table.Table {
				tbl = appendRows(t, tbl, 1)
				commitUpdates(t, e, tbl, nil, table.NewSetPartitionStatisticsUpdate(partStatsFile(tbl)))
				return e.load(t, tbl.Identifier())
			},
			commit: func(t *testing.T, tbl *table.Table) {
				commitUpdates(t, e, tbl, nil, table.NewRemovePartitionStatisticsUpdate(current(tbl)))
			},
			want: func(s *mdSummary, _, _ table.Metadata) { s.PartitionStatistics = map[int64]string{} },
		},
		{
			name: "remove-partition-specs",
			prepare: func(t *testing.T, tbl *table.Table) *table.Table {
				commitUpdates(t, e, tbl, nil, table.NewAddPartitionSpecUpdate(bucketSpec(), false))
				return e.load(t, tbl.Identifier())
			},
			commit: func(t *testing.T, tbl *table.Table) {
				commitUpdates(t, e, tbl, []table.Requirement{table.AssertDefaultSpecID(0)}, table.NewRemoveSpecUpdate([]int{1}))
			},
			want: func(s *mdSummary, _, _ table.Metadata) { s.SpecIDs = []int{0} },
		},
		{
			name: "remove-schemas",
			prepare: func(t *testing.T, tbl *table.Table) *table.Table {
				commitUpdates(t, e, tbl, nil, table.NewAddSchemaUpdate(schemaWithExtra()))
				return e.load(t, tbl.Identifier())
			},
			commit: func(t *testing.T, tbl *table.Table) {
				commitUpdates(t, e, tbl, []table.Requirement{table.AssertCurrentSchemaID(0)}, table.NewRemoveSchemasUpdate([]int{1}))
			},
			want: func(s *mdSummary, _, _ table.Metadata) { s.SchemaIDs = []int{0} },
		},
		{
			name:  "add-encryption-key",
			props: iceberg.Properties{table.PropertyFormatVersion: "3"},
			commit: func(t *testing.T, tbl *table.Table) {
				commitUpdates(t, e, tbl, nil, table.NewAddEncryptionKeyUpdate(key))
			},
			want: func(s *mdSummary, _, _ table.Metadata) { s.EncryptionKeys[key.KeyID] = key.EncryptedKeyMetadata },
			check: func(t *testing.T, _, after *table.Table) {
				assert.Equal(t, []table.EncryptionKey{key}, slices.Collect(after.Metadata().EncryptionKeys()))
			},
		},
		{
			name:  "remove-encryption-key",
			props: iceberg.Properties{table.PropertyFormatVersion: "3"},
			prepare: func(t *testing.T, tbl *table.Table) *table.Table {
				commitUpdates(t, e, tbl, nil, table.NewAddEncryptionKeyUpdate(key))
				return e.load(t, tbl.Identifier())
			},
			commit: func(t *testing.T, tbl *table.Table) {
				commitUpdates(t, e, tbl, nil, table.NewRemoveEncryptionKeyUpdate(key.KeyID))
			},
			want: func(s *mdSummary, _, _ table.Metadata) { s.EncryptionKeys = map[string]string{} },
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []catalog.CreateTableOpt
			if tt.props != nil {
				opts = append(opts, catalog.WithProperties(tt.props))
			}
			tbl := e.createTable(t, ns, "t"+string(rune('a'+i/26))+string(rune('a'+i%26)), opts...)
			if tt.prepare != nil {
				tbl = tt.prepare(t, tbl)
			}
			before := e.load(t, tbl.Identifier())
			filesBefore := metadataFiles(t, before.Location())

			tt.commit(t, before)

			after := e.load(t, tbl.Identifier())
			want := summarize(before.Metadata())
			tt.want(&want, before.Metadata(), after.Metadata())
			assert.Equal(t, want, summarize(after.Metadata()))
			if tt.check != nil {
				tt.check(t, before, after)
			}
			if tt.noop {
				return
			}
			assert.NotEqual(t, before.MetadataLocation(), after.MetadataLocation())
			if after.Location() == before.Location() {
				assert.Len(t, metadataFiles(t, after.Location()), len(filesBefore)+1, "one new metadata file per commit")
			}
			prev := slices.Collect(after.Metadata().PreviousFiles())
			if assert.NotEmpty(t, prev) {
				assert.Equal(t, before.MetadataLocation(), prev[len(prev)-1].MetadataFile, "the metadata log ends with the previous file")
			}
		})
	}
}

func fieldNames(sc *iceberg.Schema) []string {
	var out []string
	for _, f := range sc.Fields() {
		out = append(out, f.Name)
	}
	return out
}

// TestCommitTableInvalidUpdates sends updates the metadata builder must
// refuse: each gets 400 BadRequestException and leaves the table as it was.
func TestCommitTableInvalidUpdates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.namespace(t, "invalid")
	tbl := appendRows(t, e.createTable(t, ns, "t"), 1)
	before, beforeMD := e.loadRaw(t, ns, "t")
	files := metadataFiles(t, beforeMD.Location())

	upd := func(u table.Update) string {
		b, err := json.Marshal(u)
		require.NoError(t, err)
		return `{"requirements":[],"updates":[` + string(b) + `]}`
	}
	tests := []struct {
		name string
		body string
	}{
		{"upgrade-format-version downgrade", upd(table.NewUpgradeFormatVersionUpdate(1))},
		{"upgrade-format-version beyond supported", upd(table.NewUpgradeFormatVersionUpdate(9))},
		{"set-current-schema unknown", upd(table.NewSetCurrentSchemaUpdate(7))},
		{"remove-schemas current", upd(table.NewRemoveSchemasUpdate([]int{0}))},
		{"set-default-spec unknown", upd(table.NewSetDefaultSpecUpdate(5))},
		{"remove-partition-specs default", upd(table.NewRemoveSpecUpdate([]int{0}))},
		{"set-default-sort-order unknown", upd(table.NewSetDefaultSortOrderUpdate(9))},
		{"set-snapshot-ref unknown snapshot", upd(table.NewSetSnapshotRefUpdate("x", 42, table.TagRef, 0, 0, 0))},
		{"set-location outside the warehouse", upd(table.NewSetLocationUpdate("file:///elsewhere/t"))},
		{"add-encryption-key on a v2 table", upd(table.NewAddEncryptionKeyUpdate(table.EncryptionKey{KeyID: "k", EncryptedKeyMetadata: "AA=="}))},
		{"unknown action", `{"requirements":[],"updates":[{"action":"make-it-fast"}]}`},
		{"unknown requirement", `{"requirements":[{"type":"assert-luck"}],"updates":[]}`},
		{"update missing its field", `{"requirements":[],"updates":[{"action":"set-location"}]}`},
		{"malformed json", `{"requirements":[],"updates":[`},
		{"identifier mismatch", `{"identifier":{"namespace":["invalid"],"name":"other"},"requirements":[],"updates":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(t, http.MethodPost, tablePath(ns, "t"), tt.body)
			requireBadRequest(t, r)
			loc, md := e.loadRaw(t, ns, "t")
			assert.Equal(t, before, loc)
			assert.Equal(t, summarize(beforeMD), summarize(md))
			assert.ElementsMatch(t, files, metadataFiles(t, md.Location()), "no metadata file left behind")
		})
	}

	t.Run("client maps 400 to ErrBadRequest", func(t *testing.T) {
		_, _, err := e.cat.CommitTable(t.Context(), tbl.Identifier(), nil, []table.Update{table.NewSetCurrentSchemaUpdate(7)})
		assert.ErrorIs(t, err, rest.ErrBadRequest)
	})
	t.Run("commit to a missing table", func(t *testing.T) {
		r := e.do(t, http.MethodPost, tablePath(ns, "missing"), upd(table.NewSetPropertiesUpdate(iceberg.Properties{"a": "b"})))
		requireError(t, r, http.StatusNotFound, "NoSuchTableException")
	})
	t.Run("commit to a missing namespace", func(t *testing.T) {
		r := e.do(t, http.MethodPost, tablePath([]string{"nowhere"}, "t"), upd(table.NewSetPropertiesUpdate(iceberg.Properties{"a": "b"})))
		requireError(t, r, http.StatusNotFound, "NoSuchTableException")
	})
}

// TestCommitTableRequirements commits with each TableRequirement of the
// REST spec (8 kinds) as raw JSON: a passing one applies the commit, a
// failing one gets 409 CommitFailedException and leaves the
// metadata-location and the metadata files as they were.
func TestCommitTableRequirements(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.namespace(t, "reqs")
	tbl := e.createTable(t, ns, "t", catalog.WithProperties(iceberg.Properties{"seq": "0"}))
	tbl = appendRows(t, tbl, 1, 2)
	commitUpdates(t, e, tbl, nil,
		table.NewSetSnapshotRefUpdate("t1", tbl.CurrentSnapshot().SnapshotID, table.TagRef, 0, 0, 0),
		table.NewAddPartitionSpecUpdate(bucketSpec(), false))

	type reqFn func(md table.Metadata) map[string]any
	req := func(typ string, kv ...any) map[string]any {
		m := map[string]any{"type": typ}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	snapID := func(md table.Metadata) int64 { return md.CurrentSnapshot().SnapshotID }
	lastPart := func(md table.Metadata) int { return *md.LastPartitionSpecID() }

	tests := []struct {
		name string
		pass reqFn
		fail reqFn
	}{
		{
			name: "assert-table-uuid",
			pass: func(md table.Metadata) map[string]any { return req("assert-table-uuid", "uuid", md.TableUUID()) },
			fail: func(md table.Metadata) map[string]any { return req("assert-table-uuid", "uuid", uuid.New()) },
		},
		{
			name: "assert-ref-snapshot-id",
			pass: func(md table.Metadata) map[string]any {
				return req("assert-ref-snapshot-id", "ref", "main", "snapshot-id", snapID(md))
			},
			fail: func(md table.Metadata) map[string]any {
				return req("assert-ref-snapshot-id", "ref", "main", "snapshot-id", snapID(md)+1)
			},
		},
		{
			name: "assert-ref-snapshot-id of a tag",
			pass: func(md table.Metadata) map[string]any {
				return req("assert-ref-snapshot-id", "ref", "t1", "snapshot-id", md.SnapshotByName("t1").SnapshotID)
			},
			fail: func(md table.Metadata) map[string]any {
				return req("assert-ref-snapshot-id", "ref", "t1", "snapshot-id", md.SnapshotByName("t1").SnapshotID-1)
			},
		},
		{
			name: "assert-ref-snapshot-id null means the ref must not exist",
			pass: func(md table.Metadata) map[string]any {
				return req("assert-ref-snapshot-id", "ref", "not-yet", "snapshot-id", nil)
			},
			fail: func(md table.Metadata) map[string]any {
				return req("assert-ref-snapshot-id", "ref", "main", "snapshot-id", nil)
			},
		},
		{
			name: "assert-ref-snapshot-id of a missing ref",
			pass: func(md table.Metadata) map[string]any {
				return req("assert-ref-snapshot-id", "ref", "t1", "snapshot-id", md.SnapshotByName("t1").SnapshotID)
			},
			fail: func(md table.Metadata) map[string]any {
				return req("assert-ref-snapshot-id", "ref", "missing", "snapshot-id", snapID(md))
			},
		},
		{
			name: "assert-last-assigned-field-id",
			pass: func(md table.Metadata) map[string]any {
				return req("assert-last-assigned-field-id", "last-assigned-field-id", md.LastColumnID())
			},
			fail: func(md table.Metadata) map[string]any {
				return req("assert-last-assigned-field-id", "last-assigned-field-id", md.LastColumnID()+1)
			},
		},
		{
			name: "assert-current-schema-id",
			pass: func(md table.Metadata) map[string]any {
				return req("assert-current-schema-id", "current-schema-id", md.CurrentSchema().ID)
			},
			fail: func(md table.Metadata) map[string]any {
				return req("assert-current-schema-id", "current-schema-id", md.CurrentSchema().ID+1)
			},
		},
		{
			name: "assert-last-assigned-partition-id",
			pass: func(md table.Metadata) map[string]any {
				return req("assert-last-assigned-partition-id", "last-assigned-partition-id", lastPart(md))
			},
			fail: func(md table.Metadata) map[string]any {
				return req("assert-last-assigned-partition-id", "last-assigned-partition-id", lastPart(md)-1)
			},
		},
		{
			name: "assert-default-spec-id",
			pass: func(md table.Metadata) map[string]any {
				return req("assert-default-spec-id", "default-spec-id", md.DefaultPartitionSpec())
			},
			fail: func(md table.Metadata) map[string]any {
				return req("assert-default-spec-id", "default-spec-id", md.DefaultPartitionSpec()+1)
			},
		},
		{
			name: "assert-default-sort-order-id",
			pass: func(md table.Metadata) map[string]any {
				return req("assert-default-sort-order-id", "default-sort-order-id", md.DefaultSortOrder())
			},
			fail: func(md table.Metadata) map[string]any {
				return req("assert-default-sort-order-id", "default-sort-order-id", md.DefaultSortOrder()+1)
			},
		},
	}
	seq := 0
	commit := func(t *testing.T, reqs ...map[string]any) rawResponse {
		seq++
		body := map[string]any{
			"identifier":   map[string]any{"namespace": ns, "name": "t"},
			"requirements": reqs,
			"updates":      []any{map[string]any{"action": "set-properties", "updates": map[string]string{"seq": strconv.Itoa(seq)}}},
		}
		return e.do(t, http.MethodPost, tablePath(ns, "t"), body)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Run("pass", func(t *testing.T) {
				loc, md := e.loadRaw(t, ns, "t")
				r := commit(t, tt.pass(md))
				require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)
				res := decodeJSON[spec.CommitTableResponse](t, r)
				assert.NotEqual(t, loc, res.MetadataLocation)
				newLoc, newMD := e.loadRaw(t, ns, "t")
				assert.Equal(t, res.MetadataLocation, newLoc)
				assert.Equal(t, strconv.Itoa(seq), newMD.Properties()["seq"])
			})
			t.Run("fail", func(t *testing.T) {
				loc, md := e.loadRaw(t, ns, "t")
				files := metadataFiles(t, md.Location())
				r := commit(t, tt.fail(md))
				requireError(t, r, http.StatusConflict, "CommitFailedException")
				newLoc, newMD := e.loadRaw(t, ns, "t")
				assert.Equal(t, loc, newLoc)
				assert.Equal(t, md.Properties()["seq"], newMD.Properties()["seq"])
				assert.ElementsMatch(t, files, metadataFiles(t, md.Location()))
			})
		})
	}

	t.Run("assert-create", func(t *testing.T) {
		t.Run("pass", func(t *testing.T) {
			md := e.stageCreate(t, ns, spec.CreateTableRequest{Name: "created", Schema: idDataSchema()})
			r := e.do(t, http.MethodPost, tablePath(ns, "created"), commitBody(t, ns, "created", []table.Requirement{table.AssertCreate()}, createUpdates(md)))
			require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)
			loc, got := e.loadRaw(t, ns, "created")
			assert.Equal(t, decodeJSON[spec.CommitTableResponse](t, r).MetadataLocation, loc)
			assert.Equal(t, md.TableUUID(), got.TableUUID())
		})
		t.Run("fail", func(t *testing.T) {
			loc, md := e.loadRaw(t, ns, "t")
			files := metadataFiles(t, md.Location())
			r := commit(t, req("assert-create"))
			requireError(t, r, http.StatusConflict, "CommitFailedException")
			newLoc, _ := e.loadRaw(t, ns, "t")
			assert.Equal(t, loc, newLoc)
			assert.ElementsMatch(t, files, metadataFiles(t, md.Location()))
		})
	})
	t.Run("one failing requirement among passing ones", func(t *testing.T) {
		loc, md := e.loadRaw(t, ns, "t")
		r := commit(t,
			req("assert-table-uuid", "uuid", md.TableUUID()),
			req("assert-current-schema-id", "current-schema-id", md.CurrentSchema().ID),
			req("assert-default-spec-id", "default-spec-id", md.DefaultPartitionSpec()+1),
		)
		requireError(t, r, http.StatusConflict, "CommitFailedException")
		newLoc, _ := e.loadRaw(t, ns, "t")
		assert.Equal(t, loc, newLoc)
	})
	t.Run("client maps 409 to ErrCommitFailed", func(t *testing.T) {
		_, _, err := e.cat.CommitTable(t.Context(), tbl.Identifier(),
			[]table.Requirement{table.AssertTableUUID(uuid.New())},
			[]table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"a": "b"})})
		assert.ErrorIs(t, err, table.ErrCommitFailed)
		assert.ErrorIs(t, err, rest.ErrCommitFailed)
	})
	t.Run("a stale transaction fails and leaves the table alone", func(t *testing.T) {
		stale := e.load(t, tbl.Identifier())
		fresh := commitTx(t, e.load(t, tbl.Identifier()), func(tx *table.Transaction) error {
			return tx.UpdateSchema(true, false).AddColumn([]string{"c1"}, iceberg.PrimitiveTypes.Int32, "", false, nil).Commit()
		})
		tx := stale.NewTransaction()
		require.NoError(t, tx.UpdateSchema(true, false).AddColumn([]string{"c2"}, iceberg.PrimitiveTypes.Int32, "", false, nil).Commit())
		_, err := tx.Commit(t.Context())
		require.ErrorIs(t, err, table.ErrCommitFailed)
		after := e.load(t, tbl.Identifier())
		assert.Equal(t, fresh.MetadataLocation(), after.MetadataLocation())
		assert.Equal(t, []string{"id", "data", "c1"}, fieldNames(after.Schema()))
	})
}

// TestCommitRefusesTableUUIDReassignment pins assign-uuid on an existing
// table: Tarn applied it, giving the table a new UUID, so every client
// holding the table (iceberg-go transactions assert-table-uuid, Java checks
// the UUID on refresh) failed from then on, as if the table had been
// replaced. assign-uuid is only valid when a table is created; on an
// existing table a different UUID gets 400 and the same UUID is a no-op.
func TestCommitRefusesTableUUIDReassignment(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.namespace(t, "uuid")
	tbl := e.createTable(t, ns, "t")
	own := tbl.Metadata().TableUUID()

	tests := []struct {
		name    string
		reqs    []table.Requirement
		uuid    uuid.UUID
		wantErr bool
	}{
		{name: "another uuid", uuid: uuid.New(), wantErr: true},
		{name: "another uuid asserting the old one", reqs: []table.Requirement{table.AssertTableUUID(own)}, uuid: uuid.New(), wantErr: true},
		{name: "the table's own uuid", reqs: []table.Requirement{table.AssertTableUUID(own)}, uuid: own},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := e.loadRaw(t, ns, "t")
			r := e.do(t, http.MethodPost, tablePath(ns, "t"), commitBody(t, ns, "t", tt.reqs, []table.Update{table.NewAssignUUIDUpdate(tt.uuid)}))
			loc, md := e.loadRaw(t, ns, "t")
			assert.Equal(t, own, md.TableUUID())
			if tt.wantErr {
				requireBadRequest(t, r)
				assert.Equal(t, before, loc)
				return
			}
			require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)
		})
	}
	t.Run("iceberg-go transactions keep working", func(t *testing.T) {
		tbl := appendRows(t, e.load(t, tbl.Identifier()), 1, 2)
		count, _ := scanCountAndSum(t, tbl)
		assert.Equal(t, int64(2), count)
	})
}
