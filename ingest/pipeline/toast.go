package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/tarnhq/tarn/ingest/connect"
	"github.com/tarnhq/tarn/ingest/upsert"
)

// unavailable is Debezium's TOAST placeholder as bytes.
var unavailable = []byte(connect.UnavailableValue)

// toastValue is a column's value: its bytes, or null.
type toastValue struct {
	b    []byte
	null bool
}

// toastRef is where a row's previous version is: a row of the batch
// (row >= 0), none (the key was deleted or truncated before: the column
// is null), or the committed row of the key (from the key index).
type toastRef struct {
	row       int
	none      bool
	committed bool
	key       string
}

// resolveUnavailable replaces Debezium's TOAST placeholder
// (connect.UnavailableValue: an update that left a TOASTed PostgreSQL
// column alone under REPLICA IDENTITY DEFAULT carries it instead of the
// value) in the top-level string and binary columns of recs, the batch's
// rows in batch order, by the value the column had in the key's previous
// version: the key's previous upsert in the batch, else its committed row
// (read from its data file through the key index), else null (the key
// had no row: deleted or truncated before, or never written). So the
// placeholder never reaches the table. changes are the batch's changes
// (buffer.changes). A record of recs that is replaced is released.
//
// Errors: the key index cannot be rebuilt or a data file read; the
// records returned with the error are still to be released.
func (p *Pipeline) resolveUnavailable(ctx context.Context, recs []arrow.RecordBatch, changes []upsert.Change) ([]arrow.RecordBatch, error) {
	if len(recs) == 0 {
		return recs, nil
	}
	sc := recs[0].Schema()
	var cols []int
	for i, f := range sc.Fields() {
		switch f.Type.ID() {
		case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY:
			if f.Name != KafkaColumn {
				cols = append(cols, i)
			}
		}
	}
	if len(cols) == 0 {
		return recs, nil
	}
	// The batch rows holding the placeholder, and in which columns.
	starts := make([]int, len(recs)+1)
	hits := map[int][]int{}
	for r, rec := range recs {
		starts[r+1] = starts[r] + int(rec.NumRows())
		for _, c := range cols {
			col := rec.Column(c)
			for i := range col.Len() {
				if isPlaceholder(col, i) {
					hits[starts[r]+i] = append(hits[starts[r]+i], c)
				}
			}
		}
	}
	if len(hits) == 0 {
		return recs, nil
	}
	valueAt := func(row, c int) toastValue {
		r, _ := slices.BinarySearch(starts, row+1)
		r-- // the record whose range holds row
		v, ok := bytesAt(recs[r].Column(c), row-starts[r])
		return toastValue{b: v, null: !ok}
	}

	// Each hit row's previous version, walking the changes in order.
	refs := map[int]toastRef{}
	last := map[string]int{} // key → its latest batch row, -1 after a delete
	truncated := false
	for _, ch := range changes {
		switch {
		case ch.Truncate:
			truncated = true
			clear(last)
			continue
		case ch.Row >= 0 && hits[ch.Row] != nil:
			q, seen := last[ch.Key]
			switch {
			case seen && q >= 0:
				refs[ch.Row] = toastRef{row: q}
			case seen || truncated:
				refs[ch.Row] = toastRef{none: true}
			default:
				refs[ch.Row] = toastRef{committed: true, key: ch.Key}
			}
		}
		last[ch.Key] = ch.Row
	}

	// The committed values needed, read once per data file and column.
	committed := map[int]map[int]toastValue{} // row → column → value
	type fileCol struct {
		file string
		col  int
	}
	wanted := map[fileCol][]int64{}
	placed := map[int]struct {
		file string
		pos  int64
	}{}
	for row, ref := range refs {
		if !ref.committed {
			continue
		}
		if err := p.ensureIndex(ctx); err != nil {
			return recs, err
		}
		file, pos, ok := p.index.Lookup(ref.key)
		if !ok {
			continue // no committed row: null
		}
		placed[row] = struct {
			file string
			pos  int64
		}{file, pos}
		for _, c := range hits[row] {
			wanted[fileCol{file, c}] = append(wanted[fileCol{file, c}], pos)
		}
	}
	read := map[fileCol]map[int64][]byte{}
	for fc, positions := range wanted {
		vals, err := upsert.ColumnValues(ctx, p.sink.Table(), fc.file, sc.Field(fc.col).Name, positions)
		if err != nil {
			return recs, fmt.Errorf("table %s: the value a TOAST placeholder keeps: %w", p.cfg.Table, err)
		}
		read[fc] = vals
	}
	for row, at := range placed {
		committed[row] = map[int]toastValue{}
		for _, c := range hits[row] {
			v, ok := read[fileCol{at.file, c}][at.pos]
			committed[row][c] = toastValue{b: v, null: !ok}
		}
	}

	// A placeholder with no earlier version to take from becomes null:
	// say so, as it loses the source's value (a primary-key change of a
	// row with a TOASTed value: Debezium's create of the new key carries
	// the placeholder, docs/upsert.md "TOAST").
	lost := 0
	for row, ref := range refs {
		if _, found := placed[row]; ref.none || (ref.committed && !found) {
			lost++
		}
	}
	if lost > 0 {
		p.log.Warn("TOAST placeholders without an earlier version of their key: stored as null", "rows", lost)
	}

	// Resolve in row order, so a batch row's own placeholders are
	// resolved before a later version of its key reads them.
	resolved := map[int]map[int]toastValue{}
	for _, row := range slices.Sorted(func(yield func(int) bool) {
		for row := range hits {
			if !yield(row) {
				return
			}
		}
	}) {
		ref := refs[row]
		resolved[row] = map[int]toastValue{}
		for _, c := range hits[row] {
			var v toastValue
			switch {
			case ref.none:
				v.null = true
			case ref.committed:
				var ok bool
				if v, ok = committed[row][c]; !ok {
					v.null = true
				}
			default:
				var ok bool
				if v, ok = resolved[ref.row][c]; !ok {
					v = valueAt(ref.row, c)
				}
			}
			resolved[row][c] = v
		}
	}

	out := make([]arrow.RecordBatch, len(recs))
	for r, rec := range recs {
		out[r] = rec
		changed := map[int]map[int]toastValue{} // column → local row → value
		for i := range int(rec.NumRows()) {
			for c, v := range resolved[starts[r]+i] {
				if changed[c] == nil {
					changed[c] = map[int]toastValue{}
				}
				changed[c][i] = v
			}
		}
		if len(changed) == 0 {
			continue
		}
		arrs := slices.Clone(rec.Columns())
		var fresh []arrow.Array
		for c, vals := range changed {
			a, err := replaceValues(rec.Column(c), vals)
			if err != nil {
				for _, a := range fresh {
					a.Release()
				}
				return append(out[:r], recs[r:]...), err
			}
			arrs[c] = a
			fresh = append(fresh, a)
		}
		out[r] = array.NewRecordBatch(sc, arrs, rec.NumRows())
		for _, a := range fresh {
			a.Release()
		}
		rec.Release()
	}
	return out, nil
}

