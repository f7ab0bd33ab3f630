package publish

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the tarn_publish_* metrics, registered on the registerer
// the Publisher is given.
type metrics struct {
	publishes *prometheus.CounterVec
	errors    *prometheus.CounterVec
	conflicts *prometheus.CounterVec
	// publishLag: from the oldest commit a publish covers (its notice)
	// to the target accepting the pointer.
	publishLag *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer, p *Publisher) (*metrics, error) {
	m := &metrics{
		publishes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tarn_publish_publishes_total",
			Help: "Table pointers a publish target accepted."}, []string{"target"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tarn_publish_errors_total",
			Help: "Failed attempts to publish to a target (each is retried with backoff)."}, []string{"target"}),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tarn_publish_conflicts_total",
			Help: "Tables whose publishing stopped because the target's table was changed outside Tarn."}, []string{"target"}),
		publishLag: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "tarn_publish_publish_lag_seconds",
			Help:    "Time from an Iceberg commit to the target pointing at it.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2, 5, 10, 30, 60, 300}}, []string{"target"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.publishes, m.errors, m.conflicts, m.publishLag, &tableCollector{p: p}} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

var (
	descLag = prometheus.NewDesc("tarn_publish_lag_seconds",
		"Per target and table, how long the oldest commit not yet published has waited (0 when current).",
		[]string{"target", "table"}, nil)
	descSequence = prometheus.NewDesc("tarn_publish_published_sequence_number",
		"Per target and table, the sequence number of main's head in the metadata the target points at (snapshot ids do not fit a float; the status has it).",
		[]string{"target", "table"}, nil)
	descPublished = prometheus.NewDesc("tarn_publish_last_published_timestamp_seconds",
		"Per target and table, when the target last accepted a pointer (Unix time).",
		[]string{"target", "table"}, nil)
	descFailing = prometheus.NewDesc("tarn_publish_failing",
		"Per target and table, 1 while the last attempt failed (the status's error says why; it is retried).",
		[]string{"target", "table"}, nil)
	descStopped = prometheus.NewDesc("tarn_publish_conflict",
		"Per target and table, 1 while publishing is stopped by a conflict (until tarn publish resume).",
		[]string{"target", "table"}, nil)
)

// tableCollector reports each table's state at scrape time, from the
// publisher's status.
type tableCollector struct{ p *Publisher }

func (c *tableCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLag, descSequence, descPublished, descFailing, descStopped} {
		ch <- d
	}
}

func (c *tableCollector) Collect(ch chan<- prometheus.Metric) {
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	for _, t := range c.p.Status().Targets {
		for _, s := range t.Tables {
			if s.State == StateExcluded {
				continue
			}
			ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, s.LagSeconds, t.Name, s.Table)
			ch <- prometheus.MustNewConstMetric(descFailing, prometheus.GaugeValue, b(s.State == StateFailing), t.Name, s.Table)
			ch <- prometheus.MustNewConstMetric(descStopped, prometheus.GaugeValue, b(s.State == StateConflict), t.Name, s.Table)
			if s.MetadataLocation != "" {
				ch <- prometheus.MustNewConstMetric(descSequence, prometheus.GaugeValue, float64(s.SequenceNumber), t.Name, s.Table)
			}
			if s.LastPublished != nil {
				ch <- prometheus.MustNewConstMetric(descPublished, prometheus.GaugeValue, float64(s.LastPublished.UnixMilli())/1000, t.Name, s.Table)
			}
		}
	}
}
