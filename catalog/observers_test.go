package catalog_test

import (
	"context"
	"sync"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/spec"
)

// recorder is a CommitObserver keeping what it was told.
type recorder struct {
	mu    sync.Mutex
	props []iceberg.Properties
}

func (r *recorder) TableCommitted(_ catalog.Ident, md table.Metadata) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.props = append(r.props, md.Properties())
}

// TestCommitObserverSeesEveryCommit: a create, a REST commit and an
// in-process writer's commit (TableIO) each reach the observer once, with
// the metadata they produced; a no-op commit does not.
func TestCommitObserverSeesEveryCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cat, wh := newTestCatalog(t)
	rec := &recorder{}
	cat.AddCommitObserver(rec)
	require.NoError(t, cat.CreateNamespace(ctx, catalog.Namespace{"ns"}, nil))
	id := catalog.Ident{Namespace: catalog.Namespace{"ns"}, Name: "t"}
	_, err := cat.CreateTable(ctx, wh, id.Namespace, spec.CreateTableRequest{Name: "t",
		Schema: iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "v", Type: iceberg.PrimitiveTypes.Int64})})
	require.NoError(t, err)
	_, err = cat.CommitTable(ctx, wh, catalog.TableCommit{Ident: id, Updates: []table.Update{
		table.NewSetPropertiesUpdate(iceberg.Properties{"k": "rest"})}})
	require.NoError(t, err)
	tbl, err := cat.TableIO(wh).LoadTable(ctx, table.Identifier{"ns", "t"})
	require.NoError(t, err)
	tx := tbl.NewTransaction()
	require.NoError(t, tx.SetProperties(iceberg.Properties{"k": "tableio"}))
	_, err = tx.Commit(ctx)
	require.NoError(t, err)

	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.props, 3)
	require.Empty(t, rec.props[0]["k"])
	require.Equal(t, "rest", rec.props[1]["k"])
	require.Equal(t, "tableio", rec.props[2]["k"])
}

// TestTarnOnlyPropertiesRefusedToClients: tarn.delta.location is Tarn's
// (the Delta publisher records it through TableIO); a client's create,
// commit or transaction that sets or removes it is a 400, while Tarn's
// own writer may set it.
func TestTarnOnlyPropertiesRefusedToClients(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cat, wh := newTestCatalog(t)
	require.NoError(t, cat.CreateNamespace(ctx, catalog.Namespace{"ns"}, nil))
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "v", Type: iceberg.PrimitiveTypes.Int64})
	_, err := cat.CreateTable(ctx, wh, catalog.Namespace{"ns"}, spec.CreateTableRequest{Name: "bad", Schema: sc,
		Properties: map[string]string{catalog.PropDeltaLocation: "file:///elsewhere"}})
	require.ErrorIs(t, err, catalog.ErrInvalidArgument)

	id := catalog.Ident{Namespace: catalog.Namespace{"ns"}, Name: "t"}
	_, err = cat.CreateTable(ctx, wh, id.Namespace, spec.CreateTableRequest{Name: "t", Schema: sc})
	require.NoError(t, err)
	for name, u := range map[string]table.Update{
		"set":    table.NewSetPropertiesUpdate(iceberg.Properties{catalog.PropDeltaLocation: "file:///elsewhere"}),
		"remove": table.NewRemovePropertiesUpdate([]string{catalog.PropDeltaLocation}),
	} {
		_, err = cat.CommitTable(ctx, wh, catalog.TableCommit{Ident: id, Updates: []table.Update{u}})
		require.ErrorIs(t, err, catalog.ErrInvalidArgument, name)
		err = cat.CommitTransaction(ctx, wh, []catalog.TableCommit{{Ident: id, Updates: []table.Update{u}}})
		require.ErrorIs(t, err, catalog.ErrInvalidArgument, name+" in a transaction")
	}
	// The switch itself is a client's to set.
	_, err = cat.CommitTable(ctx, wh, catalog.TableCommit{Ident: id, Updates: []table.Update{
		table.NewSetPropertiesUpdate(iceberg.Properties{catalog.PropDeltaEnabled: "true"})}})
	require.NoError(t, err)

	tbl, err := cat.TableIO(wh).LoadTable(ctx, table.Identifier{"ns", "t"})
	require.NoError(t, err)
	tx := tbl.NewTransaction()
	require.NoError(t, tx.SetProperties(iceberg.Properties{catalog.PropDeltaLocation: "file:///x/_delta"}))
	got, err := tx.Commit(ctx)
	require.NoError(t, err)
	require.Equal(t, "file:///x/_delta", got.Properties()[catalog.PropDeltaLocation])
}

