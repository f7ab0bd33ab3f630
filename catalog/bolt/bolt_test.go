package bolt_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bbolt "go.etcd.io/bbolt"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/catalog/bolt"
	"github.com/tarnhq/tarn/catalog/storetest"
)

func openStore(t *testing.T, dir string) *bolt.Store {
	t.Helper()
	s, err := bolt.Open(dir)
	require.NoError(t, err)
	return s
}

func TestStoreSuite(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) catalog.Store {
		s := openStore(t, t.TempDir())
		t.Cleanup(func() { assert.NoError(t, s.Close()) })
		return s
	})
}

func TestDataSurvivesReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := t.Context()
	s := openStore(t, dir)
	a := catalog.Namespace{"a"}
	ab := catalog.Namespace{"a", "b"}
	tbl := catalog.Ident{Namespace: ab, Name: "t"}
	vw := catalog.Ident{Namespace: a, Name: "v"}
	require.NoError(t, s.CreateNamespace(ctx, a, map[string]string{"owner": "alice"}))
	require.NoError(t, s.CreateNamespace(ctx, ab, nil))
	require.NoError(t, s.CommitPointers(ctx, []catalog.PointerChange{
		{Ident: tbl, Kind: catalog.KindTable, MetadataLocation: "file:///w/t/1.metadata.json"},
		{Ident: vw, Kind: catalog.KindView, MetadataLocation: "file:///w/v/1.metadata.json"},
	}))
	require.NoError(t, s.CommitPointers(ctx, []catalog.PointerChange{
		{Ident: tbl, Kind: catalog.KindTable, ExpectedVersion: 1, MetadataLocation: "file:///w/t/2.metadata.json"},
	}))
	expires := time.Now().Add(time.Hour)
	rec := catalog.IdempotencyRecord{Fingerprint: "POST /v1/namespaces", Status: 200, ContentType: "application/json", Body: []byte(`{}`), ExpiresAtMillis: expires.UnixMilli()}
	const key = "0b6b8f7e-9a59-4d0e-8a7c-1d5f3c7b2a10"
	require.NoError(t, s.SaveIdempotencyRecord(ctx, key, rec))
	require.NoError(t, s.Close())

	s = openStore(t, dir)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	props, err := s.LoadNamespace(ctx, a)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"owner": "alice"}, props)
	children, _, err := s.ListNamespaces(ctx, a, catalog.Page{})
	require.NoError(t, err)
	assert.Equal(t, []catalog.Namespace{ab}, children)
	p, err := s.LoadPointer(ctx, tbl, catalog.KindTable)
	require.NoError(t, err)
	assert.Equal(t, catalog.Pointer{Kind: catalog.KindTable, MetadataLocation: "file:///w/t/2.metadata.json", Version: 2}, p)
	p, err = s.LoadPointer(ctx, vw, catalog.KindView)
	require.NoError(t, err)
	assert.Equal(t, catalog.Pointer{Kind: catalog.KindView, MetadataLocation: "file:///w/v/1.metadata.json", Version: 1}, p)
	got, ok, err := s.LoadIdempotencyRecord(ctx, key, time.Now())
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, rec, got)
	// The version survives too, so a commit planned before the restart lands.
	require.NoError(t, s.CommitPointers(ctx, []catalog.PointerChange{
		{Ident: tbl, Kind: catalog.KindTable, ExpectedVersion: 2, MetadataLocation: "file:///w/t/3.metadata.json"},
	}))
}

// setLayoutVersion rewrites the layout version of the bbolt file in dir.
func setLayoutVersion(t *testing.T, dir, version string) {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(dir, bolt.FileName), 0o600, &bbolt.Options{Timeout: time.Second})
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("layout-version"), []byte(version))
	}))
	require.NoError(t, db.Close())
}

func TestOpenRefusesOtherLayoutVersion(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"0", "2", "10", "1.1"} {
		t.Run(version, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir)
			require.NoError(t, s.CreateNamespace(t.Context(), catalog.Namespace{"a"}, nil))
			require.NoError(t, s.Close())
			setLayoutVersion(t, dir, version)

			_, err := bolt.Open(dir)
			require.ErrorIs(t, err, bolt.ErrLayoutVersion)
			assert.Contains(t, err.Error(), `"`+version+`"`)

			// The refused Open released the file: once the version is put
			// back, it opens and the data is there.
			setLayoutVersion(t, dir, bolt.LayoutVersion)
			s = openStore(t, dir)
			t.Cleanup(func() { assert.NoError(t, s.Close()) })
			_, err = s.LoadNamespace(t.Context(), catalog.Namespace{"a"})
			require.NoError(t, err)
		})
	}
}

