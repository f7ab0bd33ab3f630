package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/spec"
	"github.com/tarnhq/tarn/tabledefaults"
)

// KafkaColumn is the name of the struct column every materialized row
// carries (DESIGN.md "Kafka metadata column").
const KafkaColumn = "_kafka"

// CompressionProperty and CompressionCodec: data files of materialized
// tables are zstd Parquet. iceberg-go's default is zstd too; the property
// makes it explicit for every other engine that writes the table after a
// release.
const (
	CompressionProperty = "write.parquet.compression-codec"
	CompressionCodec    = "zstd"
)

// dictionaryEncodingProperty is iceberg-go's per-column switch for
// Parquet dictionary encoding (write.parquet.dict-encoding-enabled.column.
// then the Parquet column path, "true" or "false"; default true).
const dictionaryEncodingProperty = "write.parquet.dict-encoding-enabled.column."

// plainKafkaColumns are the _kafka columns written without a Parquet
// dictionary: offsets are unique per partition and timestamps nearly so,
// so a dictionary only grows until the writer gives up on it (at
// write.parquet.dict-size-bytes, 2 MiB) and falls back to plain, after
// hashing every value. Plain and zstd compress them smaller than the
// dictionary attempt does (BenchmarkBufferToParquet: files 13 % smaller
// and 5-10 % less CPU for the whole decode and write path). The other
// columns keep iceberg-go's default (dictionary on): user columns are
// often low-cardinality, and partition is.
var plainKafkaColumns = []string{KafkaColumn + ".offset", KafkaColumn + ".timestamp"}

// kafkaField is the _kafka column: {partition int, offset long, timestamp
// timestamptz, key binary, headers list<struct<key string, value
// binary>>}. The column, partition, offset and timestamp are always set,
// so required. key is optional: Kafka keys may be null. headers is a
// required list (empty when the record has none) of required structs
// whose key is required and whose value is optional (Kafka header values
// may be null). IDs are placeholders: the table's IDs are assigned when
// the schema is built.
func kafkaField() iceberg.NestedField {
	return iceberg.NestedField{
		Name: KafkaColumn, Required: true,
		Doc: "Kafka record metadata, written by Tarn",
		Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: -1, Name: "partition", Type: iceberg.PrimitiveTypes.Int32, Required: true, Doc: "Kafka partition"},
			{ID: -2, Name: "offset", Type: iceberg.PrimitiveTypes.Int64, Required: true, Doc: "offset in the partition"},
			{ID: -3, Name: "timestamp", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true, Doc: "record timestamp (create or log-append time)"},
			{ID: -4, Name: "key", Type: iceberg.PrimitiveTypes.Binary, Doc: "record key; null when the record has none"},
			{ID: -5, Name: "headers", Required: true, Doc: "record headers, in order", Type: &iceberg.ListType{
				ElementID: -6, ElementRequired: true,
				Element: &iceberg.StructType{FieldList: []iceberg.NestedField{
					{ID: -7, Name: "key", Type: iceberg.PrimitiveTypes.String, Required: true},
					{ID: -8, Name: "value", Type: iceberg.PrimitiveTypes.Binary},
				}},
			}},
		}},
	}
}

// DebeziumColumn is the struct column of a debezium table's change
// metadata (Config.MetadataColumns): {op string, source_ts timestamptz,
// ts timestamptz}, debeziumField.
const DebeziumColumn = "_debezium"

// callerColumns are the top-level columns the pipeline fills itself, not
// the decoders (codec.WithCallerColumns): _kafka, and _debezium where the
// table has it.
var callerColumns = []string{KafkaColumn, DebeziumColumn}

// debeziumField is the _debezium column: the change event's op (c, r or
// u: a deleted row is not in the table), source.ts_ms (when the change
// was committed in the source database) and ts_ms (when the connector
// processed it) as timestamptz (ms precision), null when the event lacks
// them. Optional, as are its fields: a row written by another path has
// none. IDs are placeholders.
func debeziumField() iceberg.NestedField {
	return iceberg.NestedField{
		Name: DebeziumColumn,
		Doc:  "Debezium change metadata, written by Tarn",
		Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: -1, Name: "op", Type: iceberg.PrimitiveTypes.String, Doc: "the change event's op: c (insert), r (snapshot read) or u (update)"},
			{ID: -2, Name: "source_ts", Type: iceberg.PrimitiveTypes.TimestampTz, Doc: "source.ts_ms: when the change was committed in the source database"},
			{ID: -3, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz, Doc: "ts_ms: when the connector processed the change"},
		}},
	}
}

