// Package catalog is Tarn's Iceberg catalog service: namespaces, tables,
// views, commits and multi-table transactions over a narrow [Store] of
// metadata pointers and a [Warehouse] that holds metadata files (in
// package storage's FileIO).
//
// Iceberg semantics (requirements, updates, metadata building) come from
// iceberg-go's table and view packages; this package validates input, writes
// each new metadata file durably and publishes it with a compare-and-swap on
// the table's pointer (Iceberg REST spec, "Commit" and "Transactions";
// https://iceberg.apache.org/spec/#metastore-tables).
//
// HTTP lives in package server; ingest and maintenance commit through the
// same [Catalog] in process, so every writer obeys the same concurrency rules.
//
// # Files
//
// Read catalog.go (Config, New) first, then the path of a commit:
//
//   - catalog.go: Config, New, the Catalog and its warehouses
//   - store.go: the Store interface (namespaces, pointers with their
//     compare-and-swap CommitPointers, records); catalog/bolt implements it
//   - ident.go: Namespace and Ident, their limits and their parsing
//   - namespaces.go, tables.go, views.go: the REST operations on each
//   - commit.go: CommitTable and CommitTransaction — stage (requirements,
//     updates through iceberg-go's MetadataBuilder, validation, the new
//     metadata file), swap with retry, clean up
//   - requirements.go, updates.go: TableRequirement and update kinds
//   - validate.go: the spec's rules on new metadata iceberg-go does not check
//   - staged.go, locations.go, purge.go: a table's directories, location
//     overlap and normal form, purge on drop
//   - warehouse.go: warehouses, where a table goes inside one, their
//     FileIO and metadata files; the FileIO (file://, S3), credential
//     vending (STS) and SigV4 request signing are package storage's
//   - tableio.go, confined.go, inflight.go: iceberg-go's CatalogIO for
//     in-process writers (ingest, maintenance), reads and removals confined
//     to a table's directories, files written but not yet committed
//   - owners.go, tunable.go: tables owned by a materialized topic and the
//     properties a REST client may still change on them
//     (Config.TunablePrefixes)
//   - idempotency.go: finalized responses of Idempotency-Key requests
//   - errors.go: the error classes under catalog's names
//     (internal/errclass) and the sentinels, each wrapping its class
//   - metrics.go: the catalog's Prometheus collectors
package catalog
