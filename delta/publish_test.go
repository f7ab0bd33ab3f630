package delta_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/delta"
	"github.com/tarnhq/tarn/ingest/sink"
	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/spec"
)

var testSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "_kafka", Required: true, Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
		{ID: 2, Name: "partition", Type: iceberg.PrimitiveTypes.Int32, Required: true},
		{ID: 3, Name: "offset", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	}}},
	iceberg.NestedField{ID: 4, Name: "origin", Type: iceberg.PrimitiveTypes.String, Required: true},
	iceberg.NestedField{ID: 5, Name: "distance", Type: iceberg.PrimitiveTypes.Int64, Required: true},
)

var tableIdent = catalog.Ident{Namespace: catalog.Namespace{"air"}, Name: "flights"}

type harness struct {
	t    testing.TB
	ctx  context.Context
	cat  *catalog.Catalog
	wh   *catalog.Warehouse
	tio  *catalog.TableIO
	sink *sink.Sink
	pub  *delta.Publisher
	dir  string
}

func newHarness(t testing.TB, props map[string]string) *harness {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	cat, wh, _ := testserver.NewCatalog(t, dir, nil)
	require.NoError(t, cat.CreateNamespace(ctx, tableIdent.Namespace, nil))
	_, err := cat.CreateTable(ctx, wh, tableIdent.Namespace, spec.CreateTableRequest{Name: tableIdent.Name, Schema: testSchema, Properties: props})
	require.NoError(t, err)
	h := &harness{t: t, ctx: ctx, cat: cat, wh: wh, tio: cat.TableIO(wh), dir: dir}
	h.sink, err = sink.Open(ctx, h.tio, sink.Config{Table: table.Identifier{"air", "flights"}, Cluster: "c", Topic: "flights"})
	require.NoError(t, err)
	h.pub, err = delta.New(delta.Config{}, delta.Deps{Tables: delta.CatalogTables(cat)})
	require.NoError(t, err)
	return h
}

func (h *harness) ingest(batches, n int) {
	h.t.Helper()
	for range batches {
		head, err := h.sink.Head(h.ctx)
		require.NoError(h.t, err)
		start := head.Next[0]
		sc, err := table.SchemaToArrowSchema(testSchema, nil, true, false)
		require.NoError(h.t, err)
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		kb := b.Field(0).(*array.StructBuilder)
		for off := start; off < start+int64(n); off++ {
			kb.Append(true)
			kb.FieldBuilder(0).(*array.Int32Builder).Append(0)
			kb.FieldBuilder(1).(*array.Int64Builder).Append(off)
			b.Field(1).(*array.StringBuilder).Append([]string{"A", "B"}[off%2])
			b.Field(2).(*array.Int64Builder).Append(off)
		}
		rec := b.NewRecordBatch()
		b.Release()
		require.NoError(h.t, h.sink.Commit(h.ctx, sink.Batch{Records: []arrow.RecordBatch{rec}, Ranges: map[int32]sink.Range{0: {Start: start, End: start + int64(n)}}}))
		rec.Release()
	}
}

// logDir is the _delta_log directory of the harness's table (its Delta
// root is the data directory, <location>/data).
func (h *harness) logDir() string {
	h.t.Helper()
	tbl, err := h.tio.LoadTable(h.ctx, table.Identifier{"air", "flights"})
	require.NoError(h.t, err)
	u, err := url.Parse(tbl.Location())
	require.NoError(h.t, err)
	return filepath.Join(u.Path, "data", "_delta_log")
}

// head returns main's head snapshot.
func (h *harness) head() *table.Snapshot {
	h.t.Helper()
	tbl, err := h.tio.LoadTable(h.ctx, table.Identifier{"air", "flights"})
	require.NoError(h.t, err)
	return tbl.CurrentSnapshot()
}

// version is one commit file of the log, as a reader sees it.
type version struct {
	txnVersion int64
	adds       []string
	removes    []string
	protocol   bool
	metaData   bool
	snapshotID int64
}

