package server_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/spec"
)

// requireErrorModel asserts that rsp has status want and a body that is
// exactly the spec's error response, {"error": {"message", "type", "code"}}
// (plus an optional "stack"), with code equal to the status; it returns the
// decoded ErrorModel and closes the body.
func requireErrorModel(t *testing.T, rsp *http.Response, want int) spec.ErrorModel {
	t.Helper()
	defer rsp.Body.Close()
	body, err := io.ReadAll(rsp.Body)
	require.NoError(t, err)
	require.Equal(t, want, rsp.StatusCode, "status; body: %s", body)
	assert.True(t, strings.HasPrefix(rsp.Header.Get("Content-Type"), "application/json"), "Content-Type %q", rsp.Header.Get("Content-Type"))

	var outer map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &outer), "body is not a JSON object: %s", body)
	require.Len(t, outer, 1, "body must hold only \"error\": %s", body)
	var inner map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(outer["error"], &inner), "\"error\" is not an object: %s", body)
	for _, k := range []string{"message", "type", "code"} {
		require.Contains(t, inner, k, "ErrorModel lacks %q: %s", k, body)
	}
	for k := range inner {
		require.Contains(t, []string{"message", "type", "code", "stack"}, k, "unexpected ErrorModel field: %s", body)
	}

	var er spec.ErrorResponse
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&er), "body: %s", body)
	require.Equal(t, want, er.Error.Code, "ErrorModel.code must equal the HTTP status")
	require.NotEmpty(t, er.Error.Type)
	require.NotEmpty(t, er.Error.Message)
	return er.Error
}

// badInputFixture is a running Tarn with namespace db (and db.sub), table
// db.t and view db.v, and locations around its warehouse.
type badInputFixture struct {
	srv          *testserver.Server
	warehouseDir string // local path of the warehouse root
	outsideDir   string // a directory outside the warehouse, beside it
	warehouseURI string // file://<warehouseDir>
	outsideURI   string
	tableMeta    string // db.t's metadata-location
	tableMetaRaw []byte // its metadata JSON
}

const badInputSchema = `{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true},{"id":2,"name":"data","type":"string","required":false}]}`

