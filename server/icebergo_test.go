package server_test

// End-to-end tests through iceberg-go's REST client (catalog/rest) against
// Tarn in process, and raw HTTP JSON where the client cannot express a
// request or hides the wire detail under test (error types, headers,
// query parameters). This file holds the shared harness and the tests of
// table data, renames, listing pagination, snapshot loading modes, ETags
// and namespace encoding; commits_test.go, stage_create_test.go,
// views_test.go, transactions_test.go and idempotency_test.go hold the rest.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/math"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/spec"
)

// env is one Tarn in process and iceberg-go's REST client pointed at it.
type env struct {
	srv *testserver.Server
	cat *rest.Catalog
}

func newEnv(t *testing.T) *env {
	t.Helper()
	srv := testserver.Start(t)
	return &env{srv: srv, cat: newRESTCatalog(t, srv)}
}

// idDataSchema is the schema of most test tables: id long (required), data string.
func idDataSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "data", Type: iceberg.PrimitiveTypes.String},
	)
}

// namespace creates a namespace through the client and returns it.
func (e *env) namespace(t *testing.T, levels ...string) table.Identifier {
	t.Helper()
	ns := table.Identifier(levels)
	require.NoError(t, e.cat.CreateNamespace(t.Context(), ns, iceberg.Properties{}))
	return ns
}

// createTable creates ns.name with idDataSchema through the client.
func (e *env) createTable(t *testing.T, ns table.Identifier, name string, opts ...catalog.CreateTableOpt) *table.Table {
	t.Helper()
	tbl, err := e.cat.CreateTable(t.Context(), tableIdent(ns, name), idDataSchema(), opts...)
	require.NoError(t, err)
	return tbl
}

// load loads a table through the client.
func (e *env) load(t *testing.T, id table.Identifier) *table.Table {
	t.Helper()
	tbl, err := e.cat.LoadTable(t.Context(), id)
	require.NoError(t, err)
	return tbl
}

func tableIdent(ns table.Identifier, name string) table.Identifier {
	return append(slices.Clone(ns), name)
}

// rawResponse is a raw HTTP exchange's result.
type rawResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

// do sends method path (below srv.URL) with body (nil, a string sent as is,
// or a value encoded as JSON) and headers given as name, value pairs.
func (e *env) do(t *testing.T, method, path string, body any, headers ...string) rawResponse {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		js, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(js)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, e.srv.URL+path, rd)
	require.NoError(t, err)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	require.Zero(t, len(headers)%2, "headers come in name, value pairs")
	for i := 0; i < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rsp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer rsp.Body.Close()
	b, err := io.ReadAll(rsp.Body)
	require.NoError(t, err)
	return rawResponse{Status: rsp.StatusCode, Header: rsp.Header, Body: b}
}

// decodeJSON decodes the body as JSON into a new T.
func decodeJSON[T any](t *testing.T, r rawResponse) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(r.Body, &v), "body: %s", r.Body)
	return v
}

// requireError asserts r is an ErrorModel response of status and type
// (for a 400, the one of the two a client may be sent that typ names;
// requireBadRequest accepts either).
func requireError(t *testing.T, r rawResponse, status int, typ string) spec.ErrorModel {
	t.Helper()
	require.Equal(t, status, r.Status, "body: %s", r.Body)
	em := decodeJSON[spec.ErrorResponse](t, r).Error
	assert.Equal(t, typ, em.Type, "message: %s", em.Message)
	assert.Equal(t, status, em.Code)
	assert.NotEmpty(t, em.Message)
	return em
}

// requireBadRequest asserts r is a 400 ErrorModel response. Tarn sends
// BadRequestException for a malformed request and, as the Java reference
// does, IllegalArgumentException for well-formed invalid content; clients
// treat both as a 400.
func requireBadRequest(t *testing.T, r rawResponse) spec.ErrorModel {
	t.Helper()
	require.Equal(t, http.StatusBadRequest, r.Status, "body: %s", r.Body)
	em := decodeJSON[spec.ErrorResponse](t, r).Error
	assert.Contains(t, []string{"BadRequestException", "IllegalArgumentException"}, em.Type, "message: %s", em.Message)
	assert.Equal(t, http.StatusBadRequest, em.Code)
	assert.NotEmpty(t, em.Message)
	return em
}

