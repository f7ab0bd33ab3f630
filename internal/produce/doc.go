// Package produce writes records to a Kafka topic the way `tarn produce`
// and `tarn demo` do: rows read from JSON lines, CSV or Parquet, encoded
// as record values in the Confluent wire format (Avro, Protobuf, JSON
// Schema) or as plain JSON, and produced at a steady rate or as fast as
// the broker takes them.
//
// Files:
//
//   - rows.go: [Rows], the inputs ([JSONLines], [CSV], [Parquet]) as JSON
//     values, and [Key], a row's record key.
//   - encode.go: [Encoder] and the four encoders ([Avro], [Protobuf],
//     [JSONSchema], [JSON]); the Confluent header is franz-go's
//     sr.ConfluentHeader.
//   - avro.go: JSON values → the Go values hamba/avro marshals for a
//     writer schema (unions, logical types, defaults).
//   - text.go: [Coerce], CSV text typed by the columns the schema maps to
//     (ingest's own Avro, Protobuf and JSON Schema → Iceberg mappings).
//   - run.go: [Run], the rate-limited produce loop.
//
// The formats' wire layout is the one ingest/pipeline reads (DESIGN.md
// "Bad records"): magic byte 0, the 4-byte schema id, for Protobuf the
// message indexes, then the body.
package produce
