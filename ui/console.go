package ui

import (
	"context"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/tarnhq/tarn/auth"
	"github.com/tarnhq/tarn/ingest/topics"
)

// Prefix is the path the console is served under.
const Prefix = "/ui"

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// TopicLister is what the console's rate sampler needs of the topic
// manager (ingest/topics' *Manager).
type TopicLister interface {
	List(ctx context.Context) []topics.Status
}

// Config configures the console.
type Config struct {
	// API is the REST Catalog and management API's handler (server's
	// echo): every page and action goes through it. Required.
	API http.Handler
	// Auth is the auth service in --auth oauth2 mode: the console then
	// asks for client credentials and shows the buttons of actions the
	// principal may take. Nil is --auth none.
	Auth *auth.Service
	// Topics feeds rows/s and the charts (history.go); nil when ingest
	// is not configured.
	Topics TopicLister
	// Logger; slog.Default() when nil.
	Logger *slog.Logger
	// SampleInterval is how often Run samples topic status for rows/s;
	// DefaultSampleInterval when 0.
	SampleInterval time.Duration
}

// DefaultSampleInterval is how often the console samples topic status:
// often enough that rows/s follows a change within seconds, rarely
// enough to cost nothing (List reads in-memory counters).
const DefaultSampleInterval = 5 * time.Second

// Console is the web console's http.Handler.
type Console struct {
	cfg     Config
	log     *slog.Logger
	mux     *http.ServeMux
	pages   map[string]*template.Template
	history *history
	csrf    *http.CrossOriginProtection
	h       http.Handler // mux behind csrf
}

// New builds the console. Errors: a template that does not parse (a
// bug, caught by every test).
func New(cfg Config) (*Console, error) {
	if cfg.API == nil {
		return nil, errors.New("ui: Config.API is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.SampleInterval == 0 {
		cfg.SampleInterval = DefaultSampleInterval
	}
	c := &Console{cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), history: newHistory(), csrf: http.NewCrossOriginProtection()}
	var err error
	if c.pages, err = parsePages(); err != nil {
		return nil, err
	}
	c.csrf.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, &APIError{Status: http.StatusForbidden}, "Refused: this request came from another site (cross-origin), so it could be forged.")
	}))
	static, _ := fs.Sub(staticFS, "static")
	m := c.mux
	m.Handle("GET "+Prefix+"/static/", http.StripPrefix(Prefix+"/static/", cacheStatic(http.FileServerFS(static))))
	m.HandleFunc("GET "+Prefix+"/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, Prefix+"/topics", http.StatusSeeOther)
	})
	m.HandleFunc("GET "+Prefix+"/login", c.loginPage)
	m.HandleFunc("POST "+Prefix+"/login", c.login)
	m.HandleFunc("POST "+Prefix+"/logout", c.logout)
	m.HandleFunc("GET "+Prefix+"/topics", c.signedIn(c.topicsPage))
	m.HandleFunc("GET "+Prefix+"/topics/{topic}", c.signedIn(c.topicPage))
	m.HandleFunc("POST "+Prefix+"/topics/{topic}/{action}", c.signedIn(c.topicAction))
	m.HandleFunc("GET "+Prefix+"/enable", c.signedIn(c.enablePage))
	m.HandleFunc("POST "+Prefix+"/enable", c.signedIn(c.enable))
	m.HandleFunc("GET "+Prefix+"/catalog", c.signedIn(c.catalogPage))
	m.HandleFunc("GET "+Prefix+"/namespaces/{namespace}/tables/{table}", c.signedIn(c.tablePage))
	m.HandleFunc("GET "+Prefix+"/namespaces/{namespace}/views/{view}", c.signedIn(c.viewPage))
	m.HandleFunc(Prefix+"/", func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, &APIError{Status: http.StatusNotFound}, "There is no console page at "+r.URL.Path+".")
	})
	c.h = c.csrf.Handler(m)
	return c, nil
}

// ServeHTTP serves the console's pages (paths under Prefix). Every
// answer carries a Content-Security-Policy that allows only the
// console's own script and style sheet (no inline script), and refuses
// framing (clickjacking); every unsafe method passes the cross-origin
// check and the CSRF token check (session.go) first.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	c.h.ServeHTTP(w, r)
}

// Run samples topic status for rows/s and the charts (history.go)
// every Config.SampleInterval until ctx ends (a no-op without
// Config.Topics). It samples whether or not anybody looks, so that a
// topic's page shows the last hour when first opened; each sample lists
// the topics as GET /management/v1/topics does (in-memory counters, and
// Kafka's offsets for the lag: a ListOffsets request per topic).
func (c *Console) Run(ctx context.Context) {
	if c.cfg.Topics == nil {
		return
	}
	t := time.NewTicker(c.cfg.SampleInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			c.history.sample(now, c.cfg.Topics.List(ctx))
		}
	}
}

// cacheStatic lets browsers keep the assets for an hour: they change
// only with the binary.
func cacheStatic(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		h.ServeHTTP(w, r)
	})
}

// page is what every template gets.
type page struct {
	Title     string
	Nav       string // "topics" or "catalog": the current section
	AuthOn    bool
	Principal string
	CSRF      string
	Flash     string
	Error     string
	ErrorCode int
	Data      any
}

// parsePages parses each page template with the layout.
func parsePages() (map[string]*template.Template, error) {
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, err
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		name := strings.TrimPrefix(n, "templates/")
		if name == "layout.html" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(templateFS, n)
		if err != nil {
			return nil, err
		}
		pages[strings.TrimSuffix(name, ".html")] = t
	}
	return pages, nil
}

// render writes page name with status.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	s := sessionOf(r)
	p.AuthOn = c.cfg.Auth != nil
	p.CSRF = s.csrf
	if s.id != nil {
		p.Principal = s.id.Principal
	}
	if p.Flash == "" {
		p.Flash = flashes[r.URL.Query().Get("done")]
	}
	var b strings.Builder
	if err := c.pages[name].ExecuteTemplate(&b, "layout.html", p); err != nil {
		c.log.Error("ui: render", "page", name, "err", err)
		http.Error(w, "the console could not render this page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// fail renders the error page for err (an *APIError keeps the API's
// status and message), with msg when given.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, err error, msg string) {
	status := http.StatusInternalServerError
	var ae *APIError
	if errors.As(err, &ae) {
		status = ae.Status
	}
	if msg == "" {
		msg = err.Error()
	}
	if status >= 500 {
		c.log.Error("ui: page failed", "path", r.URL.Path, "err", err)
	}
	c.render(w, r, status, "error", page{Title: http.StatusText(status), Error: msg, ErrorCode: status})
}
