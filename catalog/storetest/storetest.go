// Package storetest is the conformance suite every catalog.Store backend
// runs against itself (as iceberg-go's catalog/catalogtest does for
// catalogs): each backend's tests call Run with a constructor of fresh,
// empty stores. The suite checks the contracts written in the doc comments
// of catalog/store.go and, when the store also implements it,
// catalog.IdempotencyStore (catalog/idempotency.go) and
// catalog.RecordStore (catalog/records.go).
package storetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
)

// Run runs the suite. newStore must return a new, empty store on every
// call and release it when t ends (t.Cleanup); every subtest gets its own.
func Run(t *testing.T, newStore func(t *testing.T) catalog.Store) {
	t.Run("Namespaces", func(t *testing.T) { testNamespaces(t, newStore) })
	t.Run("ListNamespaces", func(t *testing.T) { testListNamespaces(t, newStore) })
	t.Run("UpdateNamespaceProperties", func(t *testing.T) { testUpdateNamespaceProperties(t, newStore) })
	t.Run("DropNamespace", func(t *testing.T) { testDropNamespace(t, newStore) })
	t.Run("CreatePointer", func(t *testing.T) { testCreatePointer(t, newStore) })
	t.Run("CompareAndSwap", func(t *testing.T) { testCompareAndSwap(t, newStore) })
	t.Run("CommitIsAtomic", func(t *testing.T) { testCommitIsAtomic(t, newStore) })
	t.Run("LoadPointer", func(t *testing.T) { testLoadPointer(t, newStore) })
	t.Run("ListPointers", func(t *testing.T) { testListPointers(t, newStore) })
	t.Run("DropPointer", func(t *testing.T) { testDropPointer(t, newStore) })
	t.Run("RenamePointer", func(t *testing.T) { testRenamePointer(t, newStore) })
	t.Run("Locations", func(t *testing.T) { testLocations(t, newStore) })
	t.Run("ListKeep", func(t *testing.T) { testListKeep(t, newStore) })
	t.Run("ConcurrentCompareAndSwap", func(t *testing.T) { testConcurrentCAS(t, newStore) })
	t.Run("Idempotency", func(t *testing.T) { testIdempotency(t, newStore) })
	t.Run("Records", func(t *testing.T) { testRecords(t, newStore) })
}

// ns builds a namespace from its levels.
func ns(levels ...string) catalog.Namespace { return catalog.Namespace(levels) }

// id builds an identifier from namespace levels and a name (the last argument).
func id(parts ...string) catalog.Ident {
	return catalog.Ident{Namespace: catalog.Namespace(parts[:len(parts)-1]), Name: parts[len(parts)-1]}
}

func loc(s string) string { return "file:///warehouse/" + s + ".metadata.json" }

// createNamespaces creates each namespace, failing the test on error.
func createNamespaces(t *testing.T, s catalog.Store, nss ...catalog.Namespace) {
	t.Helper()
	for _, n := range nss {
		require.NoError(t, s.CreateNamespace(t.Context(), n, nil), "create namespace %v", n)
	}
}

// create creates a pointer of kind at ident with metadata location l.
func create(t *testing.T, s catalog.Store, ident catalog.Ident, kind catalog.Kind, l string) {
	t.Helper()
	require.NoError(t, s.CommitPointers(t.Context(), []catalog.PointerChange{{Ident: ident, Kind: kind, MetadataLocation: l}}), "create %s %s", kind, ident)
}

// requirePointer asserts ident's pointer of kind is exactly want.
func requirePointer(t *testing.T, s catalog.Store, ident catalog.Ident, kind catalog.Kind, want catalog.Pointer) {
	t.Helper()
	got, err := s.LoadPointer(t.Context(), ident, kind)
	require.NoError(t, err, "load %s %s", kind, ident)
	require.Equal(t, want, got, "pointer of %s", ident)
}

// requireNoPointer asserts ident holds neither a table nor a view.
func requireNoPointer(t *testing.T, s catalog.Store, ident catalog.Ident) {
	t.Helper()
	_, err := s.LoadPointer(t.Context(), ident, catalog.KindTable)
	require.ErrorIs(t, err, catalog.ErrNoSuchTable, "table %s", ident)
	_, err = s.LoadPointer(t.Context(), ident, catalog.KindView)
	require.ErrorIs(t, err, catalog.ErrNoSuchView, "view %s", ident)
}

// listAllNamespaces lists parent's children page by page with size and
// returns the pages.
func listAllNamespaces(t *testing.T, s catalog.Store, parent catalog.Namespace, size int) [][]catalog.Namespace {
	t.Helper()
	var pages [][]catalog.Namespace
	token := ""
	for i := 0; ; i++ {
		require.Less(t, i, 100, "pagination does not end")
		got, next, err := s.ListNamespaces(t.Context(), parent, catalog.Page{Token: token, Size: size})
		require.NoError(t, err)
		if size > 0 {
			require.LessOrEqual(t, len(got), size, "page larger than Size")
		}
		pages = append(pages, got)
		if next == "" {
			return pages
		}
		token = next
	}
}

func listAllPointers(t *testing.T, s catalog.Store, n catalog.Namespace, kind catalog.Kind, size int) [][]catalog.Ident {
	t.Helper()
	var pages [][]catalog.Ident
	token := ""
	for i := 0; ; i++ {
		require.Less(t, i, 100, "pagination does not end")
		got, next, err := s.ListPointers(t.Context(), n, kind, catalog.Page{Token: token, Size: size})
		require.NoError(t, err)
		if size > 0 {
			require.LessOrEqual(t, len(got), size, "page larger than Size")
		}
		pages = append(pages, got)
		if next == "" {
			return pages
		}
		token = next
	}
}

func testNamespaces(t *testing.T, newStore func(t *testing.T) catalog.Store) {
	t.Run("create and load keeps properties", func(t *testing.T) {
		s := newStore(t)
		props := map[string]string{"owner": "alice", "location": "file:///warehouse/a", "empty": ""}
		require.NoError(t, s.CreateNamespace(t.Context(), ns("a"), props))
		got, err := s.LoadNamespace(t.Context(), ns("a"))
		require.NoError(t, err)
		assert.Equal(t, props, got)
	})
	t.Run("nil properties load as an empty map", func(t *testing.T) {
		s := newStore(t)
		require.NoError(t, s.CreateNamespace(t.Context(), ns("a"), nil))
		got, err := s.LoadNamespace(t.Context(), ns("a"))
		require.NoError(t, err)
		require.NotNil(t, got)
		assert.Empty(t, got)
	})
	t.Run("nested under an existing parent", func(t *testing.T) {
		s := newStore(t)
		createNamespaces(t, s, ns("a"), ns("a", "b"))
		require.NoError(t, s.CreateNamespace(t.Context(), ns("a", "b", "c"), map[string]string{"k": "v"}))
		got, err := s.LoadNamespace(t.Context(), ns("a", "b", "c"))
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"k": "v"}, got)
	})
	t.Run("nested with a missing parent", func(t *testing.T) {
		s := newStore(t)
		createNamespaces(t, s, ns("a"))
		err := s.CreateNamespace(t.Context(), ns("a", "x", "y"), nil)
		require.ErrorIs(t, err, catalog.ErrNoSuchNamespace)
		require.ErrorIs(t, err, catalog.ErrNotFound)
		for _, n := range []catalog.Namespace{ns("a", "x"), ns("a", "x", "y")} {
			_, err := s.LoadNamespace(t.Context(), n)
			require.ErrorIs(t, err, catalog.ErrNoSuchNamespace, "%v must not have been created", n)
		}
	})
	t.Run("duplicate", func(t *testing.T) {
		s := newStore(t)
		require.NoError(t, s.CreateNamespace(t.Context(), ns("a"), map[string]string{"v": "1"}))
		err := s.CreateNamespace(t.Context(), ns("a"), map[string]string{"v": "2"})
		require.ErrorIs(t, err, catalog.ErrNamespaceAlreadyExists)
		require.ErrorIs(t, err, catalog.ErrAlreadyExists)
		got, err := s.LoadNamespace(t.Context(), ns("a"))
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"v": "1"}, got, "a failed create must not touch the existing namespace")
	})
	t.Run("duplicate nested", func(t *testing.T) {
		s := newStore(t)
		createNamespaces(t, s, ns("a"), ns("a", "b"))
		require.ErrorIs(t, s.CreateNamespace(t.Context(), ns("a", "b"), nil), catalog.ErrNamespaceAlreadyExists)
	})
	t.Run("load missing", func(t *testing.T) {
		s := newStore(t)
		createNamespaces(t, s, ns("a"))
		for _, n := range []catalog.Namespace{ns("b"), ns("a", "b"), ns("A")} {
			_, err := s.LoadNamespace(t.Context(), n)
			require.ErrorIs(t, err, catalog.ErrNoSuchNamespace, "%v", n)
		}
	})
	t.Run("levels are not joined with dots", func(t *testing.T) {
		// A level may hold a "." ("a.b" is one level); it must not be
		// confused with the two-level namespace a, b.
		s := newStore(t)
		createNamespaces(t, s, ns("a.b"))
		_, err := s.LoadNamespace(t.Context(), ns("a", "b"))
		require.ErrorIs(t, err, catalog.ErrNoSuchNamespace)
		require.ErrorIs(t, s.CreateNamespace(t.Context(), ns("a", "b"), nil), catalog.ErrNoSuchNamespace)
		_, err = s.LoadNamespace(t.Context(), ns("a.b"))
		require.NoError(t, err)
	})
}