// encodeNamespace encodes namespace levels for a path as Java's RESTUtil and
// pyiceberg do: each level URL form encoded, levels joined by %1F.
func encodeNamespace(levels []string) string {
	enc := make([]string, len(levels))
	for i, l := range levels {
		enc[i] = url.QueryEscape(l)
	}
	return strings.Join(enc, "%1F")
}

// prefixPath is the REST path below /v1/{prefix} of the default warehouse.
func prefixPath(format string, args ...any) string {
	return "/v1/default" + fmt.Sprintf(format, args...)
}

func nsPath(ns []string) string { return prefixPath("/namespaces/%s", encodeNamespace(ns)) }

func tablePath(ns []string, name string) string {
	return prefixPath("/namespaces/%s/tables/%s", encodeNamespace(ns), url.QueryEscape(name))
}

func viewPath(ns []string, name string) string {
	return prefixPath("/namespaces/%s/views/%s", encodeNamespace(ns), url.QueryEscape(name))
}

// loadRaw loads a table over raw HTTP and returns its metadata-location and
// parsed metadata.
func (e *env) loadRaw(t *testing.T, ns []string, name string) (string, table.Metadata) {
	t.Helper()
	r := e.do(t, http.MethodGet, tablePath(ns, name), nil)
	require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)
	res := decodeJSON[spec.LoadTableResult](t, r)
	require.NotNil(t, res.MetadataLocation)
	md, err := table.ParseMetadataBytes(res.Metadata)
	require.NoError(t, err)
	return *res.MetadataLocation, md
}

// metadataFiles lists the metadata JSON files under a file:// table location.
func metadataFiles(t *testing.T, location string) []string {
	t.Helper()
	dir := filepath.Join(strings.TrimPrefix(location, "file://"), "metadata")
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".metadata.json") {
			out = append(out, e.Name())
		}
	}
	return out
}

// arrowSchema matches idDataSchema.
var arrowSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "data", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// arrowRows builds an in-memory Arrow table of ids with data "row-<id>".
func arrowRows(t *testing.T, ids ...int64) arrow.Table {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrowSchema)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("row-%d", id))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	tbl := array.NewTableFromRecords(arrowSchema, []arrow.RecordBatch{rec})
	t.Cleanup(tbl.Release)
	return tbl
}

// appendRows appends ids to tbl through a transaction and returns the new table.
func appendRows(t *testing.T, tbl *table.Table, ids ...int64) *table.Table {
	t.Helper()
	tx := tbl.NewTransaction()
	require.NoError(t, tx.AppendTable(t.Context(), arrowRows(t, ids...), 1024, nil))
	out, err := tx.Commit(t.Context())
	require.NoError(t, err)
	return out
}

// scanCountAndSum scans tbl (with opts) and returns its row count and the sum of id.
func scanCountAndSum(t *testing.T, tbl *table.Table, opts ...table.ScanOption) (int64, int64) {
	t.Helper()
	res, err := tbl.Scan(opts...).ToArrowTable(t.Context())
	require.NoError(t, err)
	defer res.Release()
	idx := res.Schema().FieldIndices("id")
	require.Len(t, idx, 1)
	var sum int64
	for _, chunk := range res.Column(idx[0]).Data().Chunks() {
		sum += math.Int64.Sum(chunk.(*array.Int64))
	}
	return res.NumRows(), sum
}

