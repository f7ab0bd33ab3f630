package catalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/spec"
)

// EnvFuzzAcceptedDir names a directory into which FuzzTableUpdates copies
// the metadata JSON of every table after an accepted commit
// (<n>.metadata.json), so that other readers can be held to the same
// property: conformance/pyiceberg/test_fuzz_metadata.py parses each with
// pyiceberg.
const EnvFuzzAcceptedDir = "TARN_FUZZ_ACCEPTED_DIR"

// fuzzSeeds is how many generated inputs FuzzTableUpdates runs in a plain
// `go test` (no -fuzz): a deterministic sample, a few seconds long.
const fuzzSeeds = 150

// FuzzTableUpdates generates commits of one to three TableUpdates of every
// kind, with values drawn from sets that straddle the spec's rules
// (transforms and their source types, statistics files, refs, schemas,
// snapshots, properties, format versions), against a fresh table each,
// through the same JSON decoding the REST server uses. It asserts the
// property of issue 13 item 4: a refused commit is a 400-class error
// (ErrInvalidArgument) that changes nothing, and every accepted commit is
// followed by a load that iceberg-go parses (table.ParseMetadataBytes and
// table.NewFromLocation).
//
//	go test -run '^$' -fuzz FuzzTableUpdates -fuzztime 2m ./catalog/
//
// Plain `go test` runs testdata/fuzz/FuzzTableUpdates and fuzzSeeds
// pseudo-random inputs from fixed seeds.
func FuzzTableUpdates(f *testing.F) {
	for i := range fuzzSeeds {
		r := rand.New(rand.NewPCG(uint64(i), 13))
		b := make([]byte, 40)
		for j := range b {
			b[j] = byte(r.UintN(256))
		}
		f.Add(b)
	}
	cat, wh, _ := testserver.NewCatalog(f, f.TempDir(), nil)
	ctx := context.Background()
	ns := catalog.Namespace{"fuzz"}
	require.NoError(f, cat.CreateNamespace(ctx, ns, nil))
	accepted := os.Getenv(EnvFuzzAcceptedDir)
	var n atomic.Int64

	f.Fuzz(func(t *testing.T, data []byte) {
		k := n.Add(1)
		id := catalog.Ident{Namespace: ns, Name: "t" + strconv.FormatInt(k, 10)}
		md := fuzzTable(t, cat, wh, id)
		g := &fuzzGen{data: data, md: md}
		body := g.updates()
		var ups table.Updates
		if err := json.Unmarshal(body, &ups); err != nil {
			return // the server answers 400 before the catalog sees it
		}
		before, err := cat.LoadTable(ctx, wh, id)
		require.NoError(t, err)

		_, err = cat.CommitTable(ctx, wh, catalog.TableCommit{Ident: id, Updates: ups})
		t.Logf("updates %s: %v", body, err)
		after, lerr := cat.LoadTable(ctx, wh, id)
		require.NoError(t, lerr)
		if err != nil {
			require.Truef(t, errors.Is(err, catalog.ErrInvalidArgument), "updates %s: want a 400-class error, got %v", body, err)
			require.Equal(t, before.MetadataLocation, after.MetadataLocation, "a refused commit changed the table")
			return
		}
		if _, err := table.ParseMetadataBytes(after.MetadataJSON); err != nil {
			t.Fatalf("updates %s were accepted but iceberg-go cannot parse the loaded metadata: %v\n%s", body, err, after.MetadataJSON)
		}
		if _, err := table.NewFromLocation(ctx, []string{"fuzz", id.Name}, after.MetadataLocation, wh.FileIOFunc(after.MetadataLocation), nil); err != nil {
			t.Fatalf("updates %s were accepted but table.NewFromLocation fails: %v", body, err)
		}
		if accepted != "" {
			require.NoError(t, os.WriteFile(filepath.Join(accepted, fmt.Sprintf("%d.metadata.json", k)), after.MetadataJSON, 0o644))
		}
	})
}