func testListNamespaces(t *testing.T, newStore func(t *testing.T) catalog.Store) {
	// "a0" and "ab" sort between "a"'s children and "b" in most encodings;
	// "ab"'s child must never show up as a child of "a".
	fixture := func(t *testing.T) catalog.Store {
		s := newStore(t)
		createNamespaces(t, s,
			ns("b"), ns("a"), ns("a", "d"), ns("a", "b"), ns("a", "b", "c"),
			ns("ab"), ns("ab", "x"), ns("a0"), ns("c"))
		return s
	}
	s := fixture(t)
	tests := []struct {
		name   string
		parent catalog.Namespace
		want   []catalog.Namespace
	}{
		{"top level", nil, []catalog.Namespace{ns("a"), ns("a0"), ns("ab"), ns("b"), ns("c")}},
		{"top level with empty parent", ns(), []catalog.Namespace{ns("a"), ns("a0"), ns("ab"), ns("b"), ns("c")}},
		{"children only, not grandchildren", ns("a"), []catalog.Namespace{ns("a", "b"), ns("a", "d")}},
		{"grandchildren", ns("a", "b"), []catalog.Namespace{ns("a", "b", "c")}},
		{"prefix sibling", ns("ab"), []catalog.Namespace{ns("ab", "x")}},
		{"leaf", ns("a", "b", "c"), nil},
		{"no children", ns("c"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, next, err := s.ListNamespaces(t.Context(), tt.parent, catalog.Page{})
			require.NoError(t, err)
			assert.Empty(t, next)
			if tt.want == nil {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, tt.want, got)
		})
	}
	t.Run("missing parent", func(t *testing.T) {
		for _, p := range []catalog.Namespace{ns("zz"), ns("a", "zz")} {
			_, _, err := s.ListNamespaces(t.Context(), p, catalog.Page{})
			require.ErrorIs(t, err, catalog.ErrNoSuchNamespace, "%v", p)
		}
	})
	t.Run("empty store", func(t *testing.T) {
		got, next, err := newStore(t).ListNamespaces(t.Context(), nil, catalog.Page{})
		require.NoError(t, err)
		assert.Empty(t, got)
		assert.Empty(t, next)
	})

	pageTests := []struct {
		name   string
		parent catalog.Namespace
		size   int
		want   [][]catalog.Namespace
	}{
		{"top level by 2", nil, 2, [][]catalog.Namespace{{ns("a"), ns("a0")}, {ns("ab"), ns("b")}, {ns("c")}}},
		{"top level by 1", nil, 1, [][]catalog.Namespace{{ns("a")}, {ns("a0")}, {ns("ab")}, {ns("b")}, {ns("c")}}},
		{"top level by exact count ends with no token", nil, 5, [][]catalog.Namespace{{ns("a"), ns("a0"), ns("ab"), ns("b"), ns("c")}}},
		{"top level by more than count", nil, 50, [][]catalog.Namespace{{ns("a"), ns("a0"), ns("ab"), ns("b"), ns("c")}}},
		{"size 0 returns all", nil, 0, [][]catalog.Namespace{{ns("a"), ns("a0"), ns("ab"), ns("b"), ns("c")}}},
		{"children by 1", ns("a"), 1, [][]catalog.Namespace{{ns("a", "b")}, {ns("a", "d")}}},
	}
	for _, tt := range pageTests {
		t.Run("page "+tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, listAllNamespaces(t, s, tt.parent, tt.size))
		})
	}
	t.Run("first page returns a token", func(t *testing.T) {
		got, next, err := s.ListNamespaces(t.Context(), nil, catalog.Page{Size: 3})
		require.NoError(t, err)
		assert.Equal(t, []catalog.Namespace{ns("a"), ns("a0"), ns("ab")}, got)
		require.NotEmpty(t, next)
		got, next, err = s.ListNamespaces(t.Context(), nil, catalog.Page{Token: next, Size: 3})
		require.NoError(t, err)
		assert.Equal(t, []catalog.Namespace{ns("b"), ns("c")}, got)
		assert.Empty(t, next, "the last page has no token")
	})
	t.Run("bad token", func(t *testing.T) {
		for _, tok := range []string{"!!!not a token!!!", "\x00\xff", "garbage"} {
			_, _, err := s.ListNamespaces(t.Context(), nil, catalog.Page{Token: tok, Size: 2})
			require.ErrorIs(t, err, catalog.ErrInvalidArgument, "token %q", tok)
		}
	})
	t.Run("token of another listing", func(t *testing.T) {
		create(t, s, id("a", "t1"), catalog.KindTable, loc("t1"))
		create(t, s, id("a", "t2"), catalog.KindTable, loc("t2"))
		_, tok, err := s.ListPointers(t.Context(), ns("a"), catalog.KindTable, catalog.Page{Size: 1})
		require.NoError(t, err)
		require.NotEmpty(t, tok)
		_, _, err = s.ListNamespaces(t.Context(), nil, catalog.Page{Token: tok, Size: 2})
		require.ErrorIs(t, err, catalog.ErrInvalidArgument)
	})
}

func testUpdateNamespaceProperties(t *testing.T, newStore func(t *testing.T) catalog.Store) {
	tests := []struct {
		name        string
		removals    []string
		updates     map[string]string
		wantRemoved []string
		wantMissing []string
		wantProps   map[string]string
	}{
		{
			name:      "set only",
			updates:   map[string]string{"c": "3", "a": "10"},
			wantProps: map[string]string{"a": "10", "b": "2", "c": "3"},
		},
		{
			name:        "remove present and missing",
			removals:    []string{"a", "zz", "b", "yy"},
			wantRemoved: []string{"a", "b"},
			wantMissing: []string{"zz", "yy"},
			wantProps:   map[string]string{},
		},
		{
			name:        "remove and set different keys",
			removals:    []string{"a", "nope"},
			updates:     map[string]string{"b": "20", "c": "3"},
			wantRemoved: []string{"a"},
			wantMissing: []string{"nope"},
			wantProps:   map[string]string{"b": "20", "c": "3"},
		},
		{
			name:      "nothing",
			wantProps: map[string]string{"a": "1", "b": "2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			require.NoError(t, s.CreateNamespace(t.Context(), ns("n"), map[string]string{"a": "1", "b": "2"}))
			removed, missing, err := s.UpdateNamespaceProperties(t.Context(), ns("n"), tt.removals, tt.updates)
			require.NoError(t, err)
			assert.ElementsMatch(t, tt.wantRemoved, removed, "removed")
			assert.ElementsMatch(t, tt.wantMissing, missing, "missing")
			got, err := s.LoadNamespace(t.Context(), ns("n"))
			require.NoError(t, err)
			assert.Equal(t, tt.wantProps, got)
		})
	}
	t.Run("missing namespace", func(t *testing.T) {
		s := newStore(t)
		_, _, err := s.UpdateNamespaceProperties(t.Context(), ns("n"), []string{"a"}, map[string]string{"b": "1"})
		require.ErrorIs(t, err, catalog.ErrNoSuchNamespace)
		_, err = s.LoadNamespace(t.Context(), ns("n"))
		require.ErrorIs(t, err, catalog.ErrNoSuchNamespace, "an update must not create the namespace")
	})
	t.Run("past the property limits", func(t *testing.T) {
		// The result is checked in the update's own transaction
		// (catalog.CheckNamespaceProperties), so that two updates each
		// within the limits cannot pass them together.
		s := newStore(t)
		half := strings.Repeat("v", catalog.MaxPropertyValueBytes)
		require.NoError(t, s.CreateNamespace(t.Context(), ns("n"), map[string]string{"a": half}))
		_, _, err := s.UpdateNamespaceProperties(t.Context(), ns("n"), nil, map[string]string{"b": half})
		require.ErrorIs(t, err, catalog.ErrLimitExceeded)
		got, err := s.LoadNamespace(t.Context(), ns("n"))
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"a": half}, got, "nothing applied")
		_, _, err = s.UpdateNamespaceProperties(t.Context(), ns("n"), []string{"a"}, map[string]string{"b": half})
		require.NoError(t, err, "removing one as the other is set stays within the limits")
	})
	t.Run("only the named namespace changes", func(t *testing.T) {
		s := newStore(t)
		require.NoError(t, s.CreateNamespace(t.Context(), ns("n"), map[string]string{"a": "1"}))
		require.NoError(t, s.CreateNamespace(t.Context(), ns("n", "c"), map[string]string{"a": "1"}))
		_, _, err := s.UpdateNamespaceProperties(t.Context(), ns("n", "c"), []string{"a"}, map[string]string{"x": "y"})
		require.NoError(t, err)
		got, err := s.LoadNamespace(t.Context(), ns("n"))
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"a": "1"}, got)
	})
}