// TestTableDataRoundTrip writes Arrow data through iceberg-go into a
// file:// warehouse under the test's temp dir, reads it back, and time
// travels to the first snapshot.
func TestTableDataRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.namespace(t, "data")
	tbl := e.createTable(t, ns, "events")
	require.True(t, strings.HasPrefix(tbl.Location(), "file://"+e.srv.DataDir), "location %s", tbl.Location())

	tbl = appendRows(t, tbl, 1, 2, 3)
	first := tbl.CurrentSnapshot()
	require.NotNil(t, first)
	tbl = appendRows(t, tbl, 10, 20)
	second := tbl.CurrentSnapshot()
	require.NotNil(t, second)
	require.NotEqual(t, first.SnapshotID, second.SnapshotID)
	require.NotNil(t, second.ParentSnapshotID)
	assert.Equal(t, first.SnapshotID, *second.ParentSnapshotID)

	loaded := e.load(t, tbl.Identifier())
	require.Len(t, loaded.Metadata().Snapshots(), 2)
	assert.Equal(t, second.SnapshotID, loaded.CurrentSnapshot().SnapshotID)

	tests := []struct {
		name      string
		opts      []table.ScanOption
		wantCount int64
		wantSum   int64
	}{
		{name: "current", wantCount: 5, wantSum: 36},
		{name: "first snapshot", opts: []table.ScanOption{table.WithSnapshotID(first.SnapshotID)}, wantCount: 3, wantSum: 6},
		{name: "second snapshot", opts: []table.ScanOption{table.WithSnapshotID(second.SnapshotID)}, wantCount: 5, wantSum: 36},
		{name: "filtered", opts: []table.ScanOption{table.WithRowFilter(iceberg.GreaterThanEqual(iceberg.Reference("id"), int64(3)))}, wantCount: 3, wantSum: 33},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			count, sum := scanCountAndSum(t, loaded, tt.opts...)
			assert.Equal(t, tt.wantCount, count)
			assert.Equal(t, tt.wantSum, sum)
		})
	}

	t.Run("data files live in the warehouse", func(t *testing.T) {
		dir := filepath.Join(strings.TrimPrefix(loaded.Location(), "file://"), "data")
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Len(t, entries, 2, "one parquet file per append")
	})
}

// TestRenameTable renames tables across namespaces and checks the spec's
// errors for taken, missing and namespace-less names.
func TestRenameTable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	src := e.namespace(t, "src")
	dst := e.namespace(t, "dst")
	tbl := appendRows(t, e.createTable(t, src, "moving"), 7)
	e.createTable(t, dst, "taken")

	t.Run("across namespaces through the client", func(t *testing.T) {
		renamed, err := e.cat.RenameTable(t.Context(), tableIdent(src, "moving"), tableIdent(dst, "moved"))
		require.NoError(t, err)
		assert.Equal(t, tbl.Metadata().TableUUID(), renamed.Metadata().TableUUID())
		assert.Equal(t, tbl.MetadataLocation(), renamed.MetadataLocation())
		assert.Equal(t, tbl.Location(), renamed.Location(), "files stay where they are")
		count, sum := scanCountAndSum(t, renamed)
		assert.Equal(t, int64(1), count)
		assert.Equal(t, int64(7), sum)

		exists, err := e.cat.CheckTableExists(t.Context(), tableIdent(src, "moving"))
		require.NoError(t, err)
		assert.False(t, exists)
		_, err = e.cat.LoadTable(t.Context(), tableIdent(src, "moving"))
		assert.ErrorIs(t, err, catalog.ErrNoSuchTable)
	})

	rename := func(fromNS []string, from string, toNS []string, to string) spec.RenameTableRequest {
		return spec.RenameTableRequest{
			Source:      &spec.TableIdentifier{Namespace: fromNS, Name: from},
			Destination: &spec.TableIdentifier{Namespace: toNS, Name: to},
		}
	}
	tests := []struct {
		name       string
		req        spec.RenameTableRequest
		wantStatus int
		wantType   string
	}{
		{"to an existing table", rename(dst, "moved", dst, "taken"), http.StatusConflict, "AlreadyExistsException"},
		{"from a missing table", rename(src, "missing", dst, "other"), http.StatusNotFound, "NoSuchTableException"},
		{"to a missing namespace", rename(dst, "moved", []string{"nowhere"}, "moved"), http.StatusNotFound, "NoSuchNamespaceException"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := e.loadRaw(t, dst, "moved")
			r := e.do(t, http.MethodPost, prefixPath("/tables/rename"), tt.req)
			requireError(t, r, tt.wantStatus, tt.wantType)
			after, _ := e.loadRaw(t, dst, "moved")
			assert.Equal(t, before, after)
			_, takenMD := e.loadRaw(t, dst, "taken")
			assert.Empty(t, takenMD.Snapshots(), "the taken table is untouched")
		})
	}

	t.Run("client maps a missing source to ErrNoSuchTable", func(t *testing.T) {
		_, err := e.cat.RenameTable(t.Context(), tableIdent(src, "missing"), tableIdent(dst, "x"))
		assert.ErrorIs(t, err, catalog.ErrNoSuchTable)
	})
}

