package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/view"

	"github.com/tarnhq/tarn/spec"
	"github.com/tarnhq/tarn/storage"
)

// LoadView returns a view's current metadata (REST loadView). Errors:
// ErrNoSuchView (also when ident names a table), ErrMetadataNotFound.
func (c *Catalog) LoadView(ctx context.Context, wh *Warehouse, id Ident) (*Loaded, error) {
	return c.load(ctx, wh, id, KindView)
}

// ViewExists reports whether a view (not a table) has this identifier.
func (c *Catalog) ViewExists(ctx context.Context, id Ident) (bool, error) {
	return c.exists(ctx, id, KindView)
}

// ListViews lists the views of ns, paged. Errors: ErrNoSuchNamespace.
func (c *Catalog) ListViews(ctx context.Context, ns Namespace, page Page) ([]Ident, string, error) {
	return c.list(ctx, ns, KindView, page)
}

// CreateView creates a view (REST createView) with iceberg-go's view
// MetadataBuilder. Errors: ErrInvalidArgument, ErrNoSuchNamespace,
// ErrViewAlreadyExists, ErrTableAlreadyExists.
func (c *Catalog) CreateView(ctx context.Context, wh *Warehouse, ns Namespace, req spec.CreateViewRequest) (*Loaded, error) {
	id := Ident{Namespace: ns, Name: req.Name}
	if err := id.ValidateNew(); err != nil {
		return nil, err
	}
	if req.Schema == nil || req.ViewVersion == nil {
		return nil, fmt.Errorf("%w: create view %s: schema and view-version are required", ErrInvalidArgument, id)
	}
	loc, err := c.createLocation(ctx, wh, id, KindView, req.Location)
	if err != nil {
		return nil, err
	}
	b, err := view.NewMetadataBuilder()
	if err != nil {
		return nil, err
	}
	built, err := b.SetLoc(loc).SetCurrentVersion(req.ViewVersion, req.Schema).SetProperties(iceberg.Properties(req.Properties)).Build()
	if err != nil {
		return nil, fmt.Errorf("%w: create view %s: %v", ErrInvalidArgument, id, err)
	}
	if err := checkProperties("view "+id.String(), nil, built.Properties()); err != nil {
		return nil, err
	}
	js, err := json.Marshal(built.Metadata)
	if err != nil {
		return nil, err
	}
	if err := checkViewMetadata(nil, built.Metadata, js); err != nil {
		return nil, fmt.Errorf("create view %s: %w", id, err)
	}
	locs, err := wh.checkLocations([]string{loc})
	if err != nil {
		return nil, err
	}
	mloc, err := writeMetadataFile(ctx, wh, loc, built.Properties(), js, 0)
	if err != nil {
		return nil, err
	}
	if err := c.store.CommitPointers(ctx, []PointerChange{{Ident: id, Kind: KindView, MetadataLocation: mloc, Locations: locs}}); err != nil {
		return nil, c.abandon(ctx, wh, err, mloc)
	}
	c.metrics.commits.Inc()
	return &Loaded{Ident: id, MetadataLocation: mloc, MetadataJSON: js, Version: 1}, nil
}

