package postgres

import (
	"context"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tarnhq/tarn/catalog"
)

// locationsLockKey is the pg_advisory_xact_lock key every transaction
// that gives a pointer a new directory takes before it checks for
// overlaps (checkLocationsFree). Row locks cannot serialise that check:
// two creates of different tables lock no common row, yet their
// directories may overlap. The interleaving it prevents: T1 and T2 each
// insert their index entries, each checks and sees only committed entries
// (not the other's), both commit, and two tables share a directory. With
// the lock the second to take it runs its check after the first
// committed, and READ COMMITTED gives that statement a snapshot that
// holds the first one's entries. Commits that add no directory (the
// common data commit) do not take it.
const locationsLockKey int64 = 0x7461726e_6c6f6373 // "tarnlocs"

// dirKey is a directory as tarn_locations holds it: normalised, with one
// trailing "/", so that a prefix range selects it and what lies inside it.
func dirKey(d string) string { return strings.TrimRight(d, "/") + "/" }

// indexPointer replaces the location index entries of (ns, name): old's
// directories out (nil for a new pointer), next's in. grown reports
// whether next has a directory old had not.
func indexPointer(ctx context.Context, tx pgx.Tx, ns, name string, old, next *catalog.Pointer) (grown bool, err error) {
	var before, after []string
	if old != nil {
		for _, d := range catalog.PointerLocations(*old) {
			before = append(before, dirKey(d))
		}
	}
	for _, d := range catalog.PointerLocations(*next) {
		after = append(after, dirKey(d))
	}
	var gone, added []string
	for _, d := range before {
		if !slices.Contains(after, d) {
			gone = append(gone, d)
		}
	}
	for _, d := range after {
		if !slices.Contains(before, d) {
			added = append(added, d)
		}
	}
	if len(gone) > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM tarn_locations WHERE ns = $1 AND name = $2 AND dir = ANY($3)`, ns, name, gone); err != nil {
			return false, err
		}
	}
	if len(added) > 0 {
		if _, err := tx.Exec(ctx, `INSERT INTO tarn_locations (dir, ns, name) SELECT d, $1, $2 FROM unnest($3::text[]) AS d ON CONFLICT DO NOTHING`, ns, name, added); err != nil {
			return false, err
		}
	}
	return len(added) > 0, nil
}

// checkLocationsFree returns catalog.LocationInUseError when a change
// that sets Locations overlaps any other pointer as it stands after the
// changes (written and indexed in tx already, so two changes of one batch
// are checked against each other too), through the location index, under
// locationsLockKey.
func checkLocationsFree(ctx context.Context, tx pgx.Tx, changes []catalog.PointerChange) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, locationsLockKey); err != nil {
		return err
	}
	for _, c := range changes {
		if c.Locations == nil || c.MetadataLocation == "" {
			continue
		}
		for _, d := range c.Locations {
			dir := dirKey(d)
			var taken bool
			// Equal to or inside dir: the keys in [dir, dir without its
			// slash + "0"), "0" being the byte after "/" (the "C"
			// collation compares bytes). Containing dir: its ancestors.
			err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM tarn_locations
				WHERE NOT (ns = $1 AND name = $2) AND ((dir >= $3 AND dir < $4) OR dir = ANY($5)))`,
				nsKey(c.Ident.Namespace), c.Ident.Name, dir, dir[:len(dir)-1]+"0", ancestors(dir)).Scan(&taken)
			if err != nil {
				return err
			}
			if taken {
				return catalog.LocationInUseError(c.Kind, c.Ident, c.Locations)
			}
		}
	}
	return nil
}

// ancestors are the directories containing dir (which ends with "/"):
// each proper prefix ending at a slash, past the scheme's "//".
func ancestors(dir string) []string {
	start := strings.Index(dir, "://")
	if start < 0 {
		start = 0
	} else {
		start += 3
	}
	out := []string{}
	for i := start; i < len(dir)-1; i++ {
		if dir[i] == '/' {
			out = append(out, dir[:i+1])
		}
	}
	return out
}