// TestListPagination lists 25 tables and 25 namespaces in pages of 10
// through raw HTTP (pages of 10, 10, 5; the last without a token) and
// through iceberg-go's client, which follows next-page-token.
func TestListPagination(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.namespace(t, "paged")
	var wantTables []string
	for i := range 25 {
		name := fmt.Sprintf("t%02d", i)
		e.createTable(t, ns, name)
		wantTables = append(wantTables, name)
	}
	var wantChildren []string
	for i := range 25 {
		child := fmt.Sprintf("c%02d", i)
		e.namespace(t, "paged", child)
		wantChildren = append(wantChildren, child)
	}
	// A view and a grandchild namespace must not show up in either listing.
	_, err := e.cat.CreateView(t.Context(), tableIdent(ns, "t99view"), viewVersion(t, ns, "select 1"), idDataSchema())
	require.NoError(t, err)
	e.namespace(t, "paged", "c00", "grandchild")

	type page struct {
		names []string
		next  *string
	}
	tests := []struct {
		name  string
		path  string
		parse func(t *testing.T, r rawResponse) page
		want  []string
	}{
		{
			name: "tables",
			path: prefixPath("/namespaces/paged/tables"),
			parse: func(t *testing.T, r rawResponse) page {
				res := decodeJSON[spec.ListTablesResponse](t, r)
				var p page
				for _, id := range res.Identifiers {
					assert.Equal(t, []string{"paged"}, id.Namespace)
					p.names = append(p.names, id.Name)
				}
				p.next = res.NextPageToken
				return p
			},
			want: wantTables,
		},
		{
			name: "namespaces",
			path: prefixPath("/namespaces?parent=paged"),
			parse: func(t *testing.T, r rawResponse) page {
				res := decodeJSON[spec.ListNamespacesResponse](t, r)
				var p page
				for _, n := range res.Namespaces {
					require.Len(t, n, 2)
					assert.Equal(t, "paged", n[0])
					p.names = append(p.names, n[1])
				}
				p.next = res.NextPageToken
				return p
			},
			want: wantChildren,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name+" raw", func(t *testing.T) {
			var got []string
			var sizes []int
			token := ""
			for range 4 {
				sep := "?"
				if strings.Contains(tt.path, "?") {
					sep = "&"
				}
				// The first request opts into paging with an empty pageToken.
				q := sep + "pageSize=10&pageToken=" + url.QueryEscape(token)
				r := e.do(t, http.MethodGet, tt.path+q, nil)
				require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)
				p := tt.parse(t, r)
				got = append(got, p.names...)
				sizes = append(sizes, len(p.names))
				if p.next == nil {
					assert.NotContains(t, string(r.Body), "next-page-token")
					break
				}
				require.NotEmpty(t, *p.next)
				token = *p.next
			}
			assert.Equal(t, []int{10, 10, 5}, sizes)
			assert.Equal(t, tt.want, got)
		})
		// Without pageToken the client has not opted into paging: the
		// spec says the server returns everything, whatever pageSize says.
		t.Run(tt.name+" without pageToken", func(t *testing.T) {
			sep := "?"
			if strings.Contains(tt.path, "?") {
				sep = "&"
			}
			r := e.do(t, http.MethodGet, tt.path+sep+"pageSize=10", nil)
			require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)
			p := tt.parse(t, r)
			assert.Nil(t, p.next)
			assert.Equal(t, tt.want, p.names)
		})
	}

	t.Run("tables through the client", func(t *testing.T) {
		ctx := e.cat.SetPageSize(t.Context(), 10)
		var got []string
		for id, err := range e.cat.ListTables(ctx, ns) {
			require.NoError(t, err)
			got = append(got, id[len(id)-1])
		}
		assert.Equal(t, wantTables, got)
	})
	t.Run("namespaces through the client", func(t *testing.T) {
		ctx := e.cat.SetPageSize(t.Context(), 10)
		got, err := e.cat.ListNamespaces(ctx, ns)
		require.NoError(t, err)
		want := make([]table.Identifier, len(wantChildren))
		for i, c := range wantChildren {
			want[i] = table.Identifier{"paged", c}
		}
		assert.Equal(t, want, got)
	})
	t.Run("views through the client", func(t *testing.T) {
		ctx := e.cat.SetPageSize(t.Context(), 10)
		var got []table.Identifier
		for id, err := range e.cat.ListViews(ctx, ns) {
			require.NoError(t, err)
			got = append(got, id)
		}
		assert.Equal(t, []table.Identifier{{"paged", "t99view"}}, got)
	})
	t.Run("bad page size", func(t *testing.T) {
		r := e.do(t, http.MethodGet, prefixPath("/namespaces/paged/tables?pageSize=0"), nil)
		requireBadRequest(t, r)
	})
	t.Run("malformed page token", func(t *testing.T) {
		r := e.do(t, http.MethodGet, prefixPath("/namespaces/paged/tables?pageSize=10&pageToken=%21%21"), nil)
		requireBadRequest(t, r)
	})
}