func newBadInputFixture(t *testing.T) *badInputFixture {
	t.Helper()
	srv := testserver.Start(t)
	f := &badInputFixture{
		srv:          srv,
		warehouseDir: filepath.Join(srv.DataDir, "warehouse"),
		outsideDir:   filepath.Join(srv.DataDir, "elsewhere"),
	}
	f.warehouseURI = "file://" + f.warehouseDir
	f.outsideURI = "file://" + f.outsideDir
	require.Equal(t, f.warehouseURI, srv.Warehouse.Location)

	f.mustDo(t, http.MethodPost, "/v1/namespaces", `{"namespace":["db"],"properties":{"owner":"alice"}}`, http.StatusOK)
	f.mustDo(t, http.MethodPost, "/v1/namespaces", `{"namespace":["db","sub"]}`, http.StatusOK)
	rsp := f.mustDo(t, http.MethodPost, "/v1/namespaces/db/tables", `{"name":"t","schema":`+badInputSchema+`}`, http.StatusOK)
	var lt struct {
		MetadataLocation string          `json:"metadata-location"`
		Metadata         json.RawMessage `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal(rsp, &lt))
	require.NotEmpty(t, lt.MetadataLocation)
	f.tableMeta, f.tableMetaRaw = lt.MetadataLocation, lt.Metadata
	f.mustDo(t, http.MethodPost, "/v1/namespaces/db/views", `{"name":"v","schema":`+badInputSchema+`,"view-version":{"version-id":1,"timestamp-ms":1700000000000,"schema-id":0,"summary":{"engine-name":"spark"},"representations":[{"type":"sql","sql":"SELECT 1","dialect":"spark"}],"default-namespace":["db"]},"properties":{}}`, http.StatusOK)

	// A valid copy of db.t's metadata outside the warehouse, and inside the
	// warehouse a metadata file whose table location points outside it and
	// a file that is not metadata at all.
	require.NoError(t, os.MkdirAll(f.outsideDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(f.outsideDir, "copy.metadata.json"), f.tableMetaRaw, 0o644))
	var md map[string]any
	require.NoError(t, json.Unmarshal(f.tableMetaRaw, &md))
	md["location"] = f.outsideURI + "/t"
	escaping, err := json.Marshal(md)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(f.warehouseDir, "planted", "metadata"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(f.warehouseDir, "planted", "metadata", "00000-escaping.metadata.json"), escaping, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(f.warehouseDir, "planted", "metadata", "00000-garbage.metadata.json"), []byte("not metadata"), 0o644))
	return f
}

// do sends a request to the fixture's server.
func (f *badInputFixture) do(t *testing.T, method, path, body string, header http.Header) *http.Response {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, f.srv.URL+path, r)
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	rsp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return rsp
}

// mustDo sends a request, requires status want and returns the body.
func (f *badInputFixture) mustDo(t *testing.T, method, path, body string, want int) []byte {
	t.Helper()
	rsp := f.do(t, method, path, body, nil)
	defer rsp.Body.Close()
	b, err := io.ReadAll(rsp.Body)
	require.NoError(t, err)
	require.Equal(t, want, rsp.StatusCode, "%s %s: %s", method, path, b)
	return b
}

// catalogState is everything a refused request must leave as it was.
type catalogState struct {
	TopNamespaces   string
	DBChildren      string
	DBProperties    string
	Tables          string
	Views           string
	TableMetaLoc    string
	TableMetadata   string
	ViewMetaLoc     string
	WarehouseFiles  []string
	OutsideFiles    []string
	TmpElsewhereErr string
}

func (f *badInputFixture) state(t *testing.T) catalogState {
	t.Helper()
	var s catalogState
	s.TopNamespaces = string(f.mustDo(t, http.MethodGet, "/v1/namespaces", "", http.StatusOK))
	s.DBChildren = string(f.mustDo(t, http.MethodGet, "/v1/namespaces?parent=db", "", http.StatusOK))
	s.DBProperties = string(f.mustDo(t, http.MethodGet, "/v1/namespaces/db", "", http.StatusOK))
	s.Tables = string(f.mustDo(t, http.MethodGet, "/v1/namespaces/db/tables", "", http.StatusOK))
	s.Views = string(f.mustDo(t, http.MethodGet, "/v1/namespaces/db/views", "", http.StatusOK))
	var lt struct {
		MetadataLocation string          `json:"metadata-location"`
		Metadata         json.RawMessage `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal(f.mustDo(t, http.MethodGet, "/v1/namespaces/db/tables/t", "", http.StatusOK), &lt))
	s.TableMetaLoc, s.TableMetadata = lt.MetadataLocation, string(lt.Metadata)
	require.NoError(t, json.Unmarshal(f.mustDo(t, http.MethodGet, "/v1/namespaces/db/views/v", "", http.StatusOK), &lt))
	s.ViewMetaLoc = lt.MetadataLocation
	s.WarehouseFiles = listFileTree(t, f.warehouseDir)
	s.OutsideFiles = listFileTree(t, f.outsideDir)
	if _, err := os.Stat("/tmp/elsewhere"); err != nil {
		s.TmpElsewhereErr = err.Error()
	}
	return s
}

// listFileTree lists every file and directory under root with file sizes.
func listFileTree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			out = append(out, rel+"/")
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("%s %d", rel, info.Size()))
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	sort.Strings(out)
	return out
}

