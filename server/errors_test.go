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
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/auth"
	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/catalog/bolt"
	"github.com/tarnhq/tarn/catalog/postgres"
	"github.com/tarnhq/tarn/delta"
	tarnavro "github.com/tarnhq/tarn/ingest/avro"
	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/pipeline"
	tarnpb "github.com/tarnhq/tarn/ingest/protobuf"
	"github.com/tarnhq/tarn/ingest/sink"
	"github.com/tarnhq/tarn/ingest/source"
	"github.com/tarnhq/tarn/ingest/topics"
	"github.com/tarnhq/tarn/ingest/upsert"
	"github.com/tarnhq/tarn/internal/errclass"
	"github.com/tarnhq/tarn/internal/strictjson"
	"github.com/tarnhq/tarn/maintenance"
	"github.com/tarnhq/tarn/offsets"
	"github.com/tarnhq/tarn/publish"
	"github.com/tarnhq/tarn/server"
	"github.com/tarnhq/tarn/spec"
	"github.com/tarnhq/tarn/storage"
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

// TestErrorMapping sends every exported sentinel error of the module
// (wrapped, as the packages return them) through the real handler and
// checks the status and the spec exception type of the ErrorModel: the
// exception each is meant to leave the server as, not merely some
// exception. Sentinels internal to ingest and startup (decoders, source,
// sink, pipeline, the bbolt layout) are classified by their callers
// before they can reach HTTP; one that escaped unclassified is the
// server's fault, so they are pinned to ServerErrorException.
func TestErrorMapping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string // "<package dir>.<sentinel>" for a sentinel, or a description
		err  error
		want spec.Exception
	}{
		// catalog: parent sentinels.
		{"catalog.ErrNotFound", catalog.ErrNotFound, spec.NotFound},
		{"catalog.ErrAlreadyExists", catalog.ErrAlreadyExists, spec.AlreadyExists},
		{"catalog.ErrConflict", catalog.ErrConflict, spec.CommitFailed},
		{"catalog.ErrInvalidArgument", catalog.ErrInvalidArgument, spec.InvalidArgument},
		{"catalog.ErrUnprocessable", catalog.ErrUnprocessable, spec.Unprocessable},
		{"catalog.ErrForbidden", catalog.ErrForbidden, spec.Forbidden},
		{"catalog.ErrCommitStateUnknown", catalog.ErrCommitStateUnknown, spec.CommitStateUnknown},
		{"catalog.ErrUnsupported", catalog.ErrUnsupported, spec.NotAcceptable},
		// catalog: specific sentinels.
		{"catalog.ErrNoSuchNamespace", catalog.ErrNoSuchNamespace, spec.NoSuchNamespace},
		{"catalog.ErrNoSuchTable", catalog.ErrNoSuchTable, spec.NoSuchTable},
		{"catalog.ErrNoSuchView", catalog.ErrNoSuchView, spec.NoSuchView},
		{"catalog.ErrNoSuchWarehouse", catalog.ErrNoSuchWarehouse, spec.NoSuchWarehouse},
		{"catalog.ErrMetadataNotFound", catalog.ErrMetadataNotFound, spec.NotFound},
		{"catalog.ErrNamespaceAlreadyExists", catalog.ErrNamespaceAlreadyExists, spec.AlreadyExists},
		{"catalog.ErrTableAlreadyExists", catalog.ErrTableAlreadyExists, spec.AlreadyExists},
		{"catalog.ErrViewAlreadyExists", catalog.ErrViewAlreadyExists, spec.AlreadyExists},
		{"catalog.ErrNamespaceNotEmpty", catalog.ErrNamespaceNotEmpty, spec.NamespaceNotEmpty},
		{"catalog.ErrCommitFailed", catalog.ErrCommitFailed, spec.CommitFailed},
		// Only ingest commits carry a fence; were one to surface, its
		// class (a conflict) says refresh and retry.
		{"catalog.ErrFenced", catalog.ErrFenced, spec.CommitFailed},
		{"catalog.ErrLeaseHeld", catalog.ErrLeaseHeld, spec.Conflict},
		{"catalog.ErrLeaseLost", catalog.ErrLeaseLost, spec.Conflict},
		{"catalog.ErrIdempotencyKeyReused", catalog.ErrIdempotencyKeyReused, spec.Unprocessable},
		{"catalog.ErrInvalidMetadata", catalog.ErrInvalidMetadata, spec.BadRequest},
		{"catalog.ErrLimitExceeded", catalog.ErrLimitExceeded, spec.BadRequest},
		{"catalog.ErrTableOwned", catalog.ErrTableOwned, spec.Conflict},
		{"catalog.ErrTableOwnedForbidden", catalog.ErrTableOwnedForbidden, spec.Forbidden},
		{"catalog.ErrOutsideTable", catalog.ErrOutsideTable, spec.Forbidden},
		{"catalog/bolt.ErrLayoutVersion", bolt.ErrLayoutVersion, spec.ServerError},
		{"catalog/bolt.ErrInUse", bolt.ErrInUse, spec.ServerError},
		{"catalog/postgres.ErrSchemaVersion", postgres.ErrSchemaVersion, spec.ServerError},
		// storage: its classes (the catalog's), signing and vending.
		{"storage.ErrInvalidArgument", storage.ErrInvalidArgument, spec.InvalidArgument},
		{"storage.ErrForbidden", storage.ErrForbidden, spec.Forbidden},
		{"storage.ErrSignOutsideLocation", storage.ErrSignOutsideLocation, spec.Forbidden},
		{"storage.ErrVending", storage.ErrVending, spec.ServiceUnavailable},
		// auth.
		{"auth.ErrUnauthenticated", auth.ErrUnauthenticated, spec.NotAuthorized},
		{"auth.ErrForbidden", auth.ErrForbidden, spec.Forbidden},
		{"auth.ErrNotFound", auth.ErrNotFound, spec.NotFound},
		{"auth.ErrAlreadyExists", auth.ErrAlreadyExists, spec.AlreadyExists},
		{"auth.ErrInvalidArgument", auth.ErrInvalidArgument, spec.BadRequest},
		{"auth.ErrInvalidClient", auth.ErrInvalidClient, spec.NotAuthorized},
		{"auth.ErrTokenInvalid", auth.ErrTokenInvalid, spec.NotAuthorized},
		// The management API's topics.
		{"ingest/topics.ErrInvalid", topics.ErrInvalid, spec.InvalidArgument},
		{"ingest/topics.ErrNoSuchTopic", topics.ErrNoSuchTopic, spec.NotFound},
		{"ingest/topics.ErrNoSuchKafkaTopic", topics.ErrNoSuchKafkaTopic, spec.NotFound},
		{"ingest/topics.ErrAlreadyEnabled", topics.ErrAlreadyEnabled, spec.AlreadyExists},
		{"ingest/topics.ErrTableTaken", topics.ErrTableTaken, spec.AlreadyExists},
		{"ingest/topics.ErrDLQTaken", topics.ErrDLQTaken, spec.Conflict},
		{"ingest/topics.ErrNotSuspended", topics.ErrNotSuspended, spec.Conflict},
		{"ingest/topics.ErrUpstream", topics.ErrUpstream, spec.BadGateway},
		{"ingest/topics.ErrNotConfigured", topics.ErrNotConfigured, spec.ServiceUnavailable},
		{"ingest/topics.ErrClosed", topics.ErrClosed, spec.ServiceUnavailable},
		// Maintenance.
		{"maintenance.ErrUnknownJob", maintenance.ErrUnknownJob, spec.InvalidArgument},
		{"maintenance.ErrInvalidConfig", maintenance.ErrInvalidConfig, spec.ServerError},
		// Ingest internals: classified by ingest/topics (writerSchema,
		// enableError) before they reach a handler.
		{"ingest/codec.ErrUnsupported", codec.ErrUnsupported, spec.ServerError},
		{"ingest/codec.ErrIncompatible", codec.ErrIncompatible, spec.ServerError},
		{"ingest/codec.ErrBadRecord", codec.ErrBadRecord, spec.ServerError},
		{"ingest/codec.ErrMalformed", codec.ErrMalformed, spec.ServerError},
		{"ingest/codec.ErrOutOfRange", codec.ErrOutOfRange, spec.ServerError},
		{"ingest/codec.ErrBuilderSchema", codec.ErrBuilderSchema, spec.ServerError},
		{"ingest/avro.ErrUnsupported", tarnavro.ErrUnsupported, spec.ServerError},
		{"ingest/avro.ErrIncompatible", tarnavro.ErrIncompatible, spec.ServerError},
		{"ingest/avro.ErrBadRecord", tarnavro.ErrBadRecord, spec.ServerError},
		{"ingest/avro.ErrNotRecord", tarnavro.ErrNotRecord, spec.ServerError},
		{"ingest/avro.ErrRecursive", tarnavro.ErrRecursive, spec.ServerError},
		{"ingest/avro.ErrMalformed", tarnavro.ErrMalformed, spec.ServerError},
		{"ingest/avro.ErrOutOfRange", tarnavro.ErrOutOfRange, spec.ServerError},
		{"ingest/avro.ErrBuilderSchema", tarnavro.ErrBuilderSchema, spec.ServerError},
		{"ingest/protobuf.ErrUnsupported", tarnpb.ErrUnsupported, spec.ServerError},
		{"ingest/protobuf.ErrIncompatible", tarnpb.ErrIncompatible, spec.ServerError},
		{"ingest/protobuf.ErrBadRecord", tarnpb.ErrBadRecord, spec.ServerError},
		{"ingest/protobuf.ErrRecursive", tarnpb.ErrRecursive, spec.ServerError},
		{"ingest/protobuf.ErrMalformed", tarnpb.ErrMalformed, spec.ServerError},
		{"ingest/protobuf.ErrOutOfRange", tarnpb.ErrOutOfRange, spec.ServerError},
		{"ingest/protobuf.ErrBuilderSchema", tarnpb.ErrBuilderSchema, spec.ServerError},
		{"ingest/source.ErrInvalidConfig", source.ErrInvalidConfig, spec.ServerError},
		{"ingest/source.ErrInvalidStart", source.ErrInvalidStart, spec.ServerError},
		{"ingest/source.ErrUnknownTopic", source.ErrUnknownTopic, spec.ServerError},
		{"ingest/source.ErrOffsetBeyondEnd", source.ErrOffsetBeyondEnd, spec.ServerError},
		{"ingest/source.ErrFetch", source.ErrFetch, spec.ServerError},
		{"ingest/source.ErrClosed", source.ErrClosed, spec.ServerError},
		{"ingest/sink.ErrInvalidConfig", sink.ErrInvalidConfig, spec.ServerError},
		{"ingest/sink.ErrInvalidBatch", sink.ErrInvalidBatch, spec.ServerError},
		{"offsets.ErrInvalid", offsets.ErrInvalid, spec.ServerError},
		{"ingest/sink.ErrForeignOffsets", sink.ErrForeignOffsets, spec.ServerError},
		{"ingest/sink.ErrTopicRecreated", sink.ErrTopicRecreated, spec.ServerError},
		{"offsets.ErrLost", offsets.ErrLost, spec.ServerError},
		{"ingest/sink.ErrSortedTable", sink.ErrSortedTable, spec.ServerError},
		{"ingest/sink.ErrWrittenDone", sink.ErrWrittenDone, spec.ServerError},
		{"ingest/sink.ErrStaleBatch", sink.ErrStaleBatch, spec.ServerError},
		{"ingest/sink.ErrMainMoved", sink.ErrMainMoved, spec.ServerError},
		{"ingest/upsert.ErrIndexMismatch", upsert.ErrIndexMismatch, spec.ServerError},
		{"ingest/upsert.ErrPartitioned", upsert.ErrPartitioned, spec.ServerError},
		{"ingest/pipeline.ErrInvalidConfig", pipeline.ErrInvalidConfig, spec.ServerError},
		{"ingest/pipeline.ErrTableShape", pipeline.ErrTableShape, spec.ServerError},
		{"ingest/pipeline.ErrSuspended", pipeline.ErrSuspended, spec.ServerError},
		{"ingest/pipeline.ErrRunning", pipeline.ErrRunning, spec.ServerError},
		{"ingest/pipeline.ErrNoSchema", pipeline.ErrNoSchema, spec.ServerError},
		// Invalid JSON the server did not get in a request body (request
		// bodies are wrapped as bad requests where they are decoded): a
		// stored offsets summary, an upstream key set.
		{"internal/strictjson.ErrInvalid", strictjson.ErrInvalid, spec.ServerError},
		// delta: a log Tarn cannot replay (GET .../formats reads it) or a
		// publisher's own failures are the server's, not the client's.
		{"delta.ErrLogCorrupt", delta.ErrLogCorrupt, spec.ServerError},
		{"delta.ErrVersionExists", delta.ErrVersionExists, spec.ServerError},
		{"delta.ErrDeleteFiles", delta.ErrDeleteFiles, spec.ServerError},
		{"delta.ErrInvalidConfig", delta.ErrInvalidConfig, spec.ServerError},
		// publish: a table stopped by a conflict is the catalog's 409; an
		// unknown target a 404; a bad target config never reaches a
		// request (refused at startup).
		{"publish.ErrConflict", publish.ErrConflict, spec.CommitFailed},
		{"publish.ErrNoSuchTarget", publish.ErrNoSuchTarget, spec.NotFound},
		{"publish.ErrNotDelta", publish.ErrNotDelta, spec.NotAcceptable},
		{"publish.ErrInvalidConfig", publish.ErrInvalidConfig, spec.ServerError},
		// Precedence and errors from outside the module.
		{"commit failed because the table was dropped", fmt.Errorf("%w: %w: db.t was dropped", catalog.ErrCommitFailed, catalog.ErrNoSuchTable), spec.NoSuchTable},
		{"commit state unknown over a store error", fmt.Errorf("%w: %w", catalog.ErrCommitStateUnknown, errors.New("disk full")), spec.CommitStateUnknown},
		// An error of two classes is of the first in errclass.Classes, and
		// Internal, last, never hides the class of what it wraps.
		{"commit state unknown over an internal store error", fmt.Errorf("%w: %w", catalog.ErrCommitStateUnknown, bolt.ErrInUse), spec.CommitStateUnknown},
		{"corrupt delta log over a missing file", fmt.Errorf("%w: read version 3: %w", delta.ErrLogCorrupt, catalog.ErrNotFound), spec.NotFound},
		{"internal sentinel over iceberg-go invalid argument", fmt.Errorf("%w: %w", sink.ErrInvalidBatch, iceberg.ErrInvalidArgument), spec.InvalidArgument},
		{"upstream failure over an internal error", fmt.Errorf("%w: %w", topics.ErrUpstream, strictjson.ErrInvalid), spec.BadGateway},
		{"iceberg-go invalid argument", fmt.Errorf("apply update: %w", iceberg.ErrInvalidArgument), spec.InvalidArgument},
		{"catalog.Errorf message", catalog.Errorf(catalog.ErrNoSuchTable, "Table does not exist: db.t"), spec.NoSuchTable},
		{"topic classified invalid over a decoder error", fmt.Errorf("%w: %v", topics.ErrInvalid, tarnavro.ErrRecursive), spec.InvalidArgument},
		{"unexpected error", errors.New("boom"), spec.ServerError},
		// Corrupt JSON the server itself stored is its fault, not the client's.
		{"corrupt stored JSON", fmt.Errorf("bolt: corrupt namespace db: %w", json.Unmarshal([]byte("{"), &struct{}{})), spec.ServerError},
		{"mistyped stored JSON", fmt.Errorf("bolt: corrupt namespace db: %w", json.Unmarshal([]byte(`{"a":1}`), &map[string]string{})), spec.ServerError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err
			if isSentinelName(tt.name) {
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

	// A sentinel of no class would reach a client as a ServerErrorException
	// by accident, and one whose exception is not its class's must be a
	// named override (server/errors.go), not an accident of order.
	t.Run("every sentinel wraps a class", func(t *testing.T) {
		for _, tt := range tests {
			if !isSentinelName(tt.name) {
				continue
			}
			class := errclass.Of(tt.err)
			if !assert.NotNil(t, class, "%s wraps no error class: build it with errclass.New(<class or parent sentinel>, ...)", tt.name) {
				continue
			}
			if !server.Overridden(tt.err) {
				assert.Equal(t, tt.want, server.ClassException(tt.err), "%s (class %q) is sent as %s, not its class's exception: add it to the overrides", tt.name, class, tt.want.Type)
			}
		}
	})

	t.Run("every sentinel of the module is covered", func(t *testing.T) {
		declared := moduleSentinels(t, "..")
		covered := map[string]bool{}
		for _, tt := range tests {
			covered[tt.name] = true
			if isSentinelName(tt.name) {
				assert.True(t, declared[tt.name], "%s has a case in TestErrorMapping but is not declared (renamed or removed?)", tt.name)
			}
		}
		for name := range declared {
			assert.True(t, covered[name], "%s has no case in TestErrorMapping: add it with the exception it must map to", name)
		}
	})
}

// isSentinelName reports whether a TestErrorMapping case names a
// sentinel ("<package dir>.Err...") rather than describing a case.
func isSentinelName(name string) bool {
	_, after, ok := strings.Cut(name, ".Err")
	return ok && !strings.ContainsAny(after, " ")
}

// moduleSentinels returns "<package dir>.<name>" for every exported
// package-level Err* variable declared in a non-test Go file of the module
// rooted at root (package main excluded: nothing imports it), e.g.
// "ingest/topics.ErrInvalid".
func moduleSentinels(t *testing.T, root string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			// An internal package below another package (ingest/internal/...)
			// cannot be imported here, nor can its sentinels reach a
			// handler: the packages of its subtree translate them into
			// their own (codec's classes), which are covered.
			if rel, err := filepath.Rel(root, path); err == nil && d.Name() == "internal" && filepath.Dir(rel) != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				for _, n := range spec.(*ast.ValueSpec).Names {
					if strings.HasPrefix(n.Name, "Err") && n.IsExported() {
						names[filepath.ToSlash(rel)+"."+n.Name] = true
					}
				}
			}
		}
		return nil
	})
	require.NoError(t, err)
	// The walk must have seen the packages named in the issue.
	for _, must := range []string{"catalog.ErrNotFound", "storage.ErrVending", "storage.ErrSignOutsideLocation", "auth.ErrForbidden", "ingest/topics.ErrInvalid"} {
		require.True(t, names[must], "%s not found: the walk of %s is broken", must, root)
	}
	return names
}

func TestExceptionsHaveErrorStatuses(t *testing.T) {
	t.Parallel()
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
