package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/server"
	"github.com/tarnhq/tarn/spec"
)

// failingStore answers LoadNamespace with err; GET /v1/namespaces/{ns}
// reaches it after validation, so err travels through the real handler and
// error handler. Any other method panics (nil embedded interface).
type failingStore struct {
	catalog.Store
	err error
}

func (s failingStore) LoadNamespace(context.Context, catalog.Namespace) (map[string]string, error) {
	return nil, s.err
}

// serveError sends GET /v1/namespaces/db through a server whose store fails
// with err and returns the response.
func serveError(t *testing.T, err error) *http.Response {
	t.Helper()
	wh, werr := catalog.NewWarehouse(catalog.DefaultWarehouse, "file://"+t.TempDir(), nil)
	require.NoError(t, werr)
	cat, cerr := catalog.New(catalog.Config{Store: failingStore{err: err}, Warehouses: []*catalog.Warehouse{wh}})
	require.NoError(t, cerr)
	srv := server.New(cat, server.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/namespaces/db", nil))
	return rec.Result()
}

// TestErrorMapping sends every catalog sentinel (wrapped, as the catalog and
// stores return them) through the real handler and checks the status and
// the spec exception type of the ErrorModel.
func TestErrorMapping(t *testing.T) {
	tests := []struct {
		name string // the sentinel's name in catalog/errors.go, or a description
		err  error
		want spec.Exception
	}{
		// Parent sentinels.
		{"ErrNotFound", catalog.ErrNotFound, spec.NotFound},
		{"ErrAlreadyExists", catalog.ErrAlreadyExists, spec.AlreadyExists},
		{"ErrConflict", catalog.ErrConflict, spec.CommitFailed},
		{"ErrInvalidArgument", catalog.ErrInvalidArgument, spec.InvalidArgument},
		{"ErrUnprocessable", catalog.ErrUnprocessable, spec.Unprocessable},
		{"ErrForbidden", catalog.ErrForbidden, spec.Forbidden},
		{"ErrCommitStateUnknown", catalog.ErrCommitStateUnknown, spec.CommitStateUnknown},
		{"ErrUnsupported", catalog.ErrUnsupported, spec.NotAcceptable},
		// Specific sentinels.
		{"ErrNoSuchNamespace", catalog.ErrNoSuchNamespace, spec.NoSuchNamespace},
		{"ErrNoSuchTable", catalog.ErrNoSuchTable, spec.NoSuchTable},
		{"ErrNoSuchView", catalog.ErrNoSuchView, spec.NoSuchView},
		{"ErrNoSuchWarehouse", catalog.ErrNoSuchWarehouse, spec.NoSuchWarehouse},
		{"ErrMetadataNotFound", catalog.ErrMetadataNotFound, spec.NotFound},
		{"ErrNamespaceAlreadyExists", catalog.ErrNamespaceAlreadyExists, spec.AlreadyExists},
		{"ErrTableAlreadyExists", catalog.ErrTableAlreadyExists, spec.AlreadyExists},
		{"ErrViewAlreadyExists", catalog.ErrViewAlreadyExists, spec.AlreadyExists},
		{"ErrNamespaceNotEmpty", catalog.ErrNamespaceNotEmpty, spec.NamespaceNotEmpty},
		{"ErrCommitFailed", catalog.ErrCommitFailed, spec.CommitFailed},
		{"ErrIdempotencyKeyReused", catalog.ErrIdempotencyKeyReused, spec.Unprocessable},
		{"ErrInvalidMetadata", catalog.ErrInvalidMetadata, spec.BadRequest},
		{"ErrTableOwned", catalog.ErrTableOwned, spec.Conflict},
		{"ErrTableOwnedForbidden", catalog.ErrTableOwnedForbidden, spec.Forbidden},
		{"ErrSignOutsideLocation", catalog.ErrSignOutsideLocation, spec.Forbidden},
		{"ErrVending", catalog.ErrVending, spec.ServiceUnavailable},
		// Precedence and errors from outside package catalog.
		{"commit failed because the table was dropped", fmt.Errorf("%w: %w: db.t was dropped", catalog.ErrCommitFailed, catalog.ErrNoSuchTable), spec.NoSuchTable},
		{"commit state unknown over a store error", fmt.Errorf("%w: %w", catalog.ErrCommitStateUnknown, errors.New("disk full")), spec.CommitStateUnknown},
		{"iceberg-go invalid argument", fmt.Errorf("apply update: %w", iceberg.ErrInvalidArgument), spec.InvalidArgument},
		{"catalog.Errorf message", catalog.Errorf(catalog.ErrNoSuchTable, "Table does not exist: db.t"), spec.NoSuchTable},
		{"unexpected error", errors.New("boom"), spec.ServerError},
		// Corrupt JSON the server itself stored is its fault, not the client's.
		{"corrupt stored JSON", fmt.Errorf("bolt: corrupt namespace db: %w", json.Unmarshal([]byte("{"), &struct{}{})), spec.ServerError},
		{"mistyped stored JSON", fmt.Errorf("bolt: corrupt namespace db: %w", json.Unmarshal([]byte(`{"a":1}`), &map[string]string{})), spec.ServerError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err
			if strings.HasPrefix(tt.name, "Err") {
				err = fmt.Errorf("load namespace db: %w", tt.err)
			}
			rsp := serveError(t, err)
			em := requireErrorModel(t, rsp, tt.want.Status)
			assert.Equal(t, tt.want.Type, em.Type)
			if tt.want == spec.ServerError {
				assert.NotContains(t, em.Message, tt.err.Error(), "an unexpected error's text stays in the log")
				assert.Contains(t, em.Message, "request id "+rsp.Header.Get("X-Request-Id"))
			} else {
				assert.Contains(t, em.Message, tt.err.Error(), "the message carries the cause")
			}
		})
	}

	t.Run("every sentinel is covered", func(t *testing.T) {
		covered := map[string]bool{}
		for _, tt := range tests {
			covered[tt.name] = true
		}
		for _, name := range sentinelNames(t, "../catalog/errors.go") {
			assert.True(t, covered[name], "catalog.%s has no case in TestErrorMapping", name)
		}
	})
}

