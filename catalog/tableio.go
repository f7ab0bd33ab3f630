package catalog

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go/table"
)

// TableIO is iceberg-go's table.CatalogIO over a Catalog and one of its
// warehouses. In-process writers (ingest, maintenance) load tables through
// it and build snapshots with iceberg-go's transaction API; their commits
// then take exactly the path REST clients' do: requirements checked,
// metadata written durably, pointer compare-and-swap (CommitTable).
type TableIO struct {
	cat *Catalog
	wh  *Warehouse
}

var _ table.CatalogIO = (*TableIO)(nil)

// TableIO returns the table.CatalogIO of warehouse wh.
func (c *Catalog) TableIO(wh *Warehouse) *TableIO { return &TableIO{cat: c, wh: wh} }

// identFromIceberg splits an iceberg-go identifier (namespace levels, then
// the name). Errors wrap ErrInvalidArgument.
func identFromIceberg(ident table.Identifier) (Ident, error) {
	if len(ident) < 2 {
		return Ident{}, Errorf(ErrInvalidArgument, "identifier %v needs a namespace and a name", ident)
	}
	id := Ident{Namespace: Namespace(ident[:len(ident)-1]), Name: ident[len(ident)-1]}
	return id, id.Validate()
}

// LoadTable implements table.CatalogIO: the table's current metadata, with
// the warehouse's FileIO, which removes no metadata file (confinedIO: the
// catalog's commit deletes those that leave the metadata log, once). Errors: ErrNoSuchTable and those of
// Catalog.LoadTable.
func (t *TableIO) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	id, err := identFromIceberg(ident)
	if err != nil {
		return nil, err
	}
	lt, err := t.cat.LoadTable(ctx, t.wh, id)
	if err != nil {
		return nil, err
	}
	md, err := lt.TableMetadata()
	if err != nil {
		return nil, fmt.Errorf("parse metadata of %s at %s: %w", id, lt.MetadataLocation, err)
	}
	return table.New(ident, md, lt.MetadataLocation, t.fileIOFunc(lt.MetadataLocation, id, nil, false, nil), t), nil
}

// CommitTable implements table.CatalogIO through Catalog.CommitTable and
// returns the new metadata and its location. Errors as Catalog.CommitTable;
// a failed requirement wraps ErrCommitFailed.
//
// It does not ask the Owners hook: TableIO is the in-process writers'
// path (a topic's pipeline, its manager's spec evolution, maintenance),
// which must keep writing the tables Tarn owns. REST never reaches it.
func (t *TableIO) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	id, err := identFromIceberg(ident)
	if err != nil {
		return nil, "", err
	}
	lt, err := t.cat.commitTable(ctx, t.wh, TableCommit{Ident: id, Requirements: reqs, Updates: updates})
	if err != nil {
		return nil, "", err
	}
	md, err := lt.TableMetadata()
	if err != nil {
		return nil, "", err
	}
	return md, lt.MetadataLocation, nil
}
