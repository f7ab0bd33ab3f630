// Package server is Tarn's HTTP front: the Iceberg REST Catalog routes
// (rest-catalog-open-api.yaml in package spec), the management API,
// health, metrics and the web console (package ui, under /ui). Handlers
// decode path, query, headers and body, call package catalog, and encode
// the result; every error leaves as the spec's ErrorModel (errors.go).
//
// # Files
//
// Read server.go (New: routes and middleware) first:
//
//   - server.go, config.go: routes, middleware order, /v1/config and its
//     endpoints
//   - body.go: every request body decoded once, strictly, before
//     authorization reads it
//   - auth.go, access.go: authentication, the privilege each route needs,
//     the token endpoint, and the principals/roles/grants management API
//   - idempotency.go: Idempotency-Key (fingerprint, replay, expiry)
//   - namespaces.go, tables.go, views.go: REST handlers, each a thin call
//     into package catalog
//   - storage.go: vended credentials and the remote signing endpoint
//   - topics.go, maintenance.go, formats.go, publish.go: the management
//     API of ingest/topics, maintenance, the Delta output and publishing
//   - params.go: path and query parameters, body limits
//   - errors.go: error → ErrorModel: its class's exception, or an override's
//   - metrics.go: request metrics
//   - health.go: /readyz's body, the catalog and the Kafka seed brokers
//   - console.go: mounts the web console (package ui) under /ui
package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tarnhq/tarn/auth"
	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/internal/recovery"
	"github.com/tarnhq/tarn/ui"
)

// DefaultIdempotencyKeyLifetime is how long a finalized Idempotency-Key
// response is replayed; the spec's example value, long enough for any
// client's retry budget.
const DefaultIdempotencyKeyLifetime = 30 * time.Minute

// Config configures the HTTP server.
type Config struct {
	// DrainDelay is how long Serve keeps serving after its context ends
	// with /readyz answering 503, so that a load balancer stops sending
	// requests here before the listener closes (set it to the balancer's
	// probe period times its failure threshold); 0 closes at once.
	DrainDelay time.Duration
	// IdempotencyKeyLifetime is advertised in /v1/config and bounds replay;
	// DefaultIdempotencyKeyLifetime when 0.
	IdempotencyKeyLifetime time.Duration
	// Logger is the request and error log; slog.Default() when nil.
	Logger *slog.Logger
	// Metrics registers the server's metrics (metrics.go) and its share
	// of tarn_panics_recovered_total. Nil: a registry of the server's
	// own. New panics when Metrics has the server's metrics already (two
	// servers on one registerer), as prometheus.MustRegister does. Tarn
	// passes prometheus.DefaultRegisterer, which the other packages'
	// metrics and Go's runtime collectors share.
	Metrics prometheus.Registerer
	// Gatherer serves /metrics. Nil: Metrics when it is a Gatherer too
	// (a *prometheus.Registry, the private one included), otherwise
	// prometheus.DefaultGatherer.
	Gatherer prometheus.Gatherer
	// Topics serves the management API (/management/v1/topics); nil
	// answers its routes with 503 ServiceUnavailableException ("ingest
	// not configured").
	Topics TopicManager
	// Auth, when set, is oauth2 mode: every /v1 and /management route
	// needs a bearer token and the privileges authorize (auth.go) asks
	// for; the token endpoint and key set are served. Nil is --auth none:
	// no token, everything allowed.
	Auth *auth.Service
	// PublicMetrics serves /metrics without a token in oauth2 mode.
	PublicMetrics bool
	// Maintenance serves /management/v1/maintenance; nil answers 503
	// ("maintenance not configured").
	Maintenance Maintainer
	// Formats serves /management/v1/tables/{table}/formats; nil answers
	// 503 ("table formats not configured").
	Formats FormatReporter
	// Publish serves /management/v1/publish; nil answers 503
	// ("publishing not configured").
	Publish Publisher
}

// Server serves the catalog over HTTP.
type Server struct {
	cat   *catalog.Catalog
	idem  catalog.IdempotencyStore
	cfg   Config
	log   *slog.Logger
	echo  *echo.Echo
	ready atomic.Bool
	locks keyedMutex
	// metrics: metrics.go, on Config.Metrics.
	metrics *metrics
	// console is the web console under /ui (console.go).
	console *ui.Console
}

