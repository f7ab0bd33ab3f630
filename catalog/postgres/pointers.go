package postgres

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tarnhq/tarn/catalog"
)

// pointerRow is a tarn_pointers row.
type pointerRow struct {
	ns, name string
	catalog.Pointer
}

const pointerColumns = `ns, name, kind, metadata_location, version, locations`

func scanPointer(row pgx.Row) (pointerRow, error) {
	var r pointerRow
	var kind int16
	err := row.Scan(&r.ns, &r.name, &kind, &r.MetadataLocation, &r.Version, &r.Locations)
	r.Kind = catalog.Kind(kind)
	if len(r.Locations) == 0 {
		r.Locations = nil
	}
	return r, err
}

// LoadPointer implements catalog.Store. It reads the row on every call
// (no cache), so a commit on another replica is seen at once.
func (s *Store) LoadPointer(ctx context.Context, id catalog.Ident, kind catalog.Kind) (catalog.Pointer, error) {
	r, err := scanPointer(s.pool.QueryRow(ctx, `SELECT `+pointerColumns+` FROM tarn_pointers WHERE ns = $1 AND name = $2`, nsKey(id.Namespace), id.Name))
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && r.Kind != kind) {
		return catalog.Pointer{}, catalog.NotFoundError(kind, id)
	}
	if err != nil {
		return catalog.Pointer{}, err
	}
	return r.Pointer, nil
}

// pointerToken is a pointer listing's page key: ns key, NUL, name (as
// catalog/bolt's pointer keys).
func pointerToken(ns, name string) string { return ns + "\x00" + name }

// ListPointers implements catalog.Store.
func (s *Store) ListPointers(ctx context.Context, ns catalog.Namespace, kind catalog.Kind, page catalog.Page) (out []catalog.Ident, next string, err error) {
	nk := nsKey(ns)
	after, err := pageAfter(tagPointers, page, func(k string) bool { return strings.HasPrefix(k, nk+"\x00") })
	if err != nil {
		return nil, "", err
	}
	if after != "" {
		after = after[len(nk)+1:]
	}
	err = s.readTx(ctx, func(tx pgx.Tx) error {
		ok, err := namespaceExists(ctx, tx, ns)
		if err != nil {
			return err
		}
		if !ok {
			return catalog.NamespaceNotFoundError(ns)
		}
		pg := pager{size: page.Size}
		out, next = nil, ""
		for {
			rows, err := tx.Query(ctx, `SELECT name, metadata_location FROM tarn_pointers
				WHERE ns = $1 AND kind = $2 AND name > $3 ORDER BY name LIMIT $4`, nk, int16(kind), after, sqlLimit(limit(page)))
			if err != nil {
				return err
			}
			type entry struct{ name, loc string }
			entries, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (e entry, err error) {
				err = r.Scan(&e.name, &e.loc)
				return e, err
			})
			if err != nil {
				return err
			}
			for _, e := range entries {
				if page.Keep != nil && !page.Keep(ns, e.name, e.loc) {
					continue
				}
				if !pg.add(e.name) {
					next = encodeToken(tagPointers, pointerToken(nk, pg.token))
					return nil
				}
				out = append(out, catalog.Ident{Namespace: decodeNS(nk), Name: e.name})
			}
			if l := limit(page); l < 0 || int64(len(entries)) < l {
				return nil
			}
			after = entries[len(entries)-1].name
		}
	})
	return out, next, err
}

