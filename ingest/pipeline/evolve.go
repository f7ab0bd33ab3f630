package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/codec"
)

// maxEvolveAttempts bounds the schema commits of one evolution: each
// failed attempt means another writer changed the table's schema between
// our load and our commit (the table is Tarn's, so that is rare), and the
// next attempt unions with the schema they committed.
const maxEvolveAttempts = 4

// evolve makes the table's current schema take values of writer (a writer
// schema mapped to Iceberg, without _kafka), committing the changes
// DESIGN.md "Schema evolution" allows as one schema-only catalog commit
// (add-schema and set-current-schema, asserting the current schema id and
// the last assigned field id; no snapshot, so the offsets stay as they
// are). Fields are matched by name path, so existing columns keep their
// field ids:
//
//   - a writer field the table lacks, at any depth, becomes an optional
//     column (with optional nested fields), even if the writer requires it;
//   - a required table column the writer lacks becomes optional (columns
//     are never deleted); _kafka is left alone;
//   - a column whose writer field is wider is promoted: int → long,
//     float → double, decimal(P,S) → decimal(P',S) with P' > P;
//   - a required column whose writer field is optional becomes optional.
//
// In a keyed mode, keys names the row's key columns (keyColumns): when
// the table has no identifier-field-ids yet, the same commit records
// them there if every one is a required primitive column, or one the
// writer requires that is added as required to a table without rows
// (identifier.go).
//
// It returns the table's new current schema (or the current one when it
// already fits, say because another writer evolved it).
//
// Errors: a *codec.FieldError wrapping codec.ErrIncompatible naming the
// first field whose change is not allowed (a narrowing, a type change, a
// struct becoming a primitive, a decimal scale change...), or that still
// does not fit after the evolution; catalog and load errors otherwise,
// and a wrapped catalog.ErrCommitFailed after maxEvolveAttempts
// conflicts.
func (p *Pipeline) evolve(ctx context.Context, writer *iceberg.Schema, keys []string) (*iceberg.Schema, error) {
	var lastErr error
	for range maxEvolveAttempts {
		tbl, err := p.deps.Tables.LoadTable(ctx, p.ident)
		if err != nil {
			return nil, fmt.Errorf("load table %s: %w", p.cfg.Table, err)
		}
		cur := tbl.Schema()
		if codec.Fits(writer, cur, callerColumns...) == nil {
			return cur, nil
		}
		if err := evolvable(writer.Fields(), cur.Fields(), ""); err != nil {
			return nil, err
		}
		// Two identical updates: Apply and BuildUpdates each run the
		// update's operations, which may run only once.
		ident := planIdentifier(cur, writer, keys, tableEmpty(tbl))
		evolved, err := schemaUpdate(tbl, writer, cur, ident, keys).Apply()
		if err != nil {
			return nil, &codec.FieldError{Err: fmt.Errorf("%w: %v", codec.ErrIncompatible, err)}
		}
		if err := codec.Fits(writer, evolved, callerColumns...); err != nil {
			return nil, err
		}
		updates, reqs, err := schemaUpdate(tbl, writer, cur, ident, keys).BuildUpdates()
		if err != nil {
			return nil, &codec.FieldError{Err: fmt.Errorf("%w: %v", codec.ErrIncompatible, err)}
		}
		reqs = append(reqs, table.AssertLastAssignedFieldID(tbl.Metadata().LastColumnID()))
		md, _, err := p.deps.Tables.CommitTable(ctx, p.ident, reqs, updates)
		switch {
		case err == nil:
			p.log.Info("table schema evolved", "schema_id", md.CurrentSchema().ID, "from_schema_id", cur.ID)
			return md.CurrentSchema(), nil
		case errors.Is(err, catalog.ErrCommitFailed) || errors.Is(err, table.ErrCommitFailed):
			lastErr = err
			continue
		default:
			return nil, fmt.Errorf("commit the evolved schema of %s: %w", p.cfg.Table, err)
		}
	}
	return nil, fmt.Errorf("commit the evolved schema of %s: still conflicting after %d attempts: %w", p.cfg.Table, maxEvolveAttempts, lastErr)
}

