package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/catalog/bolt"
	"github.com/tarnhq/tarn/internal/testmoto"
	"github.com/tarnhq/tarn/server"
	"github.com/tarnhq/tarn/spec"
	"github.com/tarnhq/tarn/storage"
)

// syncBuffer is a log sink read after the requests.
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

// s3Server is Tarn over an S3 warehouse in a fresh moto bucket, logging
// at debug level into logs.
type s3Server struct {
	url  string
	wh   *catalog.Warehouse
	logs *syncBuffer
}

func startS3Server(t *testing.T, props map[string]string) *s3Server {
	t.Helper()
	ep := testmoto.Endpoint(t)
	wh := testmoto.Warehouse(t, ep, catalog.DefaultWarehouse, props)
	store, err := bolt.Open(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cat, err := catalog.New(catalog.Config{Store: store, Warehouses: []*catalog.Warehouse{wh}, Logger: log})
	require.NoError(t, err)
	hs := httptest.NewServer(server.New(cat, server.Config{Logger: log}).Handler())
	t.Cleanup(hs.Close)
	return &s3Server{url: hs.URL, wh: wh, logs: logs}
}

func (s *s3Server) do(t *testing.T, method, path string, body any, hdr map[string]string) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.url+path, r)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

var vendHeader = map[string]string{"X-Iceberg-Access-Delegation": "vended-credentials"}

