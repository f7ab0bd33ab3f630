// Package testunity is a stand-in for a Unity Catalog server in tests of
// publish's unity target: the real Unity Catalog OSS server
// (io.unitycatalog:unitycatalog-server) cannot be had here — it is not
// on the Maven repository this project reaches (404 for 0.2.1, 0.3.0 and
// LATEST), and no other installable server exists (PyPI's unitycatalog-rs
// server packages are empty 0.0.0 placeholders). It implements only the
// routes the target uses, and those a reader uses to list what was
// published, under /api/2.1/unity-catalog, with Unity's semantics as its
// OpenAPI document (api/all.yaml of github.com/unitycatalog/unitycatalog)
// and the OSS server define them:
//
//	POST /catalogs, GET /catalogs/{name}
//	POST /schemas, GET /schemas?catalog_name=, GET /schemas/{full_name}
//	POST /tables (EXTERNAL only, as the OSS server), GET /tables?catalog_name=&schema_name=,
//	GET /tables/{full_name}, DELETE /tables/{full_name}
//
// Answers are CatalogInfo, SchemaInfo, TableInfo (with a new table_id per
// create), ListSchemasResponse and ListTablesResponse; errors are the OSS
// server's body {"error_code", "message", "details"} with 404 NOT_FOUND
// (an absent catalog, schema or table), 409 ALREADY_EXISTS (a name taken),
// 400 INVALID_ARGUMENT (a create without a required field) and 401
// UNAUTHENTICATED (a missing or wrong bearer token when Token is set).
// The real Python client (unitycatalog-client, generated from that
// OpenAPI document) decodes every answer with its models in
// scripts/read-unity.py, which checks the shapes.
//
// Stop and Start simulate the server going down (connections refused)
// and coming back on the same port with its state.
package testunity

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

// API is the path of Unity Catalog's REST API under the server's URI.
const API = "/api/2.1/unity-catalog"

// Column is Unity's ColumnInfo.
type Column struct {
	Name          string `json:"name"`
	TypeText      string `json:"type_text"`
	TypeJSON      string `json:"type_json"`
	TypeName      string `json:"type_name"`
	TypePrecision *int   `json:"type_precision,omitempty"`
	TypeScale     *int   `json:"type_scale,omitempty"`
	Position      int    `json:"position"`
	Nullable      bool   `json:"nullable"`
	Comment       string `json:"comment,omitempty"`
}

// Table is Unity's TableInfo.
type Table struct {
	Name             string            `json:"name"`
	CatalogName      string            `json:"catalog_name"`
	SchemaName       string            `json:"schema_name"`
	TableType        string            `json:"table_type"`
	DataSourceFormat string            `json:"data_source_format"`
	Columns          []Column          `json:"columns"`
	StorageLocation  string            `json:"storage_location"`
	Comment          string            `json:"comment,omitempty"`
	Properties       map[string]string `json:"properties"`
	Owner            string            `json:"owner,omitempty"`
	CreatedAt        int64             `json:"created_at"`
	UpdatedAt        int64             `json:"updated_at"`
	TableID          string            `json:"table_id"`
}

type schemaInfo struct {
	Name        string            `json:"name"`
	CatalogName string            `json:"catalog_name"`
	Comment     string            `json:"comment,omitempty"`
	Properties  map[string]string `json:"properties"`
	FullName    string            `json:"full_name"`
	CreatedAt   int64             `json:"created_at"`
	UpdatedAt   int64             `json:"updated_at"`
	SchemaID    string            `json:"schema_id"`
}

type catalogInfo struct {
	Name       string            `json:"name"`
	Comment    string            `json:"comment,omitempty"`
	Properties map[string]string `json:"properties"`
	CreatedAt  int64             `json:"created_at"`
	UpdatedAt  int64             `json:"updated_at"`
	ID         string            `json:"id"`
}

// Server is a running stand-in.
type Server struct {
	// URI is the server's base URI (http://127.0.0.1:PORT), without API.
	URI string
	// Token, when set, is the bearer token every call must carry.
	Token string

	addr string
	mu   sync.Mutex
	srv  *http.Server
	cats map[string]*catalogInfo
	schs map[string]*schemaInfo // by catalog.schema
	tbls map[string]*Table      // by catalog.schema.table
	// Calls counts the requests served, by "METHOD /route".
	calls map[string]int
}

