package codec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// SameShape reports whether two Arrow schemas have the same top-level
// names, nullability and types (metadata such as field IDs aside), so that
// every builder type assertion a decoder's write pass makes for one holds
// for the other.
func SameShape(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.NumFields() {
		fa, fb := a.Field(i), b.Field(i)
		if fa.Name != fb.Name || fa.Nullable != fb.Nullable || !arrow.TypeEqual(fa.Type, fb.Type) {
			return false
		}
	}

	return true
}

// BuilderCheck is how a Decoder's Append refuses a RecordBuilder of
// another schema with ErrBuilderSchema. It remembers the last builder
// schema found to fit, so that steady-state rows pay one pointer
// comparison. The zero value is ready to use; it is not safe for
// concurrent use (nor is a Decoder).
type BuilderCheck struct {
	ok *arrow.Schema // last builder schema found to have want's shape
}

// Check returns ErrBuilderSchema unless b's schema has the shape of want
// (the decoder's ArrowSchema; see SameShape), and nil otherwise.
func (c *BuilderCheck) Check(b *array.RecordBuilder, want *arrow.Schema) error {
	if s := b.Schema(); s != c.ok {
		if !SameShape(s, want) {
			return ErrBuilderSchema
		}
		c.ok = s
	}

	return nil
}