// readLog parses every commit file of dir by version, and fails on a gap.
func readLog(t testing.TB, dir string) []version {
	t.Helper()
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []version
	for _, n := range names {
		if !strings.HasSuffix(n.Name(), ".json") {
			continue
		}
		var v int
		_, err := fmt.Sscanf(n.Name(), "%020d.json", &v)
		require.NoError(t, err, n.Name())
		require.Equal(t, len(out), v, "versions are contiguous from 0: %s", n.Name())
		b, err := os.ReadFile(filepath.Join(dir, n.Name()))
		require.NoError(t, err)
		var ver version
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var a map[string]json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(line), &a), line)
			require.Len(t, a, 1, "one action a line: %s", line)
			switch {
			case a["txn"] != nil:
				var x struct{ Version int64 }
				require.NoError(t, json.Unmarshal(a["txn"], &x))
				ver.txnVersion = x.Version
			case a["add"] != nil:
				var x struct{ Path string }
				require.NoError(t, json.Unmarshal(a["add"], &x))
				ver.adds = append(ver.adds, resolve(t, dir, x.Path))
			case a["remove"] != nil:
				var x struct{ Path string }
				require.NoError(t, json.Unmarshal(a["remove"], &x))
				ver.removes = append(ver.removes, resolve(t, dir, x.Path))
			case a["protocol"] != nil:
				ver.protocol = true
			case a["metaData"] != nil:
				ver.metaData = true
			case a["commitInfo"] != nil:
				var x struct {
					ID int64 `json:"tarnIcebergSnapshotId"`
				}
				require.NoError(t, json.Unmarshal(a["commitInfo"], &x))
				ver.snapshotID = x.ID
			}
		}
		out = append(out, ver)
	}
	return out
}

// resolve turns an add or remove path of the log in dir into the URI
// of the file it names, as a reader does: "x.parquet" is relative to the
// Delta root, dir's parent, the Iceberg data directory.
func resolve(t testing.TB, dir, p string) string {
	t.Helper()
	require.False(t, strings.Contains(p, ":") || strings.HasPrefix(p, "/") || strings.Contains(p, ".."),
		"a file of the data directory is named relative to the Delta root, without \"..\": %s", p)
	rel, err := url.PathUnescape(p)
	require.NoError(t, err)
	return "file://" + filepath.Join(filepath.Dir(dir), rel)
}

// liveFiles replays versions' adds and removes: the files the last
// version names.
func liveFiles(vs []version) []string {
	live := map[string]bool{}
	for _, v := range vs {
		for _, r := range v.removes {
			delete(live, r)
		}
		for _, a := range v.adds {
			live[a] = true
		}
	}
	var out []string
	for p := range live {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// dataFiles returns the data files of snapshot snap as add paths.
func (h *harness) dataFiles(snap *table.Snapshot) []string {
	h.t.Helper()
	tbl, err := h.tio.LoadTable(h.ctx, table.Identifier{"air", "flights"})
	require.NoError(h.t, err)
	tasks, err := tbl.Scan(table.WithSnapshotID(snap.SnapshotID)).PlanFiles(h.ctx)
	require.NoError(h.t, err)
	var out []string
	for _, ft := range tasks {
		out = append(out, ft.File.FilePath())
	}
	slices.Sort(out)
	return out
}

// TestPublishOneVersionPerSnapshot: each publish writes one version whose
// txn names main's head (version = its sequence number), with protocol
// and metaData only in the first; the version's files are exactly the
// head's data files; publishing again with nothing new writes nothing.
func TestPublishOneVersionPerSnapshot(t *testing.T) {
	h := newHarness(t, map[string]string{delta.PropEnabled: "true"})
	h.ingest(3, 5)
	st, err := h.pub.Publish(h.ctx, tableIdent)
	require.NoError(t, err)
	require.EqualValues(t, 0, *st.Version)
	head := h.head()
	require.Equal(t, head.SnapshotID, *st.SnapshotID)
	require.Equal(t, head.SequenceNumber, *st.SequenceNumber)
	require.Equal(t, &delta.Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"columnMapping"},
		WriterFeatures: []string{"columnMapping", "invariants", delta.FeatureTarnManaged}}, st.Protocol)

	h.ingest(2, 5)
	_, err = h.pub.Publish(h.ctx, tableIdent)
	require.NoError(t, err)
	_, err = h.pub.Publish(h.ctx, tableIdent)
	require.NoError(t, err)

	vs := readLog(t, h.logDir())
	require.Len(t, vs, 2, "one version per publish that had something new")
	require.True(t, vs[0].protocol && vs[0].metaData)
	require.False(t, vs[1].protocol || vs[1].metaData, "nothing about the table changed")
	require.Len(t, vs[0].adds, 3)
	require.Len(t, vs[1].adds, 2)
	head = h.head()
	require.Equal(t, head.SequenceNumber, vs[1].txnVersion)
	require.Equal(t, head.SnapshotID, vs[1].snapshotID)
	require.Equal(t, h.dataFiles(head), liveFiles(vs))

	tbl, err := h.tio.LoadTable(h.ctx, table.Identifier{"air", "flights"})
	require.NoError(t, err)
	require.Equal(t, st.Location, tbl.Properties()[delta.PropLocation], "the Delta root is recorded on the table")
}

