package connect_test

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/connect"
	"github.com/tarnhq/tarn/internal/arrowtest"
	"github.com/tarnhq/tarn/internal/connecttest"
)

// BenchmarkAppend measures a connect-json value to one Arrow row as the
// pipeline does it: the envelope split (the schema known by comparing
// it with the previous one) and the payload decoded, on the fixture rows
// of every semantic type (5.5 KB values, a 4.4 KB schema each).
func BenchmarkAppend(b *testing.B) {
	values := connecttest.JSON(b, false)
	var e connect.Envelopes
	sch, _, _, err := e.Split(values[0])
	require.NoError(b, err)
	s, err := connect.ParseSchema(sch)
	require.NoError(b, err)
	sc, err := connect.ToIceberg(s)
	require.NoError(b, err)
	dec, err := connect.NewDecoder(s, sc)
	require.NoError(b, err)
	arrowtest.BenchmarkAppend(b, dec.ArrowSchema(), func(rb *array.RecordBuilder, v []byte) error {
		_, payload, same, err := e.Split(v)
		if err != nil || !same {
			b.Fatalf("split: %v, same schema %v", err, same)
		}
		return dec.Append(rb, payload)
	}, values)
}
