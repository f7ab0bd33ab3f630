package catalog

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var (
	commitsTotal = promauto.NewCounter(prometheus.CounterOpts{
		Name: "tarn_catalog_commits_total",
		Help: "Table and view metadata pointers written: creates, registrations and commits (one per table a transaction changes).",
	})
	commitRetriesTotal = promauto.NewCounter(prometheus.CounterOpts{
		Name: "tarn_catalog_commit_retries_total",
		Help: "Commits that lost the pointer swap and were rebased server-side because their requirements still held.",
	})
	commitConflictsTotal = promauto.NewCounter(prometheus.CounterOpts{
		Name: "tarn_catalog_commit_conflicts_total",
		Help: "Commits rejected with CommitFailedException after losing the pointer swap.",
	})
	purgedFilesTotal = promauto.NewCounter(prometheus.CounterOpts{
		Name: "tarn_catalog_purged_files_total",
		Help: "Files deleted by dropTable with purgeRequested.",
	})
)
