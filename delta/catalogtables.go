package delta

import (
	"context"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/tarnhq/tarn/catalog"
)

// CatalogTables is Tables over a Catalog: each table through the
// warehouse its metadata lies in, commits through TableIO (Tarn's own
// writers' path, which owned tables and PropLocation accept).
func CatalogTables(cat *catalog.Catalog) Tables { return catalogTables{cat} }

type catalogTables struct{ cat *catalog.Catalog }

func ident(id catalog.Ident) table.Identifier {
	return append(append(table.Identifier{}, id.Namespace...), id.Name)
}

func (c catalogTables) LoadTable(ctx context.Context, id catalog.Ident) (*table.Table, error) {
	wh, err := c.cat.TableWarehouse(ctx, id)
	if err != nil {
		return nil, err
	}
	return c.cat.TableIO(wh).LoadTable(ctx, ident(id))
}

func (c catalogTables) ListTables(ctx context.Context) ([]catalog.Ident, error) {
	return c.cat.AllTables(ctx)
}

// SetProperties commits a set-properties update (no requirement but the
// table's uuid: iceberg-go's transaction asserts it).
func (c catalogTables) SetProperties(ctx context.Context, id catalog.Ident, props map[string]string) error {
	tbl, err := c.LoadTable(ctx, id)
	if err != nil {
		return err
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties(props)); err != nil {
		return err
	}
	_, err = tx.Commit(ctx)
	return err
}
