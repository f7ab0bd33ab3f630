package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/tarnhq/tarn/spec"
)

// LoadTable returns the current metadata of a table (REST loadTable).
// Errors: ErrNoSuchTable (also when ident names a view),
// ErrMetadataNotFound, ErrInvalidArgument.
func (c *Catalog) LoadTable(ctx context.Context, wh *Warehouse, id Ident) (*Loaded, error) {
	return c.load(ctx, wh, id, KindTable)
}

// TableExists reports whether a table (not a view) has this identifier.
func (c *Catalog) TableExists(ctx context.Context, id Ident) (bool, error) {
	return c.exists(ctx, id, KindTable)
}

// ListTables lists the tables of ns, paged. Errors: ErrNoSuchNamespace.
func (c *Catalog) ListTables(ctx context.Context, ns Namespace, page Page) ([]Ident, string, error) {
	return c.list(ctx, ns, KindTable, page)
}

// CreateTable creates a table from req in ns (REST createTable), assigning
// fresh field, spec and sort-order ids as the spec requires. The location
// is req.Location if it lies inside the warehouse, else a new one under it.
// With req.StageCreate nothing is persisted: the result carries metadata
// for a later commit with assert-create. Errors: ErrInvalidArgument,
// ErrLimitExceeded (the identifier, a location or the properties past a
// limit of limits.go; nothing is written), ErrNoSuchNamespace,
// ErrTableAlreadyExists, ErrViewAlreadyExists.
func (c *Catalog) CreateTable(ctx context.Context, wh *Warehouse, ns Namespace, req spec.CreateTableRequest) (*Loaded, error) {
	id := Ident{Namespace: ns, Name: req.Name}
	if err := id.ValidateNew(); err != nil {
		return nil, err
	}
	if req.Schema == nil {
		return nil, fmt.Errorf("%w: create table %s: schema is required", ErrInvalidArgument, id)
	}
	if err := checkClientProperties(nil, req.Properties); err != nil {
		return nil, err
	}
	loc, err := c.createLocation(ctx, wh, id, KindTable, req.Location)
	if err != nil {
		return nil, err
	}
	sortOrder := table.UnsortedSortOrder
	if req.WriteOrder != nil {
		sortOrder = req.WriteOrder.SortOrder
	}
	var partitions *iceberg.PartitionSpec
	if req.PartitionSpec != nil {
		partitions = &req.PartitionSpec.PartitionSpec
	}
	// NewMetadata resolves the spec's and order's source IDs through
	// req.Schema by name and assigns fresh IDs to all three.
	md, err := table.NewMetadata(req.Schema, partitions, sortOrder, loc, iceberg.Properties(req.Properties))
	if err != nil {
		return nil, fmt.Errorf("%w: create table %s: %v", ErrInvalidArgument, id, err)
	}
	if err := c.checkTableProperties(id, nil, md.Properties()); err != nil {
		return nil, err
	}
	js, err := json.Marshal(md)
	if err != nil {
		return nil, err
	}
	if err := checkTableMetadata(nil, md, js); err != nil {
		return nil, fmt.Errorf("create table %s: %w", id, err)
	}
	if req.StageCreate {
		// Nothing is recorded, so the store does not check the
		// directories; but the answer may carry vended credentials for
		// them, so a staged table may not overlap another either. (The
		// final create commit is checked again, atomically.)
		locs, err := wh.tableLocations(md)
		if err != nil {
			return nil, err
		}
		if _, taken, err := c.findPointer(ctx, id, func(p Pointer) bool { return LocationsOverlap(locs, PointerLocations(p)) }); err != nil {
			return nil, err
		} else if taken {
			return nil, LocationInUseError(KindTable, id, locs)
		}
		// No catalog state is written for a staged create, but on a file://
		// warehouse the table's directories are made now: DuckDB's
		// CREATE TABLE AS writes data files before it commits and does not
		// create parent directories itself. An abandoned stage leaves only
		// empty directories.
		if err := wh.prepareLocation(loc); err != nil {
			return nil, err
		}
		if err := c.staged.remember(ctx, wh, id, locs, time.Now()); err != nil {
			return nil, err
		}
		return &Loaded{Ident: id, MetadataJSON: js, Locations: locs}, nil
	}
	locs, err := wh.tableLocations(md)
	if err != nil {
		return nil, err
	}
	mloc, err := c.writeTableMetadata(ctx, wh, md, js, 0)
	if err != nil {
		return nil, err
	}
	err = c.store.CommitPointers(ctx, []PointerChange{{Ident: id, Kind: KindTable, MetadataLocation: mloc, Locations: locs}})
	if err != nil {
		return nil, c.abandon(ctx, wh, err, mloc)
	}
	c.metrics.commits.Inc()
	c.forgetStaged(ctx, wh, id)
	c.notifyCommitted(id, md)
	return &Loaded{Ident: id, MetadataLocation: mloc, MetadataJSON: js, Version: 1, Locations: locs, cached: c.meta.put(mloc, js, md)}, nil
}