// TestPublishRestartWritesNoVersionTwice pins exactly once across a
// restart: a new Publisher (a restarted process, knowing nothing) finds
// in the log's txn that it reflects the head already and writes nothing;
// after more commits it writes the next version, never one the log has.
func TestPublishRestartWritesNoVersionTwice(t *testing.T) {
	h := newHarness(t, map[string]string{delta.PropEnabled: "true"})
	h.ingest(2, 5)
	_, err := h.pub.Publish(h.ctx, tableIdent)
	require.NoError(t, err)
	for i := range 3 {
		restarted, err := delta.New(delta.Config{}, delta.Deps{Tables: delta.CatalogTables(h.cat)})
		require.NoError(t, err)
		st, err := restarted.Publish(h.ctx, tableIdent)
		require.NoError(t, err)
		require.EqualValues(t, i, *st.Version, "restart %d: the log already reflected the head", i)
		h.ingest(1, 5)
		st, err = restarted.Publish(h.ctx, tableIdent)
		require.NoError(t, err)
		require.EqualValues(t, i+1, *st.Version)
	}
	vs := readLog(t, h.logDir())
	require.Len(t, vs, 4)
	for i := 1; i < len(vs); i++ {
		require.Greater(t, vs[i].txnVersion, vs[i-1].txnVersion, "each version reflects a newer snapshot")
	}
	require.Equal(t, h.dataFiles(h.head()), liveFiles(vs))
}

// TestCheckpointEveryInterval: with tarn.delta.checkpoint-interval 3 a
// checkpoint is written at versions 3 and 6 with _last_checkpoint naming
// the newest; a restarted publisher whose log has lost the JSON commits
// before the checkpoint (as log cleanup leaves it) replays from the
// checkpoint and continues at the right version with the right files.
func TestCheckpointEveryInterval(t *testing.T) {
	h := newHarness(t, map[string]string{delta.PropEnabled: "true", delta.PropCheckpointInterval: "3"})
	for range 7 {
		h.ingest(1, 4)
		_, err := h.pub.Publish(h.ctx, tableIdent)
		require.NoError(t, err)
	}
	dir := h.logDir()
	cps, err := filepath.Glob(filepath.Join(dir, "*.checkpoint.parquet"))
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Join(dir, "00000000000000000003.checkpoint.parquet"),
		filepath.Join(dir, "00000000000000000006.checkpoint.parquet")}, cps)
	b, err := os.ReadFile(filepath.Join(dir, "_last_checkpoint"))
	require.NoError(t, err)
	var lc struct {
		Version       int64 `json:"version"`
		Size          int64 `json:"size"`
		NumOfAddFiles int64 `json:"numOfAddFiles"`
	}
	require.NoError(t, json.Unmarshal(b, &lc))
	require.EqualValues(t, 6, lc.Version)
	require.EqualValues(t, 7, lc.NumOfAddFiles, "seven appends, seven files at version 6")
	require.EqualValues(t, 1+1+1+7, lc.Size, "protocol, metaData, txn and the adds")

	before := readLog(t, dir)
	for v := range 6 {
		require.NoError(t, os.Remove(filepath.Join(dir, fmt.Sprintf("%020d.json", v))))
	}
	h.ingest(1, 4)
	restarted, err := delta.New(delta.Config{}, delta.Deps{Tables: delta.CatalogTables(h.cat)})
	require.NoError(t, err)
	st, err := restarted.Publish(h.ctx, tableIdent)
	require.NoError(t, err)
	require.EqualValues(t, 7, *st.Version)
	b, err = os.ReadFile(filepath.Join(dir, "00000000000000000007.json"))
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(b), `"add"`), "only the new file: the checkpoint's files were known")
	require.Equal(t, h.head().SequenceNumber, *st.SequenceNumber)
	require.Len(t, liveFiles(before), 7)
}

// TestStaleTempFileIgnored: a crash in the middle of writing a commit
// leaves only a hidden temporary file (the commit appears by link(2),
// whole or not at all); readers and the publisher ignore it, the next
// publish writes the version it was for, and the temp file is removed
// once it is old.
func TestStaleTempFileIgnored(t *testing.T) {
	h := newHarness(t, map[string]string{delta.PropEnabled: "true"})
	h.ingest(1, 5)
	_, err := h.pub.Publish(h.ctx, tableIdent)
	require.NoError(t, err)
	dir := h.logDir()
	tmp := filepath.Join(dir, ".00000000000000000001.json.crashed.tmp")
	require.NoError(t, os.WriteFile(tmp, []byte(`{"add":{"path":"torn`), 0o644))
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(tmp, old, old))

	h.ingest(1, 5)
	restarted, err := delta.New(delta.Config{}, delta.Deps{Tables: delta.CatalogTables(h.cat)})
	require.NoError(t, err)
	st, err := restarted.Publish(h.ctx, tableIdent)
	require.NoError(t, err)
	require.EqualValues(t, 1, *st.Version)
	require.Len(t, readLog(t, dir), 2)
	require.NoFileExists(t, tmp)
}

