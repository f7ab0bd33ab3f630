package publish

import (
	"context"
	"errors"
	"fmt"
	"sync"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/tarnhq/tarn/catalog"
)

// IcebergREST publishes to another Iceberg REST catalog (Apache Iceberg's
// REST server, Lakekeeper, Polaris / Snowflake Open Catalog) through
// iceberg-go's REST client: the same namespace levels and table name as in
// Tarn, the namespace levels created when missing, and the target's table
// registered with Tarn's current metadata file (registerTable, REST spec
// POST /v1/{prefix}/namespaces/{namespace}/register), so the target's
// metadata-location is Tarn's file and no metadata is copied or written.
//
// Moving the pointer: the spec has no conditional "set metadata-location".
// A commit (updateTable) would make the target write a metadata file of
// its own into Tarn's table location, and registerTable with overwrite is
// refused by Apache Iceberg's reference catalogs (Catalog.registerTable
// with overwrite: UnsupportedOperationException, 406) and not sent by
// iceberg-go's client. So an update checks that the target's table is the
// one Tarn last wrote (its metadata-location as recorded, or a newer file
// of this table: Tarn's write whose record a crash lost), drops it
// without purge (purgeRequested=false: the entry goes, no file is
// deleted) and registers the new file. A table changed by someone else is
// never dropped: Publish returns ErrConflict. Between the drop and the
// register a reader finds no table (one round trip); a crash there leaves
// no table, which the retry (or the restart's pass) registers again.
type IcebergREST struct {
	cfg TargetConfig

	mu  sync.Mutex
	cat *rest.Catalog // nil until the first call that reached the target
}

// NewIcebergREST returns the iceberg-rest target of cfg. The client is
// made at the first publish (GET /v1/config, the OAuth2 token when
// cfg.Credential is set), so a target that is down at startup shows as
// failing and catches up, instead of stopping tarn serve.
func NewIcebergREST(cfg TargetConfig) *IcebergREST { return &IcebergREST{cfg: cfg} }

// client returns the REST client, made on first use: cfg.URI, its
// /v1/config (prefix, defaults and overrides) for cfg.Warehouse, OAuth2
// client credentials cfg.Credential ("client_id:client_secret") with
// cfg.Scope. Errors: the target's (retried by the caller).
func (r *IcebergREST) client(ctx context.Context) (*rest.Catalog, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cat != nil {
		return r.cat, nil
	}
	var opts []rest.Option
	if r.cfg.Credential != "" {
		opts = append(opts, rest.WithCredential(r.cfg.Credential))
	}
	if r.cfg.Scope != "" {
		opts = append(opts, rest.WithScope(r.cfg.Scope))
	}
	if r.cfg.Warehouse != "" {
		opts = append(opts, rest.WithWarehouseLocation(r.cfg.Warehouse))
	}
	cat, err := rest.NewCatalog(ctx, "tarn-publish-"+r.cfg.Name, r.cfg.URI, opts...)
	if err != nil {
		return nil, fmt.Errorf("iceberg-rest %s: connect: %w", r.cfg.URI, err)
	}
	r.cat = cat
	return cat, nil
}

// Name is id's name in the target: the same levels and name, as
// catalog.FormatIdent prints them (JSON when a level holds a dot).
func (r *IcebergREST) Name(id catalog.Ident) (string, error) { return catalog.FormatIdent(id), nil }

