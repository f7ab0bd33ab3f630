// Package publish pushes the pointer of Tarn's tables into other catalogs
// after each commit, so that their engines find the same tables: the AWS
// Glue Data Catalog (glue.go; Athena, Redshift Spectrum, EMR, pyiceberg's
// and Iceberg's GlueCatalog), other Iceberg REST catalogs
// (icebergrest.go) and Unity Catalog (unity.go: the table's Delta view,
// package delta, as an external Delta table). Tarn stays the owner of
// every table; a target only ever holds a pointer to Tarn's current
// metadata file, or for Unity the location of its Delta log (DESIGN.md
// "Formats and catalogs fan out after the commit").
// docs/publish.md is the user's view: configuration, name mapping,
// permissions, guarantees, roadmap.
//
// # Model
//
// A target (TargetConfig, one Target per type) covers a set of tables:
// the tables topics own, or every table in its namespaces, with the
// table property tarn.publish.<target> opting any table in or out. One
// worker per target (publisher.go) follows the catalog's commit, drop and
// rename notices (catalog.CommitObserver, catalog.DropObserver,
// catalog.RenameObserver). A notice only marks the table dirty and wakes
// the worker: nothing runs on the committing goroutine, so a slow or
// failing target never slows a commit, and the commits made while a
// publish runs coalesce into the next one (only the newest pointer
// matters). A failed publish is retried with a jittered backoff (1 s
// doubling to a minute).
//
// # Progress and conflicts
//
// After each publish the target accepted, a Record (state.go) is stored
// in the catalog's store: the metadata file the target points at, the
// target's name of the table and its version token (Glue's VersionId).
// On start the records are loaded and every table is compared with its
// record, so commits made while Tarn was down are published and drops
// are followed. Each write is conditional on the target's table being
// the one Tarn last wrote (Glue: VersionId and metadata_location as
// recorded, then UpdateTable with that VersionId); anything else is a
// conflict (ErrConflict), which stops the table with its reason, stored
// in the record, until an operator resumes it (Publisher.Resume, which
// lets the next write take the target's table over). A write the target
// accepted but Tarn could not record (a crash in between) is recognised
// on the retry: the target then names a newer metadata file of the same
// table with the recorded one as its previous.
//
// # Locks
//
// worker.pub serializes the publishes to one target (the worker's, and
// Sync's and Resume's on a request's goroutine); worker.mu guards the
// worker's maps and table states and is never held across a call to the
// target or the store. Order: pub before mu.
//
// # Imports
//
// publish imports catalog (and may import delta), never server or
// ingest; server and cmd/tarn import it.
package publish
