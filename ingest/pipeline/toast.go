package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"

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
// is null), the committed row of key (from the key index), or the
// values carried from an earlier batch (carried: a primary-key change
// whose delete committed before its create came).
type toastRef struct {
	row       int
	none      bool
	committed bool
	key       string
	carried   map[string]toastValue
}

// Debezium's headers on a primary-key change (an UPDATE of the key
// columns, sent as a delete of the old key and a create of the new one;
// RelationalChangeRecordEmitter.emitUpdateAsPrimaryKeyChangeRecord): the
// delete carries the new key, the create the old one, each the key
// struct as Kafka Connect's header converter writes it (the default
// SimpleHeaderConverter: its JSON object, {"id":2}).
const (
	headerNewKey = "__debezium.newkey"
	headerOldKey = "__debezium.oldkey"
)

// pkMoves are the primary-key changes of a batch: the old key of each
// create that names one (batch row → key), and the deletes that name a
// new key (change index).
type pkMoves struct {
	oldKey   map[int]string
	newKeyed map[int]bool
}

// maxCarried bounds the primary-key changes whose old row's values are
// kept for a create in a later batch (Pipeline.carried): past it they
// start over. An entry stays after its create used it, as the batch may
// be dropped and read again.
const maxCarried = 1_000

// noteMove records, in mode debezium, the primary-key change headers of
// rec, whose change is the last of p.buf.changes (row: its batch row, or
// -1 for a delete). A header that is no JSON object is ignored: the
// placeholder then has no earlier version, as without the header.
func (p *Pipeline) noteMove(rec *kgo.Record, row int) {
	for _, h := range rec.Headers {
		if (row < 0 && h.Key != headerNewKey) || (row >= 0 && h.Key != headerOldKey) {
			continue
		}
		if row < 0 {
			if p.buf.moves.newKeyed == nil {
				p.buf.moves.newKeyed = map[int]bool{}
			}
			p.buf.moves.newKeyed[len(p.buf.changes)-1] = true
			return
		}
		k, err := canonicalJSON(h.Value)
		if err != nil || !strings.HasPrefix(k, "{") {
			return
		}
		if p.keyFields != nil {
			if k, err = p.keyFields.fromKey(k); err != nil {
				return
			}
		}
		if p.buf.moves.oldKey == nil {
			p.buf.moves.oldKey = map[int]string{}
		}
		p.buf.moves.oldKey[row] = k
		return
	}
}