func testDropNamespace(t *testing.T, newStore func(t *testing.T) catalog.Store) {
	t.Run("empty", func(t *testing.T) {
		s := newStore(t)
		createNamespaces(t, s, ns("a"), ns("b"))
		require.NoError(t, s.DropNamespace(t.Context(), ns("a")))
		_, err := s.LoadNamespace(t.Context(), ns("a"))
		require.ErrorIs(t, err, catalog.ErrNoSuchNamespace)
		got, _, err := s.ListNamespaces(t.Context(), nil, catalog.Page{})
		require.NoError(t, err)
		assert.Equal(t, []catalog.Namespace{ns("b")}, got)
		require.ErrorIs(t, s.DropNamespace(t.Context(), ns("a")), catalog.ErrNoSuchNamespace, "drop twice")
		require.NoError(t, s.CreateNamespace(t.Context(), ns("a"), nil), "re-create after drop")
	})
	t.Run("missing", func(t *testing.T) {
		s := newStore(t)
		createNamespaces(t, s, ns("a"))
		require.ErrorIs(t, s.DropNamespace(t.Context(), ns("zz")), catalog.ErrNoSuchNamespace)
		require.ErrorIs(t, s.DropNamespace(t.Context(), ns("a", "zz")), catalog.ErrNoSuchNamespace)
	})
	t.Run("nested leaf", func(t *testing.T) {
		s := newStore(t)
		createNamespaces(t, s, ns("a"), ns("a", "b"))
		require.NoError(t, s.DropNamespace(t.Context(), ns("a", "b")))
		got, _, err := s.ListNamespaces(t.Context(), ns("a"), catalog.Page{})
		require.NoError(t, err)
		assert.Empty(t, got)
		require.NoError(t, s.DropNamespace(t.Context(), ns("a")), "a is empty once its child is gone")
	})

	nonEmpty := []struct {
		name  string
		fill  func(t *testing.T, s catalog.Store)
		empty func(t *testing.T, s catalog.Store)
	}{
		{
			name: "child namespace",
			fill: func(t *testing.T, s catalog.Store) { createNamespaces(t, s, ns("a", "child")) },
			empty: func(t *testing.T, s catalog.Store) {
				require.NoError(t, s.DropNamespace(t.Context(), ns("a", "child")))
			},
		},
		{
			name: "table",
			fill: func(t *testing.T, s catalog.Store) { create(t, s, id("a", "t"), catalog.KindTable, loc("t")) },
			empty: func(t *testing.T, s catalog.Store) {
				_, err := s.DropPointer(t.Context(), id("a", "t"), catalog.KindTable)
				require.NoError(t, err)
			},
		},
		{
			name: "view",
			fill: func(t *testing.T, s catalog.Store) { create(t, s, id("a", "v"), catalog.KindView, loc("v")) },
			empty: func(t *testing.T, s catalog.Store) {
				_, err := s.DropPointer(t.Context(), id("a", "v"), catalog.KindView)
				require.NoError(t, err)
			},
		},
		{
			name: "table renamed in",
			fill: func(t *testing.T, s catalog.Store) {
				create(t, s, id("b", "t"), catalog.KindTable, loc("t"))
				require.NoError(t, s.RenamePointer(t.Context(), id("b", "t"), id("a", "t"), catalog.KindTable))
			},
			empty: func(t *testing.T, s catalog.Store) {
				require.NoError(t, s.RenamePointer(t.Context(), id("a", "t"), id("b", "t"), catalog.KindTable))
			},
		},
	}
	for _, tt := range nonEmpty {
		t.Run("not empty: "+tt.name, func(t *testing.T) {
			s := newStore(t)
			createNamespaces(t, s, ns("a"), ns("b"))
			tt.fill(t, s)
			err := s.DropNamespace(t.Context(), ns("a"))
			require.ErrorIs(t, err, catalog.ErrNamespaceNotEmpty)
			require.ErrorIs(t, err, catalog.ErrConflict)
			_, err = s.LoadNamespace(t.Context(), ns("a"))
			require.NoError(t, err, "a refused drop must keep the namespace")
			tt.empty(t, s)
			require.NoError(t, s.DropNamespace(t.Context(), ns("a")))
		})
	}
	t.Run("contents of a prefix sibling do not count", func(t *testing.T) {
		// "ab" shares a's first byte; its table and child namespace must
		// not make "a" look non-empty.
		s := newStore(t)
		createNamespaces(t, s, ns("a"), ns("ab"), ns("ab", "x"), ns("a0"))
		create(t, s, id("ab", "t"), catalog.KindTable, loc("t"))
		create(t, s, id("a0", "v"), catalog.KindView, loc("v"))
		require.NoError(t, s.DropNamespace(t.Context(), ns("a")))
	})
	t.Run("contents of a grandchild block its parent", func(t *testing.T) {
		s := newStore(t)
		createNamespaces(t, s, ns("a"), ns("a", "b"))
		create(t, s, id("a", "b", "t"), catalog.KindTable, loc("t"))
		require.ErrorIs(t, s.DropNamespace(t.Context(), ns("a")), catalog.ErrNamespaceNotEmpty)
		require.ErrorIs(t, s.DropNamespace(t.Context(), ns("a", "b")), catalog.ErrNamespaceNotEmpty)
	})
}

func testCreatePointer(t *testing.T, newStore func(t *testing.T) catalog.Store) {
	for _, kind := range []catalog.Kind{catalog.KindTable, catalog.KindView} {
		t.Run(kind.String(), func(t *testing.T) {
			s := newStore(t)
			createNamespaces(t, s, ns("a"), ns("a", "b"))
			create(t, s, id("a", "x"), kind, loc("x"))
			create(t, s, id("a", "b", "x"), kind, loc("abx"))
			requirePointer(t, s, id("a", "x"), kind, catalog.Pointer{Kind: kind, MetadataLocation: loc("x"), Version: 1})
			requirePointer(t, s, id("a", "b", "x"), kind, catalog.Pointer{Kind: kind, MetadataLocation: loc("abx"), Version: 1})
		})
	}

	dup := []struct {
		name     string
		existing catalog.Kind
		create   catalog.Kind
		want     error
	}{
		{"table over table", catalog.KindTable, catalog.KindTable, catalog.ErrTableAlreadyExists},
		{"view over view", catalog.KindView, catalog.KindView, catalog.ErrViewAlreadyExists},
		// Tables and views share one identifier space; the error names
		// what holds the identifier, as the Catalog's own check does.
		{"view over table", catalog.KindTable, catalog.KindView, catalog.ErrTableAlreadyExists},
		{"table over view", catalog.KindView, catalog.KindTable, catalog.ErrViewAlreadyExists},
	}
	for _, tt := range dup {
		t.Run("duplicate "+tt.name, func(t *testing.T) {
			s := newStore(t)
			createNamespaces(t, s, ns("a"))
			create(t, s, id("a", "x"), tt.existing, loc("first"))
			err := s.CommitPointers(t.Context(), []catalog.PointerChange{{Ident: id("a", "x"), Kind: tt.create, MetadataLocation: loc("second")}})
			require.ErrorIs(t, err, tt.want)
			require.ErrorIs(t, err, catalog.ErrAlreadyExists)
			requirePointer(t, s, id("a", "x"), tt.existing, catalog.Pointer{Kind: tt.existing, MetadataLocation: loc("first"), Version: 1})
		})
	}

	missingNS := []struct {
		name  string
		ident catalog.Ident
	}{
		{"top level", id("zz", "t")},
		{"nested", id("a", "zz", "t")},
	}
	for _, tt := range missingNS {
		t.Run("missing namespace "+tt.name, func(t *testing.T) {
			s := newStore(t)
			createNamespaces(t, s, ns("a"))
			for _, kind := range []catalog.Kind{catalog.KindTable, catalog.KindView} {
				err := s.CommitPointers(t.Context(), []catalog.PointerChange{{Ident: tt.ident, Kind: kind, MetadataLocation: loc("t")}})
				require.ErrorIs(t, err, catalog.ErrNoSuchNamespace, "%s", kind)
			}
			requireNoPointer(t, s, tt.ident)
			_, err := s.LoadNamespace(t.Context(), tt.ident.Namespace)
			require.ErrorIs(t, err, catalog.ErrNoSuchNamespace, "a create must not create its namespace")
		})
	}
	t.Run("empty commit", func(t *testing.T) {
		s := newStore(t)
		require.NoError(t, s.CommitPointers(t.Context(), nil))
	})
}