func (s *s3Server) createTable(t *testing.T, ns, name string, hdr map[string]string) spec.LoadTableResult {
	t.Helper()
	st, _ := s.do(t, http.MethodPost, "/v1/namespaces", spec.CreateNamespaceRequest{Namespace: []string{ns}}, nil)
	require.Contains(t, []int{200, 409}, st)
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	st, b := s.do(t, http.MethodPost, "/v1/namespaces/"+ns+"/tables", spec.CreateTableRequest{Name: name, Schema: schema}, hdr)
	require.Equal(t, http.StatusOK, st, string(b))
	var out spec.LoadTableResult
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

func tableLocation(t *testing.T, r spec.LoadTableResult) string {
	var md struct{ Location string }
	require.NoError(t, json.Unmarshal(r.Metadata, &md))
	return md.Location
}

// TestS3VendedCredentials: with a role configured, createTable and
// loadTable asked for vended-credentials return STS session credentials
// for exactly the table's location (not Tarn's own keys), in
// storage-credentials and config; they read and write objects there;
// GET .../credentials refreshes them; without the header nothing is
// vended; and no credential reaches the log.
func TestS3VendedCredentials(t *testing.T) {
	t.Parallel()
	ep := testmoto.Endpoint(t)
	s := startS3Server(t, map[string]string{storage.PropS3RoleARN: testmoto.RoleARN, storage.PropSTSEndpoint: ep})
	created := s.createTable(t, "vend", "t", vendHeader)
	loc := tableLocation(t, created)
	require.Len(t, created.StorageCredentials, 1)
	cred := created.StorageCredentials[0]
	require.Equal(t, loc, cred.Prefix)
	require.NotEmpty(t, cred.Config["s3.session-token"])
	require.NotEqual(t, testmoto.AccessKeyID, cred.Config["s3.access-key-id"], "STS keys, not Tarn's")
	require.NotEqual(t, testmoto.SecretAccessKey, cred.Config["s3.secret-access-key"])
	require.Equal(t, ep, cred.Config["s3.endpoint"])
	require.Equal(t, "true", cred.Config["s3.path-style-access"])
	require.Equal(t, "false", cred.Config["s3.force-virtual-addressing"])
	require.Equal(t, cred.Config["s3.access-key-id"], created.Config["s3.access-key-id"])

	// The vended keys work against the store (moto does not enforce the
	// session policy; TestSessionPolicy* assert the document).
	secrets := []string{testmoto.SecretAccessKey, cred.Config["s3.secret-access-key"], cred.Config["s3.session-token"]}
	putGet(t, ep, cred.Config, loc+"/data/probe")

	st, b := s.do(t, http.MethodGet, "/v1/namespaces/vend/tables/t", nil, vendHeader)
	require.Equal(t, http.StatusOK, st)
	var loaded spec.LoadTableResult
	require.NoError(t, json.Unmarshal(b, &loaded))
	require.Len(t, loaded.StorageCredentials, 1)
	secrets = append(secrets, loaded.StorageCredentials[0].Config["s3.secret-access-key"])

	st, b = s.do(t, http.MethodGet, "/v1/namespaces/vend/tables/t/credentials", nil, nil)
	require.Equal(t, http.StatusOK, st, string(b))
	var lc spec.LoadCredentialsResponse
	require.NoError(t, json.Unmarshal(b, &lc))
	require.Len(t, lc.StorageCredentials, 1)
	require.Equal(t, loc, lc.StorageCredentials[0].Prefix)
	require.NotEmpty(t, lc.StorageCredentials[0].Config["s3.session-token"])
	secrets = append(secrets, lc.StorageCredentials[0].Config["s3.secret-access-key"])

	st, b = s.do(t, http.MethodGet, "/v1/namespaces/vend/tables/t", nil, nil)
	require.Equal(t, http.StatusOK, st)
	var plain spec.LoadTableResult
	require.NoError(t, json.Unmarshal(b, &plain))
	require.Empty(t, plain.StorageCredentials)
	require.Empty(t, plain.Config["s3.secret-access-key"])
	require.Equal(t, ep, plain.Config["s3.endpoint"])

	st, _ = s.do(t, http.MethodGet, "/v1/namespaces/vend/tables/nope/credentials", nil, nil)
	require.Equal(t, http.StatusNotFound, st)

	logs := s.logs.String()
	require.NotEmpty(t, logs)
	for _, sec := range secrets {
		require.NotEmpty(t, sec)
		require.NotContains(t, logs, sec)
	}
}

// TestS3VendingWithoutSTS: no role and no opt-in, nothing is vended; with
// sts-enabled false the role is ignored.
func TestS3VendingWithoutSTS(t *testing.T) {
	t.Parallel()
	s := startS3Server(t, map[string]string{storage.PropS3RoleARN: testmoto.RoleARN, storage.PropSTSEnabled: "false"})
	created := s.createTable(t, "nosts", "t", vendHeader)
	require.Empty(t, created.StorageCredentials)
	require.Empty(t, created.Config["s3.access-key-id"])
	st, b := s.do(t, http.MethodGet, "/v1/namespaces/nosts/tables/t/credentials", nil, nil)
	require.Equal(t, http.StatusOK, st)
	require.JSONEq(t, `{"storage-credentials":[]}`, string(b))
}

// TestS3RemoteSigning: a client asking for remote-signing gets the signer
// settings; a request inside the table's location is signed and moto
// accepts it; one outside is refused with 403 ForbiddenException.
func TestS3RemoteSigning(t *testing.T) {
	t.Parallel()
	ep := testmoto.Endpoint(t)
	s := startS3Server(t, nil)
	created := s.createTable(t, "sign", "t", map[string]string{"X-Iceberg-Access-Delegation": "remote-signing"})
	require.Equal(t, "true", created.Config["s3.remote-signing-enabled"])
	require.Equal(t, "v1/default/namespaces/sign/tables/t/sign", created.Config["s3.signer.endpoint"])
	require.Empty(t, created.StorageCredentials)
	loc := tableLocation(t, created)
	bucket, key, _ := strings.Cut(strings.TrimPrefix(loc, "s3://"), "/")

	signed := func(method, uri string, body []byte) spec.RemoteSignResult {
		t.Helper()
		st, b := s.do(t, http.MethodPost, "/v1/default/namespaces/sign/tables/t/sign", spec.RemoteSignRequest{
			Region: testmoto.Region, Method: method, URI: uri,
			Headers: map[string][]string{"Content-Type": {"application/octet-stream"}}}, nil)
		require.Equal(t, http.StatusOK, st, string(b))
		var res spec.RemoteSignResult
		require.NoError(t, json.Unmarshal(b, &res))
		return res
	}
	send := func(method string, res spec.RemoteSignResult, body []byte) (int, []byte) {
		req, err := http.NewRequest(method, res.URI, bytes.NewReader(body))
		require.NoError(t, err)
		for k, vs := range res.Headers {
			for _, v := range vs {
				req.Header.Add(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	uri := ep + "/" + bucket + "/" + key + "/data/signed.bin"
	st, b := send(http.MethodPut, signed(http.MethodPut, uri, nil), []byte("hello"))
	require.Equal(t, http.StatusOK, st, string(b))
	st, b = send(http.MethodGet, signed(http.MethodGet, uri, nil), nil)
	require.Equal(t, http.StatusOK, st, string(b))
	require.Equal(t, "hello", string(b))

	for _, out := range []string{
		ep + "/" + bucket + "/wh/sign/other/data/x",
		ep + "/" + bucket + "/" + key + "/../other/x",
		ep + "/otherbucket/" + key + "/data/x",
		"http://example.com/" + bucket + "/" + key + "/data/x",
		ep + "/" + bucket + "?list-type=2&prefix=wh/",
	} {
		st, b := s.do(t, http.MethodPost, "/v1/default/namespaces/sign/tables/t/sign", spec.RemoteSignRequest{
			Region: testmoto.Region, Method: http.MethodGet, URI: out, Headers: map[string][]string{}}, nil)
		require.Equal(t, http.StatusForbidden, st, out)
		require.Contains(t, string(b), "ForbiddenException", out)
	}
	require.NotContains(t, s.logs.String(), testmoto.SecretAccessKey)
}

// putGet writes and reads back an object at loc with the credentials in cfg.
func putGet(t *testing.T, endpoint string, cfg map[string]string, loc string) {
	t.Helper()
	ctx := context.Background()
	c := testmoto.ClientWith(endpoint, cfg["s3.access-key-id"], cfg["s3.secret-access-key"], cfg["s3.session-token"])
	bucket, key, _ := strings.Cut(strings.TrimPrefix(loc, "s3://"), "/")
	require.NoError(t, testmoto.Put(ctx, c, bucket, key, []byte("probe")))
	got, err := testmoto.Get(ctx, c, bucket, key)
	require.NoError(t, err)
	require.Equal(t, "probe", string(got))
}

// s3Catalog is an S3 server that vends credentials (startS3Server), an
// iceberg-go REST catalog of it and the namespace p; ep is moto's endpoint.
func s3Catalog(t *testing.T) (*s3Server, *rest.Catalog, string) {
	t.Helper()
	ep := testmoto.Endpoint(t)
	s := startS3Server(t, map[string]string{storage.PropS3RoleARN: testmoto.RoleARN, storage.PropSTSEndpoint: ep})
	cat, err := rest.NewCatalog(t.Context(), "tarn", s.url)
	require.NoError(t, err)
	require.NoError(t, cat.CreateNamespace(t.Context(), table.Identifier{"p"}, nil))
	return s, cat, ep
}

// TestS3DataAndPurge: iceberg-go's REST client (no keys of its own, it
// asks for vended credentials) appends twice and scans an S3 table; a
// dropTable with purge removes every object under the table's location.
func TestS3DataAndPurge(t *testing.T) {
	t.Parallel()
	s, cat, ep := s3Catalog(t)
	ctx := t.Context()
	tbl, err := cat.CreateTable(ctx, table.Identifier{"p", "t"}, idDataSchema())
	require.NoError(t, err)
	tbl = appendRows(t, tbl, 1, 2, 3)
	tbl = appendRows(t, tbl, 4, 5)
	loaded, err := cat.LoadTable(ctx, table.Identifier{"p", "t"})
	require.NoError(t, err)
	n, sum := scanCountAndSum(t, loaded)
	require.Equal(t, int64(5), n)
	require.Equal(t, int64(15), sum)

	bucket, key, _ := strings.Cut(strings.TrimPrefix(tbl.Location(), "s3://"), "/")
	before := testmoto.Keys(t, ep, bucket, key+"/")
	require.GreaterOrEqual(t, len(before), 7, "metadata, manifest lists, manifests, data files: %v", before)
	st, b := s.do(t, http.MethodDelete, "/v1/namespaces/p/tables/t?purgeRequested=true", nil, nil)
	require.Equal(t, http.StatusNoContent, st, string(b))
	require.Eventually(t, func() bool { return len(testmoto.Keys(t, ep, bucket, key+"/")) == 0 }, 10*time.Second, 50*time.Millisecond,
		"purge leaves nothing under %s", tbl.Location())
}

// Regression (as TestPurgeLocationWithSpace, on S3): a table whose
// location holds a space kept its files on purge. iceberg-go writes the
// metadata, manifest lists and manifests under the percent-encoded key
// (wh/p/my%20dir/t/..., its S3 FileIO keeps keys as spelled) and the
// location keeps the raw one; purge compared the two as strings and
// deleted nothing. Both spellings go now.
func TestS3PurgeLocationWithSpace(t *testing.T) {
	t.Parallel()
	s, cat, ep := s3Catalog(t)
	ctx := t.Context()
	loc := s.wh.Location + "/p/my dir/t"
	tbl, err := cat.CreateTable(ctx, table.Identifier{"p", "t"}, idDataSchema(), icecat.WithLocation(loc))
	require.NoError(t, err)
	require.Equal(t, loc, tbl.Location())
	appendRows(t, tbl, 1, 2, 3)
	loaded, err := cat.LoadTable(ctx, table.Identifier{"p", "t"})
	require.NoError(t, err)
	n, _ := scanCountAndSum(t, loaded)
	require.Equal(t, int64(3), n)

	bucket, key, _ := strings.Cut(strings.TrimPrefix(loc, "s3://"), "/")
	encoded := strings.ReplaceAll(key, " ", "%20")
	keys := func() []string {
		return append(testmoto.Keys(t, ep, bucket, key+"/"), testmoto.Keys(t, ep, bucket, encoded+"/")...)
	}
	require.GreaterOrEqual(t, len(keys()), 4, "metadata, manifest list, manifest, data file: %v", keys())
	st, b := s.do(t, http.MethodDelete, "/v1/namespaces/p/tables/t?purgeRequested=true", nil, nil)
	require.Equal(t, http.StatusNoContent, st, string(b))
	require.Eventually(t, func() bool { return len(keys()) == 0 }, 10*time.Second, 50*time.Millisecond,
		"purge leaves nothing under either spelling of %s: %v", loc, keys())
}

// TestS3RemoteSigningCopySource: a CopyObject whose destination is inside
// the table but whose source is in another bucket (or another table) is
// refused with 403 and the secret object is not copied; a copy inside the
// table is signed and moto performs it; ?acl and ?tagging are refused.
func TestS3RemoteSigningCopySource(t *testing.T) {
	t.Parallel()
	ep := testmoto.Endpoint(t)
	ctx := context.Background()
	s := startS3Server(t, nil)
	created := s.createTable(t, "copy", "t", map[string]string{"X-Iceberg-Access-Delegation": "remote-signing"})
	loc := tableLocation(t, created)
	bucket, key, _ := strings.Cut(strings.TrimPrefix(loc, "s3://"), "/")
	other := testmoto.NewBucket(t, ep)
	admin := testmoto.Client(ep)
	require.NoError(t, testmoto.Put(ctx, admin, other, "secret.txt", []byte("top secret")))
	require.NoError(t, testmoto.Put(ctx, admin, bucket, key+"/data/a.bin", []byte("mine")))
	require.NoError(t, testmoto.Put(ctx, admin, bucket, "wh/copy/other-table/x.bin", []byte("theirs")))

	sign := func(method, uri string, hdr map[string][]string) (int, []byte) {
		return s.do(t, http.MethodPost, "/v1/default/namespaces/copy/tables/t/sign", spec.RemoteSignRequest{
			Region: testmoto.Region, Method: method, URI: uri, Headers: hdr}, nil)
	}
	dst := ep + "/" + bucket + "/" + key + "/data/stolen.bin"
	for _, src := range []string{"/" + other + "/secret.txt", other + "/secret.txt", "/" + bucket + "/wh/copy/other-table/x.bin",
		"/" + bucket + "/" + key + "/../other-table/x.bin", "/" + bucket + "/" + key + "%2F..%2Fother-table%2Fx.bin"} {
		st, b := sign(http.MethodPut, dst, map[string][]string{"x-amz-copy-source": {src}})
		require.Equal(t, http.StatusForbidden, st, src)
		require.Contains(t, string(b), "ForbiddenException", src)
		st, b = sign(http.MethodPut, dst+"?partNumber=1&uploadId=u", map[string][]string{"X-Amz-Copy-Source": {src}})
		require.Equal(t, http.StatusForbidden, st, src)
		require.Contains(t, string(b), "ForbiddenException", src)
	}
	// Nothing was copied: the object does not exist (not merely
	// unreadable).
	_, err := testmoto.Get(ctx, admin, bucket, key+"/data/stolen.bin")
	var noKey *s3types.NoSuchKey
	require.ErrorAs(t, err, &noKey)

	// A copy inside the table is signed and moto accepts the signature.
	st, b := sign(http.MethodPut, ep+"/"+bucket+"/"+key+"/data/b.bin",
		map[string][]string{"x-amz-copy-source": {"/" + bucket + "/" + key + "/data/a.bin"}})
	require.Equal(t, http.StatusOK, st, string(b))
	var res spec.RemoteSignResult
	require.NoError(t, json.Unmarshal(b, &res))
	req, err := http.NewRequest(http.MethodPut, res.URI, nil)
	require.NoError(t, err)
	for k, vs := range res.Headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	got, err := testmoto.Get(ctx, admin, bucket, key+"/data/b.bin")
	require.NoError(t, err)
	require.Equal(t, "mine", string(got))

	for _, q := range []string{"?acl", "?tagging", "?restore", "?select&select-type=2", "?versionId=1"} {
		st, b := sign(http.MethodPut, ep+"/"+bucket+"/"+key+"/data/a.bin"+q, map[string][]string{})
		require.Equal(t, http.StatusForbidden, st, q)
		require.Contains(t, string(b), "ForbiddenException", q)
	}
	st, b = sign(http.MethodGet, ep+"/"+bucket+"?list-type=2&prefix="+key+"/&prefix=wh/", map[string][]string{})
	require.Equal(t, http.StatusForbidden, st, string(b))
}

// TestS3SignWrongWarehousePrefix: a table of warehouse analytics is not
// signed through the default prefix with the default warehouse's keys (nor
// the reverse): 400, as loadTable with vended-credentials and /credentials
// answer for the same wrong prefix; through its own prefix it is signed.
func TestS3SignWrongWarehousePrefix(t *testing.T) {
	t.Parallel()
	ep := testmoto.Endpoint(t)
	role := map[string]string{storage.PropS3RoleARN: testmoto.RoleARN}
	def := testmoto.Warehouse(t, ep, catalog.DefaultWarehouse, role)
	an := testmoto.Warehouse(t, ep, "analytics", role)
	store, err := bolt.Open(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	cat, err := catalog.New(catalog.Config{Store: store, Warehouses: []*catalog.Warehouse{def, an}})
	require.NoError(t, err)
	hs := httptest.NewServer(server.New(cat, server.Config{}).Handler())
	t.Cleanup(hs.Close)
	s := &s3Server{url: hs.URL, wh: def, logs: &syncBuffer{}}

	st, b := s.do(t, http.MethodPost, "/v1/namespaces", spec.CreateNamespaceRequest{Namespace: []string{"an"}}, nil)
	require.Equal(t, http.StatusOK, st, string(b))
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	locs := map[string]string{}
	for _, tc := range []struct{ prefix, table string }{{"analytics", "events2"}, {"default", "events1"}} {
		st, b := s.do(t, http.MethodPost, "/v1/"+tc.prefix+"/namespaces/an/tables", spec.CreateTableRequest{Name: tc.table, Schema: schema}, nil)
		require.Equal(t, http.StatusOK, st, string(b))
		var lt spec.LoadTableResult
		require.NoError(t, json.Unmarshal(b, &lt))
		locs[tc.table] = tableLocation(t, lt)
	}
	uriOf := func(loc string) string { return ep + "/" + strings.TrimPrefix(loc, "s3://") + "/data/x.parquet" }
	for _, tc := range []struct{ wrong, right, table string }{{"default", "analytics", "events2"}, {"analytics", "default", "events1"}} {
		signReq := spec.RemoteSignRequest{Region: testmoto.Region, Method: http.MethodGet, URI: uriOf(locs[tc.table]), Headers: map[string][]string{}}
		base := "/v1/" + tc.wrong + "/namespaces/an/tables/" + tc.table
		st, b := s.do(t, http.MethodPost, base+"/sign", signReq, nil)
		require.Equal(t, http.StatusBadRequest, st, string(b))
		require.Contains(t, string(b), "IllegalArgumentException")
		require.Contains(t, string(b), `is not in warehouse \"`+tc.wrong+`\": use the prefix of the warehouse it was created in`)
		require.NotContains(t, string(b), "Authorization")
		lst, lb := s.do(t, http.MethodGet, base, nil, vendHeader)
		require.Equal(t, lst, st, string(lb))
		cst, cb := s.do(t, http.MethodGet, base+"/credentials", nil, nil)
		require.Equal(t, cst, st, string(cb))

		st, b = s.do(t, http.MethodPost, "/v1/"+tc.right+"/namespaces/an/tables/"+tc.table+"/sign", signReq, nil)
		require.Equal(t, http.StatusOK, st, string(b))
	}
}

// TestS3CreateTableVendingFails: with an STS that fails, createTable asked
// for vended-credentials still answers 200 with the table it committed and
// no credentials (a 503 left the table created and the retry got 409); the
// table is loadable, a retry is 409 as for any existing table, and
// loadTable / GET .../credentials with vending answer 503. A stage-create
// (nothing committed) answers 503 too.
func TestS3CreateTableVendingFails(t *testing.T) {
	t.Parallel()
	var calls int
	var mu sync.Mutex
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		mu.Unlock()
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `<ErrorResponse><Error><Type>Receiver</Type><Code>ServiceUnavailable</Code><Message>sts is down</Message></Error><RequestId>r</RequestId></ErrorResponse>`)
	}))
	t.Cleanup(stub.Close)
	s := startS3Server(t, map[string]string{storage.PropS3RoleARN: testmoto.RoleARN, storage.PropSTSEndpoint: stub.URL})
	created := s.createTable(t, "stsdown", "t", vendHeader)
	require.Empty(t, created.StorageCredentials)
	require.Empty(t, created.Config["s3.access-key-id"])
	require.Empty(t, created.Config["s3.session-token"])
	require.NotEmpty(t, tableLocation(t, created))
	mu.Lock()
	require.Positive(t, calls)
	mu.Unlock()
	require.Contains(t, s.logs.String(), "table committed without vended credentials")

	st, b := s.do(t, http.MethodGet, "/v1/namespaces/stsdown/tables/t", nil, nil)
	require.Equal(t, http.StatusOK, st, string(b))
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	st, b = s.do(t, http.MethodPost, "/v1/namespaces/stsdown/tables", spec.CreateTableRequest{Name: "t", Schema: schema}, vendHeader)
	require.Equal(t, http.StatusConflict, st, string(b))
	for _, path := range []string{"/v1/namespaces/stsdown/tables/t", "/v1/namespaces/stsdown/tables/t/credentials"} {
		st, b = s.do(t, http.MethodGet, path, nil, vendHeader)
		require.Equal(t, http.StatusServiceUnavailable, st, path+": "+string(b))
		require.Contains(t, string(b), "ServiceUnavailable", path)
	}
	st, b = s.do(t, http.MethodPost, "/v1/namespaces/stsdown/tables", spec.CreateTableRequest{Name: "staged", Schema: schema, StageCreate: true}, vendHeader)
	require.Equal(t, http.StatusServiceUnavailable, st, string(b))
	st, _ = s.do(t, http.MethodGet, "/v1/namespaces/stsdown/tables/staged", nil, nil)
	require.Equal(t, http.StatusNotFound, st)
	require.NotContains(t, s.logs.String(), testmoto.SecretAccessKey)
}

// TestS3CreateTableNoSuchBucket: a warehouse whose bucket does not exist
// gives 500 with a message naming the store's error code (NoSuchBucket),
// not an opaque "internal server error", and no credential.
func TestS3CreateTableNoSuchBucket(t *testing.T) {
	t.Parallel()
	ep := testmoto.Endpoint(t)
	props := testmoto.Props(ep)
	s := storageServer(t, "s3://tarn-missing-bucket-"+strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))+"/wh", props)
	st, em, body := createFails(t, s, "nobucket")
	require.Equal(t, http.StatusInternalServerError, st, body)
	require.Equal(t, "ServerErrorException", em.Type)
	require.Contains(t, em.Message, "object store error on PutObject: NoSuchBucket")
	require.NotContains(t, body, testmoto.SecretAccessKey)
	require.NotContains(t, body, "internal server error")
}

