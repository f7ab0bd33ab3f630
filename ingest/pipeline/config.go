package pipeline

import (
	"fmt"
	"slices"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/jsonrow"
)

// Defaults and limits of Config (issue 3, management API).
const (
	// DefaultTargetLag is the freshness target: a record is committed at
	// most this long after the pipeline read it. Ten seconds keeps the
	// snapshot count of a busy table near 8,640 a day, which expiry and
	// compaction handle easily.
	DefaultTargetLag = 10 * time.Second
	// MinTargetLag is the smallest TargetLag accepted: 250 ms, four
	// commits a second per topic. Below it the catalog commit itself
	// (metadata write, fsync, compare-and-swap, ~10 ms) and the manifest
	// list rewritten per snapshot take a growing share of each interval,
	// and maintenance's snapshot cap (tarn.maintenance.expire.max-snapshots)
	// keeps less than a minute of dense history.
	MinTargetLag = 250 * time.Millisecond
	// DefaultTargetFileSizeBytes is the buffered size at which a batch is
	// flushed regardless of TargetLag: 128 MiB, the Parquet target most
	// engines read well.
	DefaultTargetFileSizeBytes int64 = 128 << 20
	// DefaultPartitionSpec partitions a materialized table by the day of the
	// Kafka record timestamp, which every table has.
	DefaultPartitionSpec = "day(_kafka.timestamp)"
)

// ErrorMode says what happens to a bad record (DESIGN.md "Bad records").
type ErrorMode string

const (
	// ErrorModeSuspend stops the topic at the first bad record: everything
	// before it is committed, nothing after it. The default.
	ErrorModeSuspend ErrorMode = "suspend"
	// ErrorModeSkip counts the bad record by kind (Status.Errors) and moves
	// past it; its offset is committed like any other.
	ErrorModeSkip ErrorMode = "skip"
	// ErrorModeDLQ writes each bad record (error kind and message, schema
	// id, the _kafka column and the raw value) to the table <table>_dlq in
	// the same namespace (DLQTableSchema), exactly once, and moves past it.
	ErrorModeDLQ ErrorMode = "dlq"
)

// FieldNameMatching is how a FormatJSON topic's field names find their
// columns.
type FieldNameMatching string

const (
	// FieldNamesExact: a field fills the column of exactly its name
	// (JSON names are case-sensitive). The default.
	FieldNamesExact FieldNameMatching = "exact"
	// FieldNamesCaseInsensitive: a field fills the column whose name
	// equals it under Unicode case folding (jsonrow.WithCaseInsensitiveNames).
	FieldNamesCaseInsensitive FieldNameMatching = "case-insensitive"
)

// Mode is how a topic's records become rows (docs/upsert.md).
type Mode string

const (
	// ModeAppend (the default) appends every record as a row; a record
	// without a value is a bad record (KindNoValue).
	ModeAppend Mode = "append"
	// ModeUpsert keeps one row per Kafka record key: a record with a
	// value replaces its key's row, a record without one (a tombstone)
	// deletes it. The table is unpartitioned; replaced rows are retired
	// by position deletes.
	ModeUpsert Mode = "upsert"
	// ModeDebezium reads Debezium change events (the envelope
	// before/after/op/source/ts_ms, or its ExtractNewRecordState form:
	// Config.Envelope; docs/upsert.md "Debezium") and keeps
	// one row per Kafka record key, like ModeUpsert: ops c, r and u
	// upsert the event's after, d and tombstones delete the key, t
	// (truncate) empties the table. The table's columns are after's.
	ModeDebezium Mode = "debezium"
)

// Keyed reports whether m keeps one row per record key (ModeUpsert,
// ModeDebezium): the table is unpartitioned and carries position deletes.
func (m Mode) Keyed() bool { return m == ModeUpsert || m == ModeDebezium }

// TruncateAction is what a Debezium truncate event (op t, a TRUNCATE of
// the source table) does to a debezium table.
type TruncateAction string

const (
	// TruncateDelete empties the table, as the source table was: every
	// row committed before the event gets a position delete, in the
	// snapshot of the batch that holds it. The default.
	TruncateDelete TruncateAction = "delete"
	// TruncateIgnore moves past the event (logged): the rows stay until
	// their own deletes arrive.
	TruncateIgnore TruncateAction = "ignore"
)

// Envelope is the form of a debezium topic's change events.
type Envelope string