// TestBadInput sends bad requests through real HTTP and checks that each is
// refused with the spec's status and exception type in an ErrorModel, and
// that it changed nothing: namespaces, properties, tables, views, the
// table's metadata, and the files in and around the warehouse.
func TestBadInput(t *testing.T) {
	t.Parallel()
	f := newBadInputFixture(t)
	wh, out := f.warehouseURI, f.outsideURI
	commit := func(updates string) string { return `{"requirements":[],"updates":[` + updates + `]}` }
	create := func(extra string) string { return `{"name":"t2","schema":` + badInputSchema + extra + `}` }

	tests := []struct {
		name   string
		method string
		path   string
		body   string
		header http.Header
		want   spec.Exception
	}{
		// Malformed bodies.
		{name: "create namespace: truncated JSON", method: "POST", path: "/v1/namespaces", body: `{"namespace":["x"]`, want: spec.BadRequest},
		{name: "create namespace: not JSON", method: "POST", path: "/v1/namespaces", body: `namespace=x`, want: spec.BadRequest},
		{name: "create namespace: wrong type", method: "POST", path: "/v1/namespaces", body: `{"namespace":"x"}`, want: spec.BadRequest},
		{name: "create namespace: trailing data", method: "POST", path: "/v1/namespaces", body: `{"namespace":["x"]} {"namespace":["y"]}`, want: spec.BadRequest},
		{name: "create namespace: empty body", method: "POST", path: "/v1/namespaces", body: ``, want: spec.BadRequest},
		{name: "create namespace: non-string property", method: "POST", path: "/v1/namespaces", body: `{"namespace":["x"],"properties":{"a":1}}`, want: spec.BadRequest},
		{name: "create table: truncated JSON", method: "POST", path: "/v1/namespaces/db/tables", body: `{"name":"t2","schema":`, want: spec.BadRequest},
		{name: "create table: unknown column type", method: "POST", path: "/v1/namespaces/db/tables", body: `{"name":"t2","schema":{"type":"struct","fields":[{"id":1,"name":"x","type":"nope","required":false}]}}`, want: spec.BadRequest},
		{name: "create table: no schema", method: "POST", path: "/v1/namespaces/db/tables", body: `{"name":"t2"}`, want: spec.InvalidArgument},
		{name: "commit: not JSON", method: "POST", path: "/v1/namespaces/db/tables/t", body: `{updates: []}`, want: spec.BadRequest},
		{name: "commit: truncated JSON", method: "POST", path: "/v1/namespaces/db/tables/t", body: `{"requirements":[],"updates":[`, want: spec.BadRequest},
		{name: "commit: unknown update type", method: "POST", path: "/v1/namespaces/db/tables/t", body: commit(`{"action":"frobnicate","x":1}`), want: spec.BadRequest},
		{name: "commit: update without action", method: "POST", path: "/v1/namespaces/db/tables/t", body: commit(`{"updates":{"a":"b"}}`), want: spec.BadRequest},
		{name: "commit: unknown requirement type", method: "POST", path: "/v1/namespaces/db/tables/t", body: `{"requirements":[{"type":"assert-frobnicate"}],"updates":[]}`, want: spec.BadRequest},
		{name: "commit: identifier differs from path", method: "POST", path: "/v1/namespaces/db/tables/t", body: `{"identifier":{"namespace":["db"],"name":"other"},"requirements":[],"updates":[` + `{"action":"set-properties","updates":{"a":"b"}}]}`, want: spec.BadRequest},
		{name: "transaction: truncated JSON", method: "POST", path: "/v1/transactions/commit", body: `{"table-changes":[`, want: spec.BadRequest},
		{name: "transaction: no changes", method: "POST", path: "/v1/transactions/commit", body: `{"table-changes":[]}`, want: spec.InvalidArgument},
		{name: "transaction: table twice", method: "POST", path: "/v1/transactions/commit", body: `{"table-changes":[{"identifier":{"namespace":["db"],"name":"t"},"requirements":[],"updates":[{"action":"set-properties","updates":{"a":"1"}}]},{"identifier":{"namespace":["db"],"name":"t"},"requirements":[],"updates":[{"action":"set-properties","updates":{"a":"2"}}]}]}`, want: spec.InvalidArgument},
		{name: "transaction: change without identifier", method: "POST", path: "/v1/transactions/commit", body: `{"table-changes":[{"requirements":[],"updates":[{"action":"set-properties","updates":{"a":"1"}}]}]}`, want: spec.BadRequest},
		{name: "update properties: wrong type", method: "POST", path: "/v1/namespaces/db/properties", body: `{"removals":"owner"}`, want: spec.BadRequest},
		{name: "rename: no destination", method: "POST", path: "/v1/tables/rename", body: `{"source":{"namespace":["db"],"name":"t"}}`, want: spec.BadRequest},
		{name: "metrics: unknown report type", method: "POST", path: "/v1/namespaces/db/tables/t/metrics", body: `{"report-type":"bogus-report","table-name":"t"}`, want: spec.BadRequest},
		{name: "Idempotency-Key not a UUID", method: "POST", path: "/v1/namespaces", body: `{"namespace":["x"]}`, header: http.Header{"Idempotency-Key": {"not-a-uuid"}}, want: spec.BadRequest},

		// Namespace levels and names, in bodies and in paths.
		{name: "namespace level .. in body", method: "POST", path: "/v1/namespaces", body: `{"namespace":[".."]}`, want: spec.InvalidArgument},
		{name: "nested namespace level .. in body", method: "POST", path: "/v1/namespaces", body: `{"namespace":["db",".."]}`, want: spec.InvalidArgument},
		{name: "namespace level . in body", method: "POST", path: "/v1/namespaces", body: `{"namespace":["."]}`, want: spec.InvalidArgument},
		{name: "namespace level with ../ in body", method: "POST", path: "/v1/namespaces", body: `{"namespace":["a/../b"]}`, want: spec.InvalidArgument},
		{name: "namespace level with a control char in body", method: "POST", path: "/v1/namespaces", body: `{"namespace":["a\u0001b"]}`, want: spec.InvalidArgument},
		{name: "namespace level with a newline in body", method: "POST", path: "/v1/namespaces", body: `{"namespace":["db","a\nb"]}`, want: spec.InvalidArgument},
		{name: "namespace level with DEL in body", method: "POST", path: "/v1/namespaces", body: `{"namespace":["a\u007f"]}`, want: spec.InvalidArgument},
		{name: "empty namespace in body", method: "POST", path: "/v1/namespaces", body: `{"namespace":[]}`, want: spec.InvalidArgument},
		{name: "empty namespace level in body", method: "POST", path: "/v1/namespaces", body: `{"namespace":["db",""]}`, want: spec.InvalidArgument},
		{name: "namespace level .. in path", method: "GET", path: "/v1/namespaces/%2E%2E", want: spec.InvalidArgument},
		{name: "namespace level .. in raw path", method: "GET", path: "/v1/namespaces/..", want: spec.InvalidArgument},
		{name: "nested namespace level .. in path", method: "GET", path: "/v1/namespaces/db%1F..", want: spec.InvalidArgument},
		{name: "namespace level with a control char in path", method: "GET", path: "/v1/namespaces/a%01b", want: spec.InvalidArgument},
		{name: "empty namespace level in path", method: "GET", path: "/v1/namespaces/db%1F", want: spec.InvalidArgument},
		{name: "drop namespace .. in path", method: "DELETE", path: "/v1/namespaces/%2E%2E", want: spec.InvalidArgument},
		{name: "update properties of .. in path", method: "POST", path: "/v1/namespaces/%2E%2E/properties", body: `{"updates":{"a":"b"}}`, want: spec.InvalidArgument},
		{name: "create table in namespace .. in path", method: "POST", path: "/v1/namespaces/%2E%2E/tables", body: create(""), want: spec.InvalidArgument},
		{name: "create table in namespace with a control char in path", method: "POST", path: "/v1/namespaces/db%1Fa%07/tables", body: create(""), want: spec.InvalidArgument},
		{name: "list tables of .. in path", method: "GET", path: "/v1/namespaces/db%1F%2E%2E/tables", want: spec.InvalidArgument},
		{name: "list namespaces under parent ..", method: "GET", path: "/v1/namespaces?parent=%2E%2E", want: spec.InvalidArgument},
		{name: "list namespaces under parent with a control char", method: "GET", path: "/v1/namespaces?parent=db%1F%01", want: spec.InvalidArgument},
		{name: "table name .. in body", method: "POST", path: "/v1/namespaces/db/tables", body: `{"name":"..","schema":` + badInputSchema + `}`, want: spec.InvalidArgument},
		{name: "table name with a control char in body", method: "POST", path: "/v1/namespaces/db/tables", body: `{"name":"t\u0000","schema":` + badInputSchema + `}`, want: spec.InvalidArgument},
		{name: "table name .. in path", method: "GET", path: "/v1/namespaces/db/tables/%2E%2E", want: spec.InvalidArgument},
		{name: "commit to table .. in path", method: "POST", path: "/v1/namespaces/db/tables/%2E%2E", body: commit(`{"action":"set-properties","updates":{"a":"b"}}`), want: spec.InvalidArgument},
		{name: "rename table to ..", method: "POST", path: "/v1/tables/rename", body: `{"source":{"namespace":["db"],"name":"t"},"destination":{"namespace":["db"],"name":".."}}`, want: spec.InvalidArgument},
		{name: "rename table into namespace ..", method: "POST", path: "/v1/tables/rename", body: `{"source":{"namespace":["db"],"name":"t"},"destination":{"namespace":[".."],"name":"t"}}`, want: spec.InvalidArgument},
		{name: "view name .. in body", method: "POST", path: "/v1/namespaces/db/views", body: `{"name":"..","schema":` + badInputSchema + `,"view-version":{"version-id":1,"timestamp-ms":1,"schema-id":0,"summary":{},"representations":[{"type":"sql","sql":"SELECT 1","dialect":"spark"}]}}`, want: spec.InvalidArgument},

		// Table locations that are refused, not overridden (see
		// TestCreateOutsideWarehouseIsOverridden): '.' and '..' segments,
		// relative locations, and metadata paths outside the warehouse.
		{name: "create table escaping with ../", method: "POST", path: "/v1/namespaces/db/tables", body: create(`,"location":"` + wh + `/../elsewhere/t2"`), want: spec.InvalidArgument},
		{name: "create table escaping with nested ../", method: "POST", path: "/v1/namespaces/db/tables", body: create(`,"location":"` + wh + `/db/../../elsewhere/t2"`), want: spec.InvalidArgument},
		{name: "create table with ../ that stays inside", method: "POST", path: "/v1/namespaces/db/tables", body: create(`,"location":"` + wh + `/db/../db/t2"`), want: spec.InvalidArgument},
		{name: "create table escaping with %2E%2E", method: "POST", path: "/v1/namespaces/db/tables", body: create(`,"location":"` + wh + `/%2E%2E/elsewhere/t2"`), want: spec.InvalidArgument},
		{name: "create table on a remote file host", method: "POST", path: "/v1/namespaces/db/tables", body: create(`,"location":"file://otherhost` + f.warehouseDir + `/t2"`), want: spec.InvalidArgument},
		{name: "create staged table escaping with ../", method: "POST", path: "/v1/namespaces/db/tables", body: create(`,"location":"` + wh + `/../elsewhere/t2","stage-create":true`), want: spec.InvalidArgument},
		{name: "create view escaping with ../", method: "POST", path: "/v1/namespaces/db/views", body: `{"name":"v2","location":"` + wh + `/../elsewhere/v2","schema":` + badInputSchema + `,"view-version":{"version-id":1,"timestamp-ms":1,"schema-id":0,"summary":{},"representations":[{"type":"sql","sql":"SELECT 1","dialect":"spark"}]}}`, want: spec.InvalidArgument},
		{name: "create table at a relative location", method: "POST", path: "/v1/namespaces/db/tables", body: create(`,"location":"db/t2"`), want: spec.InvalidArgument},
		{name: "create table with metadata path outside", method: "POST", path: "/v1/namespaces/db/tables", body: create(`,"properties":{"write.metadata.path":"` + out + `/meta"}`), want: spec.InvalidArgument},

		// register-table.
		{name: "register metadata outside the warehouse", method: "POST", path: "/v1/namespaces/db/register", body: `{"name":"r","metadata-location":"` + out + `/copy.metadata.json"}`, want: spec.InvalidArgument},
		{name: "register metadata escaping with ../", method: "POST", path: "/v1/namespaces/db/register", body: `{"name":"r","metadata-location":"` + wh + `/../elsewhere/copy.metadata.json"}`, want: spec.InvalidArgument},
		{name: "register metadata on s3", method: "POST", path: "/v1/namespaces/db/register", body: `{"name":"r","metadata-location":"s3://bucket/warehouse/copy.metadata.json"}`, want: spec.InvalidArgument},
		{name: "register a missing file inside the warehouse", method: "POST", path: "/v1/namespaces/db/register", body: `{"name":"r","metadata-location":"` + wh + `/db/missing/metadata/00000-x.metadata.json"}`, want: spec.InvalidArgument},
		{name: "register metadata whose table location is outside", method: "POST", path: "/v1/namespaces/db/register", body: `{"name":"r","metadata-location":"` + wh + `/planted/metadata/00000-escaping.metadata.json"}`, want: spec.InvalidArgument},
		{name: "register a file that is not metadata", method: "POST", path: "/v1/namespaces/db/register", body: `{"name":"r","metadata-location":"` + wh + `/planted/metadata/00000-garbage.metadata.json"}`, want: spec.InvalidArgument},
		{name: "register over the existing table", method: "POST", path: "/v1/namespaces/db/register", body: `{"name":"t","metadata-location":"` + f.tableMeta + `"}`, want: spec.AlreadyExists},

		// Commits that would move a table out of the warehouse.
		{name: "set-location to /tmp/elsewhere", method: "POST", path: "/v1/namespaces/db/tables/t", body: commit(`{"action":"set-location","location":"file:///tmp/elsewhere"}`), want: spec.InvalidArgument},
		{name: "set-location beside the warehouse", method: "POST", path: "/v1/namespaces/db/tables/t", body: commit(`{"action":"set-location","location":"` + out + `/t"}`), want: spec.InvalidArgument},
		{name: "set-location escaping with ../", method: "POST", path: "/v1/namespaces/db/tables/t", body: commit(`{"action":"set-location","location":"` + wh + `/../elsewhere/t"}`), want: spec.InvalidArgument},
		{name: "set-location to s3", method: "POST", path: "/v1/namespaces/db/tables/t", body: commit(`{"action":"set-location","location":"s3://bucket/t"}`), want: spec.InvalidArgument},
		{name: "set metadata path outside", method: "POST", path: "/v1/namespaces/db/tables/t", body: commit(`{"action":"set-properties","updates":{"write.metadata.path":"` + out + `/meta"}}`), want: spec.InvalidArgument},
		{name: "transaction moving a table out", method: "POST", path: "/v1/transactions/commit", body: `{"table-changes":[{"identifier":{"namespace":["db"],"name":"t"},"requirements":[],"updates":[{"action":"set-location","location":"` + out + `/t"}]}]}`, want: spec.InvalidArgument},

		// Query parameters.
		{name: "pageSize=0", method: "GET", path: "/v1/namespaces?pageSize=0", want: spec.BadRequest},
		{name: "pageSize=abc", method: "GET", path: "/v1/namespaces?pageSize=abc", want: spec.BadRequest},
		{name: "pageSize=-1", method: "GET", path: "/v1/namespaces?pageSize=-1", want: spec.BadRequest},
		{name: "tables pageSize=0", method: "GET", path: "/v1/namespaces/db/tables?pageSize=0", want: spec.BadRequest},
		{name: "views pageSize=abc", method: "GET", path: "/v1/namespaces/db/views?pageSize=abc", want: spec.BadRequest},
		{name: "garbage pageToken", method: "GET", path: "/v1/namespaces?pageToken=%21%21%21&pageSize=1", want: spec.InvalidArgument},
		{name: "garbage tables pageToken", method: "GET", path: "/v1/namespaces/db/tables?pageToken=%21%21%21", want: spec.InvalidArgument},
		{name: "snapshots=bogus", method: "GET", path: "/v1/namespaces/db/tables/t?snapshots=bogus", want: spec.BadRequest},

		// Things that do not exist.
		{name: "load missing table", method: "GET", path: "/v1/namespaces/db/tables/missing", want: spec.NoSuchTable},
		{name: "load table in a missing namespace", method: "GET", path: "/v1/namespaces/nope/tables/t", want: spec.NoSuchTable},
		{name: "load view as a table", method: "GET", path: "/v1/namespaces/db/tables/v", want: spec.NoSuchTable},
		{name: "commit to a missing table", method: "POST", path: "/v1/namespaces/db/tables/missing", body: commit(`{"action":"set-properties","updates":{"a":"b"}}`), want: spec.NoSuchTable},
		{name: "drop missing table", method: "DELETE", path: "/v1/namespaces/db/tables/missing", want: spec.NoSuchTable},
		{name: "rename missing table", method: "POST", path: "/v1/tables/rename", body: `{"source":{"namespace":["db"],"name":"missing"},"destination":{"namespace":["db"],"name":"t3"}}`, want: spec.NoSuchTable},
		{name: "load missing namespace", method: "GET", path: "/v1/namespaces/nope", want: spec.NoSuchNamespace},
		{name: "load missing nested namespace", method: "GET", path: "/v1/namespaces/db%1Fnope", want: spec.NoSuchNamespace},
		{name: "list tables of a missing namespace", method: "GET", path: "/v1/namespaces/nope/tables", want: spec.NoSuchNamespace},
		{name: "list children of a missing namespace", method: "GET", path: "/v1/namespaces?parent=nope", want: spec.NoSuchNamespace},
		{name: "create table in a missing namespace", method: "POST", path: "/v1/namespaces/nope/tables", body: create(""), want: spec.NoSuchNamespace},
		{name: "create nested namespace under a missing parent", method: "POST", path: "/v1/namespaces", body: `{"namespace":["nope","x"]}`, want: spec.NoSuchNamespace},
		{name: "rename table into a missing namespace", method: "POST", path: "/v1/tables/rename", body: `{"source":{"namespace":["db"],"name":"t"},"destination":{"namespace":["nope"],"name":"t"}}`, want: spec.NoSuchNamespace},
		{name: "update properties of a missing namespace", method: "POST", path: "/v1/namespaces/nope/properties", body: `{"updates":{"a":"b"}}`, want: spec.NoSuchNamespace},
		{name: "load missing view", method: "GET", path: "/v1/namespaces/db/views/missing", want: spec.NoSuchView},
		{name: "load table as a view", method: "GET", path: "/v1/namespaces/db/views/t", want: spec.NoSuchView},
		{name: "drop missing view", method: "DELETE", path: "/v1/namespaces/db/views/missing", want: spec.NoSuchView},

		// Routes, methods and warehouses.
		{name: "unknown route", method: "GET", path: "/v1/namespaces/db/frobnicators", want: spec.NotFound},
		{name: "unknown version", method: "GET", path: "/v2/namespaces", want: spec.NotFound},
		{name: "unknown top-level route", method: "GET", path: "/nope", want: spec.NotFound},
		{name: "wrong method on namespaces", method: "PUT", path: "/v1/namespaces", body: `{"namespace":["x"]}`, want: spec.MethodNotAllowed},
		{name: "wrong method on a table", method: "PATCH", path: "/v1/namespaces/db/tables/t", body: commit(""), want: spec.MethodNotAllowed},
		{name: "wrong method on rename", method: "GET", path: "/v1/tables/rename", want: spec.MethodNotAllowed},
		{name: "unknown warehouse: list", method: "GET", path: "/v1/nope/namespaces", want: spec.NoSuchWarehouse},
		{name: "unknown warehouse: create namespace", method: "POST", path: "/v1/nope/namespaces", body: `{"namespace":["x"]}`, want: spec.NoSuchWarehouse},
		{name: "unknown warehouse: load table", method: "GET", path: "/v1/nope/namespaces/db/tables/t", want: spec.NoSuchWarehouse},
		{name: "unknown warehouse: drop table", method: "DELETE", path: "/v1/nope/namespaces/db/tables/t", want: spec.NoSuchWarehouse},
		{name: "unknown warehouse: config", method: "GET", path: "/v1/config?warehouse=nope", want: spec.NoSuchWarehouse},

		// Well formed but refused.
		{name: "property both removed and updated", method: "POST", path: "/v1/namespaces/db/properties", body: `{"removals":["owner"],"updates":{"owner":"bob"}}`, want: spec.Unprocessable},
		{name: "property both removed and updated among others", method: "POST", path: "/v1/namespaces/db/properties", body: `{"removals":["x","y"],"updates":{"z":"1","y":"2"}}`, want: spec.Unprocessable},
		{name: "create existing namespace", method: "POST", path: "/v1/namespaces", body: `{"namespace":["db"],"properties":{"owner":"mallory"}}`, want: spec.AlreadyExists},
		{name: "create existing table", method: "POST", path: "/v1/namespaces/db/tables", body: `{"name":"t","schema":` + badInputSchema + `}`, want: spec.AlreadyExists},
		{name: "create table over a view", method: "POST", path: "/v1/namespaces/db/tables", body: `{"name":"v","schema":` + badInputSchema + `}`, want: spec.AlreadyExists},
		{name: "rename table onto a view", method: "POST", path: "/v1/tables/rename", body: `{"source":{"namespace":["db"],"name":"t"},"destination":{"namespace":["db"],"name":"v"}}`, want: spec.AlreadyExists},
		{name: "drop a non-empty namespace", method: "DELETE", path: "/v1/namespaces/db", want: spec.NamespaceNotEmpty},
		{name: "commit with a failing requirement", method: "POST", path: "/v1/namespaces/db/tables/t", body: `{"requirements":[{"type":"assert-table-uuid","uuid":"00000000-0000-0000-0000-000000000000"}],"updates":[{"action":"set-properties","updates":{"a":"b"}}]}`, want: spec.CommitFailed},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := f.state(t)
			rsp := f.do(t, tt.method, tt.path, tt.body, tt.header)
			em := requireErrorModel(t, rsp, tt.want.Status)
			assert.Equal(t, tt.want.Type, em.Type, "message: %s", em.Message)
			assert.Equal(t, before, f.state(t), "a refused request must change nothing")
		})
	}
}

