package jsonrow_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/jsonrow"
	"github.com/tarnhq/tarn/internal/arrowtest"
)

// flightsSchema is a schemaless flights topic's declared schema: the
// columns of internal/demo's rows (date is a wall-clock timestamp there).
const flightsSchema = `{"type":"struct","fields":[
	{"id":1,"name":"date","required":true,"type":"timestamp"},
	{"id":2,"name":"delay","required":true,"type":"long"},
	{"id":3,"name":"distance","required":true,"type":"long"},
	{"id":4,"name":"origin","required":true,"type":"string"},
	{"id":5,"name":"destination","required":true,"type":"string"}]}`

// flightPayloads makes n flights-like JSON rows with values in the data
// set's ranges (2001 dates, delays in minutes, distances in miles, IATA
// codes).
func flightPayloads(n int) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	airports := []string{"SFO", "LAX", "ORD", "ATL", "DFW", "JFK", "SEA", "DEN", "BOS", "PHX"}
	start := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([][]byte, n)
	for i := range out {
		d := start.Add(time.Duration(rng.Int64N(int64(365 * 24 * time.Hour)))).Truncate(time.Minute)
		out[i] = fmt.Appendf(nil, `{"date":%q,"delay":%d,"distance":%d,"origin":%q,"destination":%q}`,
			d.Format("2006-01-02T15:04:05"), rng.Int64N(300)-30, 30+rng.Int64N(2700),
			airports[rng.IntN(len(airports))], airports[rng.IntN(len(airports))])
	}

	return out
}

// BenchmarkAppend measures Append on flights-like rows: one JSON payload
// to one Arrow row, with a record cut every 8192 rows as a pipeline
// would.
func BenchmarkAppend(b *testing.B) {
	payloads := flightPayloads(4096)
	dec, err := jsonrow.NewDecoder(schema(b, flightsSchema))
	require.NoError(b, err)
	arrowtest.BenchmarkAppend(b, dec.ArrowSchema(), dec.Append, payloads)
}