// TableSchema is the Iceberg schema of a new table for a topic whose
// values map to the user columns of user (WriterSchema; for Avro
// avro.ToIceberg: union [null, T] becomes optional T, every other field is
// required): those columns, then the _kafka column. Field IDs are
// assigned depth-first from 1, as a new table numbers them.
//
// Errors: ErrTableShape when user has a top-level field named _kafka.
func TableSchema(user *iceberg.Schema) (*iceberg.Schema, error) { return tableSchema(user, false) }

// tableSchema is TableSchema, with the _debezium column before _kafka
// when metadata is set (Config.MetadataColumns).
func tableSchema(user *iceberg.Schema, metadata bool) (*iceberg.Schema, error) {
	fields := user.Fields()
	for _, f := range fields {
		if f.Name == KafkaColumn || (metadata && f.Name == DebeziumColumn) {
			return nil, fmt.Errorf("%w: the writer schema has a field named %q, a reserved metadata column", ErrTableShape, f.Name)
		}
	}
	if metadata {
		fields = append(fields, debeziumField())
	}
	fields = append(fields, kafkaField())
	return iceberg.AssignFreshSchemaIDs(iceberg.NewSchema(0, fields...), nil)
}

// EnsureTable makes sure the table of cfg exists: it creates the table's
// namespace (each missing level) and, if the table is missing, creates it
// in warehouse wh with TableSchema(user), cfg's partition spec (default
// day(_kafka.timestamp)), no sort order (the sink writes unsorted tables
// only, so that row positions follow the batch order) and
// write.parquet.compression-codec=zstd, no Parquet dictionary for
// _kafka.offset and _kafka.timestamp, plus tabledefaults.Properties
// (tableProperties). An existing table is left as it
// is, after checking that its _kafka column has DESIGN.md's shape.
// created reports whether this call created the table. In error mode
// dlq the dead letter table is ensured too (EnsureDLQTable); created
// says nothing about it.
//
// Errors: ErrInvalidConfig; ErrTableShape (the existing table has no
// proper _kafka column, the writer has one, a partition field names a
// missing column or a transform does not apply to it); those of
// TableSchema and of the catalog.
func EnsureTable(ctx context.Context, cat *catalog.Catalog, wh *catalog.Warehouse, cfg Config, user *iceberg.Schema) (created bool, err error) {
	if err := cfg.Validate(); err != nil {
		return false, err
	}
	cfg = cfg.WithDefaults()
	created, err = ensureTable(ctx, cat, wh, cfg, user)
	if err != nil || cfg.ErrorMode != ErrorModeDLQ {
		return created, err
	}
	_, err = EnsureDLQTable(ctx, cat.TableIO(wh), cfg)
	return created, err
}

func ensureTable(ctx context.Context, cat *catalog.Catalog, wh *catalog.Warehouse, cfg Config, user *iceberg.Schema) (created bool, err error) {
	id := cfg.Table
	for i := range id.Namespace {
		err := cat.CreateNamespace(ctx, id.Namespace[:i+1], nil)
		if err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
			return false, fmt.Errorf("create namespace %s: %w", id.Namespace[:i+1], err)
		}
	}

	if err := checkExisting(ctx, cat, wh, id); !errors.Is(err, catalog.ErrNoSuchTable) {
		return false, err
	}

	sc, err := tableSchema(user, cfg.MetadataColumns)
	if err != nil {
		return false, err
	}
	if len(cfg.KeyFields) > 0 {
		if sc, err = keyedSchema(sc, cfg.KeyFields, user == nil || len(user.Fields()) == 0); err != nil {
			return false, err
		}
	}
	ps, err := partitionSpec(sc, cfg.PartitionSpec)
	if err != nil {
		return false, err
	}
	_, err = cat.CreateTable(ctx, wh, id.Namespace, spec.CreateTableRequest{
		Name:          id.Name,
		Schema:        sc,
		PartitionSpec: &iceberg.UnboundPartitionSpec{PartitionSpec: ps},
		Properties:    tableProperties(),
	})
	if errors.Is(err, catalog.ErrTableAlreadyExists) {
		// Created concurrently (another replica enabling the same topic).
		return false, checkExisting(ctx, cat, wh, id)
	}
	if err != nil {
		return false, fmt.Errorf("create table %s: %w", id, err)
	}
	return true, nil
}

