package topics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Per-topic metrics, labelled by topic (docs/design.md and docs/operations.md list
// them). Counters cover the process's life, as Status's do.
var (
	descState = prometheus.NewDesc("tarn_topic_state",
		"1 for the state the topic is in (pending, syncing, suspended, failed, disabled), 0 for the others.",
		[]string{"topic", "state"}, nil)
	descLagRecords = prometheus.NewDesc("tarn_topic_lag_records",
		"Offsets of the topic not in the table yet (last stable offset minus the table's next offset, summed over partitions); absent until Kafka was asked.",
		[]string{"topic"}, nil)
	descLagSeconds = prometheus.NewDesc("tarn_topic_lag_seconds",
		"Age of the oldest record not in the table yet; 0 when caught up; absent while not known (records waiting that were not fetched yet).",
		[]string{"topic"}, nil)
	descRows = prometheus.NewDesc("tarn_topic_rows_total",
		"Rows committed to the topic's table.", []string{"topic"}, nil)
	descBytes = prometheus.NewDesc("tarn_topic_bytes_total",
		"Bytes of data files committed to the topic's table.", []string{"topic"}, nil)
	descFiles = prometheus.NewDesc("tarn_topic_files_total",
		"Data files committed to the topic's table.", []string{"topic"}, nil)
	descCommits = prometheus.NewDesc("tarn_topic_commits_total",
		"Snapshots committed to the topic's table.", []string{"topic"}, nil)
	descConflicts = prometheus.NewDesc("tarn_topic_commit_conflicts_total",
		"Batches dropped because another writer had committed their offsets, or whose commit outcome was unknown (re-read from the table).",
		[]string{"topic"}, nil)
	descErrors = prometheus.NewDesc("tarn_topic_errors_total",
		"Bad records by kind (bad_header, no_value, unknown_schema, malformed, out_of_range, ...).",
		[]string{"topic", "kind"}, nil)
	descGapOffsets = prometheus.NewDesc("tarn_topic_gap_offsets_total",
		"Offsets skipped because Kafka no longer had them (retention, data loss).", []string{"topic"}, nil)
	descLastCommit = prometheus.NewDesc("tarn_topic_last_commit_timestamp_seconds",
		"Unix time of the last commit to the topic's table.", []string{"topic"}, nil)
	descUnfilled = prometheus.NewDesc("tarn_topic_unfilled_columns",
		"Format json: declared columns no record stored since Tarn started carried a value for (status coverage.unfilled-columns names them).",
		[]string{"topic"}, nil)
	descUnmatched = prometheus.NewDesc("tarn_topic_unmatched_fields",
		"Format json: distinct record fields that match no declared column (status coverage.unmatched-fields names them; at most 1000).",
		[]string{"topic"}, nil)
	descUpserts = prometheus.NewDesc("tarn_topic_upserts_total",
		"Mode upsert: committed records with a value.", []string{"topic"}, nil)
	descDeletes = prometheus.NewDesc("tarn_topic_deletes_total",
		"Mode upsert: committed tombstones.", []string{"topic"}, nil)
	descNoopDeletes = prometheus.NewDesc("tarn_topic_noop_deletes_total",
		"Mode upsert: keys a batch ended with a delete that had no row.", []string{"topic"}, nil)
	descRowsDeleted = prometheus.NewDesc("tarn_topic_rows_deleted_total",
		"Mode upsert: committed rows retired by position deletes (updates and deletes).", []string{"topic"}, nil)
	descIndexKeys = prometheus.NewDesc("tarn_topic_key_index_keys",
		"Mode upsert: keys in the key index (the table's live rows).", []string{"topic"}, nil)
	descIndexKeyBytes = prometheus.NewDesc("tarn_topic_key_index_key_bytes",
		"Mode upsert: bytes of the keys in the key index.", []string{"topic"}, nil)
)

// collector reads the manager's topics on every scrape; lag comes from
// the cache the lag refresher keeps, so a scrape never waits for Kafka.
type collector struct{ m *Manager }

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descState, descLagRecords, descLagSeconds, descRows, descBytes, descFiles,
		descCommits, descConflicts, descErrors, descGapOffsets, descLastCommit, descUnfilled, descUnmatched,
		descUpserts, descDeletes, descNoopDeletes, descRowsDeleted, descIndexKeys, descIndexKeyBytes} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.RLock()
	sts := make([]Status, 0, len(c.m.topics))
	for _, t := range c.m.topics {
		sts = append(sts, t.statusLocked())
	}
	c.m.mu.RUnlock()
	for _, st := range sts {
		for _, s := range States {
			v := 0.0
			if st.State == s {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(descState, prometheus.GaugeValue, v, st.Topic, string(s))
		}
		// An unknown lag has no sample (the series is absent), not 0.
		if st.LagRecords != nil {
			ch <- prometheus.MustNewConstMetric(descLagRecords, prometheus.GaugeValue, float64(*st.LagRecords), st.Topic)
		}
		if st.LagSeconds != nil {
			ch <- prometheus.MustNewConstMetric(descLagSeconds, prometheus.GaugeValue, *st.LagSeconds, st.Topic)
		}
		ch <- prometheus.MustNewConstMetric(descRows, prometheus.CounterValue, float64(st.Rows), st.Topic)
		ch <- prometheus.MustNewConstMetric(descBytes, prometheus.CounterValue, float64(st.Bytes), st.Topic)
		ch <- prometheus.MustNewConstMetric(descFiles, prometheus.CounterValue, float64(st.Files), st.Topic)
		ch <- prometheus.MustNewConstMetric(descCommits, prometheus.CounterValue, float64(st.Commits), st.Topic)
		ch <- prometheus.MustNewConstMetric(descConflicts, prometheus.CounterValue, float64(st.CommitConflicts), st.Topic)
		for kind, n := range st.Errors {
			ch <- prometheus.MustNewConstMetric(descErrors, prometheus.CounterValue, float64(n), st.Topic, kind)
		}
		var gapOffsets int64
		for _, g := range st.Gaps {
			gapOffsets += g.LastMissingOffset - g.FirstMissingOffset + 1
		}
		ch <- prometheus.MustNewConstMetric(descGapOffsets, prometheus.CounterValue, float64(gapOffsets), st.Topic)
		if st.LastCommit != nil {
			ch <- prometheus.MustNewConstMetric(descLastCommit, prometheus.GaugeValue, float64(st.LastCommit.UnixNano())/1e9, st.Topic)
		}
		if st.Coverage != nil {
			ch <- prometheus.MustNewConstMetric(descUnfilled, prometheus.GaugeValue, float64(len(st.Coverage.UnfilledColumns)), st.Topic)
			ch <- prometheus.MustNewConstMetric(descUnmatched, prometheus.GaugeValue, float64(len(st.Coverage.UnmatchedFields)), st.Topic)
		}
		if u := st.Upsert; u != nil {
			ch <- prometheus.MustNewConstMetric(descUpserts, prometheus.CounterValue, float64(u.Upserts), st.Topic)
			ch <- prometheus.MustNewConstMetric(descDeletes, prometheus.CounterValue, float64(u.Deletes), st.Topic)
			ch <- prometheus.MustNewConstMetric(descNoopDeletes, prometheus.CounterValue, float64(u.NoopDeletes), st.Topic)
			ch <- prometheus.MustNewConstMetric(descRowsDeleted, prometheus.CounterValue, float64(u.RowsDeleted), st.Topic)
			ch <- prometheus.MustNewConstMetric(descIndexKeys, prometheus.GaugeValue, float64(u.IndexKeys), st.Topic)
			ch <- prometheus.MustNewConstMetric(descIndexKeyBytes, prometheus.GaugeValue, float64(u.IndexKeyBytes), st.Topic)
		}
	}
}
