package topics

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/jsonrow"
	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/internal/errclass"
)

// Start says where a new topic's partitions begin (issue 3, management
// API "start").
const (
	// StartEarliest: every record still in the topic (each partition's log
	// start offset at enable). The default.
	StartEarliest = "earliest"
	// StartLatest: only records produced after the enable (each
	// partition's end offset at enable).
	StartLatest = "latest"
)

// Defaults of TopicConfig, as the management API documents them.
const (
	// DefaultTargetLagMs is pipeline.DefaultTargetLag in milliseconds.
	DefaultTargetLagMs = int64(pipeline.DefaultTargetLag / time.Millisecond)
	// MinTargetLagMs is pipeline.MinTargetLag in milliseconds.
	MinTargetLagMs = int64(pipeline.MinTargetLag / time.Millisecond)
)

// TopicConfig is a topic as enabled through the management API (POST
// /management/v1/topics) and as stored: JSON in kebab-case. Zero values
// mean the defaults; a stored config has them applied and its format
// resolved (never auto).
type TopicConfig struct {
	// Topic is the Kafka topic. Required.
	Topic string `json:"topic"`
	// Table is the Iceberg table: namespace levels and name joined by
	// dots ("sales.orders"), or, when a level or the name holds a dot,
	// the REST spec's TableIdentifier ({"namespace": ["sales.eu"],
	// "name": "orders"}) as a JSON object or its text
	// (catalog.TableName, ParseIdent); stored, and shown in the status,
	// as catalog.FormatIdent's text. Required; it must not exist yet (the
	// enable creates it and its namespace).
	Table catalog.TableName `json:"table"`
	// Format: auto (default: the type of the latest schema of the registry
	// subject <topic>-value), avro, protobuf, json-schema, json,
	// connect-json (Kafka Connect's JsonConverter with schemas.enable=true)
	// or raw.
	Format string `json:"format,omitempty"`
	// ErrorMode: suspend (default), skip or dlq (DESIGN.md "Bad records").
	ErrorMode string `json:"error-mode,omitempty"`
	// Mode: append (default: every record a row), upsert (one row per
	// record key: a value replaces the key's row, a tombstone deletes
	// it) or debezium (one row per key from Debezium change events, the
	// table's columns those of the events' after; formats avro,
	// connect-json and json); docs/upsert.md. Fixed at enable.
	Mode string `json:"mode,omitempty"`
	// Truncate, for mode debezium only, is what a truncate event (op t)
	// does: delete (default: the table is emptied, as the source table
	// was) or ignore (pipeline.Config.Truncate). Fixed at enable.
	Truncate string `json:"truncate,omitempty"`
	// Envelope, for mode debezium only, is the form of the change
	// events: full (default: Debezium's envelope, before/after/op/...)
	// or flattened (by Debezium's ExtractNewRecordState transform:
	// the row, with __deleted / __op marking deletes;
	// pipeline.Config.Envelope). Fixed at enable.
	Envelope string `json:"envelope,omitempty"`
	// KeyFields, for modes upsert and debezium with formats json and
	// connect-json, names the top-level value columns (int, long, string
	// or boolean) that are a row's key instead of the Kafka record key
	// (pipeline.Config.KeyFields); absent: the Kafka key. Fixed at
	// enable.
	KeyFields []string `json:"key-fields,omitempty"`
	// MetadataColumns, for mode debezium only, adds the column _debezium
	// {op, source_ts, ts} (the change's op, source.ts_ms and ts_ms) to
	// the table (pipeline.Config.MetadataColumns). Fixed at enable.
	MetadataColumns bool `json:"metadata-columns,omitempty"`
	// PartitionSpec lists partition fields as Iceberg transforms over
	// column paths; absent (null) means ["day(_kafka.timestamp)"] (for
	// mode upsert: []), [] means unpartitioned.
	PartitionSpec []string `json:"partition-spec"`
	// TargetLagMs is the freshness target in ms; default 10000, at least
	// 1000.
	TargetLagMs int64 `json:"target-lag-ms,omitempty"`
	// TargetFileSizeBytes flushes early at this buffered size; default
	// 134217728 (128 MiB).
	TargetFileSizeBytes int64 `json:"target-file-size-bytes,omitempty"`
	// Start: earliest (default) or latest, resolved to offsets once, at
	// enable.
	Start string `json:"start,omitempty"`
	// Schema is the table's user columns as Iceberg schema JSON, for format
	// json only (field ids are reassigned).
	Schema json.RawMessage `json:"schema,omitempty"`
	// TimestampUnit, for format json only, is the unit of JSON integers in
	// timestamp and timestamptz columns: ms (default), us, ns or s since
	// 1970-01-01T00:00:00 (pipeline.Config.TimestampUnit).
	TimestampUnit string `json:"timestamp-unit,omitempty"`
	// FieldNameMatching, for format json only, is how JSON field names
	// find their columns: exact (default) or case-insensitive
	// (pipeline.Config.FieldNameMatching).
	FieldNameMatching string `json:"field-name-matching,omitempty"`
	// Delta, when set, turns the table's Delta Lake output on or off
	// (the table property tarn.delta.enabled, set at enable and on
	// PATCH; absent leaves the property as it is).
	Delta *bool `json:"delta,omitempty"`
}

