package delta

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the tarn_delta_* metrics, registered on the registerer
// the Publisher is given.
type metrics struct {
	commits     prometheus.Counter
	checkpoints prometheus.Counter
	errors      prometheus.Counter
	// publishLag: from the Iceberg commit (its notice to the publisher)
	// to the Delta commit that reflects it being durable.
	publishLag prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer, p *Publisher) (*metrics, error) {
	m := &metrics{
		commits: prometheus.NewCounter(prometheus.CounterOpts{Name: "tarn_delta_commits_total",
			Help: "Delta log versions written."}),
		checkpoints: prometheus.NewCounter(prometheus.CounterOpts{Name: "tarn_delta_checkpoints_total",
			Help: "Delta checkpoints written."}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "tarn_delta_publish_errors_total",
			Help: "Failed attempts to publish an Iceberg snapshot to a Delta log."}),
		publishLag: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tarn_delta_publish_lag_seconds",
			Help:    "Time from an Iceberg commit to the Delta version reflecting it.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.commits, m.checkpoints, m.errors, m.publishLag, &lagCollector{p: p}} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

var lagDesc = prometheus.NewDesc("tarn_delta_lag_seconds",
	"Per table, how long the oldest Iceberg commit not yet in the Delta log has waited (0 when caught up).",
	[]string{"table"}, nil)

// lagCollector reports each enabled table's lag at scrape time, from the
// publisher's in-memory status.
type lagCollector struct{ p *Publisher }

func (c *lagCollector) Describe(ch chan<- *prometheus.Desc) { ch <- lagDesc }

func (c *lagCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.p.statuses() {
		if st.Enabled {
			ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, st.LagSeconds, st.Table)
		}
	}
}
