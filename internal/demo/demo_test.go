package demo_test

import (
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
	var delay, distance int64
	for _, f := range rows {
		delay += f.Delay
		distance += f.Distance
	}
	require.Len(t, rows, 10000)
	require.EqualValues(t, 116331, delay)
	require.EqualValues(t, 7622019, distance)

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