// Patch changes a topic (PATCH /management/v1/topics/{topic}); nil fields
// stay as they are.
type Patch struct {
	TargetLagMs         *int64    `json:"target-lag-ms,omitempty"`
	TargetFileSizeBytes *int64    `json:"target-file-size-bytes,omitempty"`
	ErrorMode           *string   `json:"error-mode,omitempty"`
	PartitionSpec       *[]string `json:"partition-spec,omitempty"`
	TimestampUnit       *string   `json:"timestamp-unit,omitempty"`
	FieldNameMatching   *string   `json:"field-name-matching,omitempty"`
	// Mode may only repeat the topic's mode: a table's rows were written
	// under it (an append table holds many rows per key).
	Mode  *string `json:"mode,omitempty"`
	Delta *bool   `json:"delta,omitempty"`
}

// PatchFields are the JSON names a Patch may carry.
var PatchFields = []string{"target-lag-ms", "target-file-size-bytes", "error-mode", "partition-spec", "timestamp-unit", "field-name-matching", "mode", "delta"}

// ParseTable reads a topic's table (TopicConfig.Table) with
// catalog.ParseIdent. Errors wrap ErrInvalid.
func ParseTable[S ~string](s S) (catalog.Ident, error) {
	id, err := catalog.ParseIdent(string(s))
	if err != nil {
		return catalog.Ident{}, errclass.Errorf(ErrInvalid, "%v", err)
	}
	return id, nil
}

// maxTopicNameLen is Kafka's limit on a topic name (249: a partition's
// directory name, topic-partition, must fit in 255 bytes).
const maxTopicNameLen = 249

// validTopicName checks name as Kafka does (its Topic.validate): 1 to 249
// characters of [a-zA-Z0-9._-], neither "." nor "..". Kafka would refuse
// any other name with INVALID_TOPIC_EXCEPTION. Errors wrap ErrInvalid.
func validTopicName(name string) error {
	switch {
	case name == "" || len(name) > maxTopicNameLen:
		return errclass.Errorf(ErrInvalid, "topic %q: a Kafka topic name has 1 to %d characters", name, maxTopicNameLen)
	case name == "." || name == "..":
		return errclass.Errorf(ErrInvalid, "topic %q: a Kafka topic name cannot be . or ..", name)
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
		if !ok {
			return errclass.Errorf(ErrInvalid, "topic %q: a Kafka topic name may hold only letters a-z and A-Z, digits, '.', '_' and '-', not %q", name, r)
		}
	}
	return nil
}