// checkNameFree returns the already-exists error of whatever holds id, for
// creating a want there.
func (c *Catalog) checkNameFree(ctx context.Context, id Ident, want Kind) error {
	for _, k := range []Kind{KindTable, KindView} {
		if _, err := c.store.LoadPointer(ctx, id, k); err == nil {
			return AlreadyExistsError(want, k, id)
		} else if !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	return nil
}

// createLocation runs the checks every create of a table or view (kind)
// at id shares, in this order: no topic reserves the name
// (checkNameUnreserved), the namespace exists, no table or view holds the
// name (checkNameFree); then it returns the new one's location
// (Warehouse.resolveLocation: requested when given, inside the
// warehouse, else one under the namespace's). Errors:
// ErrTableAlreadyExists or ErrViewAlreadyExists, ErrNoSuchNamespace,
// ErrInvalidArgument.
func (c *Catalog) createLocation(ctx context.Context, wh *Warehouse, id Ident, kind Kind, requested string) (string, error) {
	if err := c.checkNameUnreserved(ctx, id, "create "+kind.String()); err != nil {
		return "", err
	}
	nsProps, err := c.store.LoadNamespace(ctx, id.Namespace)
	if err != nil {
		return "", err
	}
	if err := c.checkNameFree(ctx, id, kind); err != nil {
		return "", err
	}
	return wh.resolveLocation(requested, id, nsProps)
}

// readRegistered reads the metadata file a register names, which must lie
// inside wh. Errors: ErrInvalidArgument (outside the warehouse, or no
// such file), the warehouse's read errors.
func readRegistered(ctx context.Context, wh *Warehouse, metadataLocation string) ([]byte, error) {
	if err := wh.checkLocation("metadata-location", metadataLocation); err != nil {
		return nil, err
	}
	js, err := wh.readMetadataJSON(ctx, metadataLocation)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: metadata file %s does not exist", ErrInvalidArgument, metadataLocation)
	}
	return js, err
}

// writeTableMetadata writes md durably as metadata file number version
// under md's location (or write.metadata.path) and returns its location.
func (c *Catalog) writeTableMetadata(ctx context.Context, wh *Warehouse, md table.Metadata, js []byte, version int) (string, error) {
	return writeMetadataFile(ctx, wh, md.Location(), md.Properties(), js, version)
}

// writeMetadataFile writes table or view metadata JSON durably as
// <location>/metadata/<version>-<uuid>[.codec].metadata.json (iceberg-go's
// location provider, which honours write.metadata.path and
// write.metadata.compression-codec) and returns the file's location.
// Errors wrap ErrInvalidArgument when a location is outside the warehouse.
func writeMetadataFile(ctx context.Context, wh *Warehouse, location string, props iceberg.Properties, js []byte, version int) (string, error) {
	if err := wh.checkLocation("location", location); err != nil {
		return "", err
	}
	provider, err := table.LoadLocationProvider(location, props)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalidArgument, err)
	}
	mloc, err := provider.NewTableMetadataFileLocation(version)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalidArgument, err)
	}
	if err := wh.checkLocation("metadata location", mloc); err != nil {
		return "", err
	}
	data, err := encodeMetadata(js, props.Get(table.MetadataCompressionKey, table.MetadataCompressionDefault))
	if err != nil {
		return "", err
	}
	if err := wh.WriteNew(ctx, mloc, data); err != nil {
		return "", fmt.Errorf("write metadata %s: %w", mloc, err)
	}
	return mloc, nil
}