// moves records the drop and rename notices (catalog.DropObserver,
// catalog.RenameObserver).
type moves struct {
	recorder
	events []string
}

func (m *moves) TableDropped(id catalog.Ident) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, "drop "+id.String())
}

func (m *moves) TableRenamed(from, to catalog.Ident) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, "rename "+from.String()+" "+to.String())
}

// TestObserverSeesDropAndRename: an observer with the optional drop and
// rename capabilities is told of a table's rename and drop (the catalogs
// Tarn publishes to follow them), and not of a failed one.
func TestObserverSeesDropAndRename(t *testing.T) {
	ctx := context.Background()
	cat, wh := newTestCatalog(t)
	m := &moves{}
	cat.AddCommitObserver(m)
	require.NoError(t, cat.CreateNamespace(ctx, catalog.Namespace{"ns"}, nil))
	id := catalog.Ident{Namespace: catalog.Namespace{"ns"}, Name: "t"}
	to := catalog.Ident{Namespace: catalog.Namespace{"ns"}, Name: "u"}
	_, err := cat.CreateTable(ctx, wh, id.Namespace, spec.CreateTableRequest{Name: "t",
		Schema: iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "v", Type: iceberg.PrimitiveTypes.Int64})})
	require.NoError(t, err)
	require.NoError(t, cat.RenameTable(ctx, wh, id, to))
	require.ErrorIs(t, cat.RenameTable(ctx, wh, id, to), catalog.ErrNoSuchTable)
	require.NoError(t, cat.DropTable(ctx, wh, to, false))
	require.ErrorIs(t, cat.DropTable(ctx, wh, to, false), catalog.ErrNoSuchTable)
	m.mu.Lock()
	defer m.mu.Unlock()
	require.Equal(t, []string{"rename ns.t ns.u", "drop ns.u"}, m.events)
}

// TestCommitObserverSeesRegisteredTable pins a missed notice: RegisterTable
// (and its overwrite) swapped the pointer without telling any observer, so
// a table brought in by registerTable reached the publish targets and the
// Delta log only at the next pass over all tables (up to 5 minutes
// later), and an overwrite's new pointer likewise. A registered table is a
// table: the observer is told, with the registered metadata.
func TestCommitObserverSeesRegisteredTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cat, wh := newTestCatalog(t)
	require.NoError(t, cat.CreateNamespace(ctx, catalog.Namespace{"ns"}, nil))
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "v", Type: iceberg.PrimitiveTypes.Int64})
	first, err := cat.CreateTable(ctx, wh, catalog.Namespace{"ns"}, spec.CreateTableRequest{Name: "src", Schema: sc,
		Properties: map[string]string{"k": "one"}})
	require.NoError(t, err)
	second, err := cat.CommitTable(ctx, wh, catalog.TableCommit{Ident: catalog.Ident{Namespace: catalog.Namespace{"ns"}, Name: "src"},
		Updates: []table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"k": "two"})}})
	require.NoError(t, err)
	// Its files may belong to one table only: drop it, keeping them.
	require.NoError(t, cat.DropTable(ctx, wh, catalog.Ident{Namespace: catalog.Namespace{"ns"}, Name: "src"}, false))

	m := &moves{}
	cat.AddCommitObserver(m)
	_, err = cat.RegisterTable(ctx, wh, catalog.Namespace{"ns"}, spec.RegisterTableRequest{Name: "reg", MetadataLocation: first.MetadataLocation})
	require.NoError(t, err)
	_, err = cat.RegisterTable(ctx, wh, catalog.Namespace{"ns"}, spec.RegisterTableRequest{Name: "reg", MetadataLocation: second.MetadataLocation, Overwrite: true})
	require.NoError(t, err)
	// A refused register (the name is taken, no overwrite) tells nobody.
	_, err = cat.RegisterTable(ctx, wh, catalog.Namespace{"ns"}, spec.RegisterTableRequest{Name: "reg", MetadataLocation: first.MetadataLocation})
	require.ErrorIs(t, err, catalog.ErrTableAlreadyExists)

	m.mu.Lock()
	defer m.mu.Unlock()
	require.Len(t, m.props, 2)
	require.Equal(t, "one", m.props[0]["k"])
	require.Equal(t, "two", m.props[1]["k"])
	require.Empty(t, m.events)
}
