// Package catalog is Tarn's Iceberg catalog service: namespaces, tables,
// views, commits and multi-table transactions over a narrow [Store] of
// metadata pointers and a [Warehouse] that holds metadata files.
//
// Iceberg semantics (requirements, updates, metadata building) come from
// iceberg-go's table and view packages; this package validates input, writes
// each new metadata file durably and publishes it with a compare-and-swap on
// the table's pointer (Iceberg REST spec, "Commit" and "Transactions";
// https://iceberg.apache.org/spec/#metastore-tables).
//
// HTTP lives in package server; ingest and maintenance commit through the
// same [Catalog] in process, so every writer obeys the same concurrency rules.
package catalog