// fuzzTable creates id with a schema of every shape the transforms care
// about (long, string, timestamp, a struct, a list), partitioned by
// bucket(4, id), sorted by data, with one snapshot on main.
func fuzzTable(t *testing.T, cat *catalog.Catalog, wh *catalog.Warehouse, id catalog.Ident) table.Metadata {
	t.Helper()
	ctx := context.Background()
	sc := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "data", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 4, Name: "s", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 5, Name: "x", Type: iceberg.PrimitiveTypes.Int32},
		}}},
		iceberg.NestedField{ID: 6, Name: "l", Type: &iceberg.ListType{ElementID: 7, Element: iceberg.PrimitiveTypes.Int32}},
	)
	spec0 := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "id_bucket", Transform: iceberg.BucketTransform{NumBuckets: 4}})
	order, err := table.NewSortOrder(1, []table.SortField{{SourceIDs: []int{2}, Transform: iceberg.IdentityTransform{}, Direction: table.SortASC, NullOrder: table.NullsFirst}})
	require.NoError(t, err)
	loaded, err := cat.CreateTable(ctx, wh, id.Namespace, spec.CreateTableRequest{
		Name: id.Name, Schema: sc,
		PartitionSpec: &iceberg.UnboundPartitionSpec{PartitionSpec: spec0},
		WriteOrder:    &table.UnboundSortOrder{SortOrder: order},
	})
	require.NoError(t, err)
	md, err := table.ParseMetadataBytes(loaded.MetadataJSON)
	require.NoError(t, err)
	snap := &table.Snapshot{
		SnapshotID: 1000 + time.Now().UnixNano()%1000, SequenceNumber: 1, TimestampMs: time.Now().UnixMilli(),
		ManifestList: md.Location() + "/metadata/snap-1.avro", SchemaID: new(int),
		Summary: &table.Summary{Operation: table.OpAppend},
	}
	loaded, err = cat.CommitTable(ctx, wh, catalog.TableCommit{Ident: id, Updates: []table.Update{
		table.NewAddSnapshotUpdate(snap), table.NewSetSnapshotRefUpdate(table.MainBranch, snap.SnapshotID, table.BranchRef, 0, 0, 0),
	}})
	require.NoError(t, err)
	md, err = table.ParseMetadataBytes(loaded.MetadataJSON)
	require.NoError(t, err)
	return md
}

// fuzzGen turns fuzz bytes into the JSON of a list of TableUpdates: each
// byte picks one choice (0 once the bytes run out), so a mutation of one
// byte changes one field, and a seed file reads as a list of choices.
type fuzzGen struct {
	data []byte
	md   table.Metadata
}

func (g *fuzzGen) pick(n int) int {
	if len(g.data) == 0 {
		return 0
	}
	b := g.data[0]
	g.data = g.data[1:]
	return int(b) % n
}

// one returns one of vals.
func one[T any](g *fuzzGen, vals ...T) T { return vals[g.pick(len(vals))] }

func (g *fuzzGen) snapshotID() int64 {
	return one(g, g.md.CurrentSnapshot().SnapshotID, 42, -1, 0, 7777)
}

func (g *fuzzGen) transform() string {
	return one(g, "identity", "bucket[16]", "truncate[4]", "truncate[-5]", "year", "month", "day", "hour", "void", "frobnicate", "bucket[1]")
}

func (g *fuzzGen) sourceID() int { return one(g, 1, 2, 3, 4, 5, 7, 99) }

func (g *fuzzGen) fieldType() any {
	return one[any](g, "long", "string", "double", "timestamp", "fixed[0]", "fixed[4]", "decimal(9,2)", "timestamp_ns", "variant",
		map[string]any{"type": "struct", "fields": []any{map[string]any{"id": 11, "name": "y", "type": "int", "required": one(g, true, false)}}},
		map[string]any{"type": "list", "element-id": 12, "element": "int", "element-required": true})
}

func (g *fuzzGen) location() string {
	return one(g, g.md.Location()+"/metadata/stats.puffin", "file:///elsewhere/s.puffin", "", g.md.Location()+"/data/p.parquet")
}

func (g *fuzzGen) properties() map[string]string {
	key := one(g, "write.metadata.previous-versions-max", "write.format.default", "schema.name-mapping.default",
		"write.metadata.delete-after-commit.enabled", "commit.retry.num-retries", "history.expire.max-snapshot-age-ms",
		"write.delete.mode", "comment", "", "format-version", "tarn.maintenance.enabled", "write.data.path")
	val := one(g, "abc", "-3", "0", "10", "true", "parquet", "csv", `[{"field-id":1,"names":["id"]}]`, "not json", "merge-on-read",
		g.md.Location()+"/data2", "file:///elsewhere")
	return map[string]string{key: val}
}

// updates returns the JSON array of one to three updates.
func (g *fuzzGen) updates() []byte {
	n := 1 + g.pick(3)
	var out []any
	for range n {
		out = append(out, g.update())
	}
	b, _ := json.Marshal(out)
	return b
}

