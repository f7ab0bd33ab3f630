package codec

import (
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
)

// Fits reports whether values of writer (a writer schema mapped to
// Iceberg by its format's ToIceberg) can be stored in target (a table's
// schema) as they are, matching fields by name path (DESIGN.md "Schema
// evolution"):
//
//   - every writer field has a target field of the same name, with the
//     same type or one it promotes to: int → long, float → double,
//     decimal(P,S) → decimal(P',S) with P' >= P; structs, lists and maps
//     are compared element by element;
//   - an optional writer field (or list element, map value) needs an
//     optional target; a required one may fill either;
//   - every required target field has a writer field, except the
//     top-level columns named in callerColumns (the pipeline fills them:
//     _kafka), which the writer must not have.
//
// Optional target fields the writer lacks are fine: they get nulls.
//
// Errors are *FieldError wrapping ErrIncompatible, naming the first
// offending field and the change that would be needed; nil if it fits.
// Formats call it from their NewDecoder; the pipeline uses the error to
// decide whether the table must evolve.
func Fits(writer, target *iceberg.Schema, callerColumns ...string) error {
	for _, name := range callerColumns {
		if _, ok := writer.FindFieldByName(name); ok {
			return &FieldError{Path: name, Err: fmt.Errorf("%w: the writer has a field named %s, a column reserved for Tarn", ErrIncompatible, name)}
		}
	}
	return fitsFields(writer.Fields(), target.Fields(), "", callerColumns)
}

func fitsFields(writer, target []iceberg.NestedField, path string, skip []string) error {
	for _, w := range writer {
		p := JoinPath(path, w.Name)
		i := slices.IndexFunc(target, func(t iceberg.NestedField) bool { return t.Name == w.Name })
		if i < 0 {
			return &FieldError{Path: p, Err: fmt.Errorf("%w: the table has no column %s (%s): add it as an optional column", ErrIncompatible, p, w.Type)}
		}
		t := target[i]
		if !w.Required && t.Required {
			return &FieldError{Path: p, Err: fmt.Errorf("%w: optional field into required column %s: make the column optional", ErrIncompatible, p)}
		}
		if err := fitsType(w.Type, t.Type, p); err != nil {
			return err
		}
	}
	for _, t := range target {
		if !t.Required || (path == "" && slices.Contains(skip, t.Name)) {
			continue
		}
		if !slices.ContainsFunc(writer, func(w iceberg.NestedField) bool { return w.Name == t.Name }) {
			p := JoinPath(path, t.Name)
			return &FieldError{Path: p, Err: fmt.Errorf("%w: the writer has no field %s, a required column: make the column optional", ErrIncompatible, p)}
		}
	}
	return nil
}

func fitsType(w, t iceberg.Type, path string) error {
	switch wt := w.(type) {
	case *iceberg.StructType:
		if tt, ok := t.(*iceberg.StructType); ok {
			return fitsFields(wt.FieldList, tt.FieldList, path, nil)
		}
	case *iceberg.ListType:
		if tt, ok := t.(*iceberg.ListType); ok {
			p := JoinPath(path, "element")
			if !wt.ElementRequired && tt.ElementRequired {
				return &FieldError{Path: p, Err: fmt.Errorf("%w: optional list element into a required one", ErrIncompatible)}
			}
			return fitsType(wt.Element, tt.Element, p)
		}
	case *iceberg.MapType:
		if tt, ok := t.(*iceberg.MapType); ok {
			if err := fitsType(wt.KeyType, tt.KeyType, JoinPath(path, "key")); err != nil {
				return err
			}
			p := JoinPath(path, "value")
			if !wt.ValueRequired && tt.ValueRequired {
				return &FieldError{Path: p, Err: fmt.Errorf("%w: optional map value into a required one", ErrIncompatible)}
			}
			return fitsType(wt.ValueType, tt.ValueType, p)
		}
	default:
		if Promotes(w, t) {
			return nil
		}
	}
	return &FieldError{Path: path, Err: fmt.Errorf("%w: %s cannot be stored in a %s column", ErrIncompatible, w, t)}
}

// Promotes reports whether a primitive of type from can be stored in a
// column of type to: the same type, or an Iceberg type promotion (spec
// "Schema Evolution": int → long, float → double, decimal(P,S) →
// decimal(P',S) with P' >= P).
func Promotes(from, to iceberg.Type) bool {
	switch f := from.(type) {
	case iceberg.Int32Type:
		if _, ok := to.(iceberg.Int64Type); ok {
			return true
		}
	case iceberg.Float32Type:
		if _, ok := to.(iceberg.Float64Type); ok {
			return true
		}
	case iceberg.DecimalType:
		if t, ok := to.(iceberg.DecimalType); ok {
			return f.Scale() == t.Scale() && f.Precision() <= t.Precision()
		}
	}
	return from.Equals(to)
}
