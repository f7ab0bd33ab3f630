package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/tarnhq/tarn/catalog/bolt"
	"github.com/tarnhq/tarn/ingest/topics"
	"github.com/tarnhq/tarn/internal/demo"
	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/server"
	"github.com/tarnhq/tarn/spec"
)

// topicsFixture is a Tarn server with a topic manager over a kfake
// cluster (topic flights, 3 partitions) and an srfake registry holding
// the flights Avro schema.
type topicsFixture struct {
	url    string
	store  *bolt.Store
	prod   *kgo.Client
	values [][]byte
}

func newTopicsFixture(t *testing.T) *topicsFixture {
	t.Helper()
	ctx := context.Background()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(demo.Partitions, demo.Topic), kfake.SeedTopics(1, "clicks"))
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
	values, err := demo.Encode(rows[:100], ss.ID)
	require.NoError(t, err)

	cat, wh, store := testserver.NewCatalog(t, t.TempDir(), nil)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m, err := topics.New(topics.Deps{Catalog: cat, Warehouse: wh, Store: store, Brokers: kc.ListenAddrs(),
		Registry: rc, Logger: log, Metrics: prometheus.NewRegistry()})
	require.NoError(t, err)
	require.NoError(t, m.Start(ctx))
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	hs := httptest.NewServer(server.New(cat, server.Config{Logger: log, Topics: m}).Handler())
	t.Cleanup(hs.Close)
	prod, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...), kgo.DefaultProduceTopic(demo.Topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(prod.Close)
	return &topicsFixture{url: hs.URL, store: store, prod: prod, values: values}
}

func (f *topicsFixture) do(t *testing.T, method, path, body string) *http.Response {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, f.url+path, r)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	rsp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return rsp
}

// status sends a request, requires status want and decodes a topic
// status from the body (when there is one).
func (f *topicsFixture) status(t *testing.T, method, path, body string, want int) topics.Status {
	t.Helper()
	rsp := f.do(t, method, path, body)
	defer rsp.Body.Close()
	b, err := io.ReadAll(rsp.Body)
	require.NoError(t, err)
	require.Equal(t, want, rsp.StatusCode, "%s %s: %s", method, path, b)
	var st topics.Status
	if len(b) > 0 {
		require.NoError(t, json.Unmarshal(b, &st), "%s", b)
	}
	return st
}

func (f *topicsFixture) list(t *testing.T) []topics.Status {
	t.Helper()
	rsp := f.do(t, http.MethodGet, "/management/v1/topics", "")
	defer rsp.Body.Close()
	require.Equal(t, http.StatusOK, rsp.StatusCode)
	var out server.ListTopicsResponse
	require.NoError(t, json.NewDecoder(rsp.Body).Decode(&out))
	return out.Topics
}

func (f *topicsFixture) produce(t *testing.T, p int32, vs ...[]byte) {
	t.Helper()
	var recs []*kgo.Record
	for _, v := range vs {
		recs = append(recs, &kgo.Record{Value: v, Partition: p})
	}
	require.NoError(t, f.prod.ProduceSync(t.Context(), recs...).FirstErr())
}

