// Package delta publishes Tarn's Iceberg tables as Delta Lake tables over
// the same Parquet data files: one copy of the data, two table formats.
// It follows delta-io/delta PROTOCOL.md
// (https://github.com/delta-io/delta/blob/master/PROTOCOL.md); the
// section each piece follows is named beside it. docs/delta.md is the
// user's view: enabling, type mapping, guarantees, limits.
//
// # Why Tarn writes the log itself
//
// No maintained Go library writes what is needed. cmackenzie1/deltalake-go
// was archived in 2023 by its author in favour of delta-rs, and knows
// only add, remove, metaData and commitInfo (no txn, no checkpoints, no
// column mapping, no table features). rivian/delta-go, a port of early
// delta-rs, is built around an external commit lock (file, Redis or
// DynamoDB) and a state file of its own rather than the put-if-absent
// commit PROTOCOL.md asks of writers, does not read tables (a restarted
// publisher must replay its log), and would bring a second Parquet
// library (segmentio/parquet-go) beside arrow-go. delta-rs and
// delta-kernel-rs are Rust: kernel's C FFI would bring cgo and a Rust
// toolchain into the build for a job of a few hundred lines. What Tarn needs is small and
// fully specified: newline-delimited JSON actions, one Parquet checkpoint
// schema (written with arrow-go, which Tarn already uses for data
// files), and put-if-absent commit files.
//
// # Model
//
// A Delta version reflects exactly one Iceberg snapshot of main: its
// add actions name that snapshot's live data files (relative to the
// Delta root, the Iceberg data directory <location>/data, which holds
// _delta_log beside the data files: see deltaRoot), its
// metaData holds the snapshot's schema in column mapping mode id with
// the Iceberg field ids (schema.go, names.go), and its txn action
// (appId = the Iceberg table uuid, version = the snapshot's sequence
// number) says which snapshot it is. Publishing compares main's head
// with the last version's state and writes one commit with the
// difference: adds for new files, removes for retired ones (compaction,
// expiry), a protocol and metaData only when they change.
//
// # Exactly once across crashes
//
// The log itself is the publisher's progress, as the Iceberg snapshot
// summary is ingest's: on start it replays the log (newest checkpoint,
// then the JSON commits) and reads the txn version. A version whose txn
// already names main's head is not written again; a commit file is
// written put-if-absent (file://: temp file + link(2); object stores:
// If-None-Match: *), so a crashed or concurrent writer that lost the
// race gets ErrVersionExists, replays and retries, and no version is
// written twice or torn. A crash between a commit and its checkpoint
// leaves a readable log (readers replay the JSON commits); the next
// multiple of the interval checkpoints again.
//
// # Imports
//
// delta imports catalog, iceberg-go and arrow-go, never server; server
// and cmd/tarn import delta (DESIGN.md's layout).
package delta
