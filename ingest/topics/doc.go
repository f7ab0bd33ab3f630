// Package topics is the set of enabled topics and their supervisors: the
// Manager behind the management API (/management/v1/topics) and `tarn
// topics`. Enabling a topic resolves its format and columns
// (pipeline.WriterSchema, format auto from the registry subject
// <topic>-value), resolves `start` to per-partition offsets once, creates
// the table (pipeline.EnsureTable), stores a record and runs an
// ingest/pipeline for it until the manager closes, the topic suspends or
// it is disabled.
//
// # Records
//
// One JSON record per topic in a Store (the catalog's bbolt file,
// collection "topics"): the config with defaults applied and format
// resolved, the Kafka cluster id, the start offsets and whether the topic
// is disabled. Start loads them after a restart and runs every enabled
// topic; each pipeline resumes from its table's head offsets, so nothing
// is read twice.
//
// # Ownership
//
// The Manager is the catalog's catalog.Owners: while a record (enabled or
// disabled) names a table, external writes to it get 403 and its drop gets
// 409 while the topic is enabled. Dropping a disabled topic's table
// deletes the record (TableDropped); Disable with release deletes it and
// leaves an ordinary table. Pipelines and spec evolution commit through
// catalog.TableIO, which the check does not apply to.
//
// # Supervision
//
// Each running topic has one supervisor goroutine: it builds a pipeline
// from the record and runs it. A suspended pipeline (a bad record in
// suspend mode, a schema that does not fit) ends the supervisor; Resume
// starts a new one, whose pipeline reads the offending record again. A
// failed pipeline (Kafka, the registry or the catalog) is restarted after
// a jittered backoff of 1 s doubling to 1 min. Every start builds a new
// pipeline.Pipeline; the counters of earlier ones are carried in
// topic.base. Close cancels every supervisor; each pipeline commits what
// it buffered before Run returns, and Close waits for that.
//
// # Locks
//
// Manager.op serializes the management operations (Start, Enable, Update,
// Resume, Disable, TableDropped, Close), which call Kafka, the registry
// and the catalog. Manager.mu (a RWMutex) guards the topic maps and every
// topic's runtime fields; it is held only for reads and writes of those,
// never across a call out, so catalog.Owners.Owner (on the commit path of
// every REST write) never waits for an enable. Lock order: op, then mu,
// then a pipeline's or source's own lock (Status, Gaps), which never call
// back. Supervisors take mu, never op: stopLocked waits for a supervisor
// while holding op, which is safe for that reason. A pipeline's OnBadRecord
// hook (errcount.go) takes mu from the pipeline's goroutine: the pipeline
// calls it outside its own lock, so the order holds.
//
// File map:
//
//   - manager.go: [Manager], [Deps], [New], Start, Close, Enable, Get,
//     List, Update, Resume, Disable, the catalog.Owners methods.
//   - config.go: [TopicConfig], [Patch], defaults and validation.
//   - store.go: [Store] and the stored record.
//   - supervisor.go: the per-topic run loop, backoff, the source opener,
//     lag.
//   - status.go: [Status], [State], [Gap], counters across pipelines.
//   - errcount.go: bad records counted once each (pipeline.Deps.OnBadRecord).
//   - partition.go: partition spec evolution (Update).
//   - metrics.go: the per-topic Prometheus collector.
//   - group.go: sharing a topic's partitions among replicas (Deps.Claims):
//     the consumer group id and the claim of assigned partitions.
//   - brokers.go: the probe of the seed brokers ([Manager.Brokers], /readyz).
//   - errors.go: sentinels.
package topics