func testCompareAndSwap(t *testing.T, newStore func(t *testing.T) catalog.Store) {
	for _, kind := range []catalog.Kind{catalog.KindTable, catalog.KindView} {
		t.Run("versions grow by one: "+kind.String(), func(t *testing.T) {
			s := newStore(t)
			createNamespaces(t, s, ns("a"))
			create(t, s, id("a", "x"), kind, loc("v1"))
			for v := int64(1); v <= 5; v++ {
				next := loc(fmt.Sprintf("v%d", v+1))
				require.NoError(t, s.CommitPointers(t.Context(), []catalog.PointerChange{{Ident: id("a", "x"), Kind: kind, ExpectedVersion: v, MetadataLocation: next}}))
				requirePointer(t, s, id("a", "x"), kind, catalog.Pointer{Kind: kind, MetadataLocation: next, Version: v + 1})
			}
		})
	}

	refused := []struct {
		name     string
		kind     catalog.Kind
		ident    catalog.Ident
		expected int64
	}{
		{"stale version", catalog.KindTable, id("a", "t"), 1},
		{"future version", catalog.KindTable, id("a", "t"), 7},
		{"negative version", catalog.KindTable, id("a", "t"), -1},
		{"stale view version", catalog.KindView, id("a", "v"), 1},
		{"table change on a view", catalog.KindTable, id("a", "v"), 2},
		{"view change on a table", catalog.KindView, id("a", "t"), 2},
		{"missing table", catalog.KindTable, id("a", "zz"), 1},
		{"missing view", catalog.KindView, id("a", "zz"), 1},
	}
	for _, tt := range refused {
		t.Run("refused: "+tt.name, func(t *testing.T) {
			s := newStore(t)
			createNamespaces(t, s, ns("a"))
			create(t, s, id("a", "t"), catalog.KindTable, loc("t1"))
			create(t, s, id("a", "v"), catalog.KindView, loc("v1"))
			// Move both to version 2 so that 1 is stale.
			require.NoError(t, s.CommitPointers(t.Context(), []catalog.PointerChange{
				{Ident: id("a", "t"), Kind: catalog.KindTable, ExpectedVersion: 1, MetadataLocation: loc("t2")},
				{Ident: id("a", "v"), Kind: catalog.KindView, ExpectedVersion: 1, MetadataLocation: loc("v2")},
			}))
			err := s.CommitPointers(t.Context(), []catalog.PointerChange{{Ident: tt.ident, Kind: tt.kind, ExpectedVersion: tt.expected, MetadataLocation: loc("new")}})
			require.ErrorIs(t, err, catalog.ErrCommitFailed)
			require.ErrorIs(t, err, catalog.ErrConflict)
			requirePointer(t, s, id("a", "t"), catalog.KindTable, catalog.Pointer{Kind: catalog.KindTable, MetadataLocation: loc("t2"), Version: 2})
			requirePointer(t, s, id("a", "v"), catalog.KindView, catalog.Pointer{Kind: catalog.KindView, MetadataLocation: loc("v2"), Version: 2})
			if tt.ident.Name == "zz" {
				requireNoPointer(t, s, tt.ident)
			}
		})
	}
	t.Run("refused after drop", func(t *testing.T) {
		s := newStore(t)
		createNamespaces(t, s, ns("a"))
		create(t, s, id("a", "t"), catalog.KindTable, loc("t1"))
		_, err := s.DropPointer(t.Context(), id("a", "t"), catalog.KindTable)
		require.NoError(t, err)
		err = s.CommitPointers(t.Context(), []catalog.PointerChange{{Ident: id("a", "t"), Kind: catalog.KindTable, ExpectedVersion: 1, MetadataLocation: loc("t2")}})
		require.ErrorIs(t, err, catalog.ErrCommitFailed)
		requireNoPointer(t, s, id("a", "t"))
	})
	t.Run("re-created pointer starts at version 1", func(t *testing.T) {
		s := newStore(t)
		createNamespaces(t, s, ns("a"))
		create(t, s, id("a", "t"), catalog.KindTable, loc("t1"))
		require.NoError(t, s.CommitPointers(t.Context(), []catalog.PointerChange{{Ident: id("a", "t"), Kind: catalog.KindTable, ExpectedVersion: 1, MetadataLocation: loc("t2")}}))
		_, err := s.DropPointer(t.Context(), id("a", "t"), catalog.KindTable)
		require.NoError(t, err)
		create(t, s, id("a", "t"), catalog.KindView, loc("v1"))
		requirePointer(t, s, id("a", "t"), catalog.KindView, catalog.Pointer{Kind: catalog.KindView, MetadataLocation: loc("v1"), Version: 1})
		// A commit planned on the dropped table's version 2 must not land
		// on the new view.
		err = s.CommitPointers(t.Context(), []catalog.PointerChange{{Ident: id("a", "t"), Kind: catalog.KindTable, ExpectedVersion: 2, MetadataLocation: loc("t3")}})
		require.ErrorIs(t, err, catalog.ErrCommitFailed)
		requirePointer(t, s, id("a", "t"), catalog.KindView, catalog.Pointer{Kind: catalog.KindView, MetadataLocation: loc("v1"), Version: 1})
	})
}

func testCommitIsAtomic(t *testing.T, newStore func(t *testing.T) catalog.Store) {
	fixture := func(t *testing.T) catalog.Store {
		s := newStore(t)
		createNamespaces(t, s, ns("a"), ns("b"))
		create(t, s, id("a", "t1"), catalog.KindTable, loc("t1"))
		create(t, s, id("b", "t2"), catalog.KindTable, loc("t2"))
		create(t, s, id("a", "v"), catalog.KindView, loc("v"))
		return s
	}
	requireUntouched := func(t *testing.T, s catalog.Store) {
		t.Helper()
		requirePointer(t, s, id("a", "t1"), catalog.KindTable, catalog.Pointer{Kind: catalog.KindTable, MetadataLocation: loc("t1"), Version: 1})
		requirePointer(t, s, id("b", "t2"), catalog.KindTable, catalog.Pointer{Kind: catalog.KindTable, MetadataLocation: loc("t2"), Version: 1})
		requirePointer(t, s, id("a", "v"), catalog.KindView, catalog.Pointer{Kind: catalog.KindView, MetadataLocation: loc("v"), Version: 1})
		requireNoPointer(t, s, id("a", "new"))
	}
	var (
		t1     = catalog.PointerChange{Ident: id("a", "t1"), Kind: catalog.KindTable, ExpectedVersion: 1, MetadataLocation: loc("t1-next")}
		t2     = catalog.PointerChange{Ident: id("b", "t2"), Kind: catalog.KindTable, ExpectedVersion: 1, MetadataLocation: loc("t2-next")}
		v      = catalog.PointerChange{Ident: id("a", "v"), Kind: catalog.KindView, ExpectedVersion: 1, MetadataLocation: loc("v-next")}
		fresh  = catalog.PointerChange{Ident: id("a", "new"), Kind: catalog.KindTable, MetadataLocation: loc("new")}
		staleA = catalog.PointerChange{Ident: id("b", "t2"), Kind: catalog.KindTable, ExpectedVersion: 3, MetadataLocation: loc("t2-next")}
		dupA   = catalog.PointerChange{Ident: id("b", "t2"), Kind: catalog.KindTable, MetadataLocation: loc("t2-dup")}
		noNS   = catalog.PointerChange{Ident: id("zz", "new"), Kind: catalog.KindTable, MetadataLocation: loc("zz")}
		// Check-only changes (no MetadataLocation) assert a version.
		checkT2      = catalog.PointerChange{Ident: id("b", "t2"), Kind: catalog.KindTable, ExpectedVersion: 1}
		staleCheckT2 = catalog.PointerChange{Ident: id("b", "t2"), Kind: catalog.KindTable, ExpectedVersion: 2}
	)
	tests := []struct {
		name    string
		changes []catalog.PointerChange
		want    error
	}{
		{"stale change last", []catalog.PointerChange{t1, v, fresh, staleA}, catalog.ErrCommitFailed},
		{"stale change first", []catalog.PointerChange{staleA, t1, v, fresh}, catalog.ErrCommitFailed},
		{"stale change in the middle", []catalog.PointerChange{t1, staleA, fresh}, catalog.ErrCommitFailed},
		{"create of a taken name", []catalog.PointerChange{t1, fresh, dupA}, catalog.ErrTableAlreadyExists},
		{"create in a missing namespace", []catalog.PointerChange{t1, fresh, noNS}, catalog.ErrNoSuchNamespace},
		{"stale check-only change", []catalog.PointerChange{t1, staleCheckT2}, catalog.ErrCommitFailed},
	}
	for _, tt := range tests {
		t.Run("none applied: "+tt.name, func(t *testing.T) {
			s := fixture(t)
			err := s.CommitPointers(t.Context(), tt.changes)
			require.ErrorIs(t, err, tt.want)
			requireUntouched(t, s)
			requireNoPointer(t, s, id("zz", "new"))
		})
	}
	t.Run("check-only change holds and writes nothing", func(t *testing.T) {
		s := fixture(t)
		require.NoError(t, s.CommitPointers(t.Context(), []catalog.PointerChange{t1, checkT2}))
		requirePointer(t, s, id("a", "t1"), catalog.KindTable, catalog.Pointer{Kind: catalog.KindTable, MetadataLocation: loc("t1-next"), Version: 2})
		requirePointer(t, s, id("b", "t2"), catalog.KindTable, catalog.Pointer{Kind: catalog.KindTable, MetadataLocation: loc("t2"), Version: 1})
	})
	t.Run("all applied", func(t *testing.T) {
		s := fixture(t)
		require.NoError(t, s.CommitPointers(t.Context(), []catalog.PointerChange{t1, t2, v, fresh}))
		requirePointer(t, s, id("a", "t1"), catalog.KindTable, catalog.Pointer{Kind: catalog.KindTable, MetadataLocation: loc("t1-next"), Version: 2})
		requirePointer(t, s, id("b", "t2"), catalog.KindTable, catalog.Pointer{Kind: catalog.KindTable, MetadataLocation: loc("t2-next"), Version: 2})
		requirePointer(t, s, id("a", "v"), catalog.KindView, catalog.Pointer{Kind: catalog.KindView, MetadataLocation: loc("v-next"), Version: 2})
		requirePointer(t, s, id("a", "new"), catalog.KindTable, catalog.Pointer{Kind: catalog.KindTable, MetadataLocation: loc("new"), Version: 1})
		// The same transaction again is now stale as a whole.
		err := s.CommitPointers(t.Context(), []catalog.PointerChange{t1, t2})
		require.ErrorIs(t, err, catalog.ErrCommitFailed)
		requirePointer(t, s, id("a", "t1"), catalog.KindTable, catalog.Pointer{Kind: catalog.KindTable, MetadataLocation: loc("t1-next"), Version: 2})
	})
}

