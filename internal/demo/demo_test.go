package demo_test

import (
	"bytes"
	"testing"

	hamba "github.com/hamba/avro/v2"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tarnhq/tarn/internal/demo"
)

// TestFlights checks the embedded rows against testdata/answers.json and
// that an encoded value decodes back to its row.
func TestFlights(t *testing.T) {
	rows, err := demo.Flights()
	require.NoError(t, err)
	// answers.json: flights-3m.parquet first_10000.
	require.Equal(t, demo.Totals{Rows: 10000, SumDelay: 116331, SumDistance: 7622019}, demo.TotalsOf(rows))

	// A prefix read stops at n rows and agrees with the full read.
	first, err := demo.ReadFlights(bytes.NewReader(demo.FlightsParquet()), 100)
	require.NoError(t, err)
	require.Equal(t, rows[:100], first)

	values, err := demo.Encode(rows[:2], 7)
	require.NoError(t, err)
	var h sr.ConfluentHeader
	id, body, err := h.DecodeID(values[1])
	require.NoError(t, err)
	require.Equal(t, 7, id)
	var got demo.Flight
	require.NoError(t, hamba.Unmarshal(hamba.MustParse(demo.Schema), body, &got))
	require.Equal(t, rows[1], got)
}