// withDefaults returns c with every zero-valued optional field set.
func (c TopicConfig) withDefaults() TopicConfig {
	if c.Format == "" {
		c.Format = string(pipeline.FormatAuto)
	}
	if c.ErrorMode == "" {
		c.ErrorMode = string(pipeline.ErrorModeSuspend)
	}
	if c.Mode == "" {
		c.Mode = string(pipeline.ModeAppend)
	}
	if c.PartitionSpec == nil {
		c.PartitionSpec = []string{pipeline.DefaultPartitionSpec}
		if pipeline.Mode(c.Mode).Keyed() {
			c.PartitionSpec = []string{}
		}
	}
	if c.Mode == string(pipeline.ModeDebezium) && c.Truncate == "" {
		c.Truncate = string(pipeline.TruncateDelete)
	}
	if c.Mode == string(pipeline.ModeDebezium) && c.Envelope == "" {
		c.Envelope = string(pipeline.EnvelopeFull)
	}
	if c.TargetLagMs == 0 {
		c.TargetLagMs = DefaultTargetLagMs
	}
	if c.TargetFileSizeBytes == 0 {
		c.TargetFileSizeBytes = pipeline.DefaultTargetFileSizeBytes
	}
	if c.Start == "" {
		c.Start = StartEarliest
	}
	if c.Format == string(pipeline.FormatJSON) {
		if c.TimestampUnit == "" {
			c.TimestampUnit = string(jsonrow.Millis)
		}
		if c.FieldNameMatching == "" {
			c.FieldNameMatching = string(pipeline.FieldNamesExact)
		}
	}
	return c
}

// resolve validates c (defaults applied) and returns it with the schema's
// field ids reassigned, and the pipeline config it stands for (Cluster
// left empty). Errors wrap ErrInvalid, with a message naming the field.
func (c TopicConfig) resolve() (TopicConfig, pipeline.Config, error) {
	c = c.withDefaults()
	if strings.TrimSpace(c.Topic) == "" {
		return c, pipeline.Config{}, errclass.Errorf(ErrInvalid, "topic is required")
	}
	if err := validTopicName(c.Topic); err != nil {
		return c, pipeline.Config{}, err
	}
	if c.Table == "" {
		return c, pipeline.Config{}, errclass.Errorf(ErrInvalid, "table is required (namespace.name, e.g. sales.orders)")
	}
	id, err := ParseTable(c.Table)
	if err != nil {
		return c, pipeline.Config{}, err
	}
	c.Table = catalog.TableName(catalog.FormatIdent(id)) // one spelling per table
	switch c.Start {
	case StartEarliest, StartLatest:
	default:
		return c, pipeline.Config{}, errclass.Errorf(ErrInvalid, "start %q: want earliest or latest", c.Start)
	}
	if c.TargetLagMs < MinTargetLagMs {
		return c, pipeline.Config{}, errclass.Errorf(ErrInvalid, "target-lag-ms %d is below the minimum %d", c.TargetLagMs, MinTargetLagMs)
	}
	if c.TargetFileSizeBytes < 0 {
		return c, pipeline.Config{}, errclass.Errorf(ErrInvalid, "target-file-size-bytes %d is negative", c.TargetFileSizeBytes)
	}
	pc := pipeline.Config{
		Topic:               c.Topic,
		Table:               id,
		TargetLag:           time.Duration(c.TargetLagMs) * time.Millisecond,
		TargetFileSizeBytes: c.TargetFileSizeBytes,
		ErrorMode:           pipeline.ErrorMode(c.ErrorMode),
		PartitionSpec:       slices.Clone(c.PartitionSpec),
		Format:              pipeline.Format(c.Format),
		TimestampUnit:       jsonrow.TimestampUnit(c.TimestampUnit),
		FieldNameMatching:   pipeline.FieldNameMatching(c.FieldNameMatching),
		Mode:                pipeline.Mode(c.Mode),
		Truncate:            pipeline.TruncateAction(c.Truncate),
		Envelope:            pipeline.Envelope(c.Envelope),
		KeyFields:           slices.Clone(c.KeyFields),
		MetadataColumns:     c.MetadataColumns,
	}
	if pc.Mode.Keyed() && c.Delta != nil && *c.Delta {
		// The Delta publisher refuses snapshots with delete files (the log
		// has no deletion vectors yet), so it would stop at the first
		// update: refuse the combination instead of accepting it silently.
		return c, pipeline.Config{}, errclass.Errorf(ErrInvalid, "delta: Delta output is not available for mode %s yet (its updates and deletes are Iceberg position deletes, which the Delta log does not carry; docs/delta.md, roadmap)", pc.Mode)
	}
	if len(c.Schema) > 0 && string(c.Schema) != "null" {
		if pc.Format != pipeline.FormatJSON {
			return c, pipeline.Config{}, errclass.Errorf(ErrInvalid, "schema is declared only for format json; format %s takes it from the registry or the records, or has none", c.Format)
		}
		var sc iceberg.Schema
		if err := json.Unmarshal(c.Schema, &sc); err != nil {
			return c, pipeline.Config{}, errclass.Errorf(ErrInvalid, "schema: not an Iceberg schema: %v", err)
		}
		fresh, err := iceberg.AssignFreshSchemaIDs(&sc, nil)
		if err != nil {
			return c, pipeline.Config{}, errclass.Errorf(ErrInvalid, "schema: %v", err)
		}
		if c.Schema, err = json.Marshal(fresh); err != nil {
			return c, pipeline.Config{}, err
		}
		pc.Schema = fresh
	}
	// Validate wants a cluster id, which only Kafka knows; a placeholder
	// checks everything else before Kafka is asked.
	check := pc
	check.Cluster = "-"
	if err := check.Validate(); err != nil {
		return c, pipeline.Config{}, errclass.Errorf(ErrInvalid, "%v", err)
	}
	return c, pc, nil
}

