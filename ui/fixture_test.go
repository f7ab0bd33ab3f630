package ui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	hamba "github.com/hamba/avro/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
	"golang.org/x/crypto/bcrypt"

	"github.com/tarnhq/tarn/auth"
	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/delta"
	"github.com/tarnhq/tarn/ingest/topics"
	"github.com/tarnhq/tarn/internal/demo"
	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/maintenance"
	"github.com/tarnhq/tarn/publish"
	"github.com/tarnhq/tarn/server"
)

// rootSecret is the root principal's secret in oauth2 fixtures.
const rootSecret = "root-secret-for-tests"

// fixture is Tarn in process (server.New, which mounts the console)
// with a topic manager over a kfake cluster (topic flights, demo's
// partitions) and an srfake registry holding the flights Avro schema;
// with oauth2, an auth service with a root principal.
type fixture struct {
	url    string
	prod   *kgo.Client
	rc     *sr.Client
	values [][]byte
	auth   *auth.Service
	logs   *syncBuffer
	mgr    *topics.Manager
	cat    *catalog.Catalog
	wh     *catalog.Warehouse
	maint  *maintenance.Scheduler
	delta  *delta.Publisher
	pub    *publish.Publisher
	target *memTarget
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newFixture(t *testing.T, oauth2 bool) *fixture {
	t.Helper()
	ctx := context.Background()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(demo.Partitions, demo.Topic))
	require.NoError(t, err)
	t.Cleanup(kc.Close)
	reg := srfake.New()
	t.Cleanup(reg.Close)
	rc, err := sr.NewClient(sr.URLs(reg.URL()))
	require.NoError(t, err)
	ss, err := rc.CreateSchema(ctx, demo.Subject, sr.Schema{Schema: demo.Schema})
	require.NoError(t, err)
	rows, err := demo.Flights()
	require.NoError(t, err)
	values, err := demo.Encode(rows[:2000], ss.ID)
	require.NoError(t, err)

	dir := t.TempDir()
	cat, wh, store := testserver.NewCatalog(t, dir, nil)
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	m, err := topics.New(topics.Deps{Catalog: cat, Warehouse: wh, Store: store, Brokers: kc.ListenAddrs(),
		Registry: rc, Logger: log, Metrics: prometheus.NewRegistry()})
	require.NoError(t, err)
	require.NoError(t, m.Start(ctx))
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	f := &fixture{rc: rc, values: values, logs: logs, mgr: m, cat: cat, wh: wh, target: &memTarget{}}
	// Maintenance (passes only on request), the Delta publisher and a
	// catalog publisher with one target, as tarn serve wires them.
	f.maint, err = maintenance.New(maintenance.Config{Disabled: true}, maintenance.Deps{Catalog: cat, Logger: log, Metrics: prometheus.NewRegistry()})
	require.NoError(t, err)
	f.delta, err = delta.New(delta.Config{}, delta.Deps{Tables: delta.CatalogTables(cat), Logger: log})
	require.NoError(t, err)
	cat.AddCommitObserver(f.delta)
	f.pub, err = publish.New([]publish.Targeted{{Config: publish.TargetConfig{Name: "lake", Type: publish.TypeGlue, Namespaces: []string{"demo"}}, Target: f.target}},
		publish.Deps{Tables: delta.CatalogTables(cat), Store: store, Logger: log})
	require.NoError(t, err)
	cat.AddCommitObserver(f.pub)
	cfg := server.Config{Logger: log, Topics: m, Maintenance: f.maint, Formats: f.delta, Publish: f.pub}
	if oauth2 {
		key, err := auth.LoadOrCreateKey(ctx, store, dir)
		require.NoError(t, err)
		st := auth.NewStore(store, bcrypt.MinCost)
		_, _, err = st.EnsureRoot(ctx, "root", rootSecret)
		require.NoError(t, err)
		f.auth, err = auth.NewService(auth.Config{Store: st, Key: key})
		require.NoError(t, err)
		cfg.Auth = f.auth
	}
	// Serve (not httptest) runs the console's rate sampler beside the
	// handler, as tarn serve does.
	srv := server.New(cat, cfg)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(sctx, l) }()
	pubDone := make(chan struct{})
	go func() { defer close(pubDone); _ = f.pub.Run(sctx) }()
	deltaDone := make(chan struct{})
	go func() { defer close(deltaDone); f.delta.Run(sctx) }()
	t.Cleanup(func() { cancel(); <-done; <-pubDone; <-deltaDone })
	f.url = "http://" + l.Addr().String()
	f.prod, err = kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...), kgo.DefaultProduceTopic(demo.Topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(f.prod.Close)
	return f
}

// enable enables topic flights into demo.flights with a 1 s freshness
// target.
func (f *fixture) enable(t *testing.T) {
	t.Helper()
	_, err := f.mgr.Enable(t.Context(), topics.TopicConfig{Topic: demo.Topic, Table: "demo.flights", TargetLagMs: 1000})
	require.NoError(t, err)
}