func (g *fuzzGen) update() map[string]any {
	switch kind := g.pick(23); kind {
	case 0:
		return map[string]any{"action": "add-spec", "spec": map[string]any{"spec-id": one(g, 1, 0, 5), "fields": []any{
			map[string]any{"source-id": g.sourceID(), "field-id": 1001, "name": one(g, "p", "data", "id_bucket", ""), "transform": g.transform()},
		}}}
	case 1:
		return map[string]any{"action": "set-default-spec", "spec-id": one(g, -1, 0, 1, 5)}
	case 2:
		return map[string]any{"action": "add-sort-order", "sort-order": map[string]any{"order-id": one(g, 2, 1, 0), "fields": []any{
			map[string]any{"source-id": g.sourceID(), "transform": g.transform(), "direction": one(g, "asc", "desc"), "null-order": one(g, "nulls-first", "nulls-last")},
		}}}
	case 3:
		return map[string]any{"action": "set-default-sort-order", "sort-order-id": one(g, -1, 0, 1, 2, 9)}
	case 4:
		fields := []any{map[string]any{"id": 1, "name": "id", "type": "long", "required": true}}
		if g.pick(4) != 0 {
			fields = append(fields, map[string]any{"id": one(g, 8, 1, 9), "name": one(g, "new", "id", "data"), "type": g.fieldType(), "required": one(g, false, true)})
		}
		return map[string]any{"action": "add-schema", "schema": map[string]any{"type": "struct", "schema-id": one(g, 1, 0, -4),
			"identifier-field-ids": one(g, []int{1}, []int{}, []int{8}, []int{99}, []int{11}), "fields": fields}}
	case 5:
		return map[string]any{"action": "set-current-schema", "schema-id": one(g, -1, 0, 1, 7)}
	case 6:
		snap := map[string]any{"snapshot-id": one(g, int64(5555), g.md.CurrentSnapshot().SnapshotID, -1), "sequence-number": one(g, int64(2), int64(-2), int64(1), int64(0)),
			"timestamp-ms": one(g, time.Now().UnixMilli(), 1), "manifest-list": one(g, g.md.Location()+"/metadata/snap-2.avro", "")}
		if p := one[any](g, g.md.CurrentSnapshot().SnapshotID, nil, int64(123)); p != nil {
			snap["parent-snapshot-id"] = p
		}
		if op := one(g, "append", "overwrite", "", "frob", "delete"); op != "" {
			snap["summary"] = map[string]any{"operation": op}
		}
		if s := one(g, -9, 0, 55); s != -9 {
			snap["schema-id"] = s
		}
		return map[string]any{"action": "add-snapshot", "snapshot": snap}
	case 7:
		u := map[string]any{"action": "set-snapshot-ref", "ref-name": one(g, "b1", "main", "", "t1"), "type": one(g, "branch", "tag", "blob"), "snapshot-id": g.snapshotID()}
		if v := one(g, int64(0), int64(-1), int64(60000)); v != 0 {
			u[one(g, "max-ref-age-ms", "max-snapshot-age-ms", "min-snapshots-to-keep")] = v
		}
		return u
	case 8:
		return map[string]any{"action": "remove-snapshots", "snapshot-ids": []int64{g.snapshotID()}}
	case 9:
		return map[string]any{"action": "remove-snapshot-ref", "ref-name": one(g, "main", "b1", "nope")}
	case 10:
		return map[string]any{"action": "set-location", "location": one(g, g.md.Location(), g.md.Location()+"/moved", "file:///elsewhere/t", "")}
	case 11:
		return map[string]any{"action": "set-properties", "updates": g.properties()}
	case 12:
		return map[string]any{"action": "remove-properties", "removals": []string{one(g, "comment", "format-version", "write.format.default")}}
	case 13:
		return map[string]any{"action": "upgrade-format-version", "format-version": one(g, 3, 1, 2, 4)}
	case 14:
		return map[string]any{"action": "assign-uuid", "uuid": one(g, g.md.TableUUID().String(), uuid.NewString())}
	case 15:
		return map[string]any{"action": "remove-schemas", "schema-ids": []int{one(g, 0, 1, 7)}}
	case 16:
		return map[string]any{"action": "remove-partition-specs", "spec-ids": []int{one(g, 0, 1, 7)}}
	case 17:
		st := map[string]any{"snapshot-id": g.snapshotID(), "statistics-path": g.location(),
			"file-size-in-bytes": one(g, int64(100), -1, 0), "file-footer-size-in-bytes": one(g, int64(10), -1, 200)}
		switch g.pick(4) {
		case 0:
			st["blob-metadata"] = []any{}
		case 1:
			st["blob-metadata"] = nil
		case 2:
			st["blob-metadata"] = []any{map[string]any{"type": one(g, "apache-datasketches-theta-v1", "x", "deletion-vector-v1"),
				"snapshot-id": g.snapshotID(), "sequence-number": one(g, int64(1), -1), "fields": one[any](g, []int{1}, nil)}}
		}
		u := map[string]any{"action": "set-statistics", "statistics": st}
		if g.pick(3) == 0 {
			u["snapshot-id"] = g.snapshotID()
		}
		return u
	case 18:
		return map[string]any{"action": "remove-statistics", "snapshot-id": g.snapshotID()}
	case 19:
		return map[string]any{"action": "set-partition-statistics", "partition-statistics": map[string]any{
			"snapshot-id": g.snapshotID(), "statistics-path": g.location(), "file-size-in-bytes": one(g, int64(100), -1, 0)}}
	case 20:
		return map[string]any{"action": "remove-partition-statistics", "snapshot-id": g.snapshotID()}
	case 21:
		return map[string]any{"action": "add-encryption-key", "encryption-key": map[string]any{
			"key-id": one(g, "k1", ""), "encrypted-key-metadata": one(g, "AAECAwQ=", "not base64!")}}
	default:
		return map[string]any{"action": "remove-encryption-key", "key-id": one(g, "k1", "nope")}
	}
}
