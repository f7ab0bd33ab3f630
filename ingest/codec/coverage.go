package codec

import (
	"slices"
	"strings"
)

// MaxUnmatched bounds Coverage.Unmatched: a topic whose objects carry
// ever new keys (ids used as keys) would otherwise grow it without end.
const MaxUnmatched = 1000

// Coverage is how the records a schemaless decoder (ingest/jsonrow)
// appended filled the declared schema: the columns none of them carried
// and the fields none of the columns took, so that a column that stays
// null because its name is spelled differently in the data is visible.
type Coverage struct {
	// Rows counts the rows appended; a Coverage with no rows says nothing.
	Rows int64
	// Unfilled are the Iceberg name paths of the declared columns (at any
	// depth; list elements "element", map values "value") that no
	// appended row carried a value for: absent or null in every one. A
	// path is listed only when its parent is not (an unfilled struct
	// column stands for its fields). In schema order.
	Unfilled []string
	// Unmatched are the paths of fields of the records' objects that
	// match no column ("title" when the column is "Title", and the
	// fields of an object column its struct lacks, "addr.zip"); the
	// decoder drops them. Sorted, at most MaxUnmatched.
	Unmatched []string
}

// CoverageReporter is a Decoder that reports the Coverage of the rows it
// appended since it was made (ingest/jsonrow's).
type CoverageReporter interface {
	Coverage() Coverage
}

// Merge returns the coverage of the rows of c and o together (of two
// decoders of one topic, say before and after a restart): a path is
// unfilled when it, or a parent of it, is unfilled in both; a field is
// unmatched when it is in either. A Coverage without rows leaves the
// other as it is.
func (c Coverage) Merge(o Coverage) Coverage {
	switch {
	case o.Rows == 0:
		return c
	case c.Rows == 0:
		return o
	}
	out := Coverage{Rows: c.Rows + o.Rows}
	for _, p := range c.Unfilled {
		if coveredBy(p, o.Unfilled) {
			out.Unfilled = append(out.Unfilled, p)
		}
	}
	for _, p := range o.Unfilled {
		if coveredBy(p, c.Unfilled) && !slices.Contains(out.Unfilled, p) {
			out.Unfilled = append(out.Unfilled, p)
		}
	}
	// Keep the topmost paths only.
	out.Unfilled = slices.DeleteFunc(out.Unfilled, func(p string) bool {
		return slices.ContainsFunc(out.Unfilled, func(q string) bool { return q != p && isParent(q, p) })
	})
	out.Unmatched = append(slices.Clone(c.Unmatched), o.Unmatched...)
	slices.Sort(out.Unmatched)
	out.Unmatched = slices.Compact(out.Unmatched)
	if len(out.Unmatched) > MaxUnmatched {
		out.Unmatched = out.Unmatched[:MaxUnmatched]
	}

	return out
}

// coveredBy reports whether p or a parent of it is in paths.
func coveredBy(p string, paths []string) bool {
	return slices.ContainsFunc(paths, func(q string) bool { return q == p || isParent(q, p) })
}

// isParent reports whether path q is a proper prefix of p, by name.
func isParent(q, p string) bool {
	return len(p) > len(q) && strings.HasPrefix(p, q) && p[len(q)] == '.'
}