// CommitPointers implements catalog.Store: all changes in one
// transaction. The rows of the changes that exist are first locked FOR
// UPDATE in one statement, in (ns, name) order: two commits over the same
// tables lock them in the same order and cannot deadlock. The changes
// are then checked and applied in the caller's order, as catalog/bolt
// does, against the locked rows (which no one else can change before this
// transaction ends). A create is a plain INSERT: the primary key, not a
// read, refuses a taken identifier, and the namespace's foreign key a
// missing namespace.
func (s *Store) CommitPointers(ctx context.Context, changes []catalog.PointerChange) error {
	if len(changes) == 0 {
		return ctx.Err()
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		cur, err := lockPointers(ctx, tx, changes)
		if err != nil {
			return err
		}
		growing := false
		for _, c := range changes {
			key := pointerToken(nsKey(c.Ident.Namespace), c.Ident.Name)
			r, ok := cur[key]
			if err := catalog.CheckChange(c, r.Pointer, ok); err != nil {
				return err
			}
			if c.MetadataLocation == "" {
				if c.ExpectedVersion == 0 {
					return catalog.Errorf(catalog.ErrInvalidArgument, "check-only change of %s needs an expected version", c.Ident)
				}
				continue
			}
			next := catalog.Pointer{Kind: c.Kind, MetadataLocation: c.MetadataLocation, Version: c.ExpectedVersion + 1, Locations: r.Locations}
			if c.Locations != nil {
				next.Locations = catalog.AddLocations(c.Locations, r.MetadataLocation, r.Locations)
			}
			var old *catalog.Pointer
			if ok {
				old = &r.Pointer
			}
			g, err := writePointer(ctx, tx, c.Ident, old, next)
			if err != nil {
				return err
			}
			growing = growing || g
			cur[key] = pointerRow{ns: nsKey(c.Ident.Namespace), name: c.Ident.Name, Pointer: next}
		}
		if growing {
			if err := checkLocationsFree(ctx, tx, changes); err != nil {
				return err
			}
		}
		if f, ok := catalog.FenceOf(ctx); ok {
			// An ingest batch: its claims are checked and advanced in
			// the transaction that records it (claims.go).
			return checkFence(ctx, tx, f)
		}
		return nil
	})
	return s.resolveTaken(ctx, err)
}

// lockPointers locks the existing rows of changes' identifiers FOR
// UPDATE in (ns, name) order and returns them by pointerToken. Rows
// created concurrently are not locked (they did not exist): the INSERT
// of a create then meets them through the primary key.
func lockPointers(ctx context.Context, tx pgx.Tx, changes []catalog.PointerChange) (map[string]pointerRow, error) {
	type key struct{ ns, name string }
	keys := make([]key, 0, len(changes))
	for _, c := range changes {
		keys = append(keys, key{nsKey(c.Ident.Namespace), c.Ident.Name})
	}
	slices.SortFunc(keys, func(a, b key) int { return cmp.Or(strings.Compare(a.ns, b.ns), strings.Compare(a.name, b.name)) })
	keys = slices.Compact(keys)
	nss, names := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		nss[i], names[i] = k.ns, k.name
	}
	// The ORDER BY sorts before the rows are locked (LockRows sits above
	// the Sort in the plan), so the locks are taken in that order.
	rows, err := tx.Query(ctx, `SELECT `+pointerColumns+` FROM tarn_pointers
		WHERE (ns, name) IN (SELECT * FROM unnest($1::text[], $2::text[]))
		ORDER BY ns COLLATE "C", name COLLATE "C" FOR UPDATE`, nss, names)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]pointerRow{}
	for rows.Next() {
		r, err := scanPointer(rows)
		if err != nil {
			return nil, err
		}
		out[pointerToken(r.ns, r.name)] = r
	}
	return out, rows.Err()
}