// waitTopic polls GET until cond holds.
func (f *topicsFixture) waitTopic(t *testing.T, name string, cond func(topics.Status) bool) topics.Status {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := f.status(t, http.MethodGet, "/management/v1/topics/"+name, "", http.StatusOK)
		if cond(st) {
			return st
		}
		require.True(t, time.Now().Before(deadline), "timed out; status %+v", st)
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTopicsAPI drives every management route through HTTP: enable (201),
// list, get, a suspension and its resume after a PATCH of the error mode,
// disable (the table stays read-only to REST clients) and release (it
// becomes writable, the topic is gone).
func TestTopicsAPI(t *testing.T) {
	t.Parallel()
	f := newTopicsFixture(t)
	st := f.status(t, http.MethodPost, "/management/v1/topics",
		`{"topic":"flights","table":"air.flights","target-lag-ms":1000,"partition-spec":["day(_kafka.timestamp)"]}`, http.StatusCreated)
	assert.Equal(t, "flights", st.Topic)
	assert.Equal(t, "air.flights", st.Table)
	assert.Equal(t, "avro", st.Config.Format)
	assert.Equal(t, "suspend", st.Config.ErrorMode)
	assert.Equal(t, "earliest", st.Config.Start)

	// Good rows, a bad one, more good rows, all in partition 0.
	f.produce(t, 0, f.values[:10]...)
	f.produce(t, 0, []byte("garbage"))
	f.produce(t, 0, f.values[10:15]...)
	st = f.waitTopic(t, "flights", func(st topics.Status) bool { return st.State == topics.StateSuspended && st.Rows == 10 })
	assert.Contains(t, st.Reason, "bad_header")

	all := f.list(t)
	require.Len(t, all, 1)
	assert.Equal(t, topics.StateSuspended, all[0].State)

	st = f.status(t, http.MethodPatch, "/management/v1/topics/flights", `{"error-mode":"skip","target-lag-ms":2000}`, http.StatusOK)
	assert.Equal(t, "skip", st.Config.ErrorMode)
	assert.EqualValues(t, 2000, st.Config.TargetLagMs)
	assert.Equal(t, topics.StateSuspended, st.State)
	f.status(t, http.MethodPost, "/management/v1/topics/flights/resume", "", http.StatusOK)
	st = f.waitTopic(t, "flights", func(st topics.Status) bool { return st.Rows == 15 && st.LagRecords != nil && *st.LagRecords == 0 })
	assert.Equal(t, topics.StateSyncing, st.State)
	assert.EqualValues(t, 1, st.Errors["bad_header"])

	em := requireErrorModel(t, f.do(t, http.MethodPost, "/management/v1/topics/flights/resume", ""), http.StatusConflict)
	assert.Equal(t, spec.Conflict.Type, em.Type)
	assert.Contains(t, em.Message, "not suspended")

	commit := `{"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"v"}}]}`
	em = requireErrorModel(t, f.do(t, http.MethodPost, "/v1/namespaces/air/tables/flights", commit), http.StatusForbidden)
	assert.Equal(t, spec.Forbidden.Type, em.Type)
	em = requireErrorModel(t, f.do(t, http.MethodDelete, "/v1/namespaces/air/tables/flights", ""), http.StatusConflict)
	assert.Equal(t, spec.Conflict.Type, em.Type)

	rsp := f.do(t, http.MethodDelete, "/management/v1/topics/flights", "")
	rsp.Body.Close()
	require.Equal(t, http.StatusNoContent, rsp.StatusCode)
	st = f.status(t, http.MethodGet, "/management/v1/topics/flights", "", http.StatusOK)
	assert.Equal(t, topics.StateDisabled, st.State)
	em = requireErrorModel(t, f.do(t, http.MethodPost, "/v1/namespaces/air/tables/flights", commit), http.StatusForbidden)
	assert.Equal(t, spec.Forbidden.Type, em.Type)

	rsp = f.do(t, http.MethodDelete, "/management/v1/topics/flights?release=true", "")
	rsp.Body.Close()
	require.Equal(t, http.StatusNoContent, rsp.StatusCode)
	em = requireErrorModel(t, f.do(t, http.MethodGet, "/management/v1/topics/flights", ""), http.StatusNotFound)
	assert.Equal(t, spec.NotFound.Type, em.Type)
	rsp = f.do(t, http.MethodPost, "/v1/namespaces/air/tables/flights", commit)
	rsp.Body.Close()
	assert.Equal(t, http.StatusOK, rsp.StatusCode, "a released table is writable")
	assert.Empty(t, f.list(t))
}

// TestTopicsAPIBadInput: each bad request gets the ErrorModel with the
// right status and type, and changes nothing (no topic, no record, no
// table, the enabled topic's config as it was).
func TestTopicsAPIBadInput(t *testing.T) {
	t.Parallel()
	f := newTopicsFixture(t)
	rsp := f.do(t, http.MethodPost, "/v1/namespaces", `{"namespace":["other"]}`)
	rsp.Body.Close()
	rsp = f.do(t, http.MethodPost, "/v1/namespaces/other/tables", `{"name":"taken","schema":`+badInputSchema+`}`)
	rsp.Body.Close()
	require.Equal(t, http.StatusOK, rsp.StatusCode)
	f.status(t, http.MethodPost, "/management/v1/topics", `{"topic":"flights","table":"air.flights"}`, http.StatusCreated)
	before := f.status(t, http.MethodGet, "/management/v1/topics/flights", "", http.StatusOK).Config

	cases := []struct {
		name, method, path, body string
		want                     spec.Exception
		msg                      string
	}{
		{"malformed JSON", http.MethodPost, "/management/v1/topics", `{"topic":`, spec.BadRequest, "malformed"},
		{"unknown field", http.MethodPost, "/management/v1/topics", `{"topic":"t","table":"a.b","topc":"x"}`, spec.BadRequest, "topc"},
		{"no topic", http.MethodPost, "/management/v1/topics", `{"table":"a.b"}`, spec.InvalidArgument, "topic is required"},
		{"invalid topic name", http.MethodPost, "/management/v1/topics", `{"topic":"bad topic!","table":"a.b"}`, spec.InvalidArgument, "a Kafka topic name may hold only"},
		{"no namespace", http.MethodPost, "/management/v1/topics", `{"topic":"flights","table":"b"}`, spec.InvalidArgument, "namespace.name"},
		{"lag below minimum", http.MethodPost, "/management/v1/topics", `{"topic":"flights","table":"a.b","target-lag-ms":249}`, spec.InvalidArgument, "minimum 250"},
		{"bad format", http.MethodPost, "/management/v1/topics", `{"topic":"flights","table":"a.b","format":"csv"}`, spec.InvalidArgument, "format"},
		{"bad error mode", http.MethodPost, "/management/v1/topics", `{"topic":"flights","table":"a.b","error-mode":"drop"}`, spec.InvalidArgument, "error mode"},
		{"bad start", http.MethodPost, "/management/v1/topics", `{"topic":"flights","table":"a.b","start":"now"}`, spec.InvalidArgument, "start"},
		{"json schema not an Iceberg schema", http.MethodPost, "/management/v1/topics", `{"topic":"flights","table":"a.b","format":"json","schema":{"type":"record"}}`, spec.InvalidArgument, "schema"},
		{"missing Kafka topic", http.MethodPost, "/management/v1/topics", `{"topic":"absent","table":"a.b"}`, spec.NotFound, "absent"},
		{"already enabled", http.MethodPost, "/management/v1/topics", `{"topic":"flights","table":"a.b"}`, spec.AlreadyExists, "already enabled"},
		{"table not Tarn's", http.MethodPost, "/management/v1/topics", `{"topic":"clicks","table":"other.taken"}`, spec.AlreadyExists, "not materialized by Tarn"},
		{"table of another topic", http.MethodPost, "/management/v1/topics", `{"topic":"clicks","table":"air.flights"}`, spec.AlreadyExists, "materialized from topic flights"},
		{"no registry schema", http.MethodPost, "/management/v1/topics", `{"topic":"clicks","table":"a.b"}`, spec.InvalidArgument, "clicks-value"},
		{"get unknown", http.MethodGet, "/management/v1/topics/nope", "", spec.NotFound, "nope"},
		{"patch unknown", http.MethodPatch, "/management/v1/topics/nope", `{"target-lag-ms":2000}`, spec.NotFound, "nope"},
		{"patch malformed", http.MethodPatch, "/management/v1/topics/flights", `[`, spec.BadRequest, "malformed"},
		{"patch immutable field", http.MethodPatch, "/management/v1/topics/flights", `{"format":"raw"}`, spec.BadRequest, "cannot be changed"},
		{"patch nothing", http.MethodPatch, "/management/v1/topics/flights", `{}`, spec.InvalidArgument, "nothing to change"},
		{"patch lag below minimum", http.MethodPatch, "/management/v1/topics/flights", `{"target-lag-ms":10}`, spec.InvalidArgument, "minimum"},
		{"patch bad error mode", http.MethodPatch, "/management/v1/topics/flights", `{"error-mode":"drop"}`, spec.InvalidArgument, "error mode"},
		{"patch bad partition field", http.MethodPatch, "/management/v1/topics/flights", `{"partition-spec":["identity(nope)"]}`, spec.InvalidArgument, "nope"},
		{"patch wrong type", http.MethodPatch, "/management/v1/topics/flights", `{"target-lag-ms":"fast"}`, spec.BadRequest, "malformed"},
		{"delete unknown", http.MethodDelete, "/management/v1/topics/nope", "", spec.NotFound, "nope"},
		{"delete bad release", http.MethodDelete, "/management/v1/topics/flights?release=maybe", "", spec.BadRequest, "release"},
		{"resume unknown", http.MethodPost, "/management/v1/topics/nope/resume", "", spec.NotFound, "nope"},
		{"resume not suspended", http.MethodPost, "/management/v1/topics/flights/resume", "", spec.Conflict, "not suspended"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			em := requireErrorModel(t, f.do(t, tt.method, tt.path, tt.body), tt.want.Status)
			assert.Equal(t, tt.want.Type, em.Type)
			assert.Contains(t, em.Message, tt.msg)
			all := f.list(t)
			require.Len(t, all, 1)
			assert.Equal(t, before, all[0].Config)
			assert.NotEqual(t, topics.StateDisabled, all[0].State)
			records, err := f.store.ListRecords(t.Context(), "topics")
			require.NoError(t, err)
			assert.Len(t, records, 1)
			for _, tbl := range []string{"/v1/namespaces/a/tables/b", "/v1/namespaces/air/tables/absent"} {
				rsp := f.do(t, http.MethodHead, tbl, "")
				rsp.Body.Close()
				assert.Equal(t, http.StatusNotFound, rsp.StatusCode, tbl)
			}
		})
	}
}