const (
	// EnvelopeFull: Debezium's change event envelope, {"before", "after",
	// "source", "op", "ts_ms"}; the rows are after's. The default.
	EnvelopeFull Envelope = "full"
	// EnvelopeFlattened: the events flattened by Debezium's
	// io.debezium.transforms.ExtractNewRecordState transform
	// (https://debezium.io/documentation/reference/3.6/transformations/event-flattening.html):
	// the value is the row itself; a field __deleted "true"
	// (delete.tombstone.handling.mode rewrite or rewrite-with-tombstone)
	// or __op "d" (add.fields=op) makes it a delete of its key, and a
	// tombstone deletes its key. The table's columns are the value's,
	// __deleted, __op and the other added fields included.
	EnvelopeFlattened Envelope = "flattened"
)

// Config is one topic materialized into one table. The zero values of
// TargetLag, TargetFileSizeBytes, ErrorMode, PartitionSpec and, for
// FormatJSON, TimestampUnit and FieldNameMatching mean their defaults.
type Config struct {
	// Topic is the Kafka topic. Required.
	Topic string
	// Table is the Iceberg table the topic is materialized into. Required.
	Table catalog.Ident
	// Cluster is the Kafka cluster id, recorded with the offsets in every
	// snapshot (tarn.kafka.offsets) so that a table is never resumed
	// against another cluster's offsets. Required.
	Cluster string
	// TargetLag is the freshness target: buffered records are committed
	// when this long has passed since the first of them was read. Default
	// DefaultTargetLag; at least MinTargetLag.
	TargetLag time.Duration
	// TargetFileSizeBytes flushes the buffer early once its estimated size
	// reaches it (whichever of size and lag comes first), and is the data
	// file size at which the writer rolls to a new file. The estimate is
	// the bytes read from Kafka (value after the 5-byte header, key,
	// headers) plus a fixed per-row overhead for the _kafka column, so the
	// compressed Parquet files come out smaller. Default
	// DefaultTargetFileSizeBytes.
	TargetFileSizeBytes int64
	// ErrorMode is what a bad record does: ErrorModeSuspend (default),
	// ErrorModeSkip or ErrorModeDLQ.
	ErrorMode ErrorMode
	// BadSchemaIDs are schema ids the user moved past: in error mode skip
	// or dlq, a record of one of them whose writer schema cannot be
	// evolved into the table is a bad record (counted, or written to the
	// dlq) instead of suspending the topic. A resume of a topic suspended
	// for its schema (SuspendedError.SchemaID, a schema-level Kind) in
	// error mode skip or dlq adds the id. Ignored in suspend mode. -1
	// stands for a schemaless format's declared schema.
	BadSchemaIDs []int
	// PartitionSpec lists the table's partition fields as Iceberg
	// transforms over column name paths: "day(_kafka.timestamp)",
	// "identity(origin)" or just "origin", "year(c)", "month(c)",
	// "hour(c)", "bucket(16, c)", "truncate(4, c)", "void(c)" (Spark's
	// plural forms "days(c)" etc. are accepted too). Used when the table is
	// created. nil means [DefaultPartitionSpec]; an empty, non-nil slice
	// means unpartitioned.
	PartitionSpec []string
	// Format is how values are encoded; default FormatAuto. A running
	// pipeline needs a concrete one: WriterSchema resolves auto when the
	// topic is enabled.
	Format Format
	// Schema is the Iceberg schema (user columns) declared for FormatJSON,
	// which has no registry; nil for every other format.
	Schema *iceberg.Schema
	// TimestampUnit is, for FormatJSON, the unit of JSON integers in
	// timestamp and timestamptz columns: jsonrow.Millis (default), Micros,
	// Nanos or Seconds since 1970-01-01T00:00:00 (UTC for timestamptz).
	// Empty for the other formats, whose schemas say their units.
	TimestampUnit jsonrow.TimestampUnit
	// FieldNameMatching is, for FormatJSON, how field names find their
	// columns: FieldNamesExact (default) or FieldNamesCaseInsensitive.
	// Empty for the other formats, whose schemas name the fields.
	FieldNameMatching FieldNameMatching
	// Mode is ModeAppend (default), ModeUpsert or ModeDebezium. An
	// upsert or debezium table is unpartitioned: PartitionSpec must be
	// nil (its default there) or empty. ModeDebezium reads formats avro
	// (AvroConverter through the registry), connect-json (JsonConverter,
	// schemas.enable=true) and json (schemas.enable=false, the after
	// columns declared in Schema).
	Mode Mode
	// Truncate is, in mode debezium, what a truncate event does:
	// TruncateDelete (default) or TruncateIgnore. Empty for the other
	// modes.
	Truncate TruncateAction
	// Envelope is, in mode debezium, the form of the change events:
	// EnvelopeFull (default) or EnvelopeFlattened. Empty for the other
	// modes.
	Envelope Envelope
	// KeyFields names the top-level value columns (int, long, string or
	// boolean) whose values are a row's key in mode upsert or debezium,
	// instead of the Kafka record key: for a Kafka key that is absent,
	// or not the key wanted. A record without a value (a tombstone) is
	// matched through its Kafka key, which must then be an object
	// holding those columns (Debezium's key struct is). Every format but
	// raw; in avro and protobuf each writer schema must have the columns
	// as required fields. nil: the Kafka record key.
	KeyFields []string
	// MetadataColumns adds, in mode debezium, the column _debezium
	// (DebeziumColumn: the change's op, source commit time and
	// connector time) to a new table. Fixed at enable.
	MetadataColumns bool
}