func (f *fixture) produce(t testing.TB, p int32, vs ...[]byte) {
	t.Helper()
	var recs []*kgo.Record
	for _, v := range vs {
		recs = append(recs, &kgo.Record{Value: v, Partition: p})
	}
	require.NoError(t, f.prod.ProduceSync(context.Background(), recs...).FirstErr())
}

// produceIncompatible produces to partition p a record whose schema
// changes delay from long to string: no allowed evolution, so the topic
// suspends (even in error mode skip).
func (f *fixture) produceIncompatible(t *testing.T, p int32) {
	t.Helper()
	bad := strings.Replace(demo.Schema, `{"name": "delay", "type": "long"}`, `{"name": "delay", "type": "string"}`, 1)
	require.NotEqual(t, demo.Schema, bad)
	ss, err := f.rc.CreateSchema(t.Context(), demo.Subject+"-other", sr.Schema{Schema: bad})
	require.NoError(t, err)
	sc, err := hamba.Parse(bad)
	require.NoError(t, err)
	body, err := hamba.Marshal(sc, map[string]any{"date": int64(0), "delay": "late", "distance": int64(1), "origin": "A", "destination": "B"})
	require.NoError(t, err)
	var h sr.ConfluentHeader
	v, err := h.AppendEncode(nil, ss.ID, nil)
	require.NoError(t, err)
	f.produce(t, p, append(v, body...))
}

// waitTopic polls the manager until ok holds.
func (f *fixture) waitTopic(t *testing.T, ok func(topics.Status) bool) topics.Status {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := f.mgr.Get(t.Context(), demo.Topic)
		require.NoError(t, err)
		if ok(st) {
			return st
		}
		require.True(t, time.Now().Before(deadline), "timed out; status %+v", st)
		time.Sleep(50 * time.Millisecond)
	}
}

// browser is an HTTP client with a cookie jar (the console's session
// and CSRF cookies), not following redirects.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func (f *fixture) browser(t *testing.T) *browser {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &browser{t: t, base: f.url, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

type page struct {
	status   int
	body     string
	location string
	cookies  []string // Set-Cookie headers
}

func (b *browser) get(path string) page {
	b.t.Helper()
	req, err := http.NewRequestWithContext(b.t.Context(), http.MethodGet, b.base+path, nil)
	require.NoError(b.t, err)
	return b.send(req)
}

// post sends form as a browser does from a console page (same origin).
func (b *browser) post(path string, form url.Values, header ...string) page {
	b.t.Helper()
	req, err := http.NewRequestWithContext(b.t.Context(), http.MethodPost, b.base+path, strings.NewReader(form.Encode()))
	require.NoError(b.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return b.send(req)
}

func (b *browser) send(req *http.Request) page {
	b.t.Helper()
	rsp, err := b.c.Do(req)
	require.NoError(b.t, err)
	defer rsp.Body.Close()
	body, err := io.ReadAll(rsp.Body)
	require.NoError(b.t, err)
	return page{status: rsp.StatusCode, body: string(body), location: rsp.Header.Get("Location"), cookies: rsp.Header.Values("Set-Cookie")}
}

// csrf is the CSRF token the console put in its forms.
func (b *browser) csrf() string {
	b.t.Helper()
	u, err := url.Parse(b.base + "/ui/")
	require.NoError(b.t, err)
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == "tarn_csrf" {
			return c.Value
		}
	}
	b.t.Fatal("no tarn_csrf cookie yet")
	return ""
}

// api sends an API request (JSON) with token (may be empty).
func (f *fixture) api(t *testing.T, method, path, token string, out any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, f.url+path, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rsp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer rsp.Body.Close()
	b, err := io.ReadAll(rsp.Body)
	require.NoError(t, err)
	if out != nil && rsp.StatusCode == http.StatusOK {
		require.NoError(t, json.Unmarshal(b, out), "%s", b)
	}
	return rsp.StatusCode
}

// attrs lists the values of attribute name in body, in order.
func attrs(body, name string) []string {
	var out []string
	for _, m := range regexp.MustCompile(name+`="([^"]*)"`).FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// memTarget is a publish target in memory (a Glue stand-in): it names
// table id "namespace_name" and records the metadata location published.
type memTarget struct {
	mu  sync.Mutex
	loc map[string]string
}

func (m *memTarget) Name(id catalog.Ident) (string, error) {
	return strings.Join(id.Namespace, "_") + "." + id.Name, nil
}

func (m *memTarget) Publish(_ context.Context, id catalog.Ident, tbl *table.Table, _ publish.Record) (string, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name, _ := m.Name(id)
	if m.loc == nil {
		m.loc = map[string]string{}
	}
	m.loc[name] = tbl.MetadataLocation()
	return name, tbl.MetadataLocation(), nil
}

func (m *memTarget) Remove(_ context.Context, last publish.Record) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.loc[last.Remote]
	delete(m.loc, last.Remote)
	return ok, nil
}

func kgoRecord(v []byte, p int32) *kgo.Record { return &kgo.Record{Value: v, Partition: p} }
