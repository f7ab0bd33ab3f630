package catalog

import (
	"slices"
	"strings"

	"github.com/apache/iceberg-go/table"

	"github.com/tarnhq/tarn/storage"
)

// FilePathProperties are the table properties that move some of a table's files out of its location.
// write.data.path and write.metadata.path are iceberg-go's (and Java's)
// location-provider keys; write.object-storage.path and
// write.folder-storage.path are Java's older spellings of the data path
// (https://iceberg.apache.org/docs/latest/configuration/#write-properties).
var FilePathProperties = []string{
	table.WriteDataPathKey,
	table.WriteMetadataPathKey,
	"write.object-storage.path",
	"write.folder-storage.path",
}

// tableRoots is every directory a table's files are written under: its
// location and each path property that is set, as written.
func tableRoots(md table.Metadata) []string {
	locs := []string{md.Location()}
	props := md.Properties()
	for _, k := range FilePathProperties {
		if v := props[k]; v != "" {
			locs = append(locs, v)
		}
	}
	return locs
}

// tableLocations is tableRoots checked by checkLocations: what a new
// table's pointer records. Errors: ErrInvalidArgument.
func (w *Warehouse) tableLocations(md table.Metadata) ([]string, error) {
	return w.checkLocations(tableRoots(md))
}

// checkLocations checks that each of a table's or view's directories lies
// inside the warehouse and passes checkLocationLength and
// storage.CheckLocationChars, and returns them as normLocations does. Errors:
// ErrInvalidArgument, ErrLimitExceeded.
func (w *Warehouse) checkLocations(locs []string) ([]string, error) {
	for _, l := range locs {
		if err := checkLocationLength(l); err != nil {
			return nil, err
		}
		if err := storage.CheckLocationChars(l); err != nil {
			return nil, err
		}
		if err := w.checkLocation("location", strings.TrimRight(l, "/")); err != nil {
			return nil, err
		}
	}
	return normLocations(locs), nil
}

// normLocations is locs through storage.NormLocation, sorted, without repeats.
func normLocations(locs []string) []string {
	out := make([]string, len(locs))
	for i, l := range locs {
		out[i] = storage.NormLocation(l)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// PointerLocations is the set of directories p's table or view writes
// under: the Locations recorded with it, or, for a pointer stored before
// Tarn recorded them, the directory that holds its metadata/ directory.
func PointerLocations(p Pointer) []string {
	if len(p.Locations) > 0 {
		return p.Locations
	}
	return []string{storage.NormLocation(locationOfMetadata(p.MetadataLocation))}
}

// AddLocations is what a pointer records after a change that sets locs:
// locs with the directories it had (cur, or for a pointer stored without
// them the one derived from its metadata location curMetadata), as
// normLocations gives them. A Store calls it in CommitPointers.
func AddLocations(locs []string, curMetadata string, cur []string) []string {
	if len(cur) == 0 && curMetadata != "" {
		cur = PointerLocations(Pointer{MetadataLocation: curMetadata})
	}
	return normLocations(append(slices.Clone(locs), cur...))
}

// LocationsOverlap reports whether a directory of a is a directory of b,
// lies inside one, or contains one. Two tables or views that overlap would
// read, vend credentials for, compact, expire or purge each other's files,
// so the store refuses to record an overlap
// (PointerChange.Locations).
func LocationsOverlap(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if storage.SameLocation(x, y) || storage.Within(x, y) || storage.Within(y, x) {
				return true
			}
		}
	}
	return false
}

// LocationInUseError is the error a Store returns when a change's
// Locations overlap another table's or view's. It names only the
// caller's own location: the other table may be one the caller cannot see.
func LocationInUseError(kind Kind, id Ident, locs []string) error {
	return Errorf(ErrInvalidArgument, "%s %s: location %s overlaps the files of another table or view; choose a directory of its own",
		kind, id, strings.Join(locs, ", "))
}