// abandon handles a failed pointer commit after new metadata files were
// written. When the store says the commit certainly did not happen (a
// catalog sentinel), the files are removed and err returned; otherwise the
// files may be live, so they stay and the error becomes ErrCommitStateUnknown.
func (c *Catalog) abandon(ctx context.Context, wh *Warehouse, err error, written ...string) error {
	known := errors.Is(err, ErrConflict) || errors.Is(err, ErrAlreadyExists) || errors.Is(err, ErrNotFound) ||
		errors.Is(err, ErrInvalidArgument) || errors.Is(err, context.Canceled)
	if !known {
		return fmt.Errorf("%w: %w", ErrCommitStateUnknown, err)
	}
	c.removeFiles(ctx, wh, written)
	return err
}

// DropTable drops a table's pointer (REST dropTable); with purge it then
// deletes every file the table's metadata references inside the warehouse
// (data, delete, manifest, manifest-list, statistics and metadata files).
// Errors: ErrNoSuchTable; ErrTableOwned when an enabled topic owns the
// table (see Owners); ErrInvalidArgument through another warehouse's
// prefix (a purge would delete nothing there, leaving the files behind). A table owned by a disabled topic is dropped, and
// the Owners hook told (TableDropped).
func (c *Catalog) DropTable(ctx context.Context, wh *Warehouse, id Ident, purge bool) error {
	if err := id.Validate(); err != nil {
		return err
	}
	owned, err := c.checkDroppable(id)
	if err != nil {
		return err
	}
	if err := c.checkOwned(ctx, wh, KindTable, id); err != nil {
		return err
	}
	p, err := c.store.DropPointer(ctx, id, KindTable)
	if err != nil {
		return err
	}
	c.notifyDropped(id)
	if owned {
		if o := c.ownersHook(); o != nil {
			if err := o.TableDropped(ctx, id); err != nil {
				c.log.Error("forget the topic of a dropped table", "table", id.String(), "err", err)
			}
		}
	}
	if purge {
		c.purgeTable(ctx, wh, id, p)
	}
	return nil
}

// RenameTable moves a table to a new identifier, possibly in another
// namespace; its files stay where they are. Errors: ErrNoSuchTable,
// ErrNoSuchNamespace, ErrTableAlreadyExists, ErrViewAlreadyExists,
// ErrTableOwnedForbidden (a topic owns from), ErrTableAlreadyExists (a
// topic owns or reserves to; see Owners).
func (c *Catalog) RenameTable(ctx context.Context, wh *Warehouse, from, to Ident) error {
	if err := c.checkWritable(from, "rename"); err != nil {
		return err
	}
	if err := c.checkNameUnreserved(ctx, to, "rename "+from.String()+" to"); err != nil {
		return err
	}
	if err := c.checkOwned(ctx, wh, KindTable, from); err != nil {
		return err
	}
	if err := c.rename(ctx, from, to, KindTable); err != nil {
		return err
	}
	c.notifyRenamed(from, to)
	return nil
}

// checkOwned loads id's pointer and checks that it belongs to wh
// (Warehouse.checkOwns). Errors: ErrNoSuchTable / ErrNoSuchView,
// ErrInvalidArgument.
func (c *Catalog) checkOwned(ctx context.Context, wh *Warehouse, kind Kind, id Ident) error {
	if err := id.Validate(); err != nil {
		return err
	}
	p, err := c.store.LoadPointer(ctx, id, kind)
	if err != nil {
		return err
	}
	return wh.checkOwns(kind, id, p)
}