// TestLoadTableSnapshotsAndETag covers snapshots=refs and conditional loads.
func TestLoadTableSnapshotsAndETag(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.namespace(t, "snaps")
	tbl := e.createTable(t, ns, "t")
	tbl = appendRows(t, tbl, 1)
	s1 := tbl.CurrentSnapshot().SnapshotID
	tbl = appendRows(t, tbl, 2)
	s2 := tbl.CurrentSnapshot().SnapshotID
	tbl = appendRows(t, tbl, 3)
	s3 := tbl.CurrentSnapshot().SnapshotID
	// Tag the first snapshot; the second is referenced by nothing.
	_, _, err := e.cat.CommitTable(t.Context(), tbl.Identifier(),
		[]table.Requirement{table.AssertRefSnapshotID("first", nil)},
		[]table.Update{table.NewSetSnapshotRefUpdate("first", s1, table.TagRef, 0, 0, 0)})
	require.NoError(t, err)

	snapshotIDs := func(md table.Metadata) []int64 {
		var ids []int64
		for _, s := range md.Snapshots() {
			ids = append(ids, s.SnapshotID)
		}
		slices.Sort(ids)
		return ids
	}
	sorted := func(ids ...int64) []int64 { slices.Sort(ids); return ids }

	tests := []struct {
		name  string
		query string
		want  []int64
	}{
		{"default is all", "", sorted(s1, s2, s3)},
		{"all", "?snapshots=all", sorted(s1, s2, s3)},
		{"refs", "?snapshots=refs", sorted(s1, s3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(t, http.MethodGet, tablePath(ns, "t")+tt.query, nil)
			require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)
			md, err := table.ParseMetadataBytes(decodeJSON[spec.LoadTableResult](t, r).Metadata)
			require.NoError(t, err)
			assert.Equal(t, tt.want, snapshotIDs(md))
			assert.Equal(t, s3, md.CurrentSnapshot().SnapshotID)
			assert.Equal(t, s1, md.SnapshotByName("first").SnapshotID)
		})
	}
	t.Run("bad snapshots mode", func(t *testing.T) {
		r := e.do(t, http.MethodGet, tablePath(ns, "t")+"?snapshots=some", nil)
		requireBadRequest(t, r)
	})
	t.Run("refs mode through the client", func(t *testing.T) {
		cat, err := rest.NewCatalog(t.Context(), "tarn", e.srv.URL, rest.WithAdditionalProps(iceberg.Properties{"snapshot-loading-mode": "refs"}))
		require.NoError(t, err)
		loaded, err := cat.LoadTable(t.Context(), tbl.Identifier())
		require.NoError(t, err)
		assert.Equal(t, sorted(s1, s3), snapshotIDs(loaded.Metadata()))
		count, sum := scanCountAndSum(t, loaded)
		assert.Equal(t, int64(3), count)
		assert.Equal(t, int64(6), sum)
	})

	t.Run("etag", func(t *testing.T) {
		first := e.do(t, http.MethodGet, tablePath(ns, "t"), nil)
		require.Equal(t, http.StatusOK, first.Status)
		etag := first.Header.Get("ETag")
		require.NotEmpty(t, etag)
		refsETag := e.do(t, http.MethodGet, tablePath(ns, "t")+"?snapshots=refs", nil).Header.Get("ETag")
		assert.NotEqual(t, etag, refsETag, "the ETag covers the snapshots mode")

		for i := range 2 {
			r := e.do(t, http.MethodGet, tablePath(ns, "t"), nil, "If-None-Match", etag)
			assert.Equal(t, http.StatusNotModified, r.Status, "request %d", i)
			assert.Empty(t, r.Body)
		}
		r := e.do(t, http.MethodGet, tablePath(ns, "t"), nil, "If-None-Match", `"some-other-etag"`)
		assert.Equal(t, http.StatusOK, r.Status)
		assert.Equal(t, etag, r.Header.Get("ETag"))

		tx := e.load(t, tbl.Identifier()).NewTransaction()
		require.NoError(t, tx.SetProperties(iceberg.Properties{"k": "v"}))
		_, err := tx.Commit(t.Context())
		require.NoError(t, err)

		r = e.do(t, http.MethodGet, tablePath(ns, "t"), nil, "If-None-Match", etag)
		require.Equal(t, http.StatusOK, r.Status)
		newETag := r.Header.Get("ETag")
		assert.NotEmpty(t, newETag)
		assert.NotEqual(t, etag, newETag)
		md, err := table.ParseMetadataBytes(decodeJSON[spec.LoadTableResult](t, r).Metadata)
		require.NoError(t, err)
		assert.Equal(t, "v", md.Properties()["k"])
		assert.Equal(t, http.StatusNotModified, e.do(t, http.MethodGet, tablePath(ns, "t"), nil, "If-None-Match", newETag).Status)
	})
}

