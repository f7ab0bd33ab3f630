package catalog

import (
	"slices"
	"strings"

	"github.com/apache/iceberg-go/table"
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

// tableLocations is every directory a table's files are written under: its
// location and each path property that is set (URIs without a trailing
// slash, sorted, without repeats).
func tableLocations(md table.Metadata) []string {
	locs := []string{normLocation(md.Location())}
	props := md.Properties()
	for _, k := range FilePathProperties {
		if v := props[k]; v != "" {
			locs = append(locs, normLocation(v))
		}
	}
	slices.Sort(locs)
	return slices.Compact(locs)
}

// normLocation drops a trailing slash and spells Hadoop's s3a:// and
// s3n:// as s3://, so that one directory compares equal to itself
// whichever way a client wrote it.
func normLocation(loc string) string {
	for _, scheme := range []string{"s3a://", "s3n://"} {
		if rest, ok := strings.CutPrefix(loc, scheme); ok {
			loc = "s3://" + rest
		}
	}
	return strings.TrimRight(loc, "/")
}

// PointerLocations is the set of directories p's table or view writes
// under: the Locations recorded with it, or, for a pointer stored before
// Tarn recorded them, the directory that holds its metadata/ directory.
func PointerLocations(p Pointer) []string {
	if len(p.Locations) > 0 {
		return p.Locations
	}
	return []string{normLocation(locationOfMetadata(p.MetadataLocation))}
}

// LocationsOverlap reports whether a directory of a is a directory of b,
// lies inside one, or contains one. Two tables or views that overlap would
// read, vend credentials for, compact, expire or purge each other's files,
// so the store refuses to record an overlap
// (PointerChange.Locations).
func LocationsOverlap(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y || within(x, y) || within(y, x) {
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