// keyedSchema checks the key columns of a table keyed by value columns
// (Config.KeyFields; with allowMissing, columns sc lacks pass, for a
// table that gets its columns with its first record) and, when all of
// them are in sc and required, returns sc with
// them as its identifier-field-ids (Iceberg spec "Identifier Field IDs":
// required primitive columns), so engines see the row key. Errors wrap
// ErrInvalidConfig.
func keyedSchema(sc *iceberg.Schema, names []string, allowMissing bool) (*iceberg.Schema, error) {
	if err := checkKeyFields(sc, names, allowMissing); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	ids := make([]int, len(names))
	for i, n := range names {
		f, ok := sc.FindFieldByName(n)
		if !ok || !f.Required {
			return sc, nil
		}
		ids[i] = f.ID
	}
	return iceberg.NewSchemaWithIdentifiers(sc.ID, ids, sc.Fields()...), nil
}

// tableProperties are a new table's properties: zstd, no Parquet
// dictionary for _kafka.offset and _kafka.timestamp (plainKafkaColumns),
// and the defaults for tables Tarn owns (snapshot retention in hours,
// manifest merging, old metadata files deleted; tabledefaults.Properties),
// which keep the metadata small at a 1 s commit cadence.
func tableProperties() iceberg.Properties {
	props := tabledefaults.Properties()
	props[CompressionProperty] = CompressionCodec
	for _, col := range plainKafkaColumns {
		props[dictionaryEncodingProperty+col] = "false"
	}
	return props
}

// checkExisting returns nil if table id exists with a proper _kafka
// column, catalog.ErrNoSuchTable (wrapped) if it does not exist.
func checkExisting(ctx context.Context, cat *catalog.Catalog, wh *catalog.Warehouse, id catalog.Ident) error {
	lt, err := cat.LoadTable(ctx, wh, id)
	if err != nil {
		return err
	}
	md, err := lt.TableMetadata()
	if err != nil {
		return fmt.Errorf("table %s: %w", id, err)
	}
	if err := checkKafkaColumn(md.CurrentSchema()); err != nil {
		return fmt.Errorf("table %s: %w", id, err)
	}
	return nil
}

// checkKafkaColumn checks that sc's _kafka column has kafkaField's shape
// (names, types and requiredness; IDs and docs aside).
func checkKafkaColumn(sc *iceberg.Schema) error {
	f, ok := sc.FindFieldByName(KafkaColumn)
	if !ok {
		return fmt.Errorf("%w: no %s column", ErrTableShape, KafkaColumn)
	}
	want := kafkaField()
	if !sameShape(f, want) {
		return fmt.Errorf("%w: column %s is %s, want %s", ErrTableShape, KafkaColumn, f.Type, want.Type)
	}
	return nil
}

// sameShape compares two fields by name, requiredness and type,
// recursively, ignoring IDs and docs.
func sameShape(a, b iceberg.NestedField) bool {
	if a.Name != b.Name || a.Required != b.Required {
		return false
	}
	return sameType(a.Type, b.Type)
}

func sameType(a, b iceberg.Type) bool {
	switch at := a.(type) {
	case *iceberg.StructType:
		bt, ok := b.(*iceberg.StructType)
		if !ok || len(at.FieldList) != len(bt.FieldList) {
			return false
		}
		for i := range at.FieldList {
			if !sameShape(at.FieldList[i], bt.FieldList[i]) {
				return false
			}
		}
		return true
	case *iceberg.ListType:
		bt, ok := b.(*iceberg.ListType)
		return ok && at.ElementRequired == bt.ElementRequired && sameType(at.Element, bt.Element)
	case *iceberg.MapType:
		bt, ok := b.(*iceberg.MapType)
		return ok && at.ValueRequired == bt.ValueRequired && sameType(at.KeyType, bt.KeyType) && sameType(at.ValueType, bt.ValueType)
	default:
		return a.Equals(b)
	}
}

// PartitionField is one parsed entry of Config.PartitionSpec.
type PartitionField struct {
	// Source is the column's name path, e.g. "_kafka.timestamp".
	Source    string
	Transform iceberg.Transform
}