// writePointer inserts (old nil) or updates id's row to next and keeps
// its location index entries; grown reports whether the pointer gained a
// directory (only then can the change create an overlap).
func writePointer(ctx context.Context, tx pgx.Tx, id catalog.Ident, old *catalog.Pointer, next catalog.Pointer) (grown bool, err error) {
	nk := nsKey(id.Namespace)
	locs := next.Locations
	if locs == nil {
		locs = []string{}
	}
	if old == nil {
		_, err = tx.Exec(ctx, `INSERT INTO tarn_pointers (`+pointerColumns+`) VALUES ($1, $2, $3, $4, $5, $6)`,
			nk, id.Name, int16(next.Kind), next.MetadataLocation, next.Version, locs)
		switch code, _ := pgCode(err); code {
		case codeUniqueViolation:
			// Created by a concurrent commit after this one locked its rows.
			return false, &takenError{id: id, wanted: next.Kind}
		case codeForeignKeyViolation:
			return false, catalog.NamespaceNotFoundError(id.Namespace)
		}
	} else {
		_, err = tx.Exec(ctx, `UPDATE tarn_pointers SET kind = $3, metadata_location = $4, version = $5, locations = $6 WHERE ns = $1 AND name = $2`,
			nk, id.Name, int16(next.Kind), next.MetadataLocation, next.Version, locs)
	}
	if err != nil {
		return false, err
	}
	return indexPointer(ctx, tx, nk, id.Name, old, &next)
}

// takenError is a primary-key conflict of a create or a rename on id:
// the transaction is aborted by then, so the kind that holds id (which
// the catalog error names) is read after it ends, by resolveTaken.
type takenError struct {
	id     catalog.Ident
	wanted catalog.Kind
	// from is the renamed identifier; nil for a create.
	from *catalog.Ident
}

func (e *takenError) Error() string { return "postgres: " + e.id.String() + " is taken" }
func (e *takenError) Unwrap() error { return e.wanted.AlreadyExists() }

// resolveTaken turns a takenError into the catalog's already-exists
// error naming the kind at its identifier (the wanted kind when the row
// is gone again); other errors pass.
func (s *Store) resolveTaken(ctx context.Context, err error) error {
	var te *takenError
	if !errors.As(err, &te) {
		return err
	}
	existing := te.wanted
	var k int16
	if s.pool.QueryRow(context.WithoutCancel(ctx), `SELECT kind FROM tarn_pointers WHERE ns = $1 AND name = $2`,
		nsKey(te.id.Namespace), te.id.Name).Scan(&k) == nil {
		existing = catalog.Kind(k)
	}
	if te.from != nil {
		return catalog.RenameTargetExistsError(*te.from, te.id, existing)
	}
	return catalog.AlreadyExistsError(te.wanted, existing, te.id)
}

// DropPointer implements catalog.Store.
func (s *Store) DropPointer(ctx context.Context, id catalog.Ident, kind catalog.Kind) (p catalog.Pointer, err error) {
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		// The location index entries go with the row (ON DELETE CASCADE).
		r, err := scanPointer(tx.QueryRow(ctx, `DELETE FROM tarn_pointers WHERE ns = $1 AND name = $2 AND kind = $3 RETURNING `+pointerColumns,
			nsKey(id.Namespace), id.Name, int16(kind)))
		if errors.Is(err, pgx.ErrNoRows) {
			return catalog.NotFoundError(kind, id)
		}
		p = r.Pointer
		return err
	})
	return p, err
}

// RenamePointer implements catalog.Store: one UPDATE of the row's key.
// The primary key refuses a taken target, the namespace's foreign key a
// missing one; the location index entries follow (ON UPDATE CASCADE).
func (s *Store) RenamePointer(ctx context.Context, from, to catalog.Ident, kind catalog.Kind) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE tarn_pointers SET ns = $3, name = $4 WHERE ns = $1 AND name = $2 AND kind = $5`,
			nsKey(from.Namespace), from.Name, nsKey(to.Namespace), to.Name, int16(kind))
		switch code, _ := pgCode(err); {
		case code == codeUniqueViolation:
			return &takenError{id: to, wanted: kind, from: &from}
		case code == codeForeignKeyViolation:
			return catalog.NamespaceNotFoundError(to.Namespace)
		case err != nil:
			return err
		case tag.RowsAffected() == 0:
			return catalog.NotFoundError(kind, from)
		case from.Equal(to):
			// The row matched itself: the target is taken (by it).
			return catalog.RenameTargetExistsError(from, to, kind)
		}
		return nil
	})
	return s.resolveTaken(ctx, err)
}