func testLoadPointer(t *testing.T, newStore func(t *testing.T) catalog.Store) {
	s := newStore(t)
	createNamespaces(t, s, ns("a"), ns("a", "b"), ns("ab"))
	create(t, s, id("a", "t"), catalog.KindTable, loc("t"))
	create(t, s, id("a", "v"), catalog.KindView, loc("v"))
	tests := []struct {
		name  string
		ident catalog.Ident
		kind  catalog.Kind
		want  error
	}{
		{"table as table", id("a", "t"), catalog.KindTable, nil},
		{"view as view", id("a", "v"), catalog.KindView, nil},
		{"table as view", id("a", "t"), catalog.KindView, catalog.ErrNoSuchView},
		{"view as table", id("a", "v"), catalog.KindTable, catalog.ErrNoSuchTable},
		{"missing table", id("a", "zz"), catalog.KindTable, catalog.ErrNoSuchTable},
		{"missing view", id("a", "zz"), catalog.KindView, catalog.ErrNoSuchView},
		{"same name in a child namespace", id("a", "b", "t"), catalog.KindTable, catalog.ErrNoSuchTable},
		{"same name in a prefix sibling", id("ab", "t"), catalog.KindTable, catalog.ErrNoSuchTable},
		{"missing namespace", id("zz", "t"), catalog.KindTable, catalog.ErrNoSuchTable},
		{"name differs in case", id("a", "T"), catalog.KindTable, catalog.ErrNoSuchTable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.LoadPointer(t.Context(), tt.ident, tt.kind)
			if tt.want != nil {
				require.ErrorIs(t, err, tt.want)
				require.ErrorIs(t, err, catalog.ErrNotFound)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, catalog.Pointer{Kind: tt.kind, MetadataLocation: loc(tt.ident.Name), Version: 1}, got)
		})
	}
}

func testListPointers(t *testing.T, newStore func(t *testing.T) catalog.Store) {
	s := newStore(t)
	createNamespaces(t, s, ns("a"), ns("a", "b"), ns("ab"), ns("empty"))
	// Tables and views interleaved by name, and same-named entries in a
	// child namespace and a prefix sibling that must not show up in a.
	for _, n := range []string{"t3", "t1", "t5", "t2", "t4"} {
		create(t, s, id("a", n), catalog.KindTable, loc(n))
	}
	for _, n := range []string{"t1a", "t0", "u"} {
		create(t, s, id("a", n), catalog.KindView, loc(n))
	}
	create(t, s, id("a", "b", "t9"), catalog.KindTable, loc("abt9"))
	create(t, s, id("a", "b", "v9"), catalog.KindView, loc("abv9"))
	create(t, s, id("ab", "t8"), catalog.KindTable, loc("abt8"))

	tables := []catalog.Ident{id("a", "t1"), id("a", "t2"), id("a", "t3"), id("a", "t4"), id("a", "t5")}
	views := []catalog.Ident{id("a", "t0"), id("a", "t1a"), id("a", "u")}
	tests := []struct {
		name string
		ns   catalog.Namespace
		kind catalog.Kind
		size int
		want [][]catalog.Ident
	}{
		{"tables", ns("a"), catalog.KindTable, 0, [][]catalog.Ident{tables}},
		{"views", ns("a"), catalog.KindView, 0, [][]catalog.Ident{views}},
		{"tables by 2", ns("a"), catalog.KindTable, 2, [][]catalog.Ident{tables[:2], tables[2:4], tables[4:]}},
		{"tables by 1", ns("a"), catalog.KindTable, 1, [][]catalog.Ident{tables[:1], tables[1:2], tables[2:3], tables[3:4], tables[4:]}},
		{"tables by exact count", ns("a"), catalog.KindTable, 5, [][]catalog.Ident{tables}},
		{"views by 2", ns("a"), catalog.KindView, 2, [][]catalog.Ident{views[:2], views[2:]}},
		{"nested namespace", ns("a", "b"), catalog.KindTable, 0, [][]catalog.Ident{{id("a", "b", "t9")}}},
		{"nested namespace views", ns("a", "b"), catalog.KindView, 0, [][]catalog.Ident{{id("a", "b", "v9")}}},
		{"prefix sibling", ns("ab"), catalog.KindTable, 0, [][]catalog.Ident{{id("ab", "t8")}}},
		{"no views", ns("ab"), catalog.KindView, 0, [][]catalog.Ident{nil}},
		{"empty namespace", ns("empty"), catalog.KindTable, 3, [][]catalog.Ident{nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := listAllPointers(t, s, tt.ns, tt.kind, tt.size)
			require.Len(t, got, len(tt.want), "pages: %v", got)
			for i := range tt.want {
				if tt.want[i] == nil {
					assert.Empty(t, got[i], "page %d", i)
					continue
				}
				assert.Equal(t, tt.want[i], got[i], "page %d", i)
			}
		})
	}
	t.Run("first page returns a token", func(t *testing.T) {
		got, next, err := s.ListPointers(t.Context(), ns("a"), catalog.KindTable, catalog.Page{Size: 3})
		require.NoError(t, err)
		assert.Equal(t, tables[:3], got)
		require.NotEmpty(t, next)
		got, next, err = s.ListPointers(t.Context(), ns("a"), catalog.KindTable, catalog.Page{Token: next, Size: 3})
		require.NoError(t, err)
		assert.Equal(t, tables[3:], got)
		assert.Empty(t, next)
	})
	t.Run("missing namespace", func(t *testing.T) {
		for _, n := range []catalog.Namespace{ns("zz"), ns("a", "zz")} {
			for _, kind := range []catalog.Kind{catalog.KindTable, catalog.KindView} {
				_, _, err := s.ListPointers(t.Context(), n, kind, catalog.Page{})
				require.ErrorIs(t, err, catalog.ErrNoSuchNamespace, "%v %s", n, kind)
			}
		}
	})
	t.Run("bad token", func(t *testing.T) {
		_, _, err := s.ListPointers(t.Context(), ns("a"), catalog.KindTable, catalog.Page{Token: "!!!not a token!!!", Size: 2})
		require.ErrorIs(t, err, catalog.ErrInvalidArgument)
	})
}

func testDropPointer(t *testing.T, newStore func(t *testing.T) catalog.Store) {
	for _, kind := range []catalog.Kind{catalog.KindTable, catalog.KindView} {
		t.Run(kind.String(), func(t *testing.T) {
			s := newStore(t)
			createNamespaces(t, s, ns("a"))
			create(t, s, id("a", "x"), kind, loc("x1"))
			create(t, s, id("a", "y"), kind, loc("y1"))
			require.NoError(t, s.CommitPointers(t.Context(), []catalog.PointerChange{{Ident: id("a", "x"), Kind: kind, ExpectedVersion: 1, MetadataLocation: loc("x2")}}))
			got, err := s.DropPointer(t.Context(), id("a", "x"), kind)
			require.NoError(t, err)
			assert.Equal(t, catalog.Pointer{Kind: kind, MetadataLocation: loc("x2"), Version: 2}, got, "drop returns the dropped pointer")
			requireNoPointer(t, s, id("a", "x"))
			_, err = s.DropPointer(t.Context(), id("a", "x"), kind)
			require.ErrorIs(t, err, kind.NotFound(), "drop twice")
			requirePointer(t, s, id("a", "y"), kind, catalog.Pointer{Kind: kind, MetadataLocation: loc("y1"), Version: 1})
			list, _, err := s.ListPointers(t.Context(), ns("a"), kind, catalog.Page{})
			require.NoError(t, err)
			assert.Equal(t, []catalog.Ident{id("a", "y")}, list)
		})
	}
	wrong := []struct {
		name string
		has  catalog.Kind
		drop catalog.Kind
		want error
	}{
		{"table dropped as view", catalog.KindTable, catalog.KindView, catalog.ErrNoSuchView},
		{"view dropped as table", catalog.KindView, catalog.KindTable, catalog.ErrNoSuchTable},
	}
	for _, tt := range wrong {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			createNamespaces(t, s, ns("a"))
			create(t, s, id("a", "x"), tt.has, loc("x"))
			_, err := s.DropPointer(t.Context(), id("a", "x"), tt.drop)
			require.ErrorIs(t, err, tt.want)
			requirePointer(t, s, id("a", "x"), tt.has, catalog.Pointer{Kind: tt.has, MetadataLocation: loc("x"), Version: 1})
		})
	}
	t.Run("missing", func(t *testing.T) {
		s := newStore(t)
		createNamespaces(t, s, ns("a"))
		_, err := s.DropPointer(t.Context(), id("a", "zz"), catalog.KindTable)
		require.ErrorIs(t, err, catalog.ErrNoSuchTable)
		_, err = s.DropPointer(t.Context(), id("zz", "zz"), catalog.KindView)
		require.ErrorIs(t, err, catalog.ErrNoSuchView)
	})
}

