package tape_test

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/stretchr/testify/assert"

	"github.com/tarnhq/tarn/ingest/internal/tape"
)

func TestTapeReplaysInOrderPerKind(t *testing.T) {
	var tp tape.Tape
	for range 2 { // the second round runs on reused slices
		tp.Reset()
		at := tp.PutCount()
		tp.PutBool(true)
		tp.PutFloat(1.5)
		tp.PutStr("s")
		tp.PutInt(-7)
		tp.PutBytes([]byte("b"))
		tp.PutDec(decimal128.FromI64(42))
		tp.PutBool(false)
		tp.SetCount(at, 3)

		assert.Equal(t, int64(3), tp.Int())
		assert.Equal(t, int64(1), tp.Int())
		assert.Equal(t, int64(-7), tp.Int())
		assert.Equal(t, int64(0), tp.Int())
		assert.Equal(t, 1.5, tp.Float())
		assert.Equal(t, "s", tp.Str())
		assert.Equal(t, []byte("b"), tp.Bytes())
		assert.Equal(t, decimal128.FromI64(42), tp.Dec())
	}
}

func TestTakeKeepsEarlierSlices(t *testing.T) {
	var tp tape.Tape
	first := tp.Take(3)
	copy(first, "abc")
	for range 100 { // grow the buffer many times over
		copy(tp.Take(7), "xxxxxxx")
	}
	assert.Equal(t, []byte("abc"), first)
	assert.Equal(t, 3, cap(first), "a taken slice cannot be appended into the next one")
}

func TestKeepCopies(t *testing.T) {
	var tp tape.Tape
	src := []byte("abc")
	tp.Keep(src)
	copy(src, "zzz")
	assert.Equal(t, []byte("abc"), tp.Bytes())
}

func TestResetDoesNotAllocate(t *testing.T) {
	var tp tape.Tape
	row := func() {
		tp.Reset()
		tp.PutInt(1)
		tp.PutStr("s")
		tp.Keep([]byte("0123456789abcdef"))
		tp.PutDec(decimal128.FromI64(1))
		tp.PutFloat(2)
	}
	row()
	assert.Zero(t, testing.AllocsPerRun(100, row))
}
