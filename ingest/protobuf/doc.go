// Package protobuf is the Protobuf decoding path of topic materialization:
// it compiles Protobuf schemas as a Confluent-compatible Schema Registry
// stores them, maps a message to an Iceberg schema and decodes serialized
// messages into rows of Arrow records built for an Iceberg table.
//
// Files:
//
//   - compile.go: [Compile] (schema text and its references to a file
//     descriptor, with bufbuild/protocompile) and [MessageByIndexes] (the
//     Confluent message-index path to a message).
//   - schema.go: [ToIceberg], the Protobuf row of DESIGN.md "Type
//     mapping", and the well-known-type classification shared with the
//     decoder.
//   - decode.go: [Decoder], compiled once per (writer message, table
//     schema) pair; messages, lists and maps, and the two-pass Append that
//     never leaves a partial row.
//   - values.go: the leaf conversions (scalars, enums, wrappers,
//     Timestamp, Duration, JSON for Struct, Value, ListValue and Any).
//   - errors.go: sentinels and [FieldError].
//
// Decoding uses google.golang.org/protobuf (proto.Unmarshal into a
// dynamicpb message; protojson for the JSON types); the Iceberg → Arrow
// schema comes from iceberg-go (table.SchemaToArrowSchema). The Confluent
// framing (magic byte, schema id, message indexes: franz-go's
// sr.ConfluentHeader), the schema registry and the _kafka column belong
// to the pipeline, not here.
package protobuf