// sentinelNames returns the names of the package-level Err* variables
// declared in the Go file at path.
func sentinelNames(t *testing.T, path string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	require.NoError(t, err)
	var names []string
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.VAR {
			continue
		}
		for _, spec := range gd.Specs {
			for _, n := range spec.(*ast.ValueSpec).Names {
				if strings.HasPrefix(n.Name, "Err") {
					names = append(names, n.Name)
				}
			}
		}
	}
	require.NotEmpty(t, names)
	return names
}

func TestExceptionsHaveErrorStatuses(t *testing.T) {
	types := map[string]bool{}
	for _, ex := range spec.Exceptions {
		t.Run(ex.Type, func(t *testing.T) {
			assert.GreaterOrEqual(t, ex.Status, 400)
			assert.LessOrEqual(t, ex.Status, 599)
			assert.True(t, strings.HasSuffix(ex.Type, "Exception"), "type %q", ex.Type)
			assert.NotEmpty(t, ex.Meaning)
			assert.False(t, types[ex.Type], "type %q listed twice", ex.Type)
			types[ex.Type] = true
			rsp := ex.Response("msg")
			assert.Equal(t, spec.ErrorModel{Message: "msg", Type: ex.Type, Code: ex.Status}, rsp.Error)
		})
	}
	// Every Exception declared in spec/errors.go is listed in Exceptions.
	f, err := parser.ParseFile(token.NewFileSet(), "../spec/errors.go", nil, 0)
	require.NoError(t, err)
	declared := 0
	ast.Inspect(f, func(n ast.Node) bool {
		if cl, ok := n.(*ast.CompositeLit); ok {
			if id, ok := cl.Type.(*ast.Ident); ok && id.Name == "Exception" {
				declared++
			}
		}
		return true
	})
	assert.Equal(t, declared, len(spec.Exceptions), "spec.Exceptions must list every declared Exception")
}
