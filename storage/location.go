package storage

import (
	"fmt"
	"net/url"
	"path"
	"strings"
	"unicode"
)

// ParseLocation parses a location URI and refuses relative ones and ".."
// segments, so that a prefix check on the cleaned path is a containment check.
func ParseLocation(loc string) (*url.URL, error) {
	u, err := url.Parse(loc)
	if err != nil {
		return nil, fmt.Errorf("%w: location %q: %v", ErrInvalidArgument, loc, err)
	}
	if u.Scheme == "" {
		return nil, fmt.Errorf("%w: location %q must be a URI with a scheme (file://, s3://)", ErrInvalidArgument, loc)
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == ".." || seg == "." {
			return nil, fmt.Errorf("%w: location %q must not contain '.' or '..' segments", ErrInvalidArgument, loc)
		}
	}
	if u.Scheme == "file" && u.Host != "" && u.Host != "localhost" {
		return nil, fmt.Errorf("%w: location %q names a remote host", ErrInvalidArgument, loc)
	}
	return u, nil
}

// reservedLocationChars may not appear in a table's or view's location
// or path property: '?' and '#' end the path of a URI (the directory
// checked would not be the one written), '*' and '?' are wildcards and
// "${" starts a variable in an IAM policy (vended credentials would reach
// other tables), and '%' would decode into any of them. Tarn's own
// locations never hold them.
const reservedLocationChars = "?#*$%\\"

// CheckLocationChars returns ErrInvalidArgument when loc holds a reserved
// character (reservedLocationChars), a hidden one (HiddenRune: the rule
// names follow too) or an empty path segment ("//": one directory on a
// file system, two different prefixes in S3).
func CheckLocationChars(loc string) error {
	if i := strings.IndexFunc(loc, func(r rune) bool { return strings.ContainsRune(reservedLocationChars, r) || HiddenRune(r) }); i >= 0 {
		return fmt.Errorf("%w: location %q holds %q: a table or view location may not contain ? # * $ %% \\, control, format (zero-width) or non-ASCII space characters", ErrInvalidArgument, loc, []rune(loc[i:])[0])
	}
	if _, rest, ok := strings.Cut(loc, "://"); ok {
		if _, p, _ := strings.Cut(rest, "/"); strings.Contains(strings.TrimRight(p, "/"), "//") {
			return fmt.Errorf("%w: location %q has an empty path segment (//)", ErrInvalidArgument, loc)
		}
	}
	return nil
}

// NormLocation is the one form locations are compared in — by purge,
// the overlap check, vending, signing, expiry's confinement, metadata
// cleanup and orphan removal (Within; catalog's insideAny): scheme in lower case,
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
// (CheckLocationChars), so normalising one again changes nothing.
func NormLocation(loc string) string {
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

// Within reports whether loc lies strictly below dir, comparing both in
// their normal form (NormLocation); pass each as written, or dir as a
// recorded directory (already normal).
func Within(loc, dir string) bool {
	return strings.HasPrefix(NormLocation(loc), NormLocation(dir)+"/")
}

// URIEscapedPath is the path p (decoded) as a URI spells it: how
// iceberg-go's location provider (url.URL.JoinPath, String) writes the
// files under a location whose path holds a space or non-ASCII text.
func URIEscapedPath(p string) string { return (&url.URL{Path: p}).EscapedPath() }

// SameLocation reports whether a and b name the same directory
// (NormLocation).
func SameLocation(a, b string) bool { return NormLocation(a) == NormLocation(b) }

// HiddenRune reports a character that does not show as itself: a
// control character, a format character (zero-width space U+200B,
// joiners, the bidirectional controls U+202A–U+202E and U+2066–U+2069,
// the byte-order mark), a space other than ASCII's, or an unassigned or
// private-use code point — everything unicode.IsPrint refuses. Names and
// locations may not hold one: "a\u200bb" would look like "ab", and
// U+202E shows text reversed, so that two names that look alike would
// name different tables (and a location, different directories).
func HiddenRune(r rune) bool { return !unicode.IsPrint(r) }
