package sample_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/internal/demo"
	"github.com/tarnhq/tarn/internal/sample"
)

// TestSample: the committed sample is in the clone and its rows agree
// with its committed answers. Before it existed, the real-Kafka
// exactly-once tests read ../shared/data, which a user's clone does not
// have, and skipped.
func TestSample(t *testing.T) {
	rows, err := sample.Flights(0)
	require.NoError(t, err)
	require.Len(t, rows, sample.Rows)
	a, err := sample.LoadAnswers()
	require.NoError(t, err)
	assert.Equal(t, a.Totals, demo.TotalsOf(rows))
	assert.Equal(t, a.First200000, demo.TotalsOf(rows[:200_000]))
	// flights-3m.parquet's first_200000 in the dataset's own answers.
	assert.Equal(t, demo.Totals{Rows: 200_000, SumDelay: 1_809_922, SumDistance: 145_843_075}, a.First200000)

	first, last := time.UnixMicro(rows[0].Date).UTC(), time.UnixMicro(rows[len(rows)-1].Date).UTC()
	assert.Equal(t, time.Date(2001, 1, 1, 0, 1, 0, 0, time.UTC), first)
	assert.Less(t, last.Sub(first), sample.Span, "Span covers the sample's dates")

	few, err := sample.Flights(10)
	require.NoError(t, err)
	assert.Equal(t, rows[:10], few)
	_, err = sample.Flights(sample.Rows + 1)
	assert.Error(t, err)
}

func TestRepeat(t *testing.T) {
	rows := []demo.Flight{{Date: 10, Delay: 1}, {Date: 20, Delay: 2}}
	got := sample.Repeat(rows, 5, time.Millisecond)
	assert.Equal(t, []demo.Flight{{Date: 10, Delay: 1}, {Date: 20, Delay: 2}, {Date: 1010, Delay: 1}, {Date: 1020, Delay: 2}, {Date: 2010, Delay: 1}}, got)
	assert.Equal(t, demo.Flight{Date: 10, Delay: 1}, rows[0], "rows are not modified")
}
