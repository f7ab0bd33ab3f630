package catalog

import (
	"fmt"
	"net/url"
	"path"
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
// checkLocationChars, and returns them as normLocations does. Errors:
// ErrInvalidArgument, ErrLimitExceeded.
func (w *Warehouse) checkLocations(locs []string) ([]string, error) {
	for _, l := range locs {
		if err := checkLocationLength(l); err != nil {
			return nil, err
		}
		if err := checkLocationChars(l); err != nil {
			return nil, err
		}
		if err := w.checkLocation("location", strings.TrimRight(l, "/")); err != nil {
			return nil, err
		}
	}
	return normLocations(locs), nil
}

// normLocations is locs through normLocation, sorted, without repeats.
func normLocations(locs []string) []string {
	out := make([]string, len(locs))
	for i, l := range locs {
		out[i] = normLocation(l)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// reservedLocationChars may not appear in a table's or view's location
// or path property: '?' and '#' end the path of a URI (the directory
// checked would not be the one written), '*' and '?' are wildcards and
// "${" starts a variable in an IAM policy (vended credentials would reach
// other tables), and '%' would decode into any of them. Tarn's own
// locations never hold them.
const reservedLocationChars = "?#*$%\\"

// checkLocationChars returns ErrInvalidArgument when loc holds a reserved
// character (reservedLocationChars), a hidden one (hiddenRune: the rule
// names follow too) or an empty path segment ("//": one directory on a
// file system, two different prefixes in S3).
func checkLocationChars(loc string) error {
	if i := strings.IndexFunc(loc, func(r rune) bool { return strings.ContainsRune(reservedLocationChars, r) || hiddenRune(r) }); i >= 0 {
		return fmt.Errorf("%w: location %q holds %q: a table or view location may not contain ? # * $ %% \\, control, format (zero-width) or non-ASCII space characters", ErrInvalidArgument, loc, []rune(loc[i:])[0])
	}
	if _, rest, ok := strings.Cut(loc, "://"); ok {
		if _, p, _ := strings.Cut(rest, "/"); strings.Contains(strings.TrimRight(p, "/"), "//") {
			return fmt.Errorf("%w: location %q has an empty path segment (//)", ErrInvalidArgument, loc)
		}
	}
	return nil
}

// normLocation is the one form locations are compared in — by purge,
// the overlap check, vending, signing, expiry's confinement, metadata
// cleanup and orphan removal (within, insideAny): scheme in lower case,
// Hadoop's s3a:// and s3n:// spelled s3://, file://localhost/ as
// file:///, the path percent-decoded once and cleaned (no "//", no "."
// or "..", no trailing slash), so that one directory or file compares
// equal to itself however a client wrote it. The decoding matters
// because writers spell the same file two ways: iceberg-go's location
// provider percent-encodes what a URI must (file:///wh/my%20dir/...),
// while a location as created keeps the raw form (file:///wh/my dir);
// a file:// FileIO opens both as the same file. Java's Hadoop paths spell
// a local file file:/x, or /x without a scheme: both are file:///x. A path
// whose escapes do not decode is kept as written.
//
// A location as written is normalised exactly once: decoding twice
// would read "%252E%252E" as "..". Table directories never hold '%'
// (checkLocationChars), so normalising one again changes nothing.
func normLocation(loc string) string {
	// Hadoop's spelling of a local path, as Spark and Trino write file
	// paths into manifests: file:/x (and a bare /x) is file:///x.
	if strings.HasPrefix(loc, "/") {
		loc = "file://" + loc
	} else if rest, ok := cutPrefixFold(loc, "file:/"); ok && !strings.HasPrefix(rest, "/") {
		loc = "file:///" + rest
	}
	scheme, rest, ok := strings.Cut(loc, "://")
	if !ok {
		return strings.TrimRight(loc, "/")
	}
	scheme = strings.ToLower(scheme)
	switch scheme {
	case "s3a", "s3n":
		scheme = "s3"
	}
	host, p, _ := strings.Cut(rest, "/")
	if scheme == "file" && strings.EqualFold(host, "localhost") {
		host = ""
	}
	if d, err := url.PathUnescape(p); err == nil {
		p = d
	}
	if p = path.Clean("/" + p); p == "/" {
		p = ""
	}
	return scheme + "://" + host + p
}

// cutPrefixFold is strings.CutPrefix ignoring ASCII case (a URI scheme's
// case does not matter).
func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// within reports whether loc lies strictly below dir, comparing both in
// their normal form (normLocation); pass each as written, or dir as a
// recorded directory (already normal).
func within(loc, dir string) bool {
	return strings.HasPrefix(normLocation(loc), normLocation(dir)+"/")
}

// uriEscapedPath is the path p (decoded) as a URI spells it: how
// iceberg-go's location provider (url.URL.JoinPath, String) writes the
// files under a location whose path holds a space or non-ASCII text.
func uriEscapedPath(p string) string { return (&url.URL{Path: p}).EscapedPath() }

// sameLocation reports whether a and b name the same directory
// (normLocation).
func sameLocation(a, b string) bool { return normLocation(a) == normLocation(b) }

// PointerLocations is the set of directories p's table or view writes
// under: the Locations recorded with it, or, for a pointer stored before
// Tarn recorded them, the directory that holds its metadata/ directory.
func PointerLocations(p Pointer) []string {
	if len(p.Locations) > 0 {
		return p.Locations
	}
	return []string{normLocation(locationOfMetadata(p.MetadataLocation))}
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
			if sameLocation(x, y) || within(x, y) || within(y, x) {
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