// isPlaceholder reports whether a (string or binary) holds the TOAST
// placeholder at i, without copying the value.
func isPlaceholder(a arrow.Array, i int) bool {
	if a.IsNull(i) {
		return false
	}
	switch a := a.(type) {
	case *array.String:
		return a.Value(i) == connect.UnavailableValue
	case *array.LargeString:
		return a.Value(i) == connect.UnavailableValue
	case *array.Binary:
		return bytes.Equal(a.Value(i), unavailable)
	case *array.LargeBinary:
		return bytes.Equal(a.Value(i), unavailable)
	}
	return false
}

// bytesAt is a string or binary array's value at i; ok is false for null.
func bytesAt(a arrow.Array, i int) ([]byte, bool) {
	if a.IsNull(i) {
		return nil, false
	}
	switch a := a.(type) {
	case *array.String:
		return []byte(a.Value(i)), true
	case *array.LargeString:
		return []byte(a.Value(i)), true
	case *array.Binary:
		return a.Value(i), true
	case *array.LargeBinary:
		return a.Value(i), true
	}
	return nil, false
}

// replaceValues returns a copy of a (string or binary) with the values at
// the rows of vals replaced.
func replaceValues(a arrow.Array, vals map[int]toastValue) (arrow.Array, error) {
	b := array.NewBuilder(memory.DefaultAllocator, a.DataType())
	defer b.Release()
	for i := range a.Len() {
		v, ok := vals[i]
		if !ok {
			var isNull bool
			v.b, isNull = bytesAt(a, i)
			v.null = !isNull
		}
		switch bb := b.(type) {
		case *array.StringBuilder:
			if v.null {
				bb.AppendNull()
			} else {
				bb.Append(string(v.b))
			}
		case *array.LargeStringBuilder:
			if v.null {
				bb.AppendNull()
			} else {
				bb.Append(string(v.b))
			}
		case *array.BinaryBuilder:
			if v.null {
				bb.AppendNull()
			} else {
				bb.Append(v.b)
			}
		default:
			return nil, fmt.Errorf("TOAST placeholder in a column of type %s", a.DataType())
		}
	}
	return b.NewArray(), nil
}
