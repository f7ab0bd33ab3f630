// Package jsonrow turns JSON documents into rows of an Arrow record built
// for an Iceberg table. It is the decoding path of schemaless JSON topics
// (DESIGN.md "Type mapping": the user declares the table's Iceberg schema
// when enabling the topic, see [ParseSchema]) and the conversion half of
// ingest/jsonschema, which validates first and then appends through a
// [Decoder].
//
// Files:
//
//   - decode.go: [Decoder], compiled once per target schema; objects,
//     lists, maps and null handling, and the two-pass Append that never
//     leaves a partial row. [Parse] is the one place payloads become JSON
//     values.
//   - values.go: the leaf conversions (numbers, decimals, dates, times,
//     timestamps, uuids, base64); number literals, times of day and base64
//     are read exactly by ingest/internal/jsonlit.
//   - schema.go: [ParseSchema], the Iceberg schema a user declares in the
//     spec's JSON form.
//
// JSON is read with encoding/json (UseNumber, so number literals keep their
// text); the Iceberg → Arrow schema comes from iceberg-go
// (table.SchemaToArrowSchema). The Confluent header, if any, and the _kafka
// column belong to the pipeline.
package jsonrow
