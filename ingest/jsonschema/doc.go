// Package jsonschema is the JSON Schema decoding path of topic
// materialization: it compiles Confluent JSON Schema values' schemas (with
// their references to other subjects), maps them to Iceberg schemas, and
// turns JSON payloads (the bytes after the Confluent 5-byte header) into
// rows of Arrow records built for an Iceberg table.
//
// Files:
//
//   - schema.go: [Compile] and [Schema]: compilation with
//     santhosh-tekuri/jsonschema, references resolved only from the
//     registry's texts, never from files or the network.
//   - iceberg.go: [ToIceberg], the type mapping of DESIGN.md "Type mapping".
//   - order.go: property order as written in the schema text (the compiled
//     schema keeps properties in a Go map), for column order.
//   - decode.go: [Decoder]: codec.Fits between the writer and the table
//     schema, validation of each payload, then ingest/jsonrow's conversion.
//
// The Confluent framing, the registry client and the _kafka column belong to
// the pipeline, not here.
package jsonschema
