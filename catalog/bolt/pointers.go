package bolt

import (
	"bytes"
	"context"
	"encoding/json"

	bbolt "go.etcd.io/bbolt"

	"github.com/tarnhq/tarn/catalog"
)

// LoadPointer implements catalog.Store.
func (s *Store) LoadPointer(ctx context.Context, id catalog.Ident, kind catalog.Kind) (p catalog.Pointer, err error) {
	if err := checkCtx(ctx); err != nil {
		return p, err
	}
	err = s.db.View(func(tx *bbolt.Tx) error {
		r, ok, err := getPointer(tx, id)
		if err != nil {
			return err
		}
		if !ok || r.Kind != kind {
			return catalog.NotFoundError(kind, id)
		}
		p = catalog.Pointer(r)
		return nil
	})
	return p, err
}

// ListPointers implements catalog.Store.
func (s *Store) ListPointers(ctx context.Context, ns catalog.Namespace, kind catalog.Kind, page catalog.Page) (out []catalog.Ident, next string, err error) {
	if err := checkCtx(ctx); err != nil {
		return nil, "", err
	}
	prefix := append(nsKey(ns), nameSep)
	err = s.db.View(func(tx *bbolt.Tx) error {
		if !namespaceExists(tx, ns) {
			return catalog.NamespaceNotFoundError(ns)
		}
		b := tx.Bucket(bucketPointers)
		ofKind := func(k, v []byte) bool {
			var r pointerRecord
			if json.Unmarshal(v, &r) != nil || r.Kind != kind {
				return false
			}
			if page.Keep != nil {
				id := identFromKey(k)
				return page.Keep(id.Namespace, id.Name, r.MetadataLocation)
			}
			return true
		}
		next, err = scan(b, tagPointers, prefix, page, ofKind, func(k, _ []byte) error {
			out = append(out, identFromKey(k))
			return nil
		})
		return err
	})
	return out, next, err
}

func identFromKey(k []byte) catalog.Ident {
	i := bytes.IndexByte(k, nameSep)
	return catalog.Ident{Namespace: decodeNS(k[:i]), Name: string(k[i+1:])}
}

// CommitPointers implements catalog.Store.
func (s *Store) CommitPointers(ctx context.Context, changes []catalog.PointerChange) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	return s.db.Update(func(tx *bbolt.Tx) error {
		for _, c := range changes {
			cur, ok, err := getPointer(tx, c.Ident)
			if err != nil {
				return err
			}
			if err := catalog.CheckChange(c, catalog.Pointer(cur), ok); err != nil {
				return err
			}
			if c.ExpectedVersion == 0 && !namespaceExists(tx, c.Ident.Namespace) {
				return catalog.NamespaceNotFoundError(c.Ident.Namespace)
			}
			if c.MetadataLocation == "" {
				if c.ExpectedVersion == 0 {
					return catalog.Errorf(catalog.ErrInvalidArgument, "check-only change of %s needs an expected version", c.Ident)
				}
				continue
			}
			next := pointerRecord{Kind: c.Kind, MetadataLocation: c.MetadataLocation, Version: c.ExpectedVersion + 1, Locations: cur.Locations}
			if c.Locations != nil {
				next.Locations = catalog.AddLocations(c.Locations, cur.MetadataLocation, cur.Locations)
			}
			if err := putPointer(tx, c.Ident, next); err != nil {
				return err
			}
		}
		return checkLocationsFree(tx, changes)
	})
}

// checkLocationsFree returns catalog.LocationInUseError when a change
// that sets Locations overlaps any other pointer as it stands after the
// changes (written and indexed in tx already, so two changes of one batch
// are checked against each other too), through the location index.
func checkLocationsFree(tx *bbolt.Tx, changes []catalog.PointerChange) error {
	for _, c := range changes {
		if c.Locations != nil && c.MetadataLocation != "" && overlapping(tx, pointerKey(c.Ident), c.Locations) {
			return catalog.LocationInUseError(c.Kind, c.Ident, c.Locations)
		}
	}
	return nil
}

// DropPointer implements catalog.Store.
func (s *Store) DropPointer(ctx context.Context, id catalog.Ident, kind catalog.Kind) (p catalog.Pointer, err error) {
	if err := checkCtx(ctx); err != nil {
		return p, err
	}
	err = s.db.Update(func(tx *bbolt.Tx) error {
		r, ok, err := getPointer(tx, id)
		if err != nil {
			return err
		}
		if !ok || r.Kind != kind {
			return catalog.NotFoundError(kind, id)
		}
		p = catalog.Pointer(r)
		return deletePointer(tx, id, r)
	})
	return p, err
}

// RenamePointer implements catalog.Store.
func (s *Store) RenamePointer(ctx context.Context, from, to catalog.Ident, kind catalog.Kind) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	return s.db.Update(func(tx *bbolt.Tx) error {
		r, ok, err := getPointer(tx, from)
		if err != nil {
			return err
		}
		if !ok || r.Kind != kind {
			return catalog.NotFoundError(kind, from)
		}
		if !namespaceExists(tx, to.Namespace) {
			return catalog.NamespaceNotFoundError(to.Namespace)
		}
		if cur, ok, err := getPointer(tx, to); err != nil {
			return err
		} else if ok {
			return catalog.RenameTargetExistsError(from, to, cur.Kind)
		}
		if err := deletePointer(tx, from, r); err != nil {
			return err
		}
		return putPointer(tx, to, r)
	})
}
