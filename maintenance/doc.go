// Package maintenance keeps tables healthy in process: it compacts small
// data files, tags the head periodically, expires snapshots, rewrites
// manifests and removes orphan files, with iceberg-go's own operations (table/compaction and
// Transaction.RewriteDataFiles' building blocks, ExpireSnapshots,
// RewriteManifests, DeleteOrphanFiles), committing through
// catalog.TableIO like every in-process writer.
//
// # Which tables, which jobs
//
// A Scheduler passes over every table of the catalog each Interval.
// Tables Tarn owns (a topic's table and its dead letter table) are
// maintained unless tarn.maintenance.enabled=false; other tables only
// with tarn.maintenance.enabled=true. The policy comes from the table's
// properties (PolicyOf; defaults in policy.go). A pass runs, per table:
// compaction when a partition has CompactMinFiles small files; a tag on
// main's head every TagInterval (kept TagMaxAge), so that time travel
// reaches back past the dense history; expiry of the snapshots past
// history.expire.max-snapshot-age-ms or beyond main's newest
// MaxSnapshots, and of the tags past their age; manifest
// rewriting past ManifestMaxCount manifests; orphan removal once per
// OrphanInterval. Metadata files are cleaned by the catalog on commit
// (write.metadata.delete-after-commit.enabled, in the owned-table
// defaults of package tabledefaults) and any
// left over by orphan removal.
//
// # Living with ingest
//
// Every snapshot a job writes carries the tarn.kafka.offsets of the head
// it was staged on and asserts that head (assert-ref-snapshot-id), so the
// sink's rebase rule accepts it between a batch's plan and commit
// (ingest/sink's doc). A job that loses the race to another commit
// stages its commit again on the new head, up to 10 times, then yields
// until the next pass; ingest never waits for maintenance and never fails
// because of it. Expiry and manifest rewriting plan each attempt afresh
// on the head they assert. Compaction keeps the files it wrote only when
// the snapshots committed since its plan, read from their manifests
// (concurrent.go; never from optional summary fields), added no delete
// that may apply to a rewritten file and removed none of them — an
// ingest append — and yields otherwise: staged on the new head, its new
// files would bring a concurrently deleted row back.
// Orphan removal never deletes a file younger than MinOrphanAge (1 h) or
// one an in-process writer holds (catalog.Catalog.HoldFiles: a batch
// written but not committed).
//
// # Whose files
//
// Jobs read and delete with Tarn's storage credentials, for the table,
// never for whoever wrote its metadata: compaction and manifest rewriting
// read only inside the table's recorded directories
// (catalog.TableIO.ConfineReads) and leave what the head names elsewhere
// as it is (logged, counted in tarn_maintenance_files_skipped_total);
// expiry deletes only inside them (ConfineRemovals); orphan removal lists
// only the table's location, and skips a location another table shares.
//
// # Concurrency
//
// With Deps.Leases (several replicas on one store) a table is
// maintained only by the replica holding its lease (LeaseName), which
// keeps it until it stops or the lease lapses; a job's context ends
// with the lease.
//
// At most Concurrency tables at once; on one table one job at a time
// (a per-table run lock shared by passes and runs on request). Lock
// order: a table's run lock, then Scheduler.mu, which is never held across
// a job or a catalog call.
//
// File map:
//
//   - policy.go: table properties, defaults, TunablePrefixes, PolicyOf.
//   - scheduler.go: Scheduler, Config, passes, RunJobs, Status.
//   - job.go: Result, job names, the commit retry helpers, offsetProps.
//   - compact.go, tag.go, expire.go, manifests.go, orphans.go: one job each.
//   - concurrent.go: what the snapshots since a rewrite's plan changed.
//   - metrics.go: tarn_maintenance_* metrics.
package maintenance
