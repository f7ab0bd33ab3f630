package codec_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tarnhq/tarn/ingest/codec"
)

func TestCoverageMerge(t *testing.T) {
	a := codec.Coverage{Rows: 2, Unfilled: []string{"addr", "b", "c"}, Unmatched: []string{"x"}}
	b := codec.Coverage{Rows: 3, Unfilled: []string{"addr.zip", "c", "d"}, Unmatched: []string{"w", "x"}}
	want := codec.Coverage{Rows: 5, Unfilled: []string{"c", "addr.zip"}, Unmatched: []string{"w", "x"}}
	assert.Equal(t, want, a.Merge(b))
	assert.Equal(t, want.Rows, b.Merge(a).Rows)
	assert.ElementsMatch(t, want.Unfilled, b.Merge(a).Unfilled)
	assert.Equal(t, a, a.Merge(codec.Coverage{}))
	assert.Equal(t, b, codec.Coverage{}.Merge(b))
}