func TestOpenWritesLayoutVersion(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "nested", "data")
	s := openStore(t, dir)
	require.NoError(t, s.Close())
	db, err := bbolt.Open(filepath.Join(dir, bolt.FileName), 0o600, &bbolt.Options{Timeout: time.Second, ReadOnly: true})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.View(func(tx *bbolt.Tx) error {
		assert.Equal(t, bolt.LayoutVersion, string(tx.Bucket([]byte("meta")).Get([]byte("layout-version"))))
		return nil
	}))
}

func TestSecondOpenFailsInsteadOfHanging(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := openStore(t, dir)

	type result struct {
		s   *bolt.Store
		err error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		s, err := bolt.Open(dir)
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		if r.s != nil {
			_ = r.s.Close()
		}
		took := time.Since(start)
		require.ErrorIs(t, r.err, bolt.ErrInUse, "a second Open of a held file must say it is in use")
		var inUse *bolt.InUseError
		require.ErrorAs(t, r.err, &inUse)
		assert.Equal(t, filepath.Join(dir, bolt.FileName), inUse.Path)
		if runtime.GOOS == "linux" {
			assert.Equal(t, os.Getpid(), inUse.PID, "the holder's pid, from /proc/locks: this process")
			assert.Contains(t, r.err.Error(), fmt.Sprintf("(pid %d)", os.Getpid()))
		}
		assert.Less(t, took, time.Second, "in use is reported at once")
		t.Logf("second Open failed after %v: %v", took.Round(time.Millisecond), r.err)
	case <-time.After(30 * time.Second):
		t.Fatal("second Open of a held data directory hangs")
	}

	// Once the first store is closed the directory opens again.
	require.NoError(t, first.Close())
	s := openStore(t, dir)
	require.NoError(t, s.Close())
}

// TestOpenRefusesCorruptFile: a data file that is not a bbolt file is
// refused with bbolt's invalid-database error, naming the file, and left
// as it was (never reinitialised over).
func TestOpenRefusesCorruptFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, bolt.FileName)
	corrupt := []byte("this is not a bbolt file, but it is long enough to be read as one or not at all...............................................................")
	require.NoError(t, os.WriteFile(path, corrupt, 0o600))
	_, err := bolt.Open(dir)
	require.ErrorIs(t, err, bbolt.ErrInvalid)
	assert.Contains(t, err.Error(), path)
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, corrupt, after, "a refused file is not modified")
}

// A file written before the location index existed gets it built on
// Open: the overlap check then sees the pointers already stored.
func TestOpenBuildsLocationIndex(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openStore(t, dir)
	ctx := t.Context()
	require.NoError(t, s.CreateNamespace(ctx, catalog.Namespace{"a"}, nil))
	require.NoError(t, s.CommitPointers(ctx, []catalog.PointerChange{{Ident: catalog.Ident{Namespace: catalog.Namespace{"a"}, Name: "t"},
		Kind: catalog.KindTable, MetadataLocation: "s3://b/wh/a/t/metadata/0.json", Locations: []string{"s3://b/wh/a/t"}}}))
	require.NoError(t, s.Close())
	db, err := bbolt.Open(filepath.Join(dir, bolt.FileName), 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bbolt.Tx) error { return tx.DeleteBucket([]byte("locations")) }))
	require.NoError(t, db.Close())

	s = openStore(t, dir)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	err = s.CommitPointers(ctx, []catalog.PointerChange{{Ident: catalog.Ident{Namespace: catalog.Namespace{"a"}, Name: "u"},
		Kind: catalog.KindTable, MetadataLocation: "s3://b/wh/a/t/x/metadata/0.json", Locations: []string{"s3://b/wh/a/t/x"}}})
	require.ErrorIs(t, err, catalog.ErrInvalidArgument)
}