func testRenamePointer(t *testing.T, newStore func(t *testing.T) catalog.Store) {
	// fixture: a.t (table, version 2), a.v (view), b.other (table), b.otherv (view).
	fixture := func(t *testing.T) catalog.Store {
		s := newStore(t)
		createNamespaces(t, s, ns("a"), ns("b"), ns("b", "c"))
		create(t, s, id("a", "t"), catalog.KindTable, loc("t1"))
		require.NoError(t, s.CommitPointers(t.Context(), []catalog.PointerChange{{Ident: id("a", "t"), Kind: catalog.KindTable, ExpectedVersion: 1, MetadataLocation: loc("t2")}}))
		create(t, s, id("a", "v"), catalog.KindView, loc("v1"))
		create(t, s, id("b", "other"), catalog.KindTable, loc("other"))
		create(t, s, id("b", "otherv"), catalog.KindView, loc("otherv"))
		return s
	}
	tablePtr := catalog.Pointer{Kind: catalog.KindTable, MetadataLocation: loc("t2"), Version: 2}
	viewPtr := catalog.Pointer{Kind: catalog.KindView, MetadataLocation: loc("v1"), Version: 1}

	moves := []struct {
		name     string
		from, to catalog.Ident
		kind     catalog.Kind
		want     catalog.Pointer
	}{
		{"table in its namespace", id("a", "t"), id("a", "t-renamed"), catalog.KindTable, tablePtr},
		{"table across namespaces", id("a", "t"), id("b", "t"), catalog.KindTable, tablePtr},
		{"table into a nested namespace", id("a", "t"), id("b", "c", "moved"), catalog.KindTable, tablePtr},
		{"view across namespaces", id("a", "v"), id("b", "c", "v2"), catalog.KindView, viewPtr},
	}
	for _, tt := range moves {
		t.Run(tt.name, func(t *testing.T) {
			s := fixture(t)
			require.NoError(t, s.RenamePointer(t.Context(), tt.from, tt.to, tt.kind))
			requireNoPointer(t, s, tt.from)
			requirePointer(t, s, tt.to, tt.kind, tt.want)
			list, _, err := s.ListPointers(t.Context(), tt.to.Namespace, tt.kind, catalog.Page{})
			require.NoError(t, err)
			assert.Contains(t, list, tt.to)
			list, _, err = s.ListPointers(t.Context(), tt.from.Namespace, tt.kind, catalog.Page{})
			require.NoError(t, err)
			assert.NotContains(t, list, tt.from)
			// The version carries over, so a commit planned on it still lands.
			require.NoError(t, s.CommitPointers(t.Context(), []catalog.PointerChange{{Ident: tt.to, Kind: tt.kind, ExpectedVersion: tt.want.Version, MetadataLocation: loc("after")}}))
			requirePointer(t, s, tt.to, tt.kind, catalog.Pointer{Kind: tt.kind, MetadataLocation: loc("after"), Version: tt.want.Version + 1})
		})
	}

	refused := []struct {
		name     string
		from, to catalog.Ident
		kind     catalog.Kind
		want     error
	}{
		{"onto a table", id("a", "t"), id("b", "other"), catalog.KindTable, catalog.ErrTableAlreadyExists},
		{"table onto a view", id("a", "t"), id("b", "otherv"), catalog.KindTable, catalog.ErrViewAlreadyExists},
		{"view onto a table", id("a", "v"), id("b", "other"), catalog.KindView, catalog.ErrTableAlreadyExists},
		{"onto its sibling view", id("a", "t"), id("a", "v"), catalog.KindTable, catalog.ErrViewAlreadyExists},
		{"to a missing namespace", id("a", "t"), id("zz", "t"), catalog.KindTable, catalog.ErrNoSuchNamespace},
		{"to a missing nested namespace", id("a", "v"), id("b", "zz", "v"), catalog.KindView, catalog.ErrNoSuchNamespace},
		{"missing source", id("a", "zz"), id("b", "zz"), catalog.KindTable, catalog.ErrNoSuchTable},
		{"missing view source", id("a", "zz"), id("b", "zz"), catalog.KindView, catalog.ErrNoSuchView},
		{"view renamed as a table", id("a", "v"), id("b", "v"), catalog.KindTable, catalog.ErrNoSuchTable},
		{"table renamed as a view", id("a", "t"), id("b", "t"), catalog.KindView, catalog.ErrNoSuchView},
	}
	for _, tt := range refused {
		t.Run("refused: "+tt.name, func(t *testing.T) {
			s := fixture(t)
			err := s.RenamePointer(t.Context(), tt.from, tt.to, tt.kind)
			require.ErrorIs(t, err, tt.want)
			// Nothing moved.
			requirePointer(t, s, id("a", "t"), catalog.KindTable, tablePtr)
			requirePointer(t, s, id("a", "v"), catalog.KindView, viewPtr)
			requirePointer(t, s, id("b", "other"), catalog.KindTable, catalog.Pointer{Kind: catalog.KindTable, MetadataLocation: loc("other"), Version: 1})
			requirePointer(t, s, id("b", "otherv"), catalog.KindView, catalog.Pointer{Kind: catalog.KindView, MetadataLocation: loc("otherv"), Version: 1})
			if !errors.Is(err, catalog.ErrAlreadyExists) {
				requireNoPointer(t, s, tt.to)
			}
		})
	}
}