func (c *Catalog) rename(ctx context.Context, from, to Ident, kind Kind) error {
	if err := from.Validate(); err != nil {
		return err
	}
	if err := to.ValidateNew(); err != nil {
		return err
	}
	return c.store.RenamePointer(ctx, from, to, kind)
}

// RegisterTable creates a table from an existing metadata file (REST
// registerTable). The file and the table location must lie inside the
// warehouse. With overwrite an existing table's pointer is replaced.
// Errors: ErrInvalidArgument (outside the warehouse, unreadable or invalid
// metadata), ErrNoSuchNamespace, ErrTableAlreadyExists,
// ErrTableOwnedForbidden (overwrite of a table a topic owns).
func (c *Catalog) RegisterTable(ctx context.Context, wh *Warehouse, ns Namespace, req spec.RegisterTableRequest) (*Loaded, error) {
	id := Ident{Namespace: ns, Name: req.Name}
	if err := id.ValidateNew(); err != nil {
		return nil, err
	}
	if req.Overwrite {
		if err := c.checkWritable(id, "overwrite"); err != nil {
			return nil, err
		}
	}
	if err := c.checkNameUnreserved(ctx, id, "register table"); err != nil {
		return nil, err
	}
	js, err := readRegistered(ctx, wh, req.MetadataLocation)
	if err != nil {
		return nil, err
	}
	md, err := table.ParseMetadataBytes(js)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not valid table metadata: %v", ErrInvalidArgument, req.MetadataLocation, err)
	}
	locs, err := wh.tableLocations(md)
	if err != nil {
		return nil, err
	}
	change := PointerChange{Ident: id, Kind: KindTable, MetadataLocation: req.MetadataLocation, Locations: locs}
	if req.Overwrite {
		if cur, err := c.store.LoadPointer(ctx, id, KindTable); err == nil {
			change.ExpectedVersion = cur.Version
		} else if !errors.Is(err, ErrNoSuchTable) {
			return nil, err
		}
	}
	if err := c.store.CommitPointers(ctx, []PointerChange{change}); err != nil {
		return nil, err
	}
	c.metrics.commits.Inc()
	// A registered table is a table: the formats and catalogs that follow
	// commits (the Delta log, the publish targets) learn of it now, not
	// at their next pass over all tables.
	c.notifyCommitted(id, md)
	return &Loaded{Ident: id, MetadataLocation: req.MetadataLocation, MetadataJSON: js, Version: change.ExpectedVersion + 1, Locations: locs}, nil
}

// metadataReadError turns a failed read of a pointer's metadata file into
// ErrMetadataNotFound (404 NotFoundException, in the Java reference's
// words) when the file is gone, and passes other errors on.
func metadataReadError(err error, loc string) error {
	if errors.Is(err, os.ErrNotExist) {
		return Errorf(ErrMetadataNotFound, "Failed to open input stream for file: %s", loc)
	}
	return fmt.Errorf("read metadata %s: %w", loc, err)
}

// AllTables lists every table of the catalog, walking every namespace
// level. In-process jobs that pass over all tables (maintenance, the
// Delta publisher) use it.
func (c *Catalog) AllTables(ctx context.Context) ([]Ident, error) {
	var ids []Ident
	var walk func(ns Namespace) error
	walk = func(ns Namespace) error {
		if len(ns) > 0 {
			ts, _, err := c.ListTables(ctx, ns, Page{})
			if err != nil && !errors.Is(err, ErrNoSuchNamespace) {
				return err
			}
			ids = append(ids, ts...)
		}
		children, _, err := c.ListNamespaces(ctx, ns, Page{})
		if err != nil && !errors.Is(err, ErrNoSuchNamespace) {
			return err
		}
		for _, ch := range children {
			if err := walk(ch); err != nil {
				return err
			}
		}
		return nil
	}
	return ids, walk(nil)
}
