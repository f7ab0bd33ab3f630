package pipeline_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	hamba "github.com/hamba/avro/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/spec"
)

func flightsWriter(t *testing.T) hamba.Schema {
	t.Helper()
	sc, err := hamba.Parse(flightsSchema)
	require.NoError(t, err)
	return sc
}

func ensureConfig(ns catalog.Namespace, name string, partitionSpec []string) pipeline.Config {
	return pipeline.Config{Topic: "flights", Cluster: testCluster,
		Table: catalog.Ident{Namespace: ns, Name: name}, PartitionSpec: partitionSpec}
}

func loadTable(t *testing.T, cat *catalog.Catalog, wh *catalog.Warehouse, ident ...string) *table.Table {
	t.Helper()
	tbl, err := cat.TableIO(wh).LoadTable(context.Background(), ident)
	require.NoError(t, err)
	return tbl
}

// TestEnsureTableCreates: the namespace levels and the table are created:
// the writer's columns (required, as the Avro fields are), then _kafka in
// DESIGN.md's shape; partitioned by day(_kafka.timestamp); unsorted; zstd.
// A second call leaves the table alone.
func TestEnsureTableCreates(t *testing.T) {
	ctx := context.Background()
	cat, wh := newCatalog(t)
	cfg := ensureConfig(catalog.Namespace{"air", "us"}, "flights", nil)

	created, err := pipeline.EnsureTable(ctx, cat, wh, cfg, userColumns(t, flightsWriter(t)))
	require.NoError(t, err)
	assert.True(t, created)

	tbl := loadTable(t, cat, wh, "air", "us", "flights")
	want := []string{
		"1: date: required timestamptz",
		"2: delay: required long",
		"3: distance: required long",
		"4: origin: required string",
		"5: destination: required string",
		"6: _kafka: required struct<" +
			"7: partition: required int (Kafka partition), " +
			"8: offset: required long (offset in the partition), " +
			"9: timestamp: required timestamptz (record timestamp (create or log-append time)), " +
			"10: key: optional binary (record key; null when the record has none), " +
			"11: headers: required list<struct<13: key: required string, 14: value: optional binary>> (record headers, in order)" +
			"> (Kafka record metadata, written by Tarn)",
	}
	var got []string
	for _, f := range tbl.Schema().Fields() {
		got = append(got, f.String())
	}
	assert.Equal(t, want, got)

	ps := tbl.Spec()
	require.Equal(t, 1, ps.NumFields())
	pf := ps.Field(0)
	assert.Equal(t, "_kafka_timestamp_day", pf.Name)
	assert.Equal(t, iceberg.DayTransform{}, pf.Transform)
	assert.Equal(t, 9, pf.SourceID())
	assert.True(t, tbl.SortOrder().IsUnsorted())
	assert.Equal(t, "zstd", tbl.Properties()[pipeline.CompressionProperty])

	created, err = pipeline.EnsureTable(ctx, cat, wh, cfg, userColumns(t, flightsWriter(t)))
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, tbl.MetadataLocation(), loadTable(t, cat, wh, "air", "us", "flights").MetadataLocation())
}

// TestEnsureTablePartitionSpecs: configured transforms resolve against the
// table's columns, nested ones included; an empty spec is unpartitioned;
// transforms that do not apply, or columns that do not exist or are not
// primitives reached through structs, are refused with ErrTableShape and
// nothing is created.
func TestEnsureTablePartitionSpecs(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		spec []string
		want []string // name transform source-id
		err  error
	}{
		{name: "several", spec: []string{"origin", "bucket(8, destination)", "month(date)", "identity(_kafka.partition)"},
			want: []string{"origin identity 4", "destination_bucket bucket[8] 5", "date_month month 1", "_kafka_partition identity 7"}},
		{name: "unpartitioned", spec: []string{}},
		{name: "day of a string", spec: []string{"day(origin)"}, err: pipeline.ErrTableShape},
		{name: "missing column", spec: []string{"gate"}, err: pipeline.ErrTableShape},
		{name: "struct column", spec: []string{"_kafka"}, err: pipeline.ErrTableShape},
		{name: "inside a list", spec: []string{"_kafka.headers.element.key"}, err: pipeline.ErrTableShape},
		{name: "bad syntax", spec: []string{"bucket(x, origin)"}, err: pipeline.ErrInvalidConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cat, wh := newCatalog(t)
			created, err := pipeline.EnsureTable(ctx, cat, wh, ensureConfig(catalog.Namespace{"air"}, "flights", tc.spec), userColumns(t, flightsWriter(t)))
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				assert.False(t, created)
				exists, err := cat.TableExists(ctx, catalog.Ident{Namespace: catalog.Namespace{"air"}, Name: "flights"})
				require.NoError(t, err)
				assert.False(t, exists)
				return
			}
			require.NoError(t, err)
			var got []string
			ps := loadTable(t, cat, wh, "air", "flights").Spec()
			for _, f := range ps.Fields() {
				got = append(got, f.Name+" "+f.Transform.String()+" "+strconv.Itoa(f.SourceID()))
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestEnsureTableRefuses: a writer schema with its own _kafka field, a
// writer that is not a record, and an existing table without a _kafka
// column are refused.
func TestEnsureTableRefuses(t *testing.T) {
	ctx := context.Background()
	cat, wh := newCatalog(t)

	withKafka, err := hamba.Parse(`{"type": "record", "name": "R", "fields": [{"name": "_kafka", "type": "string"}]}`)
	require.NoError(t, err)
	_, err = pipeline.EnsureTable(ctx, cat, wh, ensureConfig(catalog.Namespace{"ns"}, "a", nil), userColumns(t, withKafka))
	require.ErrorIs(t, err, pipeline.ErrTableShape)

	_, err = cat.CreateTable(ctx, wh, catalog.Namespace{"ns"}, spec.CreateTableRequest{Name: "plain",
		Schema: iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "v", Type: iceberg.PrimitiveTypes.String})})
	require.NoError(t, err)
	_, err = pipeline.EnsureTable(ctx, cat, wh, ensureConfig(catalog.Namespace{"ns"}, "plain", nil), userColumns(t, flightsWriter(t)))
	require.ErrorIs(t, err, pipeline.ErrTableShape)

	_, err = pipeline.EnsureTable(ctx, cat, wh, pipeline.Config{}, userColumns(t, flightsWriter(t)))
	require.ErrorIs(t, err, pipeline.ErrInvalidConfig)
}
