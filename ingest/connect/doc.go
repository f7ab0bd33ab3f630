// Package connect is Kafka Connect's data as Tarn reads it: the semantic
// types that Kafka Connect (org.apache.kafka.connect.data: Date, Time,
// Timestamp, Decimal) and Debezium (io.debezium.time, io.debezium.data)
// name in their schemas, mapped to Iceberg types with the right units,
// and the topic format of Kafka Connect's JsonConverter with
// schemas.enable=true, where every value carries its schema:
// {"schema": {...}, "payload": {...}}.
//
// The semantic types apply wherever a Connect schema reaches Tarn: in
// this format, by the schema's "name" and "parameters", and in Avro
// written by a Connect converter (Confluent's or Apicurio's AvroData), by
// the "connect.name" and "connect.parameters" properties, which
// ingest/avro reads through [Of].
//
// Files:
//
//   - semantic.go: the names, [Kind] and [Semantic], [Of]: which Iceberg
//     type each semantic type becomes (DESIGN.md "Type mapping").
//   - values.go: the conversions of their values (units, ranges, zoned
//     text, variable-scale decimals), shared with ingest/avro.
//   - schema.go: [Schema], the Connect schema of an envelope, read by
//     [ParseSchema] and mapped by [ToIceberg].
//   - decode.go: [Decoder], payloads into Arrow through the two-pass tape
//     of ingest/internal/tape, like the other formats.
//   - envelope.go: [Envelopes], which splits values into schema and
//     payload cheaply when the schema repeats, and [Fingerprint], the
//     schema id of a value.
//
// Payloads are parsed by ingest/jsonrow's Parse (encoding/json with
// UseNumber) and their literals converted exactly by
// ingest/internal/jsonlit. The pipeline (ingest/pipeline, format
// connect-json) caches one decoder per schema text and evolves the table
// from each new schema, as for the registry formats.
package connect