// resolveUnavailable replaces Debezium's TOAST placeholder
// (connect.UnavailableValue: an update that left a TOASTed PostgreSQL
// column alone under REPLICA IDENTITY DEFAULT carries it instead of the
// value) in the top-level string and binary columns of recs, the batch's
// rows in batch order, by the value the column had in the key's previous
// version: the key's previous upsert in the batch, else its committed row
// (read from its data file through the key index), else null (the key
// had no row: deleted or truncated before, or never written). The create
// of a primary-key change (moves.oldKey: Debezium's __debezium.oldkey
// header) takes the old key's version instead — the one its delete
// retired: in the batch, committed, or carried from the batch that
// committed the delete (Pipeline.carried). So the placeholder never
// reaches the table. changes are the batch's changes (buffer.changes).
// A record of recs that is replaced is released.
//
// Errors: the key index cannot be rebuilt or a data file read; the
// records returned with the error are still to be released.
func (p *Pipeline) resolveUnavailable(ctx context.Context, recs []arrow.RecordBatch, changes []upsert.Change, moves pkMoves) ([]arrow.RecordBatch, error) {
	if len(recs) == 0 && len(moves.newKeyed) == 0 {
		return recs, nil
	}
	var sc *arrow.Schema
	if len(recs) > 0 {
		sc = recs[0].Schema()
	} else {
		sc = p.buf.b.Schema()
	}
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
	valueAt := func(row, c int) toastValue {
		r, _ := slices.BinarySearch(starts, row+1)
		r-- // the record whose range holds row
		v, ok := bytesAt(recs[r].Column(c), row-starts[r])
		return toastValue{b: v, null: !ok}
	}

	// Each hit row's previous version, walking the changes in order; and
	// the version each delete retired (prev), for the create of a
	// primary-key change that names its key.
	refs := map[int]toastRef{}
	last := map[string]int{} // key → its latest batch row, -1 after a delete
	prev := map[string]toastRef{}
	truncated := false
	own := func(key string) toastRef {
		q, seen := last[key]
		switch {
		case seen && q >= 0:
			return toastRef{row: q}
		case seen || truncated:
			return toastRef{none: true}
		}
		return toastRef{committed: true, key: key}
	}
	var movedAway []string // keys deleted by a primary-key change
	movedTo := map[string]bool{}
	for j, ch := range changes {
		switch {
		case ch.Truncate:
			truncated = true
			clear(last)
			continue
		case ch.Row < 0:
			if q, seen := last[ch.Key]; !seen || q >= 0 {
				// Not a second delete (the tombstone after a d): that
				// would retire nothing.
				prev[ch.Key] = own(ch.Key)
			}
			if moves.newKeyed[j] {
				movedAway = append(movedAway, ch.Key)
			}
		case hits[ch.Row] != nil:
			old, moved := moves.oldKey[ch.Row]
			if !moved {
				refs[ch.Row] = own(ch.Key)
				break
			}
			movedTo[old] = true
			if r, ok := prev[old]; ok {
				refs[ch.Row] = r // the version the old key's delete retired
			} else if vals, ok := p.carried[old]; ok {
				refs[ch.Row] = toastRef{carried: vals} // deleted in an earlier batch
			} else {
				// The old key's delete is yet to come (another
				// partition): its current version.
				refs[ch.Row] = own(old)
			}
		}
		last[ch.Key] = ch.Row
	}
	// The old rows of primary-key changes whose create is not in this
	// batch: carried to the next, every string and binary column.
	carry := map[string]toastRef{}
	for _, k := range movedAway {
		if !movedTo[k] {
			carry[k] = prev[k]
		}
	}
	if len(hits) == 0 && len(carry) == 0 {
		return recs, nil
	}

	// The committed values needed, read once per data file and column.
	type fileCol struct {
		file string
		col  int
	}
	type place struct {
		file string
		pos  int64
	}
	wanted := map[fileCol][]int64{}
	lookup := func(key string, cs []int) (place, bool, error) {
		if err := p.ensureIndex(ctx); err != nil {
			return place{}, false, err
		}
		file, pos, ok := p.index.Lookup(key)
		if !ok {
			return place{}, false, nil
		}
		for _, c := range cs {
			wanted[fileCol{file, c}] = append(wanted[fileCol{file, c}], pos)
		}
		return place{file, pos}, true, nil
	}
	placed := map[int]place{}
	for row, ref := range refs {
		if !ref.committed {
			continue
		}
		at, ok, err := lookup(ref.key, hits[row])
		if err != nil {
			return recs, err
		}
		if ok {
			placed[row] = at
		}
	}
	carryPlaced := map[string]place{}
	for k, ref := range carry {
		if !ref.committed {
			continue
		}
		at, ok, err := lookup(ref.key, cols)
		if err != nil {
			return recs, err
		}
		if ok {
			carryPlaced[k] = at
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
	committedAt := func(at place, c int) toastValue {
		v, ok := read[fileCol{at.file, c}][at.pos]
		return toastValue{b: v, null: !ok}
	}

	// A placeholder with no earlier version to take from becomes null:
	// say so, as it loses the source's value (a primary-key change whose
	// create came without __debezium.oldkey, or after a restart that lost
	// the values carried for it; docs/upsert.md "TOAST").
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
	for _, row := range slices.Sorted(maps.Keys(hits)) {
		ref := refs[row]
		resolved[row] = map[int]toastValue{}
		for _, c := range hits[row] {
			var v toastValue
			switch {
			case ref.none:
				v.null = true
			case ref.carried != nil:
				var ok bool
				if v, ok = ref.carried[sc.Field(c).Name]; !ok {
					v.null = true
				}
			case ref.committed:
				if at, ok := placed[row]; ok {
					v = committedAt(at, c)
				} else {
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
	if len(p.carried) > maxCarried {
		clear(p.carried)
	}
	for k, ref := range carry {
		vals := map[string]toastValue{}
		for _, c := range cols {
			var v toastValue
			switch {
			case ref.none:
				continue
			case ref.carried != nil:
				v = ref.carried[sc.Field(c).Name]
			case ref.committed:
				at, ok := carryPlaced[k]
				if !ok {
					continue
				}
				v = committedAt(at, c)
			default:
				var ok bool
				if v, ok = resolved[ref.row][c]; !ok {
					v = valueAt(ref.row, c)
				}
			}
			vals[sc.Field(c).Name] = toastValue{b: bytes.Clone(v.b), null: v.null}
		}
		if len(vals) > 0 {
			if p.carried == nil {
				p.carried = map[string]map[string]toastValue{}
			}
			p.carried[k] = vals
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