// New builds the HTTP handler over cat. Idempotency-Key is honoured when
// cat's store implements catalog.IdempotencyStore. It panics when
// cfg.Metrics has the server's metrics already (Config.Metrics).
func New(cat *catalog.Catalog, cfg Config) *Server {
	if cfg.IdempotencyKeyLifetime == 0 {
		cfg.IdempotencyKeyLifetime = DefaultIdempotencyKeyLifetime
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = prometheus.NewRegistry()
	}
	if cfg.Gatherer == nil {
		if g, ok := cfg.Metrics.(prometheus.Gatherer); ok {
			cfg.Gatherer = g
		} else {
			cfg.Gatherer = prometheus.DefaultGatherer
		}
	}
	s := &Server{cat: cat, cfg: cfg, log: cfg.Logger, echo: echo.New(), metrics: newMetrics(cfg.Metrics)}
	s.idem, _ = cat.Store().(catalog.IdempotencyStore)
	e := s.echo
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.errorHandler
	e.Pre(escapedPath)
	// Recover a panic (500), refuse a browser's cross-origin write (403),
	// bound the body (413), authenticate (401),
	// then decode the route's body once (400), then authorize on that
	// decoded value (403), then the handler.
	e.Use(middleware.RequestID(), s.accessLog, s.observe, s.recoverPanic, refuseCrossOrigin(), limitBody,
		s.authenticate, s.decodeRequest, s.authorizeRequest)

	e.GET("/healthz", func(c echo.Context) error { return c.String(http.StatusOK, "ok\n") })
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{})))
	e.GET("/v1/config", s.getConfig)
	s.restRoutes(e.Group("/v1/:prefix"))
	s.restRoutes(e.Group("/v1"))
	s.managementRoutes(e.Group("/management/v1"))
	s.authRoutes(e)
	s.accessRoutes(e.Group("/management/v1"))
	s.maintenanceRoutes(e.Group("/management/v1"))
	s.formatsRoutes(e.Group("/management/v1"))
	s.publishRoutes(e.Group("/management/v1"))
	s.consoleRoutes(e)
	s.ready.Store(true)
	return s
}

// Handler returns the http.Handler, for httptest and embedding.
func (s *Server) Handler() http.Handler { return s.echo }

// Serve serves on l until ctx is cancelled, then shuts down gracefully:
// /readyz answers 503 at once, requests are still served for
// Config.DrainDelay, then the listener closes and in-flight requests
// finish for up to 10 s. It returns only once
// its background work (the expiry of idempotency records) has stopped,
// also when serving fails.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	srv := &http.Server{Handler: s.echo, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	var background sync.WaitGroup
	defer background.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // before Wait: deferred calls run last first
	background.Go(func() { s.expireIdempotencyKeys(ctx) })
	background.Go(func() { s.console.Run(ctx) })
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.ready.Store(false)
	if d := s.cfg.DrainDelay; d > 0 {
		s.log.Info("draining: /readyz answers 503, requests are still served", "drain_delay", d)
		select {
		case <-time.After(d):
		case err := <-errc:
			return err
		}
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// restRoutes registers the REST catalog routes under g (with or without
// the {prefix} segment). Keep endpoints (config.go) in step with this list.
func (s *Server) restRoutes(g *echo.Group) {
	idem := s.idempotent
	g.GET("/namespaces", s.listNamespaces)
	g.POST("/namespaces", s.createNamespace, idem)
	g.GET("/namespaces/:namespace", s.loadNamespace)
	g.HEAD("/namespaces/:namespace", s.namespaceExists)
	g.DELETE("/namespaces/:namespace", s.dropNamespace, idem)
	g.POST("/namespaces/:namespace/properties", s.updateNamespaceProperties, idem)

	g.GET("/namespaces/:namespace/tables", s.listTables)
	g.POST("/namespaces/:namespace/tables", s.createTable, idem)
	g.GET("/namespaces/:namespace/tables/:table", s.loadTable)
	g.HEAD("/namespaces/:namespace/tables/:table", s.tableExists)
	g.POST("/namespaces/:namespace/tables/:table", s.commitTable, idem)
	g.DELETE("/namespaces/:namespace/tables/:table", s.dropTable, idem)
	g.POST("/namespaces/:namespace/tables/:table/metrics", s.reportMetrics)
	g.GET("/namespaces/:namespace/tables/:table/credentials", s.loadCredentials)
	g.POST("/namespaces/:namespace/tables/:table/sign", s.signRequest)
	g.POST("/namespaces/:namespace/register", s.registerTable, idem)
	g.POST("/tables/rename", s.renameTable, idem)
	g.POST("/transactions/commit", s.commitTransaction, idem)

	g.GET("/namespaces/:namespace/views", s.listViews)
	g.POST("/namespaces/:namespace/views", s.createView, idem)
	g.GET("/namespaces/:namespace/views/:view", s.loadView)
	g.HEAD("/namespaces/:namespace/views/:view", s.viewExists)
	g.POST("/namespaces/:namespace/views/:view", s.replaceView, idem)
	g.DELETE("/namespaces/:namespace/views/:view", s.dropView, idem)
	g.POST("/views/rename", s.renameView, idem)
	g.POST("/namespaces/:namespace/register-view", s.registerView, idem)
}

// recoverPanic turns a panic in the handler (or the middleware after it)
// into a 500 ServerErrorException, counted in tarn_panics_recovered_total;
// errorHandler logs it with the request id and the stack. Without it
// net/http drops the connection and the client sees no response at all.
func (s *Server) recoverPanic(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer s.metrics.panics.Recover(recovery.HTTP, &err)
		return next(c)
	}
}

// escapedPath makes echo route on the escaped request path, so that path
// parameters are always raw and decoded once by pathParam: a %2F inside a
// namespace level stays inside its segment, and %1F, %25 and "+" decode
// the same whether or not Go kept RawPath.
func escapedPath(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		u := c.Request().URL
		u.RawPath = u.EscapedPath()
		return next(c)
	}
}

// warehouse resolves the {prefix} path segment (empty: the default).
func (s *Server) warehouse(c echo.Context) (*catalog.Warehouse, error) {
	prefix, err := pathParam(c, "prefix")
	if err != nil {
		return nil, err
	}
	return s.cat.Warehouse(prefix)
}