// TestNamespaceSpecialCharacters creates namespaces whose levels hold
// characters that need encoding, loads them through paths encoded as Java
// and pyiceberg encode them (URL form encoding, %1F between levels), lists
// them with parent, and creates and loads a table inside each.
func TestNamespaceSpecialCharacters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	parent := []string{"spécial"}
	r := e.do(t, http.MethodPost, prefixPath("/namespaces"), spec.CreateNamespaceRequest{Namespace: parent})
	require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)

	levels := []struct {
		name  string
		level string
	}{
		{"space", "with space"},
		{"plus", "a+b"},
		{"percent", "100%"},
		{"percent escape lookalike", "%1F%20"},
		{"slash", "a/b"},
		{"dot", "a.b"},
		{"unicode", "数据-ü-🙂"},
		{"ampersand and equals", "k=v&x"},
		{"question mark and hash", "what?#no"},
	}
	var want [][]string
	for _, tt := range levels {
		t.Run(tt.name, func(t *testing.T) {
			ns := []string{parent[0], tt.level}
			want = append(want, ns)
			r := e.do(t, http.MethodPost, prefixPath("/namespaces"), spec.CreateNamespaceRequest{Namespace: ns, Properties: map[string]string{"level": tt.level}})
			require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)

			r = e.do(t, http.MethodGet, nsPath(ns), nil)
			require.Equal(t, http.StatusOK, r.Status, "path %s: %s", nsPath(ns), r.Body)
			got := decodeJSON[spec.GetNamespaceResponse](t, r)
			assert.Equal(t, ns, got.Namespace)
			assert.Equal(t, tt.level, got.Properties["level"])
			assert.Equal(t, http.StatusNoContent, e.do(t, http.MethodHead, nsPath(ns), nil).Status)

			r = e.do(t, http.MethodPost, prefixPath("/namespaces/%s/tables", encodeNamespace(ns)), spec.CreateTableRequest{Name: "t " + tt.level, Schema: idDataSchema()})
			require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)
			loc, md := e.loadRaw(t, ns, "t "+tt.level)
			assert.True(t, strings.HasPrefix(loc, e.srv.Warehouse.Location+"/"), "metadata %s stays in the warehouse", loc)
			assert.True(t, strings.HasPrefix(md.Location(), e.srv.Warehouse.Location+"/"), "table location %s stays in the warehouse", md.Location())

			r = e.do(t, http.MethodGet, prefixPath("/namespaces/%s/tables", encodeNamespace(ns)), nil)
			require.Equal(t, http.StatusOK, r.Status)
			assert.Equal(t, []spec.TableIdentifier{{Namespace: ns, Name: "t " + tt.level}}, decodeJSON[spec.ListTablesResponse](t, r).Identifiers)
		})
	}

	t.Run("list with parent", func(t *testing.T) {
		r := e.do(t, http.MethodGet, prefixPath("/namespaces?parent=%s", url.QueryEscape(parent[0])), nil)
		require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)
		got := decodeJSON[spec.ListNamespacesResponse](t, r).Namespaces
		assert.ElementsMatch(t, want, got)
	})
	t.Run("list with a two-level parent", func(t *testing.T) {
		deeper := []string{parent[0], "a/b", "x y"}
		r := e.do(t, http.MethodPost, prefixPath("/namespaces"), spec.CreateNamespaceRequest{Namespace: deeper})
		require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)
		r = e.do(t, http.MethodGet, prefixPath("/namespaces?parent=%s", url.QueryEscape(parent[0]+"\x1f"+"a/b")), nil)
		require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)
		assert.Equal(t, [][]string{deeper}, decodeJSON[spec.ListNamespacesResponse](t, r).Namespaces)
	})
	t.Run("through the client", func(t *testing.T) {
		// iceberg-go escapes levels with url.PathEscape, which leaves "+"
		// as is; Java and Tarn read "+" in a path as a space, so levels
		// with "+" are exercised over raw HTTP above only.
		for _, level := range []string{"with space", "100%", "a/b", "a.b", "数据-ü-🙂"} {
			ns := table.Identifier{parent[0], level}
			props, err := e.cat.LoadNamespaceProperties(t.Context(), ns)
			require.NoError(t, err, "level %q", level)
			assert.Equal(t, level, props["level"])
			ok, err := e.cat.CheckNamespaceExists(t.Context(), ns)
			require.NoError(t, err)
			assert.True(t, ok, "level %q", level)
		}
		got, err := e.cat.ListNamespaces(t.Context(), table.Identifier(parent))
		require.NoError(t, err)
		assert.Len(t, got, len(levels))
	})
}

