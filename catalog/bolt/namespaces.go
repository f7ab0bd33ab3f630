package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"

	bbolt "go.etcd.io/bbolt"

	"github.com/tarnhq/tarn/catalog"
)

// CreateNamespace implements catalog.Store.
func (s *Store) CreateNamespace(ctx context.Context, ns catalog.Namespace, props map[string]string) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	if props == nil {
		props = map[string]string{}
	}
	v, err := json.Marshal(props)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bbolt.Tx) error {
		if namespaceExists(tx, ns) {
			return catalog.Errorf(catalog.ErrNamespaceAlreadyExists, "Namespace already exists: %s", ns)
		}
		if parent := ns.Parent(); len(parent) > 0 && !namespaceExists(tx, parent) {
			return catalog.Errorf(catalog.ErrNoSuchNamespace, "Namespace does not exist: %s (parent of %s)", parent, ns)
		}
		return tx.Bucket(bucketNamespaces).Put(nsKey(ns), v)
	})
}

func loadProps(tx *bbolt.Tx, ns catalog.Namespace) (map[string]string, error) {
	v := tx.Bucket(bucketNamespaces).Get(nsKey(ns))
	if v == nil {
		return nil, catalog.NamespaceNotFoundError(ns)
	}
	props := map[string]string{}
	if err := json.Unmarshal(v, &props); err != nil {
		return nil, fmt.Errorf("bolt: corrupt namespace %s: %w", ns, err)
	}
	return props, nil
}

// LoadNamespace implements catalog.Store.
func (s *Store) LoadNamespace(ctx context.Context, ns catalog.Namespace) (props map[string]string, err error) {
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	err = s.db.View(func(tx *bbolt.Tx) error {
		props, err = loadProps(tx, ns)
		return err
	})
	return props, err
}

// ListNamespaces implements catalog.Store.
func (s *Store) ListNamespaces(ctx context.Context, parent catalog.Namespace, page catalog.Page) (out []catalog.Namespace, next string, err error) {
	if err := checkCtx(ctx); err != nil {
		return nil, "", err
	}
	var prefix []byte
	if len(parent) > 0 {
		prefix = append(nsKey(parent), levelSep)
	}
	err = s.db.View(func(tx *bbolt.Tx) error {
		if len(parent) > 0 && !namespaceExists(tx, parent) {
			return catalog.NamespaceNotFoundError(parent)
		}
		isChild := func(k, _ []byte) bool {
			return !bytes.Contains(k[len(prefix):], []byte{levelSep}) && (page.Keep == nil || page.Keep(decodeNS(k), "", ""))
		}
		next, err = scan(tx.Bucket(bucketNamespaces), tagNamespaces, prefix, page, isChild, func(k, _ []byte) error {
			out = append(out, decodeNS(k))
			return nil
		})
		return err
	})
	return out, next, err
}

// UpdateNamespaceProperties implements catalog.Store.
func (s *Store) UpdateNamespaceProperties(ctx context.Context, ns catalog.Namespace, removals []string, updates map[string]string) (removed, missing []string, err error) {
	if err := checkCtx(ctx); err != nil {
		return nil, nil, err
	}
	err = s.db.Update(func(tx *bbolt.Tx) error {
		props, err := loadProps(tx, ns)
		if err != nil {
			return err
		}
		before := maps.Clone(props)
		removed, missing = catalog.ApplyPropertyUpdates(props, removals, updates)
		if err := catalog.CheckNamespaceProperties(ns, before, props); err != nil {
			return err
		}
		v, err := json.Marshal(props)
		if err != nil {
			return err
		}
		return tx.Bucket(bucketNamespaces).Put(nsKey(ns), v)
	})
	return removed, missing, err
}

// DropNamespace implements catalog.Store.
func (s *Store) DropNamespace(ctx context.Context, ns catalog.Namespace) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	return s.db.Update(func(tx *bbolt.Tx) error {
		key := nsKey(ns)
		if !namespaceExists(tx, ns) {
			return catalog.NamespaceNotFoundError(ns)
		}
		if hasPrefix(tx.Bucket(bucketPointers), append(bytes.Clone(key), nameSep)) {
			return catalog.Errorf(catalog.ErrNamespaceNotEmpty, "Namespace %s is not empty: it holds tables or views", ns)
		}
		if hasPrefix(tx.Bucket(bucketNamespaces), append(bytes.Clone(key), levelSep)) {
			return catalog.Errorf(catalog.ErrNamespaceNotEmpty, "Namespace %s is not empty: it holds namespaces", ns)
		}
		return tx.Bucket(bucketNamespaces).Delete(key)
	})
}

func hasPrefix(b *bbolt.Bucket, prefix []byte) bool {
	k, _ := b.Cursor().Seek(prefix)
	return k != nil && bytes.HasPrefix(k, prefix)
}
