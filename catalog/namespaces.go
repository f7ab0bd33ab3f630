package catalog

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

// CreateNamespace creates ns with props (REST createNamespace). Errors:
// ErrInvalidArgument, ErrLimitExceeded (ns or props past a limit of
// limits.go), ErrNamespaceAlreadyExists, ErrNoSuchNamespace (parent missing).
func (c *Catalog) CreateNamespace(ctx context.Context, ns Namespace, props map[string]string) error {
	if err := ns.ValidateNew(); err != nil {
		return err
	}
	if err := CheckNamespaceProperties(ns, nil, props); err != nil {
		return err
	}
	if props == nil {
		props = map[string]string{}
	}
	return c.store.CreateNamespace(ctx, ns, props)
}

// LoadNamespace returns ns's properties. Errors: ErrNoSuchNamespace.
func (c *Catalog) LoadNamespace(ctx context.Context, ns Namespace) (map[string]string, error) {
	if err := ns.Validate(); err != nil {
		return nil, err
	}
	return c.store.LoadNamespace(ctx, ns)
}

// ListNamespaces lists parent's direct children (top level when parent is
// empty), paged. Errors: ErrNoSuchNamespace, ErrInvalidArgument (bad token).
func (c *Catalog) ListNamespaces(ctx context.Context, parent Namespace, page Page) ([]Namespace, string, error) {
	if len(parent) > 0 {
		if err := parent.Validate(); err != nil {
			return nil, "", err
		}
	}
	return c.store.ListNamespaces(ctx, parent, page)
}

// UpdateNamespaceProperties removes and sets properties (REST
// updateProperties). A key both removed and set is ErrUnprocessable (422);
// a result past the property limits is ErrLimitExceeded (the store checks
// it with CheckNamespaceProperties, in the update's transaction).
// It returns the keys set, the removals applied and the removals missing.
func (c *Catalog) UpdateNamespaceProperties(ctx context.Context, ns Namespace, removals []string, updates map[string]string) (updated, removed, missing []string, err error) {
	if err := ns.Validate(); err != nil {
		return nil, nil, nil, err
	}
	for _, k := range removals {
		if _, ok := updates[k]; ok {
			return nil, nil, nil, fmt.Errorf("%w: property %q is both removed and updated", ErrUnprocessable, k)
		}
	}
	removed, missing, err = c.store.UpdateNamespaceProperties(ctx, ns, removals, updates)
	if err != nil {
		return nil, nil, nil, err
	}
	for k := range updates {
		updated = append(updated, k)
	}
	slices.Sort(updated)
	return updated, removed, missing, nil
}

// DropNamespace drops an empty namespace. Errors: ErrNoSuchNamespace,
// ErrNamespaceNotEmpty.
func (c *Catalog) DropNamespace(ctx context.Context, ns Namespace) error {
	if err := ns.Validate(); err != nil {
		return err
	}
	return c.store.DropNamespace(ctx, ns)
}

// ApplyPropertyUpdates removes removals from props, then sets updates,
// in place, and returns the removals that were present and those that
// were missing: what a Store's UpdateNamespaceProperties does to the
// properties it read, inside its write transaction.
func ApplyPropertyUpdates(props map[string]string, removals []string, updates map[string]string) (removed, missing []string) {
	for _, k := range removals {
		if _, ok := props[k]; ok {
			removed = append(removed, k)
			delete(props, k)
		} else {
			missing = append(missing, k)
		}
	}
	maps.Copy(props, updates)
	return removed, missing
}