// TestBadInputHeadHasNoBody checks that refused HEAD requests send only the
// status: HEAD responses carry no body.
func TestBadInputHeadHasNoBody(t *testing.T) {
	t.Parallel()
	f := newBadInputFixture(t)
	tests := []struct {
		name string
		path string
		want int
	}{
		{"missing namespace", "/v1/namespaces/nope", http.StatusNotFound},
		{"missing table", "/v1/namespaces/db/tables/missing", http.StatusNotFound},
		{"view as table", "/v1/namespaces/db/tables/v", http.StatusNotFound},
		{"missing view", "/v1/namespaces/db/views/missing", http.StatusNotFound},
		{"namespace ..", "/v1/namespaces/%2E%2E", http.StatusBadRequest},
		{"unknown warehouse", "/v1/nope/namespaces/db", http.StatusNotFound},
		{"existing table", "/v1/namespaces/db/tables/t", http.StatusNoContent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rsp := f.do(t, http.MethodHead, tt.path, "", nil)
			defer rsp.Body.Close()
			body, err := io.ReadAll(rsp.Body)
			require.NoError(t, err)
			assert.Equal(t, tt.want, rsp.StatusCode)
			assert.Empty(t, body)
		})
	}
}

// TestCreateOutsideWarehouseIsOverridden checks that a create asking for a
// location outside the warehouse gets a server-assigned one inside it (the
// REST Compatibility Kit's overrides-requested-location) and that nothing
// is written outside.
func TestCreateOutsideWarehouseIsOverridden(t *testing.T) {
	t.Parallel()
	f := newBadInputFixture(t)
	viewVersion := `"view-version":{"version-id":1,"timestamp-ms":1,"schema-id":0,"summary":{},"representations":[{"type":"sql","sql":"SELECT 1","dialect":"spark"}],"default-namespace":["db"]}`
	locations := []struct {
		name string
		loc  string
	}{
		{"/tmp/elsewhere", "file:///tmp/elsewhere"},
		{"beside the warehouse", f.outsideURI + "/x2"},
		{"s3", "s3://bucket/warehouse/x2"},
		{"a prefix sibling of the warehouse", f.warehouseURI + "-evil/x2"},
		{"the warehouse root", f.warehouseURI},
	}
	kinds := []struct {
		name string
		path string
		body func(loc string) string
	}{
		{"table", "/v1/namespaces/db/tables", func(loc string) string {
			return `{"name":"x2","location":"` + loc + `","schema":` + badInputSchema + `}`
		}},
		{"staged table", "/v1/namespaces/db/tables", func(loc string) string {
			return `{"name":"x2","location":"` + loc + `","schema":` + badInputSchema + `,"stage-create":true}`
		}},
		{"view", "/v1/namespaces/db/views", func(loc string) string {
			return `{"name":"x2","location":"` + loc + `","schema":` + badInputSchema + `,` + viewVersion + `}`
		}},
	}
	for _, kind := range kinds {
		for _, tt := range locations {
			t.Run(kind.name+" at "+tt.name, func(t *testing.T) {
				before := f.state(t)
				var got struct {
					MetadataLocation *string `json:"metadata-location"`
					Metadata         struct {
						Location string `json:"location"`
					} `json:"metadata"`
				}
				require.NoError(t, json.Unmarshal(f.mustDo(t, http.MethodPost, kind.path, kind.body(tt.loc), http.StatusOK), &got))
				assert.True(t, f.srv.Warehouse.Contains(got.Metadata.Location), "location %q is outside the warehouse", got.Metadata.Location)
				assert.True(t, strings.HasPrefix(got.Metadata.Location, f.warehouseURI+"/db/x2-"), "location %q", got.Metadata.Location)
				after := f.state(t)
				assert.Equal(t, before.OutsideFiles, after.OutsideFiles, "nothing may be written outside the warehouse")
				assert.Equal(t, before.TmpElsewhereErr, after.TmpElsewhereErr, "/tmp/elsewhere must be left alone")
				if kind.name == "staged table" {
					assert.Nil(t, got.MetadataLocation, "a staged create writes no metadata")
					// Only the staged table's empty data and metadata
					// directories may appear (DuckDB's CTAS needs them).
					rel := strings.TrimPrefix(got.Metadata.Location, f.warehouseURI+"/")
					var added []string
					for _, p := range after.WarehouseFiles {
						if !slices.Contains(before.WarehouseFiles, p) {
							added = append(added, p)
						}
					}
					assert.ElementsMatch(t, []string{rel + "/", rel + "/data/", rel + "/metadata/"}, added)
					after.WarehouseFiles = before.WarehouseFiles
					assert.Equal(t, before, after, "a staged create persists nothing else")
					return
				}
				require.NotNil(t, got.MetadataLocation)
				assert.True(t, strings.HasPrefix(*got.MetadataLocation, got.Metadata.Location+"/metadata/"), "metadata-location %q", *got.MetadataLocation)
				f.mustDo(t, http.MethodDelete, kind.path+"/x2", "", http.StatusNoContent)
			})
		}
	}
}