// Regression (trial): Spark's CREATE TABLE AS SELECT with remote signing
// writes the staged table's data files before its create commit, and
// /sign answered 404 for the not-yet-committed table; and a table with
// write.data.path could neither have its data files signed nor get
// credentials for them. Signing and vending now cover a staged table's
// directories and every directory a table records.
func TestS3SigningStagedAndDataPath(t *testing.T) {
	t.Parallel()
	ep := testmoto.Endpoint(t)
	s := startS3Server(t, map[string]string{storage.PropS3RoleARN: testmoto.RoleARN, storage.PropSTSEndpoint: ep})
	created := s.createTable(t, "sg", "t", nil)
	base := strings.TrimSuffix(tableLocation(t, created), "/t-"+strings.SplitN(path.Base(tableLocation(t, created)), "-", 2)[1])
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	objectURI := func(loc, rest string) string { return ep + "/" + strings.TrimPrefix(loc, "s3://") + rest }
	sign := func(table, method, uri string) int {
		t.Helper()
		st, b := s.do(t, http.MethodPost, "/v1/default/namespaces/sg/tables/"+table+"/sign", spec.RemoteSignRequest{
			Region: testmoto.Region, Method: method, URI: uri, Headers: map[string][]string{}}, nil)
		if st != http.StatusOK {
			t.Logf("sign %s %s: %d %s", method, uri, st, b)
		}
		return st
	}

	st, b := s.do(t, http.MethodPost, "/v1/namespaces/sg/tables", spec.CreateTableRequest{Name: "ctas", Schema: schema, StageCreate: true},
		map[string]string{"X-Iceberg-Access-Delegation": "remote-signing"})
	require.Equal(t, http.StatusOK, st, string(b))
	var staged spec.LoadTableResult
	require.NoError(t, json.Unmarshal(b, &staged))
	stagedLoc := tableLocation(t, staged)
	require.Equal(t, http.StatusOK, sign("ctas", http.MethodPut, objectURI(stagedLoc, "/data/00000.parquet")))
	require.Equal(t, http.StatusForbidden, sign("ctas", http.MethodPut, objectURI(tableLocation(t, created), "/data/x")))
	require.Equal(t, http.StatusNotFound, sign("never", http.MethodPut, objectURI(stagedLoc, "/data/x")), "an unknown table is still 404")

	dataDir := base + "/dp-data"
	st, b = s.do(t, http.MethodPost, "/v1/namespaces/sg/tables", spec.CreateTableRequest{Name: "dp", Schema: schema,
		Properties: map[string]string{"write.data.path": dataDir}}, map[string]string{"X-Iceberg-Access-Delegation": "vended-credentials"})
	require.Equal(t, http.StatusOK, st, string(b))
	var dp spec.LoadTableResult
	require.NoError(t, json.Unmarshal(b, &dp))
	var prefixes []string
	for _, c := range dp.StorageCredentials {
		prefixes = append(prefixes, c.Prefix)
	}
	require.ElementsMatch(t, []string{tableLocation(t, dp), dataDir}, prefixes)
	require.Equal(t, http.StatusOK, sign("dp", http.MethodGet, objectURI(dataDir, "/00000.parquet")))
	require.Equal(t, http.StatusOK, sign("dp", http.MethodGet, objectURI(tableLocation(t, dp), "/metadata/x.json")))
	require.Equal(t, http.StatusForbidden, sign("dp", http.MethodGet, objectURI(base+"/dp-data-other", "/x")))
}
