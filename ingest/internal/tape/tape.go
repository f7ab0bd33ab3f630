// Package tape holds one row's converted values between the two passes of
// a format decoder's Append (ingest/avro, ingest/jsonrow, ingest/connect,
// ingest/protobuf): the read pass decodes, converts and checks every value and records it
// on a Tape; only when the whole payload was read without error does the
// write pass replay the Tape into the Arrow builders, and the write pass
// cannot fail. So an error never leaves a partial row, and no builder
// rollback is needed.
//
// The write pass is shared too (write.go): a leaf by its Kind, a nullable
// position's flag (Present), a struct's or a row's fields (Fields), a
// list and a map.
//
// A Tape is flat typed slices reused across rows, so recording a row
// allocates nothing once the slices have grown to the widest row.
package tape

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// maxRetainedBytes caps the byte buffer (Take, Keep) a Tape keeps between
// rows, so one huge record does not pin its size for the decoder's
// lifetime.
const maxRetainedBytes = 4 << 20

// Tape holds one row's values in read order, one slice per representation;
// the write pass pops them in the same order, each kind with its own
// cursor. What a format records for which column (a value, a presence flag
// before it, an element count before a list's elements) is its own plan's
// business; the Tape only keeps the order per kind.
//
// The zero Tape is ready to use. A Tape is not safe for concurrent use.
type Tape struct {
	ints   []int64 // booleans (0, 1), integers, dates, times, timestamps, flags, counts
	floats []float64
	strs   []string
	bytes  [][]byte
	decs   []decimal128.Num
	buf    []byte // backing store of Take and Keep

	ni, nf, ns, nb, nd int // read cursors of the write pass
}

// Reset empties the tape for the next row, keeping its capacity (but not
// a byte buffer over 4 MiB), and drops its references to the previous
// row's strings and byte slices so they can be freed.
func (t *Tape) Reset() {
	if cap(t.buf) > maxRetainedBytes {
		t.buf = nil
	}
	clear(t.strs)
	clear(t.bytes)
	t.ints, t.floats, t.strs, t.bytes, t.decs, t.buf = t.ints[:0], t.floats[:0], t.strs[:0], t.bytes[:0], t.decs[:0], t.buf[:0]
	t.ni, t.nf, t.ns, t.nb, t.nd = 0, 0, 0, 0, 0
}

// PutInt records an integer (a boolean as 0 or 1, a date in days, a time
// or timestamp in microseconds, a presence flag, a count).
func (t *Tape) PutInt(v int64) { t.ints = append(t.ints, v) }

// PutBool records a boolean as the integer 1 or 0.
func (t *Tape) PutBool(v bool) {
	var i int64
	if v {
		i = 1
	}
	t.ints = append(t.ints, i)
}

// PutFloat records a floating-point value (a float32 widened exactly).
func (t *Tape) PutFloat(v float64) { t.floats = append(t.floats, v) }

// PutStr records a string. The tape keeps the reference until Reset.
func (t *Tape) PutStr(v string) { t.strs = append(t.strs, v) }

// PutBytes records a byte slice without copying it: the caller must keep
// it unchanged until the write pass (use Take or Keep for bytes that live
// in a reused buffer).
func (t *Tape) PutBytes(v []byte) { t.bytes = append(t.bytes, v) }

// PutDec records a decimal's unscaled value.
func (t *Tape) PutDec(v decimal128.Num) { t.decs = append(t.decs, v) }

// PutCount records a placeholder integer, for a count known only after
// the items that follow it (Avro's blocked arrays and maps), and returns
// its position for SetCount.
func (t *Tape) PutCount() int {
	t.ints = append(t.ints, 0)

	return len(t.ints) - 1
}

// SetCount sets the placeholder at position at, returned by PutCount.
func (t *Tape) SetCount(at int, n int64) { t.ints[at] = n }

// Take reserves n bytes of the tape's buffer, for the caller to fill and
// usually PutBytes. Slices handed out earlier stay valid when the buffer
// grows: they keep the old backing array.
func (t *Tape) Take(n int) []byte {
	start := len(t.buf)
	t.buf = slices.Grow(t.buf, n)[:start+n]

	return t.buf[start : start+n : start+n]
}

// Keep copies b into the tape's buffer and records the copy (PutBytes).
func (t *Tape) Keep(b []byte) {
	c := t.Take(len(b))
	copy(c, b)
	t.bytes = append(t.bytes, c)
}

// Int pops the next integer of the write pass.
func (t *Tape) Int() int64 {
	v := t.ints[t.ni]
	t.ni++

	return v
}

// Float pops the next floating-point value of the write pass.
func (t *Tape) Float() float64 {
	v := t.floats[t.nf]
	t.nf++

	return v
}

// Str pops the next string of the write pass.
func (t *Tape) Str() string {
	v := t.strs[t.ns]
	t.ns++

	return v
}

// Bytes pops the next byte slice of the write pass.
func (t *Tape) Bytes() []byte {
	v := t.bytes[t.nb]
	t.nb++

	return v
}

// Dec pops the next decimal of the write pass.
func (t *Tape) Dec() decimal128.Num {
	v := t.decs[t.nd]
	t.nd++

	return v
}