// ReplaceView applies a view commit (REST replaceView): requirements
// (assert-view-uuid) are checked against the head, updates applied with
// iceberg-go's view MetadataBuilder, and the pointer swapped; a lost swap
// is retried while the requirements still hold. Errors: ErrNoSuchView,
// ErrCommitFailed, ErrInvalidArgument, ErrCommitStateUnknown.
func (c *Catalog) ReplaceView(ctx context.Context, wh *Warehouse, id Ident, reqs []view.Requirement, updates []view.Update) (*Loaded, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	var out *Loaded
	err := c.swapWithRetry(ctx, func(attempt int) (bool, error) {
		p, err := c.store.LoadPointer(ctx, id, KindView)
		if err != nil {
			return false, err
		}
		if err := wh.checkOwns(KindView, id, p); err != nil {
			return false, err
		}
		js, err := wh.readMetadataJSON(ctx, p.MetadataLocation)
		if err != nil {
			return false, metadataReadError(err, p.MetadataLocation)
		}
		base, err := view.ParseMetadataBytes(js)
		if err != nil {
			return false, fmt.Errorf("parse metadata of view %s: %w", id, err)
		}
		for _, r := range reqs {
			if err := r.Validate(base); err != nil {
				return false, viewRequirementFailed(r, base)
			}
		}
		if attempt > 1 {
			c.metrics.commitRetries.Inc()
		}
		b, err := view.MetadataBuilderFromBase(base)
		if err != nil {
			return false, err
		}
		for _, u := range updates {
			if err := u.Apply(b); err != nil {
				return false, fmt.Errorf("%w: view %s: %v", ErrInvalidArgument, id, err)
			}
		}
		built, err := b.Build()
		if err != nil {
			return false, fmt.Errorf("%w: view %s: %v", ErrInvalidArgument, id, err)
		}
		if err := checkProperties("view "+id.String(), base.Properties(), built.Properties()); err != nil {
			return false, err
		}
		next, err := json.Marshal(built.Metadata)
		if err != nil {
			return false, err
		}
		if err := checkViewMetadata(base, built.Metadata, next); err != nil {
			return false, fmt.Errorf("view %s: %w", id, err)
		}
		change := PointerChange{Ident: id, Kind: KindView, ExpectedVersion: p.Version}
		if !storage.SameLocation(built.Location(), base.Location()) {
			if change.Locations, err = wh.checkLocations([]string{built.Location()}); err != nil {
				return false, err
			}
		}
		if change.MetadataLocation, err = writeMetadataFile(ctx, wh, built.Location(), built.Properties(), next, nextMetadataVersion(p.MetadataLocation, p.Version)); err != nil {
			return false, err
		}
		mloc := change.MetadataLocation
		if err := c.store.CommitPointers(ctx, []PointerChange{change}); err != nil {
			err = c.abandon(ctx, wh, err, mloc)
			return errors.Is(err, ErrCommitFailed), err
		}
		c.metrics.commits.Inc()
		out = &Loaded{Ident: id, MetadataLocation: mloc, MetadataJSON: next, Version: p.Version + 1}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DropView drops a view's pointer; its metadata files stay for the orphan
// sweep (views hold no data). Errors: ErrNoSuchView.
func (c *Catalog) DropView(ctx context.Context, id Ident) error {
	if err := id.Validate(); err != nil {
		return err
	}
	_, err := c.store.DropPointer(ctx, id, KindView)
	return err
}

// RenameView moves a view to a new identifier. Errors as RenameTable, with
// ErrNoSuchView for a missing source.
func (c *Catalog) RenameView(ctx context.Context, wh *Warehouse, from, to Ident) error {
	if err := c.checkNameUnreserved(ctx, to, "rename "+from.String()+" to"); err != nil {
		return err
	}
	if err := c.checkOwned(ctx, wh, KindView, from); err != nil {
		return err
	}
	return c.rename(ctx, from, to, KindView)
}

// RegisterView creates a view from an existing metadata file inside the
// warehouse (REST registerView). Errors: ErrInvalidArgument,
// ErrNoSuchNamespace, ErrViewAlreadyExists, ErrTableAlreadyExists.
func (c *Catalog) RegisterView(ctx context.Context, wh *Warehouse, ns Namespace, req spec.RegisterViewRequest) (*Loaded, error) {
	id := Ident{Namespace: ns, Name: req.Name}
	if err := id.ValidateNew(); err != nil {
		return nil, err
	}
	js, err := readRegistered(ctx, wh, req.MetadataLocation)
	if err != nil {
		return nil, err
	}
	md, err := view.ParseMetadataBytes(js)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not valid view metadata: %v", ErrInvalidArgument, req.MetadataLocation, err)
	}
	if err := c.checkNameUnreserved(ctx, id, "register view"); err != nil {
		return nil, err
	}
	locs, err := wh.checkLocations([]string{md.Location()})
	if err != nil {
		return nil, err
	}
	if err := c.store.CommitPointers(ctx, []PointerChange{{Ident: id, Kind: KindView, MetadataLocation: req.MetadataLocation, Locations: locs}}); err != nil {
		return nil, err
	}
	c.metrics.commits.Inc()
	return &Loaded{Ident: id, MetadataLocation: req.MetadataLocation, MetadataJSON: js, Version: 1}, nil
}
