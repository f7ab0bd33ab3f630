package server_test

import (
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
)

// filesUnder lists the regular files below a file:// location.
func filesUnder(t *testing.T, location string) []string {
	t.Helper()
	u, err := url.Parse(location)
	require.NoError(t, err)
	var files []string
	err = filepath.WalkDir(u.Path, func(p string, d fs.DirEntry, err error) error {
		if os.IsNotExist(err) {
			return fs.SkipDir
		}
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	require.NoError(t, err)
	return files
}

// Regression: pyiceberg sends purgeRequested=True (capital T); Tarn only
// recognised "true", so pyiceberg's purge_table dropped the table and left
// every data, manifest and metadata file behind.
func TestDropTablePurge(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		query     string
		wantFiles bool
	}{
		{"?purgeRequested=True", false},
		{"?purgeRequested=true", false},
		{"?purgeRequested=false", true},
		{"", true},
	} {
		t.Run("query "+tt.query, func(t *testing.T) {
			e := newEnv(t)
			ns := e.namespace(t, "p")
			tbl := e.createTable(t, ns, "t")
			tbl = appendRows(t, tbl, 1, 2, 3)
			appendRows(t, tbl, 4, 5)
			before := filesUnder(t, tbl.Location())
			// 3 metadata files, 2 manifest lists, 2 manifests, 2 data files.
			require.Len(t, before, 9, "files: %v", before)

			rsp := e.do(t, http.MethodDelete, tablePath(ns, "t")+tt.query, nil)
			require.Equal(t, http.StatusNoContent, rsp.Status, "body: %s", rsp.Body)
			exists, err := e.cat.CheckTableExists(t.Context(), tableIdent(ns, "t"))
			require.NoError(t, err)
			require.False(t, exists)
			if tt.wantFiles {
				require.ElementsMatch(t, before, filesUnder(t, tbl.Location()))
				return
			}
			require.Empty(t, filesUnder(t, tbl.Location()))
			u, err := url.Parse(tbl.Location())
			require.NoError(t, err)
			require.NoDirExists(t, u.Path, "the table directory is removed once empty")
		})
	}
	t.Run("bad value", func(t *testing.T) {
		e := newEnv(t)
		ns := e.namespace(t, "p")
		e.createTable(t, ns, "t")
		rsp := e.do(t, http.MethodDelete, tablePath(ns, "t")+"?purgeRequested=maybe", nil)
		requireBadRequest(t, rsp)
		exists, err := e.cat.CheckTableExists(t.Context(), tableIdent(ns, "t"))
		require.NoError(t, err)
		require.True(t, exists)
	})
}

// registerLegacyCopy records table copy in ns on metadataLocation straight
// in the store, without Locations, as a catalog written before Tarn
// recorded them could hold it (registering a copy over REST is refused
// now: TestRegisterCopyOfLiveTableRefused).
func registerLegacyCopy(t *testing.T, e *env, ns table.Identifier, metadataLocation string) {
	t.Helper()
	require.NoError(t, e.srv.Store.CommitPointers(t.Context(), []catalog.PointerChange{{
		Ident: catalog.Ident{Namespace: catalog.Namespace(ns), Name: "copy"}, Kind: catalog.KindTable, MetadataLocation: metadataLocation,
	}}))
}

// TestRegisterCopyOfLiveTableRefused: registering a second table on a
// live table's metadata file is refused (400), for root too, and changes
// nothing; once the original is dropped (its files kept), the same
// registration adopts the files.
func TestRegisterCopyOfLiveTableRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.namespace(t, "p")
	tbl := appendRows(t, e.createTable(t, ns, "orders"), 1, 2, 3)
	reg := map[string]string{"name": "copy", "metadata-location": tbl.MetadataLocation()}
	rsp := e.do(t, http.MethodPost, prefixPath("/namespaces/p/register"), reg)
	em := requireBadRequest(t, rsp)
	require.Contains(t, em.Message, "overlaps the files of another table or view")
	exists, err := e.cat.CheckTableExists(t.Context(), tableIdent(ns, "copy"))
	require.NoError(t, err)
	require.False(t, exists)

	rsp = e.do(t, http.MethodDelete, tablePath(ns, "orders"), nil)
	require.Equal(t, http.StatusNoContent, rsp.Status, "body: %s", rsp.Body)
	rsp = e.do(t, http.MethodPost, prefixPath("/namespaces/p/register"), reg)
	require.Equal(t, http.StatusOK, rsp.Status, "body: %s", rsp.Body)
	count, _ := scanCountAndSum(t, e.load(t, tableIdent(ns, "copy")))
	require.EqualValues(t, 3, count)
}