// Start starts a stand-in with bearer token token ("" for none) on a
// free port, stopped when t ends.
func Start(t testing.TB, token string) *Server {
	t.Helper()
	s := &Server{Token: token, cats: map[string]*catalogInfo{}, schs: map[string]*schemaInfo{}, tbls: map[string]*Table{}, calls: map[string]int{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = l.Addr().String()
	s.URI = "http://" + s.addr
	s.serve(l)
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) serve(l net.Listener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	srv := s.srv
	go func() { _ = srv.Serve(l) }()
}

// Stop closes the server: connections are refused until Restart.
func (s *Server) Stop() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// Restart serves again on the same port, with the state kept.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	var l net.Listener
	var err error
	for range 50 { // the port may linger for a moment after Close
		if l, err = net.Listen("tcp", s.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("testunity: listen again on %s: %v", s.addr, err)
	}
	s.serve(l)
}

// CreateCatalog creates a catalog, as an administrator does before
// Tarn publishes into it.
func (s *Server) CreateCatalog(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now().UnixMilli()
	s.cats[name] = &catalogInfo{Name: name, Properties: map[string]string{}, CreatedAt: now, UpdatedAt: now, ID: uuid.NewString()}
}

// Table returns a copy of the table full (catalog.schema.table), nil when
// there is none.
func (s *Server) Table(full string) *Table {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tbls[full]
	if t == nil {
		return nil
	}
	c := *t
	c.Columns = slices.Clone(t.Columns)
	return &c
}

// PutTable creates or replaces a table directly (a change made outside
// Tarn), with a new table_id.
func (s *Server) PutTable(t Table) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t.TableID = uuid.NewString()
	t.CreatedAt, t.UpdatedAt = time.Now().UnixMilli(), time.Now().UnixMilli()
	s.tbls[t.CatalogName+"."+t.SchemaName+"."+t.Name] = &t
}

// Calls returns how many requests were served for route ("POST /tables").
func (s *Server) Calls(route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[route]
}

// uerr is an error answer, as the OSS server writes it.
type uerr struct {
	status int
	code   string
	msg    string
}

func notFound(format string, args ...any) *uerr {
	return &uerr{http.StatusNotFound, "NOT_FOUND", fmt.Sprintf(format, args...)}
}

func invalid(format string, args ...any) *uerr {
	return &uerr{http.StatusBadRequest, "INVALID_ARGUMENT", fmt.Sprintf(format, args...)}
}

func exists(format string, args ...any) *uerr {
	return &uerr{http.StatusConflict, "ALREADY_EXISTS", fmt.Sprintf(format, args...)}
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	out, e := s.handle(r)
	w.Header().Set("Content-Type", "application/json")
	if e != nil {
		w.WriteHeader(e.status)
		_ = json.NewEncoder(w).Encode(map[string]any{"error_code": e.code, "message": e.msg,
			"details": []any{map[string]any{"@type": "google.rpc.ErrorInfo", "reason": e.code, "metadata": map[string]any{}}}})
		return
	}
	_ = json.NewEncoder(w).Encode(out)
}

func (s *Server) handle(r *http.Request) (any, *uerr) {
	if s.Token != "" && r.Header.Get("Authorization") != "Bearer "+s.Token {
		return nil, &uerr{http.StatusUnauthorized, "UNAUTHENTICATED", "No valid bearer token"}
	}
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), API+"/")
	if !ok {
		return nil, notFound("no route %s", r.URL.Path)
	}
	kind, name, _ := strings.Cut(rest, "/")
	name, err := url.PathUnescape(name)
	if err != nil {
		return nil, invalid("bad path: %v", err)
	}
	route := r.Method + " /" + kind
	if name != "" {
		route += "/{name}"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[route]++
	decode := func(v any) *uerr {
		if err := json.NewDecoder(r.Body).Decode(v); err != nil {
			return invalid("bad request body: %v", err)
		}
		return nil
	}
	now := time.Now().UnixMilli()
	switch route {
	case "POST /catalogs":
		var in catalogInfo
		if e := decode(&in); e != nil {
			return nil, e
		}
		if in.Name == "" {
			return nil, invalid("name is required")
		}
		if s.cats[in.Name] != nil {
			return nil, exists("Catalog already exists: %s", in.Name)
		}
		c := &catalogInfo{Name: in.Name, Comment: in.Comment, Properties: orEmpty(in.Properties), CreatedAt: now, UpdatedAt: now, ID: uuid.NewString()}
		s.cats[in.Name] = c
		return c, nil
	case "GET /catalogs/{name}":
		if c := s.cats[name]; c != nil {
			return c, nil
		}
		return nil, notFound("Catalog not found: %s", name)
	case "POST /schemas":
		var in schemaInfo
		if e := decode(&in); e != nil {
			return nil, e
		}
		if in.Name == "" || in.CatalogName == "" {
			return nil, invalid("name and catalog_name are required")
		}
		if s.cats[in.CatalogName] == nil {
			return nil, notFound("Catalog not found: %s", in.CatalogName)
		}
		full := in.CatalogName + "." + in.Name
		if s.schs[full] != nil {
			return nil, exists("Schema already exists: %s", full)
		}
		sc := &schemaInfo{Name: in.Name, CatalogName: in.CatalogName, Comment: in.Comment, Properties: orEmpty(in.Properties),
			FullName: full, CreatedAt: now, UpdatedAt: now, SchemaID: uuid.NewString()}
		s.schs[full] = sc
		return sc, nil
	case "GET /schemas":
		cat := r.URL.Query().Get("catalog_name")
		if s.cats[cat] == nil {
			return nil, notFound("Catalog not found: %s", cat)
		}
		list := []*schemaInfo{}
		for _, sc := range s.schs {
			if sc.CatalogName == cat {
				list = append(list, sc)
			}
		}
		slices.SortFunc(list, func(a, b *schemaInfo) int { return strings.Compare(a.FullName, b.FullName) })
		return map[string]any{"schemas": list, "next_page_token": nil}, nil
	case "GET /schemas/{name}":
		if sc := s.schs[name]; sc != nil {
			return sc, nil
		}
		return nil, notFound("Schema not found: %s", name)
	case "POST /tables":
		var in Table
		if e := decode(&in); e != nil {
			return nil, e
		}
		if in.Name == "" || in.CatalogName == "" || in.SchemaName == "" || in.TableType == "" || in.Columns == nil {
			return nil, invalid("name, catalog_name, schema_name, table_type and columns are required")
		}
		if in.TableType != "EXTERNAL" {
			return nil, invalid("Only external table creation is supported")
		}
		if in.StorageLocation == "" {
			return nil, invalid("Storage location is required for external table")
		}
		if s.cats[in.CatalogName] == nil {
			return nil, notFound("Catalog not found: %s", in.CatalogName)
		}
		if s.schs[in.CatalogName+"."+in.SchemaName] == nil {
			return nil, notFound("Schema not found: %s.%s", in.CatalogName, in.SchemaName)
		}
		full := in.CatalogName + "." + in.SchemaName + "." + in.Name
		if s.tbls[full] != nil {
			return nil, exists("Table already exists: %s", full)
		}
		in.TableID, in.CreatedAt, in.UpdatedAt, in.Properties = uuid.NewString(), now, now, orEmpty(in.Properties)
		s.tbls[full] = &in
		return &in, nil
	case "GET /tables":
		q := r.URL.Query()
		cat, sch := q.Get("catalog_name"), q.Get("schema_name")
		if s.schs[cat+"."+sch] == nil {
			return nil, notFound("Schema not found: %s.%s", cat, sch)
		}
		list := []*Table{}
		for _, t := range s.tbls {
			if t.CatalogName == cat && t.SchemaName == sch {
				list = append(list, t)
			}
		}
		slices.SortFunc(list, func(a, b *Table) int { return strings.Compare(a.Name, b.Name) })
		return map[string]any{"tables": list, "next_page_token": nil}, nil
	case "GET /tables/{name}":
		if t := s.tbls[name]; t != nil {
			return t, nil
		}
		return nil, notFound("Table not found: %s", name)
	case "DELETE /tables/{name}":
		if s.tbls[name] == nil {
			return nil, notFound("Table not found: %s", name)
		}
		delete(s.tbls, name)
		return map[string]any{}, nil
	}
	return nil, notFound("no route %s %s in the stand-in", r.Method, r.URL.Path)
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