// ParsePartitionField parses one entry of Config.PartitionSpec:
// "fn(column)", "fn(N, column)" or "column" (identity). Errors name the
// entry and what is wrong.
func ParsePartitionField(s string) (PartitionField, error) {
	s = strings.TrimSpace(s)
	open := strings.IndexByte(s, '(')
	if open < 0 {
		if s == "" || strings.ContainsAny(s, "), ") {
			return PartitionField{}, fmt.Errorf("partition field %q: want a column name or transform(column)", s)
		}
		return PartitionField{Source: s, Transform: iceberg.IdentityTransform{}}, nil
	}
	if !strings.HasSuffix(s, ")") {
		return PartitionField{}, fmt.Errorf("partition field %q: missing closing parenthesis", s)
	}
	fn := strings.ToLower(strings.TrimSpace(s[:open]))
	args := strings.Split(s[open+1:len(s)-1], ",")
	for i := range args {
		args[i] = strings.TrimSpace(args[i])
	}
	// Spark's DDL names (years, months, days, hours) mean the same.
	switch fn {
	case "years", "months", "days", "hours":
		fn = strings.TrimSuffix(fn, "s")
	}
	var name string
	switch fn {
	case "identity", "void", "year", "month", "day", "hour":
		if len(args) != 1 {
			return PartitionField{}, fmt.Errorf("partition field %q: %s takes one column", s, fn)
		}
		name = fn
	case "bucket", "truncate":
		if len(args) != 2 {
			return PartitionField{}, fmt.Errorf("partition field %q: %s takes a width and a column", s, fn)
		}
		n, err := strconv.Atoi(args[0])
		if err != nil || n <= 0 {
			return PartitionField{}, fmt.Errorf("partition field %q: width %q is not a positive integer", s, args[0])
		}
		name = fmt.Sprintf("%s[%d]", fn, n)
		args = args[1:]
	default:
		return PartitionField{}, fmt.Errorf("partition field %q: unknown transform %q", s, fn)
	}
	if args[0] == "" {
		return PartitionField{}, fmt.Errorf("partition field %q: empty column name", s)
	}
	tr, err := iceberg.ParseTransform(name)
	if err != nil {
		return PartitionField{}, fmt.Errorf("partition field %q: %v", s, err)
	}
	return PartitionField{Source: args[0], Transform: tr}, nil
}

// Name names a partition field as Iceberg's Java API does (identity:
// the column; bucket: col_bucket; truncate: col_trunc; year/month/day/hour:
// col_year...; void: col_null), with the dots of a nested path replaced by
// underscores so that the name is one path segment and one SQL identifier.
func (f PartitionField) Name() string {
	base := strings.ReplaceAll(f.Source, ".", "_")
	switch f.Transform.(type) {
	case iceberg.IdentityTransform:
		return base
	case iceberg.BucketTransform:
		return base + "_bucket"
	case iceberg.TruncateTransform:
		return base + "_trunc"
	case iceberg.VoidTransform:
		return base + "_null"
	default:
		return base + "_" + f.Transform.String()
	}
}

// partitionSpec resolves the fields of Config.PartitionSpec against sc.
// A source must be a primitive column reached through structs only (not
// inside a list or map), and the transform must apply to its type.
func partitionSpec(sc *iceberg.Schema, fields []string) (iceberg.PartitionSpec, error) {
	var opts []iceberg.PartitionOption
	for _, s := range fields {
		f, err := ParsePartitionField(s)
		if err != nil {
			return iceberg.PartitionSpec{}, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
		}
		src, err := structPath(sc, f.Source)
		if err != nil {
			return iceberg.PartitionSpec{}, fmt.Errorf("%w: partition field %q: %v", ErrTableShape, s, err)
		}
		if !f.Transform.CanTransform(src.Type) {
			return iceberg.PartitionSpec{}, fmt.Errorf("%w: partition field %q: %s does not apply to %s column %s", ErrTableShape, s, f.Transform, src.Type, f.Source)
		}
		opts = append(opts, iceberg.AddPartitionFieldBySourceID(src.ID, f.Name(), f.Transform, sc, nil))
	}
	ps, err := iceberg.NewPartitionSpecOpts(opts...)
	if err != nil {
		return iceberg.PartitionSpec{}, fmt.Errorf("%w: %v", ErrTableShape, err)
	}
	return ps, nil
}

// structPath finds the primitive field at a dot-separated name path that
// goes through struct fields only.
func structPath(sc *iceberg.Schema, path string) (iceberg.NestedField, error) {
	st := sc.AsStruct()
	fields := st.FieldList
	names := strings.Split(path, ".")
	for i, name := range names {
		var f iceberg.NestedField
		found := false
		for _, c := range fields {
			if c.Name == name {
				f, found = c, true
				break
			}
		}
		if !found {
			return iceberg.NestedField{}, fmt.Errorf("no column %s", strings.Join(names[:i+1], "."))
		}
		if i == len(names)-1 {
			if _, ok := f.Type.(iceberg.PrimitiveType); !ok {
				return iceberg.NestedField{}, fmt.Errorf("column %s is %s, not a primitive", path, f.Type)
			}
			return f, nil
		}
		inner, ok := f.Type.(*iceberg.StructType)
		if !ok {
			return iceberg.NestedField{}, fmt.Errorf("column %s is %s; partition sources must be reached through structs only", strings.Join(names[:i+1], "."), f.Type)
		}
		fields = inner.FieldList
	}
	return iceberg.NestedField{}, fmt.Errorf("empty column name")
}