// Regression: registering a second table on an existing table's metadata
// file and purging that copy deleted the original's data, manifests and
// metadata, leaving the original pointing at a missing metadata file.
// Such a copy can no longer be registered, but a catalog may hold one
// from before: its purge still keeps the shared files.
func TestPurgeOfRegisteredCopyKeepsSharedFiles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.namespace(t, "p")
	tbl := e.createTable(t, ns, "orders")
	tbl = appendRows(t, tbl, 1, 2, 3)
	before := filesUnder(t, tbl.Location())

	registerLegacyCopy(t, e, ns, tbl.MetadataLocation())
	rsp := e.do(t, http.MethodDelete, tablePath(ns, "copy")+"?purgeRequested=true", nil)
	require.Equal(t, http.StatusNoContent, rsp.Status, "body: %s", rsp.Body)

	require.ElementsMatch(t, before, filesUnder(t, tbl.Location()), "the original's files stay")
	count, _ := scanCountAndSum(t, e.load(t, tableIdent(ns, "orders")))
	require.EqualValues(t, 3, count)

	// Once the original is the only table there, its purge deletes its files.
	rsp = e.do(t, http.MethodDelete, tablePath(ns, "orders")+"?purgeRequested=true", nil)
	require.Equal(t, http.StatusNoContent, rsp.Status, "body: %s", rsp.Body)
	require.Empty(t, filesUnder(t, tbl.Location()))
}

// Regression: with write.metadata.delete-after-commit.enabled, commits to a
// table registered from another table's metadata file deleted that file once
// it left the copy's metadata log, and the original then answered 404.
// (Such a copy is one a catalog may hold from before registering copies
// was refused.)
func TestDeleteAfterCommitKeepsSharedMetadata(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.namespace(t, "p")
	props := `{"write.metadata.delete-after-commit.enabled":"true","write.metadata.previous-versions-max":"1"}`
	rsp := e.do(t, http.MethodPost, prefixPath("/namespaces/p/tables"), `{"name":"orig","schema":{"type":"struct","fields":[{"id":1,"name":"id","required":false,"type":"long"}]},"properties":`+props+`}`)
	require.Equal(t, http.StatusOK, rsp.Status, "body: %s", rsp.Body)
	orig := e.load(t, tableIdent(ns, "orig"))

	registerLegacyCopy(t, e, ns, orig.MetadataLocation())
	for i := range 3 {
		rsp = e.do(t, http.MethodPost, tablePath(ns, "copy"), `{"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"`+strings.Repeat("v", i+1)+`"}}]}`)
		require.Equal(t, http.StatusOK, rsp.Status, "body: %s", rsp.Body)
	}
	rsp = e.do(t, http.MethodGet, tablePath(ns, "orig"), nil)
	require.Equal(t, http.StatusOK, rsp.Status, "the original still loads: %s", rsp.Body)
}

// A purge deletes the table's files in every directory it recorded: under
// write.data.path (outside its location) and under the location it moved
// away from with set-location, which it alone may use; before, both were
// left behind.
func TestPurgeDeletesDataPathAndOldLocation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.namespace(t, "p")
	dataDir := e.srv.Warehouse.Location + "/p/d-data"
	tbl := e.createTable(t, ns, "d", icecat.WithProperties(iceberg.Properties{"write.data.path": dataDir}))
	tbl = appendRows(t, tbl, 1, 2)
	require.NotEmpty(t, filesUnder(t, dataDir), "data files under write.data.path")
	oldLoc := tbl.Location()
	rsp := e.do(t, http.MethodPost, tablePath(ns, "d"), `{"requirements":[],"updates":[{"action":"set-location","location":"`+oldLoc+`-moved"},{"action":"remove-properties","removals":["write.data.path"]}]}`)
	require.Equal(t, http.StatusOK, rsp.Status, "body: %s", rsp.Body)
	appendRows(t, e.load(t, tableIdent(ns, "d")), 3)
	require.NotEmpty(t, filesUnder(t, oldLoc+"-moved"))

	rsp = e.do(t, http.MethodDelete, tablePath(ns, "d")+"?purgeRequested=true", nil)
	require.Equal(t, http.StatusNoContent, rsp.Status, "body: %s", rsp.Body)
	require.Empty(t, filesUnder(t, dataDir))
	require.Empty(t, filesUnder(t, oldLoc))
	require.Empty(t, filesUnder(t, oldLoc+"-moved"))
}

// Regression: a table whose location holds a space (or any character a
// URI percent-encodes: "é") kept every file on purge. iceberg-go writes
// the table's metadata, manifest and data file locations percent-encoded
// (file:///wh/p/my%20dir/...), while the location and the directories
// Tarn recorded keep the raw form (file:///wh/p/my dir); purge compared
// the two as plain strings, found no file inside the table and deleted
// nothing.
func TestPurgeLocationWithSpace(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"my dir", "données"} {
		t.Run(dir, func(t *testing.T) {
			e := newEnv(t)
			ns := e.namespace(t, "p")
			loc := e.srv.Warehouse.Location + "/p/" + dir + "/t"
			tbl := e.createTable(t, ns, "t", icecat.WithLocation(loc))
			require.Equal(t, loc, tbl.Location())
			tbl = appendRows(t, tbl, 1, 2, 3)
			appendRows(t, tbl, 4)
			before := filesUnder(t, loc)
			// 3 metadata files, 2 manifest lists, 2 manifests, 2 data files.
			require.Len(t, before, 9, "files: %v", before)

			rsp := e.do(t, http.MethodDelete, tablePath(ns, "t")+"?purgeRequested=true", nil)
			require.Equal(t, http.StatusNoContent, rsp.Status, "body: %s", rsp.Body)
			require.Empty(t, filesUnder(t, loc))
			require.NoDirExists(t, strings.TrimPrefix(loc, "file://"), "the table directory is removed once empty")
		})
	}
}
