package publish_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/catalog/bolt"
	"github.com/tarnhq/tarn/delta"
	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/publish"
	"github.com/tarnhq/tarn/spec"
)

var (
	orders = catalog.Ident{Namespace: catalog.Namespace{"sales", "eu"}, Name: "Orders-v2"}
	// ordersGlue is orders' Glue name (GlueName).
	ordersGlue = "sales_eu.orders_v2"
	schema     = iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true, Doc: "order id"},
		iceberg.NestedField{ID: 2, Name: "tags", Type: &iceberg.ListType{ElementID: 3, Element: iceberg.PrimitiveTypes.String}},
		iceberg.NestedField{ID: 4, Name: "at", Type: iceberg.PrimitiveTypes.TimestampTz},
	)
)

type harness struct {
	t     *testing.T
	ctx   context.Context
	cat   *catalog.Catalog
	wh    *catalog.Warehouse
	store publish.Store
	bolt  *bolt.Store
	glue  *fakeGlue
	cfg   publish.TargetConfig
	owned atomic.Bool
	pub   *publish.Publisher
	stop  func()
	reg   *prometheus.Registry
	n     int
}

func newHarness(t *testing.T, cfg publish.TargetConfig) *harness {
	t.Helper()
	ctx := context.Background()
	cat, wh, store := testserver.NewCatalog(t, t.TempDir(), nil)
	h := &harness{t: t, ctx: ctx, cat: cat, wh: wh, store: store, bolt: store, glue: newFakeGlue(), cfg: cfg}
	h.owned.Store(true)
	for _, ns := range []catalog.Namespace{{"sales"}, {"sales", "eu"}} {
		require.NoError(t, cat.CreateNamespace(ctx, ns, nil))
	}
	return h
}

func glueTarget(name string) publish.TargetConfig {
	return publish.TargetConfig{Name: name, Type: publish.TypeGlue}
}

// start runs a publisher (a restart when one ran before: the earlier one
// is stopped first).
func (h *harness) start() {
	h.t.Helper()
	if h.stop != nil {
		h.stop()
	}
	h.reg = prometheus.NewRegistry()
	pub, err := publish.New([]publish.Targeted{{Config: h.cfg, Target: publish.NewGlueWith(h.glue, h.cfg)}},
		publish.Deps{Tables: delta.CatalogTables(h.cat), Store: h.store, Metrics: h.reg,
			Owned: func(catalog.Ident) bool { return h.owned.Load() }})
	require.NoError(h.t, err)
	h.cat.AddCommitObserver(pub)
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan error, 1)
	go func() { done <- pub.Run(ctx) }()
	h.pub = pub
	h.stop = func() { cancel(); require.NoError(h.t, <-done); h.stop = nil }
	h.t.Cleanup(func() {
		if h.stop != nil {
			h.stop()
		}
	})
}

func (h *harness) create(id catalog.Ident, props map[string]string) {
	h.t.Helper()
	_, err := h.cat.CreateTable(h.ctx, h.wh, id.Namespace, spec.CreateTableRequest{Name: id.Name, Schema: schema, Properties: props})
	require.NoError(h.t, err)
}

// commit makes a new metadata file of id (a property change).
func (h *harness) commit(id catalog.Ident) string {
	h.t.Helper()
	h.n++
	l, err := h.cat.CommitTable(h.ctx, h.wh, catalog.TableCommit{Ident: id, Updates: []table.Update{
		table.NewSetPropertiesUpdate(iceberg.Properties{"n": fmt.Sprint(h.n)})}})
	require.NoError(h.t, err)
	return l.MetadataLocation
}

func (h *harness) location(id catalog.Ident) string {
	h.t.Helper()
	tbl, err := delta.CatalogTables(h.cat).LoadTable(h.ctx, id)
	require.NoError(h.t, err)
	return tbl.MetadataLocation()
}

func (h *harness) status(id catalog.Ident) publish.TableStatus {
	for _, t := range h.pub.Status().Targets {
		for _, s := range t.Tables {
			if s.Table == id.String() {
				return s
			}
		}
	}
	return publish.TableStatus{}
}