// TestTopicsAPINotConfigured: without a topic manager every management
// route answers 503 with how to configure ingest.
func TestTopicsAPINotConfigured(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/management/v1/topics"},
		{http.MethodPost, "/management/v1/topics"},
		{http.MethodGet, "/management/v1/topics/t"},
		{http.MethodPatch, "/management/v1/topics/t"},
		{http.MethodDelete, "/management/v1/topics/t"},
		{http.MethodPost, "/management/v1/topics/t/resume"},
	} {
		req, err := http.NewRequestWithContext(t.Context(), r.method, srv.URL+r.path, strings.NewReader(`{}`))
		require.NoError(t, err)
		rsp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		em := requireErrorModel(t, rsp, http.StatusServiceUnavailable)
		assert.Equal(t, spec.ServiceUnavailable.Type, em.Type)
		assert.Equal(t, "ingest not configured: start tarn serve with --kafka-brokers", em.Message)
	}
}

// TestTopicsAPIReservedNames pins two trial failures through HTTP. A
// REST client could create or rename a table into a name a topic
// reserves (its <table>_dlq) and was then locked out of it (403): now
// 409 AlreadyExists naming the topic, nothing changed. And an enable
// over an existing <table>_dlq that is not the topic's took it over (or
// answered 400 "no _kafka column"): now 409 ConflictException naming the
// table and what to do.
func TestTopicsAPIReservedNames(t *testing.T) {
	t.Parallel()
	f := newTopicsFixture(t)
	f.status(t, http.MethodPost, "/management/v1/topics", `{"topic":"flights","table":"air.flights"}`, http.StatusCreated)
	for _, ns := range []string{"plain", "web"} {
		rsp := f.do(t, http.MethodPost, "/v1/namespaces", `{"namespace":["`+ns+`"]}`)
		rsp.Body.Close()
		require.Equal(t, http.StatusOK, rsp.StatusCode)
	}
	rsp := f.do(t, http.MethodPost, "/v1/namespaces/plain/tables", `{"name":"t","schema":`+badInputSchema+`}`)
	rsp.Body.Close()
	require.Equal(t, http.StatusOK, rsp.StatusCode)

	em := requireErrorModel(t, f.do(t, http.MethodPost, "/v1/namespaces/air/tables", `{"name":"flights_dlq","schema":`+badInputSchema+`}`), http.StatusConflict)
	assert.Equal(t, spec.AlreadyExists.Type, em.Type)
	assert.Contains(t, em.Message, "Cannot create table air.flights_dlq: the name is reserved by Tarn for Kafka topic flights")
	em = requireErrorModel(t, f.do(t, http.MethodPost, "/v1/tables/rename",
		`{"source":{"namespace":["plain"],"name":"t"},"destination":{"namespace":["air"],"name":"flights_dlq"}}`), http.StatusConflict)
	assert.Equal(t, spec.AlreadyExists.Type, em.Type)
	assert.Contains(t, em.Message, "Cannot rename plain.t to air.flights_dlq: the name is reserved by Tarn for Kafka topic flights")
	for path, want := range map[string]int{"/v1/namespaces/air/tables/flights_dlq": http.StatusNotFound, "/v1/namespaces/plain/tables/t": http.StatusNoContent} {
		rsp := f.do(t, http.MethodHead, path, "")
		rsp.Body.Close()
		assert.Equal(t, want, rsp.StatusCode, path)
	}

	// A user's web.clicks_dlq, then topic clicks into web.clicks.
	rsp = f.do(t, http.MethodPost, "/v1/namespaces/web/tables", `{"name":"clicks_dlq","schema":`+badInputSchema+`}`)
	rsp.Body.Close()
	require.Equal(t, http.StatusOK, rsp.StatusCode)
	em = requireErrorModel(t, f.do(t, http.MethodPost, "/management/v1/topics", `{"topic":"clicks","table":"web.clicks","format":"raw","error-mode":"dlq"}`), http.StatusConflict)
	assert.Equal(t, spec.Conflict.Type, em.Type)
	assert.Equal(t, "table web.clicks_dlq already exists and is not the dead letter table of topic clicks (Tarn would write the topic's bad records into it); drop it or rename it, then try again", em.Message)
	em = requireErrorModel(t, f.do(t, http.MethodGet, "/management/v1/topics/clicks", ""), http.StatusNotFound)
	assert.Equal(t, spec.NotFound.Type, em.Type)
	rsp = f.do(t, http.MethodHead, "/v1/namespaces/web/tables/clicks", "")
	rsp.Body.Close()
	assert.Equal(t, http.StatusNotFound, rsp.StatusCode, "nothing created")
	rsp = f.do(t, http.MethodPost, "/v1/tables/rename",
		`{"source":{"namespace":["web"],"name":"clicks_dlq"},"destination":{"namespace":["web"],"name":"old_clicks_dlq"}}`)
	rsp.Body.Close()
	require.Equal(t, http.StatusNoContent, rsp.StatusCode, "the user's table stays writable")
	st := f.status(t, http.MethodPost, "/management/v1/topics", `{"topic":"clicks","table":"web.clicks","format":"raw","error-mode":"dlq"}`, http.StatusCreated)
	assert.Equal(t, "dlq", st.Config.ErrorMode)
}

