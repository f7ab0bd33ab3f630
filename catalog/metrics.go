package catalog

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the catalog's tarn_catalog_* counters (docs/operations.md
// lists them), registered on Config.Metrics.
type metrics struct {
	commits         prometheus.Counter
	commitRetries   prometheus.Counter
	commitConflicts prometheus.Counter
	purgedFiles     prometheus.Counter
	// metadataCacheHits and metadataCacheMisses count loads of a metadata
	// file served from the replica's cache and read from the warehouse.
	metadataCacheHits   prometheus.Counter
	metadataCacheMisses prometheus.Counter
}

// newMetrics builds the counters and registers them with reg (none when
// reg is nil: they count, and nothing exports them). The error is a
// failed registration, e.g. a second catalog on the same registerer.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	m := &metrics{
		commits: counter("tarn_catalog_commits_total",
			"Table and view metadata pointers written: creates, registrations and commits (one per table a transaction changes)."),
		commitRetries: counter("tarn_catalog_commit_retries_total",
			"Commits that lost the pointer swap and were rebased server-side because their requirements still held."),
		commitConflicts: counter("tarn_catalog_commit_conflicts_total",
			"Commits rejected with CommitFailedException after losing the pointer swap."),
		purgedFiles: counter("tarn_catalog_purged_files_total",
			"Files deleted by dropTable with purgeRequested."),
		metadataCacheHits: counter("tarn_catalog_metadata_cache_hits_total",
			"Loads of a table or view whose metadata file (named by the pointer just read from the store) came from this replica's cache."),
		metadataCacheMisses: counter("tarn_catalog_metadata_cache_misses_total",
			"Loads of a table or view whose metadata file was read from the warehouse."),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.commits, m.commitRetries, m.commitConflicts, m.purgedFiles, m.metadataCacheHits, m.metadataCacheMisses} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("catalog: register metrics: %w", err)
			}
		}
	}
	return m, nil
}