// waitGlue waits until Glue table k points at loc.
func (h *harness) waitGlue(k, loc string) {
	h.t.Helper()
	require.Eventually(h.t, func() bool {
		t := h.glue.table(k)
		return t != nil && t.Parameters["metadata_location"] == loc
	}, 15*time.Second, 10*time.Millisecond, "glue table %s never pointed at %s (status %+v)", k, loc, h.pub.Status())
}

func (h *harness) waitState(id catalog.Ident, state string) publish.TableStatus {
	h.t.Helper()
	var s publish.TableStatus
	require.Eventually(h.t, func() bool { s = h.status(id); return s.State == state }, 15*time.Second, 10*time.Millisecond,
		"%s never reached %s: %+v", id, state, h.pub.Status())
	return s
}

// TestGlueFollowsCommits: a created table, then each commit, is pushed
// to Glue: table_type ICEBERG, metadata_location the current file,
// previous_metadata_location the one before, the columns with their
// Hive types, an update conditional on the VersionId read and skipping
// Glue's archive; status and metrics say what is published.
func TestGlueFollowsCommits(t *testing.T) {
	h := newHarness(t, glueTarget("athena"))
	h.start()
	h.create(orders, nil)
	first := h.location(orders)
	h.waitGlue(ordersGlue, first)
	got := h.glue.table(ordersGlue)
	require.Equal(t, "ICEBERG", got.Parameters["table_type"])
	require.NotContains(t, got.Parameters, "previous_metadata_location")
	require.Equal(t, "EXTERNAL_TABLE", aws.ToString(got.TableType))
	var cols []string
	for _, c := range got.StorageDescriptor.Columns {
		cols = append(cols, aws.ToString(c.Name)+" "+aws.ToString(c.Type)+" "+c.Parameters["iceberg.field.id"]+" "+c.Parameters["iceberg.field.optional"])
	}
	require.Equal(t, []string{"id bigint 1 false", "tags array<string> 2 true", "at timestamp 4 true"}, cols)
	require.Equal(t, "order id", aws.ToString(got.StorageDescriptor.Columns[0].Comment))
	tbl, err := delta.CatalogTables(h.cat).LoadTable(h.ctx, orders)
	require.NoError(t, err)
	require.Equal(t, tbl.Location(), aws.ToString(got.StorageDescriptor.Location))

	prev := first
	for range 3 {
		loc := h.commit(orders)
		h.waitGlue(ordersGlue, loc)
		got = h.glue.table(ordersGlue)
		require.Equal(t, prev, got.Parameters["previous_metadata_location"])
		prev = loc
	}
	s := h.waitState(orders, publish.StatePublished)
	require.Equal(t, prev, s.MetadataLocation)
	require.Equal(t, ordersGlue, s.Remote)
	require.Zero(t, s.LagSeconds)
	require.NotNil(t, s.LastPublished)
	h.glue.set(func(f *fakeGlue) {
		require.GreaterOrEqual(t, len(f.updates), 3)
		for _, u := range f.updates {
			require.NotNil(t, u.VersionId)
			require.True(t, aws.ToBool(u.SkipArchive))
		}
	})
	require.GreaterOrEqual(t, counter(t, h.reg, "tarn_publish_publishes_total"), 4.0)
	require.Equal(t, 0.0, gauge(t, h.reg, "tarn_publish_failing", orders.String()))
	require.Equal(t, 0.0, gauge(t, h.reg, "tarn_publish_lag_seconds", orders.String()))
}