// schemaUpdate is the union of cur (tbl's current schema) and writer by
// name path, with new writer fields optional, and every required column
// of cur the writer lacks made optional. With ident.ok, the key columns
// (keys) become the identifier-field-ids, those in ident.add added as
// required (in the writer's order among the new columns). An identifier
// column made optional takes the table's identifier-field-ids away: the
// spec allows only required ones.
func schemaUpdate(tbl *table.Table, writer, cur *iceberg.Schema, ident identifierPlan, keys []string) *table.UpdateSchema {
	// Adding a required column is an incompatible change, allowed here
	// for key columns of a table without rows only (planIdentifier).
	u := table.NewUpdateSchema(tbl.NewTransaction(), true, ident.ok && len(ident.add) > 0)
	fields := optionalNew(writer.Fields(), cur.Fields())
	if !ident.ok || len(ident.add) == 0 {
		u = u.UnionByNameWith(iceberg.NewSchema(0, fields...))
	} else {
		// One union per run of non-key fields, one required add per key
		// field: each union consults only the current schema, and the
		// runs are disjoint.
		var run []iceberg.NestedField
		for _, f := range fields {
			if !ident.add[f.Name] {
				run = append(run, f)
				continue
			}
			if len(run) > 0 {
				u = u.UnionByNameWith(iceberg.NewSchema(0, run...))
				run = nil
			}
			u = u.AddColumn([]string{f.Name}, f.Type, f.Doc, true, nil)
		}
		if len(run) > 0 {
			u = u.UnionByNameWith(iceberg.NewSchema(0, run...))
		}
	}
	identifiers := map[string]bool{}
	for _, id := range cur.IdentifierFieldIDs {
		if name, ok := cur.FindColumnName(id); ok {
			identifiers[name] = true
		}
	}
	for _, path := range missingRequired(writer.Fields(), cur.Fields(), nil) {
		u = u.UpdateColumn(path, table.ColumnUpdate{Required: iceberg.Optional[bool]{Valid: true, Val: false}})
		if identifiers[strings.Join(path, ".")] {
			u = u.SetIdentifierField(nil)
		}
	}
	if ident.ok {
		u = u.SetIdentifierField(paths(keys))
	}
	return u
}

// evolvable checks, by name path, that every writer field either is new
// or has a type the table's column can become (or already holds): the
// same kind of nested type, or primitives one of which promotes to the
// other. Requiredness never stops an evolution.
func evolvable(writer, tbl []iceberg.NestedField, path string) error {
	for _, w := range writer {
		t, ok := fieldNamed(tbl, w.Name)
		if !ok {
			continue
		}
		if err := evolvableType(w.Type, t.Type, joinPath(path, w.Name)); err != nil {
			return err
		}
	}
	return nil
}

func evolvableType(w, t iceberg.Type, path string) error {
	switch wt := w.(type) {
	case *iceberg.StructType:
		if tt, ok := t.(*iceberg.StructType); ok {
			return evolvable(wt.FieldList, tt.FieldList, path)
		}
	case *iceberg.ListType:
		if tt, ok := t.(*iceberg.ListType); ok {
			return evolvableType(wt.Element, tt.Element, joinPath(path, "element"))
		}
	case *iceberg.MapType:
		if tt, ok := t.(*iceberg.MapType); ok {
			// Map keys are immutable in Iceberg: only a writer key that
			// the table's key type already holds.
			if !codec.Promotes(wt.KeyType, tt.KeyType) {
				return notAllowed(joinPath(path, "key"), tt.KeyType, wt.KeyType, "map keys cannot change type")
			}
			return evolvableType(wt.ValueType, tt.ValueType, joinPath(path, "value"))
		}
	default:
		if _, ok := t.(iceberg.PrimitiveType); ok && (codec.Promotes(w, t) || codec.Promotes(t, w)) {
			return nil
		}
	}
	why := "Iceberg allows only int → long, float → double and decimal precision widening at equal scale"
	if _, ok := t.(iceberg.PrimitiveType); !ok || !isPrimitive(w) {
		why = "a column cannot change between a primitive, struct, list and map"
	}
	return notAllowed(path, t, w, why)
}

func isPrimitive(t iceberg.Type) bool {
	_, ok := t.(iceberg.PrimitiveType)
	return ok
}

