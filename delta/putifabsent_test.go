package delta_test

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/delta"
	"github.com/tarnhq/tarn/internal/testmoto"
	"github.com/tarnhq/tarn/internal/testserver"
)

// warehouses runs f on a file:// warehouse and on an S3 one in moto
// (TARN_TEST_S3_ENDPOINT; the S3 run is skipped without it).
func warehouses(t *testing.T, f func(t *testing.T)) {
	t.Run("file", f)
	t.Run("s3", func(t *testing.T) {
		testmoto.Endpoint(t)
		t.Setenv(testserver.EnvWarehouse, "s3")
		f(t)
	})
}

// TestPutIfAbsentRace: two writers race to write the same log file (the
// same Delta version) many times; on file:// (link(2)) and on S3
// (PutObject with If-None-Match: *, which moto answers with 412 when the
// key exists) exactly one wins each race, the other gets
// ErrVersionExists, and the file holds the winner's bytes, never the
// loser's or a mix. A later write of an existing version is refused too.
func TestPutIfAbsentRace(t *testing.T) {
	warehouses(t, func(t *testing.T) {
		h := newHarness(t, map[string]string{delta.PropEnabled: "true"})
		h.ingest(1, 3)
		st, err := h.pub.Publish(h.ctx, tableIdent)
		require.NoError(t, err)
		tbl, err := h.tio.LoadTable(h.ctx, table.Identifier{"air", "flights"})
		require.NoError(t, err)
		fsys, err := tbl.FS(h.ctx)
		require.NoError(t, err)
		dir := st.Location + "/_delta_log"

		for i := range 10 {
			name := fmt.Sprintf("%020d.json", 100+i)
			var wg sync.WaitGroup
			var errs [2]error
			start := make(chan struct{})
			for w := range 2 {
				wg.Go(func() {
					<-start
					errs[w] = delta.PutLogFile(h.ctx, fsys, dir, name, []byte(fmt.Sprintf(`{"writer":%d}`+"\n", w)))
				})
			}
			close(start)
			wg.Wait()
			winner := -1
			for w, err := range errs {
				if err == nil {
					require.Equal(t, -1, winner, "race %d: both writers wrote %s", i, name)
					winner = w
					continue
				}
				require.ErrorIs(t, err, delta.ErrVersionExists, "race %d, writer %d", i, w)
			}
			require.NotEqual(t, -1, winner, "race %d: nobody wrote %s: %v", i, name, errs)
			require.Equal(t, fmt.Sprintf(`{"writer":%d}`+"\n", winner), readURI(t, fsys, dir+"/"+name), "race %d", i)

			err := delta.PutLogFile(h.ctx, fsys, dir, name, []byte("late\n"))
			require.ErrorIs(t, err, delta.ErrVersionExists)
			require.Equal(t, fmt.Sprintf(`{"writer":%d}`+"\n", winner), readURI(t, fsys, dir+"/"+name), "a late writer changes nothing")
		}
	})
}

// TestPublishConcurrentWritersNoDuplicate: two publishers (two processes
// that both think they publish the table) race on every commit; the
// put-if-absent commit file lets one win each version, the loser replays
// and finds the head published, so the log has no gap, no version
// written twice and no two versions for one snapshot; on file:// and S3.
//
// It pins a failure: on an S3 warehouse every publish failed with "the
// warehouse's file IO (*catalog.confinedIO) cannot write put-if-absent"
// (and then *catalog.blobSpecIO): the delta package looks for gocloud's
// FileIO behind the catalog's wrappers, which did not Unwrap, so no S3
// table was ever published.
func TestPublishConcurrentWritersNoDuplicate(t *testing.T) {
	warehouses(t, func(t *testing.T) {
		h := newHarness(t, map[string]string{delta.PropEnabled: "true"})
		other, err := delta.New(delta.Config{}, delta.Deps{Tables: delta.CatalogTables(h.cat)})
		require.NoError(t, err)
		for range 8 {
			h.ingest(1, 3)
			var wg sync.WaitGroup
			for _, p := range []*delta.Publisher{h.pub, other} {
				wg.Go(func() {
					_, err := p.Publish(h.ctx, tableIdent)
					assert.NoError(t, err)
				})
			}
			wg.Wait()
		}
		dir, local := h.localLogDir()
		vs := readLog(t, dir)
		require.Len(t, vs, 8, "one version per snapshot")
		for i := 1; i < len(vs); i++ {
			require.Greater(t, vs[i].txnVersion, vs[i-1].txnVersion)
		}
		var want []string
		for _, f := range h.dataFiles(h.head()) {
			want = append(want, local(f))
		}
		require.Equal(t, want, liveFiles(vs))
	})
}

// readURI reads a whole file through fsys.
func readURI(t *testing.T, fsys icebergio.IO, uri string) string {
	t.Helper()
	f, err := fsys.Open(uri)
	require.NoError(t, err)
	defer f.Close()
	b, err := io.ReadAll(f)
	require.NoError(t, err)
	return string(b)
}

// localLogDir is the harness's _delta_log on disk: logDir for a file://
// warehouse; for an S3 one, a copy of its objects in a temporary
// directory, laid out as the table (<dir>/<location path>/data/_delta_log)
// so that readLog resolves the add paths; local maps a data file's URI to
// what readLog resolves its add path to.
func (h *harness) localLogDir() (dir string, local func(uri string) string) {
	h.t.Helper()
	tbl, err := h.tio.LoadTable(h.ctx, table.Identifier{"air", "flights"})
	require.NoError(h.t, err)
	u, err := url.Parse(tbl.Location())
	require.NoError(h.t, err)
	if u.Scheme != "s3" {
		return h.logDir(), func(uri string) string { return uri }
	}
	ep := testmoto.Endpoint(h.t)
	prefix := strings.TrimPrefix(u.Path, "/") + "/data/_delta_log/"
	tmp := h.t.TempDir()
	dir = filepath.Join(tmp, u.Path, "data", "_delta_log")
	require.NoError(h.t, os.MkdirAll(dir, 0o755))
	for _, k := range testmoto.Keys(h.t, ep, u.Host, prefix) {
		b, err := testmoto.Get(h.ctx, testmoto.Client(ep), u.Host, k)
		require.NoError(h.t, err)
		require.NoError(h.t, os.WriteFile(filepath.Join(dir, strings.TrimPrefix(k, prefix)), b, 0o644))
	}
	return dir, func(uri string) string { return "file://" + tmp + strings.TrimPrefix(uri, "s3://"+u.Host) }
}