// Publish registers id's table in the target with tbl's metadata file, or
// moves the target's table to it (see IcebergREST), and returns its name
// (no version token: the REST spec has none). Errors: ErrConflict when the
// target's table is not the one Tarn last wrote; the target's (retried).
func (r *IcebergREST) Publish(ctx context.Context, id catalog.Ident, tbl *table.Table, last Record) (string, string, error) {
	cat, err := r.client(ctx)
	if err != nil {
		return "", "", err
	}
	remote := catalog.FormatIdent(id)
	ident := restIdent(id)
	cur, err := r.location(ctx, cat, ident)
	if err != nil {
		return "", "", err
	}
	switch {
	case cur == "":
		if err := r.ensureNamespace(ctx, cat, id.Namespace); err != nil {
			return "", "", err
		}
		if err := r.register(ctx, cat, ident, remote, tbl.MetadataLocation()); err != nil {
			return "", "", err
		}
	case cur == tbl.MetadataLocation():
		// There already (a write whose record was lost, or a sync).
	default:
		if err := checkPointer(remote, id, tbl, cur, last); err != nil {
			return "", "", err
		}
		if err := cat.DropTable(ctx, ident); err != nil && !errors.Is(err, icecatalog.ErrNoSuchTable) {
			return "", "", fmt.Errorf("iceberg-rest drop %s (to register %s): %w", remote, tbl.MetadataLocation(), err)
		}
		if err := r.register(ctx, cat, ident, remote, tbl.MetadataLocation()); err != nil {
			return "", "", err
		}
	}
	if last.Remote != "" && last.Remote != remote {
		// A rename: the old name goes once the new one exists, if it is
		// still Tarn's (the target's rename would keep a foreign change).
		if _, err := r.Remove(ctx, last); err != nil {
			return "", "", fmt.Errorf("remove %s after the rename to %s: %w", last.Remote, remote, err)
		}
	}
	return remote, "", nil
}

// register registers loc as ident. A table created there meanwhile
// (409) is retried: the next attempt's check decides whose it is.
func (r *IcebergREST) register(ctx context.Context, cat *rest.Catalog, ident table.Identifier, remote, loc string) error {
	if _, err := cat.RegisterTable(ctx, ident, loc); err != nil {
		return fmt.Errorf("iceberg-rest register %s at %s: %w", remote, loc, err)
	}
	return nil
}

// location is the metadata-location of the target's table ident, ""
// when there is none.
func (r *IcebergREST) location(ctx context.Context, cat *rest.Catalog, ident table.Identifier) (string, error) {
	t, err := cat.LoadTable(ctx, ident)
	if errors.Is(err, icecatalog.ErrNoSuchTable) || errors.Is(err, icecatalog.ErrNoSuchNamespace) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("iceberg-rest load %v: %w", ident, err)
	}
	return t.MetadataLocation(), nil
}

// ensureNamespace creates ns and each level above it in the target when
// missing (never with properties; never dropped by Tarn).
func (r *IcebergREST) ensureNamespace(ctx context.Context, cat *rest.Catalog, ns catalog.Namespace) error {
	for i := 1; i <= len(ns); i++ {
		level := table.Identifier(append([]string{}, ns[:i]...))
		ok, err := cat.CheckNamespaceExists(ctx, level)
		if err != nil {
			return fmt.Errorf("iceberg-rest namespace %s: %w", catalog.Namespace(level), err)
		}
		if ok {
			continue
		}
		if err := cat.CreateNamespace(ctx, level, nil); err != nil && !errors.Is(err, icecatalog.ErrNamespaceAlreadyExists) {
			return fmt.Errorf("iceberg-rest create namespace %s: %w", catalog.Namespace(level), err)
		}
	}
	return nil
}

// Remove drops the target's table last.Remote (without purge: Tarn's
// files stay) if it still points at last.MetadataLocation; removed is
// false when it was gone or changed outside Tarn (then it is left).
func (r *IcebergREST) Remove(ctx context.Context, last Record) (removed bool, err error) {
	id, err := catalog.ParseIdent(last.Remote)
	if err != nil {
		return false, fmt.Errorf("iceberg-rest: bad remote name %q: %w", last.Remote, err)
	}
	cat, err := r.client(ctx)
	if err != nil {
		return false, err
	}
	ident := restIdent(id)
	cur, err := r.location(ctx, cat, ident)
	if err != nil || cur == "" || cur != last.MetadataLocation {
		return false, err
	}
	err = cat.DropTable(ctx, ident)
	if errors.Is(err, icecatalog.ErrNoSuchTable) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("iceberg-rest drop %s: %w", last.Remote, err)
	}
	return true, nil
}

func restIdent(id catalog.Ident) table.Identifier {
	return append(append(table.Identifier{}, id.Namespace...), id.Name)
}
