package jsonschema_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/jsonschema"
	"github.com/tarnhq/tarn/internal/arrowtest"
)

// flightPayloads makes n flights-like JSON rows matching
// testdata/flights.schema.json, with values in the data set's ranges (2001
// dates, delays in minutes, distances in miles, IATA codes).
func flightPayloads(n int) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	airports := []string{"SFO", "LAX", "ORD", "ATL", "DFW", "JFK", "SEA", "DEN", "BOS", "PHX"}
	start := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([][]byte, n)
	for i := range out {
		d := start.Add(time.Duration(rng.Int64N(int64(365 * 24 * time.Hour)))).Truncate(time.Minute)
		out[i] = fmt.Appendf(nil, `{"date":%q,"delay":%d,"distance":%d,"origin":%q,"destination":%q}`,
			d.Format(time.RFC3339), rng.Int64N(300)-30, 30+rng.Int64N(2700),
			airports[rng.IntN(len(airports))], airports[rng.IntN(len(airports))])
	}

	return out
}

// BenchmarkAppend measures Append on flights-like rows: parse, validate
// against testdata/flights.schema.json, convert to one Arrow row, with a
// record cut every batchRows rows as a pipeline would.
func BenchmarkAppend(b *testing.B) {
	payloads := flightPayloads(4096)
	s := compile(b, readFile(b, "testdata/flights.schema.json"), nil)
	dec, err := jsonschema.NewDecoder(s, table(b, s))
	require.NoError(b, err)
	arrowtest.BenchmarkAppend(b, dec.ArrowSchema(), dec.Append, payloads)
}