// TestCommitResponseETag pins the ETag of a commit response, which the
// spec lists on CommitTableResponse and names as an If-None-Match value
// for loadTable: Tarn sent none, so a client refreshing after its own
// commit could never get 304.
func TestCommitResponseETag(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.namespace(t, "etag")
	e.createTable(t, ns, "t")

	commit := func(t *testing.T, v string) rawResponse {
		r := e.do(t, http.MethodPost, tablePath(ns, "t"),
			`{"requirements":[],"updates":[{"action":"set-properties","updates":{"v":"`+v+`"}}]}`)
		require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)
		return r
	}
	first := commit(t, "1")
	etag := first.Header.Get("ETag")
	require.NotEmpty(t, etag)

	load := e.do(t, http.MethodGet, tablePath(ns, "t"), nil)
	require.Equal(t, http.StatusOK, load.Status)
	assert.Equal(t, etag, load.Header.Get("ETag"), "the commit's ETag is the load's")
	assert.Equal(t, http.StatusNotModified, e.do(t, http.MethodGet, tablePath(ns, "t"), nil, "If-None-Match", etag).Status)
	assert.Equal(t, http.StatusOK, e.do(t, http.MethodGet, tablePath(ns, "t")+"?snapshots=refs", nil, "If-None-Match", etag).Status,
		"a refs load is another representation")

	second := commit(t, "2")
	assert.NotEqual(t, etag, second.Header.Get("ETag"))
	r := e.do(t, http.MethodGet, tablePath(ns, "t"), nil, "If-None-Match", etag)
	assert.Equal(t, http.StatusOK, r.Status)
	assert.Equal(t, second.Header.Get("ETag"), r.Header.Get("ETag"))
}