// WithDefaults returns c with every zero-valued optional field set to its
// default.
func (c Config) WithDefaults() Config {
	if c.TargetLag == 0 {
		c.TargetLag = DefaultTargetLag
	}
	if c.TargetFileSizeBytes == 0 {
		c.TargetFileSizeBytes = DefaultTargetFileSizeBytes
	}
	if c.ErrorMode == "" {
		c.ErrorMode = ErrorModeSuspend
	}
	if c.Mode == "" {
		c.Mode = ModeAppend
	}
	if c.PartitionSpec == nil {
		c.PartitionSpec = []string{DefaultPartitionSpec}
		if c.Mode.Keyed() {
			c.PartitionSpec = []string{}
		}
	}
	if c.Format == "" {
		c.Format = FormatAuto
	}
	if c.Mode == ModeDebezium && c.Truncate == "" {
		c.Truncate = TruncateDelete
	}
	if c.Mode == ModeDebezium && c.Envelope == "" {
		c.Envelope = EnvelopeFull
	}
	if c.Format == FormatJSON {
		if c.TimestampUnit == "" {
			c.TimestampUnit = jsonrow.Millis
		}
		if c.FieldNameMatching == "" {
			c.FieldNameMatching = FieldNamesExact
		}
	}
	return c
}

// jsonOptions are the options of FormatJSON's decoder; nil for the other
// formats.
func (c Config) jsonOptions() []codec.Option {
	c = c.WithDefaults()
	if c.Format != FormatJSON {
		return nil
	}
	opts := []codec.Option{jsonrow.WithTimestampUnit(c.TimestampUnit)}
	if c.FieldNameMatching == FieldNamesCaseInsensitive {
		opts = append(opts, jsonrow.WithCaseInsensitiveNames())
	}
	return opts
}