// counter is the sum of counter name over its labels.
func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.Metric {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// gauge is the value of gauge name for table (-1 when absent).
func gauge(t *testing.T, reg *prometheus.Registry, name, tbl string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if l.GetName() == "table" && l.GetValue() == tbl {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
}

// TestGlueConflictStopsUntilResume: someone else updates the Glue table
// (its VersionId moves); Tarn's next commit is not published, the table
// stops with the reason (also after a restart: the record is stored),
// the foreign change stays; `resume` puts Tarn's pointer back and
// publishing goes on.
func TestGlueConflictStopsUntilResume(t *testing.T) {
	h := newHarness(t, glueTarget("athena"))
	h.start()
	h.create(orders, nil)
	h.waitGlue(ordersGlue, h.location(orders))
	h.glue.foreignUpdate(ordersGlue, map[string]string{"comment": "edited in the console"})
	loc := h.commit(orders)
	s := h.waitState(orders, publish.StateConflict)
	require.Contains(t, s.Conflict, "changed outside Tarn")
	require.NotEqual(t, loc, h.glue.table(ordersGlue).Parameters["metadata_location"], "the foreign table was overwritten")
	require.Equal(t, 1.0, gauge(t, h.reg, "tarn_publish_conflict", orders.String()))
	// More commits stay unpublished; a restart keeps the stop.
	loc = h.commit(orders)
	h.start()
	s = h.waitState(orders, publish.StateConflict)
	require.Contains(t, s.Conflict, "changed outside Tarn")
	time.Sleep(100 * time.Millisecond)
	require.Equal(t, "edited in the console", h.glue.table(ordersGlue).Parameters["comment"])
	require.NotEqual(t, loc, h.glue.table(ordersGlue).Parameters["metadata_location"])

	_, err := h.pub.Resume(h.ctx, "athena", orders)
	require.NoError(t, err)
	h.waitGlue(ordersGlue, loc)
	require.Equal(t, publish.StatePublished, h.waitState(orders, publish.StatePublished).State)
	loc = h.commit(orders)
	h.waitGlue(ordersGlue, loc)
}

// TestGlueForeignPointerIsConflict: another writer points the Glue table
// at a metadata file that is not Tarn's (an engine committing through
// Glue): a conflict, nothing overwritten.
func TestGlueForeignPointerIsConflict(t *testing.T) {
	h := newHarness(t, glueTarget("athena"))
	h.start()
	h.create(orders, nil)
	h.waitGlue(ordersGlue, h.location(orders))
	h.glue.foreignUpdate(ordersGlue, map[string]string{"metadata_location": "s3://elsewhere/00001-x.metadata.json"})
	h.commit(orders)
	h.waitState(orders, publish.StateConflict)
	require.Equal(t, "s3://elsewhere/00001-x.metadata.json", h.glue.table(ordersGlue).Parameters["metadata_location"])
}

// TestGlueCASRaceBetweenReadAndUpdate: a foreign write lands between
// Tarn's GetTable and its UpdateTable; the update is conditional on the
// VersionId read, so Glue refuses it (ConcurrentModificationException),
// and the retry finds the foreign change and stops with a conflict: the
// foreign write is never clobbered.
func TestGlueCASRaceBetweenReadAndUpdate(t *testing.T) {
	h := newHarness(t, glueTarget("athena"))
	h.start()
	h.create(orders, nil)
	h.waitGlue(ordersGlue, h.location(orders))
	var once atomic.Bool
	h.glue.set(func(f *fakeGlue) {
		f.beforeUpdate = func() {
			if once.CompareAndSwap(false, true) {
				f.foreignUpdate(ordersGlue, map[string]string{"metadata_location": "s3://elsewhere/00009-y.metadata.json"})
			}
		}
	})
	h.commit(orders)
	s := h.waitState(orders, publish.StateConflict)
	require.Contains(t, s.Conflict, "s3://elsewhere/00009-y.metadata.json")
	require.Equal(t, "s3://elsewhere/00009-y.metadata.json", h.glue.table(ordersGlue).Parameters["metadata_location"])
}

// TestGlueDownCatchesUp: while Glue fails every call, the table shows
// failing with the error (and in the metrics) and commits pile up; once
// Glue answers again the newest pointer is published and no error is
// left.
func TestGlueDownCatchesUp(t *testing.T) {
	h := newHarness(t, glueTarget("athena"))
	h.start()
	h.create(orders, nil)
	h.waitGlue(ordersGlue, h.location(orders))
	h.glue.set(func(f *fakeGlue) { f.down = errors.New("glue: connection refused") })
	h.commit(orders)
	s := h.waitState(orders, publish.StateFailing)
	require.Contains(t, s.Error, "connection refused")
	require.Equal(t, 1.0, gauge(t, h.reg, "tarn_publish_failing", orders.String()))
	var loc string
	for range 3 {
		loc = h.commit(orders)
	}
	require.Greater(t, h.status(orders).LagSeconds, 0.0)
	h.glue.set(func(f *fakeGlue) { f.down = nil })
	h.waitGlue(ordersGlue, loc)
	s = h.waitState(orders, publish.StatePublished)
	require.Empty(t, s.Error)
	require.Equal(t, loc, s.MetadataLocation)
}

// TestCommitsNeverWaitAndCoalesce: while Glue hangs in an update, the
// catalog's commits go on unhindered; once it answers, one more publish
// carries the newest pointer (the commits in between coalesce).
func TestCommitsNeverWaitAndCoalesce(t *testing.T) {
	h := newHarness(t, glueTarget("athena"))
	h.start()
	h.create(orders, nil)
	h.waitGlue(ordersGlue, h.location(orders))
	block := make(chan struct{})
	h.glue.set(func(f *fakeGlue) { f.block = block })
	h.commit(orders) // the worker picks it up and hangs in UpdateTable
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	var loc string
	for range 20 {
		loc = h.commit(orders)
	}
	require.Less(t, time.Since(start), 10*time.Second)
	h.glue.set(func(f *fakeGlue) { f.block = nil })
	close(block)
	h.waitGlue(ordersGlue, loc)
	h.glue.set(func(f *fakeGlue) {
		require.LessOrEqual(t, len(f.updates), 3, "21 commits, at most the hung update and one more (coalesced)")
	})
}

// failingStore fails PutRecord while fail is set: the target accepted a
// write that Tarn could not record (as a crash between the two would).
type failingStore struct {
	publish.Store
	fail atomic.Bool
}

func (s *failingStore) PutRecord(ctx context.Context, c, k string, v []byte) error {
	if s.fail.Load() {
		return errors.New("store down")
	}
	return s.Store.PutRecord(ctx, c, k, v)
}

// TestRestartCatchesUpAndAdoptsUnrecordedWrite: commits made while the
// publisher is stopped are published on start; a write Glue accepted
// but Tarn did not record (a crash between them) is recognised as
// Tarn's on the retry, not taken for a conflict — both for a create and
// for an update.
func TestRestartCatchesUpAndAdoptsUnrecordedWrite(t *testing.T) {
	h := newHarness(t, glueTarget("athena"))
	fs := &failingStore{Store: h.bolt}
	h.store = fs
	fs.fail.Store(true)
	h.start()
	h.create(orders, nil)
	h.waitGlue(ordersGlue, h.location(orders)) // created in Glue, not recorded
	require.Equal(t, publish.StateFailing, h.waitState(orders, publish.StateFailing).State)
	fs.fail.Store(false)
	h.waitState(orders, publish.StatePublished)

	fs.fail.Store(true)
	loc := h.commit(orders)
	h.waitGlue(ordersGlue, loc) // updated, not recorded
	h.waitState(orders, publish.StateFailing)
	h.stop()
	fs.fail.Store(false)
	loc = h.commit(orders)
	h.start()
	h.waitGlue(ordersGlue, loc)
	s := h.waitState(orders, publish.StatePublished)
	require.Empty(t, s.Conflict)
	require.Equal(t, loc, s.MetadataLocation)
}

// TestGlueFollowsDropAndRename: a rename creates the Glue table under
// the new name and removes the old one; a drop removes it (drop mode
// remove) or leaves it (keep).
func TestGlueFollowsDropAndRename(t *testing.T) {
	for _, mode := range []string{publish.DropRemove, publish.DropKeep} {
		t.Run(mode, func(t *testing.T) {
			cfg := glueTarget("athena")
			cfg.Drop = mode
			h := newHarness(t, cfg)
			h.start()
			h.create(orders, nil)
			h.waitGlue(ordersGlue, h.location(orders))
			renamed := catalog.Ident{Namespace: catalog.Namespace{"sales"}, Name: "orders"}
			require.NoError(t, h.cat.RenameTable(h.ctx, h.wh, orders, renamed))
			h.waitGlue("sales.orders", h.location(renamed))
			require.Eventually(t, func() bool { return h.glue.table(ordersGlue) == nil }, 10*time.Second, 10*time.Millisecond)
			require.Equal(t, "sales.orders", h.waitState(renamed, publish.StatePublished).Remote)

			require.NoError(t, h.cat.DropTable(h.ctx, h.wh, renamed, false))
			if mode == publish.DropRemove {
				require.Eventually(t, func() bool { return h.glue.table("sales.orders") == nil }, 10*time.Second, 10*time.Millisecond)
			} else {
				require.Eventually(t, func() bool { return h.status(renamed).Table == "" }, 10*time.Second, 10*time.Millisecond)
				require.NotNil(t, h.glue.table("sales.orders"))
			}
			require.Eventually(t, func() bool { return h.status(renamed).Table == "" }, 10*time.Second, 10*time.Millisecond)
			recs, err := h.bolt.ListRecords(h.ctx, "publish")
			require.NoError(t, err)
			require.Empty(t, recs)
		})
	}
}

// TestCoverage: without namespaces a target covers the tables topics own;
// with namespaces every table in and below them; tarn.publish.<name>
// opts any table in or out.
func TestCoverage(t *testing.T) {
	other := catalog.Ident{Namespace: catalog.Namespace{"sales"}, Name: "returns"}
	optOut := catalog.Ident{Namespace: catalog.Namespace{"sales", "eu"}, Name: "private"}

	t.Run("owned", func(t *testing.T) {
		h := newHarness(t, glueTarget("athena"))
		h.owned.Store(false)
		h.start()
		h.create(other, nil)
		h.create(orders, map[string]string{"tarn.publish.athena": "true"})
		h.waitGlue(ordersGlue, h.location(orders))
		time.Sleep(200 * time.Millisecond)
		require.Nil(t, h.glue.table("sales.returns"), "a table no topic owns is published only on opt-in")
	})
	t.Run("namespaces", func(t *testing.T) {
		cfg := glueTarget("athena")
		cfg.Namespaces = []string{"sales.eu"}
		h := newHarness(t, cfg)
		h.owned.Store(false)
		h.start()
		h.create(other, nil)
		h.create(optOut, map[string]string{"tarn.publish.athena": "false"})
		h.create(orders, nil)
		h.waitGlue(ordersGlue, h.location(orders))
		time.Sleep(200 * time.Millisecond)
		require.Nil(t, h.glue.table("sales.returns"))
		require.Nil(t, h.glue.table("sales_eu.private"))
		// Opting out later leaves the Glue table where it was.
		_, err := h.cat.CommitTable(h.ctx, h.wh, catalog.TableCommit{Ident: orders, Updates: []table.Update{
			table.NewSetPropertiesUpdate(iceberg.Properties{"tarn.publish.athena": "false"})}})
		require.NoError(t, err)
		h.waitState(orders, publish.StateExcluded)
	})
}

// TestSyncRepublishes: sync publishes on request, even when the record
// says the target is current (a Glue table edited back by hand is
// rewritten only if it is still Tarn's).
func TestSyncRepublishes(t *testing.T) {
	h := newHarness(t, glueTarget("athena"))
	h.start()
	h.create(orders, nil)
	h.waitGlue(ordersGlue, h.location(orders))
	h.waitState(orders, publish.StatePublished)
	before := len(h.glue.updates)
	st, err := h.pub.Sync(h.ctx, "", orders)
	require.NoError(t, err)
	require.Equal(t, publish.StatePublished, st.Targets[0].Tables[0].State)
	h.glue.set(func(f *fakeGlue) { require.Equal(t, before+1, len(f.updates)) })
	_, err = h.pub.Sync(h.ctx, "nope", orders)
	require.ErrorIs(t, err, publish.ErrNoSuchTarget)
	require.ErrorIs(t, err, catalog.ErrNotFound)
}

// TestGlueName pins the documented name mapping (docs/publish.md).
func TestGlueName(t *testing.T) {
	for _, c := range []struct {
		id       catalog.Ident
		db, name string
		err      bool
	}{
		{catalog.Ident{Namespace: catalog.Namespace{"sales"}, Name: "orders"}, "sales", "orders", false},
		{catalog.Ident{Namespace: catalog.Namespace{"Sales", "EU"}, Name: "Orders"}, "sales_eu", "orders", false},
		{catalog.Ident{Namespace: catalog.Namespace{"a-b", "c.d"}, Name: "x y"}, "a_b_c_d", "x_y", false},
		{catalog.Ident{Namespace: catalog.Namespace{"café"}, Name: "t€"}, "caf_", "t_", false},
		{catalog.Ident{Namespace: catalog.Namespace{strings.Repeat("a", 200), strings.Repeat("b", 60)}, Name: "t"}, "", "", true},
	} {
		db, name, err := publish.GlueName(c.id)
		if c.err {
			require.ErrorIs(t, err, publish.ErrConflict, c.id.String())
			continue
		}
		require.NoError(t, err)
		require.Equal(t, [2]string{c.db, c.name}, [2]string{db, name}, c.id.String())
	}
}

// TestParseTargets: --publish's JSON list, and what it refuses.
func TestParseTargets(t *testing.T) {
	got, err := publish.ParseTargets(`[{"name":"athena","type":"glue","region":"eu-west-1","namespaces":["sales"],"drop":"keep","role-arn":"arn:aws:iam::1:role/r"}]`)
	require.NoError(t, err)
	require.Equal(t, []publish.TargetConfig{{Name: "athena", Type: "glue", Region: "eu-west-1", Namespaces: []string{"sales"}, Drop: "keep", RoleARN: "arn:aws:iam::1:role/r"}}, got)
	got, err = publish.ParseTargets(`[{"name":"polaris","type":"iceberg-rest","uri":"https://polaris.example/api/catalog","credential":"id:secret","warehouse":"lake","scope":"PRINCIPAL_ROLE:ALL"}]`)
	require.NoError(t, err)
	require.Equal(t, []publish.TargetConfig{{Name: "polaris", Type: "iceberg-rest", URI: "https://polaris.example/api/catalog",
		Credential: "id:secret", Warehouse: "lake", Scope: "PRINCIPAL_ROLE:ALL"}}, got)
	got, err = publish.ParseTargets(`[{"name":"dbx","type":"unity","uri":"https://dbc-1.cloud.databricks.com","token":"dapi123","catalog":"lake","namespaces":["sales"]}]`)
	require.NoError(t, err)
	require.Equal(t, []publish.TargetConfig{{Name: "dbx", Type: "unity", URI: "https://dbc-1.cloud.databricks.com", Token: "dapi123",
		Catalog: "lake", Namespaces: []string{"sales"}}}, got)
	for name, raw := range map[string]string{
		"unknown key":       `[{"name":"a","type":"glue","regoin":"x"}]`,
		"no name":           `[{"type":"glue"}]`,
		"bad name":          `[{"name":"a.b","type":"glue"}]`,
		"twice":             `[{"name":"a","type":"glue"},{"name":"a","type":"glue"}]`,
		"unknown type":      `[{"name":"a","type":"hive"}]`,
		"unity no uri":      `[{"name":"a","type":"unity","catalog":"lake"}]`,
		"unity no catalog":  `[{"name":"a","type":"unity","uri":"http://h"}]`,
		"unity bad catalog": `[{"name":"a","type":"unity","uri":"http://h","catalog":"a.b"}]`,
		"rest key on unity": `[{"name":"a","type":"unity","uri":"http://h","catalog":"c","credential":"i:s"}]`,
		"unity key on rest": `[{"name":"a","type":"iceberg-rest","uri":"http://h","token":"t"}]`,
		"unity key on glue": `[{"name":"a","type":"glue","catalog":"c"}]`,
		"bad drop":          `[{"name":"a","type":"glue","drop":"purge"}]`,
		"rest no uri":       `[{"name":"a","type":"iceberg-rest"}]`,
		"rest bad uri":      `[{"name":"a","type":"iceberg-rest","uri":"polaris:8181"}]`,
		"glue key on rest":  `[{"name":"a","type":"iceberg-rest","uri":"http://h","region":"x"}]`,
		"rest key on glue":  `[{"name":"a","type":"glue","uri":"http://h"}]`,
		"not a list":        `{"name":"a","type":"glue"}`,
	} {
		_, err := publish.ParseTargets(raw)
		require.ErrorIs(t, err, publish.ErrInvalidConfig, name)
	}
	require.Error(t, publish.ValidateProperties(iceberg.Properties{"tarn.publish.athena": "yes please"}))
	require.NoError(t, publish.ValidateProperties(iceberg.Properties{"tarn.publish.athena": "false"}))
}