func notAllowed(path string, from, to iceberg.Type, why string) error {
	return &codec.FieldError{Path: path, Err: fmt.Errorf("%w: column %s would change from %s to %s, which schema evolution does not allow (%s)",
		codec.ErrIncompatible, path, from, to, why)}
}

// optionalNew returns a copy of writer in which every field tbl lacks (by
// name path) is optional, as are all fields nested in it; fields tbl has
// keep their requiredness, and their nested fields are handled the same
// way.
func optionalNew(writer, tbl []iceberg.NestedField) []iceberg.NestedField {
	out := make([]iceberg.NestedField, len(writer))
	for i, w := range writer {
		t, ok := fieldNamed(tbl, w.Name)
		if !ok {
			w.Required = false
			w.Type = allOptional(w.Type)
		} else {
			w.Type = optionalNewType(w.Type, t.Type)
		}
		out[i] = w
	}
	return out
}

func optionalNewType(w, t iceberg.Type) iceberg.Type {
	switch wt := w.(type) {
	case *iceberg.StructType:
		if tt, ok := t.(*iceberg.StructType); ok {
			return &iceberg.StructType{FieldList: optionalNew(wt.FieldList, tt.FieldList)}
		}
	case *iceberg.ListType:
		if tt, ok := t.(*iceberg.ListType); ok {
			c := *wt
			c.Element = optionalNewType(wt.Element, tt.Element)
			return &c
		}
	case *iceberg.MapType:
		if tt, ok := t.(*iceberg.MapType); ok {
			c := *wt
			c.ValueType = optionalNewType(wt.ValueType, tt.ValueType)
			return &c
		}
	}
	return w
}

// allOptional returns t with every struct field in it optional, at any
// depth (list elements and map values keep their requiredness: they are
// not columns).
func allOptional(t iceberg.Type) iceberg.Type {
	switch tt := t.(type) {
	case *iceberg.StructType:
		fields := make([]iceberg.NestedField, len(tt.FieldList))
		for i, f := range tt.FieldList {
			f.Required = false
			f.Type = allOptional(f.Type)
			fields[i] = f
		}
		return &iceberg.StructType{FieldList: fields}
	case *iceberg.ListType:
		c := *tt
		c.Element = allOptional(tt.Element)
		return &c
	case *iceberg.MapType:
		c := *tt
		c.ValueType = allOptional(tt.ValueType)
		return &c
	}
	return t
}

// missingRequired returns the name paths of the required fields of tbl
// that writer lacks, at any depth through structs, list elements and map
// values; the top-level _kafka column is the pipeline's, never the
// writer's.
func missingRequired(writer, tbl []iceberg.NestedField, path []string) [][]string {
	var out [][]string
	for _, t := range tbl {
		if len(path) == 0 && slices.Contains(callerColumns, t.Name) {
			continue
		}
		p := append(append([]string{}, path...), t.Name)
		w, ok := fieldNamed(writer, t.Name)
		if !ok {
			if t.Required {
				out = append(out, p)
			}
			continue
		}
		out = append(out, missingRequiredType(w.Type, t.Type, p)...)
	}
	return out
}

func missingRequiredType(w, t iceberg.Type, path []string) [][]string {
	switch tt := t.(type) {
	case *iceberg.StructType:
		if wt, ok := w.(*iceberg.StructType); ok {
			return missingRequired(wt.FieldList, tt.FieldList, path)
		}
	case *iceberg.ListType:
		if wt, ok := w.(*iceberg.ListType); ok {
			return missingRequiredType(wt.Element, tt.Element, append(append([]string{}, path...), "element"))
		}
	case *iceberg.MapType:
		if wt, ok := w.(*iceberg.MapType); ok {
			return missingRequiredType(wt.ValueType, tt.ValueType, append(append([]string{}, path...), "value"))
		}
	}
	return nil
}

func fieldNamed(fields []iceberg.NestedField, name string) (iceberg.NestedField, bool) {
	for _, f := range fields {
		if f.Name == name {
			return f, true
		}
	}
	return iceberg.NestedField{}, false
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return strings.Join([]string{path, name}, ".")
}