// apply returns c with p's fields set.
func (p Patch) apply(c TopicConfig) TopicConfig {
	if p.TargetLagMs != nil {
		c.TargetLagMs = *p.TargetLagMs
	}
	if p.TargetFileSizeBytes != nil {
		c.TargetFileSizeBytes = *p.TargetFileSizeBytes
	}
	if p.ErrorMode != nil {
		c.ErrorMode = *p.ErrorMode
	}
	if p.PartitionSpec != nil {
		c.PartitionSpec = slices.Clone(*p.PartitionSpec)
		if c.PartitionSpec == nil {
			c.PartitionSpec = []string{}
		}
	}
	if p.TimestampUnit != nil {
		c.TimestampUnit = *p.TimestampUnit
	}
	if p.FieldNameMatching != nil {
		c.FieldNameMatching = *p.FieldNameMatching
	}
	if p.Mode != nil {
		c.Mode = *p.Mode
	}
	if p.Delta != nil {
		on := *p.Delta
		c.Delta = &on
	}
	return c
}

// validate refuses values a patch may not set (zero means "unchanged" in
// neither: a patch sets what it names).
func (p Patch) validate() error {
	switch {
	case p.TargetLagMs != nil && *p.TargetLagMs < MinTargetLagMs:
		return errclass.Errorf(ErrInvalid, "target-lag-ms %d is below the minimum %d", *p.TargetLagMs, MinTargetLagMs)
	case p.TargetFileSizeBytes != nil && *p.TargetFileSizeBytes <= 0:
		return errclass.Errorf(ErrInvalid, "target-file-size-bytes must be positive, got %d", *p.TargetFileSizeBytes)
	case p.ErrorMode != nil && *p.ErrorMode == "":
		return errclass.Errorf(ErrInvalid, "error-mode must not be empty (suspend, skip or dlq)")
	case p.TimestampUnit != nil && *p.TimestampUnit == "":
		return errclass.Errorf(ErrInvalid, "timestamp-unit must not be empty (ms, us, ns or s)")
	case p.FieldNameMatching != nil && *p.FieldNameMatching == "":
		return errclass.Errorf(ErrInvalid, "field-name-matching must not be empty (exact or case-insensitive)")
	case p.Mode != nil && *p.Mode == "":
		return errclass.Errorf(ErrInvalid, "mode must not be empty (append, upsert or debezium)")
	case p.TargetLagMs == nil && p.TargetFileSizeBytes == nil && p.ErrorMode == nil && p.PartitionSpec == nil &&
		p.TimestampUnit == nil && p.FieldNameMatching == nil && p.Mode == nil && p.Delta == nil:
		return errclass.Errorf(ErrInvalid, "nothing to change: give one of %s", strings.Join(PatchFields, ", "))
	}
	return nil
}
