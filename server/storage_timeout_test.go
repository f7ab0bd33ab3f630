package server_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/catalog/bolt"
	"github.com/tarnhq/tarn/server"
	"github.com/tarnhq/tarn/spec"
	"github.com/tarnhq/tarn/storage"
)

// blackHole accepts connections and never answers; it counts them.
func blackHole(t *testing.T) (string, func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return "http://" + ln.Addr().String(), func() int { mu.Lock(); defer mu.Unlock(); return len(conns) }
}

// TestS3CreateTableEndpointNeverAnswers: with an S3 endpoint that accepts
// connections and never answers, createTable ends (bounded by
// s3.request-timeout × s3.max-attempts) with a 5xx ErrorModel instead of
// hanging; the table is not created. No moto needed.
func TestS3CreateTableEndpointNeverAnswers(t *testing.T) {
	t.Parallel()
	ep, accepted := blackHole(t)
	wh, err := catalog.NewWarehouse(catalog.DefaultWarehouse, "s3://bkt/wh", map[string]string{
		storage.PropS3Endpoint: ep, storage.PropS3Region: "us-east-1",
		storage.PropS3AccessKeyID: "AKIATIMEOUT", storage.PropS3SecretAccessKey: "timeout-secret",
		storage.PropS3RequestTimeout: "300ms", storage.PropS3ConnectTimeout: "1s", storage.PropS3MaxAttempts: "2",
	})
	require.NoError(t, err)
	store, err := bolt.Open(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	cat, err := catalog.New(catalog.Config{Store: store, Warehouses: []*catalog.Warehouse{wh}})
	require.NoError(t, err)
	hs := httptest.NewServer(server.New(cat, server.Config{}).Handler())
	t.Cleanup(hs.Close)
	s := &s3Server{url: hs.URL, wh: wh, logs: &syncBuffer{}}

	st, b := s.do(t, http.MethodPost, "/v1/namespaces", spec.CreateNamespaceRequest{Namespace: []string{"hang"}}, nil)
	require.Equal(t, http.StatusOK, st, string(b))
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		st, b = s.do(t, http.MethodPost, "/v1/namespaces/hang/tables", spec.CreateTableRequest{Name: "t", Schema: schema}, nil)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("createTable still hangs after 60s")
	}
	took := time.Since(start)
	require.Less(t, took, 30*time.Second)
	require.Equal(t, http.StatusServiceUnavailable, st, string(b))
	var em spec.ErrorModel
	require.NoError(t, json.Unmarshal(b, &struct {
		Error *spec.ErrorModel `json:"error"`
	}{&em}), string(b))
	require.Equal(t, st, em.Code)
	require.Equal(t, "ServiceUnavailableException", em.Type)
	require.Contains(t, em.Message, "object store error on PutObject: timeout")
	require.NotContains(t, string(b), "timeout-secret")
	require.NotContains(t, string(b), "AKIATIMEOUT")
	require.Positive(t, accepted())
	t.Logf("createTable against a silent endpoint: %d after %s: %s", st, took, em.Message)

	st, _ = s.do(t, http.MethodGet, "/v1/namespaces/hang/tables/t", nil, nil)
	require.Equal(t, http.StatusNotFound, st)
}

// A timeout property that is not a positive duration is refused.
func TestS3TimeoutPropertiesValidated(t *testing.T) {
	t.Parallel()
	for _, p := range []map[string]string{
		{storage.PropS3RequestTimeout: "soon"}, {storage.PropS3RequestTimeout: "0"},
		{storage.PropS3ConnectTimeout: "-1s"}, {storage.PropS3MaxAttempts: "0"}, {storage.PropS3MaxAttempts: "x"},
	} {
		_, err := catalog.NewWarehouse("w", "s3://bkt/wh", p)
		require.ErrorIs(t, err, catalog.ErrInvalidArgument, p)
	}
	_, err := catalog.NewWarehouse("w", "s3://bkt/wh", map[string]string{storage.PropS3RequestTimeout: "2.5", storage.PropS3ConnectTimeout: "3s", storage.PropS3MaxAttempts: "5"})
	require.NoError(t, err)
}

// storageServer is Tarn over one S3 warehouse with props, no moto.
func storageServer(t *testing.T, location string, props map[string]string) *s3Server {
	t.Helper()
	wh, err := catalog.NewWarehouse(catalog.DefaultWarehouse, location, props)
	require.NoError(t, err)
	store, err := bolt.Open(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	cat, err := catalog.New(catalog.Config{Store: store, Warehouses: []*catalog.Warehouse{wh}})
	require.NoError(t, err)
	hs := httptest.NewServer(server.New(cat, server.Config{}).Handler())
	t.Cleanup(hs.Close)
	return &s3Server{url: hs.URL, wh: wh, logs: &syncBuffer{}}
}

// createFails creates namespace ns and table t and returns the failed
// createTable's status and ErrorModel.
func createFails(t *testing.T, s *s3Server, ns string) (int, spec.ErrorModel, string) {
	t.Helper()
	st, b := s.do(t, http.MethodPost, "/v1/namespaces", spec.CreateNamespaceRequest{Namespace: []string{ns}}, nil)
	require.Equal(t, http.StatusOK, st, string(b))
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	st, b = s.do(t, http.MethodPost, "/v1/namespaces/"+ns+"/tables", spec.CreateTableRequest{Name: "t", Schema: schema}, nil)
	var em spec.ErrorModel
	require.NoError(t, json.Unmarshal(b, &struct {
		Error *spec.ErrorModel `json:"error"`
	}{&em}), string(b))
	require.Equal(t, st, em.Code)
	return st, em, string(b)
}

// TestS3CreateTableConnectionRefused: a store that refuses connections
// gives 503 ServiceUnavailableException naming "connection refused", not
// an opaque "internal server error", and no credential. No moto needed.
func TestS3CreateTableConnectionRefused(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	s := storageServer(t, "s3://bkt/wh", map[string]string{
		storage.PropS3Endpoint: "http://" + addr, storage.PropS3Region: "us-east-1",
		storage.PropS3AccessKeyID: "AKIAREFUSED", storage.PropS3SecretAccessKey: "refused-secret", storage.PropS3MaxAttempts: "1"})
	st, em, body := createFails(t, s, "refused")
	require.Equal(t, http.StatusServiceUnavailable, st, body)
	require.Equal(t, "ServiceUnavailableException", em.Type)
	require.Contains(t, em.Message, "object store error on PutObject: connection refused")
	require.NotContains(t, body, "refused-secret")
	require.NotContains(t, body, "AKIAREFUSED")
}
