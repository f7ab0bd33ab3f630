package server

import (
	"log/slog"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tarnhq/tarn/internal/recovery"
)

// metrics are the server's own metrics (docs/operations.md lists them),
// registered on Config.Metrics.
type metrics struct {
	requests          *prometheus.CounterVec
	requestDuration   *prometheus.HistogramVec
	metricsReports    *prometheus.CounterVec
	idempotentReplays prometheus.Counter
	// panics counts the panics recoverPanic and the background expiry
	// recover (tarn_panics_recovered_total, shared with the other
	// packages on the same registerer).
	panics *recovery.Panics
}

// newMetrics builds the metrics and registers them on reg, panicking
// when reg has them already (as prometheus.MustRegister does): two
// servers on one registerer is a wiring bug, not input.
func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tarn_http_requests_total",
			Help: "HTTP requests by route template, method and status code.",
		}, []string{"route", "method", "code"}),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tarn_http_request_duration_seconds",
			Help:    "HTTP request latency by route template and method.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16), // 0.5 ms .. 16 s
		}, []string{"route", "method"}),
		metricsReports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tarn_catalog_metrics_reports_total",
			Help: "Scan and commit reports received through reportMetrics, by report type.",
		}, []string{"report_type"}),
		idempotentReplays: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tarn_http_idempotent_replays_total",
			Help: "Responses replayed for a repeated Idempotency-Key.",
		}),
	}
	reg.MustRegister(m.requests, m.requestDuration, m.metricsReports, m.idempotentReplays)
	var err error
	if m.panics, err = recovery.NewPanics(reg); err != nil {
		panic(err)
	}
	return m
}

// observe records request count and latency per route template.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		method := c.Request().Method
		s.metrics.requests.WithLabelValues(route, method, strconv.Itoa(c.Response().Status)).Inc()
		s.metrics.requestDuration.WithLabelValues(route, method).Observe(time.Since(start).Seconds())
		return nil
	}
}

// accessLog writes one JSON log line per request at debug level, and at
// info for errors.
func (s *Server) accessLog(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		status := c.Response().Status
		level := slog.LevelDebug
		if status >= 400 {
			level = slog.LevelInfo
		}
		s.log.Log(c.Request().Context(), level, "request",
			"method", c.Request().Method, "path", c.Request().URL.Path, "status", status,
			"duration_ms", time.Since(start).Milliseconds(),
			"request_id", c.Response().Header().Get(echo.HeaderXRequestID))
		return nil
	}
}
