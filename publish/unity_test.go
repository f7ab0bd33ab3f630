package publish_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/delta"
	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/internal/testunity"
	"github.com/tarnhq/tarn/publish"
	"github.com/tarnhq/tarn/spec"
)

// runDelta runs a Delta publisher of srv's tables until the test ends.
func runDelta(t *testing.T, srv *testserver.Server) {
	t.Helper()
	dp, err := delta.New(delta.Config{}, delta.Deps{Tables: delta.CatalogTables(srv.Catalog)})
	require.NoError(t, err)
	srv.Catalog.AddCommitObserver(dp)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { dp.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// unityHarness is a Tarn catalog with its Delta publisher and a
// publisher to a unity target on the stand-in (internal/testunity: no
// real Unity Catalog server can be had here), with catalog lake.
type unityHarness struct {
	t    *testing.T
	srv  *testserver.Server
	uc   *testunity.Server
	pub  *publish.Publisher
	name string
}

func newUnityHarness(t *testing.T) *unityHarness {
	srv := testserver.Start(t)
	uc := testunity.Start(t, "s3cr3t-token")
	uc.CreateCatalog("lake")
	runDelta(t, srv)
	cfg := publish.TargetConfig{Name: "uc", Type: publish.TypeUnity, URI: uc.URI, Token: uc.Token, Catalog: "lake"}
	require.NoError(t, cfg.Validate())
	return &unityHarness{t: t, srv: srv, uc: uc, pub: runPublisher(t, srv, cfg), name: cfg.Name}
}

func (h *unityHarness) current(id catalog.Ident) *table.Table {
	h.t.Helper()
	tbl, err := h.srv.Catalog.TableIO(h.srv.Warehouse).LoadTable(context.Background(), append(table.Identifier{}, append(id.Namespace, id.Name)...))
	require.NoError(h.t, err)
	return tbl
}

func (h *unityHarness) commit(id catalog.Ident, updates ...table.Update) {
	h.t.Helper()
	_, err := h.srv.Catalog.CommitTable(context.Background(), h.srv.Warehouse, catalog.TableCommit{Ident: id, Updates: updates})
	require.NoError(h.t, err)
}

// waitStatus waits until id's status satisfies ok and returns it.
func (h *unityHarness) waitStatus(id catalog.Ident, what string, ok func(publish.TableStatus) bool) publish.TableStatus {
	h.t.Helper()
	var st publish.TableStatus
	require.Eventually(h.t, func() bool {
		st = tableStatus(h.pub, id)
		return ok(st)
	}, 30*time.Second, 20*time.Millisecond, "%s never happened: %+v", what, h.pub.Status())
	return st
}

// waitPublished waits until id is published at its current metadata and
// returns the Unity table full.
func (h *unityHarness) waitPublished(id catalog.Ident, full string) *testunity.Table {
	h.t.Helper()
	h.waitStatus(id, "published at the head", func(st publish.TableStatus) bool {
		return st.State == publish.StatePublished && st.MetadataLocation == h.current(id).MetadataLocation()
	})
	got := h.uc.Table(full)
	require.NotNil(h.t, got, "no Unity table %s", full)
	return got
}

func columnTexts(t *testunity.Table) []string {
	var out []string
	for _, c := range t.Columns {
		n := "null"
		if !c.Nullable {
			n = "not null"
		}
		out = append(out, c.Name+" "+c.TypeName+" "+c.TypeText+" "+n)
	}
	return out
}

// TestUnityPublishesDeltaView: a table with tarn.delta.enabled=true is
// registered in Unity (the stand-in, with Unity's routes and errors) as
// an EXTERNAL DELTA table at the Delta root Tarn's Delta publisher
// records, with the Delta schema's columns; commits that change nothing
// Unity holds make no write; an added column replaces the table (new
// table_id, the new column listed); an Iceberg-only table is not
// published and its status says why, until its Delta output is turned
// on; a foreign table under the name is a conflict, nothing is deleted,
// until resume; a drop removes the Unity table.
func TestUnityPublishesDeltaView(t *testing.T) {
	h := newUnityHarness(t)
	ctx := context.Background()
	id := catalog.Ident{Namespace: catalog.Namespace{"air", "eu"}, Name: "Flights"}
	plain := catalog.Ident{Namespace: catalog.Namespace{"air"}, Name: "plain"}
	require.NoError(t, h.srv.Catalog.CreateNamespace(ctx, catalog.Namespace{"air"}, nil))
	require.NoError(t, h.srv.Catalog.CreateNamespace(ctx, id.Namespace, nil))
	_, err := h.srv.Catalog.CreateTable(ctx, h.srv.Warehouse, id.Namespace, spec.CreateTableRequest{Name: id.Name, Schema: flightsSchema,
		Properties: iceberg.Properties{delta.PropEnabled: "true"}})
	require.NoError(t, err)
	_, err = h.srv.Catalog.CreateTable(ctx, h.srv.Warehouse, plain.Namespace, spec.CreateTableRequest{Name: plain.Name, Schema: flightsSchema})
	require.NoError(t, err)

	const full = "lake.air_eu.flights"
	got := h.waitPublished(id, full)
	root := h.current(id).Properties()[delta.PropLocation]
	require.NotEmpty(t, root)
	require.Equal(t, "EXTERNAL", got.TableType)
	require.Equal(t, "DELTA", got.DataSourceFormat)
	require.Equal(t, root, got.StorageLocation)
	require.Equal(t, []string{"id LONG bigint not null", "origin STRING string null"}, columnTexts(got))
	require.JSONEq(t, `{"name":"id","type":"long","nullable":false,"metadata":{}}`, got.Columns[0].TypeJSON)
	require.Equal(t, catalog.FormatIdent(id), got.Properties["tarn.table"])
	st := tableStatus(h.pub, id)
	require.Equal(t, full, st.Remote)

	// The Iceberg-only table: not published, and the status says why.
	ps := h.waitStatus(plain, "unsupported", func(st publish.TableStatus) bool { return st.State == publish.StateUnsupported })
	require.Contains(t, ps.Unsupported, "has no Delta view")
	require.Empty(t, ps.Error)
	require.Nil(t, h.uc.Table("lake.air.plain"))

	// Appends change nothing Unity holds: no new table, same table_id.
	creates := h.uc.Calls("POST /tables")
	for b := range 3 {
		_, err := h.current(id).AppendTable(ctx, flightsBatch(t, b*10, 10), 10, nil)
		require.NoError(t, err)
		require.Equal(t, got.TableID, h.waitPublished(id, full).TableID)
	}
	require.Equal(t, creates, h.uc.Calls("POST /tables"), "an append needs no Unity write")

	// Schema evolution: the new column is listed (the table is replaced).
	evolved := iceberg.NewSchema(1, append(flightsSchema.Fields(),
		iceberg.NestedField{ID: 3, Name: "gate", Type: iceberg.DecimalTypeOf(9, 2)})...)
	h.commit(id, table.NewAddSchemaUpdate(evolved), table.NewSetCurrentSchemaUpdate(-1))
	ev := h.waitPublished(id, full)
	require.Equal(t, []string{"id LONG bigint not null", "origin STRING string null", "gate DECIMAL decimal(9,2) null"}, columnTexts(ev))
	require.Equal(t, 9, *ev.Columns[2].TypePrecision)
	require.NotEqual(t, got.TableID, ev.TableID)
	require.Equal(t, root, ev.StorageLocation)

	// Turning the Delta output on publishes the Iceberg-only table.
	h.commit(plain, table.NewSetPropertiesUpdate(iceberg.Properties{delta.PropEnabled: "true"}))
	pt := h.waitPublished(plain, "lake.air.plain")
	require.Equal(t, h.current(plain).Properties()[delta.PropLocation], pt.StorageLocation)
	require.Empty(t, tableStatus(h.pub, plain).Unsupported)

	// A foreign table under the name: conflict, nothing deleted.
	foreign := *pt
	foreign.StorageLocation = "s3://someone-else/theirs"
	foreign.Properties = map[string]string{}
	h.uc.PutTable(foreign)
	theirs := h.uc.Table("lake.air.plain").TableID
	h.commit(plain, table.NewSetPropertiesUpdate(iceberg.Properties{"k": "v"}))
	cs := h.waitStatus(plain, "conflict", func(st publish.TableStatus) bool { return st.State == publish.StateConflict })
	require.Contains(t, cs.Conflict, "was changed outside Tarn")
	require.Equal(t, theirs, h.uc.Table("lake.air.plain").TableID, "the foreign table stays")
	_, err = h.pub.Resume(ctx, h.name, plain)
	require.NoError(t, err)
	back := h.waitPublished(plain, "lake.air.plain")
	require.NotEqual(t, theirs, back.TableID)
	require.Equal(t, pt.StorageLocation, back.StorageLocation)

	// Drop: the Unity table goes; the Delta files stay (EXTERNAL).
	require.NoError(t, h.srv.Catalog.DropTable(ctx, h.srv.Warehouse, id, false))
	require.Eventually(t, func() bool { return h.uc.Table(full) == nil }, 30*time.Second, 20*time.Millisecond)
}

// TestUnityDownCatchesUp: while the Unity server is down, commits are not
// lost: the status shows failing with the error; once it is back the
// table catches up (the new column listed) and the error clears.
func TestUnityDownCatchesUp(t *testing.T) {
	h := newUnityHarness(t)
	ctx := context.Background()
	id := catalog.Ident{Namespace: catalog.Namespace{"air"}, Name: "flights"}
	require.NoError(t, h.srv.Catalog.CreateNamespace(ctx, id.Namespace, nil))
	_, err := h.srv.Catalog.CreateTable(ctx, h.srv.Warehouse, id.Namespace, spec.CreateTableRequest{Name: id.Name, Schema: flightsSchema,
		Properties: iceberg.Properties{delta.PropEnabled: "true"}})
	require.NoError(t, err)
	h.waitPublished(id, "lake.air.flights")

	h.uc.Stop()
	evolved := iceberg.NewSchema(1, append(flightsSchema.Fields(),
		iceberg.NestedField{ID: 3, Name: "gate", Type: iceberg.PrimitiveTypes.Int32})...)
	h.commit(id, table.NewAddSchemaUpdate(evolved), table.NewSetCurrentSchemaUpdate(-1))
	down := h.waitStatus(id, "failing", func(st publish.TableStatus) bool { return st.State == publish.StateFailing })
	require.Contains(t, down.Error, "connection refused")

	h.uc.Restart(t)
	got := h.waitPublished(id, "lake.air.flights")
	require.Len(t, got.Columns, 3)
	require.Empty(t, tableStatus(h.pub, id).Error)
}

// TestUnityBearerToken: a wrong token is refused by Unity (401
// UNAUTHENTICATED), shown as the table's error and retried.
func TestUnityBearerToken(t *testing.T) {
	srv := testserver.Start(t)
	uc := testunity.Start(t, "right")
	uc.CreateCatalog("lake")
	runDelta(t, srv)
	cfg := publish.TargetConfig{Name: "uc", Type: publish.TypeUnity, URI: uc.URI, Token: "wrong", Catalog: "lake"}
	pub := runPublisher(t, srv, cfg)
	ctx := context.Background()
	id := catalog.Ident{Namespace: catalog.Namespace{"air"}, Name: "flights"}
	require.NoError(t, srv.Catalog.CreateNamespace(ctx, id.Namespace, nil))
	_, err := srv.Catalog.CreateTable(ctx, srv.Warehouse, id.Namespace, spec.CreateTableRequest{Name: id.Name, Schema: flightsSchema,
		Properties: iceberg.Properties{delta.PropEnabled: "true"}})
	require.NoError(t, err)
	var st publish.TableStatus
	require.Eventually(t, func() bool {
		st = tableStatus(pub, id)
		return st.State == publish.StateFailing && st.Error != "" && !strings.Contains(st.Error, "not written yet")
	}, 30*time.Second, 20*time.Millisecond, "%+v", pub.Status())
	require.Contains(t, st.Error, "HTTP 401 UNAUTHENTICATED")
	require.Nil(t, uc.Table("lake.air.flights"))
}
