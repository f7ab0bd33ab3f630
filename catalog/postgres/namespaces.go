package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tarnhq/tarn/catalog"
)

// CreateNamespace implements catalog.Store. The primary key refuses a
// duplicate and the parent's foreign key a missing parent.
func (s *Store) CreateNamespace(ctx context.Context, ns catalog.Namespace, props map[string]string) error {
	if props == nil {
		props = map[string]string{}
	}
	v, err := json.Marshal(props)
	if err != nil {
		return err
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO tarn_namespaces (ns, parent, properties) VALUES ($1, $2, $3)`, nsKey(ns), parentKey(ns), v)
		switch code, _ := pgCode(err); code {
		case codeUniqueViolation:
			return catalog.Errorf(catalog.ErrNamespaceAlreadyExists, "Namespace already exists: %s", ns)
		case codeForeignKeyViolation:
			return catalog.Errorf(catalog.ErrNoSuchNamespace, "Namespace does not exist: %s (parent of %s)", ns.Parent(), ns)
		}
		return err
	})
}

// LoadNamespace implements catalog.Store.
func (s *Store) LoadNamespace(ctx context.Context, ns catalog.Namespace) (map[string]string, error) {
	var raw []byte
	err := s.pool.QueryRow(ctx, `SELECT properties FROM tarn_namespaces WHERE ns = $1`, nsKey(ns)).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, catalog.NamespaceNotFoundError(ns)
	}
	if err != nil {
		return nil, err
	}
	props := map[string]string{}
	if err := json.Unmarshal(raw, &props); err != nil {
		return nil, err
	}
	return props, nil
}

// namespaceExists reports whether ns exists, read by q (the pool or a
// transaction).
func namespaceExists(ctx context.Context, q querier, ns catalog.Namespace) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM tarn_namespaces WHERE ns = $1)`, nsKey(ns)).Scan(&ok)
	return ok, err
}

// querier is what *pgxpool.Pool and pgx.Tx share.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// ListNamespaces implements catalog.Store. The listing and the parent's
// existence are read in one REPEATABLE READ snapshot.
func (s *Store) ListNamespaces(ctx context.Context, parent catalog.Namespace, page catalog.Page) (out []catalog.Namespace, next string, err error) {
	after, err := pageAfter(tagNamespaces, page, func(k string) bool {
		kp := parentKey(decodeNS(k))
		return (kp == nil && len(parent) == 0) || (kp != nil && len(parent) > 0 && *kp == nsKey(parent))
	})
	if err != nil {
		return nil, "", err
	}
	err = s.readTx(ctx, func(tx pgx.Tx) error {
		if len(parent) > 0 {
			ok, err := namespaceExists(ctx, tx, parent)
			if err != nil {
				return err
			}
			if !ok {
				return catalog.NamespaceNotFoundError(parent)
			}
		}
		cond := "parent IS NULL"
		var pk *string
		if len(parent) > 0 {
			cond, pk = "parent = $3", new(string)
			*pk = nsKey(parent)
		}
		pg := pager{size: page.Size}
		out, next = nil, ""
		for {
			args := []any{after, sqlLimit(limit(page))}
			if pk != nil {
				args = append(args, *pk)
			}
			rows, err := tx.Query(ctx, `SELECT ns FROM tarn_namespaces WHERE `+cond+` AND ns > $1 ORDER BY ns LIMIT $2`, args...)
			if err != nil {
				return err
			}
			keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			for _, k := range keys {
				n := decodeNS(k)
				if page.Keep != nil && !page.Keep(n, "", "") {
					continue
				}
				if !pg.add(k) {
					next = encodeToken(tagNamespaces, pg.token)
					return nil
				}
				out = append(out, n)
			}
			if l := limit(page); l < 0 || int64(len(keys)) < l {
				return nil
			}
			after = keys[len(keys)-1]
		}
	})
	return out, next, err
}

// readTx runs fn in a read-only REPEATABLE READ transaction: one snapshot
// for a listing's several queries.
func (s *Store) readTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	return fn(tx)
}

// UpdateNamespaceProperties implements catalog.Store. The row is locked
// (FOR UPDATE) while removed and missing are worked out, so concurrent
// updates apply one after the other.
func (s *Store) UpdateNamespaceProperties(ctx context.Context, ns catalog.Namespace, removals []string, updates map[string]string) (removed, missing []string, err error) {
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		var raw []byte
		err := tx.QueryRow(ctx, `SELECT properties FROM tarn_namespaces WHERE ns = $1 FOR UPDATE`, nsKey(ns)).Scan(&raw)
		if errors.Is(err, pgx.ErrNoRows) {
			return catalog.NamespaceNotFoundError(ns)
		}
		if err != nil {
			return err
		}
		props := map[string]string{}
		if err := json.Unmarshal(raw, &props); err != nil {
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
		_, err = tx.Exec(ctx, `UPDATE tarn_namespaces SET properties = $2 WHERE ns = $1`, nsKey(ns), v)
		return err
	})
	return removed, missing, err
}

// DropNamespace implements catalog.Store. The foreign keys of pointers
// and child namespaces refuse the drop of a namespace that holds any.
func (s *Store) DropNamespace(ctx context.Context, ns catalog.Namespace) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM tarn_namespaces WHERE ns = $1`, nsKey(ns))
		if code, constraint := pgCode(err); code == codeForeignKeyViolation {
			if strings.HasPrefix(constraint, "tarn_pointers") {
				return catalog.Errorf(catalog.ErrNamespaceNotEmpty, "Namespace %s is not empty: it holds tables or views", ns)
			}
			return catalog.Errorf(catalog.ErrNamespaceNotEmpty, "Namespace %s is not empty: it holds namespaces", ns)
		}
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return catalog.NamespaceNotFoundError(ns)
		}
		return nil
	})
}
