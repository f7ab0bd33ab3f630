package server

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/topics"
)

// Readiness is the body of GET /readyz.
//
// Status is "ready", or "degraded" when a dependency of ingest fails: the
// catalog still serves every request, so a load balancer keeps routing
// to it (Tarn's first job is the catalog), while Checks say what waits
// (200 either way). It is "unavailable", with 503, when the catalog's
// store does not answer within storePingTimeout (a PostgreSQL store
// that is down or cut off): no catalog request can be served, so a load
// balancer should route to another replica. While shutting down /readyz
// answers 503 with an ErrorModel instead.
type Readiness struct {
	Status string `json:"status"`
	// Checks by name: "catalog" (its store) always; "kafka" when ingest
	// is configured.
	Checks map[string]Check `json:"checks"`
}

// Check is one dependency's state in Readiness.
type Check struct {
	// Status is "ok", "unreachable", or "unknown" (not probed yet).
	Status string `json:"status"`
	// Error is why it is not ok.
	Error string `json:"error,omitempty"`
	// Since is when the status began (RFC 3339, UTC); empty for unknown.
	Since string `json:"since,omitempty"`
	// Targets are what was probed, e.g. the Kafka seed brokers.
	Targets []string `json:"targets,omitempty"`
}

// brokerProber is the optional part of a TopicManager that /readyz
// reports: ingest/topics' probe of the Kafka seed brokers.
type brokerProber interface {
	Configured() bool
	Brokers() topics.BrokerState
}

// storePingTimeout bounds /readyz's round trip to the store: a probe
// must answer before a load balancer's timeout (Kubernetes' default is
// 1 s; raise timeoutSeconds to 3 s or more for Tarn).
const storePingTimeout = 2 * time.Second

func (s *Server) readyz(c echo.Context) error {
	if !s.ready.Load() {
		return echo.NewHTTPError(http.StatusServiceUnavailable, "shutting down")
	}
	r := Readiness{Status: "ready", Checks: map[string]Check{"catalog": {Status: "ok"}}}
	if p, ok := s.cat.Store().(catalog.Pinger); ok {
		ctx, cancel := context.WithTimeout(c.Request().Context(), storePingTimeout)
		err := p.Ping(ctx)
		cancel()
		if err != nil {
			r.Status = "unavailable"
			r.Checks["catalog"] = Check{Status: "unreachable", Error: "store: " + err.Error()}
			return c.JSON(http.StatusServiceUnavailable, r)
		}
	}
	if bp, ok := s.cfg.Topics.(brokerProber); ok && bp.Configured() {
		st := bp.Brokers()
		k := Check{Status: "unknown", Targets: st.Brokers}
		if st.Checked {
			k.Status, k.Since = "ok", st.Since.UTC().Format(time.RFC3339)
			if st.Err != nil {
				k.Status, k.Error = "unreachable", st.Err.Error()
				r.Status = "degraded"
			}
		}
		r.Checks["kafka"] = k
	}
	return c.JSON(http.StatusOK, r)
}