// TestKeepFiles: what maintenance must not delete for the Delta log's
// sake: the log itself (which Iceberg metadata does not name) and the
// files the log's retained versions name; not an unrelated file.
func TestKeepFiles(t *testing.T) {
	h := newHarness(t, map[string]string{delta.PropEnabled: "true"})
	h.ingest(2, 5)
	_, err := h.pub.Publish(h.ctx, tableIdent)
	require.NoError(t, err)
	keep, err := h.pub.KeepFiles(h.ctx, tableIdent)
	require.NoError(t, err)
	files := h.dataFiles(h.head())
	require.Len(t, files, 2)
	for _, f := range files {
		require.True(t, keep(f), f)
	}
	tbl, err := h.tio.LoadTable(h.ctx, table.Identifier{"air", "flights"})
	require.NoError(t, err)
	loc := strings.TrimSuffix(tbl.Location(), "/")
	require.True(t, keep(loc+"/data/_delta_log/00000000000000000000.json"))
	require.False(t, keep(loc+"/data/not-in-any-version.parquet"))
	require.False(t, keep(tbl.MetadataLocation()), "Iceberg's own files follow Iceberg's rules")
}

// TestDisabledStopsPublishing: with tarn.delta.enabled=false nothing new
// is published, and the log stays readable at its last version.
func TestDisabledStopsPublishing(t *testing.T) {
	h := newHarness(t, map[string]string{delta.PropEnabled: "true"})
	h.ingest(1, 5)
	_, err := h.pub.Publish(h.ctx, tableIdent)
	require.NoError(t, err)
	tbl, err := h.tio.LoadTable(h.ctx, table.Identifier{"air", "flights"})
	require.NoError(t, err)
	tx := tbl.NewTransaction()
	require.NoError(t, tx.SetProperties(iceberg.Properties{delta.PropEnabled: "false"}))
	_, err = tx.Commit(h.ctx)
	require.NoError(t, err)
	h.ingest(2, 5)
	_, err = h.pub.Publish(h.ctx, tableIdent)
	require.NoError(t, err)
	vs := readLog(t, h.logDir())
	require.Len(t, vs, 1)
	f, err := h.pub.Formats(h.ctx, tableIdent)
	require.NoError(t, err)
	require.False(t, f.Delta.Enabled)
	require.EqualValues(t, 0, *f.Delta.Version)
}

// TestCheckpointAfterCrashBeforeIt pins a crash between a commit and its
// checkpoint: version 3 (interval 3) was written, the process died
// before 00000000000000000003.checkpoint.parquet, and the restarted
// publisher found the head published and returned without writing the
// checkpoint, so the log went without one until version 6 (seen in
// TestE2EDeltaOutput: a log of 6 versions at interval 5, no checkpoint).
// Now the restarted publisher writes the missed checkpoint even with
// nothing new to commit.
func TestCheckpointAfterCrashBeforeIt(t *testing.T) {
	h := newHarness(t, map[string]string{delta.PropEnabled: "true", delta.PropCheckpointInterval: "3"})
	for range 4 {
		h.ingest(1, 4)
		_, err := h.pub.Publish(h.ctx, tableIdent)
		require.NoError(t, err)
	}
	dir := h.logDir()
	cp := filepath.Join(dir, "00000000000000000003.checkpoint.parquet")
	require.FileExists(t, cp)
	require.NoError(t, os.Remove(cp)) // the crash: commit 3 durable, its checkpoint not
	require.NoError(t, os.Remove(filepath.Join(dir, "_last_checkpoint")))

	restarted, err := delta.New(delta.Config{}, delta.Deps{Tables: delta.CatalogTables(h.cat)})
	require.NoError(t, err)
	st, err := restarted.Publish(h.ctx, tableIdent)
	require.NoError(t, err)
	require.EqualValues(t, 3, *st.Version, "nothing new to commit")
	require.FileExists(t, cp, "the missed checkpoint is written")
	b, err := os.ReadFile(filepath.Join(dir, "_last_checkpoint"))
	require.NoError(t, err)
	require.Contains(t, string(b), `"version":3`)
}