// testConcurrentCAS runs writers that each commit k times on one pointer,
// every time from the version they just read, retrying on ErrCommitFailed.
// With a correct compare-and-swap every success moves the version by one
// and no two writers ever succeed from the same version, so the pointer
// ends at exactly 1+writers*k and the successes' versions are 2..1+writers*k.
func testConcurrentCAS(t *testing.T, newStore func(t *testing.T) catalog.Store) {
	const writers, k = 8, 25
	s := newStore(t)
	createNamespaces(t, s, ns("a"))
	create(t, s, id("a", "t"), catalog.KindTable, loc("start"))

	var (
		mu        sync.Mutex
		landed    = map[int64]string{} // version -> location written at it
		conflicts int
	)
	ctx := t.Context()
	errc := make(chan error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := 0; i < k; {
				p, err := s.LoadPointer(ctx, id("a", "t"), catalog.KindTable)
				if err != nil {
					errc <- err
					return
				}
				l := loc(fmt.Sprintf("w%d-%d", w, i))
				err = s.CommitPointers(ctx, []catalog.PointerChange{{Ident: id("a", "t"), Kind: catalog.KindTable, ExpectedVersion: p.Version, MetadataLocation: l}})
				mu.Lock()
				switch {
				case err == nil:
					if prev, dup := landed[p.Version+1]; dup {
						mu.Unlock()
						errc <- fmt.Errorf("lost update: version %d was written by both %s and %s", p.Version+1, prev, l)
						return
					}
					landed[p.Version+1] = l
					i++
				case errors.Is(err, catalog.ErrCommitFailed):
					conflicts++
				default:
					mu.Unlock()
					errc <- err
					return
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		require.NoError(t, err)
	}
	const final = 1 + writers*k
	require.Len(t, landed, writers*k)
	for v := int64(2); v <= final; v++ {
		require.Contains(t, landed, v, "no commit landed at version %d", v)
	}
	requirePointer(t, s, id("a", "t"), catalog.KindTable, catalog.Pointer{Kind: catalog.KindTable, MetadataLocation: landed[final], Version: final})
	t.Logf("%d commits, %d conflicts retried", writers*k, conflicts)
}

func testIdempotency(t *testing.T, newStore func(t *testing.T) catalog.Store) {
	if _, ok := newStore(t).(catalog.IdempotencyStore); !ok {
		t.Skip("store does not implement catalog.IdempotencyStore")
	}
	idem := func(t *testing.T) catalog.IdempotencyStore { return newStore(t).(catalog.IdempotencyStore) }
	now := time.UnixMilli(1_700_000_000_000)
	rec := func(fp string, expires time.Time) catalog.IdempotencyRecord {
		return catalog.IdempotencyRecord{
			Fingerprint:     fp,
			Status:          200,
			ContentType:     "application/json",
			Body:            []byte(`{"namespace":["a"],"properties":{}}`),
			ExpiresAtMillis: expires.UnixMilli(),
		}
	}
	const key = "5f1ad0bc-1b5e-4ab2-9d0c-6a0f0c9a7e21"

	loads := []struct {
		name   string
		at     time.Time
		wantOK bool
	}{
		{"before expiry", now, true},
		{"a millisecond before expiry", now.Add(time.Minute - time.Millisecond), true},
		{"at expiry", now.Add(time.Minute), false},
		{"after expiry", now.Add(time.Hour), false},
	}
	for _, tt := range loads {
		t.Run("load "+tt.name, func(t *testing.T) {
			s := idem(t)
			want := rec("POST /v1/namespaces", now.Add(time.Minute))
			require.NoError(t, s.SaveIdempotencyRecord(t.Context(), key, want))
			got, ok, err := s.LoadIdempotencyRecord(t.Context(), key, tt.at)
			require.NoError(t, err)
			require.Equal(t, tt.wantOK, ok)
			if ok {
				assert.Equal(t, want, got)
			}
		})
	}
	t.Run("load missing", func(t *testing.T) {
		s := idem(t)
		require.NoError(t, s.SaveIdempotencyRecord(t.Context(), key, rec("POST /v1/namespaces", now.Add(time.Minute))))
		_, ok, err := s.LoadIdempotencyRecord(t.Context(), "another-key", now)
		require.NoError(t, err)
		assert.False(t, ok)
	})
	t.Run("empty body", func(t *testing.T) {
		s := idem(t)
		want := catalog.IdempotencyRecord{Fingerprint: "DELETE /v1/namespaces/a", Status: 204, ExpiresAtMillis: now.Add(time.Minute).UnixMilli()}
		require.NoError(t, s.SaveIdempotencyRecord(t.Context(), key, want))
		got, ok, err := s.LoadIdempotencyRecord(t.Context(), key, now)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, want.Fingerprint, got.Fingerprint)
		assert.Equal(t, 204, got.Status)
		assert.Empty(t, got.Body)
	})
	t.Run("save replaces", func(t *testing.T) {
		s := idem(t)
		require.NoError(t, s.SaveIdempotencyRecord(t.Context(), key, rec("POST /v1/namespaces", now.Add(time.Minute))))
		want := rec("DELETE /v1/namespaces/a", now.Add(time.Hour))
		want.Status, want.Body = 409, []byte(`{"error":{}}`)
		require.NoError(t, s.SaveIdempotencyRecord(t.Context(), key, want))
		got, ok, err := s.LoadIdempotencyRecord(t.Context(), key, now.Add(30*time.Minute))
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, want, got)
	})
	t.Run("expire", func(t *testing.T) {
		// Expired and live records alternate in key order, so a backend
		// that deletes while iterating must not skip neighbours.
		s := idem(t)
		const n = 40
		var live, dead []string
		for i := range n {
			k := fmt.Sprintf("key-%03d", i)
			expires := now.Add(time.Minute)
			switch i % 3 {
			case 0:
				expires = now.Add(-time.Minute)
			case 1:
				expires = now // expired at now exactly
			}
			require.NoError(t, s.SaveIdempotencyRecord(t.Context(), k, rec("POST /v1/namespaces", expires)))
			if expires.After(now) {
				live = append(live, k)
			} else {
				dead = append(dead, k)
			}
		}
		got, err := s.ExpireIdempotencyRecords(t.Context(), now)
		require.NoError(t, err)
		assert.Equal(t, len(dead), got)
		for _, k := range dead {
			// Loading at a time before its expiry tells a deleted record
			// from one merely expired.
			_, ok, err := s.LoadIdempotencyRecord(t.Context(), k, now.Add(-time.Hour))
			require.NoError(t, err)
			assert.False(t, ok, "%s should have been deleted", k)
		}
		for _, k := range live {
			_, ok, err := s.LoadIdempotencyRecord(t.Context(), k, now)
			require.NoError(t, err)
			assert.True(t, ok, "%s should have been kept", k)
		}
		got, err = s.ExpireIdempotencyRecords(t.Context(), now)
		require.NoError(t, err)
		assert.Zero(t, got, "a second pass finds nothing")
		got, err = s.ExpireIdempotencyRecords(t.Context(), now.Add(time.Hour))
		require.NoError(t, err)
		assert.Equal(t, len(live), got)
	})
}

// testLocations checks that a change setting Locations is refused, with
// nothing written, when they overlap another pointer's (equal, inside or
// containing), and that everything else leaves them alone.
func testLocations(t *testing.T, newStore func(t *testing.T) catalog.Store) {
	const wh = "s3://bucket/wh"
	setup := func(t *testing.T) catalog.Store {
		s := newStore(t)
		createNamespaces(t, s, ns("a"), ns("b"))
		require.NoError(t, s.CommitPointers(t.Context(), []catalog.PointerChange{{
			Ident: id("a", "t"), Kind: catalog.KindTable, MetadataLocation: wh + "/a/t/metadata/00000.metadata.json",
			Locations: []string{wh + "/a/t", wh + "/data/t"},
		}}))
		return s
	}
	for _, tt := range []struct {
		name    string
		kind    catalog.Kind
		locs    []string
		overlap bool
	}{
		{"same location", catalog.KindTable, []string{wh + "/a/t"}, true},
		{"inside it", catalog.KindTable, []string{wh + "/a/t/data/x"}, true},
		{"containing it", catalog.KindTable, []string{wh + "/a"}, true},
		{"a view at it", catalog.KindView, []string{wh + "/a/t"}, true},
		{"a data path inside its data path", catalog.KindTable, []string{wh + "/b/u", wh + "/data/t/x"}, true},
		{"a name prefix is not inside", catalog.KindTable, []string{wh + "/a/t2"}, false},
		{"a sibling", catalog.KindTable, []string{wh + "/b/u"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := setup(t)
			err := s.CommitPointers(t.Context(), []catalog.PointerChange{{Ident: id("b", "u"), Kind: tt.kind, MetadataLocation: loc("u"), Locations: tt.locs}})
			if !tt.overlap {
				require.NoError(t, err)
				got, err := s.LoadPointer(t.Context(), id("b", "u"), tt.kind)
				require.NoError(t, err)
				require.Equal(t, tt.locs, got.Locations)
				return
			}
			require.ErrorIs(t, err, catalog.ErrInvalidArgument)
			require.Contains(t, err.Error(), tt.locs[0])
			require.NotContains(t, err.Error(), "a.t", "the error must not name the other table")
			requireNoPointer(t, s, id("b", "u"))
		})
	}
	t.Run("a move onto another table is refused and changes nothing", func(t *testing.T) {
		s := setup(t)
		create(t, s, id("b", "u"), catalog.KindTable, loc("u"))
		err := s.CommitPointers(t.Context(), []catalog.PointerChange{{Ident: id("b", "u"), Kind: catalog.KindTable, ExpectedVersion: 1, MetadataLocation: loc("u2"), Locations: []string{wh + "/a/t/x"}}})
		require.ErrorIs(t, err, catalog.ErrInvalidArgument)
		requirePointer(t, s, id("b", "u"), catalog.KindTable, catalog.Pointer{Kind: catalog.KindTable, MetadataLocation: loc("u"), Version: 1})
	})
	t.Run("a commit without Locations keeps them, and a table may keep its own", func(t *testing.T) {
		s := setup(t)
		t1 := wh + "/a/t/metadata/00001.metadata.json"
		require.NoError(t, s.CommitPointers(t.Context(), []catalog.PointerChange{{Ident: id("a", "t"), Kind: catalog.KindTable, ExpectedVersion: 1, MetadataLocation: t1}}))
		requirePointer(t, s, id("a", "t"), catalog.KindTable, catalog.Pointer{Kind: catalog.KindTable, MetadataLocation: t1, Version: 2, Locations: []string{wh + "/a/t", wh + "/data/t"}})
		require.NoError(t, s.CommitPointers(t.Context(), []catalog.PointerChange{{Ident: id("a", "t"), Kind: catalog.KindTable, ExpectedVersion: 2, MetadataLocation: loc("t3"), Locations: []string{wh + "/a/t"}}}))
	})
	t.Run("a moved table keeps its old directories", func(t *testing.T) {
		// After a set-location the old directory still holds the files
		// of the table's snapshots: no other table may move in there,
		// and two tables may not swap locations in one transaction.
		s := setup(t)
		require.NoError(t, s.CommitPointers(t.Context(), []catalog.PointerChange{{Ident: id("a", "t"), Kind: catalog.KindTable, ExpectedVersion: 1, MetadataLocation: loc("t2"), Locations: []string{wh + "/a/t2"}}}))
		got, err := s.LoadPointer(t.Context(), id("a", "t"), catalog.KindTable)
		require.NoError(t, err)
		require.Equal(t, []string{wh + "/a/t", wh + "/a/t2", wh + "/data/t"}, got.Locations)
		err = s.CommitPointers(t.Context(), []catalog.PointerChange{{Ident: id("b", "u"), Kind: catalog.KindTable, MetadataLocation: loc("u"), Locations: []string{wh + "/a/t"}}})
		require.ErrorIs(t, err, catalog.ErrInvalidArgument)

		create(t, s, id("b", "p"), catalog.KindTable, loc("p"))
		require.NoError(t, s.CommitPointers(t.Context(), []catalog.PointerChange{{Ident: id("b", "p"), Kind: catalog.KindTable, ExpectedVersion: 1, MetadataLocation: loc("p2"), Locations: []string{wh + "/b/p"}}}))
		create(t, s, id("b", "q"), catalog.KindTable, loc("q"))
		require.NoError(t, s.CommitPointers(t.Context(), []catalog.PointerChange{{Ident: id("b", "q"), Kind: catalog.KindTable, ExpectedVersion: 1, MetadataLocation: loc("q2"), Locations: []string{wh + "/b/q"}}}))
		err = s.CommitPointers(t.Context(), []catalog.PointerChange{
			{Ident: id("b", "p"), Kind: catalog.KindTable, ExpectedVersion: 2, MetadataLocation: loc("p3"), Locations: []string{wh + "/b/q"}},
			{Ident: id("b", "q"), Kind: catalog.KindTable, ExpectedVersion: 2, MetadataLocation: loc("q3"), Locations: []string{wh + "/b/p"}},
		})
		require.ErrorIs(t, err, catalog.ErrInvalidArgument, "a swap is refused")
	})
	t.Run("two changes of one batch are checked against each other", func(t *testing.T) {
		s := setup(t)
		err := s.CommitPointers(t.Context(), []catalog.PointerChange{
			{Ident: id("b", "u"), Kind: catalog.KindTable, MetadataLocation: loc("u"), Locations: []string{wh + "/b/u"}},
			{Ident: id("b", "v"), Kind: catalog.KindTable, MetadataLocation: loc("v"), Locations: []string{wh + "/b/u/v"}},
		})
		require.ErrorIs(t, err, catalog.ErrInvalidArgument)
		requireNoPointer(t, s, id("b", "u"))
		requireNoPointer(t, s, id("b", "v"))
	})
	t.Run("a dropped table frees its location; a renamed one keeps it", func(t *testing.T) {
		s := setup(t)
		require.NoError(t, s.RenamePointer(t.Context(), id("a", "t"), id("b", "t"), catalog.KindTable))
		err := s.CommitPointers(t.Context(), []catalog.PointerChange{{Ident: id("a", "t"), Kind: catalog.KindTable, MetadataLocation: loc("t"), Locations: []string{wh + "/a/t"}}})
		require.ErrorIs(t, err, catalog.ErrInvalidArgument)
		_, err = s.DropPointer(t.Context(), id("b", "t"), catalog.KindTable)
		require.NoError(t, err)
		require.NoError(t, s.CommitPointers(t.Context(), []catalog.PointerChange{{Ident: id("a", "t"), Kind: catalog.KindTable, MetadataLocation: loc("t"), Locations: []string{wh + "/a/t"}}}))
	})
	t.Run("a pointer stored without Locations counts by its metadata's directory", func(t *testing.T) {
		s := newStore(t)
		createNamespaces(t, s, ns("a"))
		create(t, s, id("a", "old"), catalog.KindTable, wh+"/a/old/metadata/00003.metadata.json")
		err := s.CommitPointers(t.Context(), []catalog.PointerChange{{Ident: id("a", "new"), Kind: catalog.KindTable, MetadataLocation: loc("new"), Locations: []string{wh + "/a/old/sub"}}})
		require.ErrorIs(t, err, catalog.ErrInvalidArgument)
	})
}