// Validate reports the first missing or out-of-range field, after
// defaults. Partition fields are checked for syntax here and against the
// table's columns by EnsureTable. Errors wrap ErrInvalidConfig.
func (c Config) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.Topic == "":
		return fmt.Errorf("%w: topic is required", ErrInvalidConfig)
	case c.Cluster == "":
		return fmt.Errorf("%w: cluster id is required", ErrInvalidConfig)
	case c.TargetLag < MinTargetLag:
		return fmt.Errorf("%w: target lag %v is below the minimum %v", ErrInvalidConfig, c.TargetLag, MinTargetLag)
	case c.TargetFileSizeBytes < 0:
		return fmt.Errorf("%w: target file size %d bytes is negative", ErrInvalidConfig, c.TargetFileSizeBytes)
	}
	if err := c.Table.Validate(); err != nil {
		return fmt.Errorf("%w: table %q: %v", ErrInvalidConfig, c.Table, err)
	}
	switch {
	case c.Mode != ModeAppend && !c.Mode.Keyed():
		return fmt.Errorf("%w: unknown mode %q (append, upsert or debezium)", ErrInvalidConfig, c.Mode)
	case c.Mode.Keyed() && len(c.PartitionSpec) > 0:
		return fmt.Errorf("%w: an %s table is unpartitioned (partition-spec %v given; see docs/upsert.md)", ErrInvalidConfig, c.Mode, c.PartitionSpec)
	case c.Mode != ModeDebezium && c.Truncate != "":
		return fmt.Errorf("%w: truncate is for mode debezium only", ErrInvalidConfig)
	case c.Mode != ModeDebezium && c.Envelope != "":
		return fmt.Errorf("%w: envelope is for mode debezium only", ErrInvalidConfig)
	case c.Mode == ModeDebezium && c.Envelope != EnvelopeFull && c.Envelope != EnvelopeFlattened:
		return fmt.Errorf("%w: unknown envelope %q (full: Debezium's change event envelope, or flattened: its ExtractNewRecordState transform's output)", ErrInvalidConfig, c.Envelope)
	case c.MetadataColumns && c.Mode != ModeDebezium:
		return fmt.Errorf("%w: metadata-columns is for mode debezium only (the _kafka column holds every row's partition and offset)", ErrInvalidConfig)
	case len(c.KeyFields) > 0 && !c.Mode.Keyed():
		return fmt.Errorf("%w: key-fields is for modes upsert and debezium", ErrInvalidConfig)
	case len(c.KeyFields) > 0 && c.Format == FormatRaw:
		return fmt.Errorf("%w: key-fields names value columns; format raw has none", ErrInvalidConfig)
	case c.Mode == ModeDebezium && c.Truncate != TruncateDelete && c.Truncate != TruncateIgnore:
		return fmt.Errorf("%w: unknown truncate action %q (delete or ignore)", ErrInvalidConfig, c.Truncate)
	case c.Mode == ModeDebezium && c.Format != FormatConnectJSON && c.Format != FormatJSON && c.Format != FormatAvro && c.Format != FormatAuto:
		return fmt.Errorf("%w: mode debezium reads formats avro (through the registry), connect-json (JsonConverter with schemas.enable=true) and json (schemas.enable=false, after's columns declared); format %s is not supported (docs/upsert.md)", ErrInvalidConfig, c.Format)
	}
	switch c.ErrorMode {
	case ErrorModeSuspend, ErrorModeSkip, ErrorModeDLQ:
	default:
		return fmt.Errorf("%w: unknown error mode %q (suspend, skip or dlq)", ErrInvalidConfig, c.ErrorMode)
	}
	switch c.Format {
	case FormatAuto, FormatAvro, FormatProtobuf, FormatJSONSchema, FormatRaw, FormatConnectJSON:
		switch {
		case c.Schema != nil:
			return fmt.Errorf("%w: a schema is declared only for format json; format %s takes it from the registry or the records, or has none", ErrInvalidConfig, c.Format)
		case c.TimestampUnit != "":
			return fmt.Errorf("%w: timestamp-unit is for format json only; format %s takes the unit from its schema", ErrInvalidConfig, c.Format)
		case c.FieldNameMatching != "":
			return fmt.Errorf("%w: field-name-matching is for format json only; format %s names its fields in its schema", ErrInvalidConfig, c.Format)
		}
	case FormatJSON:
		switch {
		case c.Schema == nil || len(c.Schema.Fields()) == 0:
			return fmt.Errorf("%w: format json needs the table's schema declared (Iceberg schema JSON)", ErrInvalidConfig)
		case !slices.Contains(jsonrow.TimestampUnits, c.TimestampUnit):
			return fmt.Errorf("%w: unknown timestamp-unit %q (ms, us, ns or s)", ErrInvalidConfig, c.TimestampUnit)
		case c.FieldNameMatching != FieldNamesExact && c.FieldNameMatching != FieldNamesCaseInsensitive:
			return fmt.Errorf("%w: unknown field-name-matching %q (exact or case-insensitive)", ErrInvalidConfig, c.FieldNameMatching)
		}
		if _, err := jsonrow.NewDecoder(c.Schema, c.jsonOptions()...); err != nil {
			// Columns that differ only in case, with case-insensitive
			// names, or a type JSON cannot fill.
			return fmt.Errorf("%w: schema: %v", ErrInvalidConfig, err)
		}
	default:
		return fmt.Errorf("%w: unknown format %q (auto, avro, protobuf, json-schema, json, connect-json or raw)", ErrInvalidConfig, c.Format)
	}
	for _, f := range c.PartitionSpec {
		if _, err := ParsePartitionField(f); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidConfig, err)
		}
	}
	for i, f := range c.KeyFields {
		if f == "" || slices.Contains(c.KeyFields[:i], f) {
			return fmt.Errorf("%w: key-fields %v: names must be non-empty and distinct", ErrInvalidConfig, c.KeyFields)
		}
	}
	if c.Schema != nil && len(c.KeyFields) > 0 {
		if err := checkKeyFields(c.Schema, c.KeyFields, false); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidConfig, err)
		}
	}
	return nil
}
