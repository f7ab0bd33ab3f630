// Package avro is the Avro decoding path of topic materialization: it maps
// Avro schemas to Iceberg schemas and decodes Avro binary payloads (the
// bytes after the Confluent 5-byte header) into rows of Arrow records built
// for an Iceberg table.
//
// Files:
//
//   - schema.go: [ToIceberg], the type mapping of DESIGN.md "Type mapping",
//     and the union classification and [BranchName] rule shared with the
//     decoder.
//   - decode.go: [Decoder], compiled once per (writer schema, table schema)
//     pair; records, unions, lists and maps, and the two-pass Append that
//     never leaves a partial row.
//   - values.go: the leaf conversions (logical types, decimals, uuids).
//   - connect.go: Kafka Connect's and Debezium's semantic types, named by
//     the connect.name and connect.parameters properties Connect's Avro
//     converters write (their mapping and value conversions are
//     ingest/connect's), and the columns of tables made before Tarn knew
//     them, which keep their base types.
//   - errors.go: sentinels and [FieldError].
//
// Binary decoding uses hamba/avro's Reader; the Iceberg → Arrow schema
// comes from iceberg-go (table.SchemaToArrowSchema, which stores field IDs
// as "PARQUET:field_id"). Confluent framing, the schema registry and the
// _kafka column belong to the pipeline, not here.
package avro