// TestTopicsAPIWithoutKafka pins a trial failure: without --kafka-brokers
// the 403 on an owned table said "release it first (DELETE
// ...?release=true)", but every management route answered 503. A
// manager without Kafka serves the routes that need no broker: list,
// get, disable and release; enable and resume answer 503.
func TestTopicsAPIWithoutKafka(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "clicks"))
	require.NoError(t, err)
	t.Cleanup(kc.Close)
	cat, wh, store := testserver.NewCatalog(t, t.TempDir(), nil)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	withKafka, err := topics.New(topics.Deps{Catalog: cat, Warehouse: wh, Store: store, Brokers: kc.ListenAddrs(), Logger: log})
	require.NoError(t, err)
	require.NoError(t, withKafka.Start(ctx))
	_, err = withKafka.Enable(ctx, topics.TopicConfig{Topic: "clicks", Table: "web.clicks", Format: "raw"})
	require.NoError(t, err)
	require.NoError(t, withKafka.Close(ctx))

	m, err := topics.New(topics.Deps{Catalog: cat, Warehouse: wh, Store: store, Logger: log})
	require.NoError(t, err)
	require.NoError(t, m.Start(ctx))
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	hs := httptest.NewServer(server.New(cat, server.Config{Logger: log, Topics: m}).Handler())
	t.Cleanup(hs.Close)
	f := &topicsFixture{url: hs.URL, store: store}

	commit := `{"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"v"}}]}`
	em := requireErrorModel(t, f.do(t, http.MethodPost, "/v1/namespaces/web/tables/clicks", commit), http.StatusForbidden)
	assert.Contains(t, em.Message, "release it first (DELETE /management/v1/topics/clicks?release=true)")

	require.Len(t, f.list(t), 1)
	st := f.status(t, http.MethodGet, "/management/v1/topics/clicks", "", http.StatusOK)
	assert.Equal(t, "web.clicks", st.Table)
	for _, r := range []struct{ method, path, body string }{
		{http.MethodPost, "/management/v1/topics", `{"topic":"other","table":"web.other","format":"raw"}`},
		{http.MethodPost, "/management/v1/topics/clicks/resume", ""},
	} {
		em := requireErrorModel(t, f.do(t, r.method, r.path, r.body), http.StatusServiceUnavailable)
		assert.Equal(t, "ingest not configured: start tarn serve with --kafka-brokers", em.Message, r.path)
	}

	rsp := f.do(t, http.MethodDelete, "/management/v1/topics/clicks?release=true", "")
	rsp.Body.Close()
	require.Equal(t, http.StatusNoContent, rsp.StatusCode)
	assert.Empty(t, f.list(t))
	rsp = f.do(t, http.MethodPost, "/v1/namespaces/web/tables/clicks", commit)
	rsp.Body.Close()
	assert.Equal(t, http.StatusOK, rsp.StatusCode, "the released table is writable")
}
