package pipeline_test

import (
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/jsonrow"
	"github.com/tarnhq/tarn/ingest/pipeline"
)

func validConfig() pipeline.Config {
	return pipeline.Config{
		Topic: "orders", Cluster: "c1",
		Table: catalog.Ident{Namespace: catalog.Namespace{"sales"}, Name: "orders"},
	}
}

// jsonConfig makes a config format json with a one-column schema, then
// applies fn (if not nil).
func jsonConfig(fn func(c *pipeline.Config)) func(c *pipeline.Config) {
	return func(c *pipeline.Config) {
		c.Format = pipeline.FormatJSON
		c.Schema = iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "at", Type: iceberg.PrimitiveTypes.TimestampTz})
		if fn != nil {
			fn(c)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	c := validConfig().WithDefaults()
	assert.Equal(t, 10*time.Second, c.TargetLag)
	assert.Equal(t, int64(128<<20), c.TargetFileSizeBytes)
	assert.Equal(t, pipeline.ErrorModeSuspend, c.ErrorMode)
	assert.Equal(t, []string{"day(_kafka.timestamp)"}, c.PartitionSpec)

	unpartitioned := validConfig()
	unpartitioned.PartitionSpec = []string{}
	assert.Empty(t, unpartitioned.WithDefaults().PartitionSpec, "an empty, non-nil spec stays unpartitioned")
	assert.Empty(t, c.TimestampUnit, "only format json has a timestamp unit")
	assert.Empty(t, c.FieldNameMatching)

	j := validConfig()
	j.Format = pipeline.FormatJSON
	j = j.WithDefaults()
	assert.Equal(t, jsonrow.Millis, j.TimestampUnit)
	assert.Equal(t, pipeline.FieldNamesExact, j.FieldNameMatching)
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(c *pipeline.Config)
		ok     bool
	}{
		{name: "defaults", modify: func(*pipeline.Config) {}, ok: true},
		{name: "minimum lag", modify: func(c *pipeline.Config) { c.TargetLag = time.Second }, ok: true},
		{name: "skip mode", modify: func(c *pipeline.Config) { c.ErrorMode = pipeline.ErrorModeSkip }, ok: true},
		{name: "dlq mode", modify: func(c *pipeline.Config) { c.ErrorMode = pipeline.ErrorModeDLQ }, ok: true},
		{name: "transforms", ok: true, modify: func(c *pipeline.Config) {
			c.PartitionSpec = []string{"origin", "identity(a.b)", "days(ts)", "hour(ts)", "bucket(16, id)", "truncate( 4 ,name)", "void(x)", "YEAR(ts)"}
		}},
		{name: "no topic", modify: func(c *pipeline.Config) { c.Topic = "" }},
		{name: "no cluster", modify: func(c *pipeline.Config) { c.Cluster = "" }},
		{name: "no namespace", modify: func(c *pipeline.Config) { c.Table.Namespace = nil }},
		{name: "no table name", modify: func(c *pipeline.Config) { c.Table.Name = "" }},
		{name: "lag below 250ms", modify: func(c *pipeline.Config) { c.TargetLag = 249 * time.Millisecond }},
		{name: "negative size", modify: func(c *pipeline.Config) { c.TargetFileSizeBytes = -1 }},
		{name: "unknown mode", modify: func(c *pipeline.Config) { c.ErrorMode = "ignore" }},
		{name: "unknown transform", modify: func(c *pipeline.Config) { c.PartitionSpec = []string{"week(ts)"} }},
		{name: "bucket without width", modify: func(c *pipeline.Config) { c.PartitionSpec = []string{"bucket(id)"} }},
		{name: "zero width", modify: func(c *pipeline.Config) { c.PartitionSpec = []string{"truncate(0, id)"} }},
		{name: "unclosed", modify: func(c *pipeline.Config) { c.PartitionSpec = []string{"day(ts"} }},
		{name: "empty column", modify: func(c *pipeline.Config) { c.PartitionSpec = []string{"day()"} }},
		{name: "empty field", modify: func(c *pipeline.Config) { c.PartitionSpec = []string{""} }},
		{name: "json", ok: true, modify: jsonConfig(nil)},
		{name: "json us, case-insensitive", ok: true, modify: jsonConfig(func(c *pipeline.Config) {
			c.TimestampUnit, c.FieldNameMatching = jsonrow.Micros, pipeline.FieldNamesCaseInsensitive
		})},
		{name: "json unknown unit", modify: jsonConfig(func(c *pipeline.Config) { c.TimestampUnit = "minutes" })},
		{name: "json unknown matching", modify: jsonConfig(func(c *pipeline.Config) { c.FieldNameMatching = "fuzzy" })},
		{name: "json columns differing in case, case-insensitive", modify: func(c *pipeline.Config) {
			jsonConfig(nil)(c)
			c.FieldNameMatching = pipeline.FieldNamesCaseInsensitive
			c.Schema = iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64},
				iceberg.NestedField{ID: 2, Name: "ID", Type: iceberg.PrimitiveTypes.Int64})
		}},
		{name: "connect-json", ok: true, modify: func(c *pipeline.Config) { c.Format = pipeline.FormatConnectJSON }},
		{name: "connect-json with a declared schema", modify: func(c *pipeline.Config) {
			jsonConfig(nil)(c)
			c.Format, c.TimestampUnit, c.FieldNameMatching = pipeline.FormatConnectJSON, "", ""
		}},
		{name: "debezium connect-json", ok: true, modify: func(c *pipeline.Config) { c.Format, c.Mode = pipeline.FormatConnectJSON, pipeline.ModeDebezium }},
		{name: "debezium json, truncate ignore", ok: true, modify: jsonConfig(func(c *pipeline.Config) {
			c.Mode, c.Truncate = pipeline.ModeDebezium, pipeline.TruncateIgnore
		})},
		{name: "debezium avro", ok: true, modify: func(c *pipeline.Config) { c.Format, c.Mode = pipeline.FormatAvro, pipeline.ModeDebezium }},
		{name: "debezium avro flattened, metadata", ok: true, modify: func(c *pipeline.Config) {
			c.Format, c.Mode, c.Envelope, c.MetadataColumns = pipeline.FormatAvro, pipeline.ModeDebezium, pipeline.EnvelopeFlattened, true
		}},
		{name: "debezium protobuf", modify: func(c *pipeline.Config) { c.Format, c.Mode = pipeline.FormatProtobuf, pipeline.ModeDebezium }},
		{name: "debezium unknown envelope", modify: func(c *pipeline.Config) {
			c.Format, c.Mode, c.Envelope = pipeline.FormatConnectJSON, pipeline.ModeDebezium, "unwrapped"
		}},
		{name: "envelope outside debezium", modify: func(c *pipeline.Config) {
			c.Format, c.Mode, c.Envelope = pipeline.FormatConnectJSON, pipeline.ModeUpsert, pipeline.EnvelopeFlattened
		}},
		{name: "key-fields with raw (no value columns)", modify: func(c *pipeline.Config) {
			c.Format, c.Mode, c.KeyFields = pipeline.FormatRaw, pipeline.ModeUpsert, []string{"id"}
		}},
		{name: "key-fields in append mode", modify: func(c *pipeline.Config) { c.Format, c.KeyFields = pipeline.FormatConnectJSON, []string{"id"} }},
		{name: "key-fields twice", modify: func(c *pipeline.Config) {
			c.Format, c.Mode, c.KeyFields = pipeline.FormatConnectJSON, pipeline.ModeUpsert, []string{"id", "id"}
		}},
		{name: "debezium partitioned", modify: func(c *pipeline.Config) {
			c.Format, c.Mode, c.PartitionSpec = pipeline.FormatConnectJSON, pipeline.ModeDebezium, []string{"id"}
		}},
		{name: "debezium unknown truncate", modify: func(c *pipeline.Config) {
			c.Format, c.Mode, c.Truncate = pipeline.FormatConnectJSON, pipeline.ModeDebezium, "drop"
		}},
		{name: "truncate for upsert", modify: func(c *pipeline.Config) { c.Mode, c.Truncate = pipeline.ModeUpsert, pipeline.TruncateDelete }},
		{name: "unit for connect-json", modify: func(c *pipeline.Config) { c.Format, c.TimestampUnit = pipeline.FormatConnectJSON, jsonrow.Micros }},
		{name: "unit for avro", modify: func(c *pipeline.Config) { c.Format, c.TimestampUnit = pipeline.FormatAvro, jsonrow.Micros }},
		{name: "matching for protobuf", modify: func(c *pipeline.Config) {
			c.Format, c.FieldNameMatching = pipeline.FormatProtobuf, pipeline.FieldNamesCaseInsensitive
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig()
			tc.modify(&c)
			err := c.Validate()
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, pipeline.ErrInvalidConfig)
		})
	}
}