// testListKeep: with Page.Keep a listing pages over the kept entries
// only: every page but the last holds Size of them, and no token names a
// dropped entry (a following page starts after the last kept one).
func testListKeep(t *testing.T, newStore func(t *testing.T) catalog.Store) {
	s := newStore(t)
	createNamespaces(t, s, ns("a"), ns("aa"), ns("b"), ns("c"), ns("d"))
	for _, n := range []string{"h1", "k1", "h2", "h3", "k2", "h4"} {
		create(t, s, id("b", n), catalog.KindTable, loc(n))
	}
	keepNS := func(n catalog.Namespace, _, _ string) bool { return n[0] == "b" || n[0] == "d" }
	keepT := func(_ catalog.Namespace, name, mloc string) bool { return name[0] == 'k' && mloc == loc(name) }
	var gotNS []catalog.Namespace
	var tokens []string
	page := catalog.Page{Size: 1, Keep: keepNS}
	for {
		list, next, err := s.ListNamespaces(t.Context(), nil, page)
		require.NoError(t, err)
		require.Len(t, list, 1, "every page holds a kept entry")
		gotNS = append(gotNS, list...)
		if next == "" {
			break
		}
		tokens = append(tokens, next)
		page.Token = next
	}
	require.Equal(t, []catalog.Namespace{ns("b"), ns("d")}, gotNS)
	var gotT []catalog.Ident
	page = catalog.Page{Size: 1, Keep: keepT}
	for {
		list, next, err := s.ListPointers(t.Context(), ns("b"), catalog.KindTable, page)
		require.NoError(t, err)
		gotT = append(gotT, list...)
		if next == "" {
			break
		}
		require.Len(t, list, 1)
		tokens = append(tokens, next)
		page.Token = next
	}
	require.Equal(t, []catalog.Ident{id("b", "k1"), id("b", "k2")}, gotT)
	// The first token is the one an unfiltered listing gives right after
	// b (a, aa, b): it names the kept b, not the dropped a or aa.
	_, afterB, err := s.ListNamespaces(t.Context(), nil, catalog.Page{Size: 3})
	require.NoError(t, err)
	require.Equal(t, afterB, tokens[0])
	all, _, err := s.ListNamespaces(t.Context(), nil, catalog.Page{Token: tokens[0]})
	require.NoError(t, err)
	require.Equal(t, []catalog.Namespace{ns("c"), ns("d")}, all, "the first token resumes right after b")
}

// testRecords checks catalog.RecordStore: collections are separate, put
// replaces, create keeps the first value even when many race for it, and
// empty names are the caller's error.
func testRecords(t *testing.T, newStore func(t *testing.T) catalog.Store) {
	rs, ok := newStore(t).(catalog.RecordStore)
	if !ok {
		t.Skip("store does not implement catalog.RecordStore")
	}
	ctx := t.Context()
	got, err := rs.ListRecords(ctx, "c")
	require.NoError(t, err)
	assert.Empty(t, got)
	require.NoError(t, rs.DeleteRecord(ctx, "c", "missing"), "deleting a missing record is no error")

	require.NoError(t, rs.PutRecord(ctx, "c", "k", []byte("1")))
	require.NoError(t, rs.PutRecord(ctx, "c", "k", []byte("2")))
	require.NoError(t, rs.PutRecord(ctx, "d", "k", []byte("other")))
	v, ok, err := rs.GetRecord(ctx, "c", "k")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "2", string(v), "put replaces")

	stored, created, err := rs.CreateRecord(ctx, "c", "k", []byte("3"))
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, "2", string(stored), "create keeps the existing value")
	stored, created, err = rs.CreateRecord(ctx, "c", "new", []byte("4"))
	require.NoError(t, err)
	assert.True(t, created)
	assert.Equal(t, "4", string(stored))
	got, err = rs.ListRecords(ctx, "c")
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{"k": []byte("2"), "new": []byte("4")}, got, "collections are separate")

	// Racing creates: exactly one wins and every caller gets its value.
	const n = 8
	var wg sync.WaitGroup
	results := make([]string, n)
	wins := make([]bool, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, c, err := rs.CreateRecord(ctx, "race", "key", []byte(fmt.Sprint(i)))
			assert.NoError(t, err)
			results[i], wins[i] = string(v), c
		}()
	}
	wg.Wait()
	winners := 0
	for i := range n {
		if wins[i] {
			winners++
			assert.Equal(t, fmt.Sprint(i), results[i])
		}
		assert.Equal(t, results[0], results[i], "every racer sees the winner's value")
	}
	assert.Equal(t, 1, winners)

	require.NoError(t, rs.DeleteRecord(ctx, "c", "k"))
	_, ok, err = rs.GetRecord(ctx, "c", "k")
	require.NoError(t, err)
	assert.False(t, ok)

	require.ErrorIs(t, rs.PutRecord(ctx, "c", "", nil), catalog.ErrInvalidArgument)
	_, _, err = rs.CreateRecord(ctx, "", "k", nil)
	require.ErrorIs(t, err, catalog.ErrInvalidArgument)
	_, err = rs.ListRecords(ctx, "")
	require.ErrorIs(t, err, catalog.ErrInvalidArgument)
}
