package avro_test

import (
	"math/rand/v2"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"
	"github.com/stretchr/testify/require"

	tarnavro "github.com/tarnhq/tarn/ingest/avro"
	"github.com/tarnhq/tarn/internal/arrowtest"
)

// flightsSchema has the shape of ../shared/data/flights-3m.parquet.
const flightsSchema = `{"type":"record","name":"Flight","namespace":"tarn.demo","fields":[
	{"name":"date","type":{"type":"long","logicalType":"timestamp-micros"}},
	{"name":"delay","type":"long"},
	{"name":"distance","type":"long"},
	{"name":"origin","type":"string"},
	{"name":"destination","type":"string"}]}`

// flightPayloads encodes n flights-like rows with values in the data set's
// ranges (2001 dates, delays in minutes, distances in miles, IATA codes).
func flightPayloads(t testing.TB, w hamba.Schema, n int) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	airports := []string{"SFO", "LAX", "ORD", "ATL", "DFW", "JFK", "SEA", "DEN", "BOS", "PHX"}
	start := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([][]byte, n)
	for i := range out {
		out[i] = encode(t, w, map[string]any{
			"date":        start.Add(time.Duration(rng.Int64N(int64(365 * 24 * time.Hour)))).Truncate(time.Minute),
			"delay":       rng.Int64N(300) - 30,
			"distance":    30 + rng.Int64N(2700),
			"origin":      airports[rng.IntN(len(airports))],
			"destination": airports[rng.IntN(len(airports))],
		})
	}

	return out
}

// BenchmarkDecode measures Append on flights-like rows: one Avro payload
// to one Arrow row, with a record cut every 8192 rows as a pipeline
// would. The hamba-generic case is the baseline this decoder replaces:
// hamba/avro's generic Unmarshal into map[string]any, before any Arrow work.
func BenchmarkDecode(b *testing.B) {
	w := parse(b, flightsSchema)
	payloads := flightPayloads(b, w, 4096)

	b.Run("tarn", func(b *testing.B) {
		dec, err := tarnavro.NewDecoder(w, table(b, flightsSchema))
		require.NoError(b, err)
		arrowtest.BenchmarkAppend(b, dec.ArrowSchema(), dec.Append, payloads)
	})

	b.Run("hamba-generic", func(b *testing.B) {
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			var m map[string]any
			if err := hamba.Unmarshal(w, payloads[i%len(payloads)], &m); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
}
